//! `PushExtraPredicateThroughJoin`: a join condition over both sides may still imply a
//! filter on one side alone. From `(n1 = 'FRANCE' AND n2 = 'GERMANY') OR (n1 = 'GERMANY' AND
//! n2 = 'FRANCE')` (TPC-H Q7) follows `n1 = 'FRANCE' OR n1 = 'GERMANY'` for the first nation
//! and the same for the second. Such implied filters are added below the join, on the sides
//! whose rows the join type lets a filter drop; the condition itself stays, since the
//! implied filters are weaker than it. Catalyst's `extractPredicatesWithinOutputSet`.

use std::collections::HashSet;
use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_expr::{BinaryOp, Expr};
use ferrospark_join::JoinType;

use super::push_down_predicates::{deterministic, with_filter};
use super::OptimizerRule;
use crate::logical::expr_util::{column_keys, split_conjuncts};
use crate::logical::LogicalPlan;

/// Adds the filters a join condition implies for each side.
pub struct PushExtraPredicateThroughJoin;

/// The weakest predicate over `keys` alone that `e` implies, if any: a conjunction keeps
/// whichever of its parts can be extracted, a disjunction needs every branch.
fn extract_within(e: &Expr, keys: &HashSet<String>) -> Option<Expr> {
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::And,
            right,
        } => match (extract_within(left, keys), extract_within(right, keys)) {
            (Some(l), Some(r)) => Some(l.and(r)),
            (Some(one), None) | (None, Some(one)) => Some(one),
            (None, None) => None,
        },
        Expr::Binary {
            left,
            op: BinaryOp::Or,
            right,
        } => Some(extract_within(left, keys)?.or(extract_within(right, keys)?)),
        other => {
            let used = column_keys(other);
            (!used.is_empty() && used.is_subset(keys) && deterministic(other))
                .then(|| other.clone())
        }
    }
}

/// What `conjuncts` (each reading both sides) imply about the side with `keys`.
fn implied(conjuncts: &[Expr], keys: &HashSet<String>) -> Vec<Expr> {
    conjuncts
        .iter()
        .filter(|c| {
            matches!(
                c,
                Expr::Binary {
                    op: BinaryOp::Or,
                    ..
                }
            )
        })
        .filter_map(|c| extract_within(c, keys))
        .collect()
}

/// `plan` (its children already rewritten) with the filters its join condition implies.
fn rewrite(plan: Arc<LogicalPlan>) -> Result<Arc<LogicalPlan>> {
    let LogicalPlan::Join {
        left,
        right,
        join_type,
        condition: Some(condition),
        hint,
    } = plan.as_ref()
    else {
        return Ok(plan);
    };
    // The sides whose rows a filter may drop without changing the join's result.
    let (to_left, to_right) = match join_type {
        JoinType::Inner | JoinType::Cross | JoinType::LeftSemi => (true, true),
        JoinType::LeftOuter | JoinType::LeftAnti => (false, true),
        JoinType::RightOuter => (true, false),
        JoinType::FullOuter | JoinType::NullAwareAnti => (false, false),
    };
    let (lk, rk) = (left.output_keys(), right.output_keys());
    let both: Vec<Expr> = split_conjuncts(condition)
        .into_iter()
        .filter(|c| {
            let used = column_keys(c);
            !used.is_subset(&lk) && !used.is_subset(&rk)
        })
        .collect();
    let left_preds = if to_left { implied(&both, &lk) } else { vec![] };
    let right_preds = if to_right {
        implied(&both, &rk)
    } else {
        vec![]
    };
    if left_preds.is_empty() && right_preds.is_empty() {
        return Ok(plan);
    }
    Ok(Arc::new(LogicalPlan::Join {
        left: with_filter(left.clone(), left_preds),
        right: with_filter(right.clone(), right_preds),
        join_type: *join_type,
        condition: Some(condition.clone()),
        hint: *hint,
    }))
}

impl OptimizerRule for PushExtraPredicateThroughJoin {
    fn name(&self) -> &'static str {
        "PushExtraPredicateThroughJoin"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut rewrite)
    }
}
