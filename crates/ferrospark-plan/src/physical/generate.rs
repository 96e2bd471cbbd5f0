//! `Generate`: each input row joined with the rows its generator makes (`explode`,
//! `posexplode`, `inline`, `stack`, `json_tuple`, and their `_outer` forms), as Spark's `GenerateExec`.
//!
//! Streaming: a batch's generator arguments are evaluated once, the rows each input row makes
//! are counted from the arrays' offsets, and the input columns are repeated with one `take`.
//!
//! ```text
//!  id  a          explode(a)      id  col
//!  1   [x, y]  ->                 1   x
//!  2   []                         1   y
//!  3   NULL                       (rows 2 and 3 make none; with OUTER, one row of NULL each)
//! ```

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, Int32Array, RecordBatch, RecordBatchOptions, UInt32Array,
};
use arrow_schema::{DataType, SchemaRef};
use ferrospark_common::{FerroError, MetricsSet, Result};
use ferrospark_expr::{bind, evaluate, BindContext, Expr, PhysicalExpr};

use super::pipeline::{stream_through, BatchFn, Pipeline};
use super::{metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::logical::GeneratorKind;

/// `Generate kind(args), outer`: the input's columns, then the generated ones.
#[derive(Debug)]
pub struct GenerateExec {
    /// Input.
    pub input: Arc<dyn ExecutionPlan>,
    /// Which generator.
    pub kind: GeneratorKind,
    /// Its arguments, over the input's keys.
    pub args: Vec<Expr>,
    /// One row of NULLs for an input row that makes none.
    pub outer: bool,
    /// Output schema: the input's fields, then the generated ones.
    pub schema: SchemaRef,
    metrics: MetricsSet,
}

impl GenerateExec {
    /// A generator over `input`.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        kind: GeneratorKind,
        args: Vec<Expr>,
        outer: bool,
        schema: SchemaRef,
    ) -> Self {
        Self {
            input,
            kind,
            args,
            outer,
            schema,
            metrics: metrics_with(&[]),
        }
    }

    fn batch_fn(&self, ctx: &TaskContext) -> Result<BatchFn> {
        let in_schema = self.input.schema();
        let bctx = BindContext::for_session(&in_schema, &ctx.cfg);
        let args: Vec<PhysicalExpr> = self
            .args
            .iter()
            .map(|e| bind(e, &bctx))
            .collect::<Result<_>>()?;
        let (kind, outer, schema) = (self.kind, self.outer, self.schema.clone());
        Ok(Arc::new(move |b, out| {
            if b.num_rows() > 0 {
                out.push(generate_batch(&b, kind, &args, outer, &schema)?);
            }
            Ok(())
        }))
    }
}

/// The rows `kind` makes from `batch`: for each, the input row it came from, and the
/// generated columns.
fn generated(
    batch: &RecordBatch,
    kind: GeneratorKind,
    args: &[PhysicalExpr],
    outer: bool,
) -> Result<(UInt32Array, Vec<ArrayRef>)> {
    let n = batch.num_rows();
    let value = |i: usize| -> Result<ArrayRef> { evaluate(&args[i], batch)?.into_array(n) };
    if kind == GeneratorKind::Stack {
        return stack(batch, args);
    }
    if kind == GeneratorKind::JsonTuple {
        let json = value(0)?;
        let fields = (1..args.len()).map(value).collect::<Result<Vec<_>>>()?;
        let cols = ferrospark_expr::functions::json_path::json_tuple_arrays(&json, &fields)?;
        return Ok((UInt32Array::from_iter_values(0..n as u32), cols));
    }
    let input = value(0)?;
    // Each input row's range of elements, and the elements themselves.
    let (offsets, elements): (Vec<(usize, usize)>, Vec<ArrayRef>) = match input.data_type() {
        DataType::List(_) => {
            let l = input.as_list::<i32>();
            let ranges = row_ranges(l.value_offsets(), l.nulls(), n);
            let values = l.values().clone();
            let cols = if kind.is_inline() {
                let s = values.as_struct();
                s.columns()
                    .iter()
                    .map(|c| {
                        // A NULL struct makes a row of NULLs.
                        let nulls = arrow_buffer::NullBuffer::union(s.nulls(), c.nulls());
                        Ok(arrow_array::make_array(
                            c.to_data().into_builder().nulls(nulls).build()?,
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?
            } else {
                vec![values]
            };
            (ranges, cols)
        }
        DataType::Map(..) => {
            let m = input.as_map();
            let ranges = row_ranges(m.value_offsets(), m.nulls(), n);
            (ranges, vec![m.keys().clone(), m.values().clone()])
        }
        DataType::Null => ((0..n).map(|_| (0, 0)).collect(), Vec::new()),
        other => {
            return Err(FerroError::Internal(format!(
                "{} of a {other} reached execution",
                kind.name()
            )))
        }
    };
    let mut rows: Vec<u32> = Vec::new();
    let mut picks: Vec<Option<u32>> = Vec::new();
    let mut positions: Vec<Option<i32>> = Vec::new();
    for (r, &(a, b)) in offsets.iter().enumerate() {
        if a == b {
            if outer {
                rows.push(r as u32);
                picks.push(None);
                positions.push(None);
            }
            continue;
        }
        for (p, i) in (a..b).enumerate() {
            rows.push(r as u32);
            picks.push(Some(i as u32));
            positions.push(Some(p as i32));
        }
    }
    let picks = UInt32Array::from(picks);
    let mut cols: Vec<ArrayRef> = Vec::new();
    if kind.has_position() {
        cols.push(Arc::new(Int32Array::from(positions)));
    }
    for e in &elements {
        cols.push(arrow_select::take::take(e, &picks, None)?);
    }
    Ok((UInt32Array::from(rows), cols))
}

/// Each row's range of elements (empty for a NULL row).
fn row_ranges(
    offsets: &[i32],
    nulls: Option<&arrow_buffer::NullBuffer>,
    n: usize,
) -> Vec<(usize, usize)> {
    (0..n)
        .map(|r| {
            let start = offsets[r] as usize;
            if nulls.is_some_and(|b| b.is_null(r)) {
                (start, start)
            } else {
                (start, offsets[r + 1] as usize)
            }
        })
        .collect()
}

/// `stack(n, v1, ..., vk)`: `n` rows per input row, `ceil(k / n)` columns, filled row by row,
/// NULL past the last value.
fn stack(batch: &RecordBatch, args: &[PhysicalExpr]) -> Result<(UInt32Array, Vec<ArrayRef>)> {
    let n = batch.num_rows();
    let rows_per = match args.first() {
        Some(PhysicalExpr::Literal(l)) => {
            let a = arrow_cast::cast(l.array(), &DataType::Int64)?;
            a.as_primitive::<arrow_array::types::Int64Type>()
                .value(0)
                .max(0) as usize
        }
        _ => {
            return Err(FerroError::Analysis(
                "stack's number of rows must be a constant".into(),
            ))
        }
    };
    let values: Vec<ArrayRef> = args[1..]
        .iter()
        .map(|e| evaluate(e, batch)?.into_array(n))
        .collect::<Result<_>>()?;
    let width = values.len().div_ceil(rows_per.max(1));
    let mut rows = Vec::with_capacity(n * rows_per);
    for r in 0..n {
        rows.extend(std::iter::repeat_n(r as u32, rows_per));
    }
    let mut cols = Vec::with_capacity(width);
    for j in 0..width {
        // Column j of output row (r, i) is value i * width + j of input row r.
        let sources: Vec<&ArrayRef> = (0..rows_per)
            .map(|i| values.get(i * width + j))
            .map(|v| v.unwrap_or(&values[j]))
            .collect();
        let dt = values[j].data_type().clone();
        let null = new_null_array(&dt, 1);
        let mut arrays: Vec<&dyn Array> =
            sources.iter().map(|a| a.as_ref() as &dyn Array).collect();
        arrays.push(null.as_ref());
        let null_at = arrays.len() - 1;
        let mut pick = Vec::with_capacity(n * rows_per);
        for r in 0..n {
            for i in 0..rows_per {
                if i * width + j < values.len() {
                    pick.push((i, r));
                } else {
                    pick.push((null_at, 0));
                }
            }
        }
        cols.push(arrow_select::interleave::interleave(&arrays, &pick)?);
    }
    Ok((UInt32Array::from(rows), cols))
}

/// `batch`'s rows, each repeated once per row its generator makes, beside the generated
/// columns.
fn generate_batch(
    batch: &RecordBatch,
    kind: GeneratorKind,
    args: &[PhysicalExpr],
    outer: bool,
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let (rows, generated) = generated(batch, kind, args, outer)?;
    let mut cols: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|c| Ok(arrow_select::take::take(c, &rows, None)?))
        .collect::<Result<_>>()?;
    for (c, f) in generated
        .into_iter()
        .zip(schema.fields().iter().skip(batch.num_columns()))
    {
        cols.push(if c.data_type() == f.data_type() {
            c
        } else {
            arrow_cast::cast(&c, f.data_type())?
        });
    }
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(rows.len())),
    )?)
}

impl ExecutionPlan for GenerateExec {
    fn name(&self) -> String {
        "Generate".into()
    }
    fn describe(&self) -> String {
        let args: Vec<String> = self.args.iter().map(|a| a.to_string()).collect();
        let cols: Vec<String> = self
            .schema
            .fields()
            .iter()
            .skip(self.input.schema().fields().len())
            .map(|f| f.name().clone())
            .collect();
        format!(
            "{}({}), {}, [{}]",
            self.kind.name(),
            args.join(", "),
            self.outer,
            cols.join(", ")
        )
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![self.input.clone()]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let f = self.batch_fn(ctx)?;
        Ok(stream_through(
            self.input.execute(ctx)?,
            f,
            self.metrics.clone(),
        ))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
    fn streams_in_scan(&self) -> bool {
        self.input.streams_in_scan()
    }
    fn pipeline(&self, ctx: &Arc<TaskContext>) -> Result<Option<Pipeline>> {
        let Some(p) = self.input.pipeline(ctx)? else {
            return Ok(None);
        };
        Ok(Some(p.then_fn(self.batch_fn(ctx)?, self.metrics.clone())))
    }
}
