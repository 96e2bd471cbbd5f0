//! `ConstantFolding`: subexpressions that read no column are evaluated once, at planning
//! (`DATE '1998-12-01' - INTERVAL '90' DAY` becomes a date the scan can prune with).

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::Schema;
use ferrospark_common::{Config, Result};
use ferrospark_expr::{bind, evaluate, BindContext, Expr, Literal};

use super::OptimizerRule;
use crate::logical::expr_util::{is_aggregate_call, transform_down};
use crate::logical::rewrite_expressions;
use crate::logical::LogicalPlan;

/// Folds column-free subexpressions into literals.
pub struct ConstantFolding;

fn foldable(e: &Expr) -> bool {
    !matches!(
        e,
        Expr::Literal(_) | Expr::Alias { .. } | Expr::SortKey { .. }
    ) && column_free(e)
}

/// Whether `e` reads no column, no aggregate and no value that changes per row or per call
/// (`rand()`, the clock): a constant (a literal counts), as a PIVOT value must be.
pub(crate) fn column_free(e: &Expr) -> bool {
    let mut ok = true;
    e.visit(&mut |x| {
        ok &= !matches!(
            x,
            Expr::Column(_) | Expr::LambdaVariable(_) | Expr::Lambda { .. } | Expr::Udf { .. }
        )
            && !is_aggregate_call(x)
            && !matches!(x, Expr::Function { name, .. } if name.starts_with("__") || ferrospark_expr::functions::random::draws_per_row(name) || matches!(name.as_str(), "current_timestamp" | "now"));
    });
    ok
}

/// A batch of one row and no column, to evaluate constant expressions over, and its schema.
pub(crate) fn one_row() -> Result<(Arc<Schema>, RecordBatch)> {
    let empty = Arc::new(Schema::empty());
    let one = RecordBatch::try_new_with_options(
        empty.clone(),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    Ok((empty, one))
}

/// `e` with every foldable subtree evaluated.
pub fn fold(e: &Expr, cfg: &Config) -> Result<Expr> {
    let (empty, one) = one_row()?;
    let ctx = BindContext::for_session(&empty, cfg);
    transform_down(e, &mut |x| {
        if !foldable(x) {
            return Ok(None);
        }
        // A subtree that fails (1/0 under ANSI) stays, to fail where it runs.
        let Ok(p) = bind(x, &ctx) else {
            return Ok(None);
        };
        let Ok(v) = evaluate(&p, &one).and_then(|v| v.into_array(1)) else {
            return Ok(None);
        };
        Ok(Some(Expr::Literal(Literal::new(v))))
    })
}

impl OptimizerRule for ConstantFolding {
    fn name(&self) -> &'static str {
        "ConstantFolding"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut |node| rewrite_expressions(&node, &mut |e| fold(e, cfg)))
    }
}
