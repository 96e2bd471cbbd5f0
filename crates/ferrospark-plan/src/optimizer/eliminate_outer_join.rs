//! `EliminateOuterJoin`: a filter above an outer join that rejects NULLs on the side the join
//! pads with NULLs removes every padded row, so the join is an inner one (or a one-sided outer
//! join, for a full join), as Spark's rule of that name rewrites it. Inner joins then reorder
//! and take predicates below them.
//!
//! A conjunct rejects NULLs of a side when it reads that side's columns and is NULL (or false)
//! whenever those columns are: comparisons, arithmetic, casts, `IN`, `BETWEEN`, `LIKE`,
//! `IS NOT NULL` and `NOT` of such. Anything that can turn NULL into a value (`IS NULL`,
//! `COALESCE`, `CASE`, `OR`, functions) is not trusted.

use std::collections::HashSet;
use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_expr::{BinaryOp, Expr};
use ferrospark_join::JoinType;

use super::OptimizerRule;
use crate::logical::expr_util::{column_keys, split_conjuncts};
use crate::logical::LogicalPlan;

/// Turns outer joins under null-rejecting filters into inner (or one-sided) joins.
pub struct EliminateOuterJoin;

/// Whether `e` is NULL whenever any column it reads is NULL.
fn null_intolerant(e: &Expr) -> bool {
    match e {
        Expr::Column(_) | Expr::Literal(_) | Expr::TypedString { .. } => true,
        Expr::Binary { left, op, right } => {
            !matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::EqNullSafe)
                && null_intolerant(left)
                && null_intolerant(right)
        }
        Expr::Not(x) | Expr::Negative(x) | Expr::Cast { expr: x, .. } => null_intolerant(x),
        Expr::Between {
            expr, low, high, ..
        } => null_intolerant(expr) && null_intolerant(low) && null_intolerant(high),
        Expr::Like { expr, pattern, .. } | Expr::StringMatch { expr, pattern, .. } => {
            null_intolerant(expr) && null_intolerant(pattern)
        }
        Expr::InList { expr, .. } => null_intolerant(expr),
        _ => false,
    }
}

/// Whether conjunct `c` rejects rows whose `side` columns are all NULL.
fn rejects_nulls_of(c: &Expr, side: &HashSet<String>) -> bool {
    let reads = column_keys(c);
    if reads.is_empty() || !reads.iter().any(|k| side.contains(k)) {
        return false;
    }
    match c {
        // `x IS NOT NULL` is false (not NULL) for a NULL x: it rejects too.
        Expr::IsNotNull(x) => null_intolerant(x),
        other => null_intolerant(other),
    }
}

impl OptimizerRule for EliminateOuterJoin {
    fn name(&self) -> &'static str {
        "EliminateOuterJoin"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut |node| {
            let LogicalPlan::Filter { input, predicate } = node.as_ref() else {
                return Ok(node);
            };
            let LogicalPlan::Join {
                left,
                right,
                join_type,
                condition,
                hint,
            } = input.as_ref()
            else {
                return Ok(node);
            };
            let keys = |p: &Arc<LogicalPlan>| -> HashSet<String> {
                p.output().iter().map(|a| a.key()).collect()
            };
            let conjuncts = split_conjuncts(predicate);
            let rejects =
                |side: &HashSet<String>| conjuncts.iter().any(|c| rejects_nulls_of(c, side));
            let new_type = match join_type {
                JoinType::LeftOuter if rejects(&keys(right)) => JoinType::Inner,
                JoinType::RightOuter if rejects(&keys(left)) => JoinType::Inner,
                JoinType::FullOuter => match (rejects(&keys(left)), rejects(&keys(right))) {
                    (true, true) => JoinType::Inner,
                    (true, false) => JoinType::LeftOuter,
                    (false, true) => JoinType::RightOuter,
                    (false, false) => return Ok(node),
                },
                _ => return Ok(node),
            };
            Ok(Arc::new(LogicalPlan::Filter {
                input: Arc::new(LogicalPlan::Join {
                    left: left.clone(),
                    right: right.clone(),
                    join_type: new_type,
                    condition: condition.clone(),
                    hint: *hint,
                }),
                predicate: predicate.clone(),
            }))
        })
    }
}
