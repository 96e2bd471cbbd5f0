//! The zone and offset fields of Java's `DateTimeFormatter` as Spark prints them: zone
//! names (`z`), localized offsets (`O`, `ZZZZ`) and ISO offsets (`X`, `x`, `Z`) with the
//! seconds a historical local mean time has (`-07:52:58` for Los Angeles before 1883).
//!
//! Written here because the text is Java's own: its offset patterns (`+HHmm`: minutes only
//! when there are some, `+HHMMss`: seconds only when there are some) and the English zone
//! names of its CLDR data for the zones Spark users name most.

use std::fmt::Write;

/// An offset in one of Java's patterns: `minutes` / `seconds` say whether those parts are
/// printed always (`Always`), only when non-zero (`IfAny`) or never.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    Never,
    IfAny,
    Always,
}

fn iso(out: &mut String, offset_secs: i32, colon: bool, minutes: Part, seconds: Part) {
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let o = offset_secs.unsigned_abs();
    let (h, m, s) = (o / 3600, (o / 60) % 60, o % 60);
    let _ = write!(out, "{sign}{h:02}");
    let sep = if colon { ":" } else { "" };
    let show_minutes = minutes == Part::Always || (minutes == Part::IfAny && (m > 0 || s > 0));
    if show_minutes {
        let _ = write!(out, "{sep}{m:02}");
        if seconds == Part::Always || (seconds == Part::IfAny && s > 0) {
            let _ = write!(out, "{sep}{s:02}");
        }
    }
}

/// `GMT-8`, `GMT-7:52:58` (`full`: `GMT-08:00`, `GMT-07:52:58`); `GMT` for no offset.
fn localized(out: &mut String, offset_secs: i32, full: bool) {
    out.push_str("GMT");
    if offset_secs == 0 {
        return;
    }
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let o = offset_secs.unsigned_abs();
    let (h, m, s) = (o / 3600, (o / 60) % 60, o % 60);
    if full {
        let _ = write!(out, "{sign}{h:02}:{m:02}");
        if s > 0 {
            let _ = write!(out, ":{s:02}");
        }
    } else {
        let _ = write!(out, "{sign}{h}");
        if m > 0 || s > 0 {
            let _ = write!(out, ":{m:02}");
            if s > 0 {
                let _ = write!(out, ":{s:02}");
            }
        }
    }
}

/// An offset field: `X` / `x` (`n` letters), `Z`, or `O`.
pub(crate) fn offset(out: &mut String, letter: char, n: usize, offset_secs: i32) {
    use Part::{Always, IfAny, Never};
    let (colon, minutes, seconds) = match (letter, n) {
        ('O', 1) => return localized(out, offset_secs, false),
        ('O', _) | ('Z', 4) => return localized(out, offset_secs, true),
        ('Z', 5) => (true, Always, IfAny),
        ('Z', _) => (false, Always, Never),
        (_, 1) => (false, IfAny, Never),
        (_, 2) => (false, Always, Never),
        (_, 3) => (true, Always, Never),
        (_, 4) => (false, Always, IfAny),
        _ => (true, Always, IfAny),
    };
    if offset_secs == 0 && (letter == 'X' || (letter == 'Z' && n == 5)) {
        out.push('Z');
        return;
    }
    iso(out, offset_secs, colon, minutes, seconds);
}

/// Java's English names of a zone: its standard offset in minutes, then short and long names
/// for standard and daylight time.
const ZONE_NAMES: [(&str, i32, [&str; 4]); 14] = [
    (
        "America/Los_Angeles",
        -480,
        [
            "PST",
            "PDT",
            "Pacific Standard Time",
            "Pacific Daylight Time",
        ],
    ),
    (
        "America/Denver",
        -420,
        [
            "MST",
            "MDT",
            "Mountain Standard Time",
            "Mountain Daylight Time",
        ],
    ),
    (
        "America/Chicago",
        -360,
        [
            "CST",
            "CDT",
            "Central Standard Time",
            "Central Daylight Time",
        ],
    ),
    (
        "America/New_York",
        -300,
        [
            "EST",
            "EDT",
            "Eastern Standard Time",
            "Eastern Daylight Time",
        ],
    ),
    (
        "America/Anchorage",
        -540,
        [
            "AKST",
            "AKDT",
            "Alaska Standard Time",
            "Alaska Daylight Time",
        ],
    ),
    (
        "Pacific/Honolulu",
        -600,
        [
            "HST",
            "HDT",
            "Hawaii-Aleutian Standard Time",
            "Hawaii-Aleutian Daylight Time",
        ],
    ),
    (
        "UTC",
        0,
        [
            "UTC",
            "UTC",
            "Coordinated Universal Time",
            "Coordinated Universal Time",
        ],
    ),
    (
        "Etc/UTC",
        0,
        [
            "UTC",
            "UTC",
            "Coordinated Universal Time",
            "Coordinated Universal Time",
        ],
    ),
    (
        "Europe/London",
        0,
        ["GMT", "BST", "Greenwich Mean Time", "British Summer Time"],
    ),
    (
        "Europe/Paris",
        60,
        [
            "CET",
            "CEST",
            "Central European Standard Time",
            "Central European Summer Time",
        ],
    ),
    (
        "Europe/Berlin",
        60,
        [
            "CET",
            "CEST",
            "Central European Standard Time",
            "Central European Summer Time",
        ],
    ),
    (
        "Asia/Tokyo",
        540,
        ["JST", "JDT", "Japan Standard Time", "Japan Daylight Time"],
    ),
    (
        "Asia/Shanghai",
        480,
        ["CST", "CDT", "China Standard Time", "China Daylight Time"],
    ),
    (
        "Asia/Kolkata",
        330,
        ["IST", "IST", "India Standard Time", "India Standard Time"],
    ),
];

/// A zone's name (`z`: short for one to three letters, long for four) at an instant whose
/// offset is `offset_secs`; the zone's id for a zone without names here.
pub(crate) fn zone_name(out: &mut String, n: usize, zone: &str, offset_secs: i32) {
    let Some((_, std_minutes, names)) = ZONE_NAMES
        .iter()
        .find(|(id, _, _)| id.eq_ignore_ascii_case(zone))
    else {
        out.push_str(zone);
        return;
    };
    let daylight = offset_secs == (std_minutes + 60) * 60 && names[0] != names[1];
    let i = usize::from(daylight) + if n >= 4 { 2 } else { 0 };
    out.push_str(names[i]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn off(letter: char, n: usize, secs: i32) -> String {
        let mut s = String::new();
        offset(&mut s, letter, n, secs);
        s
    }

    /// The expectations are Spark's `date_format` in America/Los_Angeles (its golden files).
    #[test]
    fn offsets_print_as_javas_patterns() {
        let lmt = -(7 * 3600 + 52 * 60 + 58);
        let pst = -8 * 3600;
        let got: Vec<String> = (1..=5).map(|n| off('x', n, lmt)).collect();
        assert_eq!(got, ["-0752", "-0752", "-07:52", "-075258", "-07:52:58"]);
        let got: Vec<String> = (1..=5).map(|n| off('x', n, pst)).collect();
        assert_eq!(got, ["-08", "-0800", "-08:00", "-0800", "-08:00"]);
        assert_eq!(off('Z', 4, lmt), "GMT-07:52:58");
        assert_eq!(off('Z', 5, pst), "-08:00");
        assert_eq!(off('O', 1, lmt), "GMT-7:52:58");
        assert_eq!(off('O', 1, pst), "GMT-8");
        assert_eq!(off('O', 4, pst), "GMT-08:00");
        assert_eq!(off('X', 3, 0), "Z");
        assert_eq!(off('x', 3, 0), "+00:00");
        assert_eq!(off('O', 1, 0), "GMT");
    }

    #[test]
    fn zone_names_follow_daylight_time() {
        let name = |n: usize, secs: i32| {
            let mut s = String::new();
            zone_name(&mut s, n, "America/Los_Angeles", secs);
            s
        };
        assert_eq!(name(3, -8 * 3600), "PST");
        assert_eq!(name(1, -7 * 3600), "PDT");
        assert_eq!(name(4, -8 * 3600), "Pacific Standard Time");
        assert_eq!(name(2, -(7 * 3600 + 52 * 60 + 58)), "PST");
    }
}
