//! `INTERSECT` and `EXCEPT` as Catalyst's `ReplaceIntersectWithSemiJoin` and
//! `ReplaceExceptWithAntiJoin` plan them: a semi / anti join on null-safe equality of every
//! column, then DISTINCT. With `ALL` each row keeps its multiplicity, as Catalyst's
//! `RewriteExceptAll` / `RewriteIntersectAll` keep it (by numbering each left row among its
//! equals instead of Spark's replicating generator):
//!
//! ```text
//!  left EXCEPT ALL right     ->  rows of left numbered n within their equals (row_number)
//!                                LEFT OUTER JOIN (right's rows counted c per value) ON <=>
//!                                WHERE n > coalesce(c, 0)
//!  left INTERSECT ALL right  ->  the same with an inner join, WHERE n <= c
//! ```

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
        return set_op_all(builder, left, right, kind);
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

/// `EXCEPT ALL` / `INTERSECT ALL`: the left rows whose number among their equals is past
/// (within) the count of their equals on the right.
fn set_op_all(
    builder: &PlanBuilder,
    left: Arc<LogicalPlan>,
    right: Arc<LogicalPlan>,
    kind: SetOpKind,
) -> Result<Arc<LogicalPlan>> {
    use crate::logical::{AggCall, SortExpr, WindowCallExpr};
    use arrow_schema::DataType;
    use ferrospark_expr::Literal;

    let (l, r) = (left.output(), right.output());
    let counted_keys: Vec<(Expr, crate::logical::Attr)> = r
        .iter()
        .map(|a| {
            (
                a.column(),
                builder.attr(&a.name, a.data_type.clone(), a.nullable),
            )
        })
        .collect();
    let count = builder.attr("__count", DataType::Int64, false);
    let counted = Arc::new(LogicalPlan::Aggregate {
        input: right,
        group: counted_keys.clone(),
        aggs: vec![(
            AggCall {
                name: "count".into(),
                args: vec![Expr::Literal(Literal::integer(1))],
                distinct: false,
                ignore_nulls: false,
            },
            count.clone(),
        )],
    });
    let number = builder.attr("__number", DataType::Int32, false);
    let numbered = Arc::new(LogicalPlan::Window {
        input: left,
        exprs: vec![(
            WindowCallExpr {
                func: Expr::Function {
                    name: "row_number".into(),
                    args: vec![],
                },
                partition_by: l.iter().map(|a| a.column()).collect(),
                order_by: l
                    .iter()
                    .map(|a| SortExpr {
                        expr: a.column(),
                        ascending: true,
                        nulls_first: true,
                    })
                    .collect(),
                frame: None,
            },
            number.clone(),
        )],
    });
    let cond = conjoin(l.iter().zip(&counted_keys).map(|(a, (_, b))| Expr::Binary {
        left: Box::new(a.column()),
        op: BinaryOp::EqNullSafe,
        right: Box::new(b.column()),
    }));
    let number_long = Expr::Cast {
        expr: Box::new(number.column()),
        type_name: "bigint".into(),
    };
    let (join_type, keep) = match kind {
        SetOpKind::Except => (
            JoinType::LeftOuter,
            Expr::Binary {
                left: Box::new(number_long.clone()),
                op: BinaryOp::Gt,
                right: Box::new(Expr::Function {
                    name: "coalesce".into(),
                    args: vec![count.column(), Expr::Literal(Literal::bigint(0))],
                }),
            },
        ),
        SetOpKind::Intersect => (
            JoinType::Inner,
            Expr::Binary {
                left: Box::new(number_long),
                op: BinaryOp::LtEq,
                right: Box::new(count.column()),
            },
        ),
    };
    let joined = Arc::new(LogicalPlan::Join {
        left: numbered,
        right: counted,
        join_type,
        condition: cond,
        hint: None,
    });
    let kept = builder.filter_resolved(joined, keep, &[])?;
    Ok(PlanBuilder::project_resolved(
        kept,
        l.iter().map(|a| (a.column(), a.clone())).collect(),
    ))
}
