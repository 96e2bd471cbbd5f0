//! Spark's datetime patterns (`yyyy-MM-dd HH:mm:ss.SSS`, `EEE`, `MMM`, `a`, quoted text):
//! formatting a local date-time to text and parsing text back, both strict the way Java's
//! `DateTimeFormatter` is (a pattern must consume the whole input; `MM` wants two digits).
//!
//! Written here because Spark's pattern letters are Java's, not strftime's, and chrono's
//! parser is lenient where Spark's is not.

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use ferrospark_common::{FerroError, Result};

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A pattern letter repeated `count` times.
    Field(char, usize),
    /// Literal text.
    Text(String),
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    tokens: Vec<Token>,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

impl Pattern {
    /// Compiles `p`; an unknown letter is Spark's INCONSISTENT_BEHAVIOR_CROSS_VERSION error.
    pub fn new(p: &str) -> Result<Self> {
        let mut tokens = Vec::new();
        let chars: Vec<char> = p.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' {
                let mut text = String::new();
                i += 1;
                while i < chars.len() {
                    if chars[i] == '\'' {
                        if chars.get(i + 1) == Some(&'\'') {
                            text.push('\'');
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    text.push(chars[i]);
                    i += 1;
                }
                if text.is_empty() && chars.get(i) == Some(&'\'') && chars.get(i - 1) == Some(&'\'')
                {
                    text.push('\'');
                }
                i += 1;
                tokens.push(Token::Text(text));
            } else if c.is_ascii_alphabetic() {
                let mut n = 1;
                while chars.get(i + n) == Some(&c) {
                    n += 1;
                }
                if !"yMLdDHhkKmsSaEuQqzZXxVGe".contains(c) {
                    return Err(FerroError::Analysis(format!(
                        "[INCONSISTENT_BEHAVIOR_CROSS_VERSION.DATETIME_PATTERN_RECOGNITION] Fail to recognize '{p}' pattern in the DateTimeFormatter: unknown pattern letter '{c}'."
                    )));
                }
                tokens.push(Token::Field(c, n));
                i += n;
            } else {
                tokens.push(Token::Text(c.to_string()));
                i += 1;
            }
        }
        Ok(Self { tokens })
    }

    /// Formats a local date-time; `zone` is the zone's name for `z`/`VV` and `offset_secs`
    /// its offset for `Z`/`X`/`x`.
    pub fn format(&self, t: &NaiveDateTime, zone: &str, offset_secs: i32, out: &mut String) {
        use std::fmt::Write;
        for tok in &self.tokens {
            match tok {
                Token::Text(s) => out.push_str(s),
                Token::Field(c, n) => {
                    let n = *n;
                    let num = |out: &mut String, v: i64, width: usize| {
                        let _ = write!(out, "{v:0width$}");
                    };
                    match c {
                        'y' | 'u' => {
                            let y = t.year() as i64;
                            if n == 2 {
                                num(out, y.rem_euclid(100), 2)
                            } else {
                                num(out, y, n)
                            }
                        }
                        'M' | 'L' => match n {
                            1 | 2 => num(out, t.month() as i64, n),
                            3 => out.push_str(&MONTHS[t.month0() as usize][..3]),
                            _ => out.push_str(MONTHS[t.month0() as usize]),
                        },
                        'd' => num(out, t.day() as i64, n),
                        'D' => num(out, t.ordinal() as i64, n),
                        'Q' | 'q' => num(out, (t.month0() / 3 + 1) as i64, n),
                        'H' => num(out, t.hour() as i64, n),
                        'k' => num(out, if t.hour() == 0 { 24 } else { t.hour() as i64 }, n),
                        'K' => num(out, (t.hour() % 12) as i64, n),
                        'h' => {
                            let h = t.hour() % 12;
                            num(out, if h == 0 { 12 } else { h as i64 }, n)
                        }
                        'm' => num(out, t.minute() as i64, n),
                        's' => num(out, t.second() as i64, n),
                        'S' => {
                            let nanos = format!("{:09}", t.nanosecond() % 1_000_000_000);
                            let digits: String = nanos
                                .chars()
                                .chain(std::iter::repeat('0'))
                                .take(n)
                                .collect();
                            out.push_str(&digits);
                        }
                        'a' => out.push_str(if t.hour() < 12 { "AM" } else { "PM" }),
                        'E' | 'e' => {
                            let d = DAYS[t.weekday().num_days_from_monday() as usize];
                            if n >= 4 {
                                out.push_str(d)
                            } else {
                                out.push_str(&d[..3])
                            }
                        }
                        'G' => out.push_str(if t.year() > 0 { "AD" } else { "BC" }),
                        'z' | 'V' => out.push_str(zone),
                        'Z' | 'X' | 'x' => {
                            if *c == 'X' && offset_secs == 0 {
                                out.push('Z');
                            } else {
                                let sign = if offset_secs < 0 { '-' } else { '+' };
                                let o = offset_secs.abs();
                                let (h, m) = (o / 3600, (o % 3600) / 60);
                                if n >= 3 && *c != 'Z' {
                                    let _ = write!(out, "{sign}{h:02}:{m:02}");
                                } else {
                                    let _ = write!(out, "{sign}{h:02}{m:02}");
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Parses `s` into a local date-time (missing fields default as Java's do: day 1,
    /// midnight). `None` when the text does not match the whole pattern.
    pub fn parse(&self, s: &str) -> Option<NaiveDateTime> {
        let b = s.as_bytes();
        let mut pos = 0usize;
        let (mut year, mut month, mut day) = (1970i32, 1u32, 1u32);
        let (mut hour, mut minute, mut second, mut nanos) = (0u32, 0u32, 0u32, 0u32);
        let mut pm: Option<bool> = None;
        let mut hour12 = false;
        let mut doy: Option<u32> = None;
        let digits = |pos: &mut usize, min: usize, max: usize| -> Option<i64> {
            let start = *pos;
            while *pos < b.len() && *pos - start < max && b[*pos].is_ascii_digit() {
                *pos += 1;
            }
            if *pos - start < min {
                return None;
            }
            std::str::from_utf8(&b[start..*pos]).ok()?.parse().ok()
        };
        for (k, tok) in self.tokens.iter().enumerate() {
            // A numeric field followed directly by another numeric field reads its exact width.
            let next_is_number = matches!(self.tokens.get(k + 1), Some(Token::Field(c, _)) if "yMdDHhkKmsS".contains(*c));
            match tok {
                Token::Text(t) => {
                    if !s[pos..].starts_with(t.as_str()) {
                        return None;
                    }
                    pos += t.len();
                }
                Token::Field(c, n) => {
                    let n = *n;
                    let (min, max) = if n == 1 && !next_is_number {
                        (1, 2)
                    } else {
                        (n, n)
                    };
                    match c {
                        'y' | 'u' => {
                            if n == 2 {
                                year = 2000 + digits(&mut pos, 2, 2)? as i32;
                            } else {
                                let max = if next_is_number { n.max(4) } else { 9 };
                                year = digits(&mut pos, n.min(4), max)? as i32;
                            }
                        }
                        'M' | 'L' if n >= 3 => {
                            let rest = &s[pos..];
                            let found = MONTHS.iter().enumerate().find_map(|(i, m)| {
                                let name = if n == 3 { &m[..3] } else { m };
                                rest.get(..name.len())
                                    .filter(|r| r.eq_ignore_ascii_case(name))
                                    .map(|_| (i, name.len()))
                            })?;
                            month = found.0 as u32 + 1;
                            pos += found.1;
                        }
                        'M' | 'L' => month = digits(&mut pos, min, max)? as u32,
                        'd' => day = digits(&mut pos, min, max)? as u32,
                        'D' => doy = Some(digits(&mut pos, n, 3)? as u32),
                        'H' | 'k' => hour = digits(&mut pos, min, max)? as u32,
                        'h' | 'K' => {
                            hour = digits(&mut pos, min, max)? as u32;
                            hour12 = true;
                        }
                        'm' => minute = digits(&mut pos, min, max)? as u32,
                        's' => second = digits(&mut pos, min, max)? as u32,
                        // Spark reads 1 to n fraction digits (exactly n when a number follows).
                        'S' => {
                            let start = pos;
                            let v = digits(&mut pos, if next_is_number { n } else { 1 }, n)?;
                            let width = pos - start;
                            nanos = (v as u32) * 10u32.pow(9 - width.min(9) as u32);
                        }
                        'a' => {
                            let rest = s[pos..].get(..2)?;
                            pm = Some(match rest.to_ascii_uppercase().as_str() {
                                "AM" => false,
                                "PM" => true,
                                _ => return None,
                            });
                            pos += 2;
                        }
                        'E' => {
                            let rest = &s[pos..];
                            let len = DAYS.iter().find_map(|d| {
                                let name = if n >= 4 { d } else { &d[..3] };
                                rest.get(..name.len())
                                    .filter(|r| r.eq_ignore_ascii_case(name))
                                    .map(|_| name.len())
                            })?;
                            pos += len;
                        }
                        _ => return None,
                    }
                }
            }
        }
        if pos != b.len() {
            return None;
        }
        if hour12 {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour %= 12;
            if pm == Some(true) {
                hour += 12;
            }
        } else if pm == Some(true) && hour < 12 {
            hour += 12;
        }
        let date = match doy {
            Some(d) => NaiveDate::from_yo_opt(year, d)?,
            None => NaiveDate::from_ymd_opt(year, month, day)?,
        };
        let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?;
        Some(NaiveDateTime::new(date, time))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").expect("test date")
    }

    #[test]
    fn formats_java_letters() {
        let p = Pattern::new("yyyy/MM/dd HH:mm:ss.SSS EEE MMM a 'at' h").expect("pattern");
        let mut out = String::new();
        p.format(&dt("2024-02-29 13:05:09.123456"), "UTC", 0, &mut out);
        assert_eq!(out, "2024/02/29 13:05:09.123 Thu Feb PM at 1");
    }

    #[test]
    fn parses_strictly() {
        let p = Pattern::new("yyyy-MM-dd").expect("pattern");
        assert_eq!(p.parse("2020-01-05"), Some(dt("2020-01-05 00:00:00")));
        assert_eq!(p.parse("2020-1-5"), None);
        assert_eq!(p.parse("2020-01-05 10:00"), None);
        assert_eq!(p.parse("2020-02-30"), None);
        let p = Pattern::new("dd/MM/yyyy HH:mm").expect("pattern");
        assert_eq!(p.parse("31/12/1999 23:59"), Some(dt("1999-12-31 23:59:00")));
        let p = Pattern::new("yyyyMMdd").expect("pattern");
        assert_eq!(p.parse("20200105"), Some(dt("2020-01-05 00:00:00")));
    }

    #[test]
    fn unknown_letters_are_refused() {
        assert!(Pattern::new("yyyy-bb").is_err());
    }
}
