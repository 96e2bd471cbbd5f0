//! Spark's CSV field text as values (`UnivocityParser`'s conversions) and the options
//! (`CSVOptions`), shared by the CSV file reader and `from_csv`.

pub mod convert;
mod options;

pub use options::CsvOptions;
