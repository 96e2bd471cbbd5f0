//! Decorrelation through a domain join, as Catalyst's `DecorrelateInnerQuery`: for a
//! correlated subquery whose outer references sit where they cannot be pulled up as join
//! conditions (under a set operation, a window, a limit, an outer join, or a non-equality
//! below an aggregate).
//!
//! ```text
//!  outer WHERE EXISTS (SELECT .. FROM a WHERE a.k = outer.k
//!                      UNION SELECT .. FROM b WHERE b.k = outer.k)
//!
//!  domain D  = SELECT DISTINCT outer.k AS d FROM outer           (outer's values, once each)
//!  inner'    = SELECT .., d FROM a JOIN D WHERE a.k = d
//!              UNION SELECT .., d FROM b JOIN D WHERE b.k = d
//!  outer LEFT SEMI JOIN inner' ON outer.k <=> d
//! ```
//!
//! Each correlated branch is evaluated once per distinct outer value: the domain's columns
//! travel up beside the subquery's own (added to projections, groupings, window partitions
//! and both sides of set operations), and the outer query joins on them null-safely. A limit
//! becomes a limit per domain value (a row number over the domain's partitions).

use std::collections::HashSet;
use std::sync::Arc;

use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::Expr;
use ferrospark_join::JoinType;

use crate::builder::PlanBuilder;
use crate::logical::expr_util::{column_keys, conjoin, replace_columns};
use crate::logical::{rewrite_expressions, Attr, LogicalPlan, SortExpr, WindowCallExpr};

/// Whether `plan` (any node of it) reads one of the `outer` keys.
pub(crate) fn reads_outer(plan: &LogicalPlan, outer: &HashSet<String>) -> bool {
    plan.expressions()
        .iter()
        .any(|e| column_keys(e).iter().any(|k| outer.contains(k)))
        || plan.children().iter().any(|c| reads_outer(c, outer))
}

/// `sub` decorrelated against `outer_plan` through a domain join: the new subquery plan
/// (its original columns first, then the domain's) and the conditions joining it to
/// `outer_plan`. `global_aggregate_ok`: a global aggregate at the top may group by the domain
/// (a scalar subquery, whose caller supplies the value over no rows).
pub(crate) fn decorrelate(
    builder: &PlanBuilder,
    sub: &Arc<LogicalPlan>,
    outer_plan: &Arc<LogicalPlan>,
    outer_keys: &HashSet<String>,
    global_aggregate_ok: bool,
) -> Result<(Arc<LogicalPlan>, Vec<Expr>)> {
    let available = outer_plan.output();
    let mut refs: Vec<Attr> = Vec::new();
    collect_refs(sub, outer_keys, &mut |k| {
        if refs.iter().any(|r| r.key() == k) {
            return Ok(());
        }
        match available.iter().find(|a| a.key() == k) {
            Some(a) => {
                refs.push(a.clone());
                Ok(())
            }
            None => Err(FerroError::Unsupported(format!(
                "a subquery reading `{}` of a query two levels out",
                ferrospark_expr::strip_ids(k)
            ))),
        }
    })?;
    let d = Decorrelator {
        builder,
        outer_plan,
        outer_keys,
        refs: &refs,
    };
    let (plan, domain) = d.node(sub, global_aggregate_ok)?;
    let (plan, domain) = match domain {
        Some(cols) => (plan, cols),
        None => d.join_domain(plan)?,
    };
    // The subquery's own columns first (callers read them by position), then the domain.
    let mut exprs: Vec<(Expr, Attr)> = sub
        .output()
        .iter()
        .map(|a| (a.column(), a.clone()))
        .collect();
    exprs.extend(domain.iter().map(|a| (a.column(), a.clone())));
    let plan = PlanBuilder::project_resolved(plan, exprs);
    let conds = refs
        .iter()
        .zip(&domain)
        .map(|(o, d)| o.column().eq_null_safe(d.column()))
        .collect();
    Ok((plan, conds))
}

fn collect_refs(
    plan: &LogicalPlan,
    outer: &HashSet<String>,
    f: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<()> {
    for e in plan.expressions() {
        for k in column_keys(e) {
            if outer.contains(&k) {
                f(&k)?;
            }
        }
    }
    for c in plan.children() {
        collect_refs(c, outer, f)?;
    }
    Ok(())
}

struct Decorrelator<'a> {
    builder: &'a PlanBuilder,
    outer_plan: &'a Arc<LogicalPlan>,
    outer_keys: &'a HashSet<String>,
    /// The outer attributes the subquery reads, in the domain's column order.
    refs: &'a [Attr],
}

/// A rewritten node and, when correlated, the attributes carrying the domain's values.
type Rewritten = (Arc<LogicalPlan>, Option<Vec<Attr>>);

impl Decorrelator<'_> {
    /// A column the planner adds (a domain value, a row number): never reachable by name, so
    /// it cannot make a user's name ambiguous.
    fn hidden_attr(&self, name: &str, data_type: DataType, nullable: bool) -> Attr {
        self.builder.hidden_attr(name, data_type, nullable)
    }

    /// A fresh copy of the domain: the distinct values of the referenced outer columns.
    fn domain(&self) -> Result<(Arc<LogicalPlan>, Vec<Attr>)> {
        let copy = self.builder.fresh_ids(self.outer_plan)?;
        let (old, new) = (self.outer_plan.output(), copy.output());
        let mut group = Vec::new();
        for r in self.refs {
            let pos = old
                .iter()
                .position(|a| a.id == r.id)
                .ok_or_else(|| FerroError::Internal(format!("outer column {} lost", r.key())))?;
            group.push((
                new[pos].column(),
                self.hidden_attr(&r.name, r.data_type.clone(), r.nullable),
            ));
        }
        let attrs = group.iter().map(|(_, a)| a.clone()).collect();
        Ok((
            Arc::new(LogicalPlan::Aggregate {
                input: copy,
                group,
                aggs: Vec::new(),
            }),
            attrs,
        ))
    }

    /// A correlated global aggregate (`SELECT count(*) .. WHERE inner.k = outer.k`, under a
    /// HAVING, a join or a derived table) with one row for every domain value, as Catalyst's
    /// `DecorrelateInnerQuery` fixes the count bug: the aggregate grouped by the domain, then a
    /// fresh domain left-joined to it (null-safely), where a value without rows gets what the
    /// aggregate gives over no rows (0 for a count, NULL otherwise).
    ///
    /// ```text
    ///  Aggregate [] [count(*)]        ->  Project [d', CASE WHEN m IS NULL THEN 0 ELSE c END]
    ///    <correlated input>                 D' LEFT JOIN Project [d, c, true AS m]
    ///                                                      Aggregate [d] [count(*) AS c]
    /// ```
    /// `None` when an aggregate's value over no rows is not a literal (`collect_list`).
    fn global_aggregate_per_domain_value(
        &self,
        node: &Arc<LogicalPlan>,
    ) -> Result<Option<Rewritten>> {
        let LogicalPlan::Aggregate { aggs, .. } = node.as_ref() else {
            return Ok(None);
        };
        let mut defaults = Vec::with_capacity(aggs.len());
        for (call, attr) in aggs {
            defaults.push(match call.name.as_str() {
                "count" | "count_if" | "approx_count_distinct" | "regr_count" => {
                    ferrospark_expr::Literal::bigint(0)
                }
                "collect_list" | "collect_set" | "array_agg" => return Ok(None),
                _ => ferrospark_expr::Literal::null(&attr.data_type),
            });
        }
        let (grouped, cols) = self.node(node, true)?;
        let Some(cols) = cols else {
            return Ok(None);
        };
        // The grouped aggregate's values under fresh names, and a mark of a matched value.
        let mark = self.hidden_attr("__matched", DataType::Boolean, false);
        let mut inner: Vec<(Expr, Attr)> = cols.iter().map(|a| (a.column(), a.clone())).collect();
        let fresh: Vec<Attr> = aggs
            .iter()
            .map(|(_, a)| self.hidden_attr(&a.name, a.data_type.clone(), true))
            .collect();
        inner.extend(
            aggs.iter()
                .zip(&fresh)
                .map(|((_, a), f)| (a.column(), f.clone())),
        );
        inner.push((
            Expr::Literal(ferrospark_expr::Literal::boolean(true)),
            mark.clone(),
        ));
        let matched = PlanBuilder::project_resolved(grouped, inner);
        let (domain, dcols) = self.domain()?;
        let joined = Arc::new(LogicalPlan::Join {
            left: domain,
            right: matched,
            join_type: JoinType::LeftOuter,
            condition: conjoin(
                dcols
                    .iter()
                    .zip(&cols)
                    .map(|(d, c)| d.column().eq_null_safe(c.column())),
            ),
            hint: None,
        });
        let mut out: Vec<(Expr, Attr)> = aggs
            .iter()
            .zip(&fresh)
            .zip(defaults)
            .map(|(((_, a), f), default)| {
                let value = Expr::Case {
                    branches: vec![(
                        Expr::IsNull(Box::new(mark.column())),
                        Expr::Literal(default),
                    )],
                    otherwise: Some(Box::new(f.column())),
                };
                (value, a.clone())
            })
            .collect();
        out.extend(dcols.iter().map(|a| (a.column(), a.clone())));
        Ok(Some((
            PlanBuilder::project_resolved(joined, out),
            Some(dcols),
        )))
    }

    /// `plan` crossed with a fresh domain.
    fn join_domain(&self, plan: Arc<LogicalPlan>) -> Result<(Arc<LogicalPlan>, Vec<Attr>)> {
        let (domain, cols) = self.domain()?;
        Ok((
            Arc::new(LogicalPlan::Join {
                left: plan,
                right: domain,
                join_type: JoinType::Inner,
                condition: None,
                hint: None,
            }),
            cols,
        ))
    }

    /// A child rewritten so that it carries the domain (crossed with one if uncorrelated).
    fn with_domain(&self, child: &Arc<LogicalPlan>) -> Result<(Arc<LogicalPlan>, Vec<Attr>)> {
        match self.node(child, false)? {
            (plan, Some(cols)) => Ok((plan, cols)),
            (plan, None) => self.join_domain(plan),
        }
    }

    /// `e` with the outer references replaced by the domain's columns.
    fn subst(&self, e: &Expr, cols: &[Attr]) -> Expr {
        replace_columns(e, &|k| {
            self.refs
                .iter()
                .position(|r| r.key() == k)
                .map(|i| cols[i].column())
        })
    }

    fn own_exprs(&self, node: &Arc<LogicalPlan>, cols: &[Attr]) -> Result<Arc<LogicalPlan>> {
        rewrite_expressions(node, &mut |e| Ok(self.subst(e, cols)))
    }

    /// `plan`'s columns in order, then the domain's `cols` (for set operations, which pair
    /// columns by position).
    fn ordered(plan: Arc<LogicalPlan>, original: &[Attr], cols: &[Attr]) -> Arc<LogicalPlan> {
        let exprs = original
            .iter()
            .chain(cols)
            .map(|a| (a.column(), a.clone()))
            .collect();
        PlanBuilder::project_resolved(plan, exprs)
    }

    fn node(&self, node: &Arc<LogicalPlan>, global_aggregate_ok: bool) -> Result<Rewritten> {
        if !reads_outer(node, self.outer_keys) {
            return Ok((node.clone(), None));
        }
        let unsupported = |what: &str| {
            Err(FerroError::Unsupported(format!(
                "a correlated subquery with outer references under {what}"
            )))
        };
        Ok(match node.as_ref() {
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Project { input, .. }
            | LogicalPlan::SubqueryAlias { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Window { input, .. } => {
                if matches!(node.as_ref(), LogicalPlan::Aggregate { group, .. } if group.is_empty())
                    && !global_aggregate_ok
                {
                    // Over no rows a global aggregate still gives a row; grouped by the
                    // domain it would give none: every domain value gets its row back.
                    return match self.global_aggregate_per_domain_value(node)? {
                        Some(done) => Ok(done),
                        None => unsupported(
                            "a global aggregate of collect_list / collect_set inside EXISTS / IN or a derived table",
                        ),
                    };
                }
                // A projection or alias at the top passes the permission down to an aggregate.
                let pass_down = global_aggregate_ok
                    && matches!(
                        node.as_ref(),
                        LogicalPlan::Project { .. } | LogicalPlan::SubqueryAlias { .. }
                    );
                let (inp, cols) = match self.node(input, pass_down)? {
                    (p, Some(c)) => (p, c),
                    (p, None) => self.join_domain(p)?,
                };
                let carried = || cols.iter().map(|a| (a.column(), a.clone()));
                // The domain's columns go up beside the node's own (a filter and a sort pass
                // every input column through already).
                let out = match self.own_exprs(node, &cols)?.with_children(vec![inp]) {
                    LogicalPlan::Project { input, mut exprs } => {
                        exprs.extend(carried());
                        LogicalPlan::Project { input, exprs }
                    }
                    LogicalPlan::Aggregate {
                        input,
                        mut group,
                        aggs,
                    } => {
                        group.extend(carried());
                        LogicalPlan::Aggregate { input, group, aggs }
                    }
                    LogicalPlan::Window { input, mut exprs } => {
                        for (w, _) in &mut exprs {
                            w.partition_by.extend(cols.iter().map(Attr::column));
                        }
                        LogicalPlan::Window { input, exprs }
                    }
                    LogicalPlan::SubqueryAlias {
                        input,
                        alias,
                        mut attrs,
                    } => {
                        attrs.extend(cols.iter().cloned());
                        LogicalPlan::SubqueryAlias {
                            input,
                            alias,
                            attrs,
                        }
                    }
                    other => other,
                };
                (Arc::new(out), Some(cols))
            }
            LogicalPlan::Limit { input, skip, fetch } => {
                // A limit per domain value: rows numbered within each value's partition, in
                // the order of a sort right below.
                let (below, keys) = match input.as_ref() {
                    LogicalPlan::Sort { input, keys } => (input, keys.clone()),
                    _ => (input, Vec::new()),
                };
                let (inp, cols) = self.with_domain(below)?;
                let keys: Vec<SortExpr> = keys
                    .into_iter()
                    .map(|k| SortExpr {
                        expr: self.subst(&k.expr, &cols),
                        ..k
                    })
                    .collect();
                let original = inp.output();
                let rn = self.hidden_attr("__rn", DataType::Int32, false);
                let window = Arc::new(LogicalPlan::Window {
                    input: inp,
                    exprs: vec![(
                        WindowCallExpr {
                            func: Expr::Function {
                                name: "row_number".into(),
                                args: Vec::new(),
                            },
                            partition_by: cols.iter().map(Attr::column).collect(),
                            order_by: keys,
                            frame: None,
                        },
                        rn.clone(),
                    )],
                });
                let lit = |v: usize| Expr::Literal(ferrospark_expr::Literal::integer(v as i64));
                let mut conds = vec![rn.column().gt(lit(*skip))];
                if let Some(f) = fetch {
                    conds.push(rn.column().lt_eq(lit(skip + f)));
                }
                let filtered = Arc::new(LogicalPlan::Filter {
                    input: window,
                    predicate: conjoin(conds).expect("a condition"),
                });
                let exprs = original.iter().map(|a| (a.column(), a.clone())).collect();
                (PlanBuilder::project_resolved(filtered, exprs), Some(cols))
            }
            LogicalPlan::Union { inputs, attrs } => {
                let mut kids = Vec::new();
                let mut first_cols: Option<Vec<Attr>> = None;
                for i in inputs {
                    let (p, cols) = self.with_domain(i)?;
                    kids.push(Self::ordered(p, &i.output(), &cols));
                    first_cols.get_or_insert(cols);
                }
                let cols: Vec<Attr> = first_cols
                    .unwrap_or_default()
                    .iter()
                    .map(|a| self.hidden_attr(&a.name, a.data_type.clone(), a.nullable))
                    .collect();
                let mut attrs = attrs.clone();
                attrs.extend(cols.iter().cloned());
                (
                    Arc::new(LogicalPlan::Union {
                        inputs: kids,
                        attrs,
                    }),
                    Some(cols),
                )
            }
            LogicalPlan::SetOp {
                left,
                right,
                kind,
                all,
            } => {
                let (l, lc) = self.with_domain(left)?;
                let (r, rc) = self.with_domain(right)?;
                (
                    Arc::new(LogicalPlan::SetOp {
                        left: Self::ordered(l, &left.output(), &lc),
                        right: Self::ordered(r, &right.output(), &rc),
                        kind: *kind,
                        all: *all,
                    }),
                    Some(lc),
                )
            }
            LogicalPlan::Join {
                left,
                right,
                join_type,
                condition,
                hint,
            } => {
                let (l, lc) = self.node(left, false)?;
                let (r, rc) = self.node(right, false)?;
                let cond_reads = condition
                    .as_ref()
                    .is_some_and(|c| column_keys(c).iter().any(|k| self.outer_keys.contains(k)));
                // An inner join may take the domain from one side; other joins need it on
                // both (a padded row must not lose its domain value), and semi / anti joins
                // output only their left side.
                let (l, lc, r, rc) = match (join_type, lc, rc) {
                    (JoinType::Inner, Some(lc), None) => (l, lc, r, None),
                    (JoinType::Inner, None, Some(rc)) if !cond_reads => {
                        (l, rc.clone(), r, Some(rc))
                    }
                    (JoinType::Inner, None, None) => {
                        let (l, lc) = self.join_domain(l)?;
                        (l, lc, r, None)
                    }
                    (JoinType::FullOuter, ..) => return unsupported("a full outer join"),
                    (_, lc, rc) => {
                        let (l, lc) = match lc {
                            Some(c) => (l, c),
                            None => self.join_domain(l)?,
                        };
                        let (r, rc) = match rc {
                            Some(c) => (r, c),
                            None => self.join_domain(r)?,
                        };
                        (l, lc, r, Some(rc))
                    }
                };
                // The right side's domain (when it has its own) must equal the left's.
                let mut conds: Vec<Expr> = condition
                    .as_ref()
                    .map(|c| self.subst(c, &lc))
                    .into_iter()
                    .collect();
                let out_cols = match (&rc, join_type) {
                    (Some(rc), _) if rc.first().map(|a| a.id) != lc.first().map(|a| a.id) => {
                        conds.extend(
                            lc.iter()
                                .zip(rc)
                                .map(|(a, b)| a.column().eq_null_safe(b.column())),
                        );
                        if matches!(join_type, JoinType::RightOuter) {
                            rc.clone()
                        } else {
                            lc.clone()
                        }
                    }
                    _ => lc.clone(),
                };
                (
                    Arc::new(LogicalPlan::Join {
                        left: l,
                        right: r,
                        join_type: *join_type,
                        condition: conjoin(conds),
                        hint: *hint,
                    }),
                    Some(out_cols),
                )
            }
            _ => return unsupported("this operator"),
        })
    }
}
