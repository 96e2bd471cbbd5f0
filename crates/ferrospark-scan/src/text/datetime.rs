//! Dates and timestamps read by a user's `dateFormat` / `timestampFormat` (Spark's pattern
//! letters, strict: the pattern must read the whole text), in the session's time zone. Without
//! those options the readers parse as Spark's casts do, which is Spark's fallback when no
//! format is set.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Date32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::functions::datetime::{days_of, instant_micros, zone};
use ferrospark_expr::functions::DateTimePattern;
use ferrospark_expr::{evaluate, CastMode, PhysicalExpr};

/// The user's patterns, compiled once per scan.
#[derive(Debug, Clone, Default)]
pub struct DateTimeFormats {
    date: Option<DateTimePattern>,
    timestamp: Option<DateTimePattern>,
}

impl DateTimeFormats {
    /// The `dateFormat` and `timestampFormat` options (`format` names the reader in errors).
    pub fn new(format: &str, date: Option<&str>, timestamp: Option<&str>) -> Result<Self> {
        let compile = |key: &str, p: Option<&str>| {
            p.map(|p| {
                DateTimePattern::new(p)
                    .map_err(|e| FerroError::Config(format!("{format} option {key}={p:?}: {e}")))
            })
            .transpose()
        };
        Ok(Self {
            date: compile("dateFormat", date)?,
            timestamp: compile("timestampFormat", timestamp)?,
        })
    }

    /// `values` parsed as `to` by the user's pattern for it; `None` when no pattern applies
    /// (the caller parses as a cast does). A text the pattern does not read is NULL.
    pub fn parse<'a>(
        &self,
        values: impl Iterator<Item = Option<&'a str>>,
        to: &DataType,
        cfg: &Config,
    ) -> Result<Option<ArrayRef>> {
        match (to, &self.date, &self.timestamp) {
            (DataType::Date32, Some(p), _) => {
                let out: Date32Array = values
                    .map(|v| v.and_then(|v| p.parse(v)).map(|t| days_of(t.date())))
                    .collect();
                Ok(Some(Arc::new(out)))
            }
            (DataType::Timestamp(_, Some(_)), _, Some(p)) => {
                let tz = cfg.session_time_zone().to_string();
                let z = zone(&tz)?;
                let out: TimestampMicrosecondArray = values
                    .map(|v| {
                        v.and_then(|v| p.parse_with_offset(v))
                            .and_then(|(t, o)| instant_micros(&t, o, &z))
                    })
                    .collect();
                Ok(Some(Arc::new(out.with_timezone(tz))))
            }
            _ => Ok(None),
        }
    }
}

/// Strings through Spark's cast to a date or timestamp type (in the session's time zone).
pub(crate) fn cast_strings(values: &StringArray, to: &DataType, cfg: &Config) -> Result<ArrayRef> {
    let to = match to {
        DataType::Timestamp(u, Some(_)) => {
            DataType::Timestamp(*u, Some(cfg.session_time_zone().into()))
        }
        other => other.clone(),
    };
    let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8, true)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(values.clone())])?;
    let cast = PhysicalExpr::Cast {
        expr: Box::new(PhysicalExpr::Column {
            index: 0,
            name: "v".into(),
            data_type: DataType::Utf8,
        }),
        to,
        mode: CastMode::Try,
    };
    evaluate(&cast, &batch)?.into_array(values.len())
}
