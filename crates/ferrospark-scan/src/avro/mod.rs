//! The Avro reader: Spark's `avro` source over Avro object container files, decoded by
//! `arrow-avro` (every codec it reads: null, deflate, snappy, zstandard, bzip2, xz), with
//! Spark's types, a reader schema for schema evolution (`avroSchema`), only the columns a
//! query uses decoded, and the pushed filter applied to each decoded batch.
//!
//! `arrow-avro` decodes a block of records column by column, so a record that fails a filter
//! cannot stop decoding its later fields as Spark's row-at-a-time `AvroDeserializer` does;
//! the filter drops rows as soon as a batch is decoded, before partition columns and the
//! output are built.

mod framing;
mod reader;
#[cfg(test)]
mod tests;
mod unions;

pub use reader::{AvroOptions, AvroScan, AvroStream};
