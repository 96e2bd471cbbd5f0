//! `get_json_object(json, path)` and the values of `json_tuple(json, k1, k2, ...)`: parts of
//! JSON text picked by a path or a key, as text, the way Spark's `GetJsonObject` and
//! `JsonTuple` stream them through Jackson.
//!
//! Written here because the answers are Jackson's re-serialisation, not the input text: a
//! float is printed as Java prints a double (`1.50` is `1.5`, `1e3` is `1000.0`), nested
//! values come back compact, a string at the end of the path comes back without quotes but
//! with quotes inside arrays, and `[*]` over an array gives its one match bare or several in
//! brackets (Hive's rule). The whole outermost value must be valid JSON (Spark's parser
//! reads all of it), text after it is never read, and JSON `null` is no match.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StringArray};
use arrow_schema::DataType;
use ferrospark_common::Result;

use super::json_text::{eat, number, skip_ws, string};
use super::{Args, Bound, Call, ScalarFunction};
use crate::physical::PhysicalExpr;

/// A JSON value as Jackson's tokens carry it.
#[derive(Debug, Clone, PartialEq)]
enum JVal {
    Null,
    Bool(bool),
    /// An integer's text (Jackson prints integers back digit for digit).
    Int(String),
    /// A float's value (Jackson prints it back as Java's `Double.toString`).
    Float(f64),
    Str(String),
    Array(Vec<JVal>),
    Object(Vec<(String, JVal)>),
}

/// The outermost value of `b`; `None` when it is not valid JSON as Spark's parser reads it.
fn parse(b: &[u8]) -> Option<JVal> {
    let mut pos = 0;
    value(b, &mut pos, 0, false)
}

/// A JSON value's text as Jackson's `copyCurrentStructure` writes it back through a UTF-8
/// generator (how Spark's JSON reader fills a STRING column from a number, an array or an
/// object): compact, floats as Java prints doubles, `NaN` and the infinities quoted, and a
/// character beyond the BMP as its two `\u` escapes. `None` for text this parser does not
/// take (comments, unquoted names: the reader's options), which callers keep as written.
pub fn jackson_copy(b: &[u8]) -> Option<String> {
    let mut pos = 0;
    let v = value(b, &mut pos, 0, true)?;
    skip_ws(b, &mut pos);
    if pos != b.len() {
        return None;
    }
    let mut out = String::new();
    write(&v, &mut out);
    Some(out)
}

/// `NaN`, `Infinity`, `+Infinity`, `-Infinity`, `+INF`, `-INF` at `pos`.
fn non_numeric(b: &[u8], pos: &mut usize) -> Option<f64> {
    for (word, v) in [
        (&b"NaN"[..], f64::NAN),
        (b"Infinity", f64::INFINITY),
        (b"+Infinity", f64::INFINITY),
        (b"-Infinity", f64::NEG_INFINITY),
        (b"+INF", f64::INFINITY),
        (b"-INF", f64::NEG_INFINITY),
    ] {
        if b[*pos..].starts_with(word) {
            *pos += word.len();
            return Some(v);
        }
    }
    None
}

fn value(b: &[u8], pos: &mut usize, depth: usize, lenient: bool) -> Option<JVal> {
    if depth > 1000 {
        return None;
    }
    skip_ws(b, pos);
    Some(match *b.get(*pos)? {
        b'{' => {
            *pos += 1;
            let mut members = Vec::new();
            skip_ws(b, pos);
            if eat(b, pos, b"}").is_none() {
                loop {
                    skip_ws(b, pos);
                    let key = string(b, pos)?;
                    skip_ws(b, pos);
                    eat(b, pos, b":")?;
                    members.push((key, value(b, pos, depth + 1, lenient)?));
                    skip_ws(b, pos);
                    match *b.get(*pos)? {
                        b',' => *pos += 1,
                        b'}' => {
                            *pos += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            JVal::Object(members)
        }
        b'[' => {
            *pos += 1;
            let mut items = Vec::new();
            skip_ws(b, pos);
            if eat(b, pos, b"]").is_none() {
                loop {
                    items.push(value(b, pos, depth + 1, lenient)?);
                    skip_ws(b, pos);
                    match *b.get(*pos)? {
                        b',' => *pos += 1,
                        b']' => {
                            *pos += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            JVal::Array(items)
        }
        b'"' | b'\'' => JVal::Str(string(b, pos)?),
        b't' => eat(b, pos, b"true").map(|_| JVal::Bool(true))?,
        b'f' => eat(b, pos, b"false").map(|_| JVal::Bool(false))?,
        b'n' => eat(b, pos, b"null").map(|_| JVal::Null)?,
        _ => {
            if lenient {
                if let Some(v) = non_numeric(b, pos) {
                    return Some(JVal::Float(v));
                }
            }
            let start = *pos;
            number(b, pos)?;
            let text = std::str::from_utf8(&b[start..*pos]).ok()?;
            if text.contains(['.', 'e', 'E']) {
                JVal::Float(text.parse().ok()?)
            } else {
                JVal::Int(int_text(text))
            }
        }
    })
}

/// An integer as Jackson writes it back: `-0` is `0`.
fn int_text(t: &str) -> String {
    if t.trim_start_matches('-').bytes().all(|c| c == b'0') {
        "0".into()
    } else {
        t.to_string()
    }
}

/// `s` as Jackson's UTF-8 generator quotes it (a character beyond the BMP as its two
/// surrogate escapes).
fn quote(s: &str, out: &mut String) {
    crate::json::write::quote_into(s, true, out);
}

/// The compact JSON text of `v` (Jackson's `copyCurrentStructure`).
fn write(v: &JVal, out: &mut String) {
    match v {
        JVal::Null => out.push_str("null"),
        JVal::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JVal::Int(t) => out.push_str(t),
        // Jackson quotes the non-numbers (`QUOTE_NON_NUMERIC_NUMBERS`).
        JVal::Float(f) if !f.is_finite() => {
            out.push('"');
            out.push_str(&crate::cast::java_double_string(*f));
            out.push('"');
        }
        JVal::Float(f) => out.push_str(&crate::cast::java_double_string(*f)),
        JVal::Str(s) => quote(s, out),
        JVal::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        JVal::Object(members) => {
            out.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                quote(k, out);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
    }
}

/// A step of a parsed path (Spark's `PathInstruction`).
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Into an object's members.
    Key,
    /// Into an array's elements.
    Subscript,
    /// `[*]` after a subscript; alone (`.*`, `['*']`) it matches nothing.
    Wildcard,
    /// `[n]`.
    Index(u64),
    /// A member's name.
    Named(String),
}

/// A path as Spark's `JsonPathParser` reads it: `$` then `.name`, `['name']`, `[n]`, `[*]`,
/// `.*`, `['*']`; `None` for anything else (the result is NULL).
fn parse_path(p: &str) -> Option<Vec<Step>> {
    let mut rest = p.strip_prefix('$')?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest
            .strip_prefix(".*")
            .or_else(|| rest.strip_prefix("['*']"))
        {
            steps.push(Step::Wildcard);
            rest = r;
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find(['\'', '?'])?;
            if end == 0 || !r[end..].starts_with("']") {
                return None;
            }
            steps.extend([Step::Key, Step::Named(r[..end].to_string())]);
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            steps.extend([Step::Key, Step::Named(r[..end].to_string())]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            let step = if inner == "*" {
                Step::Wildcard
            } else if !inner.is_empty() && inner.bytes().all(|c| c.is_ascii_digit()) {
                Step::Index(inner.parse().ok()?)
            } else {
                return None;
            };
            steps.extend([Step::Subscript, step]);
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// How a value at the end of a path is written (Spark's `WriteStyle`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    /// At the top: a string without its quotes.
    Raw,
    /// Inside an array being built: strings quoted.
    Quoted,
    /// Under a double wildcard: arrays spread into the one being built.
    Flatten,
}

/// A JSON writer of values into arrays, adding the commas (Jackson's generator).
#[derive(Default)]
struct Gen {
    out: String,
    /// For each open array, whether nothing was written in it yet.
    open: Vec<bool>,
}

impl Gen {
    fn separate(&mut self) {
        if let Some(first) = self.open.last_mut() {
            if !*first {
                self.out.push(',');
            }
            *first = false;
        }
    }
    fn start_array(&mut self) {
        self.separate();
        self.out.push('[');
        self.open.push(true);
    }
    fn end_array(&mut self) {
        self.out.push(']');
        self.open.pop();
    }
    fn value(&mut self, v: &JVal) {
        self.separate();
        write(v, &mut self.out);
    }
    fn raw_value(&mut self, text: &str) {
        self.separate();
        self.out.push_str(text);
    }
}

/// Writes what `path` picks from `v` into `g`; whether anything matched.
fn evaluate(v: &JVal, path: &[Step], style: Style, g: &mut Gen) -> bool {
    use Step::*;
    match (v, path) {
        (JVal::Null, _) => false,
        (JVal::Str(s), []) if style == Style::Raw => {
            g.out.push_str(s);
            true
        }
        (JVal::Array(items), []) if style == Style::Flatten => {
            let mut dirty = false;
            for item in items {
                dirty |= evaluate(item, &[], style, g);
            }
            dirty
        }
        (_, []) => {
            g.value(v);
            true
        }
        (JVal::Object(members), [Key, rest @ ..]) => {
            for (name, item) in members {
                let matched = match rest {
                    [Named(n), xs @ ..] if n == name => {
                        *item != JVal::Null && evaluate(item, xs, style, g)
                    }
                    [Wildcard, xs @ ..] => evaluate(item, xs, style, g),
                    _ => false,
                };
                if matched {
                    return true;
                }
            }
            false
        }
        (JVal::Array(items), [Subscript, Wildcard, Subscript, Wildcard, xs @ ..]) => {
            g.start_array();
            let mut dirty = false;
            for item in items {
                dirty |= evaluate(item, xs, Style::Flatten, g);
            }
            g.end_array();
            dirty
        }
        (JVal::Array(items), [Subscript, Wildcard, xs @ ..]) if style != Style::Quoted => {
            let next = if style == Style::Raw {
                Style::Quoted
            } else {
                Style::Flatten
            };
            let mut inner = Gen::default();
            inner.start_array();
            let mut matches = 0;
            for item in items {
                matches += usize::from(evaluate(item, xs, next, &mut inner));
            }
            inner.end_array();
            let text = inner.out;
            match matches {
                0 => false,
                // One match comes out bare (Hive's rule).
                1 => {
                    g.raw_value(&text[1..text.len() - 1]);
                    true
                }
                _ => {
                    g.raw_value(&text);
                    true
                }
            }
        }
        (JVal::Array(items), [Subscript, Wildcard, xs @ ..]) => {
            g.start_array();
            let mut dirty = false;
            for item in items {
                dirty |= evaluate(item, xs, Style::Quoted, g);
            }
            g.end_array();
            dirty
        }
        (JVal::Array(items), [Subscript, Index(i), xs @ ..]) => {
            let next = if matches!(xs, [Subscript, Wildcard, ..]) {
                Style::Quoted
            } else {
                style
            };
            usize::try_from(*i)
                .ok()
                .and_then(|i| items.get(i))
                .is_some_and(|item| evaluate(item, xs, next, g))
        }
        _ => false,
    }
}

/// `get_json_object(json, path)` of one row.
fn get_json_object(json: &str, path: &[Step]) -> Option<String> {
    let v = parse(json.as_bytes())?;
    let mut g = Gen::default();
    evaluate(&v, path, Style::Raw, &mut g).then_some(g.out)
}

/// The values `json_tuple(json, fields...)` gives one row: each field's value as text (a
/// string without quotes, other values as compact JSON), NULL for a field that is absent or
/// `null`, and all NULL when the text is not a JSON object. A later duplicate key wins.
pub fn json_tuple_row(json: Option<&str>, fields: &[Option<&str>]) -> Vec<Option<String>> {
    let mut row = vec![None; fields.len()];
    let Some(JVal::Object(members)) = json.and_then(|j| parse(j.as_bytes())) else {
        return row;
    };
    for (name, v) in &members {
        if *v == JVal::Null {
            continue;
        }
        let text = match v {
            JVal::Str(s) => s.clone(),
            other => {
                let mut out = String::new();
                write(other, &mut out);
                out
            }
        };
        for (slot, f) in row.iter_mut().zip(fields) {
            if *f == Some(name.as_str()) {
                *slot = Some(text.clone());
            }
        }
    }
    row
}

/// The columns `json_tuple` makes from `json` and the field-name columns (strings, one
/// value per row of `json`).
pub fn json_tuple_columns(json: &StringArray, fields: &[&StringArray]) -> Vec<ArrayRef> {
    let n = json.len();
    let mut builders: Vec<StringBuilder> = fields
        .iter()
        .map(|_| StringBuilder::with_capacity(n, n * 8))
        .collect();
    for i in 0..n {
        let names: Vec<Option<&str>> = fields
            .iter()
            .map(|f| f.is_valid(i).then(|| f.value(i)))
            .collect();
        let row = json_tuple_row(json.is_valid(i).then(|| json.value(i)), &names);
        for (b, v) in builders.iter_mut().zip(row) {
            b.append_option(v);
        }
    }
    builders
        .into_iter()
        .map(|mut b| Arc::new(b.finish()) as ArrayRef)
        .collect()
}

/// `get_json_object`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetJsonObjectFn;

impl GetJsonObjectFn {
    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let json = args.str(0)?;
        let paths = args.str(1)?;
        let n = args.rows();
        // A constant path (the usual case) is parsed once.
        let constant = args.is_scalar(1).then(|| paths.get(0).and_then(parse_path));
        let mut out = StringBuilder::with_capacity(n, n * 8);
        for i in 0..n {
            let parsed;
            let path = match &constant {
                Some(p) => p.as_deref(),
                None => {
                    parsed = paths.get(i).and_then(parse_path);
                    parsed.as_deref()
                }
            };
            out.append_option(
                json.get(i)
                    .zip(path)
                    .and_then(|(j, p)| get_json_object(j, p)),
            );
        }
        Ok(Arc::new(out.finish()))
    }
}

/// Binds `get_json_object`; other names are not this function's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    if call.name != "get_json_object" {
        return Ok(Bound::NotMine(args));
    }
    call.arity(&args, 2, 2)?;
    let args = call.string_args(args)?;
    Ok(Bound::Done(call.function(
        ScalarFunction::GetJsonObject(GetJsonObjectFn),
        args,
        DataType::Utf8,
    )))
}

/// `json_tuple`'s columns over string arrays of any kind (for the generator).
pub fn json_tuple_arrays(json: &ArrayRef, fields: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
    let json = arrow_cast::cast(json, &DataType::Utf8)?;
    let fields = fields
        .iter()
        .map(|f| arrow_cast::cast(f, &DataType::Utf8))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let views: Vec<&StringArray> = fields.iter().map(|f| f.as_string::<i32>()).collect();
    Ok(json_tuple_columns(json.as_string::<i32>(), &views))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(j: &str, p: &str) -> Option<String> {
        get_json_object(j, &parse_path(p)?)
    }

    /// The expectations are PySpark 4.3's.
    #[test]
    fn paths_pick_what_spark_picks() {
        let doc = r#"{"a":{"b":[1,2,{"c":"x"}]}}"#;
        assert_eq!(get(doc, "$.a.b[2].c").as_deref(), Some("x"));
        assert_eq!(
            get(r#"{"a":{"b":[1,2]}}"#, "$.a").as_deref(),
            Some(r#"{"b":[1,2]}"#)
        );
        assert_eq!(
            get(r#"{"a":{"b":[1,2]}}"#, "$.a.b[*]").as_deref(),
            Some("[1,2]")
        );
        assert_eq!(
            get(r#"{"a":[{"b":1},{"b":2}]}"#, "$.a[*].b").as_deref(),
            Some("[1,2]")
        );
        assert_eq!(get(r#"{"a":"x"}"#, "$['a']").as_deref(), Some("x"));
        assert_eq!(get(r#"{"a":null}"#, "$.a"), None);
        assert_eq!(get("xx", "$.a"), None);
        assert_eq!(get(r#"{"a":1.50}"#, "$.a").as_deref(), Some("1.5"));
        assert_eq!(get(r#"{"a":1}"#, "a"), None);
        assert_eq!(get("[1,2]", "$[0]").as_deref(), Some("1"));
        assert_eq!(get(r#"{"a":1}"#, "$").as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(get(r#"{"a":1} tail"#, "$.a").as_deref(), Some("1"));
        assert_eq!(get(r#"{"a":["x"]}"#, "$.a[*]").as_deref(), Some(r#""x""#));
        assert_eq!(
            get(r#"{"a":[[1,2],[3]]}"#, "$.a[*][*]").as_deref(),
            Some("[1,2,3]")
        );
        assert_eq!(get(r#"{"a":1, "b":}"#, "$.a"), None);
        assert_eq!(get(r#"{"a":1e3}"#, "$.a").as_deref(), Some("1000.0"));
        assert_eq!(
            get(r#"{"emoji \ud83d\ude00": ["😀"], "日本": 1}"#, "$").as_deref(),
            Some(r#"{"emoji \uD83D\uDE00":["\uD83D\uDE00"],"日本":1}"#)
        );
        assert_eq!(get(r#"{"a":"😀"}"#, "$.a").as_deref(), Some("😀"));
        assert_eq!(
            jackson_copy(b"[4, 5, {'six': -0}, 1.5e3, NaN, -Infinity]").as_deref(),
            Some(r#"[4,5,{"six":0},1500.0,"NaN","-Infinity"]"#)
        );
    }

    #[test]
    fn tuples_take_top_level_keys() {
        let row = json_tuple_row(
            Some(r#"{"a":1,"b":{"c":2},"d":"x","e":null}"#),
            &[Some("a"), Some("b"), Some("d"), Some("e"), Some("zz"), None],
        );
        assert_eq!(
            row,
            vec![
                Some("1".into()),
                Some(r#"{"c":2}"#.into()),
                Some("x".into()),
                None,
                None,
                None
            ]
        );
        assert_eq!(json_tuple_row(Some("xx"), &[Some("a")]), vec![None]);
        assert_eq!(json_tuple_row(None, &[Some("a")]), vec![None]);
    }
}
