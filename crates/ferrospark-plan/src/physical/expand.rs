//! `Expand`: each input batch once per grouping set, the grouping columns a set leaves out
//! set to NULL and the set's `spark_grouping_id` appended, as Spark feeds GROUPING SETS,
//! ROLLUP and CUBE to one aggregation.
//!
//! Streaming, and inside a Parquet scan's threads when the input is, so the partial
//! aggregation above it sees the expanded rows without a buffer in between.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use ferrospark_common::{MetricsSet, Result};
use ferrospark_expr::{bind, BindContext, Expr, PhysicalExpr};

use super::basic::project_batch;
use super::pipeline::{FnOp, OpFactory, Pipeline};
use super::{counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
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

    fn bound(&self, ctx: &TaskContext) -> Result<Arc<Vec<Vec<PhysicalExpr>>>> {
        let in_schema = self.input.schema();
        let bctx = BindContext::for_session(&in_schema, &ctx.cfg);
        Ok(Arc::new(
            self.projections
                .iter()
                .map(|p| p.iter().map(|e| bind(e, &bctx)).collect::<Result<_>>())
                .collect::<Result<_>>()?,
        ))
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
        let bound = self.bound(ctx)?;
        let schema = self.schema.clone();
        let input = self.input.execute(ctx)?;
        let m = self.metrics.clone();
        let stream = input.flat_map(move |b| {
            let t = Instant::now();
            let mut out = Vec::with_capacity(bound.len());
            let r = b.and_then(|b| expand_batch(&b, &bound, &schema, &mut out));
            m.add_elapsed("elapsed_compute_ns", t);
            let v: Vec<Result<RecordBatch>> = match r {
                Ok(()) => out.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            v
        });
        Ok(counted(Box::new(stream), self.metrics.clone()))
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
        let bound = self.bound(ctx)?;
        let schema = self.schema.clone();
        let metrics = self.metrics.clone();
        let op: OpFactory = Arc::new(move || {
            let (bound, schema) = (bound.clone(), schema.clone());
            Ok(FnOp::boxed(
                move |b, out| expand_batch(&b, &bound, &schema, out),
                metrics.clone(),
            ))
        });
        Ok(Some(p.then(op)))
    }
}
