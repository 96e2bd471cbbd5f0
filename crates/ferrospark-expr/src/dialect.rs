//! Spark SQL's dialect for `sqlparser`: Databricks' rules (backquoted identifiers, backslash
//! escapes, `<=>`, `!`), plus what Spark accepts and Databricks' dialect does not: the integer
//! division operator `a DIV b` and interval literals without a unit qualifier
//! (`INTERVAL '1 day 2 hours'`).

use sqlparser::ast::{BinaryOperator, Expr};
use sqlparser::dialect::{DatabricksDialect, Dialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};

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

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
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
