//! Join hints in SQL text: `/*+ BROADCAST(t) */`, `MERGE(t)`, `SHUFFLE_HASH(t)`,
//! `SHUFFLE_REPLICATE_NL(t)` and their aliases. The tokenizer drops comments, so hints are read
//! from the text itself; each names relations (by alias or table name) whose joins use the
//! strategy, as Spark's `ResolveJoinStrategyHints` applies them.

use ferrospark_common::{FerroError, Result};
use ferrospark_join::JoinStrategy;

/// Every `(relation, strategy)` the text's hint comments name, relations lower-cased.
pub(crate) fn join_hints(text: &str) -> Result<Vec<(String, JoinStrategy)>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*+") {
        let body_start = start + 3;
        let end = rest[body_start..].find("*/").ok_or_else(|| {
            FerroError::Analysis(format!(
                "[PARSE_SYNTAX_ERROR] unterminated hint comment in \"{text}\""
            ))
        })?;
        let body = &rest[body_start..body_start + end];
        let mut chars = body.char_indices().peekable();
        let mut name = String::new();
        while let Some((i, c)) = chars.next() {
            if c == '(' {
                let close = body[i..].find(')').map(|j| i + j).ok_or_else(|| {
                    FerroError::Analysis(format!(
                        "[PARSE_SYNTAX_ERROR] hint `{}` is missing its `)`",
                        name.trim()
                    ))
                })?;
                if let Some(s) = JoinStrategy::from_hint(name.trim()) {
                    for rel in body[i + 1..close].split(',') {
                        let rel = rel.trim().trim_matches('`').to_ascii_lowercase();
                        if !rel.is_empty() {
                            out.push((rel, s));
                        }
                    }
                }
                name.clear();
                while chars.peek().is_some_and(|(j, _)| *j <= close) {
                    chars.next();
                }
            } else if c == ',' || c.is_whitespace() {
                name.clear();
            } else {
                name.push(c);
            }
        }
        rest = &rest[body_start + end + 2..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_spark_hints() {
        let h =
            join_hints("SELECT /*+ BROADCAST(d), MERGE(f, g) REPARTITION(3) */ * FROM f JOIN d")
                .expect("parses");
        assert_eq!(
            h,
            vec![
                ("d".to_string(), JoinStrategy::BroadcastHash),
                ("f".to_string(), JoinStrategy::SortMerge),
                ("g".to_string(), JoinStrategy::SortMerge),
            ]
        );
        assert!(join_hints("SELECT 1 /* plain comment */")
            .expect("ok")
            .is_empty());
        assert!(join_hints("SELECT /*+ BROADCAST(t) ").is_err());
    }
}
