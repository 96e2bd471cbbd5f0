//! Regular-expression functions (`rlike`, `regexp_extract`, `regexp_replace`, `split`) over
//! the `regex` crate. A literal pattern is compiled once per batch; a pattern column once per
//! distinct value in a row run. Java's replacement syntax (`$1`, `\$`) is translated.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, BooleanArray};
use arrow_schema::{DataType, Field};
use ferrospark_common::{FerroError, Result};
use regex::Regex;

use super::{build_strings, Args, Bound, Call, LastCompiled, ScalarFunction};
use crate::physical::PhysicalExpr;

/// A regular-expression function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegexFn {
    /// `rlike(s, pattern)` / `s RLIKE pattern` / `regexp_like`: a match anywhere.
    RLike,
    /// `regexp_extract(s, pattern[, group])`
    Extract,
    /// `regexp_replace(s, pattern, replacement[, position])`
    Replace,
    /// `split(s, pattern[, limit])`
    Split,
    /// `regexp_extract_all(s, pattern[, group])`: the group of every match
    ExtractAll,
    /// `regexp_count(s, pattern)`: how many matches
    Count,
    /// `regexp_substr(s, pattern)`: the first match, NULL when none or empty
    Substr,
    /// `regexp_instr(s, pattern[, group])`: where the first match starts (1-based), 0 when none
    Instr,
}

impl RegexFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            RegexFn::RLike => "rlike",
            RegexFn::Extract => "regexp_extract",
            RegexFn::Replace => "regexp_replace",
            RegexFn::Split => "split",
            RegexFn::ExtractAll => "regexp_extract_all",
            RegexFn::Count => "regexp_count",
            RegexFn::Substr => "regexp_substr",
            RegexFn::Instr => "regexp_instr",
        }
    }

    pub(crate) fn evaluate(self, a: &Args) -> Result<ArrayRef> {
        let n = a.rows();
        let s = a.str(0)?;
        let p = a.str(1)?;
        let mut cache = LastCompiled::new(compile_java_regex);
        match self {
            RegexFn::RLike => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    out.push(match (s.get(i), p.get(i)) {
                        (Some(v), Some(p)) => Some(cache.get(p)?.is_match(v)),
                        _ => None,
                    });
                }
                Ok(Arc::new(BooleanArray::from(out)))
            }
            RegexFn::Extract => {
                let g = optional_int(a, 2)?;
                build_strings(n, |i, out| {
                    let (Some(v), Some(pat)) = (s.get(i), p.get(i)) else {
                        return Ok(false);
                    };
                    let idx = match &g {
                        Some(g) => match g.get(i) {
                            Some(g) => g,
                            None => return Ok(false),
                        },
                        None => 1,
                    };
                    let re = cache.get(pat)?;
                    let idx = group_index(re, idx, "regexp_extract")?;
                    if let Some(c) = re.captures(v) {
                        if let Some(m) = c.get(idx) {
                            out.push_str(m.as_str());
                        }
                    }
                    Ok(true)
                })
            }
            RegexFn::Replace => {
                let r = a.str(2)?;
                let pos = if a.len() > 3 {
                    Some(a.prim::<Int32Type>(3)?)
                } else {
                    None
                };
                build_strings(n, |i, out| {
                    let (Some(v), Some(pat), Some(rep)) = (s.get(i), p.get(i), r.get(i)) else {
                        return Ok(false);
                    };
                    let from = match &pos {
                        Some(p) => match p.get(i) {
                            Some(p) if p >= 1 => p as usize - 1,
                            Some(p) => {
                                return Err(FerroError::Analysis(format!(
                                    "[INVALID_PARAMETER_VALUE.REGEXP_REPLACE_POSITION] position must be positive, got {p}"
                                )))
                            }
                            None => return Ok(false),
                        },
                        None => 0,
                    };
                    let re = cache.get(pat)?;
                    let split = v.char_indices().nth(from).map_or(v.len(), |(b, _)| b);
                    out.push_str(&v[..split]);
                    out.push_str(&re.replace_all(&v[split..], java_replacement(rep).as_str()));
                    Ok(true)
                })
            }
            RegexFn::ExtractAll => {
                let g = optional_int(a, 2)?;
                let mut b = ListBuilder::new(StringBuilder::new())
                    .with_field(Arc::new(Field::new("element", DataType::Utf8, true)));
                for i in 0..n {
                    let (Some(v), Some(pat)) = (s.get(i), p.get(i)) else {
                        b.append(false);
                        continue;
                    };
                    let idx = match &g {
                        Some(g) => match g.get(i) {
                            Some(g) => g,
                            None => {
                                b.append(false);
                                continue;
                            }
                        },
                        None => 1,
                    };
                    let re = cache.get(pat)?;
                    let idx = group_index(re, idx, "regexp_extract_all")?;
                    for c in java_find_all(v, |at| re.captures_at(v, at), span) {
                        b.values()
                            .append_value(c.get(idx).map_or("", |m| m.as_str()));
                    }
                    b.append(true);
                }
                Ok(Arc::new(b.finish()))
            }
            RegexFn::Count | RegexFn::Instr => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let (Some(v), Some(pat)) = (s.get(i), p.get(i)) else {
                        out.push(None);
                        continue;
                    };
                    let re = cache.get(pat)?;
                    out.push(Some(if self == RegexFn::Count {
                        // Spans only: a count needs no capture groups.
                        java_find_all(v, |at| re.find_at(v, at), |m| (m.start(), m.end())).len()
                            as i32
                    } else {
                        re.find(v)
                            .map_or(0, |m| v[..m.start()].chars().count() as i32 + 1)
                    }));
                }
                Ok(Arc::new(arrow_array::Int32Array::from(out)))
            }
            RegexFn::Substr => build_strings(n, |i, out| {
                let (Some(v), Some(pat)) = (s.get(i), p.get(i)) else {
                    return Ok(false);
                };
                match cache.get(pat)?.find(v) {
                    Some(m) if !m.as_str().is_empty() => {
                        out.push_str(m.as_str());
                        Ok(true)
                    }
                    _ => Ok(false),
                }
            }),
            RegexFn::Split => {
                let limit = optional_int(a, 2)?;
                let mut b = ListBuilder::new(StringBuilder::new())
                    .with_field(Arc::new(Field::new("element", DataType::Utf8, false)));
                for i in 0..n {
                    let (Some(v), Some(pat)) = (s.get(i), p.get(i)) else {
                        b.append(false);
                        continue;
                    };
                    let lim = match &limit {
                        Some(l) => l.get(i).unwrap_or(-1),
                        None => -1,
                    };
                    for part in java_split(v, cache.get(pat)?, lim) {
                        b.values().append_value(part);
                    }
                    b.append(true);
                }
                Ok(Arc::new(b.finish()))
            }
        }
    }
}

/// Every match as Java's `Matcher.find()` loop reports them: after an empty match the search
/// moves one character on, and an empty match right after a non-empty one counts (the regex
/// crate's iterator skips it). `search(at)` finds the next match at or after `at`, `bounds`
/// gives its span.
fn java_find_all<M>(
    v: &str,
    mut search: impl FnMut(usize) -> Option<M>,
    bounds: impl Fn(&M) -> (usize, usize),
) -> Vec<M> {
    let mut out = Vec::new();
    let mut start = 0;
    while start <= v.len() {
        let Some(m) = search(start) else {
            break;
        };
        let (b, e) = bounds(&m);
        out.push(m);
        start = if e == b {
            match v[e..].chars().next() {
                Some(ch) => e + ch.len_utf8(),
                None => break,
            }
        } else {
            e
        };
    }
    out
}

/// The span of a match's whole text.
fn span(c: &regex::Captures<'_>) -> (usize, usize) {
    c.get(0).map_or((0, 0), |m| (m.start(), m.end()))
}

/// Group `idx` of `re`, or Spark's `REGEX_GROUP_INDEX` refusal naming `function`.
fn group_index(re: &Regex, idx: i32, function: &str) -> Result<usize> {
    let groups = re.captures_len() as i32 - 1;
    if idx < 0 || idx > groups {
        return Err(FerroError::Analysis(format!(
            "[INVALID_PARAMETER_VALUE.REGEX_GROUP_INDEX] The value of parameter `idx` in `{function}` is invalid: expects group index between 0 and {groups}, but got {idx}."
        )));
    }
    Ok(idx as usize)
}

/// Argument `i` as integers when the call has it.
fn optional_int(a: &Args, i: usize) -> Result<Option<super::PrimView<'_, Int32Type>>> {
    (a.len() > i).then(|| a.prim::<Int32Type>(i)).transpose()
}

/// A Java regular expression compiled for the regex crate.
fn compile_java_regex(pattern: &str) -> Result<Regex> {
    Regex::new(&java_classes(pattern)).map_err(|e| {
        FerroError::Analysis(format!(
            "[INVALID_PARAMETER_VALUE.PATTERN] The value of parameter `regexp` is invalid: '{pattern}': {e}"
        ))
    })
}

/// Java's `\w`, `\d` and `\s` are ASCII classes (the regex crate's are Unicode ones).
fn java_classes(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('w') => out.push_str("[0-9A-Za-z_]"),
            Some('W') => out.push_str("[^0-9A-Za-z_]"),
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('s') => out.push_str("[\\t\\n\\x0B\\f\\r ]"),
            Some('S') => out.push_str("[^\\t\\n\\x0B\\f\\r ]"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Java's `Matcher.appendReplacement` syntax (`$1`, `\$` for a dollar) in the regex crate's
/// (`${1}`, `$$`).
fn java_replacement(rep: &str) -> String {
    let mut out = String::with_capacity(rep.len());
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    if n == '$' {
                        out.push_str("$$");
                    } else {
                        out.push(n);
                    }
                }
            }
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    out.push_str("$$");
                } else {
                    out.push_str(&format!("${{{digits}}}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Java's `String.split(regex, limit)`: a zero-width match at the start adds no leading empty
/// string; `limit > 0` caps the pieces; `limit <= 0` keeps trailing empty strings (Spark
/// passes -1 for its default).
fn java_split<'a>(v: &'a str, re: &Regex, limit: i32) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut last = 0;
    for m in re.find_iter(v) {
        if limit > 0 && out.len() as i32 == limit - 1 {
            break;
        }
        if m.end() == 0 {
            continue;
        }
        if m.start() == m.end() && m.start() >= v.len() {
            break;
        }
        out.push(&v[last..m.start()]);
        last = m.end();
    }
    out.push(&v[last..]);
    if limit == 0 {
        while out.len() > 1 && out.last().is_some_and(|s| s.is_empty()) {
            out.pop();
        }
    }
    out
}

pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let (f, lo, hi) = match call.name {
        "rlike" | "regexp" | "regexp_like" => (RegexFn::RLike, 2, 2),
        "regexp_extract" => (RegexFn::Extract, 2, 3),
        "regexp_replace" => (RegexFn::Replace, 3, 4),
        "split" => (RegexFn::Split, 2, 3),
        "regexp_extract_all" => (RegexFn::ExtractAll, 2, 3),
        "regexp_count" => (RegexFn::Count, 2, 2),
        "regexp_substr" => (RegexFn::Substr, 2, 2),
        "regexp_instr" => (RegexFn::Instr, 2, 3),
        _ => return Ok(Bound::NotMine(args)),
    };
    call.arity(&args, lo, hi)?;
    let int_from = match f {
        RegexFn::Replace => 3,
        _ => 2,
    };
    let args = args
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            if i >= int_from {
                call.int_arg(i, a, &DataType::Int32)
            } else {
                call.string_arg(i, a)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let t = match f {
        RegexFn::RLike => DataType::Boolean,
        RegexFn::Count | RegexFn::Instr => DataType::Int32,
        RegexFn::ExtractAll => {
            DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)))
        }
        RegexFn::Split => DataType::List(Arc::new(Field::new("element", DataType::Utf8, false))),
        _ => DataType::Utf8,
    };
    Ok(Bound::Done(call.function(
        ScalarFunction::Regex(f),
        args,
        t,
    )))
}
