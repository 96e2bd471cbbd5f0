//! Streaming operators: `Filter`, `Project`, `Limit` / offset, `Union`.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use ferrospark_common::{MetricsSet, Result};
use ferrospark_expr::{
    bind, bind_predicate, evaluate, filter_batch, BindContext, Expr, PhysicalExpr,
};

use super::pipeline::{stream_through, BatchFn, Pipeline};
use super::runtime_filter::Target;
use super::scan::rename;
use super::{counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::logical::expr_text;

/// `Filter predicate`.
#[derive(Debug)]
pub struct FilterExec {
    /// Input.
    pub input: Arc<dyn ExecutionPlan>,
    /// The predicate over the input's keys.
    pub predicate: Expr,
    metrics: MetricsSet,
}

impl FilterExec {
    /// A filter of `input`.
    pub fn new(input: Arc<dyn ExecutionPlan>, predicate: Expr) -> Self {
        Self {
            input,
            predicate,
            metrics: metrics_with(&[]),
        }
    }

    /// The predicate bound and applied to one batch (empty results dropped).
    fn batch_fn(&self, ctx: &TaskContext) -> Result<BatchFn> {
        let schema = self.input.schema();
        let pred = bind_predicate(
            &self.predicate,
            &BindContext::for_session(&schema, &ctx.cfg),
        )?;
        Ok(Arc::new(move |b, out| {
            let f = filter_batch(&b, &pred)?;
            if f.num_rows() > 0 {
                out.push(f);
            }
            Ok(())
        }))
    }
}

impl ExecutionPlan for FilterExec {
    fn name(&self) -> String {
        "Filter".into()
    }
    fn describe(&self) -> String {
        expr_text(&self.predicate)
    }
    fn schema(&self) -> SchemaRef {
        self.input.schema()
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
    fn accept_runtime_filter(&self, column: &str, filter: &Target) -> bool {
        self.input.accept_runtime_filter(column, filter)
    }
}

/// `Project [exprs]`.
#[derive(Debug)]
pub struct ProjectExec {
    /// Input.
    pub input: Arc<dyn ExecutionPlan>,
    /// Expressions over the input's keys, one per output field.
    pub exprs: Vec<Expr>,
    /// Output schema.
    pub schema: SchemaRef,
    metrics: MetricsSet,
}

impl ProjectExec {
    /// A projection of `input`.
    pub fn new(input: Arc<dyn ExecutionPlan>, exprs: Vec<Expr>, schema: SchemaRef) -> Self {
        Self {
            input,
            exprs,
            schema,
            metrics: metrics_with(&[]),
        }
    }

    /// The expressions bound and evaluated over one batch.
    fn batch_fn(&self, ctx: &TaskContext) -> Result<BatchFn> {
        let in_schema = self.input.schema();
        let bctx = BindContext::for_session(&in_schema, &ctx.cfg);
        let bound = self
            .exprs
            .iter()
            .map(|e| bind(e, &bctx))
            .collect::<Result<Vec<_>>>()?;
        let schema = self.schema.clone();
        Ok(Arc::new(move |b, out| {
            out.push(project_batch(&b, &bound, &schema)?);
            Ok(())
        }))
    }
}

/// Evaluates bound expressions over a batch into a batch of `schema`.
pub fn project_batch(
    b: &RecordBatch,
    exprs: &[PhysicalExpr],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let cols = exprs
        .iter()
        .zip(schema.fields())
        .map(|(e, f)| {
            let a = evaluate(e, b)?.into_array(b.num_rows())?;
            if a.data_type() == f.data_type() {
                Ok(a)
            } else {
                Ok(arrow_cast::cast(&a, f.data_type())?)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
    )?)
}

impl ExecutionPlan for ProjectExec {
    fn name(&self) -> String {
        "Project".into()
    }
    fn describe(&self) -> String {
        let items: Vec<String> = self
            .exprs
            .iter()
            .zip(self.schema.fields())
            .map(|(e, f)| match e {
                Expr::Column(c) if c == f.name() => c.clone(),
                other => format!("{} AS {}", expr_text(other), f.name()),
            })
            .collect();
        format!("[{}]", items.join(", "))
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
    fn accept_runtime_filter(&self, column: &str, filter: &Target) -> bool {
        let Some(i) = self.schema.fields().iter().position(|f| f.name() == column) else {
            return false;
        };
        match passthrough_column(&self.exprs[i]) {
            Some(c) => self.input.accept_runtime_filter(c, filter),
            None => false,
        }
    }
}

/// The input column `e` passes on unchanged (a column, or an alias of one).
pub fn passthrough_column(e: &Expr) -> Option<&str> {
    match e {
        Expr::Column(c) => Some(c),
        Expr::Alias { expr, .. } => passthrough_column(expr),
        _ => None,
    }
}

/// `GlobalLimit` with an offset: skips `skip` rows, keeps `fetch`.
#[derive(Debug)]
pub struct LimitExec {
    /// Input.
    pub input: Arc<dyn ExecutionPlan>,
    /// Rows skipped.
    pub skip: usize,
    /// Rows kept.
    pub fetch: Option<usize>,
    metrics: MetricsSet,
}

impl LimitExec {
    /// A limit over `input`.
    pub fn new(input: Arc<dyn ExecutionPlan>, skip: usize, fetch: Option<usize>) -> Self {
        Self {
            input,
            skip,
            fetch,
            metrics: metrics_with(&[]),
        }
    }
}

impl ExecutionPlan for LimitExec {
    fn name(&self) -> String {
        "GlobalLimit".into()
    }
    fn describe(&self) -> String {
        match self.fetch {
            Some(n) if self.skip > 0 => format!("{n}, {}", self.skip),
            Some(n) => format!("{n}"),
            None => format!("offset {}", self.skip),
        }
    }
    fn schema(&self) -> SchemaRef {
        self.input.schema()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![self.input.clone()]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let mut skip = self.skip;
        let mut left = self.fetch.unwrap_or(usize::MAX);
        if left == 0 {
            return Ok(Box::new(std::iter::empty()));
        }
        let mut input = self.input.execute(ctx)?;
        let stream = std::iter::from_fn(move || {
            while left > 0 {
                let b = match input.next()? {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e)),
                };
                let n = b.num_rows();
                if skip >= n {
                    skip -= n;
                    continue;
                }
                let start = skip;
                skip = 0;
                let len = (n - start).min(left);
                left -= len;
                return Some(Ok(b.slice(start, len)));
            }
            None
        });
        Ok(counted(Box::new(stream), self.metrics.clone()))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
}

/// `Union`: the inputs one after another.
#[derive(Debug)]
pub struct UnionExec {
    /// Inputs (same column types).
    pub inputs: Vec<Arc<dyn ExecutionPlan>>,
    /// Output schema.
    pub schema: SchemaRef,
    metrics: MetricsSet,
}

impl UnionExec {
    /// A union of `inputs`.
    pub fn new(inputs: Vec<Arc<dyn ExecutionPlan>>, schema: SchemaRef) -> Self {
        Self {
            inputs,
            schema,
            metrics: metrics_with(&[]),
        }
    }
}

impl ExecutionPlan for UnionExec {
    fn name(&self) -> String {
        "Union".into()
    }
    fn describe(&self) -> String {
        String::new()
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        self.inputs.clone()
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let streams = self
            .inputs
            .iter()
            .map(|i| i.execute(ctx))
            .collect::<Result<Vec<_>>>()?;
        let schema = self.schema.clone();
        let stream = streams
            .into_iter()
            .flatten()
            .map(move |b| rename(b?, &schema));
        Ok(counted(Box::new(stream), self.metrics.clone()))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
}
