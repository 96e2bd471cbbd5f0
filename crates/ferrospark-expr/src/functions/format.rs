//! Spark's datetime patterns (`yyyy-MM-dd HH:mm:ss.SSS`, `EEE`, `MMM`, `a`, quoted text):
//! formatting a local date-time to text and parsing text back, both strict the way Java's
//! `DateTimeFormatter` is (a pattern must consume the whole input; `MM` wants two digits).
//!
//! Written here because Spark's pattern letters are Java's, not strftime's, and chrono's
//! parser is lenient where Spark's is not.

use arrow_array::timezone::Tz;
use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use ferrospark_common::{FerroError, Result};

use super::datetime::from_local;

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A pattern letter repeated `count` times.
    Field(char, usize),
    /// Literal text.
    Text(String),
    /// An optional section (`[...]`): read when the text has it, skipped otherwise.
    Optional(Vec<Token>),
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
        let chars: Vec<char> = p.chars().collect();
        let mut i = 0;
        let tokens = Self::section(p, &chars, &mut i, false)?;
        Ok(Self { tokens })
    }

    /// The tokens of `chars` from `i` up to the end, or (`nested`) to the `]` closing an
    /// optional section.
    fn section(p: &str, chars: &[char], i: &mut usize, nested: bool) -> Result<Vec<Token>> {
        let bad = |why: &str| {
            FerroError::Analysis(format!(
                "[INCONSISTENT_BEHAVIOR_CROSS_VERSION.DATETIME_PATTERN_RECOGNITION] Fail to recognize '{p}' pattern in the DateTimeFormatter: {why}."
            ))
        };
        let mut tokens = Vec::new();
        while *i < chars.len() {
            let c = chars[*i];
            if c == '\'' {
                let mut text = String::new();
                *i += 1;
                while *i < chars.len() {
                    if chars[*i] == '\'' {
                        if chars.get(*i + 1) == Some(&'\'') {
                            text.push('\'');
                            *i += 2;
                            continue;
                        }
                        break;
                    }
                    text.push(chars[*i]);
                    *i += 1;
                }
                if text.is_empty()
                    && chars.get(*i) == Some(&'\'')
                    && chars.get(*i - 1) == Some(&'\'')
                {
                    text.push('\'');
                }
                *i += 1;
                tokens.push(Token::Text(text));
            } else if c == '[' {
                *i += 1;
                tokens.push(Token::Optional(Self::section(p, chars, i, true)?));
            } else if c == ']' {
                if !nested {
                    return Err(bad("']' without a '[' before it"));
                }
                *i += 1;
                return Ok(tokens);
            } else if c.is_ascii_alphabetic() {
                let mut n = 1;
                while chars.get(*i + n) == Some(&c) {
                    n += 1;
                }
                if !"yMLdDHhkKmsSaEuQqzZXxVGeFO".contains(c) {
                    return Err(bad(&format!("unknown pattern letter '{c}'")));
                }
                // Spark refuses the narrow text forms (five letters, which Spark 2 read as the
                // full name) and longer, and years of seven letters or more.
                if ("GMLEQq".contains(c) && n >= 5) || (c == 'y' && n >= 7) {
                    return Err(bad(&format!("too many pattern letters: {c}")));
                }
                if c == 'O' && n != 1 && n != 4 {
                    return Err(bad("Pattern letter count must be 1 or 4: O"));
                }
                tokens.push(Token::Field(c, n));
                *i += n;
            } else {
                tokens.push(Token::Text(c.to_string()));
                *i += 1;
            }
        }
        if nested {
            return Err(bad("'[' without a ']' after it"));
        }
        Ok(tokens)
    }

    /// Formats a local date-time; `zone` is the zone's name for `z`/`VV` and `offset_secs`
    /// its offset for `Z`/`X`/`x`.
    pub fn format(&self, t: &NaiveDateTime, zone: &str, offset_secs: i32, out: &mut String) {
        Self::format_tokens(&self.tokens, t, zone, offset_secs, out);
    }

    fn format_tokens(
        tokens: &[Token],
        t: &NaiveDateTime,
        zone: &str,
        offset_secs: i32,
        out: &mut String,
    ) {
        use std::fmt::Write;
        for tok in tokens {
            match tok {
                Token::Text(s) => out.push_str(s),
                // A date-time has every field an optional section prints.
                Token::Optional(inner) => Self::format_tokens(inner, t, zone, offset_secs, out),
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
                        'Q' | 'q' => {
                            let q = t.month0() / 3 + 1;
                            match n {
                                1 | 2 => num(out, q as i64, n),
                                3 => {
                                    let _ = write!(out, "Q{q}");
                                }
                                _ => out.push_str(
                                    ["1st quarter", "2nd quarter", "3rd quarter", "4th quarter"]
                                        [q as usize - 1],
                                ),
                            }
                        }
                        // Java's `F`: the day's place in its aligned week of the month.
                        'F' => num(out, ((t.day() - 1) % 7 + 1) as i64, n),
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
                        'G' => out.push_str(match (t.year() > 0, n >= 4) {
                            (true, false) => "AD",
                            (false, false) => "BC",
                            (true, true) => "Anno Domini",
                            (false, true) => "Before Christ",
                        }),
                        'z' => super::format_zone::zone_name(out, n, zone, offset_secs),
                        'V' => out.push_str(zone),
                        'Z' | 'X' | 'x' | 'O' => {
                            super::format_zone::offset(out, *c, n, offset_secs)
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Parses `s` into a local date-time (missing fields default as Java's do: day 1,
    /// midnight); an offset the text gives is ignored. `None` when the text does not match
    /// the whole pattern.
    pub fn parse(&self, s: &str) -> Option<NaiveDateTime> {
        self.parse_with_offset(s).map(|(t, _)| t)
    }

    /// [`Pattern::parse`], with the offset from UTC in seconds the text gives (`X`, `x`, `Z`),
    /// when it gives one: the date-time is then local to that offset, not to a zone.
    pub fn parse_with_offset(&self, s: &str) -> Option<(NaiveDateTime, Option<i32>)> {
        let mut st = Fields::default();
        let mut pos = 0;
        read_tokens(&self.tokens, s, &mut pos, &mut st)?;
        if pos != s.len() {
            return None;
        }
        let mut hour = st.hour;
        if st.hour12 {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour %= 12;
            if st.pm == Some(true) {
                hour += 12;
            }
        } else if st.pm == Some(true) && hour < 12 {
            hour += 12;
        }
        let date = match st.doy {
            Some(d) => NaiveDate::from_yo_opt(st.year, d)?,
            None => NaiveDate::from_ymd_opt(st.year, st.month, st.day)?,
        };
        let time = NaiveTime::from_hms_nano_opt(hour, st.minute, st.second, st.nanos)?;
        let local = NaiveDateTime::new(date, time);
        let offset = match (st.offset, &st.zone) {
            (None, Some(z)) => {
                // The zone's offset at that local time, as Java's `ZonedDateTime.ofLocal`
                // resolves it (the earlier instant in an overlap, forward through a gap).
                let at = from_local(&local, z)?;
                let secs = (local.and_utc().timestamp_micros() - at).div_euclid(1_000_000);
                Some(i32::try_from(secs).ok()?)
            }
            (o, _) => o,
        };
        Some((local, offset))
    }
}

/// The fields a parse has read so far.
#[derive(Debug, Clone, Copy)]
struct Fields {
    year: i32,
    month: u32,
    day: u32,
    doy: Option<u32>,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    /// Whether an `S` field has been read (a second one must agree).
    fraction_read: bool,
    hour12: bool,
    pm: Option<bool>,
    offset: Option<i32>,
    /// A zone read by `VV` or `z`: the offset is its offset at the local date-time read.
    zone: Option<Tz>,
}

impl Default for Fields {
    fn default() -> Self {
        Self {
            year: 1970,
            month: 1,
            day: 1,
            doy: None,
            hour: 0,
            minute: 0,
            second: 0,
            nanos: 0,
            fraction_read: false,
            hour12: false,
            pm: None,
            offset: None,
            zone: None,
        }
    }
}

/// Reads `min` to `max` digits at `pos`.
fn digits(b: &[u8], pos: &mut usize, min: usize, max: usize) -> Option<i64> {
    let start = *pos;
    while *pos < b.len() && *pos - start < max && b[*pos].is_ascii_digit() {
        *pos += 1;
    }
    if *pos - start < min {
        return None;
    }
    std::str::from_utf8(&b[start..*pos]).ok()?.parse().ok()
}

/// An offset as Java's `X` / `x` / `Z` letters read it (`count` letters): `Z` for zero where
/// allowed, else a sign, two hour digits and the minutes (with a colon for `XXX`, `xxx`,
/// `ZZZZZ`; optional for one `X` or `x`).
fn read_offset(b: &[u8], pos: &mut usize, letter: char, count: usize) -> Option<i32> {
    let z_allowed = letter == 'X' || (letter == 'Z' && count == 5);
    if z_allowed && b.get(*pos) == Some(&b'Z') {
        *pos += 1;
        return Some(0);
    }
    if letter == 'Z' && count == 4 {
        return None; // localized GMT text
    }
    let sign = match b.get(*pos)? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    *pos += 1;
    let hours = digits(b, pos, 2, 2)?;
    let colon = matches!((letter, count), ('X' | 'x', 3) | ('X' | 'x', 5) | ('Z', 5));
    let minutes = if count == 1 && letter != 'Z' {
        // `+HH`, or `+HHmm`
        if b.get(*pos).is_some_and(|c| c.is_ascii_digit()) {
            digits(b, pos, 2, 2)?
        } else {
            0
        }
    } else {
        if colon {
            if b.get(*pos) != Some(&b':') {
                return None;
            }
            *pos += 1;
        }
        digits(b, pos, 2, 2)?
    };
    if hours > 18 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60) as i32)
}

/// A zone id as Java's `VV` reads it: a region (`Europe/Paris`, the longest name known to
/// the zone database), `Z`, `UTC` / `GMT` / `UT`, or an offset (`+01:00`).
fn read_zone_id(s: &str, pos: &mut usize) -> Option<Tz> {
    let rest = &s[*pos..];
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || "~/._+-:".contains(c)))
        .unwrap_or(rest.len());
    // The longest prefix that names a zone, as Java's zone-id parser matches it.
    let (n, tz) = (1..=len).rev().find_map(|n| {
        let id = &rest[..n];
        let id = if id == "Z" { "+00:00" } else { id };
        id.parse::<Tz>().ok().map(|tz| (n, tz))
    })?;
    *pos += n;
    Some(tz)
}

/// A zone as Java's `z` reads it in Spark's locale (US English): a short name of a US zone
/// (`PST`, `CDT`: the region, so its offset is the one in force at the time read), `UTC` /
/// `GMT`, or a zone id.
fn read_zone_name(s: &str, pos: &mut usize) -> Option<Tz> {
    let rest = &s[*pos..];
    let word = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .map_or(rest, |n| &rest[..n]);
    let region = match word {
        "PST" | "PDT" | "PT" => Some("America/Los_Angeles"),
        "MST" | "MDT" | "MT" => Some("America/Denver"),
        "CST" | "CDT" | "CT" => Some("America/Chicago"),
        "EST" | "EDT" | "ET" => Some("America/New_York"),
        "AKST" | "AKDT" => Some("America/Anchorage"),
        "HST" => Some("Pacific/Honolulu"),
        "UTC" | "GMT" | "UT" | "Z" => Some("UTC"),
        _ => None,
    };
    match region {
        Some(r) => {
            *pos += word.len();
            r.parse().ok()
        }
        None => read_zone_id(s, pos),
    }
}

/// Reads `tokens` from `pos` into `st`; `None` when the text does not follow them.
fn read_tokens(tokens: &[Token], s: &str, pos: &mut usize, st: &mut Fields) -> Option<()> {
    let b = s.as_bytes();
    for (k, tok) in tokens.iter().enumerate() {
        // A numeric field followed directly by another numeric field reads its exact width.
        let next_is_number =
            matches!(tokens.get(k + 1), Some(Token::Field(c, _)) if "yMdDHhkKmsS".contains(*c));
        match tok {
            Token::Text(t) => {
                if !s[*pos..].starts_with(t.as_str()) {
                    return None;
                }
                *pos += t.len();
            }
            Token::Optional(inner) => {
                let (at, before) = (*pos, *st);
                if read_tokens(inner, s, pos, st).is_none() {
                    *pos = at;
                    *st = before;
                }
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
                            st.year = 2000 + digits(b, pos, 2, 2)? as i32;
                        } else {
                            let max = if next_is_number { n.max(4) } else { 9 };
                            st.year = digits(b, pos, n.min(4), max)? as i32;
                        }
                    }
                    'M' | 'L' if n >= 3 => {
                        let rest = &s[*pos..];
                        let found = MONTHS.iter().enumerate().find_map(|(i, m)| {
                            let name = if n == 3 { &m[..3] } else { m };
                            rest.get(..name.len())
                                .filter(|r| r.eq_ignore_ascii_case(name))
                                .map(|_| (i, name.len()))
                        })?;
                        st.month = found.0 as u32 + 1;
                        *pos += found.1;
                    }
                    'M' | 'L' => st.month = digits(b, pos, min, max)? as u32,
                    'd' => st.day = digits(b, pos, min, max)? as u32,
                    'D' => st.doy = Some(digits(b, pos, n, 3)? as u32),
                    'H' | 'k' => st.hour = digits(b, pos, min, max)? as u32,
                    'h' | 'K' => {
                        st.hour = digits(b, pos, min, max)? as u32;
                        st.hour12 = true;
                    }
                    'm' => st.minute = digits(b, pos, min, max)? as u32,
                    's' => st.second = digits(b, pos, min, max)? as u32,
                    // Spark reads 1 to n fraction digits (exactly n when a number follows).
                    'S' => {
                        let start = *pos;
                        let v = digits(b, pos, if next_is_number { n } else { 1 }, n)?;
                        let width = *pos - start;
                        let nanos = (v as u32) * 10u32.pow(9 - width.min(9) as u32);
                        // A fraction read twice must agree (Java refuses conflicting fields).
                        if st.fraction_read && st.nanos != nanos {
                            return None;
                        }
                        st.nanos = nanos;
                        st.fraction_read = true;
                    }
                    'a' => {
                        let rest = s[*pos..].get(..2)?;
                        st.pm = Some(match rest.to_ascii_uppercase().as_str() {
                            "AM" => false,
                            "PM" => true,
                            _ => return None,
                        });
                        *pos += 2;
                    }
                    'E' => {
                        let rest = &s[*pos..];
                        let len = DAYS.iter().find_map(|d| {
                            let name = if n >= 4 { d } else { &d[..3] };
                            rest.get(..name.len())
                                .filter(|r| r.eq_ignore_ascii_case(name))
                                .map(|_| name.len())
                        })?;
                        *pos += len;
                    }
                    'X' | 'x' | 'Z' => st.offset = Some(read_offset(b, pos, *c, n)?),
                    'V' if n == 2 => st.zone = Some(read_zone_id(s, pos)?),
                    'z' => st.zone = Some(read_zone_name(s, pos)?),
                    _ => return None,
                }
            }
        }
    }
    Some(())
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
        assert!(Pattern::new("yyyy]").is_err());
        assert!(Pattern::new("yyyy[MM").is_err());
    }

    /// Optional sections and offsets as Java's `DateTimeFormatter` reads them (the
    /// expectations are PySpark's `to_timestamp` in UTC).
    #[test]
    fn optional_sections_and_offsets() {
        let p = Pattern::new("yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]").expect("pattern");
        let at = |s: &str| p.parse_with_offset(s);
        assert_eq!(
            at("2024-01-31T10:20:30"),
            Some((dt("2024-01-31 10:20:30"), None))
        );
        assert_eq!(
            at("2024-01-31T10:20:30.5+02:00"),
            Some((dt("2024-01-31 10:20:30.5"), Some(7200)))
        );
        assert_eq!(
            at("2024-01-31T10:20:30Z"),
            Some((dt("2024-01-31 10:20:30"), Some(0)))
        );
        assert_eq!(
            at("2024-01-31T10:20:30-05:30"),
            Some((dt("2024-01-31 10:20:30"), Some(-19800)))
        );
        assert_eq!(at("2024-01-31T10:20:30+0200"), None);
        assert_eq!(at("2024-01-31T10:20:30."), None);
        let p = Pattern::new("yyyy-MM-dd HH:mm Z").expect("pattern");
        assert_eq!(
            p.parse_with_offset("2024-01-31 10:20 +0130"),
            Some((dt("2024-01-31 10:20:00"), Some(5400)))
        );
        assert_eq!(p.parse_with_offset("2024-01-31 10:20 Z"), None);
        let p = Pattern::new("yyyy-MM-dd[ HH[:mm]]x").expect("pattern");
        assert_eq!(
            p.parse_with_offset("2024-01-31 07+01"),
            Some((dt("2024-01-31 07:00:00"), Some(3600)))
        );
        assert_eq!(
            p.parse_with_offset("2024-01-31-0830"),
            Some((dt("2024-01-31 00:00:00"), Some(-30600)))
        );
        let mut out = String::new();
        p.format(&dt("2024-01-31 07:05:00"), "UTC", 3600, &mut out);
        assert_eq!(out, "2024-01-31 07:05+01");
    }

    /// `VV` reads a zone id; the offset is the zone's at the local time read (values from
    /// PySpark's `to_timestamp`).
    #[test]
    fn zone_ids_give_the_zone_offset_at_that_time() {
        let p = Pattern::new("yyyy-MM-dd HH:mm VV").expect("pattern");
        let offset = |s: &str| p.parse_with_offset(s).and_then(|(_, o)| o);
        assert_eq!(offset("2024-01-31 10:20 Europe/Paris"), Some(3600));
        assert_eq!(offset("2024-07-01 10:00 Europe/Paris"), Some(7200));
        // In the spring gap the time moves forward (02:30+01:00 is 01:30Z); in the autumn
        // overlap the earlier instant wins (+02:00).
        assert_eq!(offset("2024-03-31 02:30 Europe/Paris"), Some(3600));
        assert_eq!(offset("2024-10-27 02:30 Europe/Paris"), Some(7200));
        assert_eq!(offset("2024-01-31 10:20 America/New_York"), Some(-5 * 3600));
        assert_eq!(offset("2024-01-31 10:20 Z"), Some(0));
        assert_eq!(offset("2024-01-31 10:20 +05:30"), Some(19800));
        assert_eq!(p.parse_with_offset("2024-01-31 10:20 Nowhere/City"), None);
        assert_eq!(p.parse_with_offset("2024-01-31 10:20 Europe/Paris!"), None);
    }

    /// `z` reads US zone names as their regions (the offset in force then) and `UTC`; the
    /// expectations are Spark's golden results in America/Los_Angeles.
    #[test]
    fn zone_names_give_their_regions_offset() {
        let p = Pattern::new("yyyy-MM-dd HH:mm:ss[zzz]").expect("pattern");
        let offset = |s: &str| p.parse_with_offset(s).and_then(|(_, o)| o);
        assert_eq!(offset("2019-10-06 10:11:12UTC"), Some(0));
        assert_eq!(offset("2019-10-06 10:11:12CST"), Some(-5 * 3600));
        assert_eq!(offset("2019-12-06 10:11:12CST"), Some(-6 * 3600));
        assert_eq!(offset("2019-10-06 10:11:12PST"), Some(-7 * 3600));
        assert_eq!(offset("2019-10-06 10:11:12"), None);
        let twice = Pattern::new("SSSSSS yyyy-MM-dd HH:mm:ss.SSSSSS[zzz]").expect("pattern");
        assert!(twice
            .parse("123456 2019-10-06 10:11:12.123456PST")
            .is_some());
        assert!(twice
            .parse("223456 2019-10-06 10:11:12.123456PST")
            .is_none());
    }

    /// Spark refuses the narrow text forms and over-long years at compile time.
    #[test]
    fn narrow_text_forms_are_refused() {
        for p in [
            "dd MM yyyy EEEEE",
            "dd MM yyyy EEEEEE",
            "dd/MMMMM/yyyy",
            "yyyy GGGGG",
            "yyyyyyy",
        ] {
            let e = Pattern::new(p).expect_err(p).to_string();
            assert!(e.contains("DATETIME_PATTERN_RECOGNITION"), "{p}: {e}");
        }
        assert!(Pattern::new("EEEE MMMM yyyyyy GGGG").is_ok());
    }
}
