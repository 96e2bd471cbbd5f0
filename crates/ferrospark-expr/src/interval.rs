//! Spark's intervals: every spelling of an interval literal, the ANSI types they get, and the
//! text forms Spark prints.
//!
//! | Spark | Arrow |
//! | --- | --- |
//! | `INTERVAL YEAR TO MONTH` (and `YEAR`, `MONTH`) | `Interval(YearMonth)`: months |
//! | `INTERVAL DAY` (days only) | `Interval(DayTime)`: days, no milliseconds |
//! | `INTERVAL DAY TO SECOND` (and `HOUR`, `MINUTE`, `SECOND`, ...) | `Duration(Microsecond)` |
//! | `INTERVAL` (the calendar interval of `make_interval`, `CAST(s AS INTERVAL)`) | `Interval(MonthDayNano)` |
//!
//! Day-only intervals get a type of their own because Spark types `date + INTERVAL '1' DAY` as
//! a DATE but `date + INTERVAL '24' HOUR` as a TIMESTAMP: the type, not the value, decides.
//! A day-time interval's other start and end fields are not kept: such a column is typed
//! `INTERVAL DAY TO SECOND`, and a year-month one `INTERVAL YEAR TO MONTH`.
//!
//! Parsing is written here rather than taken from arrow-cast because Spark's grammar and its
//! refusals are its own (`IntervalUtils.stringToInterval`, `fromYearMonthString`,
//! `fromDayTimeString`): fractions of a second are truncated to microseconds, each leading
//! field has its own bound, and each refusal has its error class.

use std::sync::Arc;

use arrow_array::{
    DurationMicrosecondArray, IntervalDayTimeArray, IntervalMonthDayNanoArray,
    IntervalYearMonthArray,
};
use arrow_buffer::{IntervalDayTime, IntervalMonthDayNano};
use ferrospark_common::{FerroError, Result};
use sqlparser::ast::{self, DateTimeField};

use crate::expr::Literal;

/// Microseconds in a day.
pub const MICROS_PER_DAY: i64 = 86_400_000_000;
const MICROS_PER_HOUR: i64 = 3_600_000_000;
const MICROS_PER_MINUTE: i64 = 60_000_000;
const MICROS_PER_SECOND: i64 = 1_000_000;

/// A unit an interval text can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unit {
    /// `YEAR`
    Year,
    /// `MONTH`
    Month,
    /// `WEEK`
    Week,
    /// `DAY`
    Day,
    /// `HOUR`
    Hour,
    /// `MINUTE`
    Minute,
    /// `SECOND`
    Second,
    /// `MILLISECOND`
    Millisecond,
    /// `MICROSECOND`
    Microsecond,
    /// `NANOSECOND`: in Spark's grammar, refused by its parser.
    Nanosecond,
}

impl Unit {
    /// The unit a word names, singular or plural, any case.
    pub fn parse(word: &str) -> Option<Unit> {
        let w = word.to_ascii_lowercase();
        let w = w.strip_suffix('s').unwrap_or(&w);
        Some(match w {
            "year" => Unit::Year,
            "month" => Unit::Month,
            "week" => Unit::Week,
            "day" => Unit::Day,
            "hour" => Unit::Hour,
            "minute" => Unit::Minute,
            "second" => Unit::Second,
            "millisecond" => Unit::Millisecond,
            "microsecond" => Unit::Microsecond,
            "nanosecond" => Unit::Nanosecond,
            _ => return None,
        })
    }

    /// Whether the unit counts months.
    pub fn is_year_month(self) -> bool {
        matches!(self, Unit::Year | Unit::Month)
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Year => "year",
            Unit::Month => "month",
            Unit::Week => "week",
            Unit::Day => "day",
            Unit::Hour => "hour",
            Unit::Minute => "minute",
            Unit::Second => "second",
            Unit::Millisecond => "millisecond",
            Unit::Microsecond => "microsecond",
            Unit::Nanosecond => "nanosecond",
        }
    }
}

/// Spark's calendar interval: months, days and microseconds, each kept apart.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CalendarInterval {
    /// Months (years count 12).
    pub months: i32,
    /// Days (weeks count 7).
    pub days: i32,
    /// Microseconds.
    pub micros: i64,
}

impl CalendarInterval {
    /// Spark's text of a calendar interval (`1 years 2 months 25 days 5 hours 7.008009 seconds`).
    pub fn text(&self) -> String {
        if self.months == 0 && self.days == 0 && self.micros == 0 {
            return "0 seconds".into();
        }
        let mut parts: Vec<String> = Vec::new();
        let mut unit = |v: i64, name: &str| {
            if v != 0 {
                parts.push(format!("{v} {name}"));
            }
        };
        if self.months != 0 {
            unit((self.months / 12) as i64, "years");
            unit((self.months % 12) as i64, "months");
        }
        unit(self.days as i64, "days");
        if self.micros != 0 {
            let rest = self.micros;
            unit(rest / MICROS_PER_HOUR, "hours");
            let rest = rest % MICROS_PER_HOUR;
            unit(rest / MICROS_PER_MINUTE, "minutes");
            let rest = rest % MICROS_PER_MINUTE;
            if rest != 0 {
                parts.push(format!("{} seconds", seconds_text(rest)));
            }
        }
        parts.join(" ")
    }

    /// The Arrow value.
    pub fn arrow(&self) -> IntervalMonthDayNano {
        IntervalMonthDayNano::new(self.months, self.days, self.micros.saturating_mul(1000))
    }

    /// From the Arrow value (nanoseconds truncated to microseconds).
    pub fn from_arrow(v: IntervalMonthDayNano) -> Self {
        CalendarInterval {
            months: v.months,
            days: v.days,
            micros: v.nanoseconds / 1000,
        }
    }
}

/// Microseconds as seconds with the fraction's trailing zeros dropped (`7.008009`, `-12.5`).
fn seconds_text(micros: i64) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let u = micros.unsigned_abs();
    let (s, f) = (u / 1_000_000, u % 1_000_000);
    if f == 0 {
        format!("{sign}{s}")
    } else {
        let frac = format!("{f:06}");
        format!("{sign}{s}.{}", frac.trim_end_matches('0'))
    }
}

/// Why Spark's interval text parser refused a text.
fn invalid(why: impl Into<String>) -> String {
    why.into()
}

/// Spark's `IntervalUtils.stringToInterval`: `[interval] ([+|-] n unit)+`, the number of
/// seconds with up to nine fractional digits (truncated to microseconds). The units the text
/// named come back beside the value, for the ANSI type of a literal.
pub fn parse_calendar(text: &str) -> std::result::Result<(CalendarInterval, Vec<Unit>), String> {
    let lower = text.to_lowercase();
    let s = lower.trim_matches(|c: char| c.is_whitespace());
    if s.is_empty() {
        return Err(invalid("the interval string is empty"));
    }
    let s = match s.strip_prefix("interval") {
        Some("") => return Err(invalid("the interval string is empty")),
        Some(rest) if rest.starts_with(|c: char| c.is_whitespace()) => rest,
        Some(_) => return Err(invalid("invalid interval prefix")),
        None => s,
    };
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    let mut out = CalendarInterval::default();
    let mut units = Vec::new();
    skip_ws(&mut i);
    if i >= chars.len() {
        return Err(invalid("the interval string is empty"));
    }
    while i < chars.len() {
        let negative = match chars[i] {
            '-' => {
                i += 1;
                true
            }
            '+' => {
                i += 1;
                false
            }
            _ => false,
        };
        skip_ws(&mut i);
        let start = i;
        let mut whole: i64 = 0;
        while i < chars.len() && chars[i].is_ascii_digit() {
            whole = whole
                .checked_mul(10)
                .and_then(|w| w.checked_add(chars[i] as i64 - '0' as i64))
                .ok_or_else(|| invalid("the value is out of range"))?;
            i += 1;
        }
        let mut frac_nanos: i64 = 0;
        let mut has_fraction = false;
        if i < chars.len() && chars[i] == '.' {
            has_fraction = true;
            i += 1;
            let mut digits = 0;
            while i < chars.len() && chars[i].is_ascii_digit() {
                if digits < 9 {
                    frac_nanos = frac_nanos * 10 + (chars[i] as i64 - '0' as i64);
                }
                digits += 1;
                i += 1;
            }
            if digits > 9 {
                return Err(invalid("interval can only support nanosecond precision"));
            }
            for _ in digits..9 {
                frac_nanos *= 10;
            }
        }
        if i == start || (has_fraction && i == start + 1) {
            return Err(invalid(format!("invalid value at position {i}")));
        }
        if i >= chars.len() || !chars[i].is_whitespace() {
            return Err(invalid(format!("invalid value at position {i}")));
        }
        skip_ws(&mut i);
        let ustart = i;
        while i < chars.len() && chars[i].is_alphabetic() {
            i += 1;
        }
        let word: String = chars[ustart..i].iter().collect();
        if i < chars.len() && !chars[i].is_whitespace() {
            return Err(invalid(format!("invalid unit '{word}'")));
        }
        let unit = Unit::parse(&word)
            .filter(|u| *u != Unit::Nanosecond)
            .ok_or_else(|| invalid(format!("invalid unit '{word}'")))?;
        if has_fraction && unit != Unit::Second {
            return Err(invalid(format!(
                "'{}' cannot have fractional part",
                unit.name()
            )));
        }
        let v = if negative { -whole } else { whole };
        let frac_micros = if negative { -frac_nanos } else { frac_nanos } / 1000;
        let overflow = || invalid("integer overflow");
        let add_months = |m: i64, out: &mut CalendarInterval| {
            let m = i32::try_from(m).map_err(|_| overflow())?;
            out.months = out.months.checked_add(m).ok_or_else(overflow)?;
            Ok::<(), String>(())
        };
        let add_days = |d: i64, out: &mut CalendarInterval| {
            let d = i32::try_from(d).map_err(|_| overflow())?;
            out.days = out.days.checked_add(d).ok_or_else(overflow)?;
            Ok::<(), String>(())
        };
        let add_micros = |us: Option<i64>, out: &mut CalendarInterval| {
            let us = us.ok_or_else(overflow)?;
            out.micros = out.micros.checked_add(us).ok_or_else(overflow)?;
            Ok::<(), String>(())
        };
        match unit {
            Unit::Year => add_months(v.checked_mul(12).ok_or_else(overflow)?, &mut out)?,
            Unit::Month => add_months(v, &mut out)?,
            Unit::Week => add_days(v.checked_mul(7).ok_or_else(overflow)?, &mut out)?,
            Unit::Day => add_days(v, &mut out)?,
            Unit::Hour => add_micros(v.checked_mul(MICROS_PER_HOUR), &mut out)?,
            Unit::Minute => add_micros(v.checked_mul(MICROS_PER_MINUTE), &mut out)?,
            Unit::Second => add_micros(
                v.checked_mul(MICROS_PER_SECOND)
                    .and_then(|x| x.checked_add(frac_micros)),
                &mut out,
            )?,
            Unit::Millisecond => add_micros(v.checked_mul(1000), &mut out)?,
            Unit::Microsecond | Unit::Nanosecond => add_micros(Some(v), &mut out)?,
        }
        units.push(unit);
        skip_ws(&mut i);
    }
    Ok((out, units))
}

/// An ANSI interval value with the type Spark gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsiInterval {
    /// A year-month interval, in months.
    YearMonth(i32),
    /// A day interval, in days.
    Day(i32),
    /// A day-time interval, in microseconds.
    DayTime(i64),
}

impl AnsiInterval {
    /// The literal.
    pub fn literal(self) -> Literal {
        match self {
            AnsiInterval::YearMonth(m) => {
                Literal::new(Arc::new(IntervalYearMonthArray::from(vec![m])))
            }
            AnsiInterval::Day(d) => Literal::new(Arc::new(IntervalDayTimeArray::from(vec![
                IntervalDayTime::new(d, 0),
            ]))),
            AnsiInterval::DayTime(us) => {
                Literal::new(Arc::new(DurationMicrosecondArray::from(vec![us])))
            }
        }
    }

    /// The value negated (Spark's `-INTERVAL ...` inside the literal).
    pub fn negate(self) -> Result<AnsiInterval> {
        let of = || overflow_error(false);
        Ok(match self {
            AnsiInterval::YearMonth(m) => AnsiInterval::YearMonth(m.checked_neg().ok_or_else(of)?),
            AnsiInterval::Day(d) => AnsiInterval::Day(d.checked_neg().ok_or_else(of)?),
            AnsiInterval::DayTime(us) => AnsiInterval::DayTime(us.checked_neg().ok_or_else(of)?),
        })
    }
}

/// Spark's `INTERVAL_ARITHMETIC_OVERFLOW`.
pub fn overflow_error(suggest: bool) -> FerroError {
    if suggest {
        FerroError::Arithmetic(
            "[INTERVAL_ARITHMETIC_OVERFLOW.WITH_SUGGESTION] Integer overflow while operating with intervals. Use `try_add` / `try_subtract` to tolerate overflow and return NULL instead.".into(),
        )
    } else {
        FerroError::Arithmetic(
            "[INTERVAL_ARITHMETIC_OVERFLOW.WITHOUT_SUGGESTION] Integer overflow while operating with intervals.".into(),
        )
    }
}

fn parse_error(class: &str, message: String) -> FerroError {
    FerroError::Analysis(format!("[{class}] {message}"))
}

/// The ANSI interval of a calendar value whose text named `units`: year-month units give a
/// YEAR-MONTH interval, day and week only a DAY interval, other day-time units a DAY-TIME
/// one; both kinds together are Spark's `_LEGACY_ERROR_TEMP_0029`.
pub fn ansi_of_units(cal: CalendarInterval, units: &[Unit], text: &str) -> Result<AnsiInterval> {
    let ym = units.iter().any(|u| u.is_year_month());
    let dt = units.iter().any(|u| !u.is_year_month());
    if ym && dt {
        return Err(parse_error(
            "_LEGACY_ERROR_TEMP_0029",
            format!("Cannot mix year-month and day-time fields: {text}."),
        ));
    }
    if ym {
        return Ok(AnsiInterval::YearMonth(cal.months));
    }
    if units.iter().all(|u| matches!(u, Unit::Day | Unit::Week)) && cal.micros == 0 {
        // Spark keeps every day-time interval in microseconds: a day count must fit them.
        if (cal.days as i64).checked_mul(MICROS_PER_DAY).is_none() {
            return Err(parse_error(
                "INVALID_INTERVAL_FORMAT.INTERVAL_PARSING",
                format!("Error parsing interval {text}: long overflow."),
            ));
        }
        return Ok(AnsiInterval::Day(cal.days));
    }
    let us = (cal.days as i64)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|d| d.checked_add(cal.micros))
        .ok_or_else(|| {
            parse_error(
                "INVALID_INTERVAL_FORMAT.INTERVAL_PARSING",
                format!("Error parsing interval {text}: the interval is out of range."),
            )
        })?;
    Ok(AnsiInterval::DayTime(us))
}

/// `INTERVAL 'y-m' YEAR TO MONTH` (Spark's `fromYearMonthString`); `negate` for a `-` before
/// the quoted text.
pub fn year_month_from_text(text: &str, negate: bool) -> Result<AnsiInterval> {
    let unmatched = || {
        parse_error(
            "INVALID_INTERVAL_FORMAT.UNMATCHED_FORMAT_STRING",
            format!("Interval string does not match year-month format of `[+|-]y-m`: {text}."),
        )
    };
    let t = text.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (y, m) = body.split_once('-').ok_or_else(unmatched)?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(y) || !digits(m) {
        return Err(unmatched());
    }
    let out_of_range = || {
        parse_error(
            "INVALID_INTERVAL_FORMAT.INTERVAL_PARSING",
            format!("Error parsing interval year-month string: integer overflow in '{text}'."),
        )
    };
    let y: i64 = y.parse().map_err(|_| out_of_range())?;
    let m: i64 = m.parse().map_err(|_| out_of_range())?;
    if m > 11 {
        return Err(parse_error(
            "INVALID_INTERVAL_FORMAT.INTERVAL_PARSING",
            format!("Error parsing interval year-month string: month {m} outside range [0, 11]."),
        ));
    }
    let total = y.checked_mul(12).and_then(|v| v.checked_add(m));
    let total = total.map(|v| if neg != negate { -v } else { v });
    let months = total
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(out_of_range)?;
    Ok(AnsiInterval::YearMonth(months))
}

/// `INTERVAL '<text>' <from> TO <to>` for day-time fields (Spark's `fromDayTimeString`).
pub fn day_time_from_text(text: &str, from: Unit, to: Unit, negate: bool) -> Result<AnsiInterval> {
    let order = [Unit::Day, Unit::Hour, Unit::Minute, Unit::Second];
    let (Some(start), Some(end)) = (
        order.iter().position(|u| *u == from),
        order.iter().position(|u| *u == to),
    ) else {
        return Err(unsupported_range(from, to));
    };
    if start >= end {
        return Err(unsupported_range(from, to));
    }
    let pattern = match (from, to) {
        (Unit::Day, Unit::Hour) => "`[+|-]d h`",
        (Unit::Day, Unit::Minute) => "`[+|-]d h:m`",
        (Unit::Day, Unit::Second) => "`[+|-]d h:m:s.n`",
        (Unit::Hour, Unit::Minute) => "`[+|-]h:m`",
        (Unit::Hour, Unit::Second) => "`[+|-]h:m:s.n`",
        (Unit::Minute, Unit::Second) => "`[+|-]m:s.n`",
        _ => "`[+|-]d h:m:s.n`",
    };
    let unmatched = || {
        parse_error(
            "INVALID_INTERVAL_FORMAT.UNMATCHED_FORMAT_STRING_WITH_NOTICE",
            format!(
                "Interval string does not match day-time format of {pattern} when cast to interval {} to {}: {text}. Set \"spark.sql.legacy.fromDayTimeString.enabled\" to \"true\" to restore the behavior before Spark 3.0.",
                from.name(),
                to.name()
            ),
        )
    };
    let t = text.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    // Fields: days before a space, then colon-separated ones.
    let mut fields: Vec<&str> = Vec::new();
    let rest = if start == 0 {
        let (d, r) = match body.split_once(' ') {
            Some((d, r)) => (d, Some(r)),
            None => (body, None),
        };
        fields.push(d);
        r
    } else {
        Some(body)
    };
    if let Some(r) = rest {
        fields.extend(r.split(':'));
    }
    if fields.len() != end - start + 1 {
        return Err(unmatched());
    }
    let mut micros: i128 = 0;
    for (k, f) in fields.iter().enumerate() {
        let unit = order[start + k];
        let (whole, frac) = match (unit, f.split_once('.')) {
            (Unit::Second, Some((w, fr))) => (w, Some(fr)),
            _ => (*f, None),
        };
        let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !ok(whole) || frac.is_some_and(|fr| !ok(fr) || fr.len() > 9) {
            return Err(unmatched());
        }
        if k > 0 && whole.len() > 2 {
            return Err(unmatched());
        }
        let v: i128 = whole.parse().map_err(|_| unmatched())?;
        let (limit, per): (i128, i128) = match unit {
            Unit::Day => (106_751_991, MICROS_PER_DAY as i128),
            Unit::Hour => (
                if k == 0 { 2_562_047_788 } else { 23 },
                MICROS_PER_HOUR as i128,
            ),
            Unit::Minute => (
                if k == 0 { 153_722_867_280 } else { 59 },
                MICROS_PER_MINUTE as i128,
            ),
            _ => (if k == 0 { 9_223_372_036_854 } else { 59 }, 1_000_000),
        };
        if v > limit {
            return Err(parse_error(
                "_LEGACY_ERROR_TEMP_0063",
                format!(
                    "Error parsing interval day-time string: requirement failed: {} {v} outside range [0, {limit}]",
                    unit.name()
                ),
            ));
        }
        micros += v * per;
        if let Some(fr) = frac {
            let mut nanos: i128 = fr.parse().map_err(|_| unmatched())?;
            for _ in fr.len()..9 {
                nanos *= 10;
            }
            micros += nanos / 1000;
        }
    }
    if neg != negate {
        micros = -micros;
    }
    let us = i64::try_from(micros).map_err(|_| {
        parse_error(
            "_LEGACY_ERROR_TEMP_0063",
            format!("Error parsing interval day-time string: {text} is out of range"),
        )
    })?;
    Ok(AnsiInterval::DayTime(us))
}

fn unsupported_range(from: Unit, to: Unit) -> FerroError {
    parse_error(
        "INVALID_INTERVAL_FORMAT.UNSUPPORTED_FROM_TO_EXPRESSION",
        format!(
            "Error parsing interval: from-to interval {} TO {} is not supported.",
            from.name().to_uppercase(),
            to.name().to_uppercase()
        ),
    )
}

/// A single `<number> <unit>` (`INTERVAL 3 DAY`, `INTERVAL '-1' YEAR`) or a text with its
/// units (`INTERVAL '1 day 2 hours'`), typed as Spark types it.
pub fn ansi_from_text(text: &str, what: &str) -> Result<AnsiInterval> {
    let (cal, units) = parse_calendar(text).map_err(|why| {
        let class = if why.starts_with("invalid unit") && text.to_lowercase().contains("nanosecond")
        {
            "INVALID_INTERVAL_FORMAT.INVALID_UNIT"
        } else {
            "INVALID_TYPED_LITERAL"
        };
        parse_error(
            class,
            format!("The value of the typed literal \"INTERVAL\" is invalid: '{text}' ({why})."),
        )
    })?;
    ansi_of_units(cal, &units, what)
}

/// The start and end fields of the ANSI interval type Spark gives a literal written with
/// `units`: `2 years 4 months` is `YEAR TO MONTH`, `3 hours 5 seconds` `HOUR TO SECOND`
/// (weeks count as days, milli- and microseconds as seconds).
pub fn fields_of_units(units: &[Unit]) -> (Unit, Unit) {
    let rank = |u: Unit| match u {
        Unit::Year => 0,
        Unit::Month => 1,
        Unit::Week | Unit::Day => 2,
        Unit::Hour => 3,
        Unit::Minute => 4,
        _ => 5,
    };
    let field = |r: u8| match r {
        0 => Unit::Year,
        1 => Unit::Month,
        2 => Unit::Day,
        3 => Unit::Hour,
        4 => Unit::Minute,
        _ => Unit::Second,
    };
    let lo = units.iter().map(|u| rank(*u)).min().unwrap_or(2);
    let hi = units.iter().map(|u| rank(*u)).max().unwrap_or(5);
    (field(lo), field(hi))
}

/// Spark's SQL text of an ANSI interval literal of the type `start TO end`, which is also
/// the name of a column it makes (`INTERVAL '1-2' YEAR TO MONTH`, `INTERVAL '02' SECOND`,
/// `INTERVAL '-1 01' DAY TO HOUR`): `IntervalUtils.toYearMonthIntervalString` /
/// `toDayTimeIntervalString` in their ANSI style.
pub fn ansi_literal_sql(iv: AnsiInterval, start: Unit, end: Unit) -> String {
    let up = |u: Unit| u.name().to_ascii_uppercase();
    let fields = if start == end {
        up(start)
    } else {
        format!("{} TO {}", up(start), up(end))
    };
    let micros = match iv {
        AnsiInterval::YearMonth(m) => {
            let sign = if m < 0 { "-" } else { "" };
            let a = (m as i64).unsigned_abs();
            let text = match (start, end) {
                (Unit::Year, Unit::Year) => format!("{sign}{}", a / 12),
                (Unit::Year, _) => format!("{sign}{}-{}", a / 12, a % 12),
                _ => format!("{sign}{a}"),
            };
            return format!("INTERVAL '{text}' {fields}");
        }
        AnsiInterval::Day(d) => d as i64 * MICROS_PER_DAY,
        AnsiInterval::DayTime(us) => us,
    };
    const US_DAY: u64 = MICROS_PER_DAY as u64;
    const US_HOUR: u64 = 3_600_000_000;
    const US_MINUTE: u64 = 60_000_000;
    let seconds = |us: u64| {
        let lead = if us < 10_000_000 { "0" } else { "" };
        let (whole, frac) = (us / 1_000_000, us % 1_000_000);
        if frac == 0 {
            format!("{lead}{whole}")
        } else {
            let f = format!("{frac:06}");
            format!("{lead}{whole}.{}", f.trim_end_matches('0'))
        }
    };
    let rank = |u: Unit| match u {
        Unit::Day => 0,
        Unit::Hour => 1,
        Unit::Minute => 2,
        _ => 3,
    };
    let (s, e) = (rank(start), rank(end));
    let mut rest = micros.unsigned_abs();
    let mut text = String::from(if micros < 0 { "-" } else { "" });
    match s {
        0 => {
            text.push_str(&(rest / US_DAY).to_string());
            rest %= US_DAY;
        }
        1 => {
            text.push_str(&format!("{:02}", rest / US_HOUR));
            rest %= US_HOUR;
        }
        2 => {
            text.push_str(&format!("{:02}", rest / US_MINUTE));
            rest %= US_MINUTE;
        }
        _ => text.push_str(&seconds(rest)),
    }
    if s < 1 && 1 <= e {
        text.push_str(&format!(" {:02}", rest / US_HOUR));
        rest %= US_HOUR;
    }
    if s < 2 && 2 <= e {
        text.push_str(&format!(":{:02}", rest / US_MINUTE));
        rest %= US_MINUTE;
    }
    if s < 3 && 3 <= e {
        text.push(':');
        text.push_str(&seconds(rest));
    }
    format!("INTERVAL '{text}' {fields}")
}

fn unit_of_field(f: &DateTimeField) -> Option<Unit> {
    Some(match f {
        DateTimeField::Year => Unit::Year,
        DateTimeField::Month => Unit::Month,
        DateTimeField::Day => Unit::Day,
        DateTimeField::Hour => Unit::Hour,
        DateTimeField::Minute => Unit::Minute,
        DateTimeField::Second => Unit::Second,
        _ => return None,
    })
}

/// The literal of a sqlparser `INTERVAL` node. The dialect rewrites Spark's spellings into
/// one `<number> MONTH | DAY | MICROSECOND` form (see `dialect.rs`); what it leaves to
/// sqlparser is an interval of a non-literal value, which Spark reads as a call of a function
/// named `interval`.
pub fn interval_literal(iv: &ast::Interval, text: &str) -> Result<(Literal, String)> {
    let number = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Some(n.clone()),
            _ => None,
        },
        _ => None,
    };
    let parsed = number.and_then(|n| n.parse::<i64>().ok());
    let start = iv.leading_field.as_ref().and_then(unit_of_field);
    let end = iv.last_field.as_ref().and_then(unit_of_field).or(start);
    let value = match (parsed, &iv.leading_field, start, end) {
        (Some(us), Some(DateTimeField::Microsecond), _, _) => {
            Some((AnsiInterval::DayTime(us), Unit::Day, Unit::Second))
        }
        (Some(m), _, Some(s @ (Unit::Year | Unit::Month)), Some(e)) => i32::try_from(m)
            .ok()
            .map(|m| (AnsiInterval::YearMonth(m), s, e)),
        (Some(d), _, Some(Unit::Day), Some(Unit::Day)) => i32::try_from(d)
            .ok()
            .map(|d| (AnsiInterval::Day(d), Unit::Day, Unit::Day)),
        (Some(us), _, Some(s), Some(e)) => Some((AnsiInterval::DayTime(us), s, e)),
        _ => None,
    };
    value
        .map(|(iv, s, e)| (iv.literal(), ansi_literal_sql(iv, s, e)))
        .ok_or_else(|| {
            FerroError::Analysis(format!(
                "[UNRESOLVED_ROUTINE] Cannot resolve routine `interval` on search path [`system`.`builtin`, `system`.`session`] in \"{text}\"."
            ))
        })
}

/// An interval string as Spark's cast to an interval reads it (`'10 minutes'`,
/// `'1 hour 30 minutes'`, `'interval 5 seconds'`, `'-2 days'`) in microseconds. `None` for
/// text that is not an interval; an error for months and years, whose length depends on the
/// date (a watermark delay, a session gap).
pub fn interval_text_micros(text: &str) -> Result<Option<i64>> {
    let Ok((cal, _)) = parse_calendar(text) else {
        return Ok(None);
    };
    if cal.months != 0 {
        return Err(FerroError::Unsupported(format!(
            "the interval '{text}' counts months or years, whose length depends on the date; give it in weeks, days, hours, minutes or seconds"
        )));
    }
    Ok((cal.days as i64)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|d| d.checked_add(cal.micros)))
}

/// Spark's text of a year-month interval in query output (`1-2`, `-0-11`).
pub fn year_month_text(months: i32) -> String {
    let sign = if months < 0 { "-" } else { "" };
    let u = months.unsigned_abs();
    format!("{sign}{}-{}", u / 12, u % 12)
}

/// Spark's text of a day-time interval in query output (`1 02:03:04.001000000`).
pub fn day_time_text(micros: i64) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let u = micros.unsigned_abs();
    let secs = u / 1_000_000;
    format!(
        "{sign}{} {:02}:{:02}:{:02}.{:09}",
        secs / 86_400,
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60,
        (u % 1_000_000) * 1000
    )
}

/// Spark's SQL form of a year-month interval (`INTERVAL '1-2' YEAR TO MONTH`).
pub fn year_month_sql(months: i32) -> String {
    format!("INTERVAL '{}' YEAR TO MONTH", year_month_text(months))
}

/// Spark's SQL form of a day interval (`INTERVAL '3' DAY`).
pub fn day_sql(days: i32) -> String {
    format!("INTERVAL '{days}' DAY")
}

/// Spark's SQL form of a day-time interval (`INTERVAL '1 02:03:04.5' DAY TO SECOND`).
pub fn day_time_sql(micros: i64) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let u = micros.unsigned_abs();
    let secs = u / 1_000_000;
    let frac = u % 1_000_000;
    let sec_text = if frac == 0 {
        format!("{:02}", secs % 60)
    } else {
        let f = format!("{frac:06}");
        format!("{:02}.{}", secs % 60, f.trim_end_matches('0'))
    };
    format!(
        "INTERVAL '{sign}{} {:02}:{:02}:{sec_text}' DAY TO SECOND",
        secs / 86_400,
        secs / 3600 % 24,
        secs / 60 % 60,
    )
}

/// Day intervals as day-time ones (microseconds).
pub fn day_time_as_duration(a: &IntervalDayTimeArray) -> DurationMicrosecondArray {
    a.iter()
        .map(|v| v.map(|v| v.days as i64 * MICROS_PER_DAY + v.milliseconds as i64 * 1000))
        .collect()
}

/// A calendar interval literal.
pub fn calendar_literal(c: CalendarInterval) -> Literal {
    Literal::new(Arc::new(IntervalMonthDayNanoArray::from(vec![c.arrow()])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal(text: &str) -> CalendarInterval {
        parse_calendar(text).expect("parses").0
    }

    #[test]
    fn spark_interval_text_parses_and_prints() {
        let c = cal("interval 1 year 2 months 3 weeks 4 days 5 hours 6 minutes 7.008009 seconds");
        assert_eq!((c.months, c.days), (14, 25));
        assert_eq!(
            c.text(),
            "1 years 2 months 25 days 5 hours 6 minutes 7.008009 seconds"
        );
        assert_eq!(cal("+ 1 second").text(), "1 seconds");
        assert_eq!(cal("-\t 1 day").days, -1);
        assert_eq!(cal("299.889987299 second").micros, 299_889_987);
        assert!(parse_calendar("- -1 second").is_err());
        assert!(parse_calendar("1 day 1").is_err());
        assert!(parse_calendar("interval中文 1 day").is_err());
        assert!(parse_calendar("1.5 days").is_err());
        assert!(parse_calendar("10 nanoseconds").is_err());
    }

    #[test]
    fn unit_to_unit_texts_follow_spark_bounds() {
        assert_eq!(
            year_month_from_text("-178956970-8", false).expect("fits"),
            AnsiInterval::YearMonth(i32::MIN)
        );
        assert!(year_month_from_text("178956970-8", false).is_err());
        assert_eq!(
            day_time_from_text("20 15:40:32.99899999", Unit::Day, Unit::Second, false).expect("ok"),
            AnsiInterval::DayTime(((20 * 24 + 15) * 3600 + 40 * 60 + 32) * 1_000_000 + 998_999)
        );
        let e = day_time_from_text("15:40", Unit::Hour, Unit::Second, false).expect_err("short");
        assert!(e
            .to_string()
            .contains("UNMATCHED_FORMAT_STRING_WITH_NOTICE"));
        let e = day_time_from_text("106751992 04", Unit::Day, Unit::Hour, false).expect_err("big");
        assert!(e.to_string().contains("_LEGACY_ERROR_TEMP_0063"));
    }

    #[test]
    fn interval_texts_print_as_spark_prints_them() {
        assert_eq!(year_month_text(-11), "-0-11");
        assert_eq!(
            day_time_text(-(23 * 3600 + 59) * 1_000_000),
            "-0 23:00:59.000000000"
        );
        assert_eq!(day_time_text(i64::MIN), "-106751991 04:00:54.775808000");
        assert_eq!(
            day_time_sql(14 * MICROS_PER_DAY + 3),
            "INTERVAL '14 00:00:00.000003' DAY TO SECOND"
        );
        assert_eq!(
            day_time_sql(100_000),
            "INTERVAL '0 00:00:00.1' DAY TO SECOND"
        );
        assert_eq!(year_month_sql(28), "INTERVAL '2-4' YEAR TO MONTH");
    }
}
