//! `json_array_length` and `json_object_keys`: the outermost JSON array's length and the
//! outermost JSON object's keys, read as Spark reads them with Jackson's streaming parser.
//!
//! Written here because the answers follow Jackson's token stream as Spark configures it,
//! not a document parser: only the outermost value is read (text after its end is never
//! looked at), every value inside it must be a valid token (`[1, 2,]`, `[01]`, `[NaN]`, an
//! unterminated string give NULL), strings may be single-quoted and hold raw control
//! characters, keys keep their duplicates, and anything but an array (an object) gives NULL.

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, StringBuilder};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field};
use ferrospark_common::Result;

use super::{Args, Bound, Call, ScalarFunction};
use crate::physical::PhysicalExpr;

/// `json_array_length(s)` or `json_object_keys(s)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonTextFn {
    /// The number of elements of the outermost array (INT).
    ArrayLength,
    /// The keys of the outermost object, in order (ARRAY<STRING>).
    ObjectKeys,
}

impl JsonTextFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            JsonTextFn::ArrayLength => "json_array_length",
            JsonTextFn::ObjectKeys => "json_object_keys",
        }
    }

    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let text = args.str(0)?;
        let n = args.rows();
        Ok(match self {
            JsonTextFn::ArrayLength => {
                let mut out = Int32Builder::with_capacity(n);
                for i in 0..n {
                    out.append_option(text.get(i).and_then(|s| array_length(s.as_bytes())));
                }
                Arc::new(out.finish())
            }
            JsonTextFn::ObjectKeys => {
                let mut out = ListBuilder::new(StringBuilder::new())
                    .with_field(Arc::new(Field::new("element", DataType::Utf8, true)));
                for i in 0..n {
                    match text.get(i).and_then(|s| object_keys(s.as_bytes())) {
                        Some(keys) => {
                            for k in keys {
                                out.values().append_value(k);
                            }
                            out.append(true);
                        }
                        None => out.append(false),
                    }
                }
                Arc::new(out.finish())
            }
        })
    }
}

pub(super) fn skip_ws(b: &[u8], pos: &mut usize) {
    while b
        .get(*pos)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
    {
        *pos += 1;
    }
}

pub(super) fn eat(b: &[u8], pos: &mut usize, word: &[u8]) -> Option<()> {
    b.get(*pos..*pos + word.len())
        .filter(|w| *w == word)
        .map(|_| *pos += word.len())
}

fn digits(b: &[u8], pos: &mut usize) -> usize {
    let start = *pos;
    while b.get(*pos).is_some_and(u8::is_ascii_digit) {
        *pos += 1;
    }
    *pos - start
}

/// A number as Jackson reads it: an optional minus, no leading zeros, a digit after the
/// point and in the exponent.
pub(super) fn number(b: &[u8], pos: &mut usize) -> Option<()> {
    if b.get(*pos) == Some(&b'-') {
        *pos += 1;
    }
    let first = *pos;
    let whole = digits(b, pos);
    if whole == 0 || (whole > 1 && b[first] == b'0') {
        return None;
    }
    if b.get(*pos) == Some(&b'.') {
        *pos += 1;
        if digits(b, pos) == 0 {
            return None;
        }
    }
    if matches!(b.get(*pos), Some(b'e' | b'E')) {
        *pos += 1;
        if matches!(b.get(*pos), Some(b'+' | b'-')) {
            *pos += 1;
        }
        if digits(b, pos) == 0 {
            return None;
        }
    }
    // A number runs into no letter (`1x` is one bad token).
    match b.get(*pos) {
        Some(c) if c.is_ascii_alphanumeric() || *c == b'_' => None,
        _ => Some(()),
    }
}

fn is_hex4(b: &[u8], at: usize) -> bool {
    b.get(at..at + 4)
        .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
}

/// A string from its opening quote (`"`, or `'` as Spark allows), its text decoded. The
/// escapes are checked here (Jackson refuses `\x`), then decoded by [`decode_escapes`].
pub(super) fn string(b: &[u8], pos: &mut usize) -> Option<String> {
    let quote = *b.get(*pos).filter(|q| matches!(q, b'"' | b'\''))?;
    let start = *pos + 1;
    let mut i = start;
    loop {
        match *b.get(i)? {
            c if c == quote => break,
            b'\\' => {
                match *b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'\'' if quote == b'\'' => {}
                    b'u' if is_hex4(b, i + 2) => i += 4,
                    _ => return None,
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    *pos = i + 1;
    decode_escapes(&b[start..i]).map(|t| t.into_owned())
}

/// The text between a JSON string's quotes with its escapes decoded: `\uXXXX` (a surrogate
/// pair as one character, a lone surrogate as U+FFFD, as Java prints it), the one-letter
/// escapes, and a backslash before any other character standing for that character (the
/// reader's leniency; callers refuse what their dialect does not allow). `None` when the
/// result is not UTF-8 or a `\u` lacks its four digits. Shared with the JSON reader.
pub fn decode_escapes(inner: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    if memchr::memchr(b'\\', inner).is_none() {
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let e = *inner.get(i + 1)?;
        i += 2;
        let ch = match e {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hex = |at: usize| -> Option<u32> {
                    u32::from_str_radix(std::str::from_utf8(inner.get(at..at + 4)?).ok()?, 16).ok()
                };
                let hi = hex(i)?;
                i += 4;
                if (0xD800..0xDC00).contains(&hi) && inner.get(i..i + 2) == Some(b"\\u") {
                    if let Some(lo) = hex(i + 2).filter(|lo| (0xDC00..0xE000).contains(lo)) {
                        i += 6;
                        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                    } else {
                        '\u{FFFD}'
                    }
                } else {
                    char::from_u32(hi).unwrap_or('\u{FFFD}')
                }
            }
            other => {
                out.push(other);
                continue;
            }
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// Skips one value (nested ones whole); `None` at a token Jackson refuses.
fn value(b: &[u8], pos: &mut usize, depth: usize) -> Option<()> {
    if depth > 1000 {
        return None;
    }
    skip_ws(b, pos);
    match *b.get(*pos)? {
        b'{' => {
            *pos += 1;
            members(b, pos, depth, |_| {})
        }
        b'[' => {
            *pos += 1;
            elements(b, pos, depth).map(|_| ())
        }
        b'"' | b'\'' => string(b, pos).map(|_| ()),
        b't' => eat(b, pos, b"true"),
        b'f' => eat(b, pos, b"false"),
        b'n' => eat(b, pos, b"null"),
        _ => number(b, pos),
    }
}

/// The elements of an array after its `[`, through its `]`: how many.
fn elements(b: &[u8], pos: &mut usize, depth: usize) -> Option<i32> {
    skip_ws(b, pos);
    if eat(b, pos, b"]").is_some() {
        return Some(0);
    }
    let mut n = 0i32;
    loop {
        value(b, pos, depth + 1)?;
        n = n.checked_add(1)?;
        skip_ws(b, pos);
        match *b.get(*pos)? {
            b',' => *pos += 1,
            b']' => {
                *pos += 1;
                return Some(n);
            }
            _ => return None,
        }
    }
}

/// The members of an object after its `{`, through its `}`, each key handed to `key`.
fn members(b: &[u8], pos: &mut usize, depth: usize, mut key: impl FnMut(String)) -> Option<()> {
    skip_ws(b, pos);
    if eat(b, pos, b"}").is_some() {
        return Some(());
    }
    loop {
        skip_ws(b, pos);
        key(string(b, pos)?);
        skip_ws(b, pos);
        eat(b, pos, b":")?;
        value(b, pos, depth + 1)?;
        skip_ws(b, pos);
        match *b.get(*pos)? {
            b',' => *pos += 1,
            b'}' => {
                *pos += 1;
                return Some(());
            }
            _ => return None,
        }
    }
}

fn array_length(b: &[u8]) -> Option<i32> {
    let mut pos = 0;
    skip_ws(b, &mut pos);
    eat(b, &mut pos, b"[")?;
    elements(b, &mut pos, 0)
}

fn object_keys(b: &[u8]) -> Option<Vec<String>> {
    let mut pos = 0;
    skip_ws(b, &mut pos);
    eat(b, &mut pos, b"{")?;
    let mut keys = Vec::new();
    members(b, &mut pos, 0, |k| keys.push(k))?;
    Some(keys)
}

/// Binds `json_array_length` and `json_object_keys`; other names are not this family's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let (f, out) = match call.name {
        "json_array_length" => (JsonTextFn::ArrayLength, DataType::Int32),
        "json_object_keys" => (
            JsonTextFn::ObjectKeys,
            DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))),
        ),
        _ => return Ok(Bound::NotMine(args)),
    };
    call.arity(&args, 1, 1)?;
    let args = call.string_args(args)?;
    Ok(Bound::Done(call.function(
        ScalarFunction::JsonText(f),
        args,
        out,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expectations are PySpark's.
    #[test]
    fn lengths_and_keys_follow_jacksons_tokens() {
        assert_eq!(array_length(b"[1,2,3,4]"), Some(4));
        assert_eq!(
            array_length(b" [[1,2],{\"a\":[3]}, \"x\", null] tail"),
            Some(4)
        );
        assert_eq!(array_length(b"[]"), Some(0));
        assert_eq!(array_length(b"[1,2"), None);
        assert_eq!(array_length(b"[1,2,]"), None);
        assert_eq!(array_length(b"[01]"), None);
        assert_eq!(array_length(b"{\"a\":1}"), None);
        assert_eq!(array_length(b"[NaN]"), None);
        assert_eq!(array_length(b"[-0, 1e5, -0.5E-3, 'a', \"a\tb\"]"), Some(5));
        assert_eq!(array_length(b"[+1]"), None);
        assert_eq!(array_length(b"[1 2]"), None);
        assert_eq!(
            object_keys(b"{\"a\":1, \"b\":{\"c\":2}, \"a\":3}"),
            Some(vec!["a".into(), "b".into(), "a".into()])
        );
        assert_eq!(object_keys(b"{}"), Some(vec![]));
        assert_eq!(object_keys(b"[1]"), None);
        assert_eq!(object_keys(b"{\"k\\u00e9\":1}"), Some(vec!["ké".into()]));
        assert_eq!(
            object_keys(b"{\"\\ud83d\\ude00\":1}"),
            Some(vec!["\u{1f600}".into()])
        );
    }
}
