//! String functions that search, compare, mask and encode text: `find_in_set`,
//! `levenshtein`, `soundex`, `substring_index`, `overlay`, `quote`, `mask`, `chr` / `char`,
//! `url_encode`, `url_decode` / `try_url_decode`, each as Spark's `UTF8String` method or
//! expression computes it (positions in characters, `substring_index` counting overlapping
//! delimiters, URL text as Java's `URLEncoder` / `URLDecoder` write and read it).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BinaryArray, Int32Array, StringArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::string::substring_sql;
use super::{build_strings, Args, Bound, Call, ScalarFunction};
use crate::expr::Literal;
use crate::physical::PhysicalExpr;
use crate::types::spark_equivalent;

/// The functions of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditFn {
    /// `find_in_set(s, list)`: the 1-based position of `s` among the comma-separated items
    FindInSet,
    /// `levenshtein(a, b[, threshold])`: the edit distance in characters, -1 over the threshold
    Levenshtein,
    /// `soundex(s)`
    Soundex,
    /// `substring_index(s, delim, count)`
    SubstringIndex,
    /// `overlay(s, replace, pos, len)` of text
    Overlay,
    /// `overlay(b, replace, pos, len)` of bytes
    OverlayBytes,
    /// `quote(s)`: in single quotes, quotes inside escaped
    Quote,
    /// `mask(s, upper, lower, digit, other)`: NULL replacements keep the character
    Mask,
    /// `chr(n)` / `char(n)`: the character of code `n % 256`
    Chr,
    /// `url_encode(s)`
    UrlEncode,
    /// `jaro_winkler_similarity(a, b)`: a DOUBLE in [0, 1]
    JaroWinkler,
    /// `sentences(s[, language[, country]])`: arrays of words (see `sentences.rs`)
    Sentences,
    /// `url_decode(s)` (`fail`) / `try_url_decode(s)`
    UrlDecode {
        /// malformed text raises `CANNOT_DECODE_URL` (else NULL)
        fail: bool,
    },
}

impl EditFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            EditFn::FindInSet => "find_in_set",
            EditFn::Levenshtein => "levenshtein",
            EditFn::Soundex => "soundex",
            EditFn::SubstringIndex => "substring_index",
            EditFn::Overlay | EditFn::OverlayBytes => "overlay",
            EditFn::Quote => "quote",
            EditFn::Mask => "mask",
            EditFn::Chr => "chr",
            EditFn::UrlEncode => "url_encode",
            EditFn::JaroWinkler => "jaro_winkler_similarity",
            EditFn::Sentences => "sentences",
            EditFn::UrlDecode { fail: true } => "url_decode",
            EditFn::UrlDecode { fail: false } => "try_url_decode",
        }
    }

    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let n = args.rows();
        match self {
            EditFn::FindInSet => {
                let (s, list) = (args.str(0)?, args.str(1)?);
                let out: Int32Array = (0..n)
                    .map(|i| Some(find_in_set(s.get(i)?, list.get(i)?)))
                    .collect();
                Ok(Arc::new(out))
            }
            EditFn::JaroWinkler => {
                let (a, b) = (args.str(0)?, args.str(1)?);
                let out: arrow_array::Float64Array = (0..n)
                    .map(|i| Some(jaro_winkler(a.get(i)?, b.get(i)?)))
                    .collect();
                Ok(Arc::new(out))
            }
            EditFn::Levenshtein => {
                let (a, b) = (args.str(0)?, args.str(1)?);
                let threshold = if args.len() > 2 {
                    Some(args.prim::<Int32Type>(2)?)
                } else {
                    None
                };
                let out: Int32Array = (0..n)
                    .map(|i| {
                        let d = levenshtein(a.get(i)?, b.get(i)?);
                        match threshold.as_ref() {
                            None => Some(d),
                            Some(t) => {
                                let t = t.get(i)?;
                                Some(if d > t { -1 } else { d })
                            }
                        }
                    })
                    .collect();
                Ok(Arc::new(out))
            }
            EditFn::Sentences => super::sentences::sentences(&args.full(0)?),
            EditFn::Soundex => {
                let s = args.str(0)?;
                build_strings(n, |i, out| Ok(s.get(i).map(|v| soundex(v, out)).is_some()))
            }
            EditFn::SubstringIndex => {
                let (s, d, c) = (args.str(0)?, args.str(1)?, args.prim::<Int32Type>(2)?);
                super::build_str_slices(n, n * 8, |i| {
                    Ok(match (s.get(i), d.get(i), c.get(i)) {
                        (Some(s), Some(d), Some(c)) => Some(substring_index(s, d, c)),
                        _ => None,
                    })
                })
            }
            EditFn::Overlay => {
                let (s, r) = (args.str(0)?, args.str(1)?);
                let (pos, len) = (args.prim::<Int32Type>(2)?, args.prim::<Int32Type>(3)?);
                build_strings(n, |i, out| {
                    let (Some(s), Some(r), Some(p), Some(l)) =
                        (s.get(i), r.get(i), pos.get(i), len.get(i))
                    else {
                        return Ok(false);
                    };
                    let l = if l >= 0 { l } else { r.chars().count() as i32 };
                    out.push_str(substring_sql(s, 1, p.wrapping_sub(1)));
                    out.push_str(r);
                    out.push_str(substring_sql(s, p.wrapping_add(l), i32::MAX));
                    Ok(true)
                })
            }
            EditFn::OverlayBytes => {
                let (a, r) = (args.full(0)?, args.full(1)?);
                let (a, r) = (a.as_binary::<i32>(), r.as_binary::<i32>());
                let (pos, len) = (args.prim::<Int32Type>(2)?, args.prim::<Int32Type>(3)?);
                let out: BinaryArray = (0..n)
                    .map(|i| {
                        let s = a.is_valid(i).then(|| a.value(i))?;
                        let rep = r.is_valid(i).then(|| r.value(i))?;
                        let (p, l) = (pos.get(i)?, len.get(i)?);
                        let l = if l >= 0 { l } else { rep.len() as i32 };
                        let mut v = bytes_sql(s, 1, p.wrapping_sub(1)).to_vec();
                        v.extend_from_slice(rep);
                        v.extend_from_slice(bytes_sql(s, p.wrapping_add(l), i32::MAX));
                        Some(v)
                    })
                    .collect();
                Ok(Arc::new(out))
            }
            EditFn::Quote => {
                let s = args.str(0)?;
                build_strings(n, |i, out| {
                    let Some(v) = s.get(i) else {
                        return Ok(false);
                    };
                    out.push('\'');
                    out.push_str(&v.replace('\'', "\\'"));
                    out.push('\'');
                    Ok(true)
                })
            }
            EditFn::Mask => {
                let s = args.str(0)?;
                let subs = (1..5).map(|k| args.str(k)).collect::<Result<Vec<_>>>()?;
                build_strings(n, |i, out| {
                    let Some(v) = s.get(i) else {
                        return Ok(false);
                    };
                    let pick = |k: usize| subs[k].get(i).and_then(|t| t.chars().next());
                    let (up, low, digit, other) = (pick(0), pick(1), pick(2), pick(3));
                    for c in v.chars() {
                        let rep = if c.is_uppercase() {
                            up
                        } else if c.is_lowercase() {
                            low
                        } else if c.is_ascii_digit() {
                            digit
                        } else {
                            other
                        };
                        out.push(rep.unwrap_or(c));
                    }
                    Ok(true)
                })
            }
            EditFn::Chr => {
                let v = args.prim::<Int64Type>(0)?;
                build_strings(n, |i, out| {
                    let Some(x) = v.get(i) else {
                        return Ok(false);
                    };
                    if x >= 0 {
                        out.push(char::from((x & 0xFF) as u8));
                    }
                    Ok(true)
                })
            }
            EditFn::UrlEncode => {
                let s = args.str(0)?;
                build_strings(n, |i, out| {
                    Ok(s.get(i).map(|v| url_encode(v, out)).is_some())
                })
            }
            EditFn::UrlDecode { fail } => {
                let s = args.str(0)?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    out.push(match s.get(i) {
                        None => None,
                        Some(v) => match url_decode(v) {
                            Some(d) => Some(d),
                            None if fail => {
                                return Err(FerroError::Arithmetic(format!(
                                    "[CANNOT_DECODE_URL] The provided URL cannot be decoded: {v}. Please ensure that the URL is properly formatted and try again. SQLSTATE: 22546"
                                )))
                            }
                            None => None,
                        },
                    });
                }
                Ok(Arc::new(StringArray::from(out)))
            }
        }
    }
}

/// `UTF8String.findInSet`: 0 when `s` holds a comma or is not an item.
fn find_in_set(s: &str, list: &str) -> i32 {
    if s.contains(',') {
        return 0;
    }
    list.split(',')
        .position(|item| item == s)
        .map_or(0, |p| p as i32 + 1)
}

/// The edit distance between `a` and `b`, in characters.
/// The Jaro-Winkler similarity as Spark computes it (over UTF-16 units, a match window of half
/// the longer length less one, and the prefix bonus of 0.1 per common leading unit up to
/// four whatever the Jaro similarity: Spark applies no 0.7 threshold).
fn jaro_winkler(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let (first, second): (Vec<u16>, Vec<u16>) =
        (a.encode_utf16().collect(), b.encode_utf16().collect());
    let (max, min) = if first.len() > second.len() {
        (&first, &second)
    } else {
        (&second, &first)
    };
    let range = (max.len() / 2).saturating_sub(1);
    let mut match_index = vec![usize::MAX; min.len()];
    let mut matched = vec![false; max.len()];
    let mut matches = 0usize;
    for (mi, &c) in min.iter().enumerate() {
        for xi in mi.saturating_sub(range)..(mi + range + 1).min(max.len()) {
            if !matched[xi] && max[xi] == c {
                match_index[mi] = xi;
                matched[xi] = true;
                matches += 1;
                break;
            }
        }
    }
    if matches == 0 {
        return 0.0;
    }
    let ms1 = min
        .iter()
        .zip(&match_index)
        .filter(|(_, &i)| i != usize::MAX)
        .map(|(c, _)| *c);
    let ms2 = max
        .iter()
        .zip(&matched)
        .filter(|(_, &m)| m)
        .map(|(c, _)| *c);
    let half_transpositions = ms1.zip(ms2).filter(|(x, y)| x != y).count();
    let prefix = first
        .iter()
        .zip(&second)
        .take(4.min(min.len()))
        .take_while(|(x, y)| x == y)
        .count();
    let m = matches as f64;
    let j = (m / first.len() as f64
        + m / second.len() as f64
        + (m - half_transpositions as f64 / 2.0) / m)
        / 3.0;
    j + 0.1 * prefix as f64 * (1.0 - j)
}

fn levenshtein(a: &str, b: &str) -> i32 {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j + 1] + 1).min(cur[j] + 1).min(prev[j] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()] as i32
}

/// American Soundex of `s` (`UTF8String.soundex`): text not starting with an ASCII letter
/// is returned as it is.
fn soundex(s: &str, out: &mut String) {
    // The digit of each letter A..Z; '7' marks H and W, which do not separate equal codes.
    const CODES: &[u8; 26] = b"01230127022455012623017202";
    let bytes = s.as_bytes();
    let Some(first) = bytes.first().map(u8::to_ascii_uppercase) else {
        return;
    };
    if !first.is_ascii_uppercase() {
        out.push_str(s);
        return;
    }
    let mut sx = [first, b'0', b'0', b'0'];
    let mut k = 1;
    let mut last = CODES[(first - b'A') as usize];
    for &b in &bytes[1..] {
        let b = b.to_ascii_uppercase();
        if !b.is_ascii_uppercase() {
            last = b'0';
            continue;
        }
        let code = CODES[(b - b'A') as usize];
        if code == b'7' {
            continue;
        }
        if code != b'0' && code != last {
            sx[k] = code;
            k += 1;
            if k > 3 {
                break;
            }
        }
        last = code;
    }
    out.extend(sx.iter().map(|&b| b as char));
}

/// `UTF8String.subStringIndex`: before the `count`-th delimiter from the left (after the
/// `-count`-th from the right); occurrences may overlap, as Spark searches one byte on.
fn substring_index<'a>(s: &'a str, delim: &str, count: i32) -> &'a str {
    if delim.is_empty() || count == 0 {
        return "";
    }
    let (sb, db) = (s.as_bytes(), delim.as_bytes());
    let found_at = |p: usize| sb.get(p..p + db.len()) == Some(db);
    if count > 0 {
        let mut idx: isize = -1;
        let mut left = count;
        while left > 0 {
            let from = (idx + 1) as usize;
            match (from..sb.len()).find(|&p| found_at(p)) {
                Some(p) => {
                    idx = p as isize;
                    left -= 1;
                }
                None => return s,
            }
        }
        // A delimiter found inside a character cannot happen for whole UTF-8 delimiters.
        s.get(..idx as usize).unwrap_or(s)
    } else {
        let mut idx = sb.len() as isize - db.len() as isize + 1;
        let mut left = count;
        while left < 0 {
            let from = idx - 1;
            match (0..=from.max(-1))
                .rev()
                .find(|&p| p >= 0 && found_at(p as usize))
            {
                Some(p) if from >= 0 => {
                    idx = p;
                    left += 1;
                }
                _ => return s,
            }
        }
        s.get(idx as usize + db.len()..).unwrap_or("")
    }
}

/// `ByteArray.subStringSQL`: bytes `pos..pos + len` counted from 1 (negative from the end).
fn bytes_sql(b: &[u8], pos: i32, len: i32) -> &[u8] {
    let n = b.len() as i64;
    let start: i64 = match pos {
        p if p > 0 => i64::from(p) - 1,
        p if p < 0 => n + i64::from(p),
        _ => 0,
    };
    let end = (start + i64::from(len)).min(n);
    let start = start.max(0);
    if start >= end {
        return &[];
    }
    &b[start as usize..end as usize]
}

/// Java's `URLEncoder.encode(s, UTF-8)`: letters, digits and `.-*_` kept, space as `+`, every
/// other byte as `%XX`.
fn url_encode(s: &str, out: &mut String) {
    for &b in s.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push_str(&format!("{b:02X}"));
            }
        }
    }
}

/// Java's `URLDecoder.decode(s, UTF-8)`: `+` as space, runs of `%XX` decoded as UTF-8 (a bad
/// sequence as U+FFFD); `None` for a `%` not followed by two hex digits.
fn url_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => {
                out.push(' ');
                i += 1;
            }
            b'%' => {
                let mut bytes = Vec::new();
                while i < b.len() && b[i] == b'%' {
                    let hex = b.get(i + 1..i + 3)?;
                    let hex = std::str::from_utf8(hex).ok()?;
                    bytes.push(u8::from_str_radix(hex, 16).ok()?);
                    i += 3;
                }
                out.push_str(&String::from_utf8_lossy(&bytes));
            }
            _ => {
                let c = s[i..].chars().next()?;
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    Some(out)
}

/// A replacement character of `mask`: a foldable string of one character, or NULL.
fn mask_char(call: &Call<'_, '_>, a: &PhysicalExpr, input: &str) -> Result<PhysicalExpr> {
    let text = super::binary::foldable_text(call, a, input)?;
    match text {
        None => Ok(PhysicalExpr::Literal(Literal::null(&DataType::Utf8))),
        Some(t) if t.chars().count() == 1 => Ok(PhysicalExpr::Literal(Literal::string(&t))),
        Some(t) => Err(FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.INPUT_SIZE_NOT_ONE] Cannot resolve \"{}\" due to data type mismatch: Length of `{input}` should be 1, but got '{t}'. SQLSTATE: 42K09",
            call.expr
        ))),
    }
}

/// Binds this family's calls; other names are returned.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let f = ScalarFunction::Edit;
    let text = |i: usize, args: &[PhysicalExpr]| call.string_arg(i, args[i].clone());
    let int = |i: usize, args: &[PhysicalExpr]| call.int_arg(i, args[i].clone(), &DataType::Int32);
    Ok(Bound::Done(match call.name {
        "find_in_set" => {
            call.arity(&args, 2, 2)?;
            let a = vec![text(0, &args)?, text(1, &args)?];
            call.function(f(EditFn::FindInSet), a, DataType::Int32)
        }
        "jaro_winkler_similarity" => {
            call.arity(&args, 2, 2)?;
            let a = vec![text(0, &args)?, text(1, &args)?];
            call.function(f(EditFn::JaroWinkler), a, DataType::Float64)
        }
        "levenshtein" => {
            call.arity(&args, 2, 3)?;
            let mut a = vec![text(0, &args)?, text(1, &args)?];
            if args.len() == 3 {
                a.push(int(2, &args)?);
            }
            call.function(f(EditFn::Levenshtein), a, DataType::Int32)
        }
        "soundex" | "quote" | "url_encode" | "url_decode" | "try_url_decode" => {
            call.arity(&args, 1, 1)?;
            let func = match call.name {
                "soundex" => EditFn::Soundex,
                "quote" => EditFn::Quote,
                "url_encode" => EditFn::UrlEncode,
                "url_decode" => EditFn::UrlDecode { fail: true },
                _ => EditFn::UrlDecode { fail: false },
            };
            call.function(f(func), vec![text(0, &args)?], DataType::Utf8)
        }
        "sentences" => {
            call.arity(&args, 1, 3)?;
            // The locale changes nothing outside Thai (see `sentences.rs`); its arguments
            // are still strings, as Spark casts them.
            let mut a = vec![text(0, &args)?];
            for k in 1..args.len() {
                a.push(text(k, &args)?);
            }
            call.function(f(EditFn::Sentences), a, super::sentences::sentences_type())
        }
        "substring_index" => {
            call.arity(&args, 3, 3)?;
            let a = vec![text(0, &args)?, text(1, &args)?, int(2, &args)?];
            call.function(f(EditFn::SubstringIndex), a, DataType::Utf8)
        }
        "overlay" => {
            call.arity(&args, 3, 4)?;
            let len = match args.get(3) {
                Some(l) => call.int_arg(3, l.clone(), &DataType::Int32)?,
                None => PhysicalExpr::Literal(Literal::integer(-1)),
            };
            let (t0, t1) = (
                spark_equivalent(&args[0].data_type()),
                spark_equivalent(&args[1].data_type()),
            );
            if t0 == DataType::Binary && matches!(t1, DataType::Binary | DataType::Null) {
                let r = crate::bind::cast_to(args[1].clone(), &DataType::Binary);
                let a = vec![args[0].clone(), r, int(2, &args)?, len];
                call.function(f(EditFn::OverlayBytes), a, DataType::Binary)
            } else {
                let a = vec![text(0, &args)?, text(1, &args)?, int(2, &args)?, len];
                call.function(f(EditFn::Overlay), a, DataType::Utf8)
            }
        }
        "mask" => {
            call.arity(&args, 1, 5)?;
            let defaults = ["X", "x", "n"];
            let names = ["upperChar", "lowerChar", "digitChar", "otherChar"];
            let mut a = vec![text(0, &args)?];
            for k in 1..5 {
                a.push(match args.get(k) {
                    Some(x) => mask_char(call, x, names[k - 1])?,
                    None if k < 4 => PhysicalExpr::Literal(Literal::string(defaults[k - 1])),
                    None => PhysicalExpr::Literal(Literal::null(&DataType::Utf8)),
                });
            }
            call.function(f(EditFn::Mask), a, DataType::Utf8)
        }
        "chr" | "char" => {
            call.arity(&args, 1, 1)?;
            let x = call.int_arg(0, args[0].clone(), &DataType::Int64)?;
            call.function(f(EditFn::Chr), vec![x], DataType::Utf8)
        }
        _ => return Ok(Bound::NotMine(args)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substring_index_counts_overlapping_delimiters() {
        assert_eq!(substring_index("www.apache.org", ".", 2), "www.apache");
        assert_eq!(substring_index("www.apache.org", ".", -2), "apache.org");
        assert_eq!(substring_index("www.apache.org", ".", 5), "www.apache.org");
        assert_eq!(substring_index("www.apache.org", ".", -5), "www.apache.org");
        assert_eq!(substring_index("aaa", "aa", 2), "a");
        assert_eq!(substring_index("aaa", "aa", -2), "a");
        assert_eq!(substring_index(".a.", ".", 1), "");
        assert_eq!(substring_index(".a.", ".", -1), "");
    }

    #[test]
    fn soundex_and_levenshtein() {
        let mut s = String::new();
        soundex("Miller", &mut s);
        assert_eq!(s, "M460");
        s.clear();
        soundex("Ashcraft", &mut s);
        assert_eq!(s, "A261");
        s.clear();
        soundex("1abc", &mut s);
        assert_eq!(s, "1abc");
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("日本", "日"), 1);
    }

    #[test]
    fn url_round_trip() {
        let mut s = String::new();
        url_encode("a b/ü*", &mut s);
        assert_eq!(s, "a+b%2F%C3%BC*");
        assert_eq!(url_decode(&s).as_deref(), Some("a b/ü*"));
        assert_eq!(url_decode("%G1"), None);
        assert_eq!(url_decode("100%"), None);
    }
}

#[cfg(test)]
mod jaro_tests {
    /// Spark 4.3's answers.
    #[test]
    fn jaro_winkler_as_spark() {
        assert_eq!(super::jaro_winkler("kitten", "sitting"), 0.746031746031746);
        assert_eq!(super::jaro_winkler("", ""), 1.0);
        assert_eq!(super::jaro_winkler("abc", ""), 0.0);
        assert_eq!(super::jaro_winkler("MARTHA", "MARHTA"), 0.9611111111111111);
        assert_eq!(super::jaro_winkler("abc", "a%"), 0.6499999999999999);
    }
}
