//! A planned scan of a row format (CSV, JSON, Avro): its files, the files' columns, what it
//! returns and the filter it checks, with the counters every such reader keeps.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{Config, FerroError, MetricValue, MetricsSet, Result};
use ferrospark_expr::Expr;

use super::ParseMode;
use crate::listing::Listing;

/// The counters a row-format scan keeps.
pub const FILE_SCAN_METRICS: &[(&str, MetricValue)] = &[
    ("files", MetricValue::Count),
    ("bytes_read", MetricValue::Bytes),
    ("rows_read", MetricValue::Count),
    ("rows_skipped_early", MetricValue::Count),
    ("fields_not_converted", MetricValue::Count),
    ("malformed_rows", MetricValue::Count),
    ("output_rows", MetricValue::Count),
];

/// Spark's error for a corrupt-record column that is not a string.
fn corrupt_type_error(f: &Field) -> FerroError {
    FerroError::Analysis(format!(
        "[INVALID_CORRUPT_RECORD_TYPE] The column `{}` for corrupt records must have the nullable STRING type, but got {}.",
        f.name(),
        f.data_type()
    ))
}

/// A field of a user's schema as a reader returns it: nullable.
fn safe_schema_field(f: &Field) -> Field {
    f.clone().with_nullable(true)
}

/// A row-format scan as planned: everything but how its records split and convert.
#[derive(Debug)]
pub struct FileScanPlan {
    pub(crate) listing: Listing,
    pub(crate) cfg: Config,
    pub(crate) mode: ParseMode,
    pub(crate) batch_size: usize,
    /// The files' columns (the corrupt-record column excluded).
    pub(crate) data: SchemaRef,
    /// The files' columns with the corrupt-record column where the schema puts it.
    pub(crate) table: SchemaRef,
    /// The corrupt-record column's position in `output`, when returned.
    pub(crate) corrupt: Option<usize>,
    /// What the scan returns.
    pub(crate) output: SchemaRef,
    pub(crate) filter: Option<Expr>,
    /// Whether filters are checked while records convert (Spark's per-format key).
    pub(crate) pushdown: bool,
    pub(crate) metrics: MetricsSet,
}

/// How a format's scan is planned.
pub(crate) struct PlanSpec<'a> {
    /// The columns of the files with the corrupt-record column where it belongs (the user's
    /// schema, or what the format found in the files).
    pub table: SchemaRef,
    /// The corrupt-record column's name.
    pub corrupt_column: &'a str,
    /// Output columns by name (all when `None`).
    pub columns: Option<Vec<String>>,
    pub filter: Option<Expr>,
    pub mode: ParseMode,
    pub batch_size: usize,
    /// Spark's key enabling filters while records convert.
    pub pushdown_key: &'a str,
}

impl FileScanPlan {
    pub(crate) fn new(listing: Listing, spec: PlanSpec<'_>, cfg: Config) -> Result<Self> {
        let corrupt_field = spec
            .table
            .fields()
            .iter()
            .find(|f| f.name() == spec.corrupt_column)
            .cloned();
        if let Some(f) = &corrupt_field {
            if f.data_type() != &DataType::Utf8 {
                return Err(corrupt_type_error(f));
            }
        }
        let table: Vec<Field> = spec
            .table
            .fields()
            .iter()
            .map(|f| safe_schema_field(f))
            .collect();
        let data: Vec<Field> = table
            .iter()
            .filter(|f| f.name() != spec.corrupt_column)
            .cloned()
            .collect();
        let table = Arc::new(Schema::new(table));
        let mut all: Vec<Arc<Field>> = table.fields().iter().cloned().collect();
        for f in &listing.partition_fields {
            all.push(Arc::new(f.clone()));
        }
        let full = Arc::new(Schema::new(all));
        let output = match &spec.columns {
            Some(cols) => {
                let fields = cols
                    .iter()
                    .map(|c| {
                        full.fields()
                            .iter()
                            .find(|f| f.name().eq_ignore_ascii_case(c))
                            .cloned()
                            .ok_or_else(|| {
                                FerroError::Analysis(format!(
                                    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column `{c}` cannot be resolved. Did you mean one of the following? [{}]",
                                    full.fields().iter().map(|f| format!("`{}`", f.name())).collect::<Vec<_>>().join(", ")
                                ))
                            })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Arc::new(Schema::new(fields))
            }
            None => full,
        };
        let corrupt = corrupt_field.and_then(|_| {
            output
                .fields()
                .iter()
                .position(|f| f.name() == spec.corrupt_column)
        });
        if output.fields().len() == 1 && corrupt.is_some() {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_FEATURE.QUERY_ONLY_CORRUPT_RECORD_COLUMN] The feature is not supported: Queries from raw JSON/CSV/XML files are disallowed when the referenced columns only include the internal corrupt record column (named `{}`). Read another column with it, or cache the parsed rows and query those.",
                spec.corrupt_column
            )));
        }
        let pushdown = cfg.get_bool(spec.pushdown_key, true)?;
        Ok(Self {
            listing,
            cfg,
            mode: spec.mode,
            batch_size: spec.batch_size.max(1),
            data: Arc::new(Schema::new(data)),
            table,
            corrupt,
            output,
            filter: spec.filter,
            pushdown,
            metrics: MetricsSet::new(FILE_SCAN_METRICS),
        })
    }

    /// What the scan returns.
    pub fn schema(&self) -> SchemaRef {
        self.output.clone()
    }

    /// The files' columns as a schema to plan the same read with (the corrupt-record column
    /// included, partition columns not).
    pub fn table_schema(&self) -> SchemaRef {
        self.table.clone()
    }

    /// Bytes on disk of the files read.
    pub fn size_bytes(&self) -> u64 {
        self.file_sizes().sum()
    }

    /// Bytes on disk of each file read.
    pub fn file_sizes(&self) -> impl Iterator<Item = u64> + '_ {
        self.listing.files.iter().map(|f| f.size)
    }

    /// The scan's counters.
    pub fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }

    /// The files read.
    pub fn files(&self) -> Vec<PathBuf> {
        self.listing.files.iter().map(|f| f.path.clone()).collect()
    }
}
