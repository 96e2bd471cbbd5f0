//! One entry point for the text formats, so the planner and the bindings name a format
//! rather than a reader: [`TextScan::try_new`] parses the options by the format's rules and
//! plans its scan.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_schema::SchemaRef;
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::Expr;

use crate::csv::{CsvOptions, CsvScan};
use crate::json::{JsonOptions, JsonScan};
use crate::text::{TextPlan, TextStream};

/// A text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum TextFormat {
    /// Spark's `csv`.
    Csv,
    /// Spark's `json`.
    Json,
}

impl TextFormat {
    /// The format named as Spark names it.
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "csv" => Ok(TextFormat::Csv),
            "json" => Ok(TextFormat::Json),
            other => Err(FerroError::Config(format!(
                "unknown text format {other:?}: expected csv or json"
            ))),
        }
    }

    /// Spark's name of the format.
    pub fn name(self) -> &'static str {
        match self {
            TextFormat::Csv => "csv",
            TextFormat::Json => "json",
        }
    }
}

/// A planned scan of a text format.
#[derive(Debug)]
pub enum TextScan {
    /// CSV files.
    Csv(CsvScan),
    /// JSON files.
    Json(JsonScan),
}

impl TextScan {
    /// Plans a scan of `paths` in `format` with Spark's `options` (see [`CsvScan::try_new`]
    /// and [`JsonScan::try_new`]).
    #[allow(clippy::too_many_arguments)]
    pub fn try_new(
        format: TextFormat,
        paths: &[PathBuf],
        schema: Option<SchemaRef>,
        columns: Option<Vec<String>>,
        filter: Option<Expr>,
        options: &HashMap<String, String>,
        batch_size: usize,
        cfg: Config,
    ) -> Result<Self> {
        Ok(match format {
            TextFormat::Csv => {
                let mut o = CsvOptions::from_map(options)?;
                o.batch_size = batch_size;
                TextScan::Csv(CsvScan::try_new(paths, schema, columns, filter, o, cfg)?)
            }
            TextFormat::Json => {
                let mut o = JsonOptions::from_map(options)?;
                o.batch_size = batch_size;
                TextScan::Json(JsonScan::try_new(paths, schema, columns, filter, o, cfg)?)
            }
        })
    }

    /// The format read.
    pub fn format(&self) -> TextFormat {
        match self {
            TextScan::Csv(_) => TextFormat::Csv,
            TextScan::Json(_) => TextFormat::Json,
        }
    }

    /// The planned scan (schema, files, counters).
    pub fn plan(&self) -> &TextPlan {
        match self {
            TextScan::Csv(s) => s.plan(),
            TextScan::Json(s) => s.plan(),
        }
    }

    /// Reads the scan.
    pub fn stream(&self) -> Result<TextStream> {
        match self {
            TextScan::Csv(s) => s.stream(),
            TextScan::Json(s) => s.stream(),
        }
    }
}
