//! `ColumnPruning`: every node keeps only the columns something above it reads, down to the
//! scans, which then decode only those columns (TPC-H Q1 reads 7 of lineitem's 16).

use std::collections::HashSet;
use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_join::JoinType;

use super::OptimizerRule;
use crate::logical::expr_util::column_keys;
use crate::logical::{Attr, LogicalPlan};

/// Prunes unused columns.
pub struct ColumnPruning;

fn refs<'a>(exprs: impl IntoIterator<Item = &'a ferrospark_expr::Expr>) -> HashSet<String> {
    let mut out = HashSet::new();
    for e in exprs {
        out.extend(column_keys(e));
    }
    out
}

/// A projection of `plan` to the `required` columns when it outputs more (none for scans,
/// which prune themselves).
fn narrow(plan: Arc<LogicalPlan>, required: &HashSet<String>) -> Arc<LogicalPlan> {
    let out = plan.output();
    if out.iter().all(|a| required.contains(&a.key()))
        || matches!(
            plan.as_ref(),
            LogicalPlan::Scan { .. } | LogicalPlan::Project { .. }
        )
    {
        return plan;
    }
    let exprs: Vec<_> = out
        .iter()
        .filter(|a| required.contains(&a.key()))
        .map(|a| (a.column(), a.clone()))
        .collect();
    Arc::new(LogicalPlan::Project { input: plan, exprs })
}

/// `child`, a scan, outputting its columns in the order projection `exprs` passes them
/// through, when that is all the projection does: the scan then reads them in that order
/// and no projection stands between it and what consumes it (an aggregation fused into the
/// scan groups on its dictionary codes only when nothing does).
fn scan_in_order(
    child: &Arc<LogicalPlan>,
    exprs: &[(ferrospark_expr::Expr, Attr)],
) -> Option<Arc<LogicalPlan>> {
    let LogicalPlan::Scan {
        source,
        attrs,
        filters,
        name,
        ..
    } = child.as_ref()
    else {
        return None;
    };
    let out = child.output();
    if exprs.len() != out.len() {
        return None;
    }
    let mut order = Vec::with_capacity(exprs.len());
    for (e, a) in exprs {
        let i = attrs
            .iter()
            .position(|c| c.id == a.id && *e == c.column())?;
        if order.contains(&i) || !out.iter().any(|o| o.id == a.id) {
            return None;
        }
        order.push(i);
    }
    Some(Arc::new(LogicalPlan::Scan {
        source: source.clone(),
        attrs: attrs.clone(),
        projection: Some(order),
        filters: filters.clone(),
        name: name.clone(),
    }))
}

fn prune(plan: &Arc<LogicalPlan>, required: &HashSet<String>) -> Result<Arc<LogicalPlan>> {
    Ok(match plan.as_ref() {
        LogicalPlan::Scan {
            source,
            attrs,
            projection,
            filters,
            name,
        } => {
            let current: Vec<usize> = projection
                .clone()
                .unwrap_or_else(|| (0..attrs.len()).collect());
            let kept: Vec<usize> = current
                .into_iter()
                .filter(|&i| required.contains(&attrs[i].key()))
                .collect();
            Arc::new(LogicalPlan::Scan {
                source: source.clone(),
                attrs: attrs.clone(),
                projection: Some(kept),
                filters: filters.clone(),
                name: name.clone(),
            })
        }
        LogicalPlan::Project { input, exprs } => {
            let kept: Vec<_> = exprs
                .iter()
                .filter(|(_, a)| required.contains(&a.key()))
                .cloned()
                .collect();
            let need = refs(kept.iter().map(|(e, _)| e));
            let child = prune(input, &need)?;
            // A projection that only passes its input's columns through is dropped.
            let identity = kept.len() == child.output().len()
                && kept
                    .iter()
                    .zip(child.output())
                    .all(|((e, a), c)| *e == c.column() && a.id == c.id);
            if identity {
                child
            } else if let Some(scan) = scan_in_order(&child, &kept) {
                scan
            } else {
                Arc::new(LogicalPlan::Project {
                    input: child,
                    exprs: kept,
                })
            }
        }
        LogicalPlan::Filter { input, predicate } => {
            let mut need = required.clone();
            need.extend(column_keys(predicate));
            Arc::new(LogicalPlan::Filter {
                input: prune(input, &need)?,
                predicate: predicate.clone(),
            })
        }
        LogicalPlan::Sort { input, keys } => {
            let mut need = required.clone();
            need.extend(refs(keys.iter().map(|k| &k.expr)));
            Arc::new(LogicalPlan::Sort {
                input: prune(input, &need)?,
                keys: keys.clone(),
            })
        }
        LogicalPlan::Window { input, exprs } => {
            // Window calls nothing reads are dropped (and the node with the last of them);
            // the input keeps the columns read above and by the calls left.
            let kept: Vec<_> = exprs
                .iter()
                .filter(|(_, a)| required.contains(&a.key()))
                .cloned()
                .collect();
            let mut need: HashSet<String> = input
                .output_keys()
                .into_iter()
                .filter(|k| required.contains(k))
                .collect();
            for (c, _) in &kept {
                need.extend(column_keys(&c.func));
                need.extend(refs(c.partition_by.iter()));
                need.extend(refs(c.order_by.iter().map(|o| &o.expr)));
            }
            let child = narrow(prune(input, &need)?, &need);
            if kept.is_empty() {
                child
            } else {
                Arc::new(LogicalPlan::Window {
                    input: child,
                    exprs: kept,
                })
            }
        }
        LogicalPlan::Limit { input, skip, fetch } => Arc::new(LogicalPlan::Limit {
            input: prune(input, required)?,
            skip: *skip,
            fetch: *fetch,
        }),
        LogicalPlan::Aggregate { input, group, aggs } => {
            let mut kept: Vec<_> = aggs
                .iter()
                .filter(|(_, a)| required.contains(&a.key()))
                .cloned()
                .collect();
            // A global aggregate is one row even when nothing reads it: it keeps a column,
            // since a batch of no columns cannot say how many rows it has.
            if group.is_empty() && kept.is_empty() {
                kept.extend(aggs.first().cloned());
            }
            let aggs = kept;
            let mut need = refs(group.iter().map(|(e, _)| e));
            need.extend(refs(aggs.iter().flat_map(|(c, _)| c.args.iter())));
            Arc::new(LogicalPlan::Aggregate {
                input: prune(input, &need)?,
                group: group.clone(),
                aggs,
            })
        }
        LogicalPlan::Join {
            left,
            right,
            join_type,
            condition,
            hint,
        } => {
            let mut need = required.clone();
            if let Some(c) = condition {
                need.extend(column_keys(c));
            }
            let lk: HashSet<String> = left
                .output()
                .iter()
                .map(Attr::key)
                .filter(|k| need.contains(k))
                .collect();
            let rk: HashSet<String> = right
                .output()
                .iter()
                .map(Attr::key)
                .filter(|k| need.contains(k))
                .collect();
            let l = narrow(prune(left, &lk)?, &lk);
            let r = narrow(prune(right, &rk)?, &rk);
            let _ = join_type == &JoinType::Inner;
            Arc::new(LogicalPlan::Join {
                left: l,
                right: r,
                join_type: *join_type,
                condition: condition.clone(),
                hint: *hint,
            })
        }
        LogicalPlan::Generate {
            input,
            kind,
            args,
            outer,
            attrs,
        } => {
            // The generated columns are made whether read or not; the input keeps what is
            // read above and what the generator reads.
            let mut need: HashSet<String> = refs(args.iter());
            let input_keys: HashSet<String> = input.output().iter().map(Attr::key).collect();
            need.extend(required.iter().filter(|k| input_keys.contains(*k)).cloned());
            Arc::new(LogicalPlan::Generate {
                input: prune(input, &need)?,
                kind: *kind,
                args: args.clone(),
                outer: *outer,
                attrs: attrs.clone(),
            })
        }
        LogicalPlan::Expand {
            input,
            projections,
            attrs,
        } => {
            // Every output column is one slot of each projection: drop the unused slots.
            let keep: Vec<usize> = (0..attrs.len())
                .filter(|&i| required.contains(&attrs[i].key()))
                .collect();
            let projections: Vec<Vec<_>> = projections
                .iter()
                .map(|p| keep.iter().map(|&i| p[i].clone()).collect())
                .collect();
            let need = refs(projections.iter().flatten());
            Arc::new(LogicalPlan::Expand {
                input: prune(input, &need)?,
                projections,
                attrs: keep.iter().map(|&i| attrs[i].clone()).collect(),
            })
        }
        LogicalPlan::SubqueryAlias {
            input,
            alias,
            attrs,
        } => {
            let child = prune(input, required)?;
            let keep: HashSet<u64> = child.output().iter().map(|a| a.id).collect();
            Arc::new(LogicalPlan::SubqueryAlias {
                input: child,
                alias: alias.clone(),
                attrs: attrs
                    .iter()
                    .filter(|a| keep.contains(&a.id))
                    .cloned()
                    .collect(),
            })
        }
        LogicalPlan::Union { inputs, attrs } => {
            let positions: Vec<usize> = (0..attrs.len())
                .filter(|&i| required.contains(&attrs[i].key()))
                .collect();
            let new_inputs = inputs
                .iter()
                .map(|i| {
                    let out = i.output();
                    let need: HashSet<String> = positions.iter().map(|&p| out[p].key()).collect();
                    let child = prune(i, &need)?;
                    let exprs = positions
                        .iter()
                        .map(|&p| (out[p].column(), out[p].clone()))
                        .collect();
                    Ok(Arc::new(LogicalPlan::Project {
                        input: child,
                        exprs,
                    }))
                })
                .collect::<Result<Vec<_>>>()?;
            Arc::new(LogicalPlan::Union {
                inputs: new_inputs,
                attrs: positions.iter().map(|&p| attrs[p].clone()).collect(),
            })
        }
        _ => {
            let kids = plan
                .children()
                .into_iter()
                .map(|k| prune(k, &k.output_keys()))
                .collect::<Result<Vec<_>>>()?;
            if kids.is_empty() {
                plan.clone()
            } else {
                Arc::new(plan.with_children(kids))
            }
        }
    })
}

impl OptimizerRule for ColumnPruning {
    fn name(&self) -> &'static str {
        "ColumnPruning"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        prune(plan, &plan.output_keys())
    }
}
