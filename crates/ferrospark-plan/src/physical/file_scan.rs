//! `FileScan csv` / `json` / `avro`: the row-format readers of `ferrospark-scan` behind the
//! operator trait, reading only the columns the plan uses and checking the pushed filters
//! while records convert.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use ferrospark_common::{MetricsSet, Result};
use ferrospark_expr::Expr;
use ferrospark_scan::{FileBatches, FileFormat, FileRanges, FileScan, FILE_SCAN_METRICS};

use super::scan::rename;
use super::{counted, field_names, metrics_with, BatchStream, ExecutionPlan, TaskContext};

/// A scan of files of a row format.
#[derive(Debug)]
pub struct FileScanExec {
    /// The format.
    pub format: FileFormat,
    /// Paths as given.
    pub paths: Vec<PathBuf>,
    /// Spark's options.
    pub options: HashMap<String, String>,
    /// The files' columns as planned (the user's schema, the header's or inferred).
    pub data_schema: SchemaRef,
    /// Column names read, in output order.
    pub columns: Vec<String>,
    /// The pushed filter over column names.
    pub filter: Option<Expr>,
    /// The filter as EXPLAIN shows it.
    pub filter_text: Vec<String>,
    /// Output schema (attribute keys).
    pub schema: SchemaRef,
    /// The byte ranges it is restricted to (a Spark task's splits).
    only: Option<Arc<FileRanges>>,
    metrics: MetricsSet,
}

impl FileScanExec {
    /// A scan of `paths` returning `columns` as `schema`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        format: FileFormat,
        paths: Vec<PathBuf>,
        options: HashMap<String, String>,
        data_schema: SchemaRef,
        columns: Vec<String>,
        filter: Option<Expr>,
        filter_text: Vec<String>,
        schema: SchemaRef,
    ) -> Self {
        Self {
            format,
            paths,
            options,
            data_schema,
            columns,
            filter,
            filter_text,
            schema,
            only: None,
            metrics: metrics_with(FILE_SCAN_METRICS),
        }
    }

    /// This scan, reading only `only`'s byte ranges when given.
    pub fn reading_only(mut self, only: Option<Arc<FileRanges>>) -> Self {
        self.only = only;
        self
    }
}

/// The reader's batches, its counters added to the operator's when it ends.
struct Counted {
    stream: FileBatches,
    scan: FileScan,
    schema: SchemaRef,
    metrics: MetricsSet,
    done: bool,
}

impl Iterator for Counted {
    type Item = Result<arrow_array::RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.stream.next() {
            Some(b) => Some(b.and_then(|b| rename(b, &self.schema))),
            None => {
                self.done = true;
                for (k, v) in self.scan.plan().metrics().snapshot() {
                    if k != "output_rows" {
                        self.metrics.add(k, v);
                    }
                }
                None
            }
        }
    }
}

impl ExecutionPlan for FileScanExec {
    fn name(&self) -> String {
        format!("FileScan {}", self.format.name())
    }
    fn describe(&self) -> String {
        let mut s = format!("[{}]", field_names(&self.schema).join(", "));
        s.push_str(&format!(
            " Location: {:?}, PushedFilters: [{}]",
            self.paths,
            self.filter_text.join(", ")
        ));
        s
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let scan = FileScan::try_new(
            self.format,
            &self.paths,
            Some(self.data_schema.clone()),
            Some(self.columns.clone()),
            self.filter.clone(),
            &self.options,
            ctx.batch_size.max(1),
            ctx.cfg.clone(),
        )?;
        let stream = Counted {
            stream: scan.stream_only(self.only.as_deref())?,
            scan,
            schema: self.schema.clone(),
            metrics: self.metrics.clone(),
            done: false,
        };
        Ok(counted(Box::new(stream), self.metrics.clone()))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
}
