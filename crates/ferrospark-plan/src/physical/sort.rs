//! `Sort`: every input row ordered by Spark's comparison (NULLs first ascending, NaN above
//! every number, -0.0 equal to 0.0, strings as unsigned bytes); with a limit it keeps only the
//! first `fetch` rows (`TakeOrderedAndProject`).

use std::sync::Arc;

use arrow_array::{RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{SchemaRef, SortOptions};
use ferrospark_common::{MetricsSet, Result};
use ferrospark_expr::{bind, evaluate, normalize_key, BindContext};

use super::runtime_filter::Target;
use super::{counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::logical::{sort_text, SortExpr};

/// `Sort [keys]` (or `TakeOrderedAndProject(limit=n)`).
#[derive(Debug)]
pub struct SortExec {
    /// Input.
    pub input: Arc<dyn ExecutionPlan>,
    /// Keys over the input's columns.
    pub keys: Vec<SortExpr>,
    /// Keep only the first rows.
    pub fetch: Option<usize>,
    metrics: MetricsSet,
}

impl SortExec {
    /// A sort of `input`.
    pub fn new(input: Arc<dyn ExecutionPlan>, keys: Vec<SortExpr>, fetch: Option<usize>) -> Self {
        Self {
            input,
            keys,
            fetch,
            metrics: metrics_with(&[]),
        }
    }

    fn run(&self, ctx: &Arc<TaskContext>) -> Result<Vec<RecordBatch>> {
        let schema = self.input.schema();
        let batches: Vec<RecordBatch> = super::collect_parallel(&self.input, ctx)?;
        let mut reservation = ctx.pool.reservation("Sort");
        reservation.grow(
            batches
                .iter()
                .map(|b| ferrospark_common::batch_bytes(b) as u64)
                .sum(),
        )?;
        let all = arrow_select::concat::concat_batches(&schema, &batches)?;
        drop(batches);
        let n = all.num_rows();
        if n == 0 {
            return Ok(vec![]);
        }
        let t = std::time::Instant::now();
        let bctx = BindContext::for_session(&schema, &ctx.cfg);
        let mut cols = Vec::new();
        let mut fields = Vec::new();
        for k in &self.keys {
            let e = bind(&k.expr, &bctx)?;
            let a = normalize_key(&evaluate(&e, &all)?.into_array(n)?);
            fields.push(SortField::new_with_options(
                a.data_type().clone(),
                SortOptions {
                    descending: !k.ascending,
                    nulls_first: k.nulls_first,
                },
            ));
            cols.push(a);
        }
        let converter = RowConverter::new(fields)?;
        let rows = converter.convert_columns(&cols)?;
        let mut idx: Vec<u32> = (0..n as u32).collect();
        let cmp = |a: &u32, b: &u32| {
            rows.row(*a as usize)
                .cmp(&rows.row(*b as usize))
                .then(a.cmp(b))
        };
        match self.fetch {
            Some(k) if k < n => {
                if k > 0 {
                    idx.select_nth_unstable_by(k - 1, cmp);
                }
                idx.truncate(k);
                idx.sort_unstable_by(cmp);
            }
            _ => idx.sort_unstable_by(cmp),
        }
        let sorted = ferrospark_common::take_batch(&all, &UInt32Array::from(idx))?;
        self.metrics.add_elapsed("elapsed_compute_ns", t);
        let bs = ctx.batch_size.max(1);
        Ok((0..sorted.num_rows())
            .step_by(bs)
            .map(|off| sorted.slice(off, bs.min(sorted.num_rows() - off)))
            .collect())
    }
}

impl ExecutionPlan for SortExec {
    fn name(&self) -> String {
        match self.fetch {
            Some(_) => "TakeOrderedAndProject".into(),
            None => "Sort".into(),
        }
    }
    fn describe(&self) -> String {
        let k: Vec<String> = self.keys.iter().map(sort_text).collect();
        match self.fetch {
            Some(n) => format!("(limit={n}, orderBy=[{}])", k.join(", ")),
            None => format!("[{}], true", k.join(", ")),
        }
    }
    fn schema(&self) -> SchemaRef {
        self.input.schema()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![self.input.clone()]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let out: BatchStream = match self.run(ctx) {
            Ok(b) => Box::new(b.into_iter().map(Ok)),
            Err(e) => Box::new(std::iter::once(Err(e))),
        };
        Ok(counted(out, self.metrics.clone()))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
    fn accept_runtime_filter(&self, column: &str, filter: &Target) -> bool {
        // A full sort keeps every row it is given; a top-K would keep others instead.
        self.fetch.is_none() && self.input.accept_runtime_filter(column, filter)
    }
}
