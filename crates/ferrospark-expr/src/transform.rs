//! Rewriting expression trees: a node's children rebuilt, top-down and bottom-up rewrites
//! (the planner's rules and the streaming operators' name resolution use them).

use ferrospark_common::Result;

use crate::Expr;

/// Rebuilds `e` with `f` applied to each direct child.
pub fn map_children(e: &Expr, f: &mut dyn FnMut(&Expr) -> Result<Expr>) -> Result<Expr> {
    let b = |x: &Expr, f: &mut dyn FnMut(&Expr) -> Result<Expr>| -> Result<Box<Expr>> {
        Ok(Box::new(f(x)?))
    };
    Ok(match e {
        Expr::Column(_) | Expr::Literal(_) | Expr::TypedString { .. } | Expr::LambdaVariable(_) => {
            e.clone()
        }
        Expr::Lambda { params, body } => Expr::Lambda {
            params: params.clone(),
            body: b(body, f)?,
        },
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
        Expr::Written { expr, name } => Expr::Written {
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
        Expr::Udf { udf, args } => Expr::Udf {
            udf: udf.clone(),
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
