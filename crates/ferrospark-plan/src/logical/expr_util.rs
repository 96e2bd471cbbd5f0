//! Rewriting and inspecting expression trees: the small tools every rule uses.

use std::collections::HashSet;

use ferrospark_common::Result;
use ferrospark_expr::{BinaryOp, Expr};

pub use ferrospark_expr::transform::{map_children, transform_down, transform_up};

/// The column keys `e` reads.
pub fn column_keys(e: &Expr) -> HashSet<String> {
    let mut out = HashSet::new();
    e.visit(&mut |x| {
        if let Expr::Column(c) = x {
            out.insert(c.clone());
        }
    });
    out
}

/// Replaces columns by key: `map(key)` gives the replacement, `None` keeps the column.
pub fn replace_columns(e: &Expr, map: &dyn Fn(&str) -> Option<Expr>) -> Expr {
    transform_down(e, &mut |x| {
        Ok(match x {
            Expr::Column(c) => map(c),
            _ => None,
        })
    })
    .unwrap_or_else(|_| e.clone())
}

/// The conjuncts of a predicate, owned.
pub fn split_conjuncts(e: &Expr) -> Vec<Expr> {
    e.conjuncts().into_iter().cloned().collect()
}

/// `e` with NOT pushed through AND / OR (De Morgan's laws, which hold in SQL's three-valued
/// logic) and double negations removed, as Catalyst's `BooleanSimplification` leaves a
/// predicate before `RewritePredicateSubquery` reads it: `NOT (a > 5 OR a IN (subquery))`
/// becomes the conjunct `NOT (a IN (subquery))`, a null-aware anti join.
pub fn push_not_down(e: &Expr) -> Expr {
    fn negated(e: &Expr) -> Expr {
        match e {
            Expr::Not(x) => push_not_down(x),
            Expr::Binary { left, op, right } if matches!(op, BinaryOp::And | BinaryOp::Or) => {
                Expr::Binary {
                    left: Box::new(negated(left)),
                    op: if *op == BinaryOp::And {
                        BinaryOp::Or
                    } else {
                        BinaryOp::And
                    },
                    right: Box::new(negated(right)),
                }
            }
            other => Expr::Not(Box::new(other.clone())),
        }
    }
    match e {
        Expr::Not(x) => negated(x),
        Expr::Binary { left, op, right } if matches!(op, BinaryOp::And | BinaryOp::Or) => {
            Expr::Binary {
                left: Box::new(push_not_down(left)),
                op: *op,
                right: Box::new(push_not_down(right)),
            }
        }
        other => other.clone(),
    }
}

/// `a AND b AND ...`, or `None` for no conjuncts.
pub fn conjoin(parts: impl IntoIterator<Item = Expr>) -> Option<Expr> {
    parts.into_iter().reduce(|a, b| Expr::Binary {
        left: Box::new(a),
        op: BinaryOp::And,
        right: Box::new(b),
    })
}

/// Spark's aggregate function names (those [`ferrospark_agg`] computes).
pub fn is_aggregate_name(name: &str) -> bool {
    matches!(
        name,
        "count"
            | "sum"
            | "avg"
            | "mean"
            | "min"
            | "max"
            | "first"
            | "first_value"
            | "last"
            | "last_value"
            | "any_value"
            | "stddev"
            | "std"
            | "stddev_samp"
            | "stddev_pop"
            | "variance"
            | "var_samp"
            | "var_pop"
            | "corr"
            | "covar_pop"
            | "covar_samp"
            | "regr_sxx"
            | "regr_syy"
            | "regr_slope"
            | "regr_intercept"
            | "regr_sxy"
            | "regr_r2"
            | "max_by"
            | "min_by"
            | "product"
            | "bool_and"
            | "every"
            | "bool_or"
            | "some"
            | "any"
            | "collect_list"
            | "array_agg"
            | "collect_set"
            | "percentile"
            | "percentile_cont"
            | "percentile_disc"
            | "median"
            | "approx_count_distinct"
            | "histogram_numeric"
            | "percentile_approx"
            | "approx_percentile"
            | "try_sum"
            | "try_avg"
            | "skewness"
            | "kurtosis"
            | "bit_and"
            | "bit_or"
            | "bit_xor"
            | "count_distinct"
            | "sum_distinct"
    )
}

/// Whether `e` is an aggregate call (not looking inside).
pub fn is_aggregate_call(e: &Expr) -> bool {
    match e {
        Expr::Aggregate { .. } => true,
        Expr::Function { name, .. } => is_aggregate_name(name),
        _ => false,
    }
}

/// Whether `e` contains an aggregate call (a window's own function does not count, its
/// arguments and keys do: `sum(x) OVER w` is no aggregate, `rank() OVER (ORDER BY sum(x))`
/// reads one).
pub fn contains_aggregate(e: &Expr) -> bool {
    let mut found = false;
    let _ = transform_down_outside_windows(e, &mut |x| {
        found |= is_aggregate_call(x);
        Ok(None)
    });
    found
}

/// Whether `e` contains a window function call.
pub fn contains_window(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x, Expr::Window { .. }));
    found
}

/// [`transform_down`] that, at a window call, rewrites its function's arguments, keys and
/// ORDER BY but never hands `f` the window's function itself.
pub fn transform_down_outside_windows(
    e: &Expr,
    f: &mut dyn FnMut(&Expr) -> Result<Option<Expr>>,
) -> Result<Expr> {
    if let Expr::Window {
        func,
        partition_by,
        order_by,
        frame,
    } = e
    {
        let func = map_children(func, &mut |c| transform_down_outside_windows(c, f))?;
        return Ok(Expr::Window {
            func: Box::new(func),
            partition_by: partition_by
                .iter()
                .map(|c| transform_down_outside_windows(c, f))
                .collect::<Result<_>>()?,
            order_by: order_by
                .iter()
                .map(|c| transform_down_outside_windows(c, f))
                .collect::<Result<_>>()?,
            frame: frame.clone(),
        });
    }
    if let Some(r) = f(e)? {
        return Ok(r);
    }
    map_children(e, &mut |c| transform_down_outside_windows(c, f))
}

/// Strips a top-level alias.
pub fn unalias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias { expr, .. } => unalias(expr),
        other => other,
    }
}
