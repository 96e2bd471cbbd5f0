//! Spark SQL expression text (`"a < 5 AND b IS NOT NULL"`) to [`Expr`], through `sqlparser`'s
//! Databricks dialect (backquoted identifiers, backslash escapes and `<=>` as in Spark).

use crate::dialect::SparkDialect;
use sqlparser::ast::{
    self, BinaryOperator, CastKind, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator,
    Value,
};
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;

use ferrospark_common::{FerroError, Result};

use crate::expr::{BinaryOp, Expr, Literal, StringMatch};

/// Parses one Spark SQL expression. Errors are [`FerroError::Analysis`] quoting the text.
pub fn parse_expr(text: &str) -> Result<Expr> {
    let dialect = SparkDialect {};
    let fail = |e: &dyn std::fmt::Display| {
        FerroError::Analysis(format!(
            "[PARSE_SYNTAX_ERROR] cannot parse expression \"{text}\": {e}"
        ))
    };
    reject_bare_not_null(text, &dialect).map_err(|e| fail(&e))?;
    let tokens = crate::dialect::tokenize(text).map_err(|e| fail(&e))?;
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(crate::MAX_EXPR_DEPTH)
        .with_tokens_with_locations(tokens);
    let ast = parser.parse_expr().map_err(|e| fail(&e))?;
    let mut expr = convert(&ast, text)?.without_written();
    // A trailing sort direction or alias, as columns print them (`a DESC NULLS LAST`, `a AS b`).
    if parser.parse_keyword(Keyword::ASC) || parser.peek_keyword(Keyword::DESC) {
        let ascending = !parser.parse_keyword(Keyword::DESC);
        let mut nulls_first = ascending;
        if parser.parse_keyword(Keyword::NULLS) {
            if parser.parse_keyword(Keyword::FIRST) {
                nulls_first = true;
            } else if parser.parse_keyword(Keyword::LAST) {
                nulls_first = false;
            } else {
                return Err(fail(&"expected FIRST or LAST after NULLS"));
            }
        }
        expr = Expr::SortKey {
            expr: Box::new(expr),
            ascending,
            nulls_first,
        };
    } else if parser.parse_keyword(Keyword::AS) {
        let name = parser.parse_identifier().map_err(|e| fail(&e))?;
        expr = Expr::Alias {
            expr: Box::new(expr),
            name: name.value,
        };
    }
    let next = parser.peek_token();
    if next.token != sqlparser::tokenizer::Token::EOF {
        return Err(fail(&format!(
            "unexpected '{}' after the expression",
            next.token
        )));
    }
    Ok(expr)
}

/// sqlparser accepts Postgres' `x NOT NULL` / `x NOTNULL`; Spark does not.
fn reject_bare_not_null(text: &str, dialect: &SparkDialect) -> std::result::Result<(), String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(dialect, text)
        .tokenize()
        .map_err(|e| e.to_string())?;
    let words: Vec<&Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let is_kw = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    for (i, t) in words.iter().enumerate() {
        if is_kw(t, Keyword::NOTNULL) {
            return Err("NOTNULL is not Spark SQL; write IS NOT NULL".into());
        }
        if is_kw(t, Keyword::NOT)
            && words.get(i + 1).is_some_and(|n| is_kw(n, Keyword::NULL))
            && i > 0
            && ends_operand(words[i - 1])
        {
            return Err("'NOT NULL' needs IS: write IS NOT NULL".into());
        }
    }
    Ok(())
}

fn ends_operand(t: &sqlparser::tokenizer::Token) -> bool {
    use sqlparser::tokenizer::Token;
    match t {
        Token::Word(w) => w.quote_style.is_some() || w.keyword == Keyword::NoKeyword,
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::RParen => true,
        _ => false,
    }
}

fn unsupported(what: impl std::fmt::Display, text: &str) -> FerroError {
    FerroError::Analysis(format!(
        "unsupported expression {what} in \"{text}\" (supported: comparisons, AND/OR/NOT, IN, IS [NOT] NULL, BETWEEN, LIKE, <=>, arithmetic, CAST, DATE/TIMESTAMP literals, field access)"
    ))
}

/// Converts one expression of a parsed SQL statement; `text` is the statement, for messages.
/// The query planner calls this for every expression outside subqueries and window calls.
pub fn convert_ast(e: &ast::Expr, text: &str) -> Result<Expr> {
    Ok(convert(e, text)?.without_written())
}

/// A select-list item without an alias: converted as [`convert_ast`] does, under the name
/// Spark generates from the text as written (an [`Expr::Alias`] where that name differs from
/// the converted expression's: `count(x) FILTER (WHERE c)`, `CAST(NULL AS INT)`, `+x`).
pub fn convert_ast_named(e: &ast::Expr, text: &str) -> Result<Expr> {
    let written = convert(e, text)?;
    let name = written.output_name();
    let plain = written.without_written();
    if plain.output_name() == name {
        return Ok(plain);
    }
    Ok(Expr::Alias {
        expr: Box::new(plain),
        name,
    })
}

/// A lambda's body with the names of its parameters read as them: `x` and `x.f` (a field of
/// a struct parameter) where `x` is a parameter, whatever the columns outside are called
/// (Spark resolves lambda variables first). Lambdas inside were read first, so their own
/// parameters shadow these.
pub(crate) fn lambda_body(body: Expr, params: &[String]) -> Result<Expr> {
    crate::transform::transform_up(&body, &mut |e| {
        Ok(match e {
            Expr::Column(name) => {
                let mut parts = name.split('.');
                let first = parts.next().unwrap_or_default();
                match params.iter().find(|p| p.eq_ignore_ascii_case(first)) {
                    Some(p) => parts.fold(Expr::LambdaVariable(p.clone()), |acc, f| {
                        Expr::Field(Box::new(acc), f.to_string())
                    }),
                    None => Expr::Column(name),
                }
            }
            other => other,
        })
    })
}

/// `count` of the rows where `cond` is true, named `name`.
fn count_where(cond: Expr, name: String) -> Expr {
    written(
        Expr::Function {
            name: "count".into(),
            args: vec![Expr::Case {
                branches: vec![(cond, Expr::Literal(Literal::integer(1)))],
                otherwise: None,
            }],
        },
        name,
    )
}

/// `expr` named as Spark names what the user wrote.
fn written(expr: Expr, name: String) -> Expr {
    Expr::Written {
        expr: Box::new(expr),
        name,
    }
}

fn boxed(e: &ast::Expr, text: &str) -> Result<Box<Expr>> {
    convert(e, text).map(Box::new)
}

/// The marker of `prefix.*` inside `struct(...)`, whose one argument is the prefix as a
/// dotted column name.
pub const STAR_FN: &str = "__star";

/// The functions Spark's registry holds as casts to their type (`int(x)` is
/// `CAST(x AS INT)`; `DESC FUNCTION int` describes a cast).
pub const CAST_ALIASES: [&str; 12] = [
    "boolean",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "decimal",
    "date",
    "timestamp",
    "binary",
    "string",
];

/// The [`STAR_FN`] marker of `prefix.*`: the prefix's parts joined by periods.
fn star_marker(prefix: &ast::ObjectName) -> Expr {
    Expr::Function {
        name: STAR_FN.into(),
        args: vec![Expr::Column(
            prefix
                .0
                .iter()
                .map(|p| p.to_string().trim_matches('`').to_string())
                .collect::<Vec<_>>()
                .join("."),
        )],
    }
}

fn convert(e: &ast::Expr, text: &str) -> Result<Expr> {
    use ast::Expr as A;
    Ok(match e {
        // Spark's virtual column `grouping__id`: the grouping set's id, as `grouping_id()`.
        A::Identifier(id)
            if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("grouping__id") =>
        {
            Expr::Function {
                name: "grouping__id".into(),
                args: Vec::new(),
            }
        }
        A::Identifier(id) => Expr::Column(id.value.clone()),
        // `(a, b)` as a value is `struct(a, b)` (fields named after the columns).
        A::Tuple(items) => Expr::Function {
            name: "struct".into(),
            args: items
                .iter()
                .map(|v| convert(v, text))
                .collect::<Result<_>>()?,
        },
        // `struct(s.*)`: expanded by the analyzer over the struct's fields or the relation's
        // columns.
        A::QualifiedWildcard(prefix, _) => star_marker(prefix),
        // `struct(a + 1 AS x)`: the field's name.
        A::Named { expr, name } => Expr::Alias {
            expr: Box::new(convert(expr, text)?),
            name: name.value.clone(),
        },
        A::Struct { values, .. } => Expr::Function {
            name: "struct".into(),
            args: values
                .iter()
                .map(|v| convert(v, text))
                .collect::<Result<_>>()?,
        },
        A::CompoundIdentifier(parts) => {
            let mut it = parts.iter();
            let first = it
                .next()
                .ok_or_else(|| unsupported("empty identifier", text))?;
            it.fold(Expr::Column(first.value.clone()), |acc, p| {
                Expr::Field(Box::new(acc), p.value.clone())
            })
        }
        A::CompoundFieldAccess { root, access_chain } => {
            let mut acc = convert(root, text)?;
            for a in access_chain {
                match a {
                    ast::AccessExpr::Dot(ast::Expr::Identifier(id)) => {
                        acc = Expr::Field(Box::new(acc), id.value.clone())
                    }
                    ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                        acc = Expr::Function {
                            name: crate::functions::collections::SUBSCRIPT_FN.into(),
                            args: vec![acc, convert(index, text)?],
                        }
                    }
                    other => return Err(unsupported(format!("access {other}"), text)),
                }
            }
            acc
        }
        A::Nested(inner) => convert(inner, text)?,
        A::Value(v) => Expr::Literal(value_literal(&v.value, text)?),
        A::TypedString(ts) => {
            let value = match &ts.value.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                other => return Err(unsupported(format!("typed literal {other}"), text)),
            };
            let type_name = ts.data_type.to_string().to_ascii_uppercase();
            match type_name.as_str() {
                "DATE" | "TIMESTAMP" | "TIMESTAMP_NTZ" | "TIMESTAMP_LTZ" => {
                    Expr::TypedString { type_name, value }
                }
                "X" => Expr::Literal(hex_literal(&value, text)?),
                _ => Expr::Cast {
                    expr: Box::new(Expr::Literal(Literal::string(&value))),
                    type_name,
                },
            }
        }
        A::UnaryOp { op, expr } => match op {
            UnaryOperator::Not | UnaryOperator::BangNot => Expr::Not(boxed(expr, text)?),
            UnaryOperator::BitwiseNot => Expr::Function {
                name: "~".into(),
                args: vec![convert(expr, text)?],
            },
            // `positive(x)`, named `(+ x)`: Spark checks its type (numbers and intervals).
            UnaryOperator::Plus => Expr::Function {
                name: "positive".into(),
                args: vec![convert(expr, text)?],
            },
            // Spark's parser reads `-5` as one literal, `-(5)` and `- -5` as negations.
            // The sign belongs to the literal, so `-128Y` and `-9223372036854775808L` are in
            // range.
            UnaryOperator::Minus if matches!(**expr, A::Value(_)) => match &**expr {
                A::Value(v) => match &v.value {
                    Value::Number(n, long) => {
                        Expr::Literal(number_literal(&format!("-{n}"), *long, text)?)
                    }
                    _ => negate(convert(expr, text)?),
                },
                _ => negate(convert(expr, text)?),
            },
            UnaryOperator::Minus => Expr::Negative(boxed(expr, text)?),
            other => return Err(unsupported(format!("operator {other}"), text)),
        },
        A::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::And => BinaryOp::And,
                BinaryOperator::Or => BinaryOp::Or,
                BinaryOperator::Eq => BinaryOp::Eq,
                BinaryOperator::NotEq => BinaryOp::NotEq,
                BinaryOperator::Lt => BinaryOp::Lt,
                BinaryOperator::LtEq => BinaryOp::LtEq,
                BinaryOperator::Gt => BinaryOp::Gt,
                BinaryOperator::GtEq => BinaryOp::GtEq,
                BinaryOperator::Spaceship => BinaryOp::EqNullSafe,
                BinaryOperator::Plus => BinaryOp::Plus,
                BinaryOperator::Minus => BinaryOp::Minus,
                BinaryOperator::Multiply => BinaryOp::Multiply,
                BinaryOperator::Divide => BinaryOp::Divide,
                BinaryOperator::Modulo => BinaryOp::Modulo,
                BinaryOperator::StringConcat => {
                    return Ok(Expr::Function {
                        name: "concat".into(),
                        args: vec![convert(left, text)?, convert(right, text)?],
                    })
                }
                BinaryOperator::MyIntegerDivide | BinaryOperator::DuckIntegerDivide => {
                    return Ok(Expr::Function {
                        name: "div".into(),
                        args: vec![convert(left, text)?, convert(right, text)?],
                    })
                }
                // Bitwise operators bind under their symbols (`functions::bitwise`).
                BinaryOperator::BitwiseAnd
                | BinaryOperator::BitwiseOr
                | BinaryOperator::BitwiseXor
                | BinaryOperator::PGBitwiseShiftLeft
                | BinaryOperator::PGBitwiseShiftRight
                | BinaryOperator::Custom(_) => {
                    let symbol = match op {
                        BinaryOperator::BitwiseAnd => "&",
                        BinaryOperator::BitwiseOr => "|",
                        BinaryOperator::BitwiseXor => "^",
                        BinaryOperator::PGBitwiseShiftLeft => "<<",
                        BinaryOperator::PGBitwiseShiftRight => ">>",
                        BinaryOperator::Custom(c) if c == ">>>" => ">>>",
                        other => return Err(unsupported(format!("operator {other}"), text)),
                    };
                    return Ok(Expr::Function {
                        name: symbol.into(),
                        args: vec![convert(left, text)?, convert(right, text)?],
                    });
                }
                other => return Err(unsupported(format!("operator {other}"), text)),
            };
            Expr::Binary {
                left: boxed(left, text)?,
                op,
                right: boxed(right, text)?,
            }
        }
        A::IsNull(e) => Expr::IsNull(boxed(e, text)?),
        A::IsNotNull(e) => Expr::IsNotNull(boxed(e, text)?),
        A::IsNotDistinctFrom(l, r) => Expr::Binary {
            left: boxed(l, text)?,
            op: BinaryOp::EqNullSafe,
            right: boxed(r, text)?,
        },
        A::IsDistinctFrom(l, r) => Expr::Not(Box::new(Expr::Binary {
            left: boxed(l, text)?,
            op: BinaryOp::EqNullSafe,
            right: boxed(r, text)?,
        })),
        A::IsTrue(e) => Expr::Binary {
            left: boxed(e, text)?,
            op: BinaryOp::EqNullSafe,
            right: Box::new(Expr::Literal(Literal::boolean(true))),
        },
        A::IsFalse(e) => Expr::Binary {
            left: boxed(e, text)?,
            op: BinaryOp::EqNullSafe,
            right: Box::new(Expr::Literal(Literal::boolean(false))),
        },
        A::IsNotTrue(e) => Expr::Not(Box::new(Expr::Binary {
            left: boxed(e, text)?,
            op: BinaryOp::EqNullSafe,
            right: Box::new(Expr::Literal(Literal::boolean(true))),
        })),
        A::IsNotFalse(e) => Expr::Not(Box::new(Expr::Binary {
            left: boxed(e, text)?,
            op: BinaryOp::EqNullSafe,
            right: Box::new(Expr::Literal(Literal::boolean(false))),
        })),
        A::InList {
            expr,
            list,
            negated,
        } => Expr::InList {
            expr: boxed(expr, text)?,
            list: list
                .iter()
                .map(|e| convert(e, text))
                .collect::<Result<_>>()?,
            negated: *negated,
        },
        A::Between {
            expr,
            negated,
            low,
            high,
        } => Expr::Between {
            expr: boxed(expr, text)?,
            low: boxed(low, text)?,
            high: boxed(high, text)?,
            negated: *negated,
        },
        A::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char: None,
        } => like(expr, pattern, *negated, false, text)?,
        A::ILike {
            negated,
            any: false,
            expr,
            pattern,
            escape_char: None,
        } => like(expr, pattern, *negated, true, text)?,
        A::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr,
            data_type,
            format: None,
        } => fold_literal_cast(Expr::Cast {
            expr: boxed(expr, text)?,
            type_name: data_type.to_string(),
        }),
        A::Cast {
            kind: CastKind::TryCast | CastKind::SafeCast,
            expr,
            data_type,
            format: None,
        } => Expr::TryCast {
            expr: boxed(expr, text)?,
            type_name: data_type.to_string(),
        },
        A::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            let operand = operand.as_deref().map(|o| convert(o, text)).transpose()?;
            let branches = conditions
                .iter()
                .map(|w| {
                    let c = convert(&w.condition, text)?;
                    let c = match &operand {
                        Some(o) => Expr::Binary {
                            left: Box::new(o.clone()),
                            op: BinaryOp::Eq,
                            right: Box::new(c),
                        },
                        None => c,
                    };
                    Ok((c, convert(&w.result, text)?))
                })
                .collect::<Result<Vec<_>>>()?;
            Expr::Case {
                branches,
                otherwise: else_result.as_deref().map(|e| boxed(e, text)).transpose()?,
            }
        }
        A::Lambda(l) => {
            let params: Vec<String> = l.params.iter().map(|p| p.name.value.clone()).collect();
            let body = lambda_body(convert(&l.body, text)?, &params)?;
            Expr::Lambda {
                params,
                body: Box::new(body),
            }
        }
        A::Interval(iv) => {
            let (lit, name) = crate::interval::interval_literal(iv, text)?;
            written(Expr::Literal(lit), name)
        }
        A::Extract { field, expr, .. } => Expr::Function {
            name: "date_part".into(),
            args: vec![
                Expr::Literal(Literal::string(&field.to_string())),
                convert(expr, text)?,
            ],
        },
        A::Substring {
            expr,
            substring_from,
            substring_for,
            shorthand,
            special,
        } => {
            let mut args = vec![convert(expr, text)?];
            if substring_from.is_none() && substring_for.is_none() {
                return Err(FerroError::Analysis(format!(
                    "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `substring` requires 2 or 3 parameters but the actual number is 1 in \"{text}\"."
                )));
            }
            args.push(match substring_from {
                Some(f) => convert(f, text)?,
                None => Expr::Literal(Literal::integer(1)),
            });
            if let Some(l) = substring_for {
                args.push(convert(l, text)?);
            }
            let call = Expr::Function {
                name: "substring".into(),
                args,
            };
            if *shorthand && *special {
                // Spark names the call by the name it was made under.
                let name = call.spark_name().replacen("substring", "substr", 1);
                written(call, name)
            } else {
                call
            }
        }
        // `OVERLAY(s PLACING r FROM p [FOR l])`: Spark's call with -1 as the default length.
        A::Overlay {
            expr,
            overlay_what,
            overlay_from,
            overlay_for,
        } => Expr::Function {
            name: "overlay".into(),
            args: vec![
                convert(expr, text)?,
                convert(overlay_what, text)?,
                convert(overlay_from, text)?,
                match overlay_for {
                    Some(l) => convert(l, text)?,
                    None => Expr::Literal(Literal::integer(-1)),
                },
            ],
        },
        A::Trim {
            trim_where,
            trim_what,
            expr,
            trim_characters,
        } => {
            let name = match trim_where {
                Some(ast::TrimWhereField::Leading) => "ltrim",
                Some(ast::TrimWhereField::Trailing) => "rtrim",
                _ => "trim",
            };
            let mut args = vec![convert(expr, text)?];
            let mut label = None;
            if let Some(w) = trim_what {
                let what = convert(w, text)?;
                let side = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "LEADING",
                    Some(ast::TrimWhereField::Trailing) => "TRAILING",
                    _ => "BOTH",
                };
                label = Some(format!(
                    "TRIM({side} {} FROM {})",
                    what.spark_name(),
                    args[0].spark_name()
                ));
                args.insert(0, what);
            } else if let Some(cs) = trim_characters {
                for c in cs {
                    args.push(convert(c, text)?);
                }
            }
            let call = Expr::Function {
                name: name.into(),
                args,
            };
            match label {
                Some(label) => written(call, label),
                None => call,
            }
        }
        A::Position { expr, r#in } => Expr::Function {
            name: "locate".into(),
            args: vec![convert(expr, text)?, convert(r#in, text)?],
        },
        A::RLike {
            negated,
            expr,
            pattern,
            ..
        } => {
            let call = Expr::Function {
                name: "rlike".into(),
                args: vec![convert(expr, text)?, convert(pattern, text)?],
            };
            if *negated {
                Expr::Not(Box::new(call))
            } else {
                call
            }
        }
        A::Ceil { expr, field } | A::Floor { expr, field } => {
            let name = if matches!(e, A::Ceil { .. }) {
                "ceil"
            } else {
                "floor"
            };
            let mut args = vec![convert(expr, text)?];
            if let ast::CeilFloorKind::Scale(v) = field {
                args.push(Expr::Literal(value_literal(&v.value, text)?));
            }
            Expr::Function {
                name: name.into(),
                args,
            }
        }
        A::Function(f) if f.over.is_some() => windowed(f, text)?,
        A::Function(f) => function(f, text)?,
        other => return Err(unsupported(format!("'{other}'"), text)),
    })
}

fn like(
    expr: &ast::Expr,
    pattern: &ast::Expr,
    negated: bool,
    case_insensitive: bool,
    text: &str,
) -> Result<Expr> {
    Ok(Expr::Like {
        expr: boxed(expr, text)?,
        pattern: boxed(pattern, text)?,
        negated,
        case_insensitive,
    })
}

/// Folds `-literal` into the literal, so `-5` is an INT and `-9223372036854775808` a BIGINT.
fn negate(e: Expr) -> Expr {
    if let Expr::Literal(l) = &e {
        use arrow_array::{cast::AsArray, types::*};
        let a = l.array();
        if !a.is_null(0) {
            match a.data_type() {
                arrow_schema::DataType::Int32 => {
                    let v = a.as_primitive::<Int32Type>().value(0);
                    return Expr::Literal(Literal::integer(-(v as i64)));
                }
                arrow_schema::DataType::Int64 => {
                    let v = a.as_primitive::<Int64Type>().value(0);
                    if let Some(n) = v.checked_neg() {
                        return Expr::Literal(Literal::bigint(n));
                    }
                }
                arrow_schema::DataType::Float64 => {
                    let v = a.as_primitive::<Float64Type>().value(0);
                    return Expr::Literal(Literal::double(-v));
                }
                arrow_schema::DataType::Decimal128(p, s) => {
                    let v = a.as_primitive::<Decimal128Type>().value(0);
                    if v == 9_223_372_036_854_775_808 && *s == 0 {
                        return Expr::Literal(Literal::bigint(i64::MIN));
                    }
                    if let Some(l) = Literal::decimal(-v, *p, *s) {
                        return Expr::Literal(l);
                    }
                }
                _ => {}
            }
        }
    }
    Expr::Negative(Box::new(e))
}

/// `CAST(<literal> AS <type>)` becomes the typed literal, which is how typed constants
/// (`CAST('NaN' AS DOUBLE)`, `CAST(NULL AS INT)`, `CAST('1.50' AS DECIMAL(10,2))`) print.
/// A cast that would fail stays a cast, so the error surfaces where it is evaluated.
fn fold_literal_cast(e: Expr) -> Expr {
    if let Expr::Cast { expr, type_name } = &e {
        // A TIMESTAMP reads text in the session's time zone, which the parser does not know:
        // the optimizer folds those casts under the session's settings.
        let t = type_name.to_ascii_lowercase();
        let zoned = t.starts_with("timestamp") && t != "timestamp_ntz";
        if matches!(**expr, Expr::Literal(_)) && !zoned {
            let schema = arrow_schema::Schema::empty();
            let folded = crate::bind::bind(&e, &crate::bind::BindContext::new(&schema));
            if let Ok(crate::PhysicalExpr::Literal(l)) = folded {
                let name = e.spark_name();
                return written(Expr::Literal(l), name);
            }
        }
    }
    e
}

fn hex_literal(hex: &str, text: &str) -> Result<Literal> {
    if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(FerroError::Analysis(format!(
            "invalid hex literal X'{hex}' in \"{text}\""
        )));
    }
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect();
    Ok(Literal::binary(&bytes))
}

/// Spark's numeric literal typing: `5` INT, `5000000000` BIGINT, `5L` BIGINT, `5S` SMALLINT,
/// `5Y` TINYINT, `1.5` DECIMAL, `1.5E0` / `1.5D` DOUBLE, `1.5F` FLOAT, `1.5BD` DECIMAL; integers
/// beyond BIGINT become DECIMAL. A typed integer out of its type's range is Spark's
/// `INVALID_NUMERIC_LITERAL_RANGE`.
fn number_literal(n: &str, long_suffix: bool, text: &str) -> Result<Literal> {
    let bad = || FerroError::Analysis(format!("invalid number literal '{n}' in \"{text}\""));
    let lower = n.to_ascii_lowercase();
    let range = |digits: &str, ty: &str, min: i64, max: i64| {
        FerroError::Analysis(format!(
            "[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal {digits} is outside the valid range for {ty} with minimum value of {min} and maximum value of {max}. Please adjust the value accordingly. SQLSTATE: 22003"
        ))
    };
    let integer = |digits: &str, ty: &str, min: i64, max: i64| -> Result<i64> {
        match digits.parse::<i128>() {
            Ok(v) if v >= min as i128 && v <= max as i128 => Ok(v as i64),
            Ok(_) => Err(range(digits, ty, min, max)),
            Err(_) => Err(bad()),
        }
    };
    if long_suffix {
        return integer(&lower, "bigint", i64::MIN, i64::MAX).map(Literal::bigint);
    }
    if let Some(d) = lower.strip_suffix("bd") {
        let plain = plain_decimal(d).ok_or_else(bad)?;
        return Literal::decimal_from_str(&plain)
            .ok_or_else(|| too_precise(&plain).unwrap_or_else(bad));
    }
    if let Some(d) = lower.strip_suffix('s') {
        let v = integer(d, "smallint", i16::MIN as i64, i16::MAX as i64)?;
        return Ok(Literal::new(std::sync::Arc::new(
            arrow_array::Int16Array::from(vec![v as i16]),
        )));
    }
    if let Some(d) = lower.strip_suffix('y') {
        let v = integer(d, "tinyint", i8::MIN as i64, i8::MAX as i64)?;
        return Ok(Literal::new(std::sync::Arc::new(
            arrow_array::Int8Array::from(vec![v as i8]),
        )));
    }
    if let Some(d) = lower.strip_suffix('f') {
        let v = d.parse::<f32>().map_err(|_| bad())?;
        if v.is_infinite() {
            return Err(FerroError::Analysis(format!(
                "[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal {d} is outside the valid range for float with minimum value of -3.4028235E38 and maximum value of 3.4028235E38. Please adjust the value accordingly. SQLSTATE: 22003"
            )));
        }
        return Ok(Literal::new(std::sync::Arc::new(
            arrow_array::Float32Array::from(vec![v]),
        )));
    }
    if let Some(d) = lower.strip_suffix('d') {
        let v = d.parse::<f64>().map_err(|_| bad())?;
        if v.is_infinite() {
            return Err(FerroError::Analysis(format!(
                "[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal {d} is outside the valid range for double with minimum value of -1.7976931348623157E308 and maximum value of 1.7976931348623157E308. Please adjust the value accordingly. SQLSTATE: 22003"
            )));
        }
        return Ok(Literal::double(v));
    }
    if lower.contains('e') {
        let v = lower.parse::<f64>().map_err(|_| bad())?;
        if v.is_infinite() {
            return Err(FerroError::Analysis(format!(
                "[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal {n} is outside the valid range for double with minimum value of -1.7976931348623157E308 and maximum value of 1.7976931348623157E308. Please adjust the value accordingly. SQLSTATE: 22003"
            )));
        }
        return Ok(Literal::double(v));
    }
    if !lower.contains('.') {
        if let Ok(v) = lower.parse::<i64>() {
            return Ok(Literal::integer(v));
        }
    }
    Literal::decimal_from_str(&lower).ok_or_else(|| too_precise(&lower).unwrap_or_else(bad))
}

/// Spark's refusal of a decimal literal of more than 38 digits (before or after the point).
fn too_precise(digits: &str) -> Option<FerroError> {
    let body = digits.trim_start_matches(['-', '+']);
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let precision = int.trim_start_matches('0').len() + frac.len();
    (precision > 38 || frac.len() > 38).then(|| {
        FerroError::Analysis(format!(
            "[DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION] Decimal precision {} exceeds max precision 38. SQLSTATE: 22003",
            precision.max(frac.len())
        ))
    })
}

/// `percentile_cont(p) WITHIN GROUP (ORDER BY v [DESC])` (and `percentile_disc`) as the
/// aggregate over `[v, p, descending]`; other functions take no WITHIN GROUP, and these two
/// need one, with Spark's error classes.
fn within_group(
    f: &ast::Function,
    name: &str,
    args: Vec<Expr>,
    distinct: bool,
    text: &str,
) -> Result<(Vec<Expr>, Option<crate::collected::WithinGroup>)> {
    let ordered = matches!(name, "percentile_cont" | "percentile_disc");
    let invalid =
        |class: &str, what: String| FerroError::Analysis(format!("[{class}] {what} in \"{text}\""));
    if f.within_group.is_empty() {
        if ordered {
            return Err(invalid(
                "INVALID_WITHIN_GROUP_EXPRESSION.WITHIN_GROUP_MISSING",
                format!("The function `{name}` requires the WITHIN GROUP (ORDER BY ...) clause"),
            ));
        }
        return Ok((args, None));
    }
    let one_ordering = || match &f.within_group[..] {
        [order] => Ok(order),
        more => Err(invalid(
            "INVALID_WITHIN_GROUP_EXPRESSION.WRONG_NUM_ORDERINGS",
            format!(
                "The function `{name}` requires 1 orderings in WITHIN GROUP but got {}",
                more.len()
            ),
        )),
    };
    if matches!(name, "mode" | "listagg" | "string_agg") {
        let order = one_ordering()?;
        let order = crate::collected::WithinGroup {
            key: convert(&order.expr, text)?,
            descending: matches!(order.options.sort, Some(ast::OrderBySort::Desc)),
            nulls_first: order.options.nulls_first,
        };
        return Ok((args, Some(order)));
    }
    if !ordered {
        return Err(invalid(
            "INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX",
            format!("The function `{name}` does not support WITHIN GROUP"),
        ));
    }
    if distinct {
        return Err(invalid(
            "INVALID_WITHIN_GROUP_EXPRESSION.DISTINCT_UNSUPPORTED",
            format!("The function `{name}` does not support DISTINCT with WITHIN GROUP"),
        ));
    }
    if args.len() != 1 {
        return Err(invalid(
            "WRONG_NUM_ARGS.WITHOUT_SUGGESTION",
            format!(
                "The `{name}` requires 1 parameters but the actual number is {}",
                args.len()
            ),
        ));
    }
    let order = one_ordering()?;
    let descending = matches!(order.options.sort, Some(ast::OrderBySort::Desc));
    let mut args = args;
    args.insert(0, convert(&order.expr, text)?);
    args.push(Expr::Literal(Literal::boolean(descending)));
    Ok((args, None))
}

/// `1.5e2` as plain decimal text (`150`), as Java's `BigDecimal` reads it before Spark's
/// DECIMAL takes it (a negative scale becomes scale 0).
fn plain_decimal(text: &str) -> Option<String> {
    let Some((mantissa, exp)) = text.split_once('e') else {
        return Some(text.to_string());
    };
    let exp: i32 = exp.parse().ok()?;
    let (neg, m) = match mantissa.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, mantissa),
    };
    let (int, frac) = m.split_once('.').unwrap_or((m, ""));
    let digits = format!("{int}{frac}");
    let point = int.len() as i32 + exp;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        format!(
            "{}.{}",
            &digits[..point as usize],
            &digits[point as usize..]
        )
    };
    Some(if neg { format!("-{body}") } else { body })
}

fn value_literal(v: &Value, text: &str) -> Result<Literal> {
    Ok(match v {
        Value::Number(n, long) => number_literal(n, *long, text)?,
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Literal::string(s),
        Value::Boolean(b) => Literal::boolean(*b),
        Value::Null => Literal::null(&arrow_schema::DataType::Null),
        Value::HexStringLiteral(h) => hex_literal(h, text)?,
        other => return Err(unsupported(format!("literal {other}"), text)),
    })
}

fn function(f: &ast::Function, text: &str) -> Result<Expr> {
    let name = f.name.to_string().to_ascii_lowercase();
    let mut distinct = false;
    let args: Vec<Expr> = match &f.args {
        FunctionArguments::None => Vec::new(),
        FunctionArguments::List(list) => {
            distinct = matches!(
                list.duplicate_treatment,
                Some(ast::DuplicateTreatment::Distinct)
            );
            list.args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => convert(e, text),
                    // count(DISTINCT *): the distinct rows of every column.
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard)
                        if name == "count" && distinct =>
                    {
                        Ok(Expr::Function {
                            name: STAR_FN.into(),
                            args: vec![Expr::Column("*".into())],
                        })
                    }
                    // count(*) counts rows: the same as count() here.
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if name == "count" => {
                        Ok(Expr::Literal(Literal::integer(1)))
                    }
                    // `f(t.*)`: the relation's (or struct's) columns, spread by the analyzer.
                    FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(prefix)) => {
                        Ok(star_marker(prefix))
                    }
                    other => Err(unsupported(format!("argument {other}"), text)),
                })
                .collect::<Result<_>>()?
        }
        other => return Err(unsupported(format!("arguments {other}"), text)),
    };
    let (mut args, order) = within_group(f, &name, args, distinct, text)?;
    let unseeded = match name.as_str() {
        "rand" | "random" | "randn" => args.is_empty(),
        "shuffle" | "randstr" => args.len() == 1,
        "uniform" => args.len() == 2,
        _ => false,
    };
    if unseeded {
        // Spark picks the seed when it analyses the call: every copy of the call (a CTE read
        // twice) draws the same values, and the column is named after it (`uniform` and
        // `randstr` hide a seed not written).
        let hidden = matches!(name.as_str(), "uniform" | "randstr").then(|| {
            Expr::Function {
                name: name.clone(),
                args: args.clone(),
            }
            .spark_name()
        });
        args.push(Expr::Literal(Literal::bigint(
            crate::functions::random::fresh_seed(),
        )));
        if let Some(hidden) = hidden {
            return Ok(Expr::Written {
                expr: Box::new(Expr::Function { name, args }),
                name: hidden,
            });
        }
    }
    if let Some(e) = timestamp_unit_call(&name, &args)? {
        return Ok(e);
    }
    if name == "count" && args.is_empty() {
        return Err(FerroError::Analysis(format!(
            "[WRONG_NUM_ARGS.WITH_SUGGESTION] The `count` requires >= 1 parameters but the actual number is 0. Please write count(*) to count rows (or set \"spark.sql.legacy.allowParameterlessCount\" to \"true\"). SQLSTATE: 42605 in \"{text}\""
        )));
    }
    let ignore_nulls = matches!(f.null_treatment, Some(ast::NullTreatment::IgnoreNulls));
    // `agg(x) FILTER (WHERE c)` reads each argument as `CASE WHEN c THEN x END`: the rows `c`
    // rejects reach the aggregate as NULLs, which every aggregate taken here skips. Those that
    // keep NULLs (`first`, `last`, `any_value` without IGNORE NULLS) are refused rather than
    // answered wrong.
    let mut filter_name = None;
    let mut filter_cond = None;
    let written_args = args.clone();
    let args = match &f.filter {
        None => args,
        Some(_) if f.over.is_some() => {
            return Err(FerroError::Analysis(format!(
                "[_LEGACY_ERROR_TEMP_1030] Window aggregate function with filter predicate is not supported yet in \"{text}\""
            )));
        }
        Some(cond) => {
            let keeps_nulls = matches!(
                name.as_str(),
                "first" | "last" | "first_value" | "last_value" | "any_value"
            ) && !ignore_nulls
                && !matches!(&args[..], [_, Expr::Literal(l)] if l.to_string() == "true");
            if keeps_nulls {
                return Err(FerroError::Unsupported(format!(
                    "{name}(...) FILTER (WHERE ...) without IGNORE NULLS in \"{text}\": write {name}(CASE WHEN cond THEN x END, true) for the first non-NULL value"
                )));
            }
            let cond = convert(cond, text)?;
            let mut random = false;
            cond.visit(&mut |x| {
                random |= matches!(x, Expr::Function { name, .. } if crate::functions::random::draws_per_row(name));
            });
            if random {
                return Err(FerroError::Analysis(format!(
                    "[INVALID_AGGREGATE_FILTER.NON_DETERMINISTIC] The FILTER expression \"{cond}\" in an aggregate function is invalid. Expected a FILTER expression without any non-deterministic functions. in \"{text}\""
                )));
            }
            let call = if distinct || ignore_nulls {
                Expr::Aggregate {
                    name: name.clone(),
                    args: args.clone(),
                    distinct,
                    ignore_nulls,
                }
            } else {
                Expr::Function {
                    name: name.clone(),
                    args: args.clone(),
                }
            };
            filter_name = Some(format!(
                "{} FILTER (WHERE {})",
                call.spark_name(),
                cond.spark_name()
            ));
            filter_cond = Some(cond.clone());
            // Constant parameters (`first(x, true)`, `percentile(x, 0.5)`) stay as they are;
            // `count(*)`, all constants, has its one argument filtered.
            let is_literal = |a: &Expr| matches!(a.without_written(), Expr::Literal(_));
            let all_constant = args.iter().all(is_literal);
            args.into_iter()
                .enumerate()
                .map(|(i, a)| {
                    if is_literal(&a) && !(all_constant && i == 0) {
                        return a;
                    }
                    Expr::Case {
                        branches: vec![(cond.clone(), a)],
                        otherwise: None,
                    }
                })
                .collect()
        }
    };
    if crate::collected::is_collected(&name) {
        // A FILTER reaches the WITHIN GROUP key too (`mode`'s value is its key).
        let written_order = order.clone();
        let not_collected = || FerroError::Internal(format!("{name} is not collected"));
        let Some(c) = filter_cond else {
            return crate::collected::rewrite(&name, args, distinct, order)?
                .ok_or_else(not_collected);
        };
        // Named after the call as written, before the FILTER reached its arguments.
        let shown = match crate::collected::rewrite(&name, written_args, distinct, written_order)? {
            Some(Expr::Written { name, .. }) => name,
            _ => return Err(not_collected()),
        };
        let order = match (order, &c) {
            (Some(mut o), c) => {
                o.key = Expr::Case {
                    branches: vec![(c.clone(), o.key)],
                    otherwise: None,
                };
                Some(o)
            }
            (None, _) => None,
        };
        let call =
            crate::collected::rewrite(&name, args, distinct, order)?.ok_or_else(not_collected)?;
        return Ok(Expr::Written {
            expr: Box::new(call.without_written()),
            name: format!("{shown} FILTER (WHERE {})", c.spark_name()),
        });
    }
    if order.is_some() {
        return Err(FerroError::Internal(format!(
            "a WITHIN GROUP left on {name}"
        )));
    }
    if let Some(label) = filter_name {
        let call = if distinct || ignore_nulls {
            Expr::Aggregate {
                name,
                args,
                distinct,
                ignore_nulls,
            }
        } else {
            Expr::Function { name, args }
        };
        return Ok(written(call, label));
    }
    if distinct || ignore_nulls {
        return Ok(Expr::Aggregate {
            name,
            args,
            distinct,
            ignore_nulls,
        });
    }
    let two = |args: Vec<Expr>| -> Result<(Box<Expr>, Box<Expr>)> {
        let mut it = args.into_iter();
        match (it.next(), it.next(), it.next()) {
            (Some(a), Some(b), None) => Ok((Box::new(a), Box::new(b))),
            _ => Err(FerroError::Analysis(format!(
                "[WRONG_NUM_ARGS] {name} takes 2 arguments in \"{text}\""
            ))),
        }
    };
    let args_name = args
        .iter()
        .map(Expr::spark_name)
        .collect::<Vec<_>>()
        .join(", ");
    Ok(match name.as_str() {
        "try_cast" | "cast" => {
            return Err(unsupported(format!("{name} without AS"), text));
        }
        "startswith" | "endswith" | "contains" => {
            let op = match name.as_str() {
                "startswith" => StringMatch::StartsWith,
                "endswith" => StringMatch::EndsWith,
                _ => StringMatch::Contains,
            };
            let (expr, pattern) = two(args)?;
            Expr::StringMatch { op, expr, pattern }
        }
        // Spark's shorthands: `nullifzero(x)` is `nullif(x, 0)`, `zeroifnull(x)` `nvl(x, 0)`.
        "nullifzero" | "zeroifnull" if args.len() == 1 => written(
            Expr::Function {
                name: if name == "nullifzero" {
                    "nullif"
                } else {
                    "nvl"
                }
                .into(),
                args: vec![
                    args.into_iter()
                        .next()
                        .expect("one argument, checked above"),
                    Expr::Literal(Literal::integer(0)),
                ],
            },
            format!("{name}({})", args_name),
        ),
        // Spark's cast aliases: `int(x)` is `CAST(x AS INT)`.
        n if (CAST_ALIASES.contains(&n) || n == "timestamp_ntz") && args.len() == 1 => {
            let type_name = if name == "decimal" {
                "decimal(10,0)".to_string()
            } else {
                name.clone()
            };
            // Spark shows only the casts written as CAST in a column name.
            written(
                Expr::Cast {
                    expr: Box::new(
                        args.into_iter()
                            .next()
                            .expect("one argument, checked above"),
                    ),
                    type_name,
                },
                args_name,
            )
        }
        // `count_if(c)` counts the rows where `c` is true; `equal_null(a, b)` is `a <=> b`.
        "count_if" if args.len() == 1 => {
            let cond = args
                .into_iter()
                .next()
                .expect("one argument, checked above");
            count_where(cond, format!("count_if({args_name})"))
        }
        // `regr_count(y, x)` counts the pairs with neither value NULL.
        "regr_count" if args.len() == 2 => {
            let both = Expr::IsNotNull(Box::new(args[0].clone()))
                .and(Expr::IsNotNull(Box::new(args[1].clone())));
            count_where(both, format!("regr_count({args_name})"))
        }
        // `regr_avgx(y, x)` / `regr_avgy(y, x)`: the average of `x` / `y` over the pairs with
        // neither value NULL (Spark's replacement).
        "regr_avgx" | "regr_avgy" if args.len() == 2 => {
            let both = Expr::IsNotNull(Box::new(args[0].clone()))
                .and(Expr::IsNotNull(Box::new(args[1].clone())));
            let value = if name == "regr_avgx" {
                &args[1]
            } else {
                &args[0]
            };
            written(
                Expr::Function {
                    name: "avg".into(),
                    args: vec![Expr::Case {
                        branches: vec![(both, value.clone())],
                        otherwise: None,
                    }],
                },
                format!("{name}({args_name})"),
            )
        }
        "equal_null" => {
            let (l, r) = two(args)?;
            written(
                Expr::Binary {
                    left: l,
                    op: BinaryOp::EqNullSafe,
                    right: r,
                },
                format!("equal_null({args_name})"),
            )
        }
        "isnull" => Expr::IsNull(two_or_one(args, &name, text)?),
        "isnotnull" => Expr::IsNotNull(two_or_one(args, &name, text)?),
        _ => Expr::Function { name, args },
    })
}

/// `timestampdiff(unit, a, b)` (also `datediff` / `date_diff` / `timediff` /
/// `timestamp_diff` with a unit): the native `timestampdiff` with the unit as a string
/// literal, counting as Java's `ChronoUnit.between` does over the session zone's local times
/// ([`crate::functions::datetime_units`]). `timestampadd` (`dateadd` / `date_add` with a
/// unit) adds an interval of the unit. A unit written as a string (`'MINUTE'`) is Spark's
/// `INVALID_PARAMETER_VALUE.DATETIME_UNIT`, raised by its parser.
fn timestamp_unit_call(name: &str, args: &[Expr]) -> Result<Option<Expr>> {
    let adding = matches!(
        name,
        "timestampadd" | "dateadd" | "date_add" | "timestamp_add"
    );
    let diffing = matches!(
        name,
        "timestampdiff" | "datediff" | "date_diff" | "timediff" | "timestamp_diff"
    );
    if !(adding || diffing) {
        return Ok(None);
    }
    if let [Expr::Literal(l), _, _] = args {
        use arrow_array::{cast::AsArray, Array};
        if let Some(s) = l.array().as_string_opt::<i32>().filter(|s| !s.is_null(0)) {
            return Err(crate::functions::datetime_units::invalid_unit(
                name,
                &format!("'{}'", s.value(0)),
            ));
        }
    }
    let [Expr::Column(written_unit), a, b] = args else {
        return Ok(None);
    };
    let unit = written_unit.to_ascii_uppercase();
    if !crate::functions::datetime_units::DATETIME_UNITS.contains(&unit.as_str()) {
        return Ok(None);
    }
    // Spark names every alias by the function it calls.
    let call = if adding {
        "timestampadd"
    } else {
        "timestampdiff"
    };
    // The unit as written (Spark keeps its case in the name: `timestampdiff(second, a, b)`).
    let shown = if diffing { written_unit } else { &unit };
    let label = format!("{call}({shown}, {}, {})", a.spark_name(), b.spark_name());
    if diffing {
        let f = Expr::Function {
            name: "timestampdiff".into(),
            // The unit as written, which the column's name shows (the binder reads any case).
            args: vec![
                Expr::Literal(Literal::string(written_unit)),
                a.clone(),
                b.clone(),
            ],
        };
        return Ok(Some(written(f, label)));
    }
    // Microseconds per unit (0: a unit of months).
    let micros: i64 = match unit.as_str() {
        "MICROSECOND" => 1,
        "MILLISECOND" => 1_000,
        "SECOND" => 1_000_000,
        "MINUTE" => 60_000_000,
        "HOUR" => 3_600_000_000,
        "DAY" | "DAYOFYEAR" => 86_400_000_000,
        "WEEK" => 604_800_000_000,
        _ => 0,
    };
    let t = format!("CAST(({b}) AS TIMESTAMP)");
    let sql = if micros > 0 {
        format!("{t} + INTERVAL '{micros}' MICROSECOND * ({a})")
    } else {
        let k = match unit.as_str() {
            "MONTH" => 1,
            "QUARTER" => 3,
            _ => 12,
        };
        format!("{t} + make_ym_interval(0, ({a}) * {k})")
    };
    Ok(Some(written(parse_expr(&sql)?, label)))
}

/// `f(...) OVER (...)`. A named window (`OVER w`) must have been replaced by its
/// definition (the SQL planner does that from the WINDOW clause).
fn windowed(f: &ast::Function, text: &str) -> Result<Expr> {
    let spec = match &f.over {
        Some(ast::WindowType::WindowSpec(spec)) if spec.window_name.is_none() => spec,
        Some(other) => {
            return Err(FerroError::Analysis(format!(
                "[MISSING_WINDOW_SPECIFICATION] Window specification `{other}` is not defined in the WINDOW clause of \"{text}\""
            )))
        }
        None => return function(f, text),
    };
    let mut plain = f.clone();
    plain.over = None;
    let null_treatment = plain.null_treatment.take();
    let mut func = function(&plain, text)?;
    if matches!(null_treatment, Some(ast::NullTreatment::IgnoreNulls)) {
        func = match func {
            Expr::Function { name, args } | Expr::Aggregate { name, args, .. } => Expr::Aggregate {
                name,
                args,
                distinct: false,
                ignore_nulls: true,
            },
            other => other,
        };
    }
    let partition_by = spec
        .partition_by
        .iter()
        .map(|e| convert(e, text))
        .collect::<Result<Vec<_>>>()?;
    let order_by = spec
        .order_by
        .iter()
        .map(|o| {
            let ascending = !matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            Ok(Expr::SortKey {
                expr: boxed(&o.expr, text)?,
                ascending,
                nulls_first: o.options.nulls_first.unwrap_or(ascending),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let frame = match &spec.window_frame {
        None => None,
        Some(w) => {
            let rows = match w.units {
                ast::WindowFrameUnits::Rows => true,
                ast::WindowFrameUnits::Range => false,
                ast::WindowFrameUnits::Groups => {
                    return Err(unsupported("GROUPS frames", text));
                }
            };
            let edge = |b: &ast::WindowFrameBound| -> Result<crate::expr::FrameEdge> {
                use crate::expr::FrameEdge;
                Ok(match b {
                    ast::WindowFrameBound::CurrentRow => FrameEdge::CurrentRow,
                    ast::WindowFrameBound::Preceding(None) => FrameEdge::UnboundedPreceding,
                    ast::WindowFrameBound::Following(None) => FrameEdge::UnboundedFollowing,
                    ast::WindowFrameBound::Preceding(Some(e)) => {
                        FrameEdge::Preceding(convert(e, text)?)
                    }
                    ast::WindowFrameBound::Following(Some(e)) => {
                        FrameEdge::Following(convert(e, text)?)
                    }
                })
            };
            Some(Box::new(crate::expr::FrameSpec {
                rows,
                start: edge(&w.start_bound)?,
                end: match &w.end_bound {
                    Some(b) => edge(b)?,
                    None => crate::expr::FrameEdge::CurrentRow,
                },
            }))
        }
    };
    Ok(crate::collected::over(func, partition_by, order_by, frame))
}

fn two_or_one(args: Vec<Expr>, name: &str, text: &str) -> Result<Box<Expr>> {
    let mut it = args.into_iter();
    match (it.next(), it.next()) {
        (Some(a), None) => Ok(Box::new(a)),
        _ => Err(FerroError::Analysis(format!(
            "[WRONG_NUM_ARGS] {name} takes 1 argument in \"{text}\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;

    fn round_trip(text: &str) -> Expr {
        let e = parse_expr(text).unwrap_or_else(|err| panic!("{text}: {err}"));
        let printed = e.to_string();
        let again = parse_expr(&printed).unwrap_or_else(|err| panic!("{printed}: {err}"));
        assert_eq!(e, again, "{text} printed as {printed}");
        e
    }

    /// The name Spark generates for `text` as an unaliased select item.
    fn generated_name(text: &str) -> String {
        let dialect = SparkDialect {};
        let tokens = crate::dialect::tokenize(text).expect("tokenizes");
        let ast = Parser::new(&dialect)
            .with_tokens_with_locations(tokens)
            .parse_expr()
            .expect("parses");
        convert_ast_named(&ast, text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .output_name()
    }

    #[test]
    fn unaliased_items_take_the_names_spark_generates() {
        for (text, name) in [
            (
                "count(a) FILTER (WHERE a = 1)",
                "count(a) FILTER (WHERE (a = 1))",
            ),
            (
                "sum(DISTINCT s) FILTER (WHERE id > 2)",
                "sum(DISTINCT s) FILTER (WHERE (id > 2))",
            ),
            (
                "INTERVAL '1-2' YEAR TO MONTH",
                "INTERVAL '1-2' YEAR TO MONTH",
            ),
            ("interval 2 second", "INTERVAL '02' SECOND"),
            ("interval 13.123456 seconds", "INTERVAL '13.123456' SECOND"),
            ("interval '-59' minute", "INTERVAL '-59' MINUTE"),
            (
                "interval '20 15:40' day to minute",
                "INTERVAL '20 15:40' DAY TO MINUTE",
            ),
            (
                "interval '1 2:3:4.001' day to second",
                "INTERVAL '1 02:03:04.001' DAY TO SECOND",
            ),
            ("interval 2 years", "INTERVAL '2' YEAR"),
            ("interval -11 month", "INTERVAL '-11' MONTH"),
            ("interval 1 day", "INTERVAL '1' DAY"),
            ("CAST(NULL AS INT)", "CAST(NULL AS INT)"),
            ("CAST(x AS long)", "x"),
            ("CAST(x + 1 AS long)", "CAST((x + 1) AS BIGINT)"),
            (
                "CAST(x * 2 AS interval year to month)",
                "CAST((x * 2) AS INTERVAL YEAR TO MONTH)",
            ),
            ("float(2.0)", "2.0"),
            ("+key", "(+ key)"),
            ("- -10", "(- -10)"),
            ("-10", "-10"),
            ("positive(1)", "(+ 1)"),
            ("a != 1", "(NOT (a = 1))"),
            ("if(a != 1, 1, 2)", "(IF((NOT (a = 1)), 1, 2))"),
            ("5 div 2", "(5 div 2)"),
            ("ceil(x)", "CEIL(x)"),
            ("ceiling(x)", "ceiling(x)"),
            ("trim(BOTH 'x' FROM s)", "TRIM(BOTH x FROM s)"),
            ("trim(LEADING 'x' FROM s)", "TRIM(LEADING x FROM s)"),
            ("substr('Spark SQL', 5)", "substr(Spark SQL, 5, 2147483647)"),
            (
                "substring('Spark SQL', 5)",
                "substring(Spark SQL, 5, 2147483647)",
            ),
            ("split(s, ',')", "split(s, ,, -1)"),
            ("sort_array(a)", "sort_array(a, true)"),
            (
                "make_interval(1, 2, 3)",
                "make_interval(1, 2, 3, 0, 0, 0, 0.000000)",
            ),
            ("X'2379ACFE'", "X'2379ACFE'"),
            ("1E10", "1.0E10"),
            (
                "TIMESTAMP '2016-03-11 20:54:00.000'",
                "TIMESTAMP '2016-03-11 20:54:00'",
            ),
            (
                "timestampadd(HOUR, -1, TIMESTAMP '2022-02-25 01:02:03')",
                "timestampadd(HOUR, -1, TIMESTAMP '2022-02-25 01:02:03')",
            ),
            ("nullifzero(0)", "nullifzero(0)"),
            (
                "transform(a, x -> x + 1)",
                "transform(a, lambdafunction((namedlambdavariable() + 1), namedlambdavariable()))",
            ),
        ] {
            assert_eq!(generated_name(text), name, "{text}");
        }
    }

    #[test]
    fn parses_and_prints_back() {
        for t in [
            "a < 5 AND b IS NOT NULL",
            "transform(a, x -> x + 1)",
            "aggregate(a, 0, (acc, x) -> acc + x.f, acc -> acc * c)",
            "NOT (a = 1 OR b <> 2)",
            "x IN (1, 2, NULL)",
            "x NOT IN ('a', 'b''c')",
            "d BETWEEN DATE '1995-01-01' AND DATE '1995-03-31'",
            "s LIKE 'ab%' AND s NOT LIKE '_z'",
            "a <=> NULL",
            "(a + 1) * 2 > b - 3 / 4",
            "CAST(a AS DOUBLE) >= 1.5E0",
            "CAST(x AS DECIMAL(10,2)) = 12.34",
            "ts >= TIMESTAMP '2020-01-01 00:00:00'",
            "s.a.b = 'x'",
            "`weird col` = 1",
            "a % 3 = -1",
            "startswith(s, 'ab')",
            "s = 'it\\'s a \\\\ backslash'",
            "-(a) < 0",
            "a + 1 AS `b c`",
            "ts DESC NULLS FIRST",
            "ts ASC NULLS LAST",
            "a - (b - c) = 0",
        ] {
            round_trip(t);
        }
    }

    #[test]
    fn number_literals_are_typed_like_spark() {
        let ty = |t: &str| match parse_expr(t) {
            Ok(Expr::Literal(l)) => l.data_type().clone(),
            other => panic!("{t}: {other:?}"),
        };
        assert_eq!(ty("5"), DataType::Int32);
        assert_eq!(ty("-5"), DataType::Int32);
        assert_eq!(ty("5000000000"), DataType::Int64);
        assert_eq!(ty("-9223372036854775808"), DataType::Int64);
        assert_eq!(ty("1.50"), DataType::Decimal128(3, 2));
        assert_eq!(ty("1.5E0"), DataType::Float64);
        assert_eq!(ty("99999999999999999999"), DataType::Decimal128(20, 0));
        assert_eq!(ty("'x'"), DataType::Utf8);
    }

    #[test]
    fn doubles_print_exactly() {
        for v in [
            0.1,
            -2.5e-300,
            1.0 / 3.0,
            f64::MAX,
            f64::NAN,
            -0.0,
            f64::INFINITY,
        ] {
            let e = Expr::Literal(Literal::double(v));
            let back = parse_expr(&e.to_string());
            assert!(back.is_ok(), "{e}");
        }
        assert_eq!(round_trip("0.1E0"), Expr::Literal(Literal::double(0.1)));
    }

    #[test]
    fn bad_text_is_an_analysis_error() {
        assert!(parse_expr("NOT NULL").is_ok());
        for t in [
            "a <",
            "a = = 1",
            "SELECT 1",
            "a b c",
            "",
            "a NOT NULL",
            "a NOTNULL",
        ] {
            match parse_expr(t) {
                Err(FerroError::Analysis(m)) => assert!(
                    m.contains("PARSE_SYNTAX_ERROR") || m.contains("unsupported"),
                    "{m}"
                ),
                other => panic!("{t}: {other:?}"),
            }
        }
    }
}
#[cfg(test)]
mod alias_probe {
    #[test]
    fn probe() {
        let e = super::parse_expr("a + 1 AS b").expect("parses");
        assert!(matches!(e, crate::Expr::Alias { .. }), "{e:?}");
    }
}
