//! Aggregates over the outer query's rows written inside a HAVING subquery, as Catalyst's
//! `UpdateOuterReferences` moves them.
//!
//! ```text
//!  SELECT d, count(*) FROM emp GROUP BY d
//!  HAVING EXISTS (SELECT 1 FROM bonus WHERE amt < min(emp.salary))
//!
//!  -> the outer aggregate also computes min(emp.salary) as `min(salary)#n`, and the
//!     subquery reads that column as an outer reference: WHERE amt < `min(salary)#n`
//! ```
//! An aggregate call qualifies when every column it reads names a relation of the outer
//! query, none of the subquery's own FROM, and the call resolves over the rows the outer
//! query groups. The calls are found in the subquery's text before the outer aggregate is
//! built, and replaced there by the aggregate's output once it is.

use std::collections::HashSet;
use std::ops::ControlFlow;

use ferrospark_expr::Expr;
use sqlparser::ast::{self, SetExpr, TableFactor};

use super::subquery::slot_of;
use super::{Lifted, SqlPlanner};
use crate::analyzer::{resolve_expr, Scope};
use crate::logical::expr_util::{is_aggregate_call, transform_down};

/// An aggregate call of a HAVING subquery that reads only the outer query's rows.
pub(crate) struct OuterAggregate {
    /// The subquery's slot.
    slot: usize,
    /// The call as written in the subquery.
    written: ast::Expr,
    /// The call resolved over the outer query's input, to add to its aggregate.
    pub(crate) resolved: Expr,
}

/// The relation names (aliases, else table names) of a query's FROM clause; `None` when the
/// query is not a plain SELECT block.
fn from_names(query: &ast::Query) -> Option<HashSet<String>> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let mut names = HashSet::new();
    let mut add = |f: &TableFactor| match f {
        TableFactor::Table { name, alias, .. } => {
            let n = match alias {
                Some(a) => a.name.value.clone(),
                None => name.0.last().map(|p| p.to_string()).unwrap_or_default(),
            };
            names.insert(n.to_ascii_lowercase());
        }
        other => {
            let alias = match other {
                TableFactor::Derived { alias, .. }
                | TableFactor::TableFunction { alias, .. }
                | TableFactor::Function { alias, .. }
                | TableFactor::UNNEST { alias, .. } => alias.as_ref(),
                _ => None,
            };
            if let Some(a) = alias {
                names.insert(a.name.value.to_ascii_lowercase());
            }
        }
    };
    for t in &select.from {
        add(&t.relation);
        for j in &t.joins {
            add(&j.relation);
        }
    }
    Some(names)
}

/// Whether every column `e` reads is `q.col` with `q` a relation outside `inner` (and it
/// reads at least one).
fn reads_only_outer_relations(e: &Expr, inner: &HashSet<String>) -> bool {
    let (mut any, mut only_outer) = (false, true);
    let _ = transform_down(e, &mut |x| {
        Ok(match x {
            Expr::Field(q, _) if matches!(q.as_ref(), Expr::Column(_)) => {
                if let Expr::Column(q) = q.as_ref() {
                    any = true;
                    only_outer &= !inner.contains(&q.to_ascii_lowercase());
                }
                Some(x.clone())
            }
            Expr::Column(_) => {
                only_outer = false;
                Some(x.clone())
            }
            _ => None,
        })
    });
    any && only_outer
}

impl SqlPlanner<'_> {
    /// The aggregate calls over the outer rows in the subqueries of `having`, resolved in
    /// `scope` (the rows the outer query groups).
    pub(crate) fn outer_aggregates(&self, having: &Expr, scope: &Scope<'_>) -> Vec<OuterAggregate> {
        let mut slots = Vec::new();
        having.visit(&mut |x| {
            if let Some((slot, _)) = slot_of(x) {
                slots.push(slot);
            }
        });
        let mut out = Vec::new();
        for slot in slots {
            let query = match self.lifted.borrow().get(slot) {
                Some(Lifted::Scalar(q) | Lifted::Exists(q, _) | Lifted::In(q, _)) => q.clone(),
                None => continue,
            };
            let Some(inner) = from_names(&query) else {
                continue;
            };
            let _ = ast::visit_expressions(&query, |written: &ast::Expr| {
                if !matches!(written, ast::Expr::Function(_))
                    || out
                        .iter()
                        .any(|o: &OuterAggregate| o.slot == slot && &o.written == written)
                {
                    return ControlFlow::<()>::Continue(());
                }
                let Ok(call) = self.expr(written) else {
                    return ControlFlow::Continue(());
                };
                if is_aggregate_call(&call) && reads_only_outer_relations(&call, &inner) {
                    if let Ok(resolved) = resolve_expr(&call, scope) {
                        out.push(OuterAggregate {
                            slot,
                            written: written.clone(),
                            resolved,
                        });
                    }
                }
                ControlFlow::Continue(())
            });
        }
        out
    }

    /// Replaces each outer aggregate call in its subquery by the column `outputs` gives it
    /// (the outer aggregate's output for that call).
    pub(crate) fn read_outer_aggregates(&self, found: &[OuterAggregate], outputs: &[Expr]) {
        let mut lifted = self.lifted.borrow_mut();
        for (o, out) in found.iter().zip(outputs) {
            let Expr::Column(key) = out else {
                continue;
            };
            let Some(Lifted::Scalar(q) | Lifted::Exists(q, _) | Lifted::In(q, _)) =
                lifted.get_mut(o.slot)
            else {
                continue;
            };
            let _ = ast::visit_expressions_mut(q, |e: &mut ast::Expr| {
                if *e == o.written {
                    *e = ast::Expr::Identifier(ast::Ident::with_quote('`', key.clone()));
                }
                ControlFlow::<()>::Continue(())
            });
        }
    }
}
