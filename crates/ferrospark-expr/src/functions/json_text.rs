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

fn skip_ws(b: &[u8], pos: &mut usize) {
    while b
        .get(*pos)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
    {
        *pos += 1;
    }
}

fn eat(b: &[u8], pos: &mut usize, word: &[u8]) -> Option<()> {
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
fn number(b: &[u8], pos: &mut usize) -> Option<()> {
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

fn hex4(b: &[u8], pos: &mut usize) -> Option<u16> {
    let hex = std::str::from_utf8(b.get(*pos..*pos + 4)?).ok()?;
    let unit = u16::from_str_radix(hex, 16).ok()?;
    *pos += 4;
    Some(unit)
}

/// A string from its opening quote (`"`, or `'` as Spark allows), its text decoded.
fn string(b: &[u8], pos: &mut usize) -> Option<String> {
    let quote = *b.get(*pos).filter(|q| matches!(q, b'"' | b'\''))?;
    *pos += 1;
    let mut out: Vec<u8> = Vec::new();
    loop {
        let c = *b.get(*pos)?;
        *pos += 1;
        match c {
            c if c == quote => return String::from_utf8(out).ok(),
            b'\\' => {
                let e = *b.get(*pos)?;
                *pos += 1;
                let ch = match e {
                    b'"' => '"',
                    b'\'' if quote == b'\'' => '\'',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        let unit = hex4(b, pos)?;
                        let low = (0xD800..0xDC00).contains(&unit).then(|| {
                            let mut p = *pos;
                            eat(b, &mut p, b"\\u")?;
                            let low = hex4(b, &mut p).filter(|l| (0xDC00..0xE000).contains(l))?;
                            *pos = p;
                            Some(low)
                        });
                        match low.flatten() {
                            Some(low) => char::from_u32(
                                0x10000
                                    + ((u32::from(unit) - 0xD800) << 10)
                                    + (u32::from(low) - 0xDC00),
                            )?,
                            // A lone surrogate decodes to U+FFFD, as Java's text would print it.
                            None => char::from_u32(u32::from(unit)).unwrap_or('\u{fffd}'),
                        }
                    }
                    _ => return None,
                };
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            c => out.push(c),
        }
    }
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
    let args = args
        .into_iter()
        .enumerate()
        .map(|(i, a)| call.string_arg(i, a))
        .collect::<Result<Vec<_>>>()?;
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
