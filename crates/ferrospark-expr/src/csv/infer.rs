//! Column types inferred from the data as Spark's `CSVInferSchema` infers them: each value
//! takes the first type of integer, bigint, double, date (by `dateFormat`, else `yyyy-MM-dd`
//! exactly), timestamp (by `timestampFormat`, else Spark's timestamp parsing), boolean that
//! reads it, else string; a column's type is the widest its values need (integer < bigint <
//! double; date < timestamp when the timestamp parsing reads the dates too, see
//! [`DateTimeFormats::dates_read_as_timestamps`]; anything else mixed is string). NULL fields
//! say nothing; a column with none but NULLs is a string.

use arrow_array::{Array, ArrayRef, StringArray};
use arrow_schema::DataType;
use ferrospark_common::{Config, Result};

use super::convert::{convert_column, java_double, java_long};
use super::CsvOptions;
#[cfg(doc)]
use crate::text_options::DateTimeFormats;

/// What the values of one column seen so far need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Inferred {
    /// Only NULLs so far.
    Null,
    /// 32-bit integers.
    Int,
    /// 64-bit integers.
    Long,
    /// Doubles.
    Double,
    /// Dates.
    Date,
    /// Timestamps.
    Timestamp,
    /// Booleans.
    Boolean,
    /// Text.
    String,
}

impl Inferred {
    /// The Arrow type of a column of this kind (timestamps in `tz`).
    pub fn data_type(self, tz: &str) -> DataType {
        match self {
            Inferred::Int => DataType::Int32,
            Inferred::Long => DataType::Int64,
            Inferred::Double => DataType::Float64,
            Inferred::Date => DataType::Date32,
            Inferred::Timestamp => {
                DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some(tz.into()))
            }
            Inferred::Boolean => DataType::Boolean,
            Inferred::Null | Inferred::String => DataType::Utf8,
        }
    }

    /// The kind both need; dates and timestamps make timestamps when
    /// `dates_as_timestamps`, else text.
    pub fn merge(self, other: Inferred, dates_as_timestamps: bool) -> Inferred {
        use Inferred::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Null, x) | (x, Null) => x,
            (Int | Long | Double, Int | Long | Double) => self.max(other),
            (Date, Timestamp) | (Timestamp, Date) if dates_as_timestamps => Timestamp,
            _ => String,
        }
    }
}

/// `yyyy-MM-dd` in shape (its value checked by Spark's date parsing).
fn iso_date_shape(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// `values` converted to `to`, once.
fn parsed<'a>(
    cache: &'a mut Option<ArrayRef>,
    values: &StringArray,
    to: &DataType,
    o: &CsvOptions,
    cfg: &Config,
) -> Result<&'a ArrayRef> {
    if cache.is_none() {
        *cache = Some(convert_column(values, to, o, cfg)?.0);
    }
    cache
        .as_ref()
        .ok_or_else(|| ferrospark_common::FerroError::Internal("a parsed column".into()))
}

/// The kind a column's `values` need.
pub fn infer_column(values: &StringArray, o: &CsvOptions, cfg: &Config) -> Result<Inferred> {
    let tz = cfg.session_time_zone().to_string();
    // Dates and timestamps parse a whole column at once, and only for a column that needs it.
    let (mut dates, mut stamps) = (None, None);
    let mut kind = Inferred::Null;
    for (i, v) in values.iter().enumerate() {
        let Some(s) = v else { continue };
        let k = if let Some(x) = java_long(s) {
            if i32::try_from(x).is_ok() {
                Inferred::Int
            } else {
                Inferred::Long
            }
        } else if s == o.nan_value
            || s == o.positive_inf
            || s == o.negative_inf
            || java_double(s).is_some()
        {
            Inferred::Double
        } else if (o.formats.has_date() || iso_date_shape(s))
            && parsed(&mut dates, values, &DataType::Date32, o, cfg)?.is_valid(i)
        {
            Inferred::Date
        } else if parsed(
            &mut stamps,
            values,
            &Inferred::Timestamp.data_type(&tz),
            o,
            cfg,
        )?
        .is_valid(i)
        {
            Inferred::Timestamp
        } else if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") {
            Inferred::Boolean
        } else {
            Inferred::String
        };
        kind = kind.merge(k, o.formats.dates_read_as_timestamps());
        if kind == Inferred::String {
            break;
        }
    }
    Ok(kind)
}
