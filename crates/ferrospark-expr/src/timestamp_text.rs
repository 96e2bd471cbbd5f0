//! Spark's reading of text as a timestamp (`DateTimeUtils.stringToTimestamp`): segments of
//! digits for year, month, day, hour, minute, second and fraction, each ended by the separator
//! its place expects, so `2020-01-03 04:05`, `2020-1-3 4:5:6` and `04:05:06` (today) are
//! timestamps, and a zone may follow the seconds only (`2020-01-03T04:05Z` is not one).
//!
//! Written here because Arrow's parser wants two-digit fields and seconds. Text with a zone
//! is left to the caller (see [`TimestampText::zone`]).

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

/// Text read as Spark reads a timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampText<'a> {
    /// Year, month, day (1, 1, 1 when only a time was written).
    pub date: (i32, u32, u32),
    /// Hour, minute, second, microsecond.
    pub time: (u32, u32, u32, u32),
    /// Only a time was written: the date is today's, in the zone.
    pub just_time: bool,
    /// The zone written after the seconds, as written (`None`: local to the session zone).
    pub zone: Option<&'a str>,
}

impl TimestampText<'_> {
    /// The local date-time, on `today()` when only a time was written (asked only then);
    /// `None` when a field is out of range.
    pub fn local(&self, today: impl FnOnce() -> NaiveDate) -> Option<NaiveDateTime> {
        let date = if self.just_time {
            today()
        } else {
            NaiveDate::from_ymd_opt(self.date.0, self.date.1, self.date.2)?
        };
        let (h, m, s, us) = self.time;
        Some(date.and_time(NaiveTime::from_hms_micro_opt(h, m, s, us)?))
    }
}

/// Whether `digits` digits may end segment `segment` (Spark's `isValidDigits`).
fn valid_digits(segment: usize, digits: usize) -> bool {
    match segment {
        0 => (4..=6).contains(&digits),
        6 => true,
        7 => digits <= 2,
        _ => (1..=2).contains(&digits),
    }
}

/// Reads `s` (surrounding white space and control characters ignored) as Spark does, or
/// `None` when Spark reads no timestamp from it.
pub fn read_timestamp_text(s: &str) -> Option<TimestampText<'_>> {
    let t = s.trim_matches(|c: char| c.is_whitespace() || c.is_control());
    let b = t.as_bytes();
    if b.is_empty() {
        return None;
    }
    // year, month, day, hour, minute, second, fraction
    let mut seg: [i64; 7] = [1, 1, 1, 0, 0, 0, 0];
    let (mut i, mut value, mut digits) = (0usize, 0i64, 0usize);
    let mut fraction_digits = 0usize;
    let mut just_time = false;
    let mut zone = None;
    let mut negative = false;
    let mut j = 0;
    match b[0] {
        b'T' => {
            just_time = true;
            i = 3;
            j = 1;
        }
        b'-' | b'+' => {
            negative = b[0] == b'-';
            j = 1;
        }
        _ => {}
    }
    let signed = j == 1 && !just_time;
    while j < b.len() {
        let c = b[j];
        if c.is_ascii_digit() {
            // Past six digits a fraction is cut, not rounded.
            if i != 6 || digits < 6 {
                value = value.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
                digits += 1;
            }
            if i == 6 {
                fraction_digits = digits;
            }
            j += 1;
            continue;
        }
        let close = |seg: &mut [i64; 7], i: usize, value: i64, digits: usize| {
            valid_digits(i, digits).then(|| seg[i] = value)
        };
        match i {
            0 | 1 => {
                if c == b'-' {
                    close(&mut seg, i, value, digits)?;
                    i += 1;
                } else if i == 0 && c == b':' && !signed {
                    // `hh:mm...`: a time alone.
                    just_time = true;
                    close(&mut seg, 3, value, digits)?;
                    i = 4;
                } else {
                    return None;
                }
            }
            // The date's end, then the time's fields.
            2 if c == b' ' || c == b'T' => {
                close(&mut seg, i, value, digits)?;
                i += 1;
            }
            3 | 4 if c == b':' => {
                close(&mut seg, i, value, digits)?;
                i += 1;
            }
            2..=4 => return None,
            5 | 6 => {
                if c == b'.' && i == 5 {
                    close(&mut seg, i, value, digits)?;
                    i += 1;
                } else {
                    // The rest is the zone.
                    close(&mut seg, i, value, digits)?;
                    zone = Some(&t[j..]);
                    (value, digits) = (0, 0);
                    i = 7;
                    break;
                }
            }
            _ => return None,
        }
        (value, digits) = (0, 0);
        j += 1;
    }
    if i < 7 {
        if !valid_digits(i, digits) {
            return None;
        }
        seg[i] = value;
    }
    let fraction = if fraction_digits > 0 || i >= 6 {
        seg[6] * 10_i64.pow(6 - fraction_digits.min(6) as u32)
    } else {
        0
    };
    let year = if negative { -seg[0] } else { seg[0] };
    Some(TimestampText {
        date: (
            i32::try_from(year).ok()?,
            u32::try_from(seg[1]).ok()?,
            u32::try_from(seg[2]).ok()?,
        ),
        time: (
            u32::try_from(seg[3]).ok()?,
            u32::try_from(seg[4]).ok()?,
            u32::try_from(seg[5]).ok()?,
            u32::try_from(fraction).ok()?,
        ),
        just_time,
        zone,
    })
}

/// The zone id text written after a timestamp names, as Spark's `getZoneId` reads it, in the
/// form Arrow's zone parser takes: `Z`, `UTC`, `GMT`, `UT` (each optionally followed by an
/// offset), offsets `+h`, `+hh`, `+hh:mm`, `+hhmm`, `+hh:mm:ss`, `+hhmmss`, Java's short ids
/// (`PST`, `EST`, ...) and region ids (`Europe/Paris`). `None`: not a zone.
pub fn spark_zone_id(text: &str) -> Option<String> {
    let z = text.trim();
    if z == "Z" {
        return Some("+00:00".into());
    }
    let (prefixed, rest) = ["UTC", "GMT", "UT"]
        .iter()
        .find_map(|p| z.strip_prefix(p).map(|r| (true, r)))
        .unwrap_or((false, z));
    if prefixed && rest.is_empty() {
        return Some("+00:00".into());
    }
    if let Some(sign) = rest.chars().next().filter(|c| *c == '+' || *c == '-') {
        return fixed_offset(&rest[1..]).map(|(h, m)| format!("{sign}{h:02}:{m:02}"));
    }
    if prefixed {
        return None;
    }
    // Java's `ZoneId.SHORT_IDS`.
    let short = match z {
        "EST" => "-05:00",
        "MST" => "-07:00",
        "HST" => "-10:00",
        "ACT" => "Australia/Darwin",
        "AET" => "Australia/Sydney",
        "AGT" => "America/Argentina/Buenos_Aires",
        "ART" => "Africa/Cairo",
        "AST" => "America/Anchorage",
        "BET" => "America/Sao_Paulo",
        "BST" => "Asia/Dhaka",
        "CAT" => "Africa/Harare",
        "CNT" => "America/St_Johns",
        "CST" => "America/Chicago",
        "CTT" => "Asia/Shanghai",
        "EAT" => "Africa/Addis_Ababa",
        "ECT" => "Europe/Paris",
        "IET" => "America/Indiana/Indianapolis",
        "IST" => "Asia/Kolkata",
        "JST" => "Asia/Tokyo",
        "MIT" => "Pacific/Apia",
        "NET" => "Asia/Yerevan",
        "NST" => "Pacific/Auckland",
        "PLT" => "Asia/Karachi",
        "PNT" => "America/Phoenix",
        "PRT" => "America/Puerto_Rico",
        "PST" => "America/Los_Angeles",
        "SST" => "Pacific/Guadalcanal",
        "VST" => "Asia/Ho_Chi_Minh",
        other => other,
    };
    let region = short.starts_with(['+', '-'])
        || short
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+'));
    region.then(|| short.to_string())
}

/// Hours and minutes of an offset's digits (`8`, `08`, `8:00`, `0800`, `08:00:00`, `080000`);
/// seconds must be zero (Arrow's offsets hold minutes).
fn fixed_offset(d: &str) -> Option<(u32, u32)> {
    let num = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let parts: Vec<&str> = if d.contains(':') {
        d.split(':').collect()
    } else {
        match d.len() {
            1 | 2 => vec![d],
            4 => vec![&d[..2], &d[2..]],
            6 => vec![&d[..2], &d[2..4], &d[4..]],
            _ => return None,
        }
    };
    let (h, m, s) = match parts[..] {
        [h] => (num(h)?, 0, 0),
        [h, m] if m.len() == 2 => (num(h)?, num(m)?, 0),
        [h, m, s] if m.len() == 2 && s.len() == 2 => (num(h)?, num(m)?, num(s)?),
        _ => return None,
    };
    (h <= 18 && m < 60 && s == 0).then_some((h, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(s: &str) -> Option<String> {
        let today = NaiveDate::from_ymd_opt(2026, 11, 26)?;
        let t = read_timestamp_text(s)?;
        let l = t.local(|| today)?;
        Some(format!(
            "{}{}",
            l.format("%Y-%m-%d %H:%M:%S%.6f"),
            t.zone.map(|z| format!(" [{z}]")).unwrap_or_default()
        ))
    }

    #[test]
    fn zone_ids_read_as_spark_reads_them() {
        let id = |s: &str| spark_zone_id(s);
        assert_eq!(id("Z").as_deref(), Some("+00:00"));
        assert_eq!(id(" UTC").as_deref(), Some("+00:00"));
        assert_eq!(id("UTC+080000").as_deref(), Some("+08:00"));
        assert_eq!(id("GMT-8").as_deref(), Some("-08:00"));
        assert_eq!(id("+8:30").as_deref(), Some("+08:30"));
        assert_eq!(id("-0130").as_deref(), Some("-01:30"));
        assert_eq!(id("PST").as_deref(), Some("America/Los_Angeles"));
        assert_eq!(id("Europe/Paris").as_deref(), Some("Europe/Paris"));
        assert_eq!(id("UTCx"), None);
        assert_eq!(id("+19:00"), None);
        assert_eq!(id("+08:00:30"), None);
    }

    /// Expectations read from PySpark 4.3's `try_cast(text AS TIMESTAMP)` in UTC.
    #[test]
    fn texts_read_as_spark_reads_them() {
        let cases = [
            ("2020-01-03 04:05", Some("2020-01-03 04:05:00.000000")),
            ("2020-01-03T04:05", Some("2020-01-03 04:05:00.000000")),
            ("2020-01-03 4:5:6", Some("2020-01-03 04:05:06.000000")),
            ("2020-01-03 04", Some("2020-01-03 04:00:00.000000")),
            ("2020", Some("2020-01-01 00:00:00.000000")),
            ("2020-01", Some("2020-01-01 00:00:00.000000")),
            ("2020-1-3 04:05:06", Some("2020-01-03 04:05:06.000000")),
            ("04:05:06", Some("2026-11-26 04:05:06.000000")),
            ("T04:05:06.5", Some("2026-11-26 04:05:06.500000")),
            (
                " 2020-01-03 04:05:06.1234567 ",
                Some("2020-01-03 04:05:06.123456"),
            ),
            ("2020-01-03 04:05:06.", Some("2020-01-03 04:05:06.000000")),
            (
                "2020-01-03 04:05:06 UTC",
                Some("2020-01-03 04:05:06.000000 [ UTC]"),
            ),
            (
                "2020-01-03T04:05:06+01:00",
                Some("2020-01-03 04:05:06.000000 [+01:00]"),
            ),
            (
                "2020-01-03T04:05:06.25Z",
                Some("2020-01-03 04:05:06.250000 [Z]"),
            ),
            ("2020-01-03T04:05Z", None),
            ("2020-02-30 00:00:00", None),
            ("2020-01-03 24:00:00", None),
            ("20-01-03", None),
            ("2020-001-03", None),
            ("2020/01/03", None),
            ("", None),
            ("abc", None),
        ];
        for (text, want) in cases {
            assert_eq!(local(text).as_deref(), want, "{text:?}");
        }
    }
}
