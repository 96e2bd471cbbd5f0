//! Subqueries into joins, as Catalyst's `RewritePredicateSubquery` and
//! `RewriteCorrelatedScalarSubquery` rewrite them.
//!
//! ```text
//!  WHERE EXISTS (SELECT .. WHERE inner.k = outer.k)   ->  outer LEFT SEMI JOIN inner ON inner.k = outer.k
//!  WHERE x NOT IN (SELECT y ..)  (uncorrelated)       ->  null-aware anti join on x = y
//!  (SELECT agg .. WHERE inner.k = outer.k)            ->  outer LEFT OUTER JOIN
//!                                                         (SELECT agg, k .. GROUP BY k) ON k = outer.k
//! ```
//! Correlated conjuncts are pulled out of the subquery's filters; the inner columns they read
//! are carried up through its projections and added to its grouping.

use std::collections::HashSet;
use std::sync::Arc;

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::Expr;
use ferrospark_join::JoinType;

use super::{literal_i64, Lifted, SqlPlanner, SUBQUERY_FN};
use crate::analyzer::{resolve_expr, Scope};
use crate::logical::expr_util::{column_keys, conjoin, split_conjuncts, transform_down};
use crate::logical::{Attr, LogicalPlan};

/// Every attribute key visible in `scope` and the scopes around it.
fn scope_keys(scope: &Scope<'_>) -> HashSet<String> {
    let mut out: HashSet<String> = scope.attrs.iter().map(Attr::key).collect();
    if let Some(o) = scope.outer {
        out.extend(scope_keys(o));
    }
    out
}

fn slot_of(e: &Expr) -> Option<(usize, Option<&Expr>)> {
    match e {
        Expr::Function { name, args } if name == SUBQUERY_FN => {
            let n = match args.first() {
                Some(Expr::Literal(l)) => literal_i64(l)? as usize,
                _ => return None,
            };
            Some((n, args.get(1)))
        }
        _ => None,
    }
}

impl<'a> SqlPlanner<'a> {
    fn lifted_query(&self, slot: usize) -> Result<Lifted> {
        self.lifted
            .borrow()
            .get(slot)
            .cloned()
            .ok_or_else(|| FerroError::Internal(format!("no subquery in slot {slot}")))
    }

    /// A WHERE conjunct that is `[NOT] EXISTS` or `[NOT] IN (subquery)`, planned as a semi or
    /// anti join of `plan`; `None` for any other conjunct.
    pub(crate) fn predicate_subquery(
        &self,
        plan: &Arc<LogicalPlan>,
        conjunct: &Expr,
        scope: &Scope<'_>,
    ) -> Result<Option<Arc<LogicalPlan>>> {
        let (inner, flip) = match conjunct {
            Expr::Not(x) => (x.as_ref(), true),
            other => (other, false),
        };
        let Some((slot, value)) = slot_of(inner) else {
            return Ok(None);
        };
        let (query, negated, is_in) = match self.lifted_query(slot)? {
            Lifted::Exists(q, neg) => (q, neg ^ flip, false),
            Lifted::In(q, neg) => (q, neg ^ flip, true),
            Lifted::Scalar(_) => return Ok(None),
        };
        let sub = self.query(&query, Some(scope))?;
        let outer_keys = scope_keys(scope);
        let (sub, correlated) = pull_correlated(&sub, &outer_keys)?;
        let mut conds = correlated;
        let mut join_type = if negated {
            JoinType::LeftAnti
        } else {
            JoinType::LeftSemi
        };
        if is_in {
            let value = value.ok_or_else(|| FerroError::Internal("IN without a value".into()))?;
            let v = resolve_expr(value, scope)?;
            let out = sub.output();
            if out.len() != 1 {
                return Err(FerroError::Analysis(format!(
                    "[INVALID_SUBQUERY_EXPRESSION] The IN subquery returns {} columns; it must return one",
                    out.len()
                )));
            }
            let eq = v.clone().eq(out[0].column());
            if negated {
                if conds.is_empty() {
                    // NOT IN: NULL on either side makes the test unknown (Spark's null-aware
                    // anti join).
                    join_type = JoinType::NullAwareAnti;
                    conds.insert(0, eq);
                } else {
                    conds.insert(0, eq.clone().or(Expr::IsNull(Box::new(eq))));
                }
            } else {
                conds.insert(0, eq);
            }
        }
        Ok(Some(Arc::new(LogicalPlan::Join {
            left: plan.clone(),
            right: sub,
            join_type,
            condition: conjoin(conds),
            hint: None,
        })))
    }

    /// Scalar subqueries inside `e` (resolved over `plan`), each joined to `plan` with a left
    /// outer join and replaced by its value column.
    pub(crate) fn scalar_subqueries(
        &self,
        mut plan: Arc<LogicalPlan>,
        e: Expr,
        scope: &Scope<'_>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        let mut slots = Vec::new();
        e.visit(&mut |x| {
            if let Some((s, None)) = slot_of(x) {
                slots.push(s);
            }
        });
        if slots.is_empty() {
            return Ok((plan, e));
        }
        let outer_keys = scope_keys(scope);
        let mut replaced = e;
        for slot in slots {
            let query = match self.lifted_query(slot)? {
                Lifted::Scalar(q) => q,
                Lifted::Exists(..) | Lifted::In(..) => {
                    return Err(FerroError::Unsupported(
                        "EXISTS / IN subqueries inside OR or a select list; write them as WHERE conjuncts".into(),
                    ))
                }
            };
            let sub = self.query(&query, Some(scope))?;
            let n = sub.output().len();
            let (sub, correlated) = pull_correlated(&sub, &outer_keys)?;
            if n != 1 {
                return Err(FerroError::Analysis(format!(
                    "[INVALID_SUBQUERY_EXPRESSION.SCALAR_SUBQUERY_RETURN_MORE_THAN_ONE_OUTPUT_COLUMN] A scalar subquery returns {n} columns; it must return one"
                )));
            }
            let value = sub.output()[0].column();
            plan = Arc::new(LogicalPlan::Join {
                left: plan,
                right: sub,
                join_type: JoinType::LeftOuter,
                condition: conjoin(correlated),
                hint: None,
            });
            replaced = transform_down(&replaced, &mut |x| {
                Ok(match slot_of(x) {
                    Some((s, None)) if s == slot => Some(value.clone()),
                    _ => None,
                })
            })?;
        }
        Ok((plan, replaced))
    }
}

/// Pulls the conjuncts that read `outer` columns out of `plan`'s filters, carrying the inner
/// columns they read up to its output (and into its grouping).
pub(crate) fn pull_correlated(
    plan: &Arc<LogicalPlan>,
    outer: &HashSet<String>,
) -> Result<(Arc<LogicalPlan>, Vec<Expr>)> {
    let reads_outer = |e: &Expr| column_keys(e).iter().any(|k| outer.contains(k));
    let inner_keys = |preds: &[Expr]| -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for p in preds {
            for k in column_keys(p) {
                if !outer.contains(&k) && !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        keys.sort();
        keys
    };
    Ok(match plan.as_ref() {
        LogicalPlan::Filter { input, predicate } => {
            let (inp, mut preds) = pull_correlated(input, outer)?;
            let (corr, local): (Vec<Expr>, Vec<Expr>) = split_conjuncts(predicate)
                .into_iter()
                .partition(reads_outer);
            preds.extend(corr);
            let node = match conjoin(local) {
                Some(p) => Arc::new(LogicalPlan::Filter {
                    input: inp,
                    predicate: p,
                }),
                None => inp,
            };
            (node, preds)
        }
        LogicalPlan::Project { input, exprs } => {
            let (inp, preds) = pull_correlated(input, outer)?;
            let mut exprs = exprs.clone();
            let available = inp.output();
            for k in inner_keys(&preds) {
                if exprs.iter().any(|(_, a)| a.key() == k) {
                    continue;
                }
                if let Some(a) = available.iter().find(|a| a.key() == k) {
                    exprs.push((a.column(), a.clone()));
                }
            }
            (Arc::new(LogicalPlan::Project { input: inp, exprs }), preds)
        }
        LogicalPlan::Aggregate { input, group, aggs } => {
            let (inp, preds) = pull_correlated(input, outer)?;
            let mut group = group.clone();
            let available = inp.output();
            for p in &preds {
                let is_eq = matches!(
                    p,
                    Expr::Binary {
                        op: ferrospark_expr::BinaryOp::Eq | ferrospark_expr::BinaryOp::EqNullSafe,
                        ..
                    }
                );
                if !is_eq {
                    return Err(FerroError::Unsupported(format!(
                        "a correlated predicate that is not an equality ({}) inside an aggregating subquery",
                        crate::logical::expr_text(p)
                    )));
                }
            }
            for k in inner_keys(&preds) {
                if group.iter().any(|(_, a)| a.key() == k) {
                    continue;
                }
                if let Some(a) = available.iter().find(|a| a.key() == k) {
                    group.push((a.column(), a.clone()));
                }
            }
            (
                Arc::new(LogicalPlan::Aggregate {
                    input: inp,
                    group,
                    aggs: aggs.clone(),
                }),
                preds,
            )
        }
        LogicalPlan::SubqueryAlias {
            input,
            alias,
            attrs,
        } => {
            let (inp, preds) = pull_correlated(input, outer)?;
            let mut attrs = attrs.clone();
            for a in inp.output() {
                if !attrs.iter().any(|x| x.id == a.id) {
                    attrs.push(a.with_qualifier(Some(alias.clone())));
                }
            }
            (
                Arc::new(LogicalPlan::SubqueryAlias {
                    input: inp,
                    alias: alias.clone(),
                    attrs,
                }),
                preds,
            )
        }
        LogicalPlan::Join {
            left,
            right,
            join_type,
            condition,
            hint,
        } if matches!(join_type, JoinType::Inner) => {
            let (l, mut preds) = pull_correlated(left, outer)?;
            let (r, more) = pull_correlated(right, outer)?;
            preds.extend(more);
            let mut local = Vec::new();
            if let Some(c) = condition {
                for part in split_conjuncts(c) {
                    if reads_outer(&part) {
                        preds.push(part);
                    } else {
                        local.push(part);
                    }
                }
            }
            (
                Arc::new(LogicalPlan::Join {
                    left: l,
                    right: r,
                    join_type: *join_type,
                    condition: conjoin(local),
                    hint: *hint,
                }),
                preds,
            )
        }
        LogicalPlan::Sort { input, keys } => {
            let (inp, preds) = pull_correlated(input, outer)?;
            (
                Arc::new(LogicalPlan::Sort {
                    input: inp,
                    keys: keys.clone(),
                }),
                preds,
            )
        }
        _ => (plan.clone(), Vec::new()),
    })
}
