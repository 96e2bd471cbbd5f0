//! Evaluating several expressions over one batch with their common sub-expressions computed
//! once (Spark's subexpression elimination): `sum(p * (1 - d))` and
//! `sum(p * (1 - d) * (1 + t))` share `p * (1 - d)`.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{Field, Schema};
use ferrospark_common::Result;

use crate::eval::evaluate;
use crate::physical::PhysicalExpr;

/// A set of expressions prepared for evaluation with shared sub-expressions.
#[derive(Debug, Clone)]
pub struct SharedExprs {
    /// Sub-expressions that occur more than once, each rewritten over the input columns
    /// followed by the sub-expressions before it; evaluated in order.
    common: Vec<PhysicalExpr>,
    /// The expressions, rewritten over the input columns followed by every common one.
    exprs: Vec<PhysicalExpr>,
}

fn is_leaf(e: &PhysicalExpr) -> bool {
    matches!(e, PhysicalExpr::Column { .. } | PhysicalExpr::Literal(_))
}

/// Whether `e` reads a lambda's parameter (its value exists only over the lambda's elements,
/// so it cannot be computed once over the input batch) or calls a non-deterministic
/// user function or `uuid()` (each occurrence is its own call).
fn unshareable(e: &PhysicalExpr) -> bool {
    let mut found = false;
    e.walk(&mut |n| {
        found |= matches!(
            n,
            PhysicalExpr::LambdaVariable { .. } | PhysicalExpr::Lambda { .. }
        ) || matches!(n, PhysicalExpr::Udf { udf, .. } if !udf.deterministic())
            || matches!(n, PhysicalExpr::Function { func, .. } if !func.deterministic())
    });
    found
}

fn size(e: &PhysicalExpr) -> usize {
    let mut n = 0;
    e.walk(&mut |_| n += 1);
    n
}

impl SharedExprs {
    /// Prepares `exprs` over batches with `input_width` columns.
    pub fn new(exprs: &[PhysicalExpr], input_width: usize) -> Self {
        let mut seen: Vec<(PhysicalExpr, usize)> = Vec::new();
        for e in exprs {
            e.walk(&mut |node| {
                if is_leaf(node) || unshareable(node) {
                    return;
                }
                match seen.iter_mut().find(|(s, _)| s == node) {
                    Some((_, n)) => *n += 1,
                    None => seen.push((node.clone(), 1)),
                }
            });
        }
        let mut repeated: Vec<PhysicalExpr> = seen
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(e, _)| e)
            .collect();
        // Inner ones first, so bigger ones can be written in terms of them.
        repeated.sort_by_key(size);
        let replace = |e: &PhysicalExpr, known: &[PhysicalExpr]| {
            e.transform(&|node| {
                known
                    .iter()
                    .position(|k| k == node)
                    .map(|j| PhysicalExpr::Column {
                        index: input_width + j,
                        name: format!("_common{j}"),
                        data_type: node.data_type(),
                    })
            })
        };
        let mut common = Vec::with_capacity(repeated.len());
        for (j, c) in repeated.iter().enumerate() {
            // Replace only the commons before this one (never itself).
            common.push(replace(c, &repeated[..j]));
        }
        let exprs = exprs.iter().map(|e| replace(e, &repeated)).collect();
        Self { common, exprs }
    }

    /// Evaluates every expression over `batch`, one array each.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        let n = batch.num_rows();
        let mut current = batch.clone();
        for (j, c) in self.common.iter().enumerate() {
            let value = evaluate(c, &current)?.into_array(n)?;
            let mut fields: Vec<Arc<Field>> = current.schema().fields().iter().cloned().collect();
            fields.push(Arc::new(Field::new(
                format!("_common{j}"),
                value.data_type().clone(),
                true,
            )));
            let mut columns = current.columns().to_vec();
            columns.push(value);
            let options = RecordBatchOptions::new().with_row_count(Some(n));
            current = RecordBatch::try_new_with_options(
                Arc::new(Schema::new(fields)),
                columns,
                &options,
            )?;
        }
        self.exprs
            .iter()
            .map(|e| evaluate(e, &current)?.into_array(n))
            .collect()
    }

    /// How many sub-expressions are shared.
    pub fn num_common(&self) -> usize {
        self.common.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bind, parse_expr, BindContext};
    use arrow_array::{Float64Array, Int64Array};
    use arrow_schema::DataType;

    #[test]
    fn lambda_parameters_are_never_shared() -> Result<()> {
        let schema = Schema::new(vec![Field::new("p", DataType::Float64, true)]);
        let batch = RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![Arc::new(Float64Array::from(vec![Some(1.5), None]))],
        )?;
        let ctx = BindContext::new(&schema);
        // The default finish lambda reads `acc` as the merge lambda does.
        let texts = [
            "aggregate(array(p, 2D), 0D, (acc, x) -> acc + x)",
            "transform(array(p), acc -> acc * 2)",
        ];
        let exprs: Vec<PhysicalExpr> = texts
            .iter()
            .map(|t| bind(&parse_expr(t)?, &ctx))
            .collect::<Result<_>>()?;
        let shared = SharedExprs::new(&exprs, 1).evaluate(&batch)?;
        for (e, got) in exprs.iter().zip(shared) {
            let alone = evaluate(e, &batch)?.into_array(2)?;
            assert_eq!(got.to_data(), alone.to_data(), "{e}");
        }
        Ok(())
    }

    #[test]
    fn shared_parts_are_computed_once_and_results_are_unchanged() -> Result<()> {
        let schema = Schema::new(vec![
            Field::new("p", DataType::Float64, true),
            Field::new("d", DataType::Float64, true),
            Field::new("t", DataType::Int64, true),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![
                Arc::new(Float64Array::from(vec![Some(10.0), None, Some(4.0)])),
                Arc::new(Float64Array::from(vec![Some(0.1), Some(0.2), Some(0.5)])),
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None])),
            ],
        )?;
        let ctx = BindContext::new(&schema);
        let texts = ["p * (1 - d)", "p * (1 - d) * (1 + t)", "p", "t + 1"];
        let exprs: Vec<PhysicalExpr> = texts
            .iter()
            .map(|t| bind(&parse_expr(t).expect("parse"), &ctx))
            .collect::<Result<_>>()?;
        let shared = SharedExprs::new(&exprs, 3);
        // p * (1 - d) and 1 - d
        assert_eq!(shared.num_common(), 2);
        let got = shared.evaluate(&batch)?;
        for (e, g) in exprs.iter().zip(&got) {
            let want = evaluate(e, &batch)?.into_array(3)?;
            assert_eq!(&want, g);
        }
        Ok(())
    }
}
