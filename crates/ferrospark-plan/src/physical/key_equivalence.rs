//! Columns whose values a plan's rows hold equal (an inner join's `a = b` keys, a filter's
//! `a = b`), so a join above it need not hash and compare a key its other keys imply.
//!
//! TPC-H Q9 joins `lineitem` to `supplier ⋈ partsupp ⋈ part` on `l_suppkey = s_suppkey AND
//! l_suppkey = ps_suppkey AND l_partkey = p_partkey AND l_partkey = ps_partkey`; below the
//! join `s_suppkey = ps_suppkey` and `p_partkey = ps_partkey` already hold, so two keys do
//! the work of four (and the probe side gets one runtime filter per column, not two).

use std::collections::HashMap;

use ferrospark_expr::{BinaryOp, Expr};
use ferrospark_join::JoinType;

use super::planner::EquiJoin;
use crate::logical::expr_util::split_conjuncts;
use crate::logical::LogicalPlan;

/// Classes of columns (by attribute key) equal in every row of a plan: a union-find.
#[derive(Debug, Default)]
pub struct EqualColumns {
    parent: HashMap<String, String>,
}

impl EqualColumns {
    /// The equalities `plan`'s rows are known to satisfy.
    pub fn of(plan: &LogicalPlan) -> Self {
        let mut out = Self::default();
        out.collect(plan);
        out
    }

    /// Whether `a` and `b` hold the same value in every row (an expression equals itself).
    pub fn equal(&self, a: &Expr, b: &Expr) -> bool {
        if a == b {
            return true;
        }
        match (a, b) {
            (Expr::Column(x), Expr::Column(y)) => self.root(x) == self.root(y),
            _ => false,
        }
    }

    fn root<'a>(&'a self, mut k: &'a str) -> &'a str {
        while let Some(p) = self.parent.get(k) {
            k = p;
        }
        k
    }

    fn union(&mut self, a: &str, b: &str) {
        let (ra, rb) = (self.root(a).to_string(), self.root(b).to_string());
        if ra != rb {
            self.parent.insert(ra, rb);
        }
    }

    fn add_equalities(&mut self, predicate: &Expr) {
        for c in split_conjuncts(predicate) {
            if let Expr::Binary {
                left,
                op: BinaryOp::Eq,
                right,
            } = &c
            {
                if let (Expr::Column(a), Expr::Column(b)) = (left.as_ref(), right.as_ref()) {
                    self.union(a, b);
                }
            }
        }
    }

    fn collect(&mut self, plan: &LogicalPlan) {
        match plan {
            LogicalPlan::Filter { input, predicate } => {
                self.add_equalities(predicate);
                self.collect(input);
            }
            LogicalPlan::Join {
                left,
                right,
                join_type,
                condition,
                ..
            } => match join_type {
                JoinType::Inner => {
                    if let Some(c) = condition {
                        self.add_equalities(c);
                    }
                    self.collect(left);
                    self.collect(right);
                }
                JoinType::LeftSemi
                | JoinType::LeftAnti
                | JoinType::NullAwareAnti
                | JoinType::LeftOuter => self.collect(left),
                JoinType::RightOuter => self.collect(right),
                JoinType::Cross => {
                    self.collect(left);
                    self.collect(right);
                }
                JoinType::FullOuter => {}
            },
            // Columns a projection passes through keep their keys and their equalities.
            LogicalPlan::Project { input, .. }
            | LogicalPlan::SubqueryAlias { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. } => self.collect(input),
            _ => {}
        }
    }
}

/// Drops each key pair of `keys` that an earlier kept pair implies: the same probe key (or
/// one equal to it on its side) against a key equal to the earlier one on the other side.
/// `<=>` pairs are kept (a NULL key matches there, and `=` below says nothing of NULLs).
pub fn drop_implied_keys(keys: &mut EquiJoin, left: &LogicalPlan, right: &LogicalPlan) {
    if keys.left.len() < 2 {
        return;
    }
    let (l, r) = (EqualColumns::of(left), EqualColumns::of(right));
    let mut kept: Vec<usize> = Vec::with_capacity(keys.left.len());
    for i in 0..keys.left.len() {
        let implied = !keys.null_safe[i]
            && kept.iter().any(|&j| {
                !keys.null_safe[j]
                    && l.equal(&keys.left[i], &keys.left[j])
                    && r.equal(&keys.right[i], &keys.right[j])
            });
        if !implied {
            kept.push(i);
        }
    }
    if kept.len() == keys.left.len() {
        return;
    }
    let pick = |v: &[Expr]| kept.iter().map(|&i| v[i].clone()).collect::<Vec<_>>();
    keys.left = pick(&keys.left);
    keys.right = pick(&keys.right);
    keys.null_safe = kept.iter().map(|&i| keys.null_safe[i]).collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(k: &str) -> Expr {
        Expr::Column(k.to_string())
    }

    fn eq(a: &str, b: &str) -> Expr {
        Expr::Binary {
            left: Box::new(col(a)),
            op: BinaryOp::Eq,
            right: Box::new(col(b)),
        }
    }

    fn filter(predicate: Expr) -> LogicalPlan {
        LogicalPlan::Filter {
            input: std::sync::Arc::new(LogicalPlan::OneRow),
            predicate,
        }
    }

    fn keys(pairs: &[(&str, &str, bool)]) -> EquiJoin {
        EquiJoin {
            left: pairs.iter().map(|p| col(p.0)).collect(),
            right: pairs.iter().map(|p| col(p.1)).collect(),
            null_safe: pairs.iter().map(|p| p.2).collect(),
            residual: None,
        }
    }

    #[test]
    fn a_key_equal_to_an_earlier_one_on_both_sides_is_dropped() {
        let build = filter(Expr::Binary {
            left: Box::new(eq("s#1", "ps#2")),
            op: BinaryOp::And,
            right: Box::new(eq("p#3", "pk#4")),
        });
        let mut k = keys(&[
            ("s#1", "l_s#9", false),
            ("p#3", "l_p#8", false),
            ("ps#2", "l_s#9", false),
            ("pk#4", "l_p#8", false),
        ]);
        drop_implied_keys(&mut k, &build, &LogicalPlan::OneRow);
        assert_eq!(k.left, vec![col("s#1"), col("p#3")]);
        assert_eq!(k.right, vec![col("l_s#9"), col("l_p#8")]);
        assert_eq!(k.null_safe, vec![false, false]);
    }

    #[test]
    fn keys_without_a_known_equality_or_null_safe_are_kept() {
        let build = filter(eq("s#1", "ps#2"));
        // Different probe columns: both tests are needed.
        let mut k = keys(&[("s#1", "a#9", false), ("ps#2", "b#8", false)]);
        drop_implied_keys(&mut k, &build, &LogicalPlan::OneRow);
        assert_eq!(k.left.len(), 2);
        // `<=>` matches NULLs, which `=` below says nothing about.
        let mut k = keys(&[("s#1", "a#9", false), ("ps#2", "a#9", true)]);
        drop_implied_keys(&mut k, &build, &LogicalPlan::OneRow);
        assert_eq!(k.left.len(), 2);
        // A full outer join's condition does not hold in its padded rows.
        let full = LogicalPlan::Join {
            left: std::sync::Arc::new(LogicalPlan::OneRow),
            right: std::sync::Arc::new(LogicalPlan::OneRow),
            join_type: JoinType::FullOuter,
            condition: Some(eq("s#1", "ps#2")),
            hint: None,
        };
        let mut k = keys(&[("s#1", "a#9", false), ("ps#2", "a#9", false)]);
        drop_implied_keys(&mut k, &full, &LogicalPlan::OneRow);
        assert_eq!(k.left.len(), 2);
    }
}
