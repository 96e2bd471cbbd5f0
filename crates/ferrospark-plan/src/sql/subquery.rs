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

use super::{literal_i64, Lifted, SqlPlanner, SUBQUERY_FN, TUPLE_FN};
use crate::analyzer::{resolve_expr, Scope};
use crate::logical::expr_util::{column_keys, conjoin, split_conjuncts, transform_down};
use crate::logical::{Attr, LogicalPlan};

/// Every attribute key visible in `scope` and the scopes around it.
pub(crate) fn scope_keys(scope: &Scope<'_>) -> HashSet<String> {
    let mut out: HashSet<String> = scope.attrs.iter().map(Attr::key).collect();
    if let Some(o) = scope.outer {
        out.extend(scope_keys(o));
    }
    out
}

pub(super) fn slot_of(e: &Expr) -> Option<(usize, Option<&Expr>)> {
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
    /// `sub` with its correlated conjuncts pulled up as join conditions, or, where they sit
    /// out of reach (under a set operation, window, limit, outer join...), decorrelated
    /// through a domain join over `outer_plan`.
    fn decorrelated(
        &self,
        sub: &Arc<LogicalPlan>,
        outer_plan: &Arc<LogicalPlan>,
        outer_keys: &HashSet<String>,
        scalar: bool,
    ) -> Result<(Arc<LogicalPlan>, Vec<Expr>)> {
        if !self.legacy_count_handling()
            && inner_global_aggregate_reads_outer(sub, outer_keys, false)
        {
            // Pulled up, the correlation would group the aggregate: no row where no inner row
            // matched, the count bug. The domain join gives those values their row.
            return super::domain::decorrelate(self.builder, sub, outer_plan, outer_keys, scalar);
        }
        match pull_correlated(sub, outer_keys) {
            Ok((pulled, conds)) if !super::domain::reads_outer(&pulled, outer_keys) => {
                Ok((pulled, conds))
            }
            Ok(_) | Err(FerroError::Unsupported(_)) => {
                super::domain::decorrelate(self.builder, sub, outer_plan, outer_keys, scalar)
            }
            Err(e) => Err(e),
        }
    }

    /// Spark's name for the subquery in `slot` as a value: `scalarsubquery(a, b)`, `exists(a)`,
    /// `(x IN (listquery(a)))`, listing the outer columns it reads (each time it reads them,
    /// in the order of its plan, the root's first).
    fn subquery_name(
        &self,
        slot: usize,
        value: Option<&Expr>,
        scope: &Scope<'_>,
    ) -> Option<String> {
        let lifted = self.lifted_query(slot).ok()?;
        let query = match &lifted {
            Lifted::Scalar(q) | Lifted::Exists(q, _) | Lifted::In(q, _) => q,
        };
        let plan = self.query(query, Some(scope)).ok()?;
        let outer = scope_keys(scope);
        let mut refs: Vec<String> = Vec::new();
        let mut stack = vec![plan];
        while let Some(node) = stack.pop() {
            for e in node.expressions() {
                e.visit(&mut |x| {
                    if let Expr::Column(k) = x {
                        if outer.contains(k) {
                            refs.push(crate::builder::strip_ids(k));
                        }
                    }
                });
            }
            stack.extend(node.children().into_iter().rev().cloned());
        }
        let refs = refs.join(", ");
        Some(match lifted {
            Lifted::Scalar(_) => format!("scalarsubquery({refs})"),
            Lifted::Exists(_, negated) => {
                let e = format!("exists({refs})");
                if negated {
                    format!("(NOT {e})")
                } else {
                    e
                }
            }
            Lifted::In(_, negated) => {
                let v = value.map(Expr::spark_name).unwrap_or_default();
                let e = format!("({v} IN (listquery({refs})))");
                if negated {
                    format!("(NOT {e})")
                } else {
                    e
                }
            }
        })
    }

    /// A select-list item without an alias, named as Spark names the subqueries in it.
    pub(crate) fn name_subqueries(&self, item: Expr, scope: &Scope<'_>) -> Result<Expr> {
        let mut has_subquery = false;
        item.visit(&mut |x| has_subquery |= slot_of(x).is_some());
        if !has_subquery {
            return Ok(item);
        }
        // A name the parser generated (`avg(x) FILTER (WHERE EXISTS (...))`) holds the
        // placeholders' text: each is replaced by the subquery's name.
        if let Expr::Alias { expr, name } = &item {
            if !name.contains(SUBQUERY_FN) {
                return Ok(item);
            }
            let mut named = name.clone();
            expr.visit(&mut |x| {
                if let Some((slot, value)) = slot_of(x) {
                    if let Some(sub) = self.subquery_name(slot, value, scope) {
                        named = named.replace(&x.spark_name(), &sub);
                    }
                }
            });
            return Ok(Expr::Alias {
                expr: expr.clone(),
                name: named,
            });
        }
        let named = transform_down(&item, &mut |x| {
            Ok(slot_of(x).and_then(|(slot, value)| {
                self.subquery_name(slot, value, scope)
                    .map(|name| Expr::Written {
                        expr: Box::new(x.clone()),
                        name,
                    })
            }))
        })?;
        let name = named.output_name();
        if name == item.output_name() {
            return Ok(item);
        }
        Ok(Expr::Alias {
            expr: Box::new(item),
            name,
        })
    }

    /// Spark's legacy answer for EXISTS / IN over a correlated global aggregate (a row only
    /// where inner rows matched), under
    /// `spark.sql.optimizer.decorrelateExistsSubqueryLegacyIncorrectCountHandling.enabled`.
    fn legacy_count_handling(&self) -> bool {
        self.builder
            .cfg
            .get_bool(
                "spark.sql.optimizer.decorrelateExistsSubqueryLegacyIncorrectCountHandling.enabled",
                false,
            )
            .unwrap_or(false)
    }

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
        if one_row_per_outer_row(&sub)
            && !self.legacy_count_handling()
            && super::domain::reads_outer(&sub, &scope_keys(scope))
        {
            // Answered per outer row as a value (`exists_value`, `in_value`).
            return Ok(None);
        }
        // The select list's width, before correlation carries inner columns up beside it.
        let selected = sub.output();
        let outer_keys = scope_keys(scope);
        let (sub, correlated) = self.decorrelated(&sub, plan, &outer_keys, false)?;
        let mut conds = correlated;
        let mut join_type = if negated {
            JoinType::LeftAnti
        } else {
            JoinType::LeftSemi
        };
        if is_in {
            let value = value.ok_or_else(|| FerroError::Internal("IN without a value".into()))?;
            let v = resolve_expr(value, scope)?;
            if let Expr::Function { name, args } = &v {
                if name == TUPLE_FN {
                    check_in_width(args, &selected)?;
                    // Each pair compared on its own; NOT IN drops an outer row when some
                    // subquery row has no pair known to differ (Spark's rewrite of a
                    // multi-column NOT IN, which has no null-aware join).
                    let eqs = args
                        .iter()
                        .zip(&selected)
                        .map(|(a, s)| {
                            let eq = a.clone().eq(s.column());
                            if negated {
                                eq.clone().or(Expr::IsNull(Box::new(eq)))
                            } else {
                                eq
                            }
                        })
                        .collect::<Vec<_>>();
                    conds.splice(0..0, eqs);
                    return Ok(Some(Arc::new(LogicalPlan::Join {
                        left: plan.clone(),
                        right: sub,
                        join_type,
                        condition: conjoin(conds),
                        hint: None,
                    })));
                }
            }
            if selected.len() != 1 {
                return Err(FerroError::Analysis(format!(
                    "[INVALID_SUBQUERY_EXPRESSION] The IN subquery returns {} columns; it must return one",
                    selected.len()
                )));
            }
            let eq = v.clone().eq(selected[0].column());
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
            if let Some((s, v)) = slot_of(x) {
                slots.push((s, v.cloned()));
            }
        });
        if slots.is_empty() {
            return Ok((plan, e));
        }
        let outer_keys = scope_keys(scope);
        // Each subquery's domain reads the outer rows as they came (the joins added below
        // keep every outer row and its columns).
        let base = plan.clone();
        let mut replaced = e;
        for (slot, in_value) in slots {
            let query = match self.lifted_query(slot)? {
                Lifted::Scalar(q) => q,
                lifted => {
                    // EXISTS / IN as a value (inside OR, CASE, a select list, a join's ON).
                    let (p, value) = match (lifted, in_value) {
                        (Lifted::Exists(q, negated), _) => {
                            let (p, v) = self.exists_value(plan, &base, &q, scope, &outer_keys)?;
                            (p, if negated { Expr::Not(Box::new(v)) } else { v })
                        }
                        (Lifted::In(q, negated), Some(x)) => {
                            self.in_value(plan, &base, &q, x, negated, scope, &outer_keys)?
                        }
                        _ => return Err(FerroError::Internal("IN without a value".into())),
                    };
                    plan = p;
                    replaced = transform_down(&replaced, &mut |x| {
                        Ok(match slot_of(x) {
                            Some((s, _)) if s == slot => Some(value.clone()),
                            _ => None,
                        })
                    })?;
                    continue;
                }
            };
            let sub = self.query(&query, Some(scope))?;
            let (p, value) = self.scalar_join(plan, &base, sub, &outer_keys)?;
            plan = p;
            replaced = transform_down(&replaced, &mut |x| {
                Ok(match slot_of(x) {
                    Some((s, None)) if s == slot => Some(value.clone()),
                    _ => None,
                })
            })?;
        }
        Ok((plan, replaced))
    }

    /// A scalar subquery `sub` (planned) joined to `plan` with a left outer join, decorrelated
    /// over `base`; returns the joined plan and the subquery's value for each row.
    fn scalar_join(
        &self,
        plan: Arc<LogicalPlan>,
        base: &Arc<LogicalPlan>,
        sub: Arc<LogicalPlan>,
        outer_keys: &HashSet<String>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        let n = sub.output().len();
        if n != 1 {
            return Err(FerroError::Analysis(format!(
                "[INVALID_SUBQUERY_EXPRESSION.SCALAR_SUBQUERY_RETURN_MORE_THAN_ONE_OUTPUT_COLUMN] A scalar subquery returns {n} columns; it must return one"
            )));
        }
        // Without Spark's single join (`spark.sql.optimizer.scalarSubqueryUseSingleJoin`
        // false, with its legacy companion setting) the rows join as they come, as in Spark.
        let single_join = self
            .builder
            .cfg
            .get_bool("spark.sql.optimizer.scalarSubqueryUseSingleJoin", true)
            .unwrap_or(true);
        if single_join && !at_most_one_row_per_outer_row(&sub) {
            return self.single_value_join(plan, base, sub, outer_keys);
        }
        let legacy = self
            .builder
            .cfg
            .get_bool(
                "spark.sql.legacy.scalarSubqueryAllowGroupByNonEqualityCorrelatedPredicate",
                false,
            )
            .unwrap_or(false);
        if !legacy {
            check_correlated_grouping(&sub, outer_keys)?;
        }
        let empty_value = value_over_no_rows(&sub);
        let (sub, correlated) = self.decorrelated(&sub, base, outer_keys, true)?;
        let mut value = sub.output()[0].column();
        // The count bug: an outer row no inner group matches gets the aggregate's value
        // over no rows (`count` 0), not the outer join's NULL. A marker column tells a
        // matched row from a padded one.
        let sub = match empty_value {
            Some(default) if !correlated.is_empty() => {
                let marker = self
                    .builder
                    .attr("__matched", arrow_schema::DataType::Boolean, false);
                let mut exprs: Vec<(Expr, Attr)> = sub
                    .output()
                    .iter()
                    .map(|a| (a.column(), a.clone()))
                    .collect();
                exprs.push((
                    Expr::Literal(ferrospark_expr::Literal::boolean(true)),
                    marker.clone(),
                ));
                value = Expr::Case {
                    branches: vec![(Expr::IsNull(Box::new(marker.column())), default)],
                    otherwise: Some(Box::new(value)),
                };
                crate::builder::PlanBuilder::project_resolved(sub, exprs)
            }
            _ => sub,
        };
        let plan = Arc::new(LogicalPlan::Join {
            left: plan,
            right: sub,
            join_type: JoinType::LeftOuter,
            condition: conjoin(correlated),
            hint: None,
        });
        Ok((plan, value))
    }
}

impl SqlPlanner<'_> {
    /// A scalar subquery that may have more than one row for an outer row (no aggregate or
    /// `LIMIT 1` at its top), as Spark's single join runs it: its rows counted per outer row
    /// (per domain value when correlated), one of them taken, and
    /// `SCALAR_SUBQUERY_TOO_MANY_ROWS` raised where there are more.
    fn single_value_join(
        &self,
        plan: Arc<LogicalPlan>,
        base: &Arc<LogicalPlan>,
        sub: Arc<LogicalPlan>,
        outer_keys: &HashSet<String>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        let v = sub.output()[0].clone();
        let (sub, domain, conds) = self.per_outer_row(&sub, base, outer_keys)?;
        let rows = self
            .builder
            .hidden_attr("__rows", arrow_schema::DataType::Int64, false);
        let one = self
            .builder
            .hidden_attr("__value", v.data_type.clone(), true);
        let right = rows_per_domain(
            sub,
            &domain,
            &rows,
            (agg_call("any_value", vec![v.column()]), one.clone()),
        );
        let plan = Arc::new(LogicalPlan::Join {
            left: plan,
            right,
            join_type: JoinType::LeftOuter,
            condition: conjoin(conds),
            hint: None,
        });
        let value = Expr::Function {
            name: ferrospark_expr::functions::SINGLE_VALUE_FN.into(),
            args: vec![rows.column(), one.column()],
        };
        Ok((plan, value))
    }

    /// `sub` as seen by each row of `plan`: decorrelated through a domain join (its own
    /// columns, then the domain's) with the conditions joining it, or as it is when it reads
    /// no outer column.
    fn per_outer_row(
        &self,
        sub: &Arc<LogicalPlan>,
        plan: &Arc<LogicalPlan>,
        outer_keys: &HashSet<String>,
    ) -> Result<(Arc<LogicalPlan>, Vec<Attr>, Vec<Expr>)> {
        if !super::domain::reads_outer(sub, outer_keys) {
            return Ok((sub.clone(), Vec::new(), Vec::new()));
        }
        let own = sub.output().len();
        // Under Spark's legacy count handling a global aggregate has rows only for the outer
        // values its input matched: grouped by the domain.
        let (decorrelated, conds) = super::domain::decorrelate(
            self.builder,
            sub,
            plan,
            outer_keys,
            self.legacy_count_handling(),
        )?;
        let domain = decorrelated.output()[own..].to_vec();
        Ok((decorrelated, domain, conds))
    }

    /// `[NOT] EXISTS (query)` as a boolean column of each row of `plan`: a left outer join
    /// with the distinct domain values the subquery has rows for, marked.
    fn exists_value(
        &self,
        plan: Arc<LogicalPlan>,
        outer_plan: &Arc<LogicalPlan>,
        query: &sqlparser::ast::Query,
        scope: &Scope<'_>,
        outer_keys: &HashSet<String>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        let sub = self.query(query, Some(scope))?;
        if one_row_per_outer_row(&sub) && !self.legacy_count_handling() {
            // A global aggregate has its one row for every outer row, matched or not.
            return Ok((plan, Expr::Literal(ferrospark_expr::Literal::boolean(true))));
        }
        self.exists_value_of(plan, outer_plan, &sub, outer_keys)
    }

    /// [`Self::exists_value`] of a planned subquery.
    fn exists_value_of(
        &self,
        plan: Arc<LogicalPlan>,
        outer_plan: &Arc<LogicalPlan>,
        sub: &Arc<LogicalPlan>,
        outer_keys: &HashSet<String>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        let (sub, domain, conds) = self.per_outer_row(sub, outer_plan, outer_keys)?;
        let mark = self
            .builder
            .hidden_attr("__exists", arrow_schema::DataType::Boolean, false);
        let source = if domain.is_empty() {
            crate::builder::PlanBuilder::limit(sub, 0, Some(1))
        } else {
            self.distinct_of(sub, &domain)?
        };
        let mut exprs: Vec<(Expr, Attr)> = domain.iter().map(|a| (a.column(), a.clone())).collect();
        exprs.push((
            Expr::Literal(ferrospark_expr::Literal::boolean(true)),
            mark.clone(),
        ));
        let right = crate::builder::PlanBuilder::project_resolved(source, exprs);
        let joined = Arc::new(LogicalPlan::Join {
            left: plan,
            right,
            join_type: JoinType::LeftOuter,
            condition: conjoin(conds),
            hint: None,
        });
        Ok((joined, Expr::IsNotNull(Box::new(mark.column()))))
    }

    /// `x [NOT] IN (query)` as a boolean column of each row of `plan`, answered as Spark's
    /// existence join answers it: `IN` is whether a subquery value equals `x` (a left outer
    /// join with its distinct values); `NOT IN` is false also when the comparison is unknown
    /// (`x` NULL or a NULL among the values, the subquery having rows), which a second join
    /// with the subquery's row and NULL counts tells.
    #[allow(clippy::too_many_arguments)]
    fn in_value(
        &self,
        plan: Arc<LogicalPlan>,
        outer_plan: &Arc<LogicalPlan>,
        query: &sqlparser::ast::Query,
        x: Expr,
        negated: bool,
        scope: &Scope<'_>,
        outer_keys: &HashSet<String>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        use ferrospark_expr::Literal;
        if !matches!(&x, Expr::Literal(l) if l.is_null()) {
            return self.in_value_exact(plan, outer_plan, query, x, negated, scope, outer_keys);
        }
        // `NULL [NOT] IN (SELECT ...)`, folded as Spark's NullPropagation folds it: unknown
        // when the subquery has rows, else false (true for NOT IN); always unknown under
        // spark.sql.legacy.nullInEmptyListBehavior. A NULL column instead goes through the
        // existence join, whose value is never NULL.
        let unknown = Expr::Literal(Literal::null(&arrow_schema::DataType::Boolean));
        let legacy = self
            .builder
            .cfg
            .get_bool("spark.sql.legacy.nullInEmptyListBehavior", false)
            .unwrap_or(false);
        if legacy {
            return Ok((plan, unknown));
        }
        // NOT IN of a NULL is true exactly when the subquery has no rows.
        let (plan, no_rows) =
            self.in_value_exact(plan, outer_plan, query, x, true, scope, outer_keys)?;
        let value = Expr::Case {
            branches: vec![(no_rows, Expr::Literal(Literal::boolean(negated)))],
            otherwise: Some(Box::new(unknown)),
        };
        Ok((plan, value))
    }

    /// [`Self::in_value`] by Spark 4's rules: `NULL IN (no rows)` is false.
    #[allow(clippy::too_many_arguments)]
    fn in_value_exact(
        &self,
        plan: Arc<LogicalPlan>,
        outer_plan: &Arc<LogicalPlan>,
        query: &sqlparser::ast::Query,
        x: Expr,
        negated: bool,
        scope: &Scope<'_>,
        outer_keys: &HashSet<String>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        use ferrospark_expr::Literal;
        let planned = self.query(query, Some(scope))?;
        if let Expr::Function { name, args } = &x {
            if name == TUPLE_FN {
                return self.tuple_in_value(plan, outer_plan, planned, args, negated, outer_keys);
            }
        }
        // Matches: the distinct (value, domain) pairs.
        if one_row_per_outer_row(&planned)
            && planned.output().len() == 1
            && !self.legacy_count_handling()
        {
            // One value for every outer row (a global aggregate, the count bug's `count` 0
            // where no inner row matches): IN is that value's equality, unknown as false.
            let (plan, v) = self.scalar_join(plan, outer_plan, planned, outer_keys)?;
            let eq = x.eq(v);
            let test = if negated { Expr::Not(Box::new(eq)) } else { eq };
            let value = Expr::Function {
                name: "coalesce".into(),
                args: vec![test, Expr::Literal(Literal::boolean(false))],
            };
            return Ok((plan, value));
        }
        let sub = planned.clone();
        let selected = sub.output();
        if selected.len() != 1 {
            return Err(FerroError::Analysis(format!(
                "[INVALID_SUBQUERY_EXPRESSION] The IN subquery returns {} columns; it must return one",
                selected.len()
            )));
        }
        let v = selected[0].clone();
        let (sub, domain, mut conds) = self.per_outer_row(&sub, outer_plan, outer_keys)?;
        let mut keys = vec![v.clone()];
        keys.extend(domain.iter().cloned());
        let mark = self
            .builder
            .hidden_attr("__in", arrow_schema::DataType::Boolean, false);
        let mut exprs: Vec<(Expr, Attr)> = keys.iter().map(|a| (a.column(), a.clone())).collect();
        exprs.push((Expr::Literal(Literal::boolean(true)), mark.clone()));
        let right =
            crate::builder::PlanBuilder::project_resolved(self.distinct_of(sub, &keys)?, exprs);
        conds.push(x.clone().eq(v.column()));
        let plan = Arc::new(LogicalPlan::Join {
            left: plan,
            right,
            join_type: JoinType::LeftOuter,
            condition: conjoin(conds),
            hint: None,
        });
        let matched = Expr::IsNotNull(Box::new(mark.column()));
        // Spark plans IN as a value through an existence join: its value is never NULL, so a
        // comparison left unknown reads as no match, and NOT IN is false then too.
        if !negated {
            return Ok((plan, matched));
        }
        // Counts: the same subquery under fresh ids, rows and NULLs per domain value.
        let sub = self.builder.fresh_ids(&planned)?;
        let v2 = sub.output()[0].clone();
        let (sub, domain, conds) = self.per_outer_row(&sub, outer_plan, outer_keys)?;
        let rows = self
            .builder
            .hidden_attr("__rows", arrow_schema::DataType::Int64, false);
        let nulls = self
            .builder
            .hidden_attr("__nulls", arrow_schema::DataType::Boolean, true);
        let stats = rows_per_domain(
            sub,
            &domain,
            &rows,
            (
                agg_call("bool_or", vec![Expr::IsNull(Box::new(v2.column()))]),
                nulls.clone(),
            ),
        );
        let plan = Arc::new(LogicalPlan::Join {
            left: plan,
            right: stats,
            join_type: JoinType::LeftOuter,
            condition: conjoin(conds),
            hint: None,
        });
        // Padded rows (no subquery rows for this outer row) have NULL counts: no rows.
        let had_rows = Expr::Function {
            name: "coalesce".into(),
            args: vec![rows.column(), Expr::Literal(Literal::bigint(0))],
        }
        .gt(Expr::Literal(Literal::bigint(0)));
        let unknown = had_rows.and(Expr::IsNull(Box::new(x)).or(nulls.column()));
        Ok((plan, Expr::Not(Box::new(matched.or(unknown)))))
    }

    /// `(a, b, ..) [NOT] IN (query)` as a boolean column, as Spark's existence join answers it:
    /// IN is whether some subquery row equals the tuple in every column; NOT IN is false
    /// when some subquery row has no column known to differ (each equality true or NULL).
    /// Both read the subquery as an EXISTS correlated on the tuple's columns.
    fn tuple_in_value(
        &self,
        plan: Arc<LogicalPlan>,
        outer_plan: &Arc<LogicalPlan>,
        planned: Arc<LogicalPlan>,
        values: &[Expr],
        negated: bool,
        outer_keys: &HashSet<String>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        let selected = planned.output();
        check_in_width(values, &selected)?;
        let tests = values.iter().zip(&selected).map(|(a, s)| {
            let eq = a.clone().eq(s.column());
            if negated {
                eq.clone().or(Expr::IsNull(Box::new(eq)))
            } else {
                eq
            }
        });
        let filtered = Arc::new(LogicalPlan::Filter {
            input: planned,
            predicate: conjoin(tests).expect("an IN tuple has columns"),
        });
        let mut keys = outer_keys.clone();
        for v in values {
            keys.extend(crate::logical::expr_util::column_keys(v));
        }
        let (plan, exists) = self.exists_value_of(plan, outer_plan, &filtered, &keys)?;
        Ok((
            plan,
            if negated {
                Expr::Not(Box::new(exists))
            } else {
                exists
            },
        ))
    }

    /// The distinct rows of `plan` over `keys`.
    fn distinct_of(&self, plan: Arc<LogicalPlan>, keys: &[Attr]) -> Result<Arc<LogicalPlan>> {
        let exprs = keys.iter().map(|a| (a.column(), a.clone())).collect();
        self.builder
            .distinct(crate::builder::PlanBuilder::project_resolved(plan, exprs))
    }
}

/// Whether `plan` has exactly one row whatever it reads: a global aggregate (no GROUP BY, no
/// HAVING), under projections, sorts and limits of at least one row.
fn one_row_per_outer_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::SubqueryAlias { input, .. }
        | LogicalPlan::Project { input, .. }
        | LogicalPlan::Sort { input, .. } => one_row_per_outer_row(input),
        LogicalPlan::Limit { input, skip, fetch } => {
            *skip == 0 && fetch.is_none_or(|f| f >= 1) && one_row_per_outer_row(input)
        }
        LogicalPlan::Aggregate { group, .. } => group.is_empty(),
        _ => false,
    }
}

/// `IN_SUBQUERY_LENGTH_MISMATCH` unless the tuple `values` is as wide as the subquery.
fn check_in_width(values: &[Expr], selected: &[Attr]) -> Result<()> {
    if values.len() == selected.len() {
        return Ok(());
    }
    Err(FerroError::Analysis(format!(
        "[DATATYPE_MISMATCH.IN_SUBQUERY_LENGTH_MISMATCH] The number of columns in the left hand side of an IN subquery does not match the number of columns in the output of subquery. Left hand side columns(length: {}): [{}], right hand side columns(length: {}): [{}]",
        values.len(),
        values.iter().map(|a| crate::builder::strip_ids(&a.spark_name())).collect::<Vec<_>>().join(", "),
        selected.len(),
        selected.iter().map(|a| format!("`{}`", a.name)).collect::<Vec<_>>().join(", "),
    )))
}

/// Whether `plan` has a global aggregate over correlated rows below a node that is not a
/// projection, alias, sort or limit (a HAVING, a join, another aggregate): there its one row
/// over no inner rows matters to what the subquery gives. `below`: such a node was passed.
fn inner_global_aggregate_reads_outer(
    plan: &LogicalPlan,
    outer: &HashSet<String>,
    below: bool,
) -> bool {
    match plan {
        LogicalPlan::SubqueryAlias { input, .. }
        | LogicalPlan::Project { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Limit { input, .. } => {
            inner_global_aggregate_reads_outer(input, outer, below)
        }
        LogicalPlan::Aggregate { group, input, .. }
            if group.is_empty() && below && super::domain::reads_outer(input, outer) =>
        {
            true
        }
        other => other
            .children()
            .iter()
            .any(|c| inner_global_aggregate_reads_outer(c, outer, true)),
    }
}

/// An aggregate call of `name` over `args`, neither DISTINCT nor ignoring NULLs.
fn agg_call(name: &str, args: Vec<Expr>) -> crate::logical::AggCall {
    crate::logical::AggCall {
        name: name.into(),
        args,
        distinct: false,
        ignore_nulls: false,
    }
}

/// `sub` grouped by its `domain` columns (one row overall without them): its row count as
/// `rows`, beside one more aggregate.
fn rows_per_domain(
    sub: Arc<LogicalPlan>,
    domain: &[Attr],
    rows: &Attr,
    other: (crate::logical::AggCall, Attr),
) -> Arc<LogicalPlan> {
    let count = agg_call(
        "count",
        vec![Expr::Literal(ferrospark_expr::Literal::integer(1))],
    );
    Arc::new(LogicalPlan::Aggregate {
        input: sub,
        group: domain.iter().map(|a| (a.column(), a.clone())).collect(),
        aggs: vec![(count, rows.clone()), other],
    })
}

/// Whether a scalar subquery has at most one row for each outer row whatever the data: it
/// ends in a global aggregate (under a HAVING, projections or a sort) or a `LIMIT` of one.
fn at_most_one_row_per_outer_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::SubqueryAlias { input, .. }
        | LogicalPlan::Project { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Filter { input, .. } => at_most_one_row_per_outer_row(input),
        LogicalPlan::Limit { input, fetch, .. } => {
            fetch.is_some_and(|f| f <= 1) || at_most_one_row_per_outer_row(input)
        }
        LogicalPlan::Aggregate { group, .. } => group.is_empty(),
        _ => false,
    }
}

/// The value a scalar subquery that ends in a global aggregate (`SELECT count(*) + 1 FROM ..
/// WHERE ..`) gives over no rows, when that is not NULL; `None` when it is NULL, when the
/// aggregate groups, or when a filter (HAVING) sits above it.
fn value_over_no_rows(plan: &LogicalPlan) -> Option<Expr> {
    match plan {
        LogicalPlan::SubqueryAlias { input, .. } => value_over_no_rows(input),
        LogicalPlan::Project { input, exprs } if exprs.len() == 1 => {
            let inner = match input.as_ref() {
                LogicalPlan::SubqueryAlias { input, .. } => input.as_ref(),
                other => other,
            };
            let LogicalPlan::Aggregate { group, aggs, .. } = inner else {
                return None;
            };
            if !group.is_empty() {
                return None;
            }
            let defaults: Vec<(String, Expr)> = aggs
                .iter()
                .map(|(call, attr)| {
                    let lit = match call.name.as_str() {
                        "count" | "count_if" | "approx_count_distinct" => {
                            ferrospark_expr::Literal::bigint(0)
                        }
                        "collect_list" | "collect_set" | "array_agg" => return None,
                        _ => ferrospark_expr::Literal::null(&attr.data_type),
                    };
                    Some((attr.key(), Expr::Literal(lit)))
                })
                .collect::<Option<_>>()?;
            if defaults
                .iter()
                .all(|(_, e)| matches!(e, Expr::Literal(l) if l.is_null()))
            {
                return None;
            }
            let out = transform_down(&exprs[0].0, &mut |x| {
                Ok(match x {
                    Expr::Column(k) => defaults
                        .iter()
                        .find(|(d, _)| d == k)
                        .map(|(_, e)| e.clone()),
                    _ => None,
                })
            })
            .ok()?;
            // Only a value made of the defaults and constants: anything else read a column.
            if !column_keys(&out).is_empty() {
                return None;
            }
            Some(out)
        }
        _ => None,
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
                // Grouping by the inner columns an expression reads (`a + b = outer.c`)
                // would split a group the predicate joins whole: only a bare inner column
                // becomes a grouping key; the domain join takes the rest.
                if let Expr::Binary { left, right, .. } = p {
                    let inner_side = if reads_outer(left) { right } else { left };
                    if !matches!(inner_side.as_ref(), Expr::Column(_))
                        && !reads_outer(inner_side)
                        && !column_keys(inner_side).is_empty()
                    {
                        return Err(FerroError::Unsupported(format!(
                            "a correlated equality over an inner expression ({}) inside an aggregating subquery",
                            crate::logical::expr_text(p)
                        )));
                    }
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

/// Spark's check of a correlated scalar subquery's GROUP BY: each grouping column must be
/// tied to the outer query by equalities (`WHERE y1 = x1 ... GROUP BY y1`, also through
/// `y2 = y1`); another one could give several rows per outer row, which Spark refuses
/// (`NON_CORRELATED_COLUMNS_IN_GROUP_BY`).
fn check_correlated_grouping(sub: &LogicalPlan, outer_keys: &HashSet<String>) -> Result<()> {
    use crate::logical::expr_util::{column_keys, split_conjuncts};
    let mut node = sub;
    let (group, mut below) = loop {
        match node {
            LogicalPlan::Aggregate { input, group, .. } => break (group, input.as_ref()),
            LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::SubqueryAlias { input, .. } => node = input,
            _ => return Ok(()),
        }
    };
    if group.is_empty() {
        return Ok(());
    }
    let mut conjuncts = Vec::new();
    loop {
        match below {
            LogicalPlan::Filter { input, predicate } => {
                conjuncts.extend(split_conjuncts(predicate));
                below = input;
            }
            LogicalPlan::Project { input, .. } | LogicalPlan::SubqueryAlias { input, .. } => {
                below = input
            }
            _ => break,
        }
    }
    let outer = |e: &Expr| {
        let keys = column_keys(e);
        !keys.is_empty() && keys.iter().all(|k| outer_keys.contains(k))
    };
    let inner_column = |e: &Expr| match e {
        Expr::Column(c) if !outer_keys.contains(c) => Some(c.clone()),
        _ => None,
    };
    if !conjuncts
        .iter()
        .any(|c| column_keys(c).iter().any(|k| outer_keys.contains(k)))
    {
        return Ok(());
    }
    let mut tied: HashSet<String> = HashSet::new();
    // Inner expressions equal to outer ones (`y2 + 1 = x1 + x2 ... GROUP BY y2 + 1`).
    let mut tied_exprs: Vec<Expr> = Vec::new();
    let mut inner_pairs = Vec::new();
    for c in &conjuncts {
        if let Expr::Binary {
            left,
            op: ferrospark_expr::expr::BinaryOp::Eq,
            right,
        } = c
        {
            let inner_only = |e: &Expr| column_keys(e).iter().all(|k| !outer_keys.contains(k));
            if outer(right) && inner_only(left) {
                tied_exprs.push(left.as_ref().clone());
            }
            if outer(left) && inner_only(right) {
                tied_exprs.push(right.as_ref().clone());
            }
            match (inner_column(left), inner_column(right)) {
                (Some(l), _) if outer(right) => {
                    tied.insert(l);
                }
                (_, Some(r)) if outer(left) => {
                    tied.insert(r);
                }
                (Some(l), Some(r)) => inner_pairs.push((l, r)),
                _ => {}
            }
        }
    }
    loop {
        let before = tied.len();
        for (l, r) in &inner_pairs {
            if tied.contains(l) || tied.contains(r) {
                tied.insert(l.clone());
                tied.insert(r.clone());
            }
        }
        if tied.len() == before {
            break;
        }
    }
    let mut loose: Vec<String> = group
        .iter()
        .filter(|(g, _)| !tied_exprs.contains(g))
        .flat_map(|(g, _)| column_keys(g))
        .filter(|k| !tied.contains(k) && !outer_keys.contains(k))
        .map(|k| crate::builder::strip_ids(&k))
        .collect();
    loose.sort();
    loose.dedup();
    if loose.is_empty() {
        return Ok(());
    }
    Err(FerroError::Analysis(format!(
        "[UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.NON_CORRELATED_COLUMNS_IN_GROUP_BY] Unsupported subquery expression: A GROUP BY clause in a scalar correlated subquery cannot contain non-correlated columns: {}. SQLSTATE: 0A000",
        loose.join(", ")
    )))
}
