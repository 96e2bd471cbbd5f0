//! The CSV reader: Spark's `csv` source, with its options, parse modes, corrupt-record
//! column, schema inference and filters checked while records convert.
//!
//! The tokenizer (`ferrospark_expr::csv::tokenize`, shared with `from_csv`) is written here rather than taken from `arrow-csv` / `csv-core`: Spark's
//! parser tells a quoted empty field from an unquoted one (NULL vs `emptyValue`), keeps the raw
//! text of a field with a stray quote, and converts fields one at a time so a failing filter
//! stops a record early; those parsers expose none of that.

mod reader;
#[cfg(test)]
mod tests;

pub use crate::text::ParseMode;
pub use ferrospark_expr::csv::CsvOptions;
pub use reader::CsvScan;
