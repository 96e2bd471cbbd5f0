//! Spark's interval literal grammar (`SqlBaseParser.g4`'s `interval` rule), read by the dialect
//! after the `INTERVAL` keyword:
//!
//! ```text
//! INTERVAL 'text'                                  -- a typed literal: '1 day 2 hours'
//! INTERVAL [+|-]value unit ([+|-]value unit)*      -- multiUnitsInterval: 2 years 4 months
//! INTERVAL [+|-]'text' unit TO unit                -- unitToUnitInterval: '1-2' YEAR TO MONTH
//! ```
//!
//! The value is computed here, with Spark's refusals, and handed to sqlparser's AST in one
//! form: `INTERVAL <n> <start field> [TO <end field>]` (see [`crate::interval::interval_literal`]).

use sqlparser::ast::{self, DateTimeField, Expr};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use crate::interval::{
    ansi_from_text, ansi_of_units, day_time_from_text, fields_of_units, parse_calendar,
    year_month_from_text, AnsiInterval, Unit,
};

/// One `[+|-]value` of the literal.
#[derive(Debug, Clone)]
struct Value {
    negate: bool,
    text: String,
    quoted: bool,
}

fn error(class: &str, message: String) -> ParserError {
    ParserError::ParserError(format!("[{class}] {message}"))
}

fn unit_at(parser: &Parser, k: usize) -> Option<Unit> {
    match &parser.peek_nth_token_ref(k).token {
        Token::Word(w) if w.quote_style.is_none() => Unit::parse(&w.value),
        _ => None,
    }
}

/// The `[+|-]value` starting `k` tokens ahead, and how many tokens it takes.
fn value_at(parser: &Parser, k: usize) -> Option<(Value, usize)> {
    let (negate, k0) = match &parser.peek_nth_token_ref(k).token {
        Token::Minus => (true, k + 1),
        Token::Plus => (false, k + 1),
        _ => (false, k),
    };
    let (text, quoted) = match &parser.peek_nth_token_ref(k0).token {
        Token::Number(n, _) => (n.clone(), false),
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => (s.clone(), true),
        _ => return None,
    };
    Some((
        Value {
            negate,
            text,
            quoted,
        },
        k0 - k + 1,
    ))
}

fn is_to(parser: &Parser, k: usize) -> bool {
    matches!(&parser.peek_nth_token_ref(k).token, Token::Word(w) if w.keyword == Keyword::TO)
}

/// Reads Spark's interval literal when the next token is `INTERVAL` followed by a value;
/// `None` leaves the text to sqlparser (`INTERVAL (expr) DAY`, which Spark reads as a call).
pub(crate) fn parse_interval(parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
    match &parser.peek_token_ref().token {
        Token::Word(w) if w.keyword == Keyword::INTERVAL && w.quote_style.is_none() => {}
        _ => return None,
    }
    value_at(parser, 1)?;
    let start = parser.peek_token_ref().span.start;
    Some(read(parser).map_err(|e| match e {
        ParserError::ParserError(m) if !m.starts_with('[') => {
            ParserError::ParserError(format!("{m} at {start}"))
        }
        other => other,
    }))
}

fn read(parser: &mut Parser) -> Result<Expr, ParserError> {
    parser.next_token(); // INTERVAL
    let mut pairs: Vec<(Value, Unit, String)> = Vec::new();
    while let Some((value, n)) = value_at(parser, 0) {
        let Some(unit) = unit_at(parser, n) else {
            if pairs.is_empty() {
                if value.quoted && !value.negate && n == 1 {
                    parser.next_token();
                    let iv = ansi_from_text(&value.text, &format!("'{}'", value.text))
                        .map_err(|e| ParserError::ParserError(e.to_string()))?;
                    let units = parse_calendar(&value.text)
                        .map(|(_, units)| units)
                        .unwrap_or_default();
                    let (start, end) = fields_of_units(&units);
                    return Ok(literal(iv, start, end));
                }
                return Err(error(
                    "PARSE_SYNTAX_ERROR",
                    format!("Syntax error at or near '{}'.", value.text),
                ));
            }
            break;
        };
        let unit_word = parser.peek_nth_token(n).token.to_string();
        if is_to(parser, n + 1) {
            if !pairs.is_empty() {
                return Err(single_from_to());
            }
            let Some(to) = unit_at(parser, n + 2) else {
                return Err(error(
                    "PARSE_SYNTAX_ERROR",
                    "Syntax error at or near 'TO'.".into(),
                ));
            };
            for _ in 0..n + 3 {
                parser.next_token();
            }
            if !value.quoted {
                return Err(error(
                    "_LEGACY_ERROR_TEMP_0027",
                    "The value of from-to unit must be a string.".into(),
                ));
            }
            let iv = match (unit, to) {
                (Unit::Year, Unit::Month) => year_month_from_text(&value.text, value.negate),
                _ => day_time_from_text(&value.text, unit, to, value.negate),
            }
            .map_err(|e| ParserError::ParserError(e.to_string()))?;
            if let Some((_, m)) = value_at(parser, 0) {
                if unit_at(parser, m).is_some() {
                    return Err(single_from_to());
                }
            }
            return Ok(literal(iv, unit, to));
        }
        for _ in 0..n + 1 {
            parser.next_token();
        }
        pairs.push((value, unit, unit_word));
    }
    multi_units(&pairs)
}

fn single_from_to() -> ParserError {
    error(
        "_LEGACY_ERROR_TEMP_0024",
        "Can only have a single from-to unit in the interval literal syntax.".into(),
    )
}

/// `value unit` pairs added up as Spark's `visitMultiUnitsInterval` does: each value a number,
/// the whole read as one interval text.
fn multi_units(pairs: &[(Value, Unit, String)]) -> Result<Expr, ParserError> {
    let mut text = String::new();
    for (v, _, unit) in pairs {
        if v.quoted && v.text.chars().any(char::is_alphabetic) {
            return Err(error(
                "_LEGACY_ERROR_TEMP_0026",
                format!(
                    "Can only use numbers in the interval value part for multiple unit value pairs interval form, but got invalid value: {}.",
                    v.text
                ),
            ));
        }
        let value = match (v.negate, v.text.strip_prefix('-')) {
            (false, _) => v.text.clone(),
            (true, Some(rest)) => rest.to_string(),
            (true, None) => format!("-{}", v.text),
        };
        text.push_str(&format!(" {value} {unit}"));
    }
    let units: Vec<Unit> = pairs.iter().map(|(_, u, _)| *u).collect();
    if units.contains(&Unit::Nanosecond) {
        return Err(error(
            "INVALID_INTERVAL_FORMAT.INVALID_UNIT",
            format!(
                "Error parsing '{}' to interval, invalid unit 'nanosecond'.",
                text.trim()
            ),
        ));
    }
    let (cal, _) = parse_calendar(&text).map_err(|why| {
        error(
            "INVALID_INTERVAL_FORMAT.INVALID_VALUE",
            format!("Error parsing '{}' to interval: {why}.", text.trim()),
        )
    })?;
    let iv = ansi_of_units(cal, &units, text.trim())
        .map_err(|e| ParserError::ParserError(e.to_string()))?;
    let (start, end) = fields_of_units(&units);
    Ok(literal(iv, start, end))
}

/// The one AST form interval literals take: the value in months, days (a `DAY` interval)
/// or microseconds, and the type's start and end fields.
fn literal(iv: AnsiInterval, start: Unit, end: Unit) -> Expr {
    let field = |u: Unit| match u {
        Unit::Year => DateTimeField::Year,
        Unit::Month => DateTimeField::Month,
        Unit::Day => DateTimeField::Day,
        Unit::Hour => DateTimeField::Hour,
        Unit::Minute => DateTimeField::Minute,
        _ => DateTimeField::Second,
    };
    let (n, start, end) = match iv {
        AnsiInterval::YearMonth(m) => (m as i64, start, end),
        AnsiInterval::Day(d) => (d as i64, Unit::Day, Unit::Day),
        // A day-time value under the fields of a day interval would read back as days.
        AnsiInterval::DayTime(us) if start == Unit::Day && end == Unit::Day => {
            (us, Unit::Day, Unit::Second)
        }
        AnsiInterval::DayTime(us) => (us, start, end),
    };
    Expr::Interval(ast::Interval {
        value: Box::new(Expr::value(ast::Value::Number(n.to_string(), false))),
        leading_field: Some(field(start)),
        leading_precision: None,
        last_field: (end != start).then(|| field(end)),
        fractional_seconds_precision: None,
    })
}
