//! `BooleanSimplification` and `PruneFilters`: `x AND true` is `x`, `x OR true` is `true`,
//! a filter that is always true disappears, one that is never true becomes an empty relation.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use ferrospark_common::{Config, Result};
use ferrospark_expr::{BinaryOp, Expr, Literal};

use super::OptimizerRule;
use crate::logical::expr_util::transform_up;
use crate::logical::{rewrite_expressions, LogicalPlan};

/// Simplifies boolean expressions and constant filters.
pub struct BooleanSimplification;

/// `Some(b)` for a boolean literal, `None` otherwise; NULL counts as `Some(None)`.
fn bool_lit(e: &Expr) -> Option<Option<bool>> {
    match e {
        Expr::Literal(l) => {
            let a = l.array();
            match a.data_type() {
                arrow_schema::DataType::Boolean => Some(if a.is_null(0) {
                    None
                } else {
                    Some(a.as_boolean().value(0))
                }),
                arrow_schema::DataType::Null => Some(None),
                _ => None,
            }
        }
        _ => None,
    }
}

fn simplify(e: &Expr) -> Result<Expr> {
    transform_up(e, &mut |x| {
        Ok(match &x {
            Expr::Binary {
                left,
                op: BinaryOp::And,
                right,
            } => match (bool_lit(left), bool_lit(right)) {
                (Some(Some(true)), _) => (**right).clone(),
                (_, Some(Some(true))) => (**left).clone(),
                (Some(Some(false)), _) | (_, Some(Some(false))) => {
                    Expr::Literal(Literal::boolean(false))
                }
                _ => x,
            },
            Expr::Binary {
                left,
                op: BinaryOp::Or,
                right,
            } => match (bool_lit(left), bool_lit(right)) {
                (Some(Some(false)), _) => (**right).clone(),
                (_, Some(Some(false))) => (**left).clone(),
                (Some(Some(true)), _) | (_, Some(Some(true))) => {
                    Expr::Literal(Literal::boolean(true))
                }
                _ => x,
            },
            Expr::Not(inner) => match inner.as_ref() {
                Expr::Not(y) => (**y).clone(),
                _ => match bool_lit(inner) {
                    Some(Some(b)) => Expr::Literal(Literal::boolean(!b)),
                    _ => x,
                },
            },
            _ => x,
        })
    })
}

impl OptimizerRule for BooleanSimplification {
    fn name(&self) -> &'static str {
        "BooleanSimplification"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut |node| {
            let node = rewrite_expressions(&node, &mut simplify)?;
            Ok(match node.as_ref() {
                LogicalPlan::Filter { input, predicate } => match bool_lit(predicate) {
                    Some(Some(true)) => input.clone(),
                    Some(_) => Arc::new(LogicalPlan::Empty {
                        attrs: input.output(),
                    }),
                    None => node,
                },
                _ => node,
            })
        })
    }
}
