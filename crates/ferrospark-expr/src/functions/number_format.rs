//! Spark's number formats for `to_number` / `try_to_number`: `0` and `9` digits, `.` / `D`
//! decimal point, `,` / `G` thousands separators, `$`, and the signs `S`, `MI` and `PR`
//! (angle brackets for a negative number), read the way Spark's `ToNumberParser` reads them.
//! The format fixes the result type: DECIMAL(all digits, digits after the point).

use std::sync::Arc;

use arrow_array::{ArrayRef, Decimal128Array};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{Args, LastCompiled};

/// One piece of a number format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// Digits and thousands separators, run together; each digit count as it reads
    /// right to left (`exact` for a run starting with `0` before the point).
    Digits {
        /// the digit runs, last one first: (count, exactly that many)
        groups: Vec<(usize, bool)>,
        /// a separator at either end or two in a row
        bad_separators: bool,
        /// how many separators
        separators: usize,
    },
    Point,
    Dollar,
    /// `S`: an optional `+` or `-`
    Sign,
    /// `MI`: an optional `-`
    Minus,
    /// `PR`'s `<`, placed first
    Open,
    /// `PR`'s `>`, placed last
    Close,
    /// any other character
    Other(char),
}

impl Token {
    /// How Spark's messages name a token.
    fn describe(&self) -> String {
        match self {
            Token::Digits { .. } => "digit sequence".into(),
            Token::Point => ". or D".into(),
            Token::Dollar => "$".into(),
            Token::Sign => "S".into(),
            Token::Minus => "MI".into(),
            Token::Open | Token::Close => "PR".into(),
            Token::Other(c) => format!("character '{c}''"),
        }
    }

    fn same_kind(&self, other: &Token) -> bool {
        match (self, other) {
            (Token::Digits { .. }, Token::Digits { .. }) => true,
            (a, b) => a == b,
        }
    }
}

/// A number format, checked and ready to read text.
#[derive(Debug, Clone, PartialEq)]
pub struct NumberFormat {
    /// the format as written (upper-cased), for messages
    text: String,
    tokens: Vec<Token>,
    /// all the format's digits
    pub precision: u8,
    /// the digits after the decimal point
    pub scale: i8,
}

fn invalid(format: &str, sub: &str, detail: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[INVALID_FORMAT.{sub}] The format is invalid: '{format}'. {detail} SQLSTATE: 42601"
    ))
}

impl NumberFormat {
    /// Reads and checks `format` (case-insensitive) as Spark's `to_number` does.
    pub fn parse(format: &str) -> Result<NumberFormat> {
        let text = format.to_uppercase();
        let chars: Vec<char> = text.chars().collect();
        let mut raw: Vec<Token> = Vec::new();
        // Digit runs as (count, exact) with separators marked as count 0.
        let mut point = false;
        let mut i = 0;
        let mut runs: Vec<Option<(usize, bool)>> = Vec::new();
        let flush = |runs: &mut Vec<Option<(usize, bool)>>, raw: &mut Vec<Token>| {
            if runs.is_empty() {
                return;
            }
            let seps = runs.iter().filter(|r| r.is_none()).count();
            let bad = matches!(runs.first(), Some(None))
                || matches!(runs.last(), Some(None))
                || runs.windows(2).any(|w| w[0].is_none() && w[1].is_none());
            let groups = runs.iter().rev().flatten().copied().collect();
            raw.push(Token::Digits {
                groups,
                bad_separators: bad,
                separators: seps,
            });
            runs.clear();
        };
        let mut opens = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '0' | '9' => {
                    let start = i;
                    while i < chars.len() && matches!(chars[i], '0' | '9') {
                        i += 1;
                    }
                    runs.push(Some((i - start, c == '0' && !point)));
                    continue;
                }
                ',' | 'G' => {
                    runs.push(None);
                    i += 1;
                    continue;
                }
                _ => {}
            }
            flush(&mut runs, &mut raw);
            let next = chars.get(i + 1).copied();
            match c {
                '.' | 'D' => {
                    raw.push(Token::Point);
                    point = true;
                }
                '$' => raw.push(Token::Dollar),
                'S' => raw.push(Token::Sign),
                'M' if next == Some('I') => {
                    raw.push(Token::Minus);
                    i += 1;
                }
                'P' if next == Some('R') => {
                    opens += 1;
                    raw.push(Token::Close);
                    i += 1;
                }
                other => raw.push(Token::Other(other)),
            }
            i += 1;
        }
        flush(&mut runs, &mut raw);
        let mut tokens = vec![Token::Open; opens];
        tokens.extend(raw);

        let digits = |t: &Token| match t {
            Token::Digits { groups, .. } => groups.iter().map(|g| g.0).sum(),
            _ => 0,
        };
        let precision: usize = tokens.iter().map(digits).sum();
        let point_at = tokens.iter().position(|t| *t == Token::Point);
        let scale: usize = point_at
            .map(|p| tokens[p..].iter().map(digits).sum())
            .unwrap_or(0);

        if text.is_empty() {
            return Err(invalid(
                &text,
                "EMPTY",
                "The number format string cannot be empty.",
            ));
        }
        let first_digits = tokens
            .iter()
            .position(|t| matches!(t, Token::Digits { .. }));
        let Some(first_digits) = first_digits else {
            return Err(invalid(
                &text,
                "WRONG_NUM_DIGIT",
                "The format string requires at least one number digit.",
            ));
        };
        if let Some(dollar) = tokens.iter().position(|t| *t == Token::Dollar) {
            if first_digits < dollar {
                return Err(invalid(
                    &text,
                    "CUR_MUST_BEFORE_DIGIT",
                    "Currency characters must appear before digits in the number format.",
                ));
            }
            if point_at.is_some_and(|p| p < dollar) {
                return Err(invalid(
                    &text,
                    "CUR_MUST_BEFORE_DEC",
                    "Currency characters must appear before any decimal point in the number format.",
                ));
            }
        }
        for (k, t) in tokens.iter().enumerate() {
            if let Token::Digits {
                bad_separators,
                separators,
                ..
            } = t
            {
                let after = point_at.is_some_and(|p| k > p);
                if !after && *bad_separators {
                    return Err(invalid(
                        &text,
                        "CONT_THOUSANDS_SEPS",
                        "Thousands separators (, or G) must have digits in between them in the number format.",
                    ));
                }
                if after && *separators > 0 {
                    return Err(invalid(
                        &text,
                        "THOUSANDS_SEPS_MUST_BEFORE_DEC",
                        "Thousands separators (, or G) may not appear after the decimal point in the number format.",
                    ));
                }
            }
        }
        for once in [
            Token::Point,
            Token::Sign,
            Token::Minus,
            Token::Dollar,
            Token::Close,
        ] {
            if tokens.iter().filter(|t| **t == once).count() > 1 {
                return Err(invalid(
                    &text,
                    "WRONG_NUM_TOKEN",
                    &format!(
                        "At most one {} is allowed in the number format.",
                        once.describe()
                    ),
                ));
            }
        }
        // The order Spark allows: [PR<] [MI|S] [$] [digits] [.] [digits] [$] [PR>|MI|S].
        let digits_kind = Token::Digits {
            groups: Vec::new(),
            bad_separators: false,
            separators: 0,
        };
        let allowed: [&[Token]; 8] = [
            &[Token::Open],
            &[Token::Minus, Token::Sign],
            &[Token::Dollar],
            std::slice::from_ref(&digits_kind),
            &[Token::Point],
            std::slice::from_ref(&digits_kind),
            &[Token::Dollar],
            &[Token::Minus, Token::Sign, Token::Close],
        ];
        let mut k = 0;
        for slot in allowed {
            if k < tokens.len() && slot.iter().any(|a| a.same_kind(&tokens[k])) {
                k += 1;
            }
        }
        if k < tokens.len() {
            return Err(invalid(
                &text,
                "UNEXPECTED_TOKEN",
                &format!(
                    "Found the unexpected {} in the format string; the structure of the format string must match: `[MI|S]` `[$]` `[0|9|G|,]*` `[.|D]` `[0|9]*` `[$]` `[PR|MI|S]`.",
                    tokens[k].describe()
                ),
            ));
        }
        if precision > 38 {
            return Err(FerroError::Analysis(format!(
                "[DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION] Decimal precision {precision} exceeds max precision 38. SQLSTATE: 22003"
            )));
        }
        Ok(NumberFormat {
            text,
            tokens,
            precision: precision as u8,
            scale: scale as i8,
        })
    }

    /// The result type.
    pub fn data_type(&self) -> DataType {
        DataType::Decimal128(self.precision, self.scale)
    }

    /// The unscaled value `input` reads as, or `None` when it does not match the format.
    pub fn read(&self, input: &str) -> Option<i128> {
        let chars: Vec<char> = input.chars().collect();
        let mut at = 0;
        let mut before = String::new();
        let mut after = String::new();
        let mut point = false;
        let mut negative = false;
        let (mut opened, mut closed) = (false, false);
        for t in &self.tokens {
            let c = chars.get(at).copied();
            match t {
                Token::Digits { groups, .. } => {
                    // Digits, separators and whitespace as far as they go; group sizes are
                    // compared right to left so leading optional digits may be missing.
                    let mut sizes = Vec::new();
                    let mut current = 0;
                    while let Some(&c) = chars.get(at) {
                        if java_whitespace(c) {
                        } else if c.is_ascii_digit() {
                            current += 1;
                            if point {
                                after.push(c);
                            } else {
                                before.push(c);
                            }
                        } else if c == ',' {
                            sizes.push(current);
                            current = 0;
                        } else {
                            break;
                        }
                        at += 1;
                    }
                    sizes.push(current);
                    sizes.reverse();
                    if sizes.len() > groups.len() {
                        return None;
                    }
                    for (k, &(want, exact)) in groups.iter().enumerate() {
                        let got = sizes.get(k).copied().unwrap_or(0);
                        if (exact && got != want) || got > want {
                            return None;
                        }
                    }
                }
                Token::Point => {
                    if c == Some('.') {
                        point = true;
                        at += 1;
                    }
                }
                Token::Dollar => match c {
                    Some('$') => at += 1,
                    Some(_) => return None,
                    None => {}
                },
                Token::Sign => match c {
                    Some('+') => at += 1,
                    Some('-') => {
                        negative = !negative;
                        at += 1;
                    }
                    _ => {}
                },
                Token::Minus => {
                    if c == Some('-') {
                        negative = !negative;
                        at += 1;
                    }
                }
                Token::Open => {
                    if c == Some('<') {
                        if opened {
                            return None;
                        }
                        opened = true;
                        at += 1;
                    }
                }
                Token::Close => {
                    if c == Some('>') {
                        if !opened {
                            return None;
                        }
                        closed = true;
                        negative = !negative;
                        at += 1;
                    }
                }
                Token::Other(_) => return None,
            }
        }
        if at < chars.len() || opened != closed || (before.is_empty() && after.is_empty()) {
            return None;
        }
        let scale = self.scale as usize;
        let mut unscaled: i128 = 0;
        let padded = after.chars().chain(std::iter::repeat('0')).take(scale);
        for d in before.chars().chain(padded) {
            unscaled = unscaled
                .checked_mul(10)?
                .checked_add(d as i128 - '0' as i128)?;
        }
        Some(if negative { -unscaled } else { unscaled })
    }

    /// Spark's error for text the format does not match.
    pub fn mismatch(&self, input: &str) -> FerroError {
        FerroError::Arithmetic(format!(
            "[INVALID_FORMAT.MISMATCH_INPUT] The format is invalid: {}. The input \"STRING\" {input} does not match the format. SQLSTATE: 42601",
            self.text
        ))
    }
}

/// Java's `Character.isWhitespace`: Unicode spaces except the no-break ones.
fn java_whitespace(c: char) -> bool {
    (c.is_whitespace() && !matches!(c, '\u{A0}' | '\u{2007}' | '\u{202F}'))
        || matches!(c, '\u{1C}'..='\u{1F}')
}

/// `to_number(s, fmt)` / `try_to_number(s, fmt)` over a batch: the format is the folded
/// second argument; `fail` raises on text that does not match (else NULL).
pub(crate) fn to_number(args: &Args, fail: bool) -> Result<ArrayRef> {
    let s = args.str(0)?;
    let f = args.str(1)?;
    let mut cache = LastCompiled::new(NumberFormat::parse);
    let mut out = Vec::with_capacity(args.rows());
    let mut ty = None;
    for i in 0..args.rows() {
        let (Some(t), Some(fmt)) = (s.get(i), f.get(i)) else {
            out.push(None);
            continue;
        };
        let format = cache.get(fmt)?;
        ty.get_or_insert((format.precision, format.scale));
        match format.read(t) {
            Some(v) => out.push(Some(v)),
            None if fail => return Err(format.mismatch(t)),
            None => out.push(None),
        }
    }
    let (p, s) = match (ty, args.const_str(1)) {
        (Some(t), _) => t,
        (None, Some(fmt)) => {
            let f = NumberFormat::parse(fmt)?;
            (f.precision, f.scale)
        }
        (None, None) => (10, 0),
    };
    Ok(Arc::new(
        Decimal128Array::from(out).with_precision_and_scale(p, s)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &str, format: &str) -> Option<i128> {
        NumberFormat::parse(format).expect("format").read(input)
    }

    #[test]
    fn reads_spark_examples() {
        assert_eq!(read("454", "000"), Some(454));
        assert_eq!(read("454.2", "000.0"), Some(4542));
        assert_eq!(read("12,454", "00,000"), Some(12454));
        assert_eq!(read("$78.12", "$00.00"), Some(7812));
        assert_eq!(read("-454", "S000"), Some(-454));
        assert_eq!(read("12,454.8-", "00,000.9MI"), Some(-124548));
        assert_eq!(read("<00,454.8>", "00,000.9PR"), Some(-4548));
        assert_eq!(read("5", "9.9"), Some(50));
        assert_eq!(read("1,2", "99,99"), Some(12));
        assert_eq!(read("  454", "9999"), Some(454));
        assert_eq!(read("454", "00"), None);
        assert_eq!(read("45", "000"), None);
        assert_eq!(read("1", "$9"), None);
        assert_eq!(read("1.2345", "9.99"), None);
    }

    #[test]
    fn types_and_format_errors() {
        let f = NumberFormat::parse("00,000.9pr").expect("format");
        assert_eq!(f.data_type(), DataType::Decimal128(6, 1));
        for (fmt, class) in [
            ("", "EMPTY"),
            ("x", "WRONG_NUM_DIGIT"),
            ("9$", "CUR_MUST_BEFORE_DIGIT"),
            ("9,.9", "CONT_THOUSANDS_SEPS"),
            ("9.9,9", "THOUSANDS_SEPS_MUST_BEFORE_DEC"),
            ("9..9", "WRONG_NUM_TOKEN"),
            ("$S99", "UNEXPECTED_TOKEN"),
        ] {
            let e = NumberFormat::parse(fmt).expect_err(fmt).to_string();
            assert!(e.contains(class), "{fmt}: {e}");
        }
    }
}
