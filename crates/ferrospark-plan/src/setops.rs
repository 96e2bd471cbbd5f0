//! `INTERSECT` and `EXCEPT` as Catalyst's `ReplaceIntersectWithSemiJoin` and
//! `ReplaceExceptWithAntiJoin` plan them: a semi / anti join on null-safe equality of every
//! column, then DISTINCT.

use std::sync::Arc;

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::{BinaryOp, Expr};
use ferrospark_join::JoinType;

use crate::builder::PlanBuilder;
use crate::logical::expr_util::conjoin;
use crate::logical::{LogicalPlan, SetOpKind};

/// `left INTERSECT|EXCEPT [ALL] right`.
pub fn set_op(
    builder: &PlanBuilder,
    left: Arc<LogicalPlan>,
    right: Arc<LogicalPlan>,
    kind: SetOpKind,
    all: bool,
) -> Result<Arc<LogicalPlan>> {
    let (l, r) = (left.output(), right.output());
    if l.len() != r.len() {
        return Err(FerroError::Analysis(format!(
            "[NUM_COLUMNS_MISMATCH] {} can only be performed on inputs with the same number of columns, but the first input has {} columns and the second input has {} columns",
            if kind == SetOpKind::Intersect { "INTERSECT" } else { "EXCEPT" },
            l.len(),
            r.len()
        )));
    }
    if all {
        return Err(FerroError::Unsupported(
            "INTERSECT ALL / EXCEPT ALL (use INTERSECT / EXCEPT, or exceptAll later)".into(),
        ));
    }
    let cond = conjoin(l.iter().zip(&r).map(|(a, b)| Expr::Binary {
        left: Box::new(a.column()),
        op: BinaryOp::EqNullSafe,
        right: Box::new(b.column()),
    }));
    let join = Arc::new(LogicalPlan::Join {
        left,
        right,
        join_type: match kind {
            SetOpKind::Intersect => JoinType::LeftSemi,
            SetOpKind::Except => JoinType::LeftAnti,
        },
        condition: cond,
        hint: None,
    });
    builder.distinct(join)
}
