//! `ExtractWindowExpressions`: window calls in a projection are computed below it, in one
//! `Window` node per specification (PARTITION BY and ORDER BY), as Spark's analyzer plans
//! them; the projection then reads each call's result as a column.

use std::sync::Arc;

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::Expr;

use crate::builder::{strip_ids, PlanBuilder};
use crate::logical::expr_util::{contains_window, transform_down};
use crate::logical::{Attr, LogicalPlan, SortExpr, WindowCallExpr};
use crate::physical::window::window_call_field;

/// The name of a window function that has no meaning over an unordered window (Spark's
/// `WindowFunction`s: ranking, offsets and `nth_value`; aggregates such as `first_value`
/// run over any frame).
fn needs_order(func: &Expr) -> Option<&str> {
    let name = match func {
        Expr::Function { name, .. } | Expr::Aggregate { name, .. } => name.as_str(),
        _ => return None,
    };
    ferrospark_expr::functions::is_window_only(name).then_some(name)
}

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
                if order_by.is_empty() {
                    if let Some(name) = needs_order(func) {
                        return Err(FerroError::Analysis(format!(
                            "[WINDOW_FUNCTION_FRAME_NOT_ORDERED] Window function {name} requires the window to be ordered. You need to add an ORDER BY clause. For example: SELECT {name}() OVER (PARTITION BY window_partition ORDER BY window_ordering) FROM table. SQLSTATE: 42601"
                        )));
                    }
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
                    &strip_ids(&x.spark_name()),
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
