//! Which output columns of a view's query carry a name Spark generated (`upper(p)`,
//! `count(1)`): a permanent view may not keep such names
//! (`CREATE_PERMANENT_VIEW_WITHOUT_ALIAS`), since they are not stable across versions.
//!
//! Read from the query's text, as Spark marks the aliases its analyzer makes up: an
//! expression in a select list without `AS` that is neither a column nor a literal, also
//! when a `SELECT *` passes it up from a derived table or the first branch of a set
//! operation.

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::dialect::SparkDialect;
use sqlparser::ast::{self, SelectItem, SetExpr, Statement, TableFactor};
use sqlparser::parser::{Parser, ParserError};

/// For each output column of the query `text`, whether its name was generated; `None` for a
/// column whose origin the text does not show (a table's columns).
pub fn generated_names(text: &str) -> Result<Vec<Option<bool>>> {
    let tokens = ferrospark_expr::dialect::tokenize(text)
        .map_err(|e| FerroError::Analysis(ParserError::from(e).to_string()))?;
    let statement = Parser::new(&SparkDialect {})
        .with_recursion_limit(512)
        .with_tokens_with_locations(tokens)
        .parse_statement()
        .map_err(|e| FerroError::Analysis(e.to_string()))?;
    Ok(match statement {
        Statement::Query(q) => of_query(&q),
        _ => Vec::new(),
    })
}

fn of_query(q: &ast::Query) -> Vec<Option<bool>> {
    of_body(&q.body)
}

fn of_body(body: &SetExpr) -> Vec<Option<bool>> {
    match body {
        SetExpr::Select(s) => of_select(s),
        SetExpr::Query(q) => of_query(q),
        SetExpr::SetOperation { left, .. } => of_body(left),
        SetExpr::Values(v) => vec![Some(false); v.rows.first().map_or(0, |r| r.content.len())],
        _ => Vec::new(),
    }
}

fn of_select(s: &ast::Select) -> Vec<Option<bool>> {
    let mut out = Vec::new();
    for item in &s.projection {
        match item {
            SelectItem::UnnamedExpr(e) => out.push(Some(generated(e))),
            SelectItem::ExprWithAlias { .. } => out.push(Some(false)),
            SelectItem::ExprWithAliases { aliases, .. } => {
                out.extend(aliases.iter().map(|_| Some(false)))
            }
            SelectItem::Wildcard(_) => match s.from.as_slice() {
                // `SELECT * FROM (subquery)`: the subquery's columns, names and all.
                [t] if t.joins.is_empty() => match &t.relation {
                    TableFactor::Derived { subquery, .. } => out.extend(of_query(subquery)),
                    _ => out.push(None),
                },
                _ => out.push(None),
            },
            SelectItem::QualifiedWildcard(..) => out.push(None),
        }
    }
    out
}

/// Whether Spark makes up a name for `e` written without an alias.
fn generated(e: &ast::Expr) -> bool {
    !matches!(
        e,
        ast::Expr::Identifier(_)
            | ast::Expr::CompoundIdentifier(_)
            | ast::Expr::Value(_)
            | ast::Expr::TypedString { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(text: &str) -> Vec<Option<bool>> {
        generated_names(text).expect("parses")
    }

    /// The cases are PySpark's answers to `CREATE VIEW` over each query.
    #[test]
    fn expressions_without_aliases_have_generated_names() {
        assert_eq!(
            flags("SELECT p, count(*) FROM t GROUP BY p"),
            [Some(false), Some(true)]
        );
        assert_eq!(flags("SELECT p, 1 FROM t"), [Some(false), Some(false)]);
        assert_eq!(
            flags("SELECT p + 1 AS q, t.p FROM t"),
            [Some(false), Some(false)]
        );
        assert_eq!(
            flags("SELECT * FROM (SELECT upper(p) FROM t) s"),
            [Some(true)]
        );
        assert_eq!(flags("SELECT * FROM t"), [None]);
        assert_eq!(flags("SELECT 1 UNION ALL SELECT 2"), [Some(false)]);
        assert_eq!(flags("VALUES (1, 2)"), [Some(false), Some(false)]);
    }
}
