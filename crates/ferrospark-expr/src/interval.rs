//! Interval literals (`INTERVAL '90' DAY`, `INTERVAL '1-2' YEAR TO MONTH`,
//! `INTERVAL '1 day 2 hours'`) as Spark's ANSI interval types in Arrow:
//!
//! | Spark | Arrow |
//! | --- | --- |
//! | `INTERVAL YEAR` / `MONTH` / `YEAR TO MONTH` | `Interval(YearMonth)`: months |
//! | `INTERVAL DAY` (days only) | `Interval(DayTime)`: days, no milliseconds |
//! | `INTERVAL DAY TO SECOND`, `HOUR`, `MINUTE`, `SECOND` | `Duration(Microsecond)` |
//!
//! Day-only intervals get a type of their own because Spark types `date + INTERVAL '1' DAY` as
//! a DATE but `date + INTERVAL '24' HOUR` as a TIMESTAMP: the type, not the value, decides.

use std::sync::Arc;

use arrow_array::{DurationMicrosecondArray, IntervalDayTimeArray, IntervalYearMonthArray};
use arrow_buffer::IntervalDayTime;
use ferrospark_common::{FerroError, Result};
use sqlparser::ast::{self, DateTimeField};

use crate::expr::Literal;

const MICROS_PER_DAY: i64 = 86_400_000_000;

fn bad(text: &str, why: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[INVALID_INTERVAL_FORMAT] Error parsing interval in \"{text}\": {why}"
    ))
}

/// What an interval's units add up to.
#[derive(Debug, Default)]
struct Parts {
    months: Option<i64>,
    micros: Option<i64>,
    days_only: bool,
}

impl Parts {
    fn literal(self, text: &str) -> Result<Literal> {
        match (self.months, self.micros) {
            (Some(m), None) => {
                let m = i32::try_from(m).map_err(|_| bad(text, "too many months"))?;
                Ok(Literal::new(Arc::new(IntervalYearMonthArray::from(vec![m]))))
            }
            (None, Some(us)) if self.days_only => {
                let d = i32::try_from(us / MICROS_PER_DAY).map_err(|_| bad(text, "too many days"))?;
                Ok(Literal::new(Arc::new(IntervalDayTimeArray::from(vec![
                    IntervalDayTime::new(d, 0),
                ]))))
            }
            (None, Some(us)) => Ok(Literal::new(Arc::new(DurationMicrosecondArray::from(vec![us])))),
            (Some(_), Some(_)) => Err(FerroError::Unsupported(format!(
                "an interval mixing months with days or times in \"{text}\" (Spark's legacy CALENDAR INTERVAL); write the month and day parts as two intervals"
            ))),
            (None, None) => Err(bad(text, "no value")),
        }
    }

    fn add(&mut self, unit: &str, value: f64, text: &str) -> Result<()> {
        let u = unit.to_ascii_uppercase();
        let u = u.trim_end_matches('S');
        let whole = |v: f64| -> Result<i64> {
            if v.fract() != 0.0 {
                return Err(bad(text, &format!("{unit} must be a whole number")));
            }
            Ok(v as i64)
        };
        match u {
            "YEAR" => *self.months.get_or_insert(0) += whole(value)? * 12,
            "MONTH" => *self.months.get_or_insert(0) += whole(value)?,
            "WEEK" | "DAY" => {
                let days = whole(value)? * if u == "WEEK" { 7 } else { 1 };
                if self.micros.is_none() {
                    self.days_only = true;
                }
                *self.micros.get_or_insert(0) += days * MICROS_PER_DAY;
            }
            "HOUR" | "MINUTE" | "SECOND" | "MILLISECOND" | "MICROSECOND" => {
                let per = match u {
                    "HOUR" => 3_600_000_000.0,
                    "MINUTE" => 60_000_000.0,
                    "SECOND" => 1_000_000.0,
                    "MILLISECOND" => 1_000.0,
                    _ => 1.0,
                };
                self.days_only = false;
                *self.micros.get_or_insert(0) += (value * per).round() as i64;
            }
            _ => return Err(bad(text, &format!("unknown unit {unit}"))),
        }
        Ok(())
    }
}

fn field_name(f: &DateTimeField) -> String {
    f.to_string().to_ascii_uppercase()
}

/// The literal of `INTERVAL ...`.
pub fn interval_literal(iv: &ast::Interval, text: &str) -> Result<Literal> {
    let value = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            other => return Err(bad(text, &format!("unexpected value {other}"))),
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            ast::Expr::Value(v) => format!("-{}", v.value).replace('\'', ""),
            other => return Err(bad(text, &format!("unexpected value {other}"))),
        },
        other => return Err(bad(text, &format!("unexpected value {other}"))),
    };
    let mut parts = Parts::default();
    match (&iv.leading_field, &iv.last_field) {
        (Some(lead), None) => {
            let v: f64 = value
                .trim()
                .parse()
                .map_err(|_| bad(text, &format!("'{value}' is not a number")))?;
            parts.add(&field_name(lead), v, text)?;
        }
        (Some(lead), Some(last)) => {
            let (lead, last) = (field_name(lead), field_name(last));
            let v = value.trim();
            let (neg, v) = match v.strip_prefix('-') {
                Some(r) => (-1.0, r),
                None => (1.0, v.strip_prefix('+').unwrap_or(v)),
            };
            if lead == "YEAR" && last == "MONTH" {
                let (y, m) = v
                    .split_once('-')
                    .ok_or_else(|| bad(text, "expected 'y-m'"))?;
                let y: f64 = y.parse().map_err(|_| bad(text, "bad years"))?;
                let m: f64 = m.parse().map_err(|_| bad(text, "bad months"))?;
                parts.add("YEAR", neg * y, text)?;
                parts.add("MONTH", neg * m, text)?;
            } else {
                // `d hh:mm:ss.f` from the leading to the last field.
                let units = ["DAY", "HOUR", "MINUTE", "SECOND"];
                let start = units
                    .iter()
                    .position(|u| *u == lead)
                    .ok_or_else(|| bad(text, "bad range"))?;
                let end = units
                    .iter()
                    .position(|u| *u == last)
                    .ok_or_else(|| bad(text, "bad range"))?;
                let pieces: Vec<&str> = v.split([' ', ':']).filter(|p| !p.is_empty()).collect();
                if pieces.len() != end - start + 1 {
                    return Err(bad(text, &format!("expected {lead} TO {last} fields")));
                }
                parts.days_only = false;
                for (k, p) in pieces.iter().enumerate() {
                    let x: f64 = p
                        .parse()
                        .map_err(|_| bad(text, &format!("bad field '{p}'")))?;
                    parts.add(units[start + k], neg * x, text)?;
                }
                parts.days_only = false;
            }
        }
        (None, _) => parts = unit_pairs(&value, text)?,
    }
    parts.literal(text)
}

/// `<number> <unit>` pairs (`'1 hour 30 minutes'`) added up; `text` is the whole
/// expression, for messages.
fn unit_pairs(value: &str, text: &str) -> Result<Parts> {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.is_empty() || !words.len().is_multiple_of(2) {
        return Err(bad(text, "expected '<number> <unit>' pairs"));
    }
    let mut parts = Parts::default();
    for pair in words.chunks(2) {
        let v: f64 = pair[0]
            .parse()
            .map_err(|_| bad(text, &format!("'{}' is not a number", pair[0])))?;
        parts.add(pair[1], v, text)?;
    }
    Ok(parts)
}

/// An interval string as Spark's cast to an interval reads it (`'10 minutes'`,
/// `'1 hour 30 minutes'`, `'interval 5 seconds'`, `'-2 days'`) in microseconds. `None` for
/// text that is not an interval (the cast gives NULL); an error for months and years, whose
/// length depends on the date.
pub fn interval_text_micros(text: &str) -> Result<Option<i64>> {
    let lower = text.trim().to_ascii_lowercase();
    let body = lower.strip_prefix("interval").unwrap_or(&lower);
    let Ok(parts) = unit_pairs(body, text) else {
        return Ok(None);
    };
    if parts.months.is_some() {
        return Err(FerroError::Unsupported(format!(
            "the interval '{text}' counts months or years, whose length depends on the date; give it in weeks, days, hours, minutes or seconds"
        )));
    }
    Ok(parts.micros)
}
