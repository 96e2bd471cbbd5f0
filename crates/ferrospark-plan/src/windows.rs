//! `ExtractWindowExpressions`: window calls in a projection are computed below it, in one
//! `Window` node per specification (PARTITION BY and ORDER BY), as Spark's analyzer plans
//! them; the projection then reads each call's result as a column.

use std::sync::Arc;

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::expr::FrameSpec;
use ferrospark_expr::Expr;

use crate::builder::{strip_ids, PlanBuilder};
use crate::logical::expr_util::{contains_window, transform_down};
use crate::logical::{Attr, LogicalPlan, SortExpr, WindowCallExpr};
use crate::physical::window::window_call_field;

impl PlanBuilder {
    /// Replaces every (resolved) window call in `exprs` by a column computed in `Window`
    /// nodes stacked on `input`. A bare window item keeps the call's name.
    pub fn extract_windows(
        &self,
        input: Arc<LogicalPlan>,
        exprs: Vec<Expr>,
    ) -> Result<(Arc<LogicalPlan>, Vec<Expr>)> {
        let in_attrs = input.output();
        let mut calls: Vec<(Expr, WindowCallExpr, Attr)> = Vec::new();
        let mut out = Vec::with_capacity(exprs.len());
        for e in exprs {
            let top_level = matches!(e, Expr::Window { .. });
            let replaced = transform_down(&e, &mut |x| {
                let Expr::Window {
                    func,
                    partition_by,
                    order_by,
                    frame,
                } = x
                else {
                    return Ok(None);
                };
                if let Some((_, _, a)) = calls.iter().find(|(w, _, _)| w == x) {
                    return Ok(Some(a.column()));
                }
                let inner = std::iter::once(func.as_ref())
                    .chain(partition_by.iter())
                    .chain(order_by.iter());
                if inner.clone().any(contains_window) {
                    return Err(FerroError::Analysis(format!(
                        "[NESTED_WINDOW_FUNCTION] It is not allowed to use a window function inside another window function: {}",
                        strip_ids(&x.to_string())
                    )));
                }
                let call = WindowCallExpr {
                    func: (**func).clone(),
                    partition_by: partition_by.clone(),
                    order_by: order_by
                        .iter()
                        .map(|o| match o {
                            Expr::SortKey {
                                expr,
                                ascending,
                                nulls_first,
                            } => SortExpr {
                                expr: (**expr).clone(),
                                ascending: *ascending,
                                nulls_first: *nulls_first,
                            },
                            other => SortExpr {
                                expr: other.clone(),
                                ascending: true,
                                nulls_first: true,
                            },
                        })
                        .collect(),
                    frame: frame.as_deref().cloned(),
                };
                let field = window_call_field(&call, &in_attrs, &self.cfg)?;
                let attr = self.attr(
                    &strip_ids(&window_call_name(&call)),
                    field.data_type().clone(),
                    field.is_nullable(),
                );
                calls.push((x.clone(), call, attr.clone()));
                Ok(Some(attr.column()))
            })?;
            out.push(match (top_level, &replaced) {
                (true, Expr::Column(k)) => {
                    let name = calls
                        .iter()
                        .find(|(_, _, a)| a.key() == *k)
                        .map(|(_, _, a)| a.name.clone())
                        .unwrap_or_default();
                    Expr::Alias {
                        expr: Box::new(replaced),
                        name,
                    }
                }
                _ => replaced,
            });
        }
        // One node per specification, in first-use order.
        let mut plan = input;
        let mut specs: Vec<(Vec<Expr>, Vec<SortExpr>)> = Vec::new();
        for (_, c, _) in &calls {
            let key = (c.partition_by.clone(), c.order_by.clone());
            if !specs.contains(&key) {
                specs.push(key);
            }
        }
        for (partition_by, order_by) in specs {
            let exprs: Vec<(WindowCallExpr, Attr)> = calls
                .iter()
                .filter(|(_, c, _)| c.partition_by == partition_by && c.order_by == order_by)
                .map(|(_, c, a)| (c.clone(), a.clone()))
                .collect();
            plan = Arc::new(LogicalPlan::Window { input: plan, exprs });
        }
        Ok((plan, out))
    }
}

/// Spark's column name of a window call: the call, then `OVER (...)` with every sort key's
/// direction and the frame the call runs over spelled out, as Spark names the column after
/// resolving the frame (`RANK() OVER (PARTITION BY k ORDER BY ts ASC NULLS FIRST ROWS BETWEEN
/// UNBOUNDED PRECEDING AND CURRENT ROW)`).
pub(crate) fn window_call_name(call: &WindowCallExpr) -> String {
    let (name, args) = match &call.func {
        Expr::Function { name, args } | Expr::Aggregate { name, args, .. } => {
            (name.to_ascii_lowercase(), args.as_slice())
        }
        other => return other.spark_name(),
    };
    let shown = |i: usize, otherwise: &str| {
        args.get(i)
            .map_or_else(|| otherwise.to_string(), Expr::spark_name)
    };
    let unbounded_to_current = "UNBOUNDED PRECEDING AND CURRENT ROW";
    let (text, frame) = match name.as_str() {
        // Spark prints these three in capitals.
        "rank" | "dense_rank" | "percent_rank" => (
            format!("{}()", name.to_ascii_uppercase()),
            format!("ROWS BETWEEN {unbounded_to_current}"),
        ),
        "row_number" | "ntile" => (
            call.func.spark_name(),
            format!("ROWS BETWEEN {unbounded_to_current}"),
        ),
        "cume_dist" => (
            call.func.spark_name(),
            format!("RANGE BETWEEN {unbounded_to_current}"),
        ),
        "lag" | "lead" => {
            let offset = shown(1, "1");
            let delta = match (name.as_str(), offset.strip_prefix('-')) {
                ("lead", _) => offset.clone(),
                (_, Some(positive)) => positive.to_string(),
                _ => format!("-{offset}"),
            };
            (
                format!("{name}({}, {offset}, {})", shown(0, ""), shown(2, "NULL")),
                format!("ROWS BETWEEN {delta} FOLLOWING AND {delta} FOLLOWING"),
            )
        }
        _ if call.order_by.is_empty() => (
            call.func.spark_name(),
            "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING".to_string(),
        ),
        _ => (
            call.func.spark_name(),
            format!("RANGE BETWEEN {unbounded_to_current}"),
        ),
    };
    // A written frame replaces the default, except for the functions whose frame is fixed.
    let frame = match (&call.frame, name.as_str()) {
        (Some(f), n) if !matches!(n, "lag" | "lead") => frame_text(f),
        _ => frame,
    };
    let mut over = Vec::new();
    if !call.partition_by.is_empty() {
        let keys: Vec<String> = call.partition_by.iter().map(Expr::spark_name).collect();
        over.push(format!("PARTITION BY {}", keys.join(", ")));
    }
    if !call.order_by.is_empty() {
        let keys: Vec<String> = call
            .order_by
            .iter()
            .map(|o| {
                format!(
                    "{} {} NULLS {}",
                    o.expr.spark_name(),
                    if o.ascending { "ASC" } else { "DESC" },
                    if o.nulls_first { "FIRST" } else { "LAST" }
                )
            })
            .collect();
        over.push(format!("ORDER BY {}", keys.join(", ")));
    }
    over.push(frame);
    format!("{text} OVER ({})", over.join(" "))
}

/// A written frame as Spark prints it: offsets as their expressions' names.
fn frame_text(f: &FrameSpec) -> String {
    use ferrospark_expr::expr::FrameEdge;
    let edge = |e: &FrameEdge| match e {
        FrameEdge::Preceding(v) => format!("{} PRECEDING", v.spark_name()),
        FrameEdge::Following(v) => format!("{} FOLLOWING", v.spark_name()),
        other => other.to_string(),
    };
    format!(
        "{} BETWEEN {} AND {}",
        if f.rows { "ROWS" } else { "RANGE" },
        edge(&f.start),
        edge(&f.end)
    )
}
