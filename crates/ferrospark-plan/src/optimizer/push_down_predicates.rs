//! `PushDownPredicates` (with `PushPredicateThroughJoin` and the pushdown into scans): filter
//! conjuncts move as close to the data as their columns allow — through projections (the
//! projected expressions substituted), aggregates (conjuncts on grouping columns only),
//! unions, and joins (to the side whose columns they read, or into the join condition of an
//! inner join), and finally into the scan, where the Parquet reader prunes with them.

use std::collections::HashSet;
use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_expr::Expr;
use ferrospark_join::JoinType;

use super::OptimizerRule;
use crate::logical::expr_util::{
    column_keys, conjoin, contains_aggregate, replace_columns, split_conjuncts,
};
use crate::logical::LogicalPlan;

/// Pushes filters down.
pub struct PushDownPredicates;

fn within(e: &Expr, keys: &HashSet<String>) -> bool {
    column_keys(e).is_subset(keys)
}

/// No `rand()`-like call (nor a user function marked non-deterministic): evaluating it elsewhere or twice keeps its result.
pub(crate) fn deterministic(e: &Expr) -> bool {
    let mut ok = true;
    e.visit(&mut |x| {
        ok &= !matches!(x, Expr::Function { name, .. } if ferrospark_expr::functions::random::draws_per_row(name))
            && !matches!(x, Expr::Udf { udf, .. } if !udf.deterministic());
    });
    ok
}

/// Deterministic and free of user functions: two such expressions that print alike compute
/// alike, so a plan holding only these can be compared by its text (two Python functions
/// can share a name such as `<lambda>`).
pub(crate) fn same_by_text(e: &Expr) -> bool {
    let mut udf = false;
    e.visit(&mut |x| udf |= matches!(x, Expr::Udf { .. }));
    !udf && deterministic(e)
}

/// `plan` under a filter of `preds` (none: `plan` itself).
pub(super) fn with_filter(plan: Arc<LogicalPlan>, preds: Vec<Expr>) -> Arc<LogicalPlan> {
    match conjoin(preds) {
        Some(p) => Arc::new(LogicalPlan::Filter {
            input: plan,
            predicate: p,
        }),
        None => plan,
    }
}

/// `plan` with `preds` applied, each pushed as deep as it can go.
fn push(plan: &Arc<LogicalPlan>, preds: Vec<Expr>) -> Result<Arc<LogicalPlan>> {
    let (pushable, stay): (Vec<Expr>, Vec<Expr>) = preds.into_iter().partition(deterministic);
    let node = match plan.as_ref() {
        LogicalPlan::Filter { input, predicate } => {
            let mut all = pushable;
            all.extend(split_conjuncts(predicate));
            push(input, all)?
        }
        LogicalPlan::Project { input, exprs } => {
            let sub = |k: &str| {
                exprs
                    .iter()
                    .find(|(_, a)| a.key() == k)
                    .map(|(e, _)| e.clone())
            };
            let (down, up): (Vec<Expr>, Vec<Expr>) = pushable.into_iter().partition(|p| {
                column_keys(p)
                    .iter()
                    .all(|k| sub(k).is_some_and(|e| deterministic(&e) && !contains_aggregate(&e)))
            });
            let down = down.iter().map(|p| replace_columns(p, &sub)).collect();
            let node = Arc::new(LogicalPlan::Project {
                input: push(input, down)?,
                exprs: exprs.clone(),
            });
            with_filter(node, up)
        }
        LogicalPlan::Sort { input, keys } => Arc::new(LogicalPlan::Sort {
            input: push(input, pushable)?,
            keys: keys.clone(),
        }),
        LogicalPlan::SubqueryAlias {
            input,
            alias,
            attrs,
        } => Arc::new(LogicalPlan::SubqueryAlias {
            input: push(input, pushable)?,
            alias: alias.clone(),
            attrs: attrs.clone(),
        }),
        LogicalPlan::Aggregate { input, group, aggs } => {
            let group_keys: HashSet<String> = group.iter().map(|(_, a)| a.key()).collect();
            let (down, up): (Vec<Expr>, Vec<Expr>) = pushable
                .into_iter()
                .partition(|p| !column_keys(p).is_empty() && within(p, &group_keys));
            let sub = |k: &str| {
                group
                    .iter()
                    .find(|(_, a)| a.key() == k)
                    .map(|(e, _)| e.clone())
            };
            let down = down.iter().map(|p| replace_columns(p, &sub)).collect();
            let node = Arc::new(LogicalPlan::Aggregate {
                input: push(input, down)?,
                group: group.clone(),
                aggs: aggs.clone(),
            });
            with_filter(node, up)
        }
        LogicalPlan::Union { inputs, attrs } => {
            let new_inputs = inputs
                .iter()
                .map(|i| {
                    let out = i.output();
                    let sub = |k: &str| {
                        attrs
                            .iter()
                            .position(|a| a.key() == k)
                            .map(|p| out[p].column())
                    };
                    push(
                        i,
                        pushable.iter().map(|p| replace_columns(p, &sub)).collect(),
                    )
                })
                .collect::<Result<_>>()?;
            Arc::new(LogicalPlan::Union {
                inputs: new_inputs,
                attrs: attrs.clone(),
            })
        }
        LogicalPlan::Join {
            left,
            right,
            join_type,
            condition,
            hint,
        } => {
            let lk = left.output_keys();
            let rk = right.output_keys();
            let cond = condition.as_ref().map(split_conjuncts).unwrap_or_default();
            let (mut to_left, mut to_right, mut in_cond, mut up) = (vec![], vec![], vec![], vec![]);
            match join_type {
                JoinType::Inner | JoinType::Cross => {
                    for p in pushable.into_iter().chain(cond) {
                        if within(&p, &lk) && !column_keys(&p).is_empty() {
                            to_left.push(p)
                        } else if within(&p, &rk) && !column_keys(&p).is_empty() {
                            to_right.push(p)
                        } else {
                            in_cond.push(p)
                        }
                    }
                }
                JoinType::LeftOuter
                | JoinType::LeftSemi
                | JoinType::LeftAnti
                | JoinType::NullAwareAnti => {
                    for p in pushable {
                        if within(&p, &lk) {
                            to_left.push(p)
                        } else {
                            up.push(p)
                        }
                    }
                    for c in cond {
                        let pushable_right = *join_type != JoinType::NullAwareAnti
                            && within(&c, &rk)
                            && !column_keys(&c).is_empty();
                        let pushable_left = *join_type == JoinType::LeftSemi
                            && within(&c, &lk)
                            && !column_keys(&c).is_empty();
                        if pushable_right {
                            to_right.push(c)
                        } else if pushable_left {
                            to_left.push(c)
                        } else {
                            in_cond.push(c)
                        }
                    }
                }
                JoinType::RightOuter => {
                    for p in pushable {
                        if within(&p, &rk) {
                            to_right.push(p)
                        } else {
                            up.push(p)
                        }
                    }
                    for c in cond {
                        if within(&c, &lk) && !column_keys(&c).is_empty() {
                            to_left.push(c)
                        } else {
                            in_cond.push(c)
                        }
                    }
                }
                JoinType::FullOuter => {
                    up = pushable;
                    in_cond = cond;
                }
            }
            let node = Arc::new(LogicalPlan::Join {
                left: push(left, to_left)?,
                right: push(right, to_right)?,
                join_type: *join_type,
                condition: conjoin(in_cond),
                hint: *hint,
            });
            with_filter(node, up)
        }
        LogicalPlan::Scan {
            source,
            attrs,
            projection,
            filters,
            name,
        } => {
            let mut filters = filters.clone();
            for p in pushable {
                if !filters.contains(&p) {
                    filters.push(p);
                }
            }
            Arc::new(LogicalPlan::Scan {
                source: source.clone(),
                attrs: attrs.clone(),
                projection: projection.clone(),
                filters,
                name: name.clone(),
            })
        }
        _ => {
            let kids = plan
                .children()
                .into_iter()
                .map(|k| push(k, vec![]))
                .collect::<Result<Vec<_>>>()?;
            let node = if kids.is_empty() {
                plan.clone()
            } else {
                Arc::new(plan.with_children(kids))
            };
            with_filter(node, pushable)
        }
    };
    Ok(with_filter(node, stay))
}

impl OptimizerRule for PushDownPredicates {
    fn name(&self) -> &'static str {
        "PushDownPredicates"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        push(plan, vec![])
    }
}
