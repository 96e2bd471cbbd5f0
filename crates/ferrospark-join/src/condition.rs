//! A join condition split as Spark's `ExtractEquiJoinKeys` splits it: equality conjuncts with
//! one operand over each side become equi-keys, everything else stays a residual condition.

use ferrospark_expr::{BinaryOp, PhysicalExpr};

/// Equi-keys and the residual condition of a join condition.
#[derive(Debug, Clone, Default)]
pub struct JoinCondition {
    /// Key expressions over the left input.
    pub left_keys: Vec<PhysicalExpr>,
    /// Key expressions over the right input (column indices relative to the right input).
    pub right_keys: Vec<PhysicalExpr>,
    /// Per key: compared with `<=>` rather than `=`.
    pub null_safe: Vec<bool>,
    /// The conjuncts that are not equi-keys, over left columns followed by right columns.
    pub residual: Option<PhysicalExpr>,
}

/// Splits `condition`, bound to the left columns followed by the right ones (`left_width` of
/// them on the left).
pub fn split_condition(condition: &PhysicalExpr, left_width: usize) -> JoinCondition {
    let mut out = JoinCondition::default();
    let mut rest: Vec<PhysicalExpr> = Vec::new();
    let side = |e: &PhysicalExpr| -> Option<bool> {
        let cols = e.column_indices();
        if cols.is_empty() {
            None
        } else if cols.iter().all(|&c| c < left_width) {
            Some(true)
        } else if cols.iter().all(|&c| c >= left_width) {
            Some(false)
        } else {
            None
        }
    };
    for c in condition.conjuncts() {
        if let PhysicalExpr::Compare { op, left, right } = c {
            if matches!(op, BinaryOp::Eq | BinaryOp::EqNullSafe) {
                let pair = match (side(left), side(right)) {
                    (Some(true), Some(false)) => Some((left, right)),
                    (Some(false), Some(true)) => Some((right, left)),
                    _ => None,
                };
                if let Some((l, r)) = pair {
                    out.left_keys.push(l.as_ref().clone());
                    out.right_keys.push(r.remap_columns(&|i| i - left_width));
                    out.null_safe.push(*op == BinaryOp::EqNullSafe);
                    continue;
                }
            }
        }
        rest.push(c.clone());
    }
    out.residual = rest
        .into_iter()
        .reduce(|a, b| PhysicalExpr::And(Box::new(a), Box::new(b)));
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_schema::{DataType, Field, Schema};
    use ferrospark_expr::{bind, parse_expr, BindContext};

    use super::*;

    #[test]
    fn equalities_across_the_sides_become_keys_and_the_rest_stays() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("x", DataType::Int64, true),
            Field::new("y", DataType::Utf8, true),
        ]));
        let cond = "x = a AND b <=> y AND a < x AND a = a + 1";
        let e = bind(
            &parse_expr(cond).expect("parses"),
            &BindContext::new(&schema),
        )
        .expect("binds");
        let split = split_condition(&e, 2);
        assert_eq!(split.left_keys.len(), 2);
        assert_eq!(split.null_safe, vec![false, true]);
        assert_eq!(split.left_keys[0].column_indices(), vec![0]);
        assert_eq!(split.right_keys[0].column_indices(), vec![0]);
        assert_eq!(split.right_keys[1].column_indices(), vec![1]);
        let residual = split.residual.expect("residual");
        assert_eq!(residual.conjuncts().len(), 2);
    }
}
