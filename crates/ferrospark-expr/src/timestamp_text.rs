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
