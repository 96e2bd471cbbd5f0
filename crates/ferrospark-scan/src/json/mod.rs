//! The JSON reader: Spark's `json` source (JSON lines, or one document per file with
//! `multiLine`), with its options, parse modes, corrupt-record column, schema inference and
//! filters checked while records convert.

mod convert;
mod infer;
mod lexer;
mod options;
mod reader;
#[cfg(test)]
mod tests;

pub use options::JsonOptions;
pub use reader::JsonScan;
