//! `PIVOT (agg [AS a], ... FOR col IN (v [AS name], ...))` in FROM, planned as Spark's
//! analyzer rewrites it (`ResolvePivot`): the input grouped by its columns that neither the
//! aggregates nor the pivot column read, one output column per value and aggregate, each
//! aggregate reading its argument only on the rows whose pivot column equals the value
//! (`agg(if(col <=> v, x, NULL))`).

use std::sync::Arc;

use arrow_array::Array;

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::{Expr, Literal};
use sqlparser::ast::{self, PivotValueSource};

use super::SqlPlanner;
use crate::analyzer::resolve_expr;
use crate::logical::expr_util::is_aggregate_call;
use crate::logical::LogicalPlan;
use crate::PlanBuilder;

impl SqlPlanner<'_> {
    /// The PIVOT of `input`.
    pub(crate) fn pivot(
        &self,
        input: Arc<LogicalPlan>,
        aggregates: &[ast::ExprWithAlias],
        value_column: &[ast::Expr],
        source: &PivotValueSource,
        alias: Option<&ast::TableAlias>,
    ) -> Result<Arc<LogicalPlan>> {
        let scope = self.builder.scope(&input);
        let in_attrs = input.output();
        // The pivot column: one column, or a tuple of them (a struct).
        let pivot_written: Vec<Expr> = value_column
            .iter()
            .map(|c| self.expr(c))
            .collect::<Result<_>>()?;
        let pivot_cols: Vec<Expr> = pivot_written
            .iter()
            .flat_map(|e| match e {
                Expr::Function { name, args } if name.eq_ignore_ascii_case("struct") => {
                    args.clone()
                }
                other => vec![other.clone()],
            })
            .collect();
        let pivot_resolved: Vec<Expr> = pivot_cols
            .iter()
            .map(|c| resolve_expr(c, &scope))
            .collect::<Result<_>>()?;
        for (c, r) in pivot_cols.iter().zip(&pivot_resolved) {
            let t = crate::analyzer::expr_type(r, &in_attrs, &self.builder.cfg)?;
            if matches!(t, arrow_schema::DataType::Map(..)) {
                return Err(FerroError::Analysis(format!(
                    "[INCOMPARABLE_PIVOT_COLUMN] Invalid pivot column `{c}`. Pivot columns must be comparable."
                )));
            }
        }
        let PivotValueSource::List(values) = source else {
            return Err(FerroError::Unsupported(format!(
                "PIVOT over `{source}`: list the values (PIVOT (... FOR c IN (v1, v2)))"
            )));
        };
        // Aggregates as written, each must hold an aggregate call.
        let mut aggs: Vec<(Expr, Option<String>)> = Vec::new();
        for a in aggregates {
            let e = self.expr(&a.expr)?;
            if !crate::logical::expr_util::contains_aggregate(&e) {
                return Err(FerroError::Analysis(format!(
                    "[_LEGACY_ERROR_TEMP_1006] Aggregate expression required for pivot, but '{}' did not appear in any aggregate function.",
                    a.expr
                )));
            }
            aggs.push((e, a.alias.as_ref().map(|i| i.value.clone())));
        }
        // The columns the aggregates and the pivot read are not grouped by.
        let aggs_resolved: Vec<Expr> = aggs
            .iter()
            .map(|(e, _)| resolve_expr(e, &scope))
            .collect::<Result<_>>()?;
        let mut used: Vec<u64> = Vec::new();
        for r in aggs_resolved.iter().chain(&pivot_resolved) {
            r.visit(&mut |x| {
                if let Expr::Column(c) = x {
                    if let Some(a) = in_attrs.iter().find(|a| a.key() == *c) {
                        used.push(a.id);
                    }
                }
            });
        }
        let group_attrs: Vec<_> = in_attrs
            .iter()
            .filter(|a| !a.hidden && !used.contains(&a.id))
            .cloned()
            .collect();
        let group_items: Vec<Expr> = group_attrs
            .iter()
            .map(|a| Expr::Column(a.name.clone()))
            .collect();
        let group_resolved: Vec<Expr> = group_attrs.iter().map(|a| a.column()).collect();

        let mut results: Vec<Expr> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for v in values {
            let parts: Vec<Expr> = match &v.expr {
                ast::Expr::Tuple(items) => {
                    items.iter().map(|i| self.expr(i)).collect::<Result<_>>()?
                }
                e => vec![self.expr(e)?],
            };
            if parts.len() != pivot_resolved.len() {
                return Err(FerroError::Analysis(format!(
                    "[PIVOT_VALUE_DATA_TYPE_MISMATCH] Invalid pivot value '{}': the pivot column has {} fields.",
                    v.expr,
                    pivot_resolved.len()
                )));
            }
            if !parts
                .iter()
                .all(crate::optimizer::constant_folding::column_free)
            {
                // A name that is no column is that error first, as in Spark.
                for p in &parts {
                    resolve_expr(p, &scope)?;
                }
                return Err(FerroError::Analysis(format!(
                    "[NON_LITERAL_PIVOT_VALUES] Literal expressions required for pivot values, found `{}`.",
                    v.expr
                )));
            }
            let mut cond: Option<Expr> = None;
            for (col, part) in pivot_resolved.iter().zip(&parts) {
                let eq = Expr::Binary {
                    left: Box::new(col.clone()),
                    op: ferrospark_expr::BinaryOp::EqNullSafe,
                    right: Box::new(part.clone()),
                };
                cond = Some(match cond {
                    None => eq,
                    Some(c) => Expr::Binary {
                        left: Box::new(c),
                        op: ferrospark_expr::BinaryOp::And,
                        right: Box::new(eq),
                    },
                });
            }
            let cond = cond.unwrap_or_else(|| Expr::Literal(Literal::boolean(true)));
            let value_name = match &v.alias {
                Some(a) => a.value.clone(),
                None => value_text(&parts),
            };
            for ((agg, agg_alias), resolved) in aggs.iter().zip(&aggs_resolved) {
                let only_here = ferrospark_expr::transform::transform_down(resolved, &mut |x| {
                    if !is_aggregate_call(x) {
                        return Ok(None);
                    }
                    let wrap = |a: &Expr| Expr::Function {
                        name: "if".into(),
                        args: vec![
                            cond.clone(),
                            a.clone(),
                            Expr::Literal(Literal::null(&arrow_schema::DataType::Null)),
                        ],
                    };
                    // An aggregate call's children are its arguments.
                    ferrospark_expr::transform::map_children(x, &mut |a| Ok(wrap(a))).map(Some)
                })?;
                results.push(only_here);
                names.push(if aggs.len() == 1 {
                    value_name.clone()
                } else {
                    let agg_name = agg_alias
                        .clone()
                        .unwrap_or_else(|| ferrospark_expr::expr::strip_ids(&agg.spark_name()));
                    format!("{value_name}_{agg_name}")
                });
            }
        }
        let (agg_plan, rewritten) =
            self.builder
                .aggregate(input, &group_items, group_resolved.clone(), &results)?;
        let agg_out = agg_plan.output();
        let mut exprs = Vec::with_capacity(group_attrs.len() + results.len());
        for g in &group_attrs {
            let a = agg_out
                .iter()
                .find(|o| o.name == g.name)
                .cloned()
                .ok_or_else(|| FerroError::Internal(format!("pivot group column {}", g.name)))?;
            exprs.push((a.column(), a));
        }
        for (e, name) in rewritten.into_iter().zip(names) {
            let (body, attr) = self.builder.named(
                &Expr::Alias {
                    expr: Box::new(e.clone()),
                    name: name.clone(),
                },
                e,
                &agg_out,
            )?;
            exprs.push((body, attr));
        }
        let plan = PlanBuilder::project_resolved(agg_plan, exprs);
        match alias {
            Some(a) => self.rename_columns(plan, a),
            None => Ok(plan),
        }
    }
}

/// Spark's name of a pivot value: a string's text, a number's digits, `{a, b}` for a tuple.
fn value_text(parts: &[Expr]) -> String {
    let one = |e: &Expr| match e {
        Expr::Literal(l) => match l
            .array()
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
        {
            Some(s) if s.is_valid(0) => s.value(0).to_string(),
            _ => e.spark_name(),
        },
        other => other.spark_name(),
    };
    if parts.len() == 1 {
        one(&parts[0])
    } else {
        format!(
            "{{{}}}",
            parts.iter().map(one).collect::<Vec<_>>().join(", ")
        )
    }
}
