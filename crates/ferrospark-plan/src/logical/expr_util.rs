//! Rewriting and inspecting expression trees: the small tools every rule uses.

use std::collections::HashSet;

use ferrospark_common::Result;
use ferrospark_expr::{BinaryOp, Expr};

/// Rebuilds `e` with `f` applied to each direct child.
pub fn map_children(e: &Expr, f: &mut dyn FnMut(&Expr) -> Result<Expr>) -> Result<Expr> {
    let b = |x: &Expr, f: &mut dyn FnMut(&Expr) -> Result<Expr>| -> Result<Box<Expr>> {
        Ok(Box::new(f(x)?))
    };
    Ok(match e {
        Expr::Column(_) | Expr::Literal(_) | Expr::TypedString { .. } => e.clone(),
        Expr::Field(x, n) => Expr::Field(b(x, f)?, n.clone()),
        Expr::Not(x) => Expr::Not(b(x, f)?),
        Expr::Negative(x) => Expr::Negative(b(x, f)?),
        Expr::IsNull(x) => Expr::IsNull(b(x, f)?),
        Expr::IsNotNull(x) => Expr::IsNotNull(b(x, f)?),
        Expr::Binary { left, op, right } => Expr::Binary {
            left: b(left, f)?,
            op: *op,
            right: b(right, f)?,
        },
        Expr::InList {
            expr,
            list,
            negated,
        } => Expr::InList {
            expr: b(expr, f)?,
            list: list.iter().map(&mut *f).collect::<Result<_>>()?,
            negated: *negated,
        },
        Expr::Between {
            expr,
            low,
            high,
            negated,
        } => Expr::Between {
            expr: b(expr, f)?,
            low: b(low, f)?,
            high: b(high, f)?,
            negated: *negated,
        },
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => Expr::Like {
            expr: b(expr, f)?,
            pattern: b(pattern, f)?,
            negated: *negated,
            case_insensitive: *case_insensitive,
        },
        Expr::StringMatch { op, expr, pattern } => Expr::StringMatch {
            op: *op,
            expr: b(expr, f)?,
            pattern: b(pattern, f)?,
        },
        Expr::Cast { expr, type_name } => Expr::Cast {
            expr: b(expr, f)?,
            type_name: type_name.clone(),
        },
        Expr::TryCast { expr, type_name } => Expr::TryCast {
            expr: b(expr, f)?,
            type_name: type_name.clone(),
        },
        Expr::Window {
            func,
            partition_by,
            order_by,
            frame,
        } => Expr::Window {
            func: b(func, f)?,
            partition_by: partition_by.iter().map(&mut *f).collect::<Result<_>>()?,
            order_by: order_by.iter().map(&mut *f).collect::<Result<_>>()?,
            frame: frame.clone(),
        },
        Expr::Case {
            branches,
            otherwise,
        } => Expr::Case {
            branches: branches
                .iter()
                .map(|(c, v)| Ok((f(c)?, f(v)?)))
                .collect::<Result<_>>()?,
            otherwise: match otherwise {
                Some(o) => Some(b(o, f)?),
                None => None,
            },
        },
        Expr::Alias { expr, name } => Expr::Alias {
            expr: b(expr, f)?,
            name: name.clone(),
        },
        Expr::SortKey {
            expr,
            ascending,
            nulls_first,
        } => Expr::SortKey {
            expr: b(expr, f)?,
            ascending: *ascending,
            nulls_first: *nulls_first,
        },
        Expr::Function { name, args } => Expr::Function {
            name: name.clone(),
            args: args.iter().map(&mut *f).collect::<Result<_>>()?,
        },
        Expr::Aggregate {
            name,
            args,
            distinct,
            ignore_nulls,
        } => Expr::Aggregate {
            name: name.clone(),
            args: args.iter().map(&mut *f).collect::<Result<_>>()?,
            distinct: *distinct,
            ignore_nulls: *ignore_nulls,
        },
    })
}

/// Rewrites `e` top-down: where `f` returns `Some`, that replaces the node (not descended
/// into); elsewhere the children are rewritten.
pub fn transform_down(e: &Expr, f: &mut dyn FnMut(&Expr) -> Result<Option<Expr>>) -> Result<Expr> {
    if let Some(r) = f(e)? {
        return Ok(r);
    }
    map_children(e, &mut |c| transform_down(c, f))
}

/// Rewrites `e` bottom-up: children first, then `f` on the rebuilt node.
pub fn transform_up(e: &Expr, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Expr> {
    let rebuilt = map_children(e, &mut |c| transform_up(c, f))?;
    f(rebuilt)
}

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
            | "bool_and"
            | "every"
            | "bool_or"
            | "some"
            | "any"
            | "collect_list"
            | "array_agg"
            | "collect_set"
            | "percentile"
            | "approx_count_distinct"
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
