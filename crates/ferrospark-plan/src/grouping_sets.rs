//! GROUPING SETS, ROLLUP and CUBE as Spark plans them: an `Expand` emits every input row once
//! per grouping set (the grouping columns a set leaves out set to NULL, the set's id in
//! `spark_grouping_id`), and one `Aggregate` groups by the expanded columns and that id.
//!
//! ```text
//!   Aggregate [a#5, b#6, spark_grouping_id#7], [a#5, b#6, sum(x#2)]
//!   +- Expand [[x#2, a#0, b#1, 0], [x#2, a#0, null, 1], [x#2, null, null, 3]],
//!             [x#2, a#5, b#6, spark_grouping_id#7]
//! ```
//! Aggregate arguments read the input's columns, which Expand passes through unchanged, so
//! `sum(a) ... GROUP BY ROLLUP(a)` sums `a` even in the row where the group `a` is NULL.
//! Bit `n - 1 - k` of the id is set when the set leaves out the k-th of the n grouping
//! expressions; `grouping(e)` reads e's bit, `grouping_id()` the whole id.

use std::sync::Arc;

use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::expr::{BinaryOp, Literal};
use ferrospark_expr::Expr;

use crate::analyzer::strip_inner_aliases;
use crate::builder::{grouping_expr, strip_ids, PlanBuilder};
use crate::logical::expr_util::{is_aggregate_call, transform_down_outside_windows};
use crate::logical::{Attr, LogicalPlan};

/// Spark caps grouping expressions of one GROUP BY at 64 (the id is a BIGINT bitmask).
const MAX_GROUPING_EXPRS: usize = 64;

/// The grouping sets of `ROLLUP(e1, ..., en)` over elements given as index lists:
/// `(e1..en), (e1..en-1), ..., ()`.
pub fn rollup_sets(elems: &[Vec<usize>]) -> Vec<Vec<usize>> {
    (0..=elems.len())
        .rev()
        .map(|i| elems[..i].concat())
        .collect()
}

/// The grouping sets of `CUBE(e1, ..., en)`, in Spark's order: every subset, those with `e1`
/// first (`(a, b), (a), (b), ()`).
pub fn cube_sets(elems: &[Vec<usize>]) -> Vec<Vec<usize>> {
    match elems.split_first() {
        None => vec![vec![]],
        Some((x, rest)) => {
            let tail = cube_sets(rest);
            let mut out: Vec<Vec<usize>> = tail
                .iter()
                .map(|t| [x.clone(), t.clone()].concat())
                .collect();
            out.extend(tail);
            out
        }
    }
}

/// Every concatenation of one set of `a` with one set of `b` (`GROUP BY a, ROLLUP(b, c)`).
pub fn cross_sets(a: &[Vec<usize>], b: &[Vec<usize>]) -> Vec<Vec<usize>> {
    a.iter()
        .flat_map(|x| b.iter().map(move |y| [x.clone(), y.clone()].concat()))
        .collect()
}

/// The first `grouping(...)` / `grouping_id(...)` call in `e`.
pub fn find_grouping_call(e: &Expr) -> Option<Expr> {
    let mut found = None;
    e.visit(&mut |x| {
        if found.is_none()
            && matches!(x, Expr::Function { name, .. } if name == "grouping" || name == "grouping_id" || name == "grouping__id")
        {
            found = Some(x.clone());
        }
    });
    found
}

/// The error Spark raises for `grouping()` / `grouping_id()` outside GROUPING SETS, ROLLUP
/// and CUBE.
pub fn grouping_outside_analytics(e: &Expr) -> FerroError {
    FerroError::Analysis(format!(
        "[UNSUPPORTED_GROUPING_EXPRESSION] grouping()/grouping_id() can only be used with GroupingSets/Cube/Rollup: {}",
        strip_ids(&e.to_string())
    ))
}

impl PlanBuilder {
    /// An Aggregate over an Expand for `GROUP BY GROUPING SETS` (ROLLUP and CUBE are given as
    /// their sets): `group` are the resolved grouping expressions (named as written in
    /// `group_items`), `sets` index into them. Returns the node and `results` rewritten over
    /// its output, as [`PlanBuilder::aggregate`] does.
    pub fn grouping_sets_aggregate(
        &self,
        input: Arc<LogicalPlan>,
        group_items: &[Expr],
        group: Vec<Expr>,
        sets: &[Vec<usize>],
        results: &[Expr],
    ) -> Result<(Arc<LogicalPlan>, Vec<Expr>)> {
        let in_attrs = input.output();
        // Distinct grouping expressions, and each written position's index among them.
        let mut exprs: Vec<Expr> = Vec::new();
        let mut items: Vec<Expr> = Vec::new();
        let mut index_of = Vec::with_capacity(group.len());
        for (item, g) in group_items.iter().zip(group) {
            let g = grouping_expr(&g)?;
            match exprs.iter().position(|e| *e == g) {
                Some(i) => index_of.push(i),
                None => {
                    index_of.push(exprs.len());
                    exprs.push(g);
                    items.push(item.clone());
                }
            }
        }
        let n = exprs.len();
        if n > MAX_GROUPING_EXPRS {
            return Err(FerroError::Analysis(format!(
                "[GROUPING_SIZE_LIMIT_EXCEEDED] Grouping sets size cannot be greater than {MAX_GROUPING_EXPRS}; this GROUP BY has {n} expressions"
            )));
        }
        let sets: Vec<Vec<bool>> = sets
            .iter()
            .map(|s| {
                let mut member = vec![false; n];
                for &i in s {
                    member[index_of[i]] = true;
                }
                member
            })
            .collect();

        // The Expand: input columns, then each grouping expression or NULL, then the id
        // (and the set's position when a set repeats, so repeated sets stay apart).
        let mut group_attrs = Vec::with_capacity(n);
        for (item, g) in items.iter().zip(&exprs) {
            let (_, a) = self.named(item, g.clone(), &in_attrs)?;
            let always = sets.iter().all(|s| s[group_attrs.len()]);
            group_attrs.push(self.attr(&a.name, a.data_type, a.nullable || !always));
        }
        let gid = self.attr("spark_grouping_id", DataType::Int64, false);
        let repeated = (1..sets.len()).any(|i| sets[..i].contains(&sets[i]));
        let pos = repeated.then(|| self.attr("_gen_grouping_pos", DataType::Int32, false));
        let projections: Vec<Vec<Expr>> = sets
            .iter()
            .enumerate()
            .map(|(si, member)| {
                let mut row: Vec<Expr> = in_attrs.iter().map(Attr::column).collect();
                let mut id = 0i64;
                for k in 0..n {
                    if member[k] {
                        row.push(exprs[k].clone());
                    } else {
                        row.push(Expr::Literal(Literal::null(&group_attrs[k].data_type)));
                        id |= 1 << (n - 1 - k);
                    }
                }
                row.push(Expr::Literal(Literal::bigint(id)));
                if pos.is_some() {
                    row.push(Expr::Literal(Literal::integer(si as i64)));
                }
                row
            })
            .collect();
        let mut out_attrs = in_attrs.clone();
        out_attrs.extend(group_attrs.iter().cloned());
        out_attrs.push(gid.clone());
        out_attrs.extend(pos.iter().cloned());
        let expand = Arc::new(LogicalPlan::Expand {
            input,
            projections,
            attrs: out_attrs,
        });

        // Results read the expanded grouping columns; grouping() / grouping_id() read the id.
        let grouping_bit = |k: usize| -> Expr {
            let shifted = Expr::Function {
                name: "div".into(),
                args: vec![
                    gid.column(),
                    Expr::Literal(Literal::bigint(1 << (n - 1 - k))),
                ],
            };
            Expr::Cast {
                expr: Box::new(Expr::Binary {
                    left: Box::new(shifted),
                    op: BinaryOp::Modulo,
                    right: Box::new(Expr::Literal(Literal::bigint(2))),
                }),
                type_name: "TINYINT".into(),
            }
        };
        let rewritten: Vec<Expr> = results
            .iter()
            .map(|r| {
                transform_down_outside_windows(r, &mut |x| {
                    if is_aggregate_call(x) {
                        return Ok(Some(x.clone()));
                    }
                    if let Expr::Function { name, args } = x {
                        let args: Vec<Expr> = args.iter().map(strip_inner_aliases).collect::<Result<_>>()?;
                        if name == "grouping" {
                            let k = match args.as_slice() {
                                [a] => exprs.iter().position(|e| e == a),
                                _ => None,
                            };
                            return match k {
                                Some(k) => Ok(Some(grouping_bit(k))),
                                None => Err(FerroError::Analysis(format!(
                                    "[GROUPING_COLUMN_MISMATCH] Column of grouping ({}) can't be found in grouping columns {}",
                                    strip_ids(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")),
                                    strip_ids(&exprs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(","))
                                ))),
                            };
                        }
                        if name == "grouping_id" || name == "grouping__id" {
                            return if args.is_empty() || args == exprs {
                                Ok(Some(gid.column()))
                            } else {
                                Err(FerroError::Analysis(format!(
                                    "[GROUPING_ID_COLUMN_MISMATCH] Columns of grouping_id ({}) does not match grouping columns ({})",
                                    strip_ids(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")),
                                    strip_ids(&exprs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(","))
                                )))
                            };
                        }
                    }
                    Ok(exprs
                        .iter()
                        .position(|e| e == x)
                        .map(|k| group_attrs[k].column()))
                })
            })
            .collect::<Result<_>>()?;

        let mut agg_items: Vec<Expr> = items;
        agg_items.push(Expr::Column("spark_grouping_id".into()));
        let mut agg_group: Vec<Expr> = group_attrs.iter().map(Attr::column).collect();
        agg_group.push(gid.column());
        if let Some(p) = &pos {
            agg_items.push(Expr::Column("_gen_grouping_pos".into()));
            agg_group.push(p.column());
        }
        self.aggregate(expand, &agg_items, agg_group, &rewritten)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollup_is_every_prefix_down_to_the_total() {
        assert_eq!(
            rollup_sets(&[vec![0], vec![1, 2], vec![3]]),
            vec![vec![0, 1, 2, 3], vec![0, 1, 2], vec![0], vec![]]
        );
        assert_eq!(rollup_sets(&[]), vec![Vec::<usize>::new()]);
    }

    #[test]
    fn cube_is_every_subset_in_sparks_order() {
        assert_eq!(
            cube_sets(&[vec![0], vec![1]]),
            vec![vec![0, 1], vec![0], vec![1], vec![]]
        );
        assert_eq!(cube_sets(&[vec![0], vec![1], vec![2]]).len(), 8);
    }

    #[test]
    fn mixed_lists_cross_their_parts() {
        let plain = vec![vec![0]];
        let rollup = rollup_sets(&[vec![1], vec![2]]);
        assert_eq!(
            cross_sets(&plain, &rollup),
            vec![vec![0, 1, 2], vec![0, 1], vec![0]]
        );
    }
}
