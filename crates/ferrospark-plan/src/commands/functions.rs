//! SQL functions (`CREATE [TEMPORARY] FUNCTION f(x INT) RETURNS INT RETURN x + 1`): a call
//! is replaced by the function's expression over its arguments, each cast to its
//! parameter's type and the result to the declared return type, before the query is
//! planned (Spark inlines SQL scalar functions the same way).

use std::ops::ControlFlow;

use ferrospark_catalog::CatalogFunction;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::dialect::SparkDialect;
use sqlparser::ast;
use sqlparser::parser::Parser;

use crate::engine::QueryEngine;

fn parse_expr(text: &str) -> Result<ast::Expr> {
    ferrospark_expr::dialect::tokenize(text)
        .map_err(sqlparser::parser::ParserError::from)
        .and_then(|tokens| {
            Parser::new(&SparkDialect {})
                .with_tokens_with_locations(tokens)
                .parse_expr()
        })
        .map_err(|e| {
            FerroError::Analysis(format!(
                "[PARSE_SYNTAX_ERROR] Syntax error in a SQL function's body: {e}\n== SQL ==\n{text}"
            ))
        })
}

fn cast_to(e: ast::Expr, type_text: &str) -> Result<ast::Expr> {
    parse_expr(&format!("CAST(({e}) AS {type_text})"))
}

/// The expression a call of `f` with `args` stands for.
pub(crate) fn expand(f: &CatalogFunction, args: &[ast::Expr]) -> Result<ast::Expr> {
    if args.len() != f.params.len() {
        return Err(FerroError::Analysis(format!(
            "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `{}` requires {} parameters but the actual number is {}. SQLSTATE: 42605",
            f.name,
            f.params.len(),
            args.len()
        )));
    }
    let mut body = parse_expr(&f.body)?;
    let bound: Vec<(String, ast::Expr)> = f
        .params
        .iter()
        .zip(args)
        .map(|((n, t), a)| Ok((n.to_lowercase(), cast_to(a.clone(), t)?)))
        .collect::<Result<_>>()?;
    let _ = ast::visit_expressions_mut(&mut body, |e: &mut ast::Expr| {
        if let ast::Expr::Identifier(id) = e {
            if let Some((_, v)) = bound.iter().find(|(n, _)| *n == id.value.to_lowercase()) {
                *e = ast::Expr::Nested(Box::new(v.clone()));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    match &f.returns {
        Some(t) => cast_to(body, t),
        None => Ok(ast::Expr::Nested(Box::new(body))),
    }
}

/// Checks a new function's body plans over its parameters.
pub(crate) fn check_body(
    engine: &QueryEngine,
    params: &[(String, String)],
    returns: Option<&str>,
    body: &str,
) -> Result<()> {
    let f = CatalogFunction {
        database: String::new(),
        name: "f".into(),
        params: params.to_vec(),
        returns: returns.map(str::to_string),
        body: body.to_string(),
        created_ms: 0,
    };
    let args: Vec<ast::Expr> = params
        .iter()
        .map(|_| ast::Expr::value(ast::Value::Null))
        .collect();
    let e = expand(&f, &args)?;
    engine.query_plan(&format!("SELECT {e}")).map(|_| ())
}
