//! Leaf operators: the Parquet scan (filters and columns pushed in), in-memory batches, one
//! empty row, no rows.

use std::collections::HashMap;
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
use super::shared_scan::{KeyFilters, ScanShare, SharedRead, Tee};
use super::{counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::conform::conform;
use crate::logical::expr_text;

/// Gives `batch` the schema `schema` (same columns, names `name#id`).
pub fn rename(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            // Nested field names are the writer's (a Parquet map's `key_value`, Spark's
            // `entries`): the same layout takes the schema's names.
            if c.data_type() != f.data_type() && c.data_type().equals_datatype(f.data_type()) {
                Ok(arrow_array::make_array(relabel(
                    c.to_data(),
                    f.data_type(),
                )?))
            } else {
                Ok(c.clone())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

/// `data` as `target`, a type of the same layout whose nested fields are named otherwise.
fn relabel(
    data: arrow_data::ArrayData,
    target: &arrow_schema::DataType,
) -> Result<arrow_data::ArrayData> {
    use arrow_schema::DataType as T;
    let child_types: Vec<&T> = match target {
        T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) | T::Map(f, _) => {
            vec![f.data_type()]
        }
        T::Struct(fields) => fields.iter().map(|f| f.data_type()).collect(),
        _ => Vec::new(),
    };
    let children = data
        .child_data()
        .iter()
        .zip(child_types)
        .map(|(c, t)| relabel(c.clone(), t))
        .collect::<Result<Vec<_>>>()?;
    let builder = data.into_builder().data_type(target.clone());
    let builder = if children.is_empty() {
        builder
    } else {
        builder.child_data(children)
    };
    Ok(builder.build()?)
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
    /// Join runtime filters on its columns: (file column, output column, filter).
    runtime_filters: Mutex<Vec<(String, String, Target)>>,
    /// The group of scans of the same files it shares one read with.
    share: Option<ScanShare>,
    /// The files and row groups it is restricted to (a Spark task's splits).
    only: Option<Arc<HashMap<PathBuf, Vec<usize>>>>,
    /// A catalog table's partitions, read instead of walking the paths.
    partitions: Option<Arc<ferrospark_scan::PartitionDirs>>,
    /// Columns no file has: they read as NULL.
    missing: Vec<String>,
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
            runtime_filters: Mutex::new(Vec::new()),
            share: None,
            only: None,
            partitions: None,
            missing: Vec::new(),
        }
    }

    /// This scan, reading a catalog table's `partitions`; `missing` columns (no file has
    /// them) read as NULL.
    pub fn reading_partitions(
        mut self,
        partitions: Arc<ferrospark_scan::PartitionDirs>,
        missing: Vec<String>,
    ) -> Self {
        self.partitions = Some(partitions);
        self.missing = missing;
        self
    }

    /// Whether output column `c` is one no file has.
    fn is_missing(&self, c: &str) -> bool {
        self.missing.iter().any(|m| m.eq_ignore_ascii_case(c))
    }

    /// This scan, reading only `only`'s files and row groups when given.
    pub fn reading_only(mut self, only: Option<Arc<HashMap<PathBuf, Vec<usize>>>>) -> Self {
        self.only = only;
        self
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

    /// A reader of `columns` under runtime filters `keys` (footers read, files and row groups
    /// pruned).
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
        options.only = self.only.clone();
        options.partition_dirs = self.partitions.clone();
        for (column, set) in keys {
            options.key_filters.push(KeyFilter { column, set });
        }
        let scan = ParquetScan::try_new(&self.paths, options)?;
        ctx.progress.register_scan(scan.metrics().clone());
        Ok(scan)
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
        if let Some(p) = &self.partitions {
            // Spark's `InMemoryFileIndex(N paths)` after partition pruning.
            s.push_str(&format!(", PartitionsRead: {}", p.dirs.len()));
        }
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
        let FileRead {
            reader,
            convert,
            tee,
        } = match self.plan_read(ctx)? {
            PlannedRead::Replay(own) => {
                return Ok(counted(
                    Box::new(own.into_iter().map(Ok)),
                    self.metrics.clone(),
                ))
            }
            PlannedRead::Files(read) => read,
        };
        let failed = tee.clone();
        let stream = reader.execute().map(move |b| {
            // A failed read keeps nothing for its group, even if its consumer reads on.
            b.and_then(|b| convert(b)).inspect_err(|_| {
                if let Some(tee) = &failed {
                    tee.abandon();
                }
            })
        });
        let scan_metrics = reader.metrics().clone();
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
        if self.is_missing(&self.columns[i]) {
            return false;
        }
        let Ok(mut v) = self.runtime_filters.lock() else {
            return false;
        };
        v.push((self.columns[i].clone(), column.to_string(), filter.clone()));
        true
    }
    fn pipeline(&self, ctx: &Arc<TaskContext>) -> Result<Option<Pipeline>> {
        let (source, convert, tee, scan_metrics): (_, Convert, _, _) = match self.plan_read(ctx)? {
            // Replayed rows are this scan's output already: the operator only counts them.
            PlannedRead::Replay(own) => (PipelineSource::Batches(own), Arc::new(Ok), None, None),
            PlannedRead::Files(FileRead {
                reader,
                convert,
                tee,
            }) => {
                let metrics = Some((reader.metrics().clone(), self.metrics.clone()));
                (PipelineSource::Parquet(reader), convert, tee, metrics)
            }
        };
        let metrics = self.metrics.clone();
        let op: OpFactory = Arc::new(move || {
            let convert = convert.clone();
            Ok(FnOp::boxed(
                move |b, out| {
                    out.push(convert(b)?);
                    Ok(())
                },
                metrics.clone(),
            ))
        });
        let bare = matches!(source, PipelineSource::Parquet(_)) && tee.is_none();
        let own = self.metrics.clone();
        let on_done = tee.map(|tee| -> Arc<dyn Fn() + Send + Sync> {
            Arc::new(move || own.add("shared_rows_kept", tee.finish() as u64))
        });
        Ok(Some(Pipeline {
            source,
            ops: vec![op],
            scan_metrics,
            bare,
            on_done,
        }))
    }
}

/// How the batches a reader gives become a scan's output.
type Convert = Arc<dyn Fn(RecordBatch) -> Result<RecordBatch> + Send + Sync>;

/// A read of the files: the reader, the conversion of its batches, and the tee keeping them
/// for the scan's group when it reads for one.
struct FileRead {
    reader: ParquetScan,
    convert: Convert,
    tee: Option<Arc<Tee>>,
}

/// How one run of a scan gets its rows.
enum PlannedRead {
    /// The rows another scan of its group kept, as this scan's output.
    Replay(Vec<RecordBatch>),
    /// From the files.
    Files(FileRead),
}

impl ParquetScanExec {
    /// How this run reads (see [`super::shared_scan`]): alone, from the rows another scan of
    /// its group kept, or for the group; under the runtime filters built for it.
    fn plan_read(&self, ctx: &TaskContext) -> Result<PlannedRead> {
        let keys = self.key_filters(ctx);
        let Some(share) = &self.share else {
            return self.own_read(ctx, keys);
        };
        // This scan's columns among the group's.
        let positions: Vec<usize> = self
            .columns
            .iter()
            .filter_map(|c| share.columns.iter().position(|u| u == c))
            .collect();
        let schema = self.schema.clone();
        let mine = move |b: &RecordBatch| rename(b.project(&positions)?, &schema);
        Ok(match ctx.shared_scans.claim(share.id, keys.clone(), ctx)? {
            SharedRead::Replay(kept) => {
                self.metrics.add("shared_reads", 1);
                PlannedRead::Replay(kept.iter().map(mine).collect::<Result<_>>()?)
            }
            SharedRead::Read(tee) => {
                let (union, keeper) = (share.schema.clone(), tee.clone());
                PlannedRead::Files(FileRead {
                    reader: self.plan_reader(ctx, &share.columns, keys)?,
                    convert: Arc::new(move |b| {
                        let b = conform(b, &union)?;
                        keeper.keep(&b);
                        mine(&b)
                    }),
                    tee: Some(tee),
                })
            }
            SharedRead::Own => return self.own_read(ctx, keys),
        })
    }

    /// A read of this scan's own columns.
    fn own_read(&self, ctx: &TaskContext, keys: KeyFilters) -> Result<PlannedRead> {
        let schema = self.schema.clone();
        if self.missing.is_empty() {
            return Ok(PlannedRead::Files(FileRead {
                reader: self.plan_reader(ctx, &self.columns, keys)?,
                convert: Arc::new(move |b| conform(b, &schema)),
                tee: None,
            }));
        }
        // The files' columns are read; each missing one is a NULL column in its place.
        let mut read: Vec<String> = Vec::with_capacity(self.columns.len());
        let slots: Vec<Option<usize>> = self
            .columns
            .iter()
            .map(|c| {
                (!self.is_missing(c)).then(|| {
                    read.push(c.clone());
                    read.len() - 1
                })
            })
            .collect();
        if read.is_empty() {
            // Row counts still need a column: a partition column is always there.
            if let Some(f) = self.partitions.as_ref().and_then(|p| p.fields.first()) {
                read.push(f.name().clone());
            }
        }
        Ok(PlannedRead::Files(FileRead {
            reader: self.plan_reader(ctx, &read, keys)?,
            convert: Arc::new(move |b| {
                let (fields, columns): (Vec<arrow_schema::FieldRef>, Vec<arrow_array::ArrayRef>) =
                    slots
                        .iter()
                        .zip(schema.fields())
                        .map(|(slot, f)| match slot {
                            Some(i) => (b.schema().fields()[*i].clone(), b.column(*i).clone()),
                            None => (
                                f.clone(),
                                arrow_array::new_null_array(f.data_type(), b.num_rows()),
                            ),
                        })
                        .unzip();
                let widened = RecordBatch::try_new_with_options(
                    Arc::new(Schema::new(fields)),
                    columns,
                    &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
                )?;
                conform(widened, &schema)
            }),
            tee: None,
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
