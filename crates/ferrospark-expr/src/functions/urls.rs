//! `parse_url(url, part[, key])` and `try_parse_url`: a part of a URL as Spark's `ParseUrl`
//! reads it through `java.net.URI`.
//!
//! Written here because Spark's answers are `java.net.URI`'s: the raw (still escaped) path,
//! query, fragment, authority and user information; a host only for a server authority
//! (`http://my_host/` has none); and an invalid URL (a space, a bad `%` escape) is
//! `INVALID_URL` (NULL for `try_parse_url`, or with ANSI off). The parts are `HOST`, `PATH`,
//! `QUERY`, `REF`, `PROTOCOL`, `FILE`, `AUTHORITY` and `USERINFO`; `QUERY` with a key is the
//! value of `key=` in the query, found with Spark's pattern `(&|^)key=([^&]*)`.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::ArrayRef;
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, LastCompiled, ScalarFunction};
use crate::physical::PhysicalExpr;

/// `parse_url` (`fail`: an invalid URL raises) or `try_parse_url`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseUrlFn {
    /// An invalid URL raises `INVALID_URL` (`parse_url` under ANSI) rather than giving NULL.
    pub fail: bool,
}

impl ParseUrlFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        if self.fail {
            "parse_url"
        } else {
            "try_parse_url"
        }
    }

    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let url = args.str(0)?;
        let part = args.str(1)?;
        let key = if args.len() > 2 {
            Some(args.str(2)?)
        } else {
            None
        };
        let mut keys = LastCompiled::new(|k: &str| {
            regex::Regex::new(&format!("(&|^){k}=([^&]*)")).map_err(|e| {
                FerroError::Arithmetic(format!(
                    "[INVALID_PARAMETER_VALUE.PATTERN] The value of parameter(s) `regexp` in `parse_url` is invalid: '{k}': {e}"
                ))
            })
        });
        let mut out = StringBuilder::with_capacity(args.rows(), args.rows() * 8);
        for i in 0..args.rows() {
            let (Some(u), Some(p)) = (url.get(i), part.get(i)) else {
                out.append_null();
                continue;
            };
            let key = match &key {
                Some(k) => match k.get(i) {
                    Some(k) => Some(k),
                    None => {
                        out.append_null();
                        continue;
                    }
                },
                None => None,
            };
            let Some(parsed) = Uri::parse(u) else {
                if self.fail {
                    return Err(FerroError::Arithmetic(format!(
                        "[INVALID_URL] The url is invalid: {u}. Use `try_parse_url` to tolerate invalid URL and return NULL instead. SQLSTATE: 22P02"
                    )));
                }
                out.append_null();
                continue;
            };
            let value: Option<String> = match (p, key) {
                ("QUERY", Some(k)) => match parsed.query {
                    Some(q) => keys
                        .get(k)?
                        .captures(q)
                        .and_then(|c| c.get(2))
                        .map(|m| m.as_str().to_string()),
                    None => None,
                },
                (_, Some(_)) => None,
                ("HOST", None) => parsed.host.map(str::to_string),
                ("PATH", None) => parsed.path.map(str::to_string),
                ("QUERY", None) => parsed.query.map(str::to_string),
                ("REF", None) => parsed.fragment.map(str::to_string),
                ("PROTOCOL", None) => parsed.scheme.map(str::to_string),
                ("FILE", None) => parsed.path.map(|path| match parsed.query {
                    Some(q) => format!("{path}?{q}"),
                    None => path.to_string(),
                }),
                ("AUTHORITY", None) => parsed.authority.map(str::to_string),
                ("USERINFO", None) => parsed.user_info.map(str::to_string),
                _ => None,
            };
            out.append_option(value);
        }
        Ok(Arc::new(out.finish()))
    }
}

/// The raw components of a URI, as `java.net.URI` gives them.
#[derive(Debug, Default, PartialEq)]
struct Uri<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    user_info: Option<&'a str>,
    host: Option<&'a str>,
    path: Option<&'a str>,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

/// Whether `c` may appear in a URI as written (RFC 2396's characters `java.net.URI` accepts,
/// other non-ASCII characters included), `%` checked separately.
fn allowed(c: char) -> bool {
    if !c.is_ascii() {
        return !c.is_control() && !c.is_whitespace();
    }
    c.is_ascii_alphanumeric() || "-_.!~*'();/?:@&=+$,[]#%".contains(c)
}

/// Whether every `%` of `s` starts an escape of two hex digits.
fn escapes_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() {
                return false;
            }
            if !(b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit()) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

impl<'a> Uri<'a> {
    fn parse(s: &'a str) -> Option<Self> {
        if !s.chars().all(allowed) || !escapes_ok(s) {
            return None;
        }
        let mut u = Uri::default();
        let (rest, fragment) = match s.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (s, None),
        };
        if fragment.is_some_and(|f| f.contains('#')) {
            return None;
        }
        u.fragment = fragment;
        // A scheme: a letter, then letters, digits, `+`, `-`, `.`, before the first `:` that
        // comes before any `/`, `?`.
        let scheme_end = rest.find(':').filter(|&i| {
            i > 0
                && !rest[..i].contains(['/', '?'])
                && rest[..i].starts_with(|c: char| c.is_ascii_alphabetic())
        });
        let rest = match scheme_end {
            Some(i) => {
                let scheme = &rest[..i];
                if !scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                {
                    return None;
                }
                u.scheme = Some(scheme);
                &rest[i + 1..]
            }
            None => rest,
        };
        if u.scheme.is_some() && rest.is_empty() {
            return None;
        }
        if u.scheme.is_some() && !rest.starts_with('/') {
            // An opaque URI (`mailto:a@b`): no path, query or authority.
            return Some(u);
        }
        let (hier, query) = match rest.split_once('?') {
            Some((h, q)) => (h, Some(q)),
            None => (rest, None),
        };
        u.query = query;
        let path = if let Some(after) = hier.strip_prefix("//") {
            let end = after.find('/').unwrap_or(after.len());
            let authority = &after[..end];
            if !authority.is_empty() {
                u.authority = Some(authority);
                let (user, host_port) = match authority.rsplit_once('@') {
                    Some((user, hp)) => (Some(user), hp),
                    None => (None, authority),
                };
                // A server authority: a host name or address, an optional port.
                let host = match host_port.rsplit_once(':') {
                    Some((h, port)) if !h.ends_with(']') || host_port.starts_with('[') => {
                        port.chars().all(|c| c.is_ascii_digit()).then_some(h)
                    }
                    _ => Some(host_port),
                }
                .filter(|h| {
                    !h.is_empty()
                        && (h.starts_with('[')
                            || h.chars()
                                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'))
                });
                if let Some(h) = host {
                    u.host = Some(h);
                    u.user_info = user;
                }
            } else if u.scheme.is_some() && after[end..].is_empty() && query.is_none() {
                return None;
            }
            &after[end..]
        } else {
            hier
        };
        u.path = Some(path);
        Some(u)
    }
}

/// Binds `parse_url` and `try_parse_url`; other names are not this family's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let fail = match call.name {
        "parse_url" => call.ctx.ansi,
        "try_parse_url" => false,
        _ => return Ok(Bound::NotMine(args)),
    };
    call.arity(&args, 2, 3)?;
    let args = call.string_args(args)?;
    Ok(Bound::Done(call.function(
        ScalarFunction::Url(ParseUrlFn { fail }),
        args,
        DataType::Utf8,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_split_as_java_splits_them() {
        let u =
            Uri::parse("http://user:pw@spark.apache.org:80/path/p?query=1&k=v#Ref").expect("valid");
        assert_eq!(u.scheme, Some("http"));
        assert_eq!(u.authority, Some("user:pw@spark.apache.org:80"));
        assert_eq!(u.user_info, Some("user:pw"));
        assert_eq!(u.host, Some("spark.apache.org"));
        assert_eq!(u.path, Some("/path/p"));
        assert_eq!(u.query, Some("query=1&k=v"));
        assert_eq!(u.fragment, Some("Ref"));
        assert!(Uri::parse("inva lid://spark.apache.org/path?query=1").is_none());
        assert!(Uri::parse("http://a.com/%zz").is_none());
        let registry = Uri::parse("http://my_host.com/p").expect("valid");
        assert_eq!(registry.host, None);
        assert_eq!(registry.authority, Some("my_host.com"));
        let relative = Uri::parse("a/b?c=1").expect("valid");
        assert_eq!((relative.scheme, relative.path), (None, Some("a/b")));
    }
}
