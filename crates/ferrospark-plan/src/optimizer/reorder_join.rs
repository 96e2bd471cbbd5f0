//! `ReorderJoin`: a tree of inner joins (comma joins included) is flattened into its inputs
//! and conditions, then rebuilt left to right, each step joining the first remaining input
//! that a condition connects to what is joined so far, so no cross product is made while a
//! condition could avoid it (Catalyst's greedy `createOrderedJoin`).
//!
//! Before that, a filtered input joined by equality to just one other input that is not the
//! largest (a dimension of a dimension: a nation filtered by name, whose only neighbour is
//! the supplier table) is joined to that neighbour first, as a cost-based order would:
//!
//! ```text
//!   ((supplier ⋈ lineitem) ⋈ nation[name = X])   becomes   lineitem ⋈ (supplier ⋈ nation[name = X])
//! ```
//!
//! so the neighbour arrives at the big table already filtered, and its join keys filter the
//! big table's scan at run time. A dimension whose only direct neighbour is the largest input
//! may still equal another input's column through it (Q9: `p_partkey = l_partkey =
//! ps_partkey`); it then joins that input on the implied equality (part filters partsupp
//! before partsupp is built). Without column statistics "largest" and "filtered" are the
//! planner's size estimates and any filter beyond `IS NOT NULL`.

use std::collections::HashSet;
use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_expr::{BinaryOp, Expr};
use ferrospark_join::JoinType;

use super::push_down_predicates::with_filter;
use super::OptimizerRule;
use crate::logical::expr_util::{column_keys, conjoin, split_conjuncts};
use crate::logical::LogicalPlan;
use crate::physical::stats::{filters_rows, local_size_in_bytes};

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

/// The two columns of an equality of columns `a = b`.
fn column_equality(c: &Expr) -> Option<(&String, &String)> {
    let Expr::Binary {
        left,
        op: BinaryOp::Eq,
        right,
    } = c
    else {
        return None;
    };
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column(a), Expr::Column(b)) => Some((a, b)),
        _ => None,
    }
}

/// The two inputs an equality of columns `a = b` joins, if it joins two.
fn equi_pair(c: &Expr, keys: &[HashSet<String>]) -> Option<(usize, usize)> {
    let (a, b) = column_equality(c)?;
    let owner = |k: &String| keys.iter().position(|ks| ks.contains(k));
    match (owner(a), owner(b)) {
        (Some(i), Some(j)) if i != j => Some((i, j)),
        _ => None,
    }
}

/// The classes of columns that equalities `a = b` among `conds` make equal (two or more
/// columns each).
fn equal_columns(conds: &[Expr]) -> Vec<Vec<String>> {
    let mut classes: Vec<Vec<String>> = Vec::new();
    for (a, b) in conds.iter().filter_map(column_equality) {
        let ia = classes.iter().position(|k| k.contains(a));
        let ib = classes.iter().position(|k| k.contains(b));
        match (ia, ib) {
            (Some(i), Some(j)) if i != j => {
                let merged = classes.remove(i.max(j));
                classes[i.min(j)].extend(merged);
            }
            (Some(_), Some(_)) => {}
            (Some(i), None) => classes[i].push(b.clone()),
            (None, Some(j)) => classes[j].push(a.clone()),
            (None, None) => classes.push(vec![a.clone(), b.clone()]),
        }
    }
    classes
}

/// Joins each filtered input whose only equi-join neighbour is not the largest input to
/// that neighbour, until none is left (see the module doc). The filters on the input alone
/// go with it, so the joined pair counts as filtered in the next round.
fn absorb_filtered_dimensions(items: &mut Vec<Arc<LogicalPlan>>, conds: &mut Vec<Expr>) {
    while items.len() > 2 {
        let keys: Vec<HashSet<String>> = items.iter().map(|p| p.output_keys()).collect();
        let Some(largest) = (0..items.len()).max_by_key(|&i| local_size_in_bytes(&items[i])) else {
            return;
        };
        let mut neighbours: Vec<HashSet<usize>> = vec![HashSet::new(); items.len()];
        for (i, j) in conds.iter().filter_map(|c| equi_pair(c, &keys)) {
            neighbours[i].insert(j);
            neighbours[j].insert(i);
        }
        let own = |i: usize, c: &Expr| {
            let ck = column_keys(c);
            !ck.is_empty() && ck.is_subset(&keys[i])
        };
        let filtered = |i: usize| filters_rows(&items[i]) || conds.iter().any(|c| own(i, c));
        // Equalities implied by the others (`p_partkey = l_partkey = ps_partkey`), used when
        // a dimension's only direct neighbour is the largest input.
        let classes = equal_columns(conds);
        let implied = |x: usize, y: usize| -> Vec<Expr> {
            let mut out = Vec::new();
            for class in &classes {
                let (Some(a), Some(b)) = (
                    class.iter().find(|k| keys[x].contains(*k)),
                    class.iter().find(|k| keys[y].contains(*k)),
                ) else {
                    continue;
                };
                out.push(Expr::col(b.clone()).eq(Expr::col(a.clone())));
            }
            out
        };
        let found = (0..items.len())
            .filter(|&x| x != largest && filtered(x))
            .find_map(|x| {
                let direct: Vec<usize> = neighbours[x].iter().copied().collect();
                let [y] = direct[..] else { return None };
                if y != largest {
                    return Some((x, y, Vec::new()));
                }
                let mut through: Vec<(usize, Vec<Expr>)> = (0..items.len())
                    .filter(|&y| y != x && y != largest)
                    .map(|y| (y, implied(x, y)))
                    .filter(|(_, e)| !e.is_empty())
                    .collect();
                match through.len() {
                    1 => through.pop().map(|(y, e)| (x, y, e)),
                    _ => None,
                }
            });
        let Some((x, y, inferred)) = found else {
            return;
        };
        let (alone, rest): (Vec<Expr>, Vec<Expr>) =
            std::mem::take(conds).into_iter().partition(|c| own(x, c));
        let dimension = with_filter(items[x].clone(), alone);
        let pair: HashSet<String> = keys[x].union(&keys[y]).cloned().collect();
        let (here, rest): (Vec<Expr>, Vec<Expr>) = rest.into_iter().partition(|c| {
            let ck = column_keys(c);
            ck.is_subset(&pair) && !ck.is_subset(&keys[y])
        });
        *conds = rest;
        items[y] = Arc::new(LogicalPlan::Join {
            left: items[y].clone(),
            right: dimension,
            join_type: JoinType::Inner,
            condition: conjoin(here.into_iter().chain(inferred)),
            hint: None,
        });
        items.remove(x);
    }
}

fn ordered(mut items: Vec<Arc<LogicalPlan>>, mut conds: Vec<Expr>) -> Arc<LogicalPlan> {
    absorb_filtered_dimensions(&mut items, &mut conds);
    let mut joined = items.remove(0);
    while !items.is_empty() {
        let jk = joined.output_keys();
        let connects = |p: &LogicalPlan| {
            let pk = p.output_keys();
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
        all.extend(right.output_keys());
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
    with_filter(joined, conds)
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
