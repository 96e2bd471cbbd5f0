//! Files of the row formats written as Spark writes them: JSON Lines, CSV and text, with
//! Spark's writer options (`DataFrameWriter.json / csv / text`, tables `USING json / csv /
//! text`). Parquet files are written by the plan crate's writer with `parquet`'s
//! `ArrowWriter`; this module only decides the format and writes the text ones.
//!
//! A value's text is Spark's: numbers, decimals and booleans as `CAST(v AS STRING)` gives
//! them, dates and timestamps by the `dateFormat` / `timestampFormat` patterns in the session
//! time zone, both through ferrospark's own expressions.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use arrow_array::{Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{FerroError, Result};

use ferrospark_expr::csv::write as csv;
pub use ferrospark_expr::csv::write::CsvWriteOptions;
use ferrospark_expr::json::write as json;
pub use ferrospark_expr::json::write::JsonWriteOptions;

/// The format of a write's files.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteFormat {
    /// Snappy Parquet (written by the caller).
    Parquet,
    /// JSON Lines.
    Json(JsonWriteOptions),
    /// Comma-separated values.
    Csv(CsvWriteOptions),
    /// One string column, a line per row.
    Text {
        /// `lineSep` (`\n`)
        line_sep: String,
    },
}

impl WriteFormat {
    /// The format of `provider` (`parquet`, `json`, `csv`, `text`) with Spark's `options`.
    pub fn parse(provider: &str, options: &BTreeMap<String, String>) -> Result<Self> {
        let options: BTreeMap<String, String> = options
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect();
        if let Some(c) = options.get("compression").or_else(|| options.get("codec")) {
            let none = matches!(c.to_ascii_lowercase().as_str(), "none" | "uncompressed");
            if provider != "parquet" && !none {
                return Err(FerroError::Unsupported(format!(
                    "writing {provider} files with compression '{c}': ferrospark writes them uncompressed; drop the option"
                )));
            }
        }
        Ok(match provider {
            "parquet" => WriteFormat::Parquet,
            "json" => WriteFormat::Json(JsonWriteOptions::parse(&options)),
            "csv" => WriteFormat::Csv(CsvWriteOptions::parse(&options)?),
            "text" => WriteFormat::Text {
                line_sep: options
                    .get("linesep")
                    .cloned()
                    .unwrap_or_else(|| "\n".into()),
            },
            other => {
                return Err(FerroError::Unsupported(format!(
                    "writing {other} files: ferrospark writes parquet, json, csv and text"
                )))
            }
        })
    }

    /// The end of a file name in this format (`c000.json`).
    pub fn extension(&self) -> &'static str {
        match self {
            WriteFormat::Parquet => "snappy.parquet",
            WriteFormat::Json(_) => "json",
            WriteFormat::Csv(_) => "csv",
            WriteFormat::Text { .. } => "txt",
        }
    }

    /// Refuses a schema the format cannot hold, as Spark does before writing anything.
    pub fn check_schema(&self, schema: &Schema) -> Result<()> {
        match self {
            WriteFormat::Text { .. } => {
                if schema.fields().len() != 1 {
                    return Err(FerroError::Analysis(format!(
                        "[_LEGACY_ERROR_TEMP_1199] Text data source supports only a single column, and you have {} columns.",
                        schema.fields().len()
                    )));
                }
                let f = &schema.fields()[0];
                if f.data_type() != &DataType::Utf8 {
                    return Err(unsupported_type("Text", f));
                }
                Ok(())
            }
            WriteFormat::Csv(_) => {
                for f in schema.fields() {
                    if matches!(
                        f.data_type(),
                        DataType::List(_) | DataType::Struct(_) | DataType::Map(..)
                    ) {
                        return Err(unsupported_type("CSV", f));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

fn unsupported_type(source: &str, f: &Field) -> FerroError {
    FerroError::Analysis(format!(
        "[UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE] The {source} datasource doesn't support the column `{}` of the type \"{}\". SQLSTATE: 0A000",
        f.name(),
        ferrospark_expr::types::spark_type_name(f.data_type())
    ))
}

/// One open file of a row format.
pub struct RowFileWriter {
    out: BufWriter<File>,
    format: WriteFormat,
    schema: SchemaRef,
    session_tz: String,
    header_due: bool,
}

impl RowFileWriter {
    /// Creates the file at `path` for rows of `schema` (`format` not Parquet).
    pub fn create(
        path: &Path,
        schema: SchemaRef,
        format: &WriteFormat,
        session_tz: &str,
    ) -> Result<Self> {
        let file = File::create(path).map_err(|e| FerroError::io(path, e))?;
        let header_due = matches!(format, WriteFormat::Csv(o) if o.header);
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, file),
            format: format.clone(),
            schema,
            session_tz: session_tz.to_string(),
            header_due,
        })
    }

    /// Writes the rows of `batch`.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut buf = Vec::with_capacity(batch.num_rows() * 32);
        match &self.format {
            WriteFormat::Json(o) => {
                json::write_rows(batch, o, &self.session_tz, &mut buf)?;
            }
            WriteFormat::Csv(o) => {
                if self.header_due {
                    csv::write_header(&self.schema, o, &mut buf);
                    self.header_due = false;
                }
                csv::write_rows(batch, o, &self.session_tz, &mut buf)?;
            }
            WriteFormat::Text { line_sep } => {
                let col = batch.column(0);
                let s = col.as_any().downcast_ref::<StringArray>().ok_or_else(|| {
                    FerroError::Internal(format!("text write of {}", col.data_type()))
                })?;
                for i in 0..s.len() {
                    if s.is_valid(i) {
                        buf.extend_from_slice(s.value(i).as_bytes());
                    }
                    buf.extend_from_slice(line_sep.as_bytes());
                }
            }
            WriteFormat::Parquet => {
                return Err(FerroError::Internal(
                    "a Parquet file through the row writer".into(),
                ))
            }
        }
        self.out.write_all(&buf).map_err(|e| {
            FerroError::Internal(format!("writing a {} file: {e}", self.format.extension()))
        })
    }

    /// Flushes and closes the file (a CSV file of no rows still gets its header).
    pub fn close(mut self) -> Result<()> {
        if self.header_due {
            if let WriteFormat::Csv(o) = &self.format {
                let mut buf = Vec::new();
                csv::write_header(&self.schema, o, &mut buf);
                self.out
                    .write_all(&buf)
                    .map_err(|e| FerroError::Internal(format!("writing a csv file: {e}")))?;
            }
        }
        self.out.flush().map_err(|e| {
            FerroError::Internal(format!("closing a {} file: {e}", self.format.extension()))
        })
    }
}

#[cfg(test)]
mod tests;
