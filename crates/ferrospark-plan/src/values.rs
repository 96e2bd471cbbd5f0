//! Inline `VALUES` rows: constant expressions evaluated once into an in-memory relation with
//! Spark's column names (`col1`, `col2`, ...) and widened column types.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::{bind, evaluate, BindContext, Expr};

use crate::builder::{common_type, PlanBuilder};
use crate::logical::LogicalPlan;

/// The relation of `rows` (every row the same width).
pub fn values_plan(builder: &PlanBuilder, rows: &[Vec<Expr>]) -> Result<Arc<LogicalPlan>> {
    let width = rows.first().map_or(0, Vec::len);
    if rows.iter().any(|r| r.len() != width) {
        return Err(FerroError::Analysis(
            "[INVALID_INLINE_TABLE.NUM_COLUMNS_MISMATCH] every VALUES row must have the same number of columns".into(),
        ));
    }
    let (empty, one) = crate::optimizer::one_row()?;
    let ctx = BindContext::for_session(&empty, &builder.cfg);
    let mut cells: Vec<Vec<ArrayRef>> = vec![Vec::new(); width];
    // Every row reads one clock: `VALUES now(), now()` is one instant twice.
    let mut clock = crate::optimizer::QueryClock::default();
    for row in rows {
        for (i, e) in row.iter().enumerate() {
            let e = &clock.fix(e, &builder.cfg)?;
            if !crate::optimizer::push_down_predicates::deterministic(e) {
                return Err(FerroError::Analysis(format!(
                    "[INVALID_INLINE_TABLE.CANNOT_EVALUATE_EXPRESSION_IN_INLINE_TABLE] Invalid inline table. Cannot evaluate the expression \"{e}\" in inline table definition: it is not deterministic."
                )));
            }
            let p = bind(e, &ctx).map_err(|err| {
                FerroError::Analysis(format!(
                    "[INVALID_INLINE_TABLE.CANNOT_EVALUATE_EXPRESSION_IN_INLINE_TABLE] {e}: {err}"
                ))
            })?;
            cells[i].push(evaluate(&p, &one)?.into_array(1)?);
        }
    }
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (i, col) in cells.into_iter().enumerate() {
        let mut t = DataType::Null;
        for c in &col {
            t = common_type(&t, c.data_type()).ok_or_else(|| {
                FerroError::Analysis(format!(
                    "[INVALID_INLINE_TABLE.INCOMPATIBLE_TYPES_IN_INLINE_TABLE] column col{} mixes {t} and {}",
                    i + 1,
                    c.data_type()
                ))
            })?;
        }
        let cast: Vec<ArrayRef> = col
            .iter()
            .map(|c| Ok(arrow_cast::cast(c, &t)?))
            .collect::<Result<_>>()?;
        let refs: Vec<&dyn arrow_array::Array> = cast.iter().map(|c| c.as_ref()).collect();
        columns.push(arrow_select::concat::concat(&refs)?);
        fields.push(Field::new(format!("col{}", i + 1), t, true));
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = if width == 0 {
        RecordBatch::try_new_with_options(
            schema.clone(),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(rows.len())),
        )?
    } else {
        RecordBatch::try_new(schema.clone(), columns)?
    };
    Ok(builder.scan_memory(schema, vec![batch], "VALUES"))
}
