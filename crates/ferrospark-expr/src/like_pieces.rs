//! `LIKE` patterns made of literal pieces between `%` wildcards (`'%special%requests%'`),
//! matched with one substring search per piece. arrow's `like` runs a pattern of more than one
//! piece as a regular expression, several times slower (TPC-H Q13's `o_comment NOT LIKE
//! '%special%requests%'` over 1.5M comments). Patterns with `_` or an escape, and the one-piece
//! shapes arrow already searches directly (`'a%'`, `'%a'`, `'%a%'`), stay with arrow.

use arrow_array::{Array, ArrayRef, BooleanArray};
use memchr::memmem::Finder;

/// A pattern of at least two literal pieces, each found after the one before.
pub(crate) struct LikePieces {
    /// The first piece must start the value.
    anchored_start: bool,
    /// The last piece must end the value.
    anchored_end: bool,
    pieces: Vec<Finder<'static>>,
}

impl LikePieces {
    /// The pieces of `pattern`, when it is only literal pieces and `%` (at least two pieces).
    pub(crate) fn parse(pattern: &str) -> Option<Self> {
        if pattern.contains(['_', '\\']) {
            return None;
        }
        let pieces: Vec<Finder<'static>> = pattern
            .split('%')
            .filter(|p| !p.is_empty())
            .map(|p| Finder::new(p.as_bytes()).into_owned())
            .collect();
        if pieces.len() < 2 {
            return None;
        }
        Some(Self {
            anchored_start: !pattern.starts_with('%'),
            anchored_end: !pattern.ends_with('%'),
            pieces,
        })
    }

    /// Whether `value` matches.
    pub(crate) fn matches(&self, value: &[u8]) -> bool {
        let mut pieces = &self.pieces[..];
        let (mut start, mut end) = (0, value.len());
        if self.anchored_start {
            let (first, rest) = pieces.split_first().expect("two pieces or more");
            if !value.starts_with(first.needle()) {
                return false;
            }
            start = first.needle().len();
            pieces = rest;
        }
        if self.anchored_end {
            let (last, rest) = pieces.split_last().expect("a piece left");
            if !value[start..].ends_with(last.needle()) {
                return false;
            }
            end = value.len() - last.needle().len();
            pieces = rest;
        }
        for p in pieces {
            match p.find(&value[start..end]) {
                Some(i) => start += i + p.needle().len(),
                None => return false,
            }
        }
        true
    }

    /// `values [NOT] LIKE pattern` for a string array (NULL where the value is), or `None`
    /// for another type.
    pub(crate) fn evaluate(&self, values: &ArrayRef, negated: bool) -> Option<BooleanArray> {
        // Every slot is tested, NULLs too (their bytes are some valid string): one pass
        // filling bits, the input's NULLs kept as they are.
        if !crate::types::is_string(values.data_type()) {
            return None;
        }
        let bits = crate::in_set::byte_hits(values, |_, v| self.matches(v) != negated)?;
        Some(BooleanArray::new(bits, values.logical_nulls()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::StringArray;
    use std::sync::Arc;

    fn like(value: &str, pattern: &str) -> bool {
        let p = LikePieces::parse(pattern).expect("pieces");
        p.matches(value.as_bytes())
    }

    #[test]
    fn pieces_are_found_in_order_and_anchors_hold() {
        assert!(like("x special y requests z", "%special%requests%"));
        assert!(!like("x requests y special z", "%special%requests%"));
        assert!(like("specialrequests", "%special%requests%"));
        assert!(like("ab", "a%b"));
        assert!(!like("aXb ", "a%b"));
        // Anchored pieces may not overlap: 'aba' has no room for 'ab' then 'ba'.
        assert!(!like("aba", "ab%ba"));
        assert!(like("abba", "ab%ba"));
        assert!(like("日本語のテキスト", "日本%テキ%"));
        assert!(like("a%%b", "a%%b"));
        // Not pieces: `_`, escapes, a single piece.
        assert!(LikePieces::parse("%a_b%").is_none());
        assert!(LikePieces::parse("%a\\%b%").is_none());
        assert!(LikePieces::parse("%ab%").is_none());
    }

    #[test]
    fn agrees_with_arrows_like_with_nulls_and_negation() {
        let values: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a special request"),
            Some("special requests pending"),
            None,
            Some(""),
            Some("requests special requests"),
            Some("ünï special ü requests ü"),
        ]));
        for pattern in [
            "%special%requests%",
            "a%request",
            "%special%requests",
            "re%sp%",
            "%ü%ü%",
        ] {
            let p = LikePieces::parse(pattern).expect("pieces");
            let scalar = StringArray::new_scalar(pattern);
            for negated in [false, true] {
                let want = if negated {
                    arrow_string::like::nlike(&values, &scalar)
                } else {
                    arrow_string::like::like(&values, &scalar)
                }
                .expect("arrow's like");
                assert_eq!(
                    p.evaluate(&values, negated),
                    Some(want),
                    "{pattern} {negated}"
                );
            }
        }
    }
}
