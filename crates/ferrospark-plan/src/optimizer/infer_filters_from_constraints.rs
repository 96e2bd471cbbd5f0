//! `InferFiltersFromConstraints`: an inner join's `a = b` keys can only match non-NULL values,
//! so each side is filtered with `isnotnull(key)` before the join (and, through
//! `PushDownPredicates`, inside its scan), as Spark's rule of that name infers them. Null-safe
//! keys (`<=>`) and other join types are left alone: a NULL key still matters there.

use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_expr::Expr;
use ferrospark_join::JoinType;

use super::OptimizerRule;
use crate::logical::expr_util::{conjoin, split_conjuncts};
use crate::logical::{Attr, LogicalPlan};
use crate::physical::planner::extract_equi_keys;

/// Adds `isnotnull` filters under inner equi-joins.
pub struct InferFiltersFromConstraints;

/// `side` filtered on `isnotnull(k)` for each nullable column key not already so filtered.
fn not_null_filtered(side: &Arc<LogicalPlan>, keys: &[&Expr], attrs: &[Attr]) -> Arc<LogicalPlan> {
    let existing: Vec<Expr> = match side.as_ref() {
        LogicalPlan::Filter { predicate, .. } => split_conjuncts(predicate),
        _ => Vec::new(),
    };
    let mut added = Vec::new();
    for k in keys {
        let Expr::Column(key) = k else { continue };
        let nullable = attrs
            .iter()
            .find(|a| a.key() == *key)
            .is_some_and(|a| a.nullable);
        let test = Expr::IsNotNull(Box::new((*k).clone()));
        if nullable && !existing.contains(&test) && !added.contains(&test) {
            added.push(test);
        }
    }
    match conjoin(added) {
        None => side.clone(),
        Some(p) => match side.as_ref() {
            LogicalPlan::Filter { input, predicate } => Arc::new(LogicalPlan::Filter {
                input: input.clone(),
                predicate: conjoin([predicate.clone(), p]).unwrap_or_else(|| predicate.clone()),
            }),
            _ => Arc::new(LogicalPlan::Filter {
                input: side.clone(),
                predicate: p,
            }),
        },
    }
}

impl OptimizerRule for InferFiltersFromConstraints {
    fn name(&self) -> &'static str {
        "InferFiltersFromConstraints"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut |node| {
            let LogicalPlan::Join {
                left,
                right,
                join_type: JoinType::Inner,
                condition,
                hint,
            } = node.as_ref()
            else {
                return Ok(node);
            };
            let (la, ra) = (left.output(), right.output());
            let keys = extract_equi_keys(condition.as_ref(), &la, &ra);
            let plain = |side: &[Expr]| -> Vec<Expr> {
                side.iter()
                    .zip(&keys.null_safe)
                    .filter(|(_, ns)| !**ns)
                    .map(|(k, _)| k.clone())
                    .collect()
            };
            let (lk, rk) = (plain(&keys.left), plain(&keys.right));
            let (lk, rk): (Vec<&Expr>, Vec<&Expr>) = (lk.iter().collect(), rk.iter().collect());
            if lk.is_empty() {
                return Ok(node);
            }
            Ok(Arc::new(LogicalPlan::Join {
                left: not_null_filtered(left, &lk, &la),
                right: not_null_filtered(right, &rk, &ra),
                join_type: JoinType::Inner,
                condition: condition.clone(),
                hint: *hint,
            }))
        })
    }
}
