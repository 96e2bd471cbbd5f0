//! Spark SQL's dialect for `sqlparser`: Databricks' rules (backquoted identifiers, backslash
//! escapes, `<=>`, `!`), plus what Spark accepts and Databricks' dialect does not: the integer
//! division operator `a DIV b` and interval literals without a unit qualifier
//! (`INTERVAL '1 day 2 hours'`). [`tokenize`] adds Spark's typed numeric literals (`1L`, `6S`,
//! `25Y`, `1.5D`, `2F`, `1.5BD`, `1E2BD`), which sqlparser splits into a number and an alias.

use sqlparser::ast::{BinaryOperator, Expr};
use sqlparser::dialect::{DatabricksDialect, Dialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, TokenizerError};

/// The tokens of a Spark SQL text, Spark's typed numeric literals each one
/// `Token::Number` whose text keeps its suffix (`"6S"`, `"1.5BD"`; `1L` as sqlparser's long
/// number), for `Parser::with_tokens_with_locations`.
pub fn tokenize(text: &str) -> Result<Vec<TokenWithSpan>, TokenizerError> {
    // Strings come raw and are unescaped by Spark's rules (`spark_strings`).
    let tokens = spark_strings(
        Tokenizer::new(&SparkDialect, text)
            .with_unescape(false)
            .tokenize_with_location()?,
    );
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    for t in tokens {
        if let Token::Word(w) = &t.token {
            if w.quote_style.is_none() {
                // `1L`, `1.5D`: sqlparser reads a number glued to letters as one word.
                if let Some(number) = typed_number(&w.value) {
                    out.push(TokenWithSpan::new(number, t.span));
                    continue;
                }
                // `1E2BD`, `1e10D`: a number with an exponent, then the suffix as a word.
                if let Some(prev) = out.last_mut() {
                    if let Token::Number(n, false) = &prev.token {
                        if prev.span.end == t.span.start
                            && is_suffix(&w.value)
                            && n.bytes()
                                .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b))
                        {
                            let merged = typed_number(&format!("{n}{}", w.value));
                            if let Some(number) = merged {
                                prev.token = number;
                                prev.span.end = t.span.end;
                                continue;
                            }
                        }
                    }
                }
            }
        }
        out.push(t);
    }
    Ok(cross_join_on(inline_tables(interval_types(ltz_literals(
        bang_not(out),
    )))))
}

/// `a CROSS JOIN b ON cond`, which Spark reads as an inner join on `cond` (sqlparser takes no
/// ON after CROSS JOIN): the CROSS becomes INNER when an ON follows the joined relation.
fn cross_join_on(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let word = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    for (n, &i) in significant.iter().enumerate() {
        if !word(&tokens[i].token, Keyword::CROSS)
            || !significant
                .get(n + 1)
                .is_some_and(|&j| word(&tokens[j].token, Keyword::JOIN))
        {
            continue;
        }
        let mut depth = 0i32;
        for &j in &significant[n + 2..] {
            let t = &tokens[j].token;
            match t {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth < 0 {
                        break;
                    }
                }
                Token::Comma | Token::SemiColon | Token::EOF if depth == 0 => break,
                Token::Word(w) if depth == 0 && w.quote_style.is_none() => {
                    if w.keyword == Keyword::ON {
                        tokens[i].token = Token::make_keyword("INNER");
                        break;
                    }
                    if matches!(
                        w.keyword,
                        Keyword::JOIN
                            | Keyword::WHERE
                            | Keyword::GROUP
                            | Keyword::ORDER
                            | Keyword::LIMIT
                            | Keyword::UNION
                            | Keyword::HAVING
                            | Keyword::CROSS
                            | Keyword::LEFT
                            | Keyword::RIGHT
                            | Keyword::FULL
                            | Keyword::INNER
                            | Keyword::NATURAL
                            | Keyword::USING
                    ) {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    tokens
}

/// A string literal's text as Spark's `unescapeSQLString` reads it: `\uXXXX` and three-digit
/// octal (`\110`) characters, `\n` and the other C escapes, `\%` and `\_` kept with their
/// backslash (LIKE patterns read them), any other escaped character as itself. A doubled
/// quote is no escape in Spark: `'it''s'` is the two literals `'it'` and `'s'`, joined.
pub fn spark_unescape(raw: &str, quote: char) -> String {
    let c: Vec<char> = raw.chars().collect();
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == quote {
            // Spark 4 reads a doubled quote as one (`'it''s'` is `it's`).
            if c.get(i + 1) == Some(&quote) {
                out.push(quote);
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if ch != '\\' || i + 1 >= c.len() {
            out.push(ch);
            i += 1;
            continue;
        }
        let hex4 = (c.get(i + 1) == Some(&'u') && i + 5 < c.len())
            .then(|| c[i + 2..i + 6].iter().collect::<String>())
            .and_then(|h| u32::from_str_radix(&h, 16).ok())
            .and_then(char::from_u32);
        if let Some(u) = hex4 {
            out.push(u);
            i += 6;
            continue;
        }
        let octal = (i + 3 < c.len()
            && matches!(c[i + 1], '0'..='1')
            && matches!(c[i + 2], '0'..='7')
            && matches!(c[i + 3], '0'..='7'))
        .then(|| {
            let d = |k: usize| c[i + k] as u32 - '0' as u32;
            (d(1) << 6) + (d(2) << 3) + d(3)
        })
        .and_then(char::from_u32);
        if let Some(o) = octal {
            out.push(o);
            i += 4;
            continue;
        }
        match c[i + 1] {
            '0' => out.push('\0'),
            'b' => out.push('\u{8}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'Z' => out.push('\u{1a}'),
            '%' => out.push_str("\\%"),
            '_' => out.push_str("\\_"),
            other => out.push(other),
        }
        i += 2;
    }
    out
}

/// String literals unescaped as Spark does, and adjacent ones joined (`'a' 'b'` is `'ab'`,
/// Spark's `stringLit+`).
fn spark_strings(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    for mut t in tokens {
        let (text, double) = match &t.token {
            Token::SingleQuotedString(s) => (spark_unescape(s, '\''), false),
            Token::DoubleQuotedString(s) => (spark_unescape(s, '"'), true),
            _ => {
                out.push(t);
                continue;
            }
        };
        // The previous token that is not whitespace: joined when it is a string too.
        let prev = out
            .iter()
            .rposition(|p| !matches!(p.token, Token::Whitespace(_)));
        if let Some(k) = prev {
            if let Token::SingleQuotedString(before) | Token::DoubleQuotedString(before) =
                &mut out[k].token
            {
                before.push_str(&text);
                out[k].span.end = t.span.end;
                out.truncate(k + 1);
                continue;
            }
        }
        t.token = if double {
            Token::DoubleQuotedString(text)
        } else {
            Token::SingleQuotedString(text)
        };
        out.push(t);
    }
    out
}

/// Whether `text` writes an infix `!` for NOT (`1 ! BETWEEN 0 AND 2`, `x IS ! NULL`), which
/// Spark 4 refuses unless `spark.sql.legacy.bangEqualsNot` is set.
pub fn bang_before_predicate(text: &str) -> bool {
    match Tokenizer::new(&SparkDialect, text).tokenize_with_location() {
        Ok(tokens) => bang_positions(&tokens).next().is_some(),
        Err(_) => false,
    }
}

/// Where `tokens` hold an infix `!` for NOT: after an operand before BETWEEN / IN / LIKE
/// (and the regex forms), or after IS before NULL / TRUE / FALSE / UNKNOWN / DISTINCT. A
/// prefix `!` (`! true`) is sqlparser's own NOT and not among them.
fn bang_positions(tokens: &[TokenWithSpan]) -> impl Iterator<Item = usize> + '_ {
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&k| !matches!(tokens[k].token, Token::Whitespace(_)))
        .collect();
    (1..significant.len().saturating_sub(1)).filter_map(move |s| {
        let at = significant[s];
        if tokens[at].token != Token::ExclamationMark {
            return None;
        }
        let (prev, next) = (
            &tokens[significant[s - 1]].token,
            &tokens[significant[s + 1]].token,
        );
        let Token::Word(next) = next else {
            return None;
        };
        if next.quote_style.is_some() {
            return None;
        }
        let infix = match next.keyword {
            Keyword::NULL
            | Keyword::TRUE
            | Keyword::FALSE
            | Keyword::UNKNOWN
            | Keyword::DISTINCT => {
                matches!(prev, Token::Word(w) if w.keyword == Keyword::IS)
            }
            Keyword::BETWEEN
            | Keyword::IN
            | Keyword::LIKE
            | Keyword::ILIKE
            | Keyword::RLIKE
            | Keyword::REGEXP => ends_operand(prev),
            _ => false,
        };
        infix.then_some(at)
    })
}

/// Spark's legacy `!` for NOT before a predicate keyword: `1 ! BETWEEN 0 AND 2`, `x ! IN
/// (...)`, `s ! LIKE p`, `x IS ! NULL` (the SQL planner refuses it first unless
/// `spark.sql.legacy.bangEqualsNot` is set, as Spark 4 does).
fn bang_not(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let at: Vec<usize> = bang_positions(&tokens).collect();
    for i in at {
        tokens[i].token = Token::make_keyword("NOT");
    }
    tokens
}

/// `TIMESTAMP_LTZ '...'`: Spark's typed literal of its default timestamp type, which sqlparser
/// does not know as a type name; read as `TIMESTAMP '...'` (the name Spark prints for it too).
fn ltz_literals(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    for i in 0..tokens.len() {
        let is_ltz = matches!(&tokens[i].token, Token::Word(w)
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("TIMESTAMP_LTZ"));
        if !is_ltz {
            continue;
        }
        let next = tokens[i + 1..]
            .iter()
            .find(|t| !matches!(t.token, Token::Whitespace(_)));
        if next.is_some_and(|t| {
            matches!(
                t.token,
                Token::SingleQuotedString(_) | Token::DoubleQuotedString(_)
            )
        }) {
            tokens[i].token = Token::make_keyword("TIMESTAMP");
        }
    }
    tokens
}

/// `INTERVAL YEAR TO MONTH`, `INTERVAL DAY` ... where a type is written (after `AS` in a
/// cast, after `::`), as one word sqlparser reads as a type name (`INTERVAL_YEAR_TO_MONTH`).
fn interval_types(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let is_unit = |t: &Token| {
        word(t).is_some_and(|w| {
            matches!(
                w.as_str(),
                "YEAR" | "MONTH" | "DAY" | "HOUR" | "MINUTE" | "SECOND"
            )
        })
    };
    if !tokens
        .iter()
        .any(|t| word(&t.token).as_deref() == Some("INTERVAL"))
    {
        return tokens;
    }
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    // Indexes of the next non-whitespace tokens.
    let next = |from: usize| {
        (from..tokens.len()).find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
    };
    while i < tokens.len() {
        let t = &tokens[i];
        let typed_position = out
            .iter()
            .rev()
            .find(|p| !matches!(p.token, Token::Whitespace(_)))
            .is_some_and(|p| {
                matches!(p.token, Token::DoubleColon) || word(&p.token).as_deref() == Some("AS")
            });
        if typed_position && word(&t.token).as_deref() == Some("INTERVAL") {
            if let Some(u1) = next(i + 1).filter(|&j| is_unit(&tokens[j].token)) {
                let mut name = format!("INTERVAL_{}", word(&tokens[u1].token).unwrap_or_default());
                let mut end = u1;
                if let Some(to) =
                    next(u1 + 1).filter(|&j| word(&tokens[j].token).as_deref() == Some("TO"))
                {
                    if let Some(u2) = next(to + 1).filter(|&j| is_unit(&tokens[j].token)) {
                        name.push_str(&format!(
                            "_TO_{}",
                            word(&tokens[u2].token).unwrap_or_default()
                        ));
                        end = u2;
                    }
                }
                let mut merged = TokenWithSpan::new(Token::make_word(&name, None), t.span);
                merged.span.end = tokens[end].span.end;
                out.push(merged);
                i = end + 1;
                continue;
            }
        }
        out.push(t.clone());
        i += 1;
    }
    out
}

/// Spark's inline tables, in the form sqlparser reads: rows without parentheses
/// (`VALUES 1, 2`) each put in parentheses, and a `VALUES` in a query's place that carries a
/// table alias (`VALUES (1, 'a') AS t(k, v)`, `VALUES 1 T(col)`) read as
/// `SELECT * FROM VALUES ... AS t(k, v)`.
fn inline_tables(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let is_values = |t: &Token| matches!(t, Token::Word(w) if w.keyword == Keyword::VALUES && w.quote_style.is_none());
    if !tokens.iter().any(|t| is_values(&t.token)) {
        return tokens;
    }
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len() + 8);
    let mut i = 0;
    while i < tokens.len() {
        if !is_values(&tokens[i].token) {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let span = tokens[i].span;
        let prev = out
            .iter()
            .rev()
            .find(|t| !matches!(t.token, Token::Whitespace(_)))
            .map(|t| t.token.clone());
        let Some((rows, alias_at)) = values_rows(&tokens, i + 1) else {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        };
        let in_query_place = match &prev {
            None | Some(Token::LParen) => true,
            Some(Token::Word(w)) => matches!(
                w.keyword,
                Keyword::UNION
                    | Keyword::INTERSECT
                    | Keyword::EXCEPT
                    | Keyword::MINUS
                    | Keyword::ALL
                    | Keyword::DISTINCT
            ),
            _ => false,
        };
        let in_from_place = matches!(&prev, Some(Token::Word(w)) if matches!(w.keyword, Keyword::FROM | Keyword::JOIN))
            || matches!(&prev, Some(Token::Comma));
        if !in_query_place && !in_from_place {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let word = |w: &str| TokenWithSpan::new(Token::make_keyword(w), span);
        let ws = || {
            TokenWithSpan::new(
                Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
                span,
            )
        };
        if in_query_place && alias_at.is_some() {
            out.extend([
                word("SELECT"),
                ws(),
                TokenWithSpan::new(Token::Mul, span),
                ws(),
                word("FROM"),
                ws(),
            ]);
        }
        out.push(tokens[i].clone());
        for (k, (start, end)) in rows.iter().enumerate() {
            if k > 0 {
                out.push(TokenWithSpan::new(Token::Comma, span));
            }
            let wrapped = !parenthesized(&tokens[*start..*end]);
            out.push(ws());
            if wrapped {
                out.push(TokenWithSpan::new(Token::LParen, span));
            }
            out.extend(tokens[*start..*end].iter().cloned());
            if wrapped {
                out.push(TokenWithSpan::new(Token::RParen, span));
            }
        }
        out.push(ws());
        i = rows.last().map_or(i + 1, |(_, end)| *end);
        if let Some(at) = alias_at {
            // `VALUES (..) t(a)` without AS: sqlparser wants the AS.
            let has_as = matches!(&tokens[at].token, Token::Word(w) if w.keyword == Keyword::AS);
            if !has_as {
                out.extend([word("AS"), ws()]);
            }
            i = at;
        }
    }
    out
}

/// Whether `row` (without surrounding whitespace) is one parenthesized group.
fn parenthesized(row: &[TokenWithSpan]) -> bool {
    let row: Vec<&Token> = row
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    if row.first() != Some(&&Token::LParen) {
        return false;
    }
    let mut depth = 0i32;
    for (k, t) in row.iter().enumerate() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return k == row.len() - 1;
                }
            }
            _ => {}
        }
    }
    false
}

/// The rows after a `VALUES` at `from` (token ranges, whitespace trimmed) and where a table
/// alias after them starts, if one does.
#[allow(clippy::type_complexity)]
fn values_rows(
    tokens: &[TokenWithSpan],
    from: usize,
) -> Option<(Vec<(usize, usize)>, Option<usize>)> {
    let significant = |k: usize| !matches!(tokens[k].token, Token::Whitespace(_));
    let mut rows = Vec::new();
    let mut depth = 0i32;
    let mut start: Option<usize> = None;
    let mut last: Option<usize> = None; // the last significant token of the current row
    let mut k = from;
    let close = |rows: &mut Vec<(usize, usize)>, start: Option<usize>, last: Option<usize>| {
        if let (Some(s), Some(l)) = (start, last) {
            rows.push((s, l + 1));
        }
    };
    while k < tokens.len() {
        let t = &tokens[k].token;
        if !significant(k) {
            k += 1;
            continue;
        }
        if depth == 0 {
            match t {
                Token::Comma => {
                    close(&mut rows, start, last);
                    start = None;
                    last = None;
                    k += 1;
                    continue;
                }
                Token::RParen | Token::SemiColon | Token::EOF => break,
                Token::Word(w)
                    if last.is_some()
                        && w.quote_style.is_none()
                        && ends_rows(w, &tokens[last?].token) =>
                {
                    close(&mut rows, start, last);
                    // The next clause (`FROM VALUES (1), (2) GROUP BY col1`): no alias.
                    let alias = (!starts_clause(w)).then_some(k);
                    return Some((rows, alias));
                }
                _ => {}
            }
        }
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        start.get_or_insert(k);
        last = Some(k);
        k += 1;
    }
    close(&mut rows, start, last);
    (!rows.is_empty()).then_some((rows, None))
}

/// Whether `w` starts a clause of the query rather than naming a table.
fn starts_clause(w: &sqlparser::tokenizer::Word) -> bool {
    use Keyword as K;
    matches!(
        w.keyword,
        K::WHERE
            | K::GROUP
            | K::HAVING
            | K::ORDER
            | K::LIMIT
            | K::OFFSET
            | K::WINDOW
            | K::QUALIFY
            | K::CLUSTER
            | K::DISTRIBUTE
            | K::SORT
            | K::UNION
            | K::INTERSECT
            | K::EXCEPT
            | K::MINUS
            | K::JOIN
            | K::INNER
            | K::LEFT
            | K::RIGHT
            | K::FULL
            | K::CROSS
            | K::NATURAL
            | K::SEMI
            | K::ANTI
            | K::ON
            | K::USING
            | K::LATERAL
            | K::PIVOT
            | K::UNPIVOT
            | K::TABLESAMPLE
    )
}

/// Whether word `w`, after `prev` (the end of a row), starts what follows the rows: a table
/// alias or the next clause, rather than continuing the row's expression.
fn ends_rows(w: &sqlparser::tokenizer::Word, prev: &Token) -> bool {
    use Keyword as K;
    let continues = matches!(
        w.keyword,
        K::AND
            | K::OR
            | K::IS
            | K::NOT
            | K::IN
            | K::BETWEEN
            | K::LIKE
            | K::ILIKE
            | K::RLIKE
            | K::REGEXP
            | K::DIV
            | K::THEN
            | K::ELSE
            | K::WHEN
            | K::END
            | K::ESCAPE
            | K::TO
            | K::YEAR
            | K::YEARS
            | K::MONTH
            | K::MONTHS
            | K::WEEK
            | K::WEEKS
            | K::DAY
            | K::DAYS
            | K::HOUR
            | K::HOURS
            | K::MINUTE
            | K::MINUTES
            | K::SECOND
            | K::SECONDS
            | K::MILLISECOND
            | K::MILLISECONDS
            | K::MICROSECOND
            | K::MICROSECONDS
            | K::COLLATE
    );
    let after_operand = ends_operand(prev);
    // A word after an operator keyword (`x AND y`) is an operand.
    let prev_is_operator_word = matches!(prev, Token::Word(p) if matches!(
        p.keyword,
        K::AND | K::OR | K::IS | K::NOT | K::IN | K::BETWEEN | K::LIKE | K::THEN | K::ELSE | K::WHEN
            | K::CASE | K::INTERVAL | K::DATE | K::TIMESTAMP | K::DIV | K::ESCAPE
    ));
    !continues && after_operand && !prev_is_operator_word
}

fn is_suffix(word: &str) -> bool {
    ["L", "S", "Y", "D", "F", "BD"]
        .iter()
        .any(|s| word.eq_ignore_ascii_case(s))
}

/// `digits[.digits][E[+-]digits]` followed by one of Spark's literal suffixes, as a number token.
fn typed_number(word: &str) -> Option<Token> {
    let upper = word.to_ascii_uppercase();
    let (body, suffix) = if let Some(b) = upper.strip_suffix("BD") {
        (b, "BD")
    } else {
        let last = upper.chars().last()?;
        if !"LSYDF".contains(last) {
            return None;
        }
        (&upper[..upper.len() - 1], &upper[upper.len() - 1..])
    };
    let (mantissa, exponent) = match body.find('E') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let exp_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    let integral = frac.is_empty() && !mantissa.contains('.') && exponent.is_none();
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) || !exp_ok {
        return None;
    }
    // Integer suffixes take integers only (`1.5L` is not a literal).
    if matches!(suffix, "L" | "S" | "Y") && !integral {
        return None;
    }
    Some(match suffix {
        "L" => Token::Number(body.to_string(), true),
        _ => Token::Number(format!("{body}{suffix}"), false),
    })
}

/// Where shifts bind: under `+` / `-` (30), over `&` (23), `^` (22) and `|` (21).
const SHIFT_PRECEDENCE: u8 = 25;

/// The dialect every Spark SQL text is parsed with.
#[derive(Debug, Default, Clone, Copy)]
pub struct SparkDialect;

const BASE: DatabricksDialect = DatabricksDialect {};

impl Dialect for SparkDialect {
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        BASE.is_delimited_identifier_start(ch)
    }
    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        BASE.identifier_quote_style(identifier)
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        BASE.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        BASE.is_identifier_part(ch)
    }
    fn supports_numeric_prefix(&self) -> bool {
        true
    }
    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }
    fn supports_group_by_expr(&self) -> bool {
        true
    }
    fn supports_lambda_functions(&self) -> bool {
        true
    }
    fn supports_select_wildcard_except(&self) -> bool {
        true
    }
    fn require_interval_qualifier(&self) -> bool {
        false
    }
    fn supports_struct_literal(&self) -> bool {
        true
    }
    fn supports_nested_comments(&self) -> bool {
        true
    }
    fn supports_group_by_with_modifier(&self) -> bool {
        true
    }
    fn supports_values_as_table_factor(&self) -> bool {
        true
    }
    fn supports_bang_not_operator(&self) -> bool {
        true
    }
    fn supports_cte_without_as(&self) -> bool {
        true
    }
    fn supports_select_item_multi_column_alias(&self) -> bool {
        true
    }
    fn supports_string_literal_backslash_escape(&self) -> bool {
        true
    }
    fn supports_window_clause_named_window_reference(&self) -> bool {
        true
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if let Some(call) = exists_function(parser) {
            return Some(call);
        }
        if let Some(value) = struct_of_named_fields(parser) {
            return Some(value);
        }
        crate::interval_syntax::parse_interval(parser)
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        // Spark binds shifts tighter than `&` and looser than `+` (sqlparser: with `^`).
        match parser.peek_token_ref().token {
            Token::ShiftLeft | Token::ShiftRight => Some(Ok(SHIFT_PRECEDENCE)),
            _ => None,
        }
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        let shift = match parser.peek_token_ref().token {
            Token::ShiftLeft => Some(BinaryOperator::PGBitwiseShiftLeft),
            Token::ShiftRight => Some(BinaryOperator::PGBitwiseShiftRight),
            _ => None,
        };
        if let Some(mut op) = shift {
            let at = parser.next_token();
            // `>>>` arrives as `>>` then `>`.
            let next = parser.peek_token_ref();
            if matches!(op, BinaryOperator::PGBitwiseShiftRight)
                && next.token == Token::Gt
                && next.span.start == at.span.end
            {
                parser.next_token();
                op = BinaryOperator::Custom(">>>".into());
            }
            return Some(
                parser
                    .parse_subexpr(SHIFT_PRECEDENCE)
                    .map(|right| Expr::BinaryOp {
                        left: Box::new(expr.clone()),
                        op,
                        right: Box::new(right),
                    }),
            );
        }
        if let Some(quantified) = like_quantified(parser, expr) {
            return Some(quantified);
        }
        if !parser.parse_keyword(Keyword::DIV) {
            return None;
        }
        Some(
            parser
                .parse_subexpr(precedence)
                .map(|right| Expr::BinaryOp {
                    left: Box::new(expr.clone()),
                    op: BinaryOperator::MyIntegerDivide,
                    right: Box::new(right),
                }),
        )
    }
}

fn is_keyword(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k)
}

/// `e [NOT] LIKE ALL|ANY|SOME (p1, p2, ...)`, as Spark's `LikeAll` / `LikeAny` (and their NOT
/// forms) read it: the patterns' matches combined with AND (ALL) or OR (ANY), which gives their
/// three-valued answer (a NULL pattern makes an otherwise undecided answer NULL).
fn like_quantified(parser: &mut Parser, expr: &Expr) -> Option<Result<Expr, ParserError>> {
    let negated = is_keyword(&parser.peek_token_ref().token, Keyword::NOT);
    let at = usize::from(negated);
    if !is_keyword(&parser.peek_nth_token_ref(at).token, Keyword::LIKE) {
        return None;
    }
    let quantifier = &parser.peek_nth_token_ref(at + 1).token;
    let all = is_keyword(quantifier, Keyword::ALL);
    if !(all || is_keyword(quantifier, Keyword::ANY) || is_keyword(quantifier, Keyword::SOME)) {
        return None;
    }
    if parser.peek_nth_token_ref(at + 2).token != Token::LParen {
        return None;
    }
    for _ in 0..at + 3 {
        parser.next_token();
    }
    if parser.consume_token(&Token::RParen) {
        return Some(Err(ParserError::ParserError(
            "[INVALID_SQL_SYNTAX.EMPTY_QUANTIFIED_PATTERN] Invalid SQL syntax: Expected something between '(' and ')'.".into(),
        )));
    }
    let patterns = match parser.parse_comma_separated(Parser::parse_expr) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    if let Err(e) = parser.expect_token(&Token::RParen) {
        return Some(Err(e));
    }
    let op = if all {
        BinaryOperator::And
    } else {
        BinaryOperator::Or
    };
    let combined = patterns
        .into_iter()
        .map(|pattern| {
            Expr::Nested(Box::new(Expr::Like {
                negated,
                any: false,
                expr: Box::new(expr.clone()),
                pattern: Box::new(pattern),
                escape_char: None,
            }))
        })
        .reduce(|left, right| Expr::BinaryOp {
            left: Box::new(left),
            op: op.clone(),
            right: Box::new(right),
        })
        .expect("at least one pattern");
    Some(Ok(Expr::Nested(Box::new(combined))))
}

/// `exists(array, x -> ...)`: Spark's higher-order function, which sqlparser would read as an
/// `EXISTS (subquery)` (a query starts with a keyword or a parenthesis; an array does not).
fn exists_function(parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
    let is_exists = matches!(&parser.peek_token_ref().token, Token::Word(w) if w.keyword == Keyword::EXISTS && w.quote_style.is_none());
    if !is_exists || parser.peek_nth_token_ref(1).token != Token::LParen {
        return None;
    }
    let query_start = match &parser.peek_nth_token_ref(2).token {
        Token::LParen => true,
        Token::Word(w) => matches!(
            w.keyword,
            Keyword::SELECT | Keyword::WITH | Keyword::VALUES | Keyword::FROM | Keyword::TABLE
        ),
        _ => false,
    };
    if query_start {
        return None;
    }
    let name = parser.next_token();
    let ident = sqlparser::ast::Ident::new(name.token.to_string());
    Some(parser.parse_function(sqlparser::ast::ObjectName::from(vec![ident])))
}

/// `STRUCT(s.*, x AS name)` (a struct column's or a relation's fields spread in) and
/// `(a AS x, b AS y)` (Spark's struct of named fields), which sqlparser's struct literal and
/// tuple do not read: each item `prefix.*` or `expr [AS name]`. Other forms are left to
/// sqlparser.
fn struct_of_named_fields(parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
    let is_struct = matches!(&parser.peek_token_ref().token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("struct"))
        && parser.peek_nth_token_ref(1).token == Token::LParen;
    let open = if is_struct { 1 } else { 0 };
    if !is_struct && parser.peek_token_ref().token != Token::LParen {
        return None;
    }
    // Scan the parenthesis' top level: a star after a period (struct), or an AS beside a
    // comma (tuple), marks the forms taken here.
    let (mut depth, mut i, mut star, mut named, mut comma) = (0usize, open, false, false, false);
    if !is_struct {
        match &parser.peek_nth_token_ref(1).token {
            Token::Word(w)
                if matches!(
                    w.keyword,
                    Keyword::SELECT | Keyword::WITH | Keyword::VALUES | Keyword::FROM
                ) =>
            {
                return None
            }
            // `((...` is a nested expression, never a struct of named fields here; the scan
            // below would otherwise run once per level (quadratic on hostile nesting).
            Token::LParen => return None,
            _ => {}
        }
    }
    // The scan is bounded so that a long or deeply nested expression costs no more than
    // this per parenthesis (a named struct's text is short).
    const SCAN_LIMIT: usize = 2048;
    loop {
        if i > SCAN_LIMIT {
            return None;
        }
        let t = &parser.peek_nth_token_ref(i).token;
        match t {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            Token::EOF => return None,
            Token::Mul if depth == 1 => {
                star |= parser.peek_nth_token_ref(i - 1).token == Token::Period
            }
            Token::Comma if depth == 1 => comma = true,
            Token::Word(w) if depth == 1 && w.keyword == Keyword::AS => named = true,
            _ => {}
        }
        i += 1;
    }
    let wanted = if is_struct { star } else { named && comma };
    if !wanted {
        return None;
    }
    if is_struct {
        parser.next_token();
    }
    Some(struct_items(parser))
}

fn struct_items(parser: &mut Parser) -> Result<Expr, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let mut values = Vec::new();
    loop {
        // `a.b.*`: words joined by periods, then a star.
        let mut k = 0;
        while matches!(parser.peek_nth_token_ref(k).token, Token::Word(_))
            && parser.peek_nth_token_ref(k + 1).token == Token::Period
        {
            k += 2;
        }
        if k > 0 && parser.peek_nth_token_ref(k).token == Token::Mul {
            let mut parts = Vec::new();
            for _ in 0..k / 2 {
                let word = parser.next_token();
                if let Token::Word(w) = word.token {
                    parts.push(w.into_ident(word.span));
                }
                parser.next_token();
            }
            let star = parser.next_token();
            values.push(Expr::QualifiedWildcard(
                sqlparser::ast::ObjectName::from(parts),
                sqlparser::ast::helpers::attached_token::AttachedToken(star),
            ));
        } else {
            let e = parser.parse_expr()?;
            values.push(if parser.parse_keyword(Keyword::AS) {
                Expr::Named {
                    expr: Box::new(e),
                    name: parser.parse_identifier()?,
                }
            } else {
                e
            });
        }
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    parser.expect_token(&Token::RParen)?;
    Ok(Expr::Struct {
        values,
        fields: Vec::new(),
    })
}

/// Whether `t` can end an operand (a number, a string, `)` or a word), so that what follows
/// it is an infix operator.
fn ends_operand(t: &Token) -> bool {
    matches!(
        t,
        Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::RParen
            | Token::Word(_)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn strings_unescape_as_sparks_and_adjacent_ones_join() {
        let lit = |sql: &str| -> Vec<String> {
            tokenize(sql)
                .expect("tokenizes")
                .into_iter()
                .filter_map(|t| match t.token {
                    Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Some(s),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            lit(r"SELECT 'pattern\%', 'no-pattern\%'"),
            [r"pattern\%", r"no-pattern\%"]
        );
        assert_eq!(lit(r"SELECT 'pattern\\%', '\_'"), [r"pattern\%", r"\_"]);
        assert_eq!(lit(r"SELECT '\110\145\154\154\157\041'"), ["Hello!"]);
        assert_eq!(lit(r"SELECT '\u0057\u006F\u0072ld'"), ["World"]);
        assert_eq!(
            lit(r"SELECT '\'', '\n\t\Z', '\d'"),
            ["'", "\n\t\u{1a}", "d"]
        );
        assert_eq!(
            lit("SELECT 'hello' 'world', 'a'  \"b\" 'c'"),
            ["helloworld", "abc"]
        );
        assert_eq!(lit("SELECT 'it''s'"), ["it's"]);
        assert_eq!(
            expr("1 ! BETWEEN 0 AND 2").expect("parses"),
            "1 NOT BETWEEN 0 AND 2"
        );
        assert_eq!(expr("x IS ! NULL").expect("parses"), "x IS NOT NULL");
        assert_eq!(expr("!x").expect("parses"), "!x");
        assert!(bang_before_predicate("SELECT a ! IN (1) FROM t"));
        assert!(bang_before_predicate("SELECT a IS ! TRUE"));
        assert!(!bang_before_predicate("SELECT ! true, !(a IN (1))"));
    }

    use super::*;

    fn text(sql: &str) -> String {
        tokenize(sql)
            .expect("tokenizes")
            .iter()
            .map(|t| t.token.to_string())
            .collect()
    }

    #[test]
    fn typed_number_literals_are_one_token() {
        let numbers = |sql: &str| -> Vec<String> {
            tokenize(sql)
                .expect("tokenizes")
                .into_iter()
                .filter_map(|t| match t.token {
                    Token::Number(n, long) => Some(format!("{n}{}", if long { "L" } else { "" })),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            numbers("SELECT 1L, 6S, 25y, 100.00D, 1BD, 1E2BD, 2.5f, 1e10D, 3"),
            ["1L", "6S", "25Y", "100.00D", "1BD", "1E2BD", "2.5F", "1E10D", "3"]
        );
        // Not literals: a name after a space, a fraction with an integer suffix.
        assert_eq!(numbers("SELECT 1 d"), ["1"]);
        assert!(numbers("SELECT 1.5L").is_empty());
    }

    #[test]
    fn inline_tables_take_spark_forms() {
        assert_eq!(
            text("VALUES (1, 'a') AS t(k, v)"),
            "SELECT * FROM VALUES (1, 'a') AS t(k, v)"
        );
        assert_eq!(
            text("VALUES 1 T(col)"),
            "SELECT * FROM VALUES (1) AS T(col)"
        );
        assert_eq!(
            text("select * from values 0, 1, 2 as t(id)"),
            "select * from values (0), (1), (2) as t(id)"
        );
        // A plain VALUES query and an INSERT's rows are left as they are.
        assert_eq!(text("VALUES (1), (2)"), "VALUES (1), (2) ");
        assert_eq!(text("INSERT INTO t VALUES (1)"), "INSERT INTO t VALUES (1)");
        // Expressions that go on past a word stay in their row.
        assert_eq!(
            text("VALUES (1) , (CASE WHEN 1 THEN 2 END) AS t(a)"),
            "SELECT * FROM VALUES (1), (CASE WHEN 1 THEN 2 END) AS t(a)"
        );
        assert_eq!(
            text("FROM VALUES INTERVAL '1' DAY x"),
            "FROM VALUES (INTERVAL '1' DAY) AS x"
        );
        // The next clause is no alias.
        assert_eq!(
            text("SELECT col1 FROM VALUES (1), (-2) GROUP BY col1"),
            "SELECT col1 FROM VALUES (1), (-2)  GROUP BY col1"
        );
    }

    fn expr(sql: &str) -> std::result::Result<String, ParserError> {
        let tokens = tokenize(sql).expect("tokenizes");
        Parser::new(&SparkDialect)
            .with_tokens_with_locations(tokens)
            .parse_expr()
            .map(|e| e.to_string())
    }

    #[test]
    fn like_all_and_any_combine_their_patterns() {
        assert_eq!(
            expr("c LIKE ALL ('%a', p)").expect("parses"),
            "((c LIKE '%a') AND (c LIKE p))"
        );
        assert_eq!(
            expr("c NOT LIKE ANY ('%a', 'b%', NULL)").expect("parses"),
            "((c NOT LIKE '%a') OR (c NOT LIKE 'b%') OR (c NOT LIKE NULL))"
        );
        assert_eq!(expr("c LIKE SOME ('x')").expect("parses"), "((c LIKE 'x'))");
        assert!(expr("c LIKE ALL ()")
            .expect_err("refused")
            .to_string()
            .contains("EMPTY_QUANTIFIED_PATTERN"));
        // A plain LIKE is sqlparser's.
        assert_eq!(expr("c LIKE 'a%'").expect("parses"), "c LIKE 'a%'");
    }
}
