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

use super::pipeline::{FnOp, OpFactory, Pipeline, PipelineSource};
use super::runtime_filter::Target;
use super::shared_scan::{KeyFilters, ScanShare, SharedRead};
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
    /// The group of scans of the same files it shares one read with.
    share: Option<ScanShare>,
}

/// The counters of a scan sharing its read: rows it kept for others, reads it replayed.
const SHARE_METRICS: &[(&str, ferrospark_common::MetricValue)] = &[
    ("shared_rows_kept", ferrospark_common::MetricValue::Count),
    ("shared_reads", ferrospark_common::MetricValue::Count),
];

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
            metrics: metrics_with(&[SCAN_METRICS, SHARE_METRICS].concat()),
            scan_metrics: Mutex::new(None),
            runtime_filters: Mutex::new(Vec::new()),
            share: None,
        }
    }

    /// This scan, sharing one read with the other scans of `share`'s group.
    pub fn sharing(mut self, share: ScanShare) -> Self {
        self.share = Some(share);
        self
    }

    fn runtime_targets(&self) -> Vec<(String, String, Target)> {
        self.runtime_filters
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }

    /// The runtime filters built for it in this run: (file column, keys).
    fn key_filters(&self, ctx: &TaskContext) -> KeyFilters {
        self.runtime_targets()
            .into_iter()
            .filter_map(|(column, _, target)| Some((column, ctx.runtime_filters.get(target.id)?)))
            .collect()
    }

    /// The planned reader (footers read, files and row groups pruned).
    pub fn plan_scan(&self, ctx: &TaskContext) -> Result<ParquetScan> {
        self.plan_reader(ctx, &self.columns, self.key_filters(ctx))
    }

    /// A reader of `columns` under runtime filters `keys`.
    fn plan_reader(
        &self,
        ctx: &TaskContext,
        columns: &[String],
        keys: KeyFilters,
    ) -> Result<ParquetScan> {
        let mut options = ParquetScanOptions::from_config(&ctx.cfg)?;
        options.columns = Some(columns.to_vec());
        options.filter = self.filter.clone();
        options.cancel = Some(ctx.progress.cancel_flag());
        for (column, set) in keys {
            options.key_filters.push(KeyFilter { column, set });
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
        if let Some(share) = &self.share {
            s.push_str(&format!(", SharedRead: id={}", share.id));
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
        let (read, keys) = self.read_mode(ctx)?;
        let (scan, tee) = match read {
            SharedRead::Replay(kept) => {
                let out: Vec<Result<RecordBatch>> =
                    kept.iter().map(|b| self.own_columns(b)).collect();
                return Ok(counted(Box::new(out.into_iter()), self.metrics.clone()));
            }
            SharedRead::Own => (self.plan_reader(ctx, &self.columns, keys)?, None),
            SharedRead::Read(tee) => (
                self.plan_reader(ctx, &self.share_columns(), keys)?,
                Some(tee),
            ),
        };
        let stream: BatchStream = match (&tee, &self.share) {
            (Some(tee), Some(share)) => {
                let (tee, union, me) = (tee.clone(), share.schema.clone(), self.projector());
                Box::new(scan.execute().map(move |b| {
                    // A failed read keeps nothing, even if its consumer reads on.
                    let b = b
                        .and_then(|b| conform(b, &union))
                        .inspect_err(|_| tee.abandon())?;
                    tee.keep(&b);
                    me(&b)
                }))
            }
            _ => {
                let schema = self.schema.clone();
                Box::new(scan.execute().map(move |b| conform(b?, &schema)))
            }
        };
        let scan_metrics = scan.metrics().clone();
        let own = self.metrics.clone();
        let mut done = false;
        // Scan counters land in this node when the stream ends, and the rows read for the
        // group are kept then.
        let tail = std::iter::from_fn(move || {
            if !done {
                done = true;
                for (name, v) in scan_metrics.snapshot() {
                    own.add(name, v);
                }
                if let Some(tee) = &tee {
                    own.add("shared_rows_kept", tee.finish() as u64);
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
        let (read, keys) = self.read_mode(ctx)?;
        let metrics = self.metrics.clone();
        let (source, convert, on_done): (_, OpFactory, Option<Arc<dyn Fn() + Send + Sync>>) =
            match read {
                SharedRead::Replay(kept) => {
                    let own = kept
                        .iter()
                        .map(|b| self.own_columns(b))
                        .collect::<Result<Vec<_>>>()?;
                    let count: OpFactory = Arc::new(move || {
                        Ok(FnOp::boxed(
                            |b, out| {
                                out.push(b);
                                Ok(())
                            },
                            metrics.clone(),
                        ))
                    });
                    return Ok(Some(Pipeline {
                        source: PipelineSource::Batches(own),
                        ops: vec![count],
                        scan_metrics: None,
                        bare: false,
                        on_done: None,
                    }));
                }
                SharedRead::Own => {
                    let schema = self.schema.clone();
                    let convert: OpFactory = Arc::new(move || {
                        let schema = schema.clone();
                        Ok(FnOp::boxed(
                            move |b, out| {
                                out.push(conform(b, &schema)?);
                                Ok(())
                            },
                            metrics.clone(),
                        ))
                    });
                    (self.plan_reader(ctx, &self.columns, keys)?, convert, None)
                }
                SharedRead::Read(tee) => {
                    let union = self.share.as_ref().map(|s| s.schema.clone());
                    let union = union.unwrap_or_else(|| self.schema.clone());
                    let me = Arc::new(self.projector());
                    let keeper = tee.clone();
                    let convert: OpFactory = Arc::new(move || {
                        let (tee, union, me) = (keeper.clone(), union.clone(), me.clone());
                        Ok(FnOp::boxed(
                            move |b, out| {
                                let b = conform(b, &union)?;
                                tee.keep(&b);
                                out.push(me(&b)?);
                                Ok(())
                            },
                            metrics.clone(),
                        ))
                    });
                    let own = self.metrics.clone();
                    let done: Arc<dyn Fn() + Send + Sync> =
                        Arc::new(move || own.add("shared_rows_kept", tee.finish() as u64));
                    let reader = self.plan_reader(ctx, &self.share_columns(), keys)?;
                    (reader, convert, Some(done))
                }
            };
        let scan_metrics = Some((source.metrics().clone(), self.metrics.clone()));
        Ok(Some(Pipeline {
            bare: on_done.is_none(),
            source: PipelineSource::Parquet(source),
            ops: vec![convert],
            scan_metrics,
            on_done,
        }))
    }
}

impl ParquetScanExec {
    /// How this run reads: alone, from the rows another scan of its group kept, or for the
    /// group; with the runtime filters built for it.
    fn read_mode(&self, ctx: &TaskContext) -> Result<(SharedRead, KeyFilters)> {
        let keys = self.key_filters(ctx);
        let read = match &self.share {
            Some(share) => ctx.shared_scans.claim(share.id, keys.clone(), ctx)?,
            None => SharedRead::Own,
        };
        if matches!(read, SharedRead::Replay(_)) {
            self.metrics.add("shared_reads", 1);
        }
        Ok((read, keys))
    }

    /// The columns the group's read takes.
    fn share_columns(&self) -> Vec<String> {
        match &self.share {
            Some(s) => s.columns.clone(),
            None => self.columns.clone(),
        }
    }

    /// Turns a batch of the group's columns into this scan's output.
    fn projector(&self) -> impl Fn(&RecordBatch) -> Result<RecordBatch> + Send + Sync + 'static {
        let positions: Vec<usize> = match &self.share {
            Some(s) => self
                .columns
                .iter()
                .filter_map(|c| s.columns.iter().position(|u| u == c))
                .collect(),
            None => (0..self.columns.len()).collect(),
        };
        let schema = self.schema.clone();
        move |b| rename(b.project(&positions)?, &schema)
    }

    /// This scan's columns of a batch of the group's.
    fn own_columns(&self, b: &RecordBatch) -> Result<RecordBatch> {
        self.projector()(b)
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
