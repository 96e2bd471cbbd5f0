//! An Avro scan: files and schema planned once ([`AvroScan`]), then read file by file
//! ([`AvroStream`]) through `arrow-avro`, decoding only the needed fields, with Spark's types.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_avro::reader::{Reader, ReaderBuilder};
use arrow_avro::schema::AvroSchema;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::Expr;

use super::framing::check_framing;
use crate::listing::list_files;
use crate::text::assemble::Assembler;
use crate::text::{flag, ParseMode, PlanSpec, RawRows, TextPlan};

/// Spark's Avro read options.
#[derive(Debug, Clone, Default)]
pub struct AvroOptions {
    /// A reader schema (Avro JSON) the files' records are resolved to: fields added with
    /// defaults, dropped, reordered, types promoted (`avroSchema`, or the file `avroSchemaUrl`
    /// names).
    pub avro_schema: Option<String>,
    /// Read only files ending in `.avro` (`ignoreExtension=false`; all files by default).
    pub only_avro_extension: bool,
    /// Rows per output batch.
    pub batch_size: usize,
}

impl AvroOptions {
    /// Options from Spark's names (case-insensitive); unknown names are ignored.
    pub fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut o = AvroOptions {
            batch_size: 8192,
            ..Default::default()
        };
        for (key, value) in options {
            match key.to_ascii_lowercase().as_str() {
                "avroschema" => o.avro_schema = Some(value.clone()),
                "avroschemaurl" => {
                    let text = std::fs::read_to_string(value)
                        .map_err(|e| FerroError::io(Path::new(value), e))?;
                    o.avro_schema = Some(text);
                }
                "ignoreextension" => o.only_avro_extension = !flag("Avro", key, value)?,
                _ => {}
            }
        }
        Ok(o)
    }
}

/// Spark's type for an Arrow type `arrow-avro` decodes (enums are strings, fixed is binary,
/// timestamps are microseconds, times are integers).
fn spark_type(t: &DataType) -> Result<DataType> {
    Ok(match t {
        DataType::Dictionary(_, v) if v.is_string() => DataType::Utf8,
        DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
        DataType::FixedSizeBinary(_) | DataType::LargeBinary | DataType::BinaryView => {
            DataType::Binary
        }
        DataType::Timestamp(_, Some(_)) => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        DataType::Timestamp(_, None) => DataType::Timestamp(TimeUnit::Microsecond, None),
        DataType::Time32(_) => DataType::Int32,
        DataType::Time64(_) => DataType::Int64,
        DataType::List(f) | DataType::LargeList(f) => {
            DataType::List(Arc::new(spark_field(f)?))
        }
        DataType::Struct(fs) => DataType::Struct(spark_fields(fs)?),
        // A map's entries and keys stay non-null, as Arrow requires; values are Spark's.
        DataType::Map(e, sorted) => match e.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                let entries = Fields::from(vec![
                    Field::new(kv[0].name(), spark_type(kv[0].data_type())?, false),
                    spark_field(&kv[1])?,
                ]);
                DataType::Map(
                    Arc::new(Field::new(e.name(), DataType::Struct(entries), false)),
                    *sorted,
                )
            }
            _ => return Err(FerroError::Internal(format!("a map of {e}"))),
        },
        DataType::Union(..) | DataType::Duration(_) | DataType::Interval(_) => {
            return Err(FerroError::Unsupported(format!(
                "[UNSUPPORTED_DATATYPE] Avro values of Arrow type {t} have no Spark type ferrospark reads"
            )))
        }
        other => other.clone(),
    })
}

fn spark_field(f: &Field) -> Result<Field> {
    Ok(Field::new(f.name(), spark_type(f.data_type())?, true))
}

fn spark_fields(fs: &Fields) -> Result<Fields> {
    Ok(fs
        .iter()
        .map(|f| spark_field(f))
        .collect::<Result<Vec<_>>>()?
        .into())
}

/// Spark's error for a file `arrow-avro` cannot read.
fn unreadable(path: &Path, e: impl std::fmt::Display) -> FerroError {
    FerroError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("[FAILED_READ_FILE.NO_HINT] not a readable Avro file: {e}"),
        ),
    }
}

/// A reader of `path` resolving records to `o.avro_schema`, decoding the top-level fields
/// `projection` (all when `None`).
fn open(
    path: &Path,
    o: &AvroOptions,
    projection: Option<Vec<usize>>,
) -> Result<Reader<BufReader<File>>> {
    let file = File::open(path).map_err(|e| FerroError::io(path, e))?;
    let mut b = ReaderBuilder::new()
        .with_batch_size(o.batch_size.max(1))
        .with_utf8_view(false);
    if let Some(s) = &o.avro_schema {
        b = b.with_reader_schema(AvroSchema::new(s.clone()));
    }
    if let Some(p) = projection {
        b = b.with_projection(p);
    }
    b.build(BufReader::with_capacity(1 << 20, file))
        .map_err(|e| unreadable(path, e))
}

/// A planned Avro scan.
#[derive(Debug)]
pub struct AvroScan {
    plan: Arc<TextPlan>,
    options: Arc<AvroOptions>,
}

impl AvroScan {
    /// Plans a scan of `paths` (files or directories, hive partitions too). Without `schema`
    /// the columns are the first file's (resolved to `avroSchema` when given); with it,
    /// fields match the files' by name. `columns` selects the output; `filter` (over column
    /// names) drops rows.
    pub fn try_new(
        paths: &[PathBuf],
        schema: Option<SchemaRef>,
        columns: Option<Vec<String>>,
        filter: Option<Expr>,
        options: AvroOptions,
        cfg: Config,
    ) -> Result<Self> {
        let mut listing = list_files(paths)?;
        if options.only_avro_extension {
            listing
                .files
                .retain(|f| f.path.extension().is_some_and(|e| e == "avro"));
        }
        let table = match schema {
            Some(s) => s,
            None => {
                let first = listing.files.first().ok_or_else(|| {
                    FerroError::Analysis(
                        "[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for Avro. It must be specified manually.".into(),
                    )
                })?;
                let reader = open(&first.path, &options, None)?;
                Arc::new(Schema::new(spark_fields(reader.schema().fields())?))
            }
        };
        let spec = PlanSpec {
            table,
            corrupt_column: "",
            columns,
            filter,
            mode: ParseMode::FailFast,
            batch_size: options.batch_size,
            pushdown_key: "spark.sql.avro.filterPushdown.enabled",
        };
        let mut plan = TextPlan::new(listing, spec, cfg)?;
        // Records decode a block at a time, every needed field at once: nothing is left to
        // skip once a batch exists, so the filter applies once, after decoding, and no early
        // skipping is claimed in the metrics.
        plan.pushdown = false;
        Ok(Self {
            plan: Arc::new(plan),
            options: Arc::new(options),
        })
    }

    /// The planned scan (schema, files, counters).
    pub fn plan(&self) -> &TextPlan {
        &self.plan
    }

    /// Reads the scan.
    pub fn stream(&self) -> Result<AvroStream> {
        Ok(AvroStream {
            asm: Assembler::new(&self.plan, false)?,
            plan: self.plan.clone(),
            options: self.options.clone(),
            next_file: 0,
            file: 0,
            reader: None,
            names: Vec::new(),
            done: false,
        })
    }
}

/// The batches of an [`AvroScan`].
pub struct AvroStream {
    plan: Arc<TextPlan>,
    options: Arc<AvroOptions>,
    asm: Assembler,
    next_file: usize,
    file: usize,
    reader: Option<Reader<BufReader<File>>>,
    /// The open file's decoded columns, by the needed field each one is.
    names: Vec<Option<usize>>,
    done: bool,
}

impl std::fmt::Debug for AvroStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AvroStream")
            .field("file", &self.file)
            .finish()
    }
}

impl AvroStream {
    /// Opens the next file decoding the needed fields it has; false when none is left.
    fn open_next(&mut self) -> Result<bool> {
        let Some(f) = self.plan.listing.files.get(self.next_file) else {
            return Ok(false);
        };
        self.file = self.next_file;
        self.next_file += 1;
        let path = f.path.clone();
        self.plan.metrics.add("files", 1);
        self.plan.metrics.add("bytes_read", f.size);
        check_framing(&path)?;
        let full = open(&path, &self.options, None)?.schema();
        let needed: Vec<&str> = self
            .asm
            .needed
            .iter()
            .map(|&i| self.plan.data.field(i).name().as_str())
            .collect();
        let projection: Vec<usize> = (0..full.fields().len())
            .filter(|&i| needed.contains(&full.field(i).name().as_str()))
            .collect();
        self.names = projection
            .iter()
            .map(|&i| needed.iter().position(|n| *n == full.field(i).name()))
            .collect();
        self.reader = Some(open(&path, &self.options, Some(projection))?);
        Ok(true)
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.done {
                return Ok(None);
            }
            let Some(reader) = self.reader.as_mut() else {
                if !self.open_next()? {
                    self.done = true;
                }
                continue;
            };
            match reader.next() {
                None => self.reader = None,
                Some(Err(e)) => {
                    return Err(unreadable(&self.plan.listing.files[self.file].path, e));
                }
                Some(Ok(batch)) => {
                    let mut columns: Vec<Option<ArrayRef>> = vec![None; self.asm.needed.len()];
                    for (c, k) in batch.columns().iter().zip(&self.names) {
                        if let Some(k) = k {
                            columns[*k] = Some(c.clone());
                        }
                    }
                    let rows = AvroRows {
                        rows: batch.num_rows(),
                        columns,
                    };
                    let out = self.asm.batch(&self.plan, self.file, &[], rows)?;
                    if out.num_rows() > 0 {
                        return Ok(Some(out));
                    }
                }
            }
        }
    }
}

impl Iterator for AvroStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A decoded batch of records: each needed field's column (absent from the file: NULL).
struct AvroRows {
    rows: usize,
    columns: Vec<Option<ArrayRef>>,
}

impl RawRows for AvroRows {
    fn len(&self) -> usize {
        self.rows
    }

    fn malformed(&self) -> Vec<bool> {
        vec![false; self.rows]
    }

    fn convert(
        &self,
        _text: &[u8],
        k: usize,
        to: &DataType,
        _cfg: &Config,
    ) -> Result<(ArrayRef, Vec<bool>)> {
        let out = match &self.columns[k] {
            Some(c) if c.data_type() == to => c.clone(),
            Some(c) => arrow_cast::cast(c.as_ref(), to)?,
            None => new_null_array(to, self.rows),
        };
        Ok((out, vec![false; self.rows]))
    }

    fn retain(&mut self, keep: &[bool]) {
        let mask = arrow_array::BooleanArray::from(keep.to_vec());
        for c in self.columns.iter_mut().flatten() {
            if let Ok(kept) = arrow_select::filter::filter(c.as_ref(), &mask) {
                *c = kept;
            }
        }
        self.rows = keep.iter().filter(|k| **k).count();
    }

    fn text(&self, _text: &[u8], _row: usize) -> String {
        String::new()
    }

    fn line(&self, _row: usize) -> u64 {
        0
    }

    fn record(&self, row: usize) -> usize {
        row
    }
}
