//! Leaf operators: the Parquet scan (filters and columns pushed in), in-memory batches, one
//! empty row, no rows.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::{Schema, SchemaRef};
use ferrospark_common::{MetricsSet, Result};
use ferrospark_expr::{bind_predicate, filter_batch, BindContext, Expr};
use ferrospark_scan::parquet::SCAN_METRICS;
use ferrospark_scan::{KeyFilter, ParquetScan, ParquetScanOptions};

use super::pipeline::{FnOp, OpFactory, Pipeline};
use super::runtime_filter::Target;
use super::{counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::conform::conform;
use crate::logical::expr_text;

/// Gives `batch` the schema `schema` (same columns, names `name#id`).
pub fn rename(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        batch.columns().to_vec(),
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

/// `FileScan parquet`: reads the files' `columns` keeping rows that pass `filter`.
#[derive(Debug)]
pub struct ParquetScanExec {
    /// Paths as given.
    pub paths: Vec<PathBuf>,
    /// File column names read, in output order.
    pub columns: Vec<String>,
    /// The pushed filter over file column names.
    pub filter: Option<Expr>,
    /// The filter as EXPLAIN shows it (over attribute keys).
    pub filter_text: Vec<String>,
    /// Output schema (keys).
    pub schema: SchemaRef,
    /// The relation name.
    pub table: String,
    metrics: MetricsSet,
    scan_metrics: Mutex<Option<MetricsSet>>,
    /// Join runtime filters on its columns: (file column, output column, filter).
    runtime_filters: Mutex<Vec<(String, String, Target)>>,
}

impl ParquetScanExec {
    /// A scan of `paths`.
    pub fn new(
        paths: Vec<PathBuf>,
        columns: Vec<String>,
        filter: Option<Expr>,
        filter_text: Vec<String>,
        schema: SchemaRef,
        table: String,
    ) -> Self {
        Self {
            paths,
            columns,
            filter,
            filter_text,
            schema,
            table,
            metrics: metrics_with(SCAN_METRICS),
            scan_metrics: Mutex::new(None),
            runtime_filters: Mutex::new(Vec::new()),
        }
    }

    fn runtime_targets(&self) -> Vec<(String, String, Target)> {
        self.runtime_filters
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }

    /// The planned reader (footers read, files and row groups pruned).
    pub fn plan_scan(&self, ctx: &TaskContext) -> Result<ParquetScan> {
        let mut options = ParquetScanOptions::from_config(&ctx.cfg)?;
        options.columns = Some(self.columns.clone());
        options.filter = self.filter.clone();
        options.cancel = Some(ctx.progress.cancel_flag());
        for (column, _, target) in self.runtime_targets() {
            if let Some(set) = ctx.runtime_filters.get(target.id) {
                options.key_filters.push(KeyFilter { column, set });
            }
        }
        let scan = ParquetScan::try_new(&self.paths, options)?;
        ctx.progress.register_scan(scan.metrics().clone());
        if let Ok(mut m) = self.scan_metrics.lock() {
            *m = Some(scan.metrics().clone());
        }
        Ok(scan)
    }

    /// Copies the reader's counters into this node's metrics.
    pub fn record_scan_metrics(&self) {
        if let Ok(m) = self.scan_metrics.lock() {
            if let Some(m) = m.as_ref() {
                for (name, v) in m.snapshot() {
                    self.metrics.add(name, v);
                }
            }
        }
    }
}

impl ExecutionPlan for ParquetScanExec {
    fn name(&self) -> String {
        "FileScan parquet".into()
    }
    fn describe(&self) -> String {
        let fields = super::field_names(&self.schema);
        let mut s = format!(
            "{}[{}] PushedFilters: [{}], ReadSchema: struct<{}>",
            self.table,
            fields.join(","),
            self.filter_text.join(", "),
            self.columns.join(",")
        );
        let runtime: Vec<String> = self
            .runtime_targets()
            .iter()
            .map(|(_, col, t)| format!("{col} IN keys({})", t.build_key))
            .collect();
        if !runtime.is_empty() {
            s.push_str(&format!(", RuntimeFilters: [{}]", runtime.join(", ")));
        }
        s
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let scan = self.plan_scan(ctx)?;
        let schema = self.schema.clone();
        let stream = scan.execute().map(move |b| conform(b?, &schema));
        let scan_metrics = scan.metrics().clone();
        let own = self.metrics.clone();
        let mut done = false;
        // Scan counters land in this node when the stream ends.
        let tail = std::iter::from_fn(move || {
            if !done {
                done = true;
                for (name, v) in scan_metrics.snapshot() {
                    own.add(name, v);
                }
            }
            None
        });
        Ok(counted(Box::new(stream.chain(tail)), self.metrics.clone()))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
    fn streams_in_scan(&self) -> bool {
        true
    }
    fn accept_runtime_filter(&self, column: &str, filter: &Target) -> bool {
        let Some(i) = self.schema.fields().iter().position(|f| f.name() == column) else {
            return false;
        };
        let Ok(mut v) = self.runtime_filters.lock() else {
            return false;
        };
        v.push((self.columns[i].clone(), column.to_string(), filter.clone()));
        true
    }
    fn pipeline(&self, ctx: &Arc<TaskContext>) -> Result<Option<Pipeline>> {
        let scan = self.plan_scan(ctx)?;
        let schema = self.schema.clone();
        let metrics = self.metrics.clone();
        let rename_op: OpFactory = Arc::new(move || {
            let schema = schema.clone();
            Ok(FnOp::boxed(
                move |b, out| {
                    out.push(conform(b, &schema)?);
                    Ok(())
                },
                metrics.clone(),
            ))
        });
        let scan_metrics = (scan.metrics().clone(), self.metrics.clone());
        Ok(Some(Pipeline {
            scan,
            ops: vec![rename_op],
            scan_metrics,
        }))
    }
}

/// `LocalTableScan`: batches held in memory, with a projection and filters applied.
#[derive(Debug)]
pub struct MemoryScanExec {
    /// The batches (user names).
    pub batches: Arc<Vec<RecordBatch>>,
    /// Columns read, in output order.
    pub projection: Vec<usize>,
    /// Filter over the full batch schema's keys, applied before projecting.
    pub filter: Option<Expr>,
    /// Full schema with keys (what `filter` is over).
    pub full_schema: SchemaRef,
    /// Output schema.
    pub schema: SchemaRef,
    metrics: MetricsSet,
}

impl MemoryScanExec {
    /// A scan of in-memory batches.
    pub fn new(
        batches: Arc<Vec<RecordBatch>>,
        projection: Vec<usize>,
        filter: Option<Expr>,
        full_schema: SchemaRef,
        schema: SchemaRef,
    ) -> Self {
        Self {
            batches,
            projection,
            filter,
            full_schema,
            schema,
            metrics: metrics_with(&[]),
        }
    }
}

impl ExecutionPlan for MemoryScanExec {
    fn name(&self) -> String {
        "LocalTableScan".into()
    }
    fn describe(&self) -> String {
        let fields = super::field_names(&self.schema);
        let mut s = format!("[{}]", fields.join(", "));
        if let Some(f) = &self.filter {
            s.push_str(&format!(", Filter: {}", expr_text(f)));
        }
        s
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let predicate = match &self.filter {
            Some(f) => Some(bind_predicate(
                f,
                &BindContext::for_session(&self.full_schema, &ctx.cfg),
            )?),
            None => None,
        };
        let full = self.full_schema.clone();
        let out = self.schema.clone();
        let projection = self.projection.clone();
        let batches = self.batches.clone();
        let bs = ctx.batch_size.max(1);
        let mut slices = Vec::new();
        for b in batches.iter() {
            let mut off = 0;
            while off < b.num_rows() {
                let len = bs.min(b.num_rows() - off);
                slices.push(b.slice(off, len));
                off += len;
            }
        }
        let stream = slices.into_iter().map(move |b| {
            let b = conform(b, &full)?;
            let b = match &predicate {
                Some(p) => filter_batch(&b, p)?,
                None => b,
            };
            let cols = projection.iter().map(|&i| b.column(i).clone()).collect();
            Ok(RecordBatch::try_new_with_options(
                out.clone(),
                cols,
                &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
            )?)
        });
        Ok(counted(Box::new(stream), self.metrics.clone()))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
}

/// `Scan OneRowRelation` (one row, no columns) or an empty relation.
#[derive(Debug)]
pub struct ConstantRowsExec {
    /// 1 for one row, 0 for none.
    pub rows: usize,
    /// Output schema.
    pub schema: SchemaRef,
    metrics: MetricsSet,
}

impl ConstantRowsExec {
    /// `rows` rows (0 or 1) of `schema` (all NULL).
    pub fn new(rows: usize, schema: SchemaRef) -> Self {
        Self {
            rows,
            schema,
            metrics: metrics_with(&[]),
        }
    }
}

impl ExecutionPlan for ConstantRowsExec {
    fn name(&self) -> String {
        if self.rows == 1 {
            "Scan OneRowRelation".into()
        } else {
            "LocalTableScan <empty>".into()
        }
    }
    fn describe(&self) -> String {
        String::new()
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![]
    }
    fn execute(&self, _ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        if self.rows == 0 {
            return Ok(Box::new(std::iter::empty()));
        }
        let b = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        Ok(counted(
            Box::new(std::iter::once(Ok(b))),
            self.metrics.clone(),
        ))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
}
