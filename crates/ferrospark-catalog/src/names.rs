//! Spark's name rules: case-insensitive names, backquoted identifiers, multi-part names,
//! which names a database or table may have, `LIKE` patterns and partition directory names.

use ferrospark_common::{FerroError, Result};

pub use ferrospark_common::hive_paths::{
    escape_path_name, unescape_path_name, DEFAULT_PARTITION_NAME,
};

/// Splits a possibly qualified name (`db.t`, `` `my db`.`t.x` ``, ``a.`b``c` ``) into its
/// parts, backquotes removed (a doubled backquote is one). Case is kept.
pub fn parse_multipart(text: &str) -> Result<Vec<String>> {
    let bad = |why: &str| {
        FerroError::Analysis(format!(
            "[PARSE_SYNTAX_ERROR] Syntax error at or near '{text}': {why}. Quote a name with backquotes: `my table`"
        ))
    };
    let mut parts = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'`') {
            chars.next();
            loop {
                match chars.next() {
                    Some('`') if chars.peek() == Some(&'`') => {
                        chars.next();
                        part.push('`');
                    }
                    Some('`') => break,
                    Some(c) => part.push(c),
                    None => return Err(bad("an unclosed backquote")),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                if c == '`' || c.is_whitespace() {
                    return Err(bad("a character that needs backquotes"));
                }
                part.push(c);
                chars.next();
            }
            if part.is_empty() {
                return Err(bad("an empty name part"));
            }
        }
        parts.push(part);
        match chars.next() {
            None => return Ok(parts),
            Some('.') => {}
            Some(_) => return Err(bad("text after a quoted name")),
        }
    }
}

/// A name as the catalog stores it (Spark's `spark.sql.caseSensitive=false`: lower case).
pub fn normalize(name: &str) -> String {
    name.to_lowercase()
}

/// Backquotes a name as Spark prints it (`` `a``b` `` for a name holding a backquote).
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Checks that `name` may name a database or table (`what`, for the caller's reading):
/// Spark's metastore accepts letters, digits and underscores only, which also keeps a
/// managed table's directory inside its database's.
pub fn validate(name: &str, what: &str) -> Result<()> {
    let _ = what;
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(FerroError::Analysis(format!(
            "[INVALID_SCHEMA_OR_RELATION_NAME] {} is not a valid name for tables/schemas. Valid names only contain alphabet characters, numbers and _. SQLSTATE: 42602",
            // Spark prints the name split at its dots.
            name.split('.').map(quote).collect::<Vec<_>>().join(".")
        )))
    }
}

/// Spark's `LIKE` pattern of `SHOW DATABASES / TABLES / ...`: `|` separates alternatives,
/// `*` is any text, the rest a case-insensitive regular expression matched whole.
#[derive(Debug, Clone)]
pub struct NamePattern(Vec<regex::Regex>);

impl NamePattern {
    /// Compiles `pattern`; alternatives that are not valid expressions match nothing, as
    /// Spark's do.
    pub fn new(pattern: &str) -> Self {
        Self(
            pattern
                .trim()
                .split('|')
                .filter_map(|alt| {
                    let body = alt.trim().replace('*', ".*");
                    regex::Regex::new(&format!("(?i)^(?:{body})$")).ok()
                })
                .collect(),
        )
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        self.0.iter().any(|r| r.is_match(name))
    }
}

/// Keeps the names matching `pattern` (all of them without one), sorted.
pub fn filter_names(mut names: Vec<String>, pattern: Option<&str>) -> Vec<String> {
    if let Some(p) = pattern {
        let p = NamePattern::new(p);
        names.retain(|n| p.matches(n));
    }
    names.sort();
    names
}

/// A partition's directory path relative to its table: `p=1/q=a%2Fb`.
pub fn partition_path(spec: &[(String, Option<String>)]) -> String {
    spec.iter()
        .map(|(k, v)| {
            let v = match v.as_deref() {
                None | Some("") => DEFAULT_PARTITION_NAME.to_string(),
                Some(v) => escape_path_name(v),
            };
            format!("{}={v}", escape_path_name(k))
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Parses [`partition_path`]'s form back into a spec.
pub fn parse_partition_path(path: &str) -> Option<Vec<(String, Option<String>)>> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|seg| {
            let (k, v) = seg.split_once('=')?;
            let v = (v != DEFAULT_PARTITION_NAME).then(|| unescape_path_name(v));
            Some((unescape_path_name(k), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_names_split_on_dots_outside_backquotes() {
        let p = |s: &str| parse_multipart(s).expect(s);
        assert_eq!(p("db.t"), ["db", "t"]);
        assert_eq!(p("`my db`.`t.x`"), ["my db", "t.x"]);
        assert_eq!(p("a.`b``c`"), ["a", "b`c"]);
        assert_eq!(p("global_temp.v"), ["global_temp", "v"]);
        for bad in ["", "a..b", "`a", "a b", "`a`b"] {
            assert!(parse_multipart(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_word_characters_name_tables() {
        assert!(validate("Sales_2024", "table").is_ok());
        for bad in ["", "a.b", "../x", "a/b", "a b", "drop table x; --", "a\0"] {
            let e = validate(bad, "table").expect_err(bad).to_string();
            assert!(e.contains("INVALID_SCHEMA_OR_RELATION_NAME"), "{e}");
        }
    }

    #[test]
    fn like_patterns_are_alternatives_of_globs_ignoring_case() {
        let p = NamePattern::new("sa*|T1");
        assert!(p.matches("sales") && p.matches("SA") && p.matches("t1"));
        assert!(!p.matches("t10") && !p.matches("xsales"));
        assert!(
            !NamePattern::new("(").matches("("),
            "a bad expression matches nothing"
        );
        assert_eq!(
            filter_names(vec!["b".into(), "a".into(), "c".into()], Some("a|b")),
            ["a", "b"]
        );
    }

    #[test]
    fn partition_paths_escape_and_round_trip() {
        let spec = vec![
            ("p".to_string(), Some("a/b=c%".to_string())),
            ("q".to_string(), None),
            ("r".to_string(), Some("x y".to_string())),
        ];
        let path = partition_path(&spec);
        assert_eq!(path, "p=a%2Fb%3Dc%25/q=__HIVE_DEFAULT_PARTITION__/r=x y");
        assert_eq!(parse_partition_path(&path), Some(spec));
        assert_eq!(unescape_path_name("100%"), "100%");
    }
}
