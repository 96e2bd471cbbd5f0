//! What Spark's text formats share between the file readers and the functions that read
//! one value of text (`from_json`, `from_csv`): parse modes, option values, charsets, and
//! `dateFormat` / `timestampFormat` parsing. They live with the expressions, as Spark keeps
//! its `JacksonParser` and `UnivocityParser` in Catalyst, so a function can run them.

mod charset;
mod datetime;

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{FerroError, Result};

use crate::{BindContext, Expr, Literal};

pub use charset::Charset;
pub use datetime::{DateTimeFormats, DateTimeOptions};

/// What a reader does with a record it cannot convert (Spark's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseMode {
    /// Keep the record: fields that do not convert are NULL, the record's text goes to the
    /// corrupt-record column when the schema has one.
    Permissive,
    /// Drop the record.
    DropMalformed,
    /// Stop with an error naming the file and line.
    FailFast,
}

impl ParseMode {
    /// Spark's `mode` option value; `format` names the reader in the error.
    pub fn parse(format: &str, value: &str) -> Result<Self> {
        match value.to_ascii_uppercase().as_str() {
            "PERMISSIVE" => Ok(ParseMode::Permissive),
            "DROPMALFORMED" => Ok(ParseMode::DropMalformed),
            "FAILFAST" => Ok(ParseMode::FailFast),
            _ => Err(FerroError::Config(format!(
                "{format} option mode={value:?}: expected PERMISSIVE, DROPMALFORMED or FAILFAST"
            ))),
        }
    }
}

/// A boolean option (`true` / `false`, any case); `format` names the reader in the error.
pub fn flag(format: &str, key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(FerroError::Config(format!(
            "{format} option {key}={value:?}: expected true or false"
        ))),
    }
}

/// A sampling ratio in (0, 1].
pub fn ratio(format: &str, key: &str, value: &str) -> Result<f64> {
    match value.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1.0 => Ok(r),
        _ => Err(FerroError::Config(format!(
            "{format} option {key}={value:?}: expected a ratio in (0, 1]"
        ))),
    }
}

/// The text of every value of `a` as Spark writes it in a text format: dates and timestamps
/// by `date_format` with the given patterns, everything else as `CAST(v AS STRING)`.
pub fn value_texts(
    a: &ArrayRef,
    date_format: &str,
    timestamp_format: &str,
    timestamp_ntz_format: &str,
    session_tz: &str,
) -> Result<ArrayRef> {
    let field = Field::new("v", a.data_type().clone(), true);
    let schema = Arc::new(Schema::new(vec![field]));
    let column = Expr::Column("v".into());
    let pattern = |p: &str| Expr::Literal(Literal::string(p));
    let expr = match a.data_type() {
        DataType::Date32 => Expr::Function {
            name: "date_format".into(),
            args: vec![column, pattern(date_format)],
        },
        DataType::Timestamp(_, Some(_)) => Expr::Function {
            name: "date_format".into(),
            args: vec![column, pattern(timestamp_format)],
        },
        DataType::Timestamp(_, None) => Expr::Function {
            name: "date_format".into(),
            args: vec![column, pattern(timestamp_ntz_format)],
        },
        DataType::Utf8 => return Ok(a.clone()),
        _ => Expr::Cast {
            expr: Box::new(column),
            type_name: "string".into(),
        },
    };
    let ctx = BindContext::new(&schema).with_tz(session_tz);
    let bound = crate::bind(&expr, &ctx)?;
    let batch = RecordBatch::try_new(schema.clone(), vec![a.clone()])?;
    crate::evaluate(&bound, &batch)?.into_array(a.len())
}
