//! Spark's JSON text as values: the lexer Spark's options configure, conversion of values to
//! typed columns (`JacksonParser`), schema inference (`JsonInferSchema`) and the options
//! (`JSONOptions`). The JSON file reader and `from_json` / `schema_of_json` share them.

pub mod convert;
pub mod infer;
pub mod lexer;
mod options;
pub mod schema_text;
pub mod write;

pub use options::JsonOptions;
