//! One entry point for the row formats read with Spark's options (CSV, JSON, Avro), so the
//! planner and the bindings name a format rather than a reader: [`FileScan::try_new`] parses
//! the options by the format's rules and plans its scan.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_schema::SchemaRef;
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::Expr;

use crate::avro::{AvroOptions, AvroScan};
use crate::csv::{CsvOptions, CsvScan};
use crate::json::{JsonOptions, JsonScan};
use crate::text::FileScanPlan;

/// The batches a [`FileScan`] reads.
pub type FileBatches = Box<dyn Iterator<Item = Result<arrow_array::RecordBatch>> + Send>;

/// A row format read with Spark's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FileFormat {
    /// Spark's `csv`.
    Csv,
    /// Spark's `json`.
    Json,
    /// Spark's `avro`.
    Avro,
}

impl FileFormat {
    /// The format named as Spark names it.
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "csv" => Ok(FileFormat::Csv),
            "json" => Ok(FileFormat::Json),
            "avro" => Ok(FileFormat::Avro),
            other => Err(FerroError::Config(format!(
                "unknown file format {other:?}: expected csv, json or avro"
            ))),
        }
    }

    /// Spark's name of the format.
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Csv => "csv",
            FileFormat::Json => "json",
            FileFormat::Avro => "avro",
        }
    }
}

/// A planned scan of a row format.
#[derive(Debug)]
pub enum FileScan {
    /// CSV files.
    Csv(CsvScan),
    /// JSON files.
    Json(JsonScan),
    /// Avro files.
    Avro(AvroScan),
}

impl FileScan {
    /// Plans a scan of `paths` in `format` with Spark's `options` (see [`CsvScan::try_new`],
    /// [`JsonScan::try_new`] and [`AvroScan::try_new`]).
    #[allow(clippy::too_many_arguments)]
    pub fn try_new(
        format: FileFormat,
        paths: &[PathBuf],
        schema: Option<SchemaRef>,
        columns: Option<Vec<String>>,
        filter: Option<Expr>,
        options: &HashMap<String, String>,
        batch_size: usize,
        cfg: Config,
    ) -> Result<Self> {
        Ok(match format {
            FileFormat::Csv => {
                let mut o = CsvOptions::from_map(options)?;
                o.batch_size = batch_size;
                FileScan::Csv(CsvScan::try_new(paths, schema, columns, filter, o, cfg)?)
            }
            FileFormat::Json => {
                let mut o = JsonOptions::from_map(options)?;
                o.batch_size = batch_size;
                FileScan::Json(JsonScan::try_new(paths, schema, columns, filter, o, cfg)?)
            }
            FileFormat::Avro => {
                let mut o = AvroOptions::from_map(options)?;
                o.batch_size = batch_size;
                FileScan::Avro(AvroScan::try_new(paths, schema, columns, filter, o, cfg)?)
            }
        })
    }

    /// The format read.
    pub fn format(&self) -> FileFormat {
        match self {
            FileScan::Csv(_) => FileFormat::Csv,
            FileScan::Json(_) => FileFormat::Json,
            FileScan::Avro(_) => FileFormat::Avro,
        }
    }

    /// The planned scan (schema, files, counters).
    pub fn plan(&self) -> &FileScanPlan {
        match self {
            FileScan::Csv(s) => s.plan(),
            FileScan::Json(s) => s.plan(),
            FileScan::Avro(s) => s.plan(),
        }
    }

    /// Reads the scan.
    pub fn stream(&self) -> Result<FileBatches> {
        Ok(match self {
            FileScan::Csv(s) => Box::new(s.stream()?),
            FileScan::Json(s) => Box::new(s.stream()?),
            FileScan::Avro(s) => Box::new(s.stream()?),
        })
    }
}
