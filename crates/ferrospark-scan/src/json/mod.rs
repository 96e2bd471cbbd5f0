//! The JSON reader: Spark's `json` source (JSON lines, or one document per file with
//! `multiLine`), with its options, parse modes, corrupt-record column, schema inference and
//! filters checked while records convert.

mod reader;
#[cfg(test)]
mod tests;

pub use ferrospark_expr::json::JsonOptions;
pub use reader::JsonScan;
