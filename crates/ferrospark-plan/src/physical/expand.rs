//! `Expand`: each input batch once per grouping set, the grouping columns a set leaves out
//! set to NULL and the set's `spark_grouping_id` appended, as Spark feeds GROUPING SETS,
//! ROLLUP and CUBE to one aggregation.
//!
//! Streaming, and inside a Parquet scan's threads when the input is, so the partial
//! aggregation above it sees the expanded rows without a buffer in between.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use ferrospark_common::{MetricsSet, Result};
use ferrospark_expr::{bind, BindContext, Expr, PhysicalExpr};

use super::basic::project_batch;
use super::pipeline::{stream_through, BatchFn, Pipeline};
use super::{metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::logical::expand_text;

/// `Expand [[projection], ...], [output]`.
#[derive(Debug)]
pub struct ExpandExec {
    /// Input.
    pub input: Arc<dyn ExecutionPlan>,
    /// One expression list per grouping set, over the input's keys.
    pub projections: Vec<Vec<Expr>>,
    /// Output schema.
    pub schema: SchemaRef,
    metrics: MetricsSet,
}

impl ExpandExec {
    /// An expansion of `input`.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        projections: Vec<Vec<Expr>>,
        schema: SchemaRef,
    ) -> Self {
        Self {
            input,
            projections,
            schema,
            metrics: metrics_with(&[]),
        }
    }

    /// The projections bound and run over one batch.
    fn batch_fn(&self, ctx: &TaskContext) -> Result<BatchFn> {
        let in_schema = self.input.schema();
        let bctx = BindContext::for_session(&in_schema, &ctx.cfg);
        let bound: Vec<Vec<PhysicalExpr>> = self
            .projections
            .iter()
            .map(|p| p.iter().map(|e| bind(e, &bctx)).collect::<Result<_>>())
            .collect::<Result<_>>()?;
        let schema = self.schema.clone();
        Ok(Arc::new(move |b, out| {
            expand_batch(&b, &bound, &schema, out)
        }))
    }
}

/// `batch` once per projection.
fn expand_batch(
    batch: &RecordBatch,
    projections: &[Vec<PhysicalExpr>],
    schema: &SchemaRef,
    out: &mut Vec<RecordBatch>,
) -> Result<()> {
    if batch.num_rows() == 0 {
        return Ok(());
    }
    for p in projections {
        out.push(project_batch(batch, p, schema)?);
    }
    Ok(())
}

impl ExecutionPlan for ExpandExec {
    fn name(&self) -> String {
        "Expand".into()
    }
    fn describe(&self) -> String {
        let keys: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        expand_text(&self.projections, &keys)
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
