//! The character sets of `encode` / `decode` and how Java codes text in each, as Spark
//! reaches them through `java.nio.charset`: UTF-8, US-ASCII, ISO-8859-1, UTF-16 (a big-endian
//! byte order mark when encoding, the mark honoured when decoding), UTF-16BE / UTF-16LE,
//! UTF-32 and, under `spark.sql.legacy.javaCharsets`, a few more of Java's names.
//!
//! A character the charset cannot hold (or bytes that are not text in it) is Spark 4's
//! `MALFORMED_CHARACTER_CODING`, or under `spark.sql.legacy.codingErrorAction` a `?` when
//! encoding and U+FFFD when decoding, Java's replacements.

use ferrospark_common::{FerroError, Result};

/// A character set of `encode` / `decode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    /// UTF-8
    Utf8,
    /// US-ASCII
    Ascii,
    /// ISO-8859-1
    Latin1,
    /// UTF-16: encoding writes a big-endian byte order mark; decoding honours one
    Utf16,
    /// UTF-16BE
    Utf16Be,
    /// UTF-16LE
    Utf16Le,
    /// UTF-32: big-endian without a mark; decoding honours one
    Utf32,
    /// UTF-32LE (legacy names only)
    Utf32Le,
    /// windows-1252 (legacy names only)
    Windows1252,
}

/// The charsets Spark 4 accepts by default, as its message lists them.
const STANDARD: &str = "iso-8859-1, us-ascii, utf-16, utf-16be, utf-16le, utf-32, utf-8";

impl Charset {
    /// The charset named `name` (case-insensitive); `java` also accepts Java's other names
    /// (`spark.sql.legacy.javaCharsets`). `function` names the caller in the error.
    pub fn parse(name: &str, java: bool, function: &str) -> Result<Charset> {
        let lower = name.to_ascii_lowercase();
        let standard = match lower.as_str() {
            "utf-8" => Some(Charset::Utf8),
            "us-ascii" => Some(Charset::Ascii),
            "iso-8859-1" => Some(Charset::Latin1),
            "utf-16" => Some(Charset::Utf16),
            "utf-16be" => Some(Charset::Utf16Be),
            "utf-16le" => Some(Charset::Utf16Le),
            "utf-32" => Some(Charset::Utf32),
            _ => None,
        };
        let legacy = || match lower.as_str() {
            "utf8" | "unicode-1-1-utf-8" => Some(Charset::Utf8),
            "ascii" | "us_ascii" | "iso646-us" | "default" => Some(Charset::Ascii),
            "latin1" | "iso8859_1" | "iso_8859_1" | "iso-latin-1" | "l1" | "cp819" => {
                Some(Charset::Latin1)
            }
            "utf_16" | "utf16" | "unicode" => Some(Charset::Utf16),
            "utf_16be" | "unicodebigunmarked" | "x-utf-16be" => Some(Charset::Utf16Be),
            "utf_16le" | "unicodelittleunmarked" | "x-utf-16le" => Some(Charset::Utf16Le),
            "utf_32" | "utf32" | "utf-32be" | "utf_32be" => Some(Charset::Utf32),
            "utf-32le" | "utf_32le" => Some(Charset::Utf32Le),
            "windows-1252" | "cp1252" => Some(Charset::Windows1252),
            _ => None,
        };
        standard
            .or_else(|| if java { legacy() } else { None })
            .ok_or_else(|| {
                FerroError::Analysis(format!(
                    "[INVALID_PARAMETER_VALUE.CHARSET] The value of parameter(s) `charset` in `{function}` is invalid: expects one of the {STANDARD}, but got {name}. SQLSTATE: 22023"
                ))
            })
    }

    /// Java's canonical name, as Spark's messages print it.
    pub fn name(self) -> &'static str {
        match self {
            Charset::Utf8 => "UTF-8",
            Charset::Ascii => "US-ASCII",
            Charset::Latin1 => "ISO-8859-1",
            Charset::Utf16 => "UTF-16",
            Charset::Utf16Be => "UTF-16BE",
            Charset::Utf16Le => "UTF-16LE",
            Charset::Utf32 => "UTF-32",
            Charset::Utf32Le => "UTF-32LE",
            Charset::Windows1252 => "windows-1252",
        }
    }
}

/// Spark 4 reports text its charset cannot code (its legacy mode replaced it).
fn malformed(what: &str, cs: Charset) -> FerroError {
    FerroError::Arithmetic(format!(
        "[MALFORMED_CHARACTER_CODING] Invalid value found when performing `{what}` with {} SQLSTATE: 22000",
        cs.name()
    ))
}

/// windows-1252's bytes 0x80..0x9F; `None` where Java maps no character.
const CP1252_HIGH: [Option<char>; 32] = [
    Some('\u{20AC}'),
    None,
    Some('\u{201A}'),
    Some('\u{0192}'),
    Some('\u{201E}'),
    Some('\u{2026}'),
    Some('\u{2020}'),
    Some('\u{2021}'),
    Some('\u{02C6}'),
    Some('\u{2030}'),
    Some('\u{0160}'),
    Some('\u{2039}'),
    Some('\u{0152}'),
    None,
    Some('\u{017D}'),
    None,
    None,
    Some('\u{2018}'),
    Some('\u{2019}'),
    Some('\u{201C}'),
    Some('\u{201D}'),
    Some('\u{2022}'),
    Some('\u{2013}'),
    Some('\u{2014}'),
    Some('\u{02DC}'),
    Some('\u{2122}'),
    Some('\u{0161}'),
    Some('\u{203A}'),
    Some('\u{0153}'),
    None,
    Some('\u{017E}'),
    Some('\u{0178}'),
];

fn cp1252_byte(c: char) -> Option<u8> {
    let u = c as u32;
    if u < 0x80 || (0xA0..0x100).contains(&u) {
        return Some(u as u8);
    }
    CP1252_HIGH
        .iter()
        .position(|&x| x == Some(c))
        .map(|i| 0x80 + i as u8)
}

/// `t` coded in `cs`; `replace` writes `?` for a character `cs` cannot hold.
pub fn encode(t: &str, cs: Charset, replace: bool) -> Result<Vec<u8>> {
    let single = |limit: u32| -> Result<Vec<u8>> {
        t.chars()
            .map(|c| {
                let b = if (c as u32) < limit {
                    Some(c as u32 as u8)
                } else if cs == Charset::Windows1252 {
                    cp1252_byte(c)
                } else {
                    None
                };
                match b {
                    Some(b) => Ok(b),
                    None if replace => Ok(b'?'),
                    None => Err(malformed("encode", cs)),
                }
            })
            .collect()
    };
    Ok(match cs {
        Charset::Utf8 => t.as_bytes().to_vec(),
        Charset::Ascii => single(0x80)?,
        Charset::Latin1 => single(0x100)?,
        Charset::Windows1252 => single(0x80)?,
        // Java writes no mark for empty text.
        Charset::Utf16 if t.is_empty() => Vec::new(),
        Charset::Utf16 => [0xFE, 0xFF]
            .into_iter()
            .chain(t.encode_utf16().flat_map(u16::to_be_bytes))
            .collect(),
        Charset::Utf16Be => t.encode_utf16().flat_map(u16::to_be_bytes).collect(),
        Charset::Utf16Le => t.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        Charset::Utf32 => t.chars().flat_map(|c| (c as u32).to_be_bytes()).collect(),
        Charset::Utf32Le => t.chars().flat_map(|c| (c as u32).to_le_bytes()).collect(),
    })
}

/// The text `b` codes in `cs`; `replace` reads what is not text in `cs` as U+FFFD.
pub fn decode(b: &[u8], cs: Charset, replace: bool) -> Result<String> {
    let bad = || malformed("decode", cs);
    match cs {
        Charset::Utf8 if replace => Ok(String::from_utf8_lossy(b).into_owned()),
        Charset::Utf8 => String::from_utf8(b.to_vec()).map_err(|_| bad()),
        Charset::Ascii => b
            .iter()
            .map(|&x| match x {
                0..=0x7F => Ok(x as char),
                _ if replace => Ok('\u{FFFD}'),
                _ => Err(bad()),
            })
            .collect(),
        Charset::Latin1 => Ok(b.iter().map(|&x| x as char).collect()),
        Charset::Windows1252 => b
            .iter()
            .map(|&x| {
                let c = match x {
                    0x80..=0x9F => CP1252_HIGH[(x - 0x80) as usize],
                    _ => Some(x as char),
                };
                match c {
                    Some(c) => Ok(c),
                    None if replace => Ok('\u{FFFD}'),
                    None => Err(bad()),
                }
            })
            .collect(),
        Charset::Utf16 => match b {
            [0xFE, 0xFF, rest @ ..] => decode_utf16(rest, true, replace, bad),
            [0xFF, 0xFE, rest @ ..] => decode_utf16(rest, false, replace, bad),
            _ => decode_utf16(b, true, replace, bad),
        },
        Charset::Utf16Be => decode_utf16(b, true, replace, bad),
        Charset::Utf16Le => decode_utf16(b, false, replace, bad),
        Charset::Utf32 => match b {
            [0x00, 0x00, 0xFE, 0xFF, rest @ ..] => decode_utf32(rest, true, replace, bad),
            [0xFF, 0xFE, 0x00, 0x00, rest @ ..] => decode_utf32(rest, false, replace, bad),
            _ => decode_utf32(b, true, replace, bad),
        },
        Charset::Utf32Le => decode_utf32(b, false, replace, bad),
    }
}

fn decode_utf16(
    b: &[u8],
    big: bool,
    replace: bool,
    bad: impl Fn() -> FerroError,
) -> Result<String> {
    let units = b.chunks_exact(2).map(|p| {
        let p = [p[0], p[1]];
        if big {
            u16::from_be_bytes(p)
        } else {
            u16::from_le_bytes(p)
        }
    });
    let mut out = String::with_capacity(b.len() / 2);
    for c in char::decode_utf16(units) {
        match c {
            Ok(c) => out.push(c),
            Err(_) if replace => out.push('\u{FFFD}'),
            Err(_) => return Err(bad()),
        }
    }
    // A trailing odd byte is half a unit.
    if b.len() % 2 == 1 {
        if !replace {
            return Err(bad());
        }
        out.push('\u{FFFD}');
    }
    Ok(out)
}

fn decode_utf32(
    b: &[u8],
    big: bool,
    replace: bool,
    bad: impl Fn() -> FerroError,
) -> Result<String> {
    let mut out = String::with_capacity(b.len() / 4);
    for p in b.chunks(4) {
        let c = <[u8; 4]>::try_from(p).ok().and_then(|p| {
            char::from_u32(if big {
                u32::from_be_bytes(p)
            } else {
                u32::from_le_bytes(p)
            })
        });
        match c {
            Some(c) => out.push(c),
            None if replace => out.push('\u{FFFD}'),
            None => return Err(bad()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_writes_and_reads_a_byte_order_mark() {
        let b = encode("ab", Charset::Utf16, false).expect("encode");
        assert_eq!(b, vec![0xFE, 0xFF, 0, 0x61, 0, 0x62]);
        assert_eq!(decode(&b, Charset::Utf16, false).expect("decode"), "ab");
        let le = [0xFF, 0xFE, 0x61, 0];
        assert_eq!(decode(&le, Charset::Utf16, false).expect("decode"), "a");
        assert_eq!(
            decode(&[0, 0x61], Charset::Utf16, false).expect("decode"),
            "a"
        );
        assert!(decode(&[0, 0x61, 0], Charset::Utf16, false).is_err());
        assert_eq!(
            decode(&[0x61, 0], Charset::Utf16, true).expect("decode"),
            "\u{6100}"
        );
    }

    #[test]
    fn utf32_and_windows_1252() {
        let b = encode("a😀", Charset::Utf32, false).expect("encode");
        assert_eq!(b, vec![0, 0, 0, 0x61, 0, 1, 0xF6, 0]);
        assert_eq!(decode(&b, Charset::Utf32, false).expect("decode"), "a😀");
        assert_eq!(
            encode("€a", Charset::Windows1252, false).expect("encode"),
            vec![0x80, 0x61]
        );
        assert!(decode(&[0x81], Charset::Windows1252, false).is_err());
        assert!(encode("日", Charset::Windows1252, false).is_err());
        assert_eq!(
            encode("日", Charset::Windows1252, true).expect("encode"),
            b"?"
        );
    }

    #[test]
    fn names_are_case_insensitive_and_java_names_need_the_legacy_setting() {
        assert_eq!(
            Charset::parse("Us-Ascii", false, "encode").expect("parse"),
            Charset::Ascii
        );
        assert!(Charset::parse("utf8", false, "encode").is_err());
        assert!(Charset::parse("WINDOWS-1252", false, "encode").is_err());
        assert_eq!(
            Charset::parse("WINDOWS-1252", true, "encode").expect("parse"),
            Charset::Windows1252
        );
        let e = Charset::parse("Windows-xxx", true, "decode").expect_err("unknown");
        assert!(e.to_string().contains("INVALID_PARAMETER_VALUE.CHARSET"));
    }
}
