//! One `SELECT` block: FROM, WHERE, GROUP BY, HAVING, the select list, DISTINCT, ORDER BY.

use std::sync::Arc;

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::Expr;
use sqlparser::ast;

use super::{literal_i64, ordinal_error, sort_key, SqlPlanner};
use crate::analyzer::{resolve_expr, strip_inner_aliases, Scope};
use crate::builder::PlanBuilder;
use crate::grouping_sets::{cross_sets, cube_sets, rollup_sets};
use crate::logical::expr_util::{contains_aggregate, contains_window, split_conjuncts, unalias};
use crate::logical::{Attr, LogicalPlan};

/// Grouping sets as indices into a GROUP BY list's distinct expressions.
type GroupingSets = Vec<Vec<usize>>;

/// A select-list item as written, and its resolved form.
struct Item {
    written: Expr,
}

impl<'a> SqlPlanner<'a> {
    /// `plan` filtered by `pred`: subquery conjuncts as semi / anti joins, the rest (scalar
    /// subqueries joined in) as one filter. WHERE and an inner join's ON use it.
    pub(crate) fn filter_with_subqueries(
        &self,
        mut plan: Arc<LogicalPlan>,
        pred: &Expr,
        outer: Option<&Scope<'_>>,
    ) -> Result<Arc<LogicalPlan>> {
        let mut rest = Vec::new();
        let pred = if pred.to_string().contains(super::SUBQUERY_FN) {
            crate::logical::expr_util::push_not_down(pred)
        } else {
            pred.clone()
        };
        for c in split_conjuncts(&pred) {
            let scope = self.scope_over(&plan, outer);
            match self.predicate_subquery(&plan, &c, &scope)? {
                Some(joined) => plan = joined,
                None => rest.push(c),
            }
        }
        if let Some(p) = crate::logical::expr_util::conjoin(rest) {
            let scope = self.scope_over(&plan, outer);
            let resolved = resolve_expr(&p, &scope)?;
            let before = plan.output();
            let (p2, resolved) = self.scalar_subqueries(plan, resolved, &scope)?;
            let joined = p2.output().len() != before.len();
            plan = self
                .builder
                .filter_resolved(p2, resolved, &scope.outer_attrs())?;
            if joined {
                // The subqueries' columns served the filter only: names read above it (the
                // select list, ORDER BY) see the relation as it was.
                plan = crate::builder::PlanBuilder::project_resolved(
                    plan,
                    before.iter().map(|a| (a.column(), a.clone())).collect(),
                );
            }
        }
        Ok(plan)
    }

    /// `e` with the subqueries inside its aggregate calls' arguments joined to `plan` (the
    /// rows the aggregate reads) and replaced by their values.
    fn subqueries_in_aggregates(
        &self,
        plan: Arc<LogicalPlan>,
        e: Expr,
        scope: &Scope<'_>,
    ) -> Result<(Arc<LogicalPlan>, Expr)> {
        let has_subquery = |x: &Expr| x.to_string().contains(super::SUBQUERY_FN);
        if !has_subquery(&e) {
            return Ok((plan, e));
        }
        let mut plan = plan;
        let out = crate::logical::expr_util::transform_down(&e, &mut |x| {
            if !(crate::logical::expr_util::is_aggregate_call(x) && has_subquery(x)) {
                return Ok(None);
            }
            // The call's arguments, each with its subqueries joined below.
            crate::logical::expr_util::map_children(x, &mut |a| {
                let (p, a) = self.scalar_subqueries(plan.clone(), a.clone(), scope)?;
                plan = p;
                Ok(a)
            })
            .map(Some)
        })?;
        Ok((plan, out))
    }

    pub(crate) fn select(
        &self,
        s: &ast::Select,
        order_by: &[ast::OrderByExpr],
        outer: Option<&Scope<'_>>,
    ) -> Result<Arc<LogicalPlan>> {
        let with_windows;
        let s = if s.named_window.is_empty() {
            s
        } else {
            with_windows = named_windows_inlined(s)?;
            &with_windows
        };
        if s.having.is_some() && matches!(s.group_by, ast::GroupByExpr::All(_)) {
            return Err(FerroError::Unsupported("GROUP BY ALL".into()));
        }
        let mut plan = self.from(&s.from, outer)?;
        for lv in &s.lateral_views {
            plan = self.lateral_view(plan, lv, outer)?;
        }
        let from_attrs = plan.output();

        // WHERE: subquery conjuncts become semi / anti joins, the rest one filter.
        if let Some(w) = &s.selection {
            let pred = self.expr(w)?;
            plan = self.filter_with_subqueries(plan, &pred, outer)?;
        }

        // The select list, `*` expanded over the FROM clause's columns.
        let mut items: Vec<Item> = Vec::new();
        for si in &s.projection {
            match si {
                ast::SelectItem::UnnamedExpr(e) => items.push(Item {
                    written: self
                        .with_udfs(ferrospark_expr::parser::convert_ast_named(e, self.text)?)?,
                }),
                ast::SelectItem::ExprWithAlias { expr, alias } => items.push(Item {
                    written: Expr::Alias {
                        expr: Box::new(self.expr(expr)?),
                        name: alias.value.clone(),
                    },
                }),
                ast::SelectItem::Wildcard(_) => {
                    items.extend(from_attrs.iter().filter(|a| !a.hidden).map(|a| Item {
                        written: a.column(),
                    }));
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let q = kind.to_string();
                    // `t1.*` may print with its star: the qualifier is the part before it.
                    let q = q.strip_suffix(".*").unwrap_or(&q);
                    let q = q
                        .rsplit('.')
                        .next()
                        .unwrap_or(q)
                        .trim_matches('`')
                        .to_string();
                    let matching: Vec<&Attr> = from_attrs
                        .iter()
                        .filter(|a| {
                            a.qualifier
                                .as_deref()
                                .is_some_and(|x| x.eq_ignore_ascii_case(&q))
                        })
                        .collect();
                    if matching.is_empty() {
                        return Err(FerroError::Analysis(format!(
                            "[CANNOT_RESOLVE_STAR_EXPAND] Cannot resolve `{q}`.* given input columns {}",
                            from_attrs.iter().map(|a| format!("`{}`", a.name)).collect::<Vec<_>>().join(", ")
                        )));
                    }
                    items.extend(matching.into_iter().map(|a| Item {
                        written: a.column(),
                    }));
                }
                other => return Err(FerroError::Unsupported(format!("select item `{other}`"))),
            }
        }

        let (group_written, grouping_sets): (Vec<Expr>, Option<GroupingSets>) = match &s.group_by {
            ast::GroupByExpr::Expressions(list, mods) => self.group_by_list(list, mods, &items)?,
            ast::GroupByExpr::All(_) => (
                items
                    .iter()
                    .filter(|i| !contains_aggregate(&i.written))
                    .map(|i| unalias(&i.written).clone())
                    .collect(),
                None,
            ),
        };
        let having = s.having.as_ref().map(|h| self.expr(h)).transpose()?;
        let orders: Vec<Expr> = order_by
            .iter()
            .map(|o| Ok(sort_key(self.expr(&o.expr)?, &o.options)))
            .collect::<Result<_>>()?;
        let is_agg = !group_written.is_empty()
            || grouping_sets.is_some()
            || items.iter().any(|i| contains_aggregate(&i.written))
            // HAVING without GROUP BY aggregates the whole input (one group), as in Spark,
            // unless `spark.sql.legacy.parser.havingWithoutGroupByAsWhere` makes it a WHERE.
            || (having.is_some() && !self
                    .builder
                    .cfg
                    .get_bool("spark.sql.legacy.parser.havingWithoutGroupByAsWhere", false)
                    .unwrap_or(false));

        let scope = self.scope_over(&plan, outer);
        let items: Vec<Item> = items
            .into_iter()
            .map(|i| {
                Ok(Item {
                    written: self.name_subqueries(i.written, &scope)?,
                })
            })
            .collect::<Result<_>>()?;
        // `session_window` names the grouping's session window (`session_window.start`).
        let (items, having, orders) = {
            let has_column = |n: &str| scope.resolve_name(None, n).ok().flatten().is_some();
            let refs = |e: &Expr| {
                let e = crate::session_windows::session_window_references(
                    e,
                    &group_written,
                    has_column,
                )?;
                crate::time_windows::time_window_references(&e, &group_written, has_column)
            };
            (
                items
                    .iter()
                    .map(|i| {
                        Ok(Item {
                            written: refs(&i.written)?,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?,
                having.as_ref().map(refs).transpose()?,
                orders.iter().map(refs).collect::<Result<Vec<_>>>()?,
            )
        };

        // Select-list aliases, for HAVING and ORDER BY names the input does not have.
        let aliases: Vec<(String, Expr)> = items
            .iter()
            .filter_map(|i| match &i.written {
                Expr::Alias { expr, name } => Some((name.clone(), (**expr).clone())),
                _ => None,
            })
            .collect();
        let with_aliases = |e: &Expr| -> Result<Expr> {
            crate::logical::expr_util::transform_down(e, &mut |x| {
                Ok(match x {
                    Expr::Column(n) if scope.resolve_name(None, n).ok().flatten().is_none() => {
                        aliases
                            .iter()
                            .find(|(a, _)| a.eq_ignore_ascii_case(n))
                            .map(|(_, e)| e.clone())
                    }
                    _ => None,
                })
            })
        };

        let resolved_items: Vec<Expr> = items
            .iter()
            .map(|i| resolve_expr(&i.written, &scope))
            .collect::<Result<_>>()?;
        let resolved_having = having
            .as_ref()
            .map(|h| resolve_expr(&with_aliases(h)?, &scope))
            .transpose()?;

        // ORDER BY keys that name an output column or position sort by it; others are
        // evaluated below the projection and carried as hidden columns.
        enum OrderRef {
            Output(usize),
            Expr(Expr),
        }
        let mut order_refs: Vec<(OrderRef, bool, bool)> = Vec::new();
        for o in &orders {
            let Expr::SortKey {
                expr,
                ascending,
                nulls_first,
            } = o
            else {
                continue;
            };
            let r = match expr.as_ref() {
                Expr::Literal(l) => match literal_i64(l) {
                    Some(i) if i >= 1 && (i as usize) <= items.len() => {
                        OrderRef::Output(i as usize - 1)
                    }
                    _ => return Err(ordinal_error(l, items.len())),
                },
                Expr::Column(n)
                    if items
                        .iter()
                        .filter(|i| i.written.output_name().eq_ignore_ascii_case(n))
                        .count()
                        == 1
                        && (matches!(
                            items
                                .iter()
                                .find(|i| i.written.output_name().eq_ignore_ascii_case(n))
                                .map(|i| &i.written),
                            Some(Expr::Alias { .. })
                        ) || scope.resolve_name(None, n).ok().flatten().is_none()) =>
                {
                    let pos = items
                        .iter()
                        .position(|i| i.written.output_name().eq_ignore_ascii_case(n))
                        .unwrap_or(0);
                    OrderRef::Output(pos)
                }
                other => OrderRef::Expr(resolve_expr(&with_aliases(other)?, &scope)?),
            };
            order_refs.push((r, *ascending, *nulls_first));
        }

        let (mut plan, final_items, final_having, order_exprs) = if is_agg {
            // GROUP BY names the input first, then select-list aliases (spark.sql.groupByAliases).
            let group_written: Vec<Expr> = group_written
                .iter()
                .map(&with_aliases)
                .collect::<Result<_>>()?;
            let group_resolved: Vec<Expr> = group_written
                .iter()
                .map(|g| resolve_expr(g, &scope))
                .collect::<Result<_>>()?;
            check_no_outer_grouping(&group_resolved, &scope)?;
            // A grouping key with a subquery (`GROUP BY EXISTS (SELECT ..)`): the subquery's
            // value joins the rows below the aggregate, and the key reads it.
            let mut plan = plan;
            let group_resolved: Vec<Expr> = group_resolved
                .into_iter()
                .map(|g| {
                    if !g.to_string().contains(super::SUBQUERY_FN) {
                        return Ok(g);
                    }
                    let (p, g2) = self.scalar_subqueries(plan.clone(), g, &scope)?;
                    plan = p;
                    Ok(g2)
                })
                .collect::<Result<_>>()?;
            let mut results: Vec<Expr> = resolved_items.clone();
            let nh = resolved_having.is_some();
            results.extend(resolved_having.clone());
            let order_positions: Vec<usize> = order_refs
                .iter()
                .filter_map(|(r, _, _)| match r {
                    OrderRef::Expr(e) => {
                        results.push(e.clone());
                        Some(results.len() - 1)
                    }
                    OrderRef::Output(_) => None,
                })
                .collect();
            // Aggregates of the outer rows written inside a HAVING subquery are computed here.
            let outer_aggs = resolved_having
                .as_ref()
                .map(|h| self.outer_aggregates(h, &scope))
                .unwrap_or_default();
            let outer_positions: Vec<usize> = outer_aggs
                .iter()
                .map(|o| {
                    results.push(o.resolved.clone());
                    results.len() - 1
                })
                .collect();
            // Subqueries inside an aggregate's arguments (`sum(x) FILTER (WHERE EXISTS ..)`)
            // are values of the rows aggregated: they join below the aggregate.
            let mut below = plan;
            let mut results_in = Vec::with_capacity(results.len());
            for r in results {
                let (p, r) = self.subqueries_in_aggregates(below, r, &scope)?;
                below = p;
                results_in.push(r);
            }
            let (plan, results) = (below, results_in);
            let (agg, rewritten) = match &grouping_sets {
                Some(sets) => self.builder.grouping_sets_aggregate(
                    plan,
                    &group_written,
                    group_resolved,
                    sets,
                    &results,
                )?,
                None => self
                    .builder
                    .aggregate(plan, &group_written, group_resolved, &results)?,
            };
            let outer_outputs: Vec<Expr> = outer_positions
                .iter()
                .map(|&i| rewritten[i].clone())
                .collect();
            self.read_outer_aggregates(&outer_aggs, &outer_outputs);
            let n = resolved_items.len();
            let items2 = rewritten[..n].to_vec();
            let having2 = if nh { Some(rewritten[n].clone()) } else { None };
            let orders2: Vec<Expr> = order_positions
                .iter()
                .map(|&i| rewritten[i].clone())
                .collect();
            (agg, items2, having2, orders2)
        } else {
            let orders2 = order_refs
                .iter()
                .filter_map(|(r, _, _)| match r {
                    OrderRef::Expr(e) => Some(e.clone()),
                    OrderRef::Output(_) => None,
                })
                .collect();
            (plan, resolved_items, resolved_having, orders2)
        };

        if let Some(h) = final_having {
            let hscope = self.scope_over(&plan, outer);
            let (p2, h2) = self.scalar_subqueries(plan, h, &hscope)?;
            plan = self
                .builder
                .filter_resolved(p2, h2, &hscope.outer_attrs())?;
        }

        // Window calls run in Window nodes below the projection (after GROUP BY and HAVING).
        let final_items = if final_items.iter().any(contains_window) {
            let (p2, items2) = self.builder.extract_windows(plan, final_items)?;
            plan = p2;
            items2
        } else {
            final_items
        };

        // A generator in the select list runs in a Generate node below the projection, its
        // item replaced by the columns it makes.
        let (final_items, items) = if final_items
            .iter()
            .any(crate::generators::contains_generator)
        {
            let (p2, generated, at) = self.builder.extract_generator(plan, final_items)?;
            plan = p2;
            let mut items = items;
            if let Some((at, made)) = at {
                items.splice(
                    at..at + 1,
                    generated[at..at + made]
                        .iter()
                        .map(|e| Item { written: e.clone() }),
                );
                for (r, _, _) in &mut order_refs {
                    if let OrderRef::Output(i) = r {
                        if *i > at {
                            *i += made - 1;
                        }
                    }
                }
            }
            (generated, items)
        } else {
            (final_items, items)
        };

        // Scalar subqueries in the select list join below the projection.
        let mut projected: Vec<(Expr, Attr)> = Vec::new();
        let mut final_resolved = Vec::new();
        for r in final_items {
            let pscope = self.scope_over(&plan, outer);
            let (p2, r2) = self.scalar_subqueries(plan, r, &pscope)?;
            plan = p2;
            final_resolved.push(r2);
        }
        let mut input_attrs = plan.output();
        let own = input_attrs.len();
        input_attrs.extend(scope.outer_attrs());
        for (item, r) in items.iter().zip(final_resolved) {
            let (e, mut a) = self.builder.named(&item.written, r, &input_attrs)?;
            if input_attrs[own..].iter().any(|o| o.id == a.id) {
                // `SELECT outer.x` defines a column of its own: the outer query's attribute
                // stays the outer query's (a lateral join's two sides share no column).
                a = self.builder.attr(&a.name, a.data_type.clone(), a.nullable);
            }
            projected.push((e, a));
        }
        let visible = projected.len();

        // Hidden ORDER BY columns: an expression equal to a projected one sorts by it.
        let mut sort_cols: Vec<Expr> = Vec::new();
        let mut hidden = order_exprs.into_iter();
        for (r, _, _) in &order_refs {
            let col = match r {
                OrderRef::Output(i) => projected[*i].1.column(),
                OrderRef::Expr(_) => {
                    let e = strip_inner_aliases(
                        &hidden.next().unwrap_or_else(|| Expr::Column("?".into())),
                    )?;
                    match projected.iter().find(|(pe, _)| *pe == e) {
                        Some((_, a)) => a.column(),
                        None if s.distinct.is_some() => {
                            return Err(FerroError::Analysis(format!(
                                "[MISSING_ATTRIBUTES] ORDER BY {} must appear in the SELECT DISTINCT list",
                                e
                            )))
                        }
                        None => {
                            let (e2, a) = self.builder.named(&e, e.clone(), &input_attrs)?;
                            let c = a.column();
                            projected.push((e2, a));
                            c
                        }
                    }
                }
            };
            sort_cols.push(col);
        }
        let out_attrs: Vec<Attr> = projected[..visible]
            .iter()
            .map(|(_, a)| a.clone())
            .collect();
        plan = PlanBuilder::project_resolved(plan, projected);
        if s.distinct.is_some() {
            plan = self.builder.distinct(plan)?;
        }
        if !sort_cols.is_empty() {
            let keys = sort_cols
                .into_iter()
                .zip(&order_refs)
                .map(|(c, (_, asc, nf))| crate::logical::SortExpr {
                    expr: c,
                    ascending: *asc,
                    nulls_first: *nf,
                })
                .collect();
            plan = Arc::new(LogicalPlan::Sort { input: plan, keys });
            if plan.output().len() != visible {
                let exprs = out_attrs.iter().map(|a| (a.column(), a.clone())).collect();
                plan = PlanBuilder::project_resolved(plan, exprs);
            }
        }
        Ok(plan)
    }

    /// The GROUP BY list: its distinct expressions as written, and the grouping sets over
    /// them when it uses GROUPING SETS, ROLLUP or CUBE (also `WITH ROLLUP` / `WITH CUBE` and
    /// Hive's `GROUP BY a, b GROUPING SETS (...)`). Mixed lists (`a, ROLLUP(b, c)`) cross
    /// their parts' sets, as Spark does.
    fn group_by_list(
        &self,
        list: &[ast::Expr],
        mods: &[ast::GroupByWithModifier],
        items: &[Item],
    ) -> Result<(Vec<Expr>, Option<GroupingSets>)> {
        let mut written: Vec<Expr> = Vec::new();
        let index = |e: &ast::Expr, written: &mut Vec<Expr>| -> Result<usize> {
            let g = self.group_item(e, items)?;
            Ok(match written.iter().position(|w| *w == g) {
                Some(i) => i,
                None => {
                    written.push(g);
                    written.len() - 1
                }
            })
        };
        let elements = |tuples: &[Vec<ast::Expr>], written: &mut Vec<Expr>| {
            tuples
                .iter()
                .map(|t| {
                    t.iter()
                        .map(|e| index(e, written))
                        .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<Vec<_>>>()
        };
        let mut sets: Vec<Vec<usize>> = vec![vec![]];
        let mut analytic = false;
        let mut plain: Vec<Vec<usize>> = Vec::new();
        for e in list {
            let part = match e {
                ast::Expr::Rollup(t) => rollup_sets(&elements(t, &mut written)?),
                ast::Expr::Cube(t) => cube_sets(&elements(t, &mut written)?),
                ast::Expr::GroupingSets(t) => elements(t, &mut written)?,
                other => {
                    let i = vec![index(other, &mut written)?];
                    plain.push(i.clone());
                    sets = cross_sets(&sets, &[i]);
                    continue;
                }
            };
            analytic = true;
            sets = cross_sets(&sets, &part);
        }
        for m in mods {
            analytic = true;
            sets = match m {
                ast::GroupByWithModifier::Rollup => rollup_sets(&plain),
                ast::GroupByWithModifier::Cube => cube_sets(&plain),
                ast::GroupByWithModifier::GroupingSets(ast::Expr::GroupingSets(t)) => {
                    elements(t, &mut written)?
                }
                other => {
                    return Err(FerroError::Unsupported(format!("GROUP BY ... {other}")));
                }
            };
        }
        Ok((written, analytic.then_some(sets)))
    }

    /// A GROUP BY item: an ordinal or a select alias stands for that select item.
    fn group_item(&self, e: &ast::Expr, items: &[Item]) -> Result<Expr> {
        let g = self.expr(e)?;
        if let Expr::Literal(l) = &g {
            if let Some(i) = literal_i64(l) {
                if i < 1 || i as usize > items.len() {
                    return Err(FerroError::Analysis(format!(
                        "[GROUP_BY_POS_OUT_OF_RANGE] GROUP BY position {i} is not in select list (valid range is [1, {}])",
                        items.len()
                    )));
                }
                let item = unalias(&items[i as usize - 1].written).clone();
                if contains_aggregate(&item) {
                    return Err(FerroError::Analysis(format!(
                        "[GROUP_BY_POS_AGGREGATE] GROUP BY {i} refers to an expression {item} that contains an aggregate function"
                    )));
                }
                return Ok(item);
            }
        }
        Ok(g)
    }

    /// The scope of expressions over `plan`, nested in `outer`.
    pub(crate) fn scope_over<'s>(
        &self,
        plan: &LogicalPlan,
        outer: Option<&'s Scope<'s>>,
    ) -> Scope<'s> {
        match outer {
            Some(o) => Scope::nested(plan.output(), o),
            None => Scope::new(plan.output(), self.builder.case_sensitive()),
        }
    }
}

/// The SELECT with every `OVER name` replaced by the WINDOW clause's definition of `name`.
fn named_windows_inlined(s: &ast::Select) -> Result<ast::Select> {
    let mut defs: Vec<(String, ast::WindowSpec)> = Vec::new();
    for ast::NamedWindowDefinition(name, def) in &s.named_window {
        let spec = match def {
            ast::NamedWindowExpr::WindowSpec(spec) => spec.clone(),
            ast::NamedWindowExpr::NamedWindow(other) => defs
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&other.value))
                .map(|(_, s)| s.clone())
                .ok_or_else(|| {
                    FerroError::Analysis(format!(
                        "[MISSING_WINDOW_SPECIFICATION] Window specification {other} is not defined in the WINDOW clause"
                    ))
                })?,
        };
        if defs
            .iter()
            .any(|(d, _)| d.eq_ignore_ascii_case(&name.value))
        {
            return Err(FerroError::Analysis(format!(
                "[INVALID_SQL_SYNTAX.REPETITIVE_WINDOW_DEFINITION] Invalid SQL syntax: The definition of window `{}` is repetitive.",
                name.value
            )));
        }
        defs.push((name.value.clone(), spec));
    }
    let mut out = s.clone();
    let mut missing = None;
    let _ = ast::visit_expressions_mut(&mut out.projection, |e: &mut ast::Expr| {
        if let ast::Expr::Function(f) = e {
            let name = match &f.over {
                Some(ast::WindowType::NamedWindow(n)) => Some(n.value.clone()),
                Some(ast::WindowType::WindowSpec(spec)) => {
                    spec.window_name.as_ref().map(|n| n.value.clone())
                }
                None => None,
            };
            if let Some(n) = name {
                match defs.iter().find(|(d, _)| d.eq_ignore_ascii_case(&n)) {
                    Some((_, spec)) => {
                        // `OVER (w ORDER BY x)` refines `w`.
                        let mut merged = spec.clone();
                        if let Some(ast::WindowType::WindowSpec(own)) = &f.over {
                            if !own.partition_by.is_empty() {
                                merged.partition_by = own.partition_by.clone();
                            }
                            if !own.order_by.is_empty() {
                                merged.order_by = own.order_by.clone();
                            }
                            if own.window_frame.is_some() {
                                merged.window_frame = own.window_frame.clone();
                            }
                        }
                        merged.window_name = None;
                        f.over = Some(ast::WindowType::WindowSpec(merged));
                    }
                    None => missing = Some(n),
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    if let Some(n) = missing {
        return Err(FerroError::Analysis(format!(
            "[MISSING_WINDOW_SPECIFICATION] Window specification {n} is not defined in the WINDOW clause"
        )));
    }
    Ok(out)
}

/// A subquery's GROUP BY may not read the outer query (Spark's `CORRELATED_REFERENCE`).
fn check_no_outer_grouping(group: &[Expr], scope: &Scope<'_>) -> Result<()> {
    let Some(outer) = scope.outer else {
        return Ok(());
    };
    let own: std::collections::HashSet<String> =
        scope.attrs.iter().map(crate::logical::Attr::key).collect();
    let outer_keys = super::subquery::scope_keys(outer);
    for g in group {
        let reads: Vec<String> = crate::logical::expr_util::column_keys(g)
            .into_iter()
            .filter(|k| outer_keys.contains(k) && !own.contains(k))
            .collect();
        if let Some(k) = reads.first() {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.CORRELATED_REFERENCE] Unsupported subquery expression: Expressions referencing the outer query are not supported outside of WHERE/HAVING clauses: {}. SQLSTATE: 0A000",
                crate::builder::strip_ids(k)
            )));
        }
    }
    Ok(())
}
