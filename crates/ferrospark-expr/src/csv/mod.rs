//! Spark's CSV field text as values (`UnivocityParser`'s conversions) and the options
//! (`CSVOptions`), shared by the CSV file reader and `from_csv`.

pub mod convert;
pub mod infer;
mod masks;
mod options;
pub mod tokenize;
pub mod write;

pub use options::CsvOptions;
