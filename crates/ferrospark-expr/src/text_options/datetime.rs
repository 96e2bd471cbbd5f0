//! Dates and timestamps read by a user's `dateFormat` / `timestampFormat` /
//! `timestampNTZFormat` (Spark's pattern letters, strict: the pattern must read the whole
//! text), in the session's time zone. Without those options the readers parse as Spark's casts
//! do, which is Spark's fallback when no format is set. A `TIMESTAMP_NTZ` column takes no
//! text with a zone or an offset, with a pattern or without (Spark's
//! `parseWithoutTimeZone(_, allowTimeZone = false)`).

use std::sync::Arc;

use crate::functions::datetime::{days_of, instant_micros, zone};
use crate::functions::DateTimePattern;
use crate::{evaluate, CastMode, PhysicalExpr};
use arrow_array::{
    Array, ArrayRef, Date32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{Config, FerroError, Result};

/// Date patterns Spark's lenient default timestamp parser reads too (`CSVInferSchema`'s
/// `LENIENT_TS_FORMATTER_SUPPORTED_DATE_FORMATS`).
const LENIENT_READS: [&str; 7] = [
    "yyyy-MM-dd",
    "yyyy-M-d",
    "yyyy-M-dd",
    "yyyy-MM-d",
    "yyyy-MM",
    "yyyy-M",
    "yyyy",
];

/// The user's patterns, compiled once per scan.
#[derive(Debug, Clone, Default)]
pub struct DateTimeFormats {
    date: Option<DateTimePattern>,
    /// See [`Self::dates_read_as_timestamps`].
    dates_as_timestamps: bool,
    timestamp: Option<DateTimePattern>,
    timestamp_ntz: Option<DateTimePattern>,
}

impl DateTimeFormats {
    /// The `dateFormat`, `timestampFormat` and `timestampNTZFormat` options (`format` names
    /// the reader in errors).
    pub fn new(
        format: &str,
        date: Option<&str>,
        timestamp: Option<&str>,
        timestamp_ntz: Option<&str>,
    ) -> Result<Self> {
        let compile = |key: &str, p: Option<&str>| {
            p.map(|p| {
                DateTimePattern::new(p)
                    .map_err(|e| FerroError::Config(format!("{format} option {key}={p:?}: {e}")))
            })
            .transpose()
        };
        Ok(Self {
            date: compile("dateFormat", date)?,
            dates_as_timestamps: timestamp.is_none()
                && LENIENT_READS.contains(&date.unwrap_or("yyyy-MM-dd")),
            timestamp: compile("timestampFormat", timestamp)?,
            timestamp_ntz: compile("timestampNTZFormat", timestamp_ntz)?,
        })
    }

    /// Whether `dateFormat` is set.
    pub fn has_date(&self) -> bool {
        self.date.is_some()
    }

    /// Whether schema inference takes a column of dates and timestamps (not NTZ) as
    /// timestamps, as Spark's `canParseDateAsTimestamp` decides: only when no
    /// `timestampFormat` is set (the lenient default parser reads dates too) and the date
    /// pattern is one that parser reads.
    pub fn dates_read_as_timestamps(&self) -> bool {
        self.dates_as_timestamps
    }

    /// `values` read as `to`: by the user's pattern for it, else as Spark's cast parses them,
    /// local times in the session's zone; the instants labelled with the zone `to` names
    /// (between two zones a cast keeps every instant and only changes the label).
    pub fn read(&self, values: &StringArray, to: &DataType, cfg: &Config) -> Result<ArrayRef> {
        let out = match self.parse(values.iter(), to, cfg)? {
            Some(parsed) => parsed,
            None => cast_strings(values, to, cfg)?,
        };
        match to {
            DataType::Timestamp(_, Some(_)) if out.data_type() != to => {
                Ok(arrow_cast::cast(&out, to)?)
            }
            _ => Ok(out),
        }
    }

    /// `values` parsed as `to` by the user's pattern for it; `None` when no pattern applies
    /// (the caller parses as a cast does). A text the pattern does not read is NULL.
    fn parse<'a>(
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
            (DataType::Timestamp(_, None), _, _) => {
                let Some(p) = &self.timestamp_ntz else {
                    return Ok(None);
                };
                let out: TimestampMicrosecondArray = values
                    .map(|v| match v.and_then(|v| p.parse_with_offset(v)) {
                        Some((t, None)) => Some(t.and_utc().timestamp_micros()),
                        // An offset read by the pattern: no local date-time.
                        _ => None,
                    })
                    .collect();
                Ok(Some(Arc::new(out)))
            }
            _ => Ok(None),
        }
    }
}

/// The `dateFormat` / `timestampFormat` / `timestampNTZFormat` options as a reader's option
/// loop meets them, compiled once all are seen.
#[derive(Debug, Default)]
pub struct DateTimeOptions {
    date: Option<String>,
    timestamp: Option<String>,
    timestamp_ntz: Option<String>,
}

impl DateTimeOptions {
    /// Keeps `value` when `key` (lower case) names a pattern option; false when it does not.
    pub fn take(&mut self, key: &str, value: &str) -> bool {
        let slot = match key {
            "dateformat" => &mut self.date,
            "timestampformat" => &mut self.timestamp,
            "timestampntzformat" => &mut self.timestamp_ntz,
            _ => return false,
        };
        *slot = Some(value.to_string());
        true
    }

    /// The patterns compiled (`format` names the reader in errors).
    pub fn compile(&self, format: &str) -> Result<DateTimeFormats> {
        DateTimeFormats::new(
            format,
            self.date.as_deref(),
            self.timestamp.as_deref(),
            self.timestamp_ntz.as_deref(),
        )
    }
}

/// Whether timestamp text names a zone or an offset after its time of day (`Z`, `+01:00`,
/// ` UTC`, `America/New_York`): anything but digits, `:` and `.` after the date.
fn has_zone(text: &str) -> bool {
    let t = text.trim();
    let Some(at) = t.find(['T', ' ']) else {
        return false;
    };
    t[at + 1..]
        .trim_start()
        .bytes()
        .any(|c| !c.is_ascii_digit() && c != b':' && c != b'.')
}

/// Strings through Spark's cast to a date or timestamp type (in the session's time zone); a
/// `TIMESTAMP_NTZ` takes no text naming a zone.
fn cast_strings(values: &StringArray, to: &DataType, cfg: &Config) -> Result<ArrayRef> {
    let n = values.len();
    let (values, to): (StringArray, DataType) = match to {
        DataType::Timestamp(u, None) => {
            let local = values.iter().map(|v| v.filter(|v| !has_zone(v)));
            (local.collect(), DataType::Timestamp(*u, None))
        }
        DataType::Timestamp(u, Some(_)) => (
            values.clone(),
            DataType::Timestamp(*u, Some(cfg.session_time_zone().into())),
        ),
        other => (values.clone(), other.clone()),
    };
    let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8, true)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(values)])?;
    let cast = PhysicalExpr::Cast {
        expr: Box::new(PhysicalExpr::Column {
            index: 0,
            name: "v".into(),
            data_type: DataType::Utf8,
        }),
        to,
        mode: CastMode::Try,
    };
    evaluate(&cast, &batch)?.into_array(n)
}

#[cfg(test)]
mod tests {
    use super::has_zone;

    #[test]
    fn zones_are_told_from_local_times() {
        for t in [
            "2020-01-02T03:04:05Z",
            "2020-01-02T03:04:05+01:00",
            "2020-01-02 03:04:05-08",
            "2020-01-02 03:04:05 UTC",
            "2020-01-02T03:04America/New_York",
        ] {
            assert!(has_zone(t), "{t}");
        }
        for t in [
            "2020-01-02",
            "2020-01-02T03:04:05",
            " 2020-01-02 03:04:05.123 ",
            "2020-01-02T",
            "-2020-01-02 03:04",
        ] {
            assert!(!has_zone(t), "{t}");
        }
    }
}
