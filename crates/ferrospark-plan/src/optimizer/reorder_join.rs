//! `ReorderJoin`: a tree of inner joins (comma joins included) is flattened into its inputs
//! and conditions, then rebuilt left to right, each step joining the first remaining input
//! that a condition connects to what is joined so far, so no cross product is made while a
//! condition could avoid it (Catalyst's greedy `createOrderedJoin`).

use std::collections::HashSet;
use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_expr::Expr;
use ferrospark_join::JoinType;

use super::OptimizerRule;
use crate::logical::expr_util::{column_keys, conjoin, split_conjuncts};
use crate::logical::{Attr, LogicalPlan};

/// Orders inner joins so conditions connect them.
pub struct ReorderJoin;

fn flatten(plan: &Arc<LogicalPlan>, items: &mut Vec<Arc<LogicalPlan>>, conds: &mut Vec<Expr>) {
    match plan.as_ref() {
        LogicalPlan::Join {
            left,
            right,
            join_type: JoinType::Inner,
            condition,
            hint: None,
        } => {
            flatten(left, items, conds);
            flatten(right, items, conds);
            conds.extend(condition.iter().flat_map(split_conjuncts));
        }
        LogicalPlan::Filter { input, predicate }
            if matches!(
                input.as_ref(),
                LogicalPlan::Join {
                    join_type: JoinType::Inner,
                    hint: None,
                    ..
                }
            ) =>
        {
            flatten(input, items, conds);
            conds.extend(split_conjuncts(predicate));
        }
        _ => items.push(plan.clone()),
    }
}

fn keys(p: &LogicalPlan) -> HashSet<String> {
    p.output().iter().map(Attr::key).collect()
}

fn ordered(mut items: Vec<Arc<LogicalPlan>>, mut conds: Vec<Expr>) -> Arc<LogicalPlan> {
    let mut joined = items.remove(0);
    while !items.is_empty() {
        let jk = keys(&joined);
        let connects = |p: &LogicalPlan| {
            let pk = keys(p);
            conds.iter().any(|c| {
                let ck = column_keys(c);
                !ck.is_subset(&jk)
                    && !ck.is_subset(&pk)
                    && ck.iter().all(|k| jk.contains(k) || pk.contains(k))
            })
        };
        let pos = items.iter().position(|p| connects(p)).unwrap_or(0);
        let right = items.remove(pos);
        let mut all = jk;
        all.extend(keys(&right));
        let (here, rest): (Vec<Expr>, Vec<Expr>) = conds
            .into_iter()
            .partition(|c| column_keys(c).is_subset(&all));
        conds = rest;
        joined = Arc::new(LogicalPlan::Join {
            left: joined,
            right,
            join_type: JoinType::Inner,
            condition: conjoin(here),
            hint: None,
        });
    }
    match conjoin(conds) {
        Some(p) => Arc::new(LogicalPlan::Filter {
            input: joined,
            predicate: p,
        }),
        None => joined,
    }
}

fn reorder(plan: &Arc<LogicalPlan>) -> Result<Arc<LogicalPlan>> {
    let is_inner_tree = match plan.as_ref() {
        LogicalPlan::Join {
            join_type: JoinType::Inner,
            hint: None,
            ..
        } => true,
        LogicalPlan::Filter { input, .. } => {
            matches!(
                input.as_ref(),
                LogicalPlan::Join {
                    join_type: JoinType::Inner,
                    hint: None,
                    ..
                }
            )
        }
        _ => false,
    };
    if is_inner_tree {
        let (mut items, mut conds) = (Vec::new(), Vec::new());
        flatten(plan, &mut items, &mut conds);
        if items.len() > 2 {
            let items = items.iter().map(reorder).collect::<Result<Vec<_>>>()?;
            return Ok(ordered(items, conds));
        }
    }
    let kids = plan
        .children()
        .into_iter()
        .map(reorder)
        .collect::<Result<Vec<_>>>()?;
    Ok(if kids.is_empty() {
        plan.clone()
    } else {
        Arc::new(plan.with_children(kids))
    })
}

impl OptimizerRule for ReorderJoin {
    fn name(&self) -> &'static str {
        "ReorderJoin"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        reorder(plan)
    }
}
