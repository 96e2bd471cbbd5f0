//! `BooleanSimplification` and `PruneFilters`: `x AND true` is `x`, `x OR true` is `true`,
//! `(a AND b) OR (a AND c)` is `a AND (b OR c)` (so a join key written in every branch of a
//! disjunction, as TPC-H Q19 writes it, becomes an equi-join key), a filter that is always
//! true disappears, one that is never true becomes an empty relation.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use ferrospark_common::{Config, Result};
use ferrospark_expr::{BinaryOp, Expr, Literal};

use super::OptimizerRule;
use crate::logical::expr_util::{conjoin, split_conjuncts, transform_up};
use crate::logical::{rewrite_expressions, LogicalPlan};

/// Simplifies boolean expressions and constant filters.
pub struct BooleanSimplification;

/// `Some(b)` for a boolean literal, `None` otherwise; NULL counts as `Some(None)`.
fn bool_lit(e: &Expr) -> Option<Option<bool>> {
    match e {
        Expr::Literal(l) => {
            let a = l.array();
            match a.data_type() {
                arrow_schema::DataType::Boolean => Some(if a.is_null(0) {
                    None
                } else {
                    Some(a.as_boolean().value(0))
                }),
                arrow_schema::DataType::Null => Some(None),
                _ => None,
            }
        }
        _ => None,
    }
}

fn simplify(e: &Expr) -> Result<Expr> {
    transform_up(e, &mut |x| {
        Ok(match &x {
            Expr::Binary {
                left,
                op: BinaryOp::And,
                right,
            } => match (bool_lit(left), bool_lit(right)) {
                (Some(Some(true)), _) => (**right).clone(),
                (_, Some(Some(true))) => (**left).clone(),
                (Some(Some(false)), _) | (_, Some(Some(false))) => {
                    Expr::Literal(Literal::boolean(false))
                }
                _ => x,
            },
            Expr::Binary {
                left,
                op: BinaryOp::Or,
                right,
            } => match (bool_lit(left), bool_lit(right)) {
                (Some(Some(false)), _) => (**right).clone(),
                (_, Some(Some(false))) => (**left).clone(),
                (Some(Some(true)), _) | (_, Some(Some(true))) => {
                    Expr::Literal(Literal::boolean(true))
                }
                _ => factor_common(&x).unwrap_or(x),
            },
            Expr::Not(inner) => match inner.as_ref() {
                Expr::Not(y) => (**y).clone(),
                _ => match bool_lit(inner) {
                    Some(Some(b)) => Expr::Literal(Literal::boolean(!b)),
                    _ => x,
                },
            },
            _ => x,
        })
    })
}

fn disjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::Or,
            right,
        } => {
            disjuncts(left, out);
            disjuncts(right, out);
        }
        other => out.push(other.clone()),
    }
}

/// `(a AND b) OR (a AND c)` as `a AND (b OR c)`; `None` when the branches share nothing.
fn factor_common(or: &Expr) -> Option<Expr> {
    let mut branches = Vec::new();
    disjuncts(or, &mut branches);
    let conj: Vec<Vec<Expr>> = branches.iter().map(split_conjuncts).collect();
    let common: Vec<Expr> = conj
        .first()?
        .iter()
        .filter(|c| conj[1..].iter().all(|b| b.contains(c)))
        .fold(Vec::new(), |mut acc, c| {
            if !acc.contains(c) {
                acc.push(c.clone());
            }
            acc
        });
    if common.is_empty() {
        return None;
    }
    let rests: Vec<Option<Expr>> = conj
        .into_iter()
        .map(|b| conjoin(b.into_iter().filter(|c| !common.contains(c))))
        .collect();
    // A branch left with nothing is true, and so is the whole disjunction of the rests.
    let rest = if rests.iter().any(Option::is_none) {
        None
    } else {
        rests.into_iter().flatten().reduce(|a, b| Expr::Binary {
            left: Box::new(a),
            op: BinaryOp::Or,
            right: Box::new(b),
        })
    };
    conjoin(common.into_iter().chain(rest))
}

impl OptimizerRule for BooleanSimplification {
    fn name(&self) -> &'static str {
        "BooleanSimplification"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut |node| {
            let node = rewrite_expressions(&node, &mut simplify)?;
            Ok(match node.as_ref() {
                LogicalPlan::Filter { input, predicate } => match bool_lit(predicate) {
                    Some(Some(true)) => input.clone(),
                    Some(_) => Arc::new(LogicalPlan::Empty {
                        attrs: input.output(),
                    }),
                    None => node,
                },
                _ => node,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrospark_expr::parse_expr;

    fn simplified(text: &str) -> String {
        simplify(&parse_expr(text).expect("parses"))
            .expect("simplifies")
            .to_string()
    }

    #[test]
    fn common_conjuncts_leave_a_disjunction() {
        assert_eq!(
            simplified("(k = j AND a > 1) OR (k = j AND b < 2) OR (c = 3 AND k = j)"),
            "k = j AND (a > 1 OR b < 2 OR c = 3)"
        );
        assert_eq!(simplified("(k = j AND a > 1) OR k = j"), "k = j");
        assert_eq!(
            simplified("(a > 1 AND b > 1) OR c > 1"),
            "a > 1 AND b > 1 OR c > 1"
        );
    }

    #[test]
    fn constants_fold_away() {
        assert_eq!(simplified("a > 1 AND true"), "a > 1");
        assert_eq!(simplified("a > 1 OR true"), "true");
        assert_eq!(simplified("NOT NOT a > 1"), "a > 1");
    }
}
