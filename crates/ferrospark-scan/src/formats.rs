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
use crate::text::{FileRanges, FileScanPlan};

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
        self.stream_only(None)
    }

    /// Reads the byte ranges `only` names (a Spark task's splits, see [`FileScan::splits`]),
    /// or every file.
    pub fn stream_only(&self, only: Option<&FileRanges>) -> Result<FileBatches> {
        Ok(match self {
            FileScan::Csv(s) => Box::new(s.stream_only(only)?),
            FileScan::Json(s) => Box::new(s.stream_only(only)?),
            FileScan::Avro(s) => Box::new(s.stream_only(only)?),
        })
    }

    /// The files cut into byte ranges of at most `max_bytes`, `(path, start, end)`, as
    /// Spark's `FilePartition` cuts them: plain CSV and JSON lines and every Avro file split;
    /// compressed text and `multiLine` records are a split a file. Reading every split with
    /// [`FileScan::stream_only`] reads every record once.
    pub fn splits(&self, max_bytes: u64) -> Vec<(PathBuf, u64, u64)> {
        match self {
            FileScan::Csv(s) => s.splits(max_bytes),
            FileScan::Json(s) => s.splits(max_bytes),
            FileScan::Avro(s) => s.splits(max_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    /// Every row's `(id, name)` read by `scan`, whole or split into ranges of `max` bytes.
    fn ids(scan: &FileScan, max: Option<u64>) -> Vec<(i64, Option<String>)> {
        let batches: Vec<RecordBatch> = match max {
            None => scan.stream().expect("stream").collect::<Result<_>>(),
            Some(max) => {
                let mut all = Vec::new();
                for (path, start, end) in scan.splits(max) {
                    let only: FileRanges = [(path, vec![(start, end)])].into();
                    all.extend(
                        scan.stream_only(Some(&only))
                            .expect("stream")
                            .collect::<Result<Vec<_>>>()
                            .expect("split"),
                    );
                }
                Ok(all)
            }
        }
        .expect("read");
        let mut out = Vec::new();
        for b in batches {
            let id = arrow_cast::cast(b.column(0), &DataType::Int64).expect("id");
            let id = id.as_any().downcast_ref::<Int64Array>().expect("id");
            let name = b
                .column(1)
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("name");
            for r in 0..b.num_rows() {
                out.push((
                    id.value(r),
                    (!name.is_null(r)).then(|| name.value(r).into()),
                ));
            }
        }
        out
    }

    fn scan(format: FileFormat, path: &std::path::Path, options: &[(&str, &str)]) -> FileScan {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let options = options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        FileScan::try_new(
            format,
            &[path.to_path_buf()],
            Some(schema),
            None,
            None,
            &options,
            7,
            Config::default(),
        )
        .expect("scan")
    }

    /// Whatever the split size, the splits of a file together read what the whole file
    /// reads, each row once and in order: lines crossing cuts, a header, CRLF line ends, blank
    /// lines, Avro blocks.
    #[test]
    fn splits_read_each_row_once() {
        let dir = tempfile::tempdir().expect("dir");
        let n = 500i64;
        let name = |i: i64| (i % 9 != 0).then(|| format!("n\u{e9}v {i}"));
        let mut csv = String::from("id,name\r\n");
        let mut json = String::new();
        for i in 0..n {
            match name(i) {
                Some(s) => {
                    csv.push_str(&format!("{i},\"{s}\"\r\n"));
                    json.push_str(&format!("{{\"name\": \"{s}\", \"id\": {i}}}\n"));
                }
                None => {
                    csv.push_str(&format!("{i},\r\n"));
                    json.push_str(&format!("{{\"id\": {i}}}\n\n"));
                }
            }
        }
        let csv_path = dir.path().join("t.csv");
        std::fs::write(&csv_path, csv).expect("write");
        let json_path = dir.path().join("t.json");
        std::fs::write(&json_path, json).expect("write");
        let avro_path = dir.path().join("t.avro");
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let mut w = arrow_avro::writer::WriterBuilder::new(schema.as_ref().clone())
            .build::<_, arrow_avro::writer::format::AvroOcfFormat>(
                std::fs::File::create(&avro_path).expect("create"),
            )
            .expect("writer");
        for chunk in (0..n).collect::<Vec<_>>().chunks(37) {
            let b = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(chunk.to_vec())),
                    Arc::new(StringArray::from_iter(chunk.iter().map(|i| name(*i)))),
                ],
            )
            .expect("batch");
            w.write(&b).expect("write");
        }
        w.finish().expect("finish");

        let expected: Vec<(i64, Option<String>)> = (0..n).map(|i| (i, name(i))).collect();
        let cases = [
            scan(FileFormat::Csv, &csv_path, &[("header", "true")]),
            scan(FileFormat::Json, &json_path, &[]),
            scan(FileFormat::Avro, &avro_path, &[]),
        ];
        for s in &cases {
            assert_eq!(ids(s, None), expected, "{:?} whole", s.format());
            for max in [1, 13, 100, 1000, 4096, 1 << 30] {
                let splits = s.splits(max);
                assert!(max > 5000 || splits.len() > 1, "{:?} splits", s.format());
                assert_eq!(ids(s, Some(max)), expected, "{:?} max {max}", s.format());
            }
        }
        // A file that cannot split is one split, whatever the size asked.
        let gz = dir.path().join("t.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).expect("create"),
            flate2::Compression::default(),
        );
        std::io::Write::write_all(&mut enc, &std::fs::read(&csv_path).expect("read")).expect("gz");
        enc.finish().expect("gz");
        let s = scan(FileFormat::Csv, &gz, &[("header", "true")]);
        assert_eq!(s.splits(13).len(), 1);
        assert_eq!(ids(&s, Some(13)), expected);
        let s = scan(FileFormat::Json, &json_path, &[("multiLine", "true")]);
        assert_eq!(s.splits(13).len(), 1);
    }
}
