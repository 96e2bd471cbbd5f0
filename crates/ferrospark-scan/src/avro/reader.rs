//! An Avro scan: files and schema planned once ([`AvroScan`]), then read ([`AvroStream`])
//! through `arrow-avro`, decoding only the needed fields, with Spark's types.
//!
//! ```text
//!   file --framing--> header + blocks --grouped into pieces of about 8 MB-->
//!   each piece (the header, then its blocks) decoded by its own arrow-avro reader,
//!   a piece per thread in parallel, batches handed out in file order
//! ```

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_avro::reader::ReaderBuilder;
use arrow_avro::schema::AvroSchema;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::Expr;

use super::framing::check_framing;
use super::unions::{to_spark, union_type};
use crate::listing::list_files;
use crate::text::assemble::Assembler;
use crate::text::{
    byte_splits, convert_in_parallel, file_reads, flag, fused, FileRanges, FileRead, FileScanPlan,
    ParseMode, PlanSpec, RawRows,
};

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
        DataType::Union(fields, _) => union_type(fields, spark_type)?,
        DataType::Duration(_) | DataType::Interval(_) => {
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

/// The Arrow schema `arrow-avro` decodes `path`'s records to (resolved to `o.avro_schema`
/// when given); only the header is read.
fn file_schema(path: &Path, o: &AvroOptions) -> Result<SchemaRef> {
    let file = File::open(path).map_err(|e| FerroError::io(path, e))?;
    let mut b = ReaderBuilder::new().with_utf8_view(false);
    if let Some(s) = &o.avro_schema {
        b = b.with_reader_schema(AvroSchema::new(s.clone()));
    }
    let reader = b
        .build(BufReader::new(file))
        .map_err(|e| unreadable(path, e))?;
    Ok(reader.schema())
}

/// A planned Avro scan.
#[derive(Debug)]
pub struct AvroScan {
    plan: Arc<FileScanPlan>,
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
                let schema = file_schema(&first.path, &options)?;
                Arc::new(Schema::new(spark_fields(schema.fields())?))
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
        let mut plan = FileScanPlan::new(listing, spec, cfg)?;
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
    pub fn plan(&self) -> &FileScanPlan {
        &self.plan
    }

    /// The files cut into splits of at most `max_bytes` (see [`crate::FileScan::splits`]):
    /// every Avro file splits, at its blocks' sync markers.
    pub fn splits(&self, max_bytes: u64) -> Vec<(PathBuf, u64, u64)> {
        byte_splits(&self.plan.listing, max_bytes, |_| true)
    }

    /// Reads the scan.
    pub fn stream(&self) -> Result<AvroStream> {
        self.stream_only(None)
    }

    /// Reads the byte ranges `only` names (a Spark task's splits), or every file.
    pub fn stream_only(&self, only: Option<&FileRanges>) -> Result<AvroStream> {
        Ok(AvroStream {
            asm: Assembler::new(&self.plan, false)?,
            reads: file_reads(&self.plan.listing, only),
            plan: self.plan.clone(),
            options: self.options.clone(),
            next_read: 0,
            file: 0,
            header: Vec::new(),
            pieces: Default::default(),
            projection: Vec::new(),
            names: Vec::new(),
            pending: Default::default(),
            done: false,
        })
    }
}

/// The batches of an [`AvroScan`].
pub struct AvroStream {
    plan: Arc<FileScanPlan>,
    options: Arc<AvroOptions>,
    asm: Assembler,
    /// The files (or splits of them) to read, and the next one.
    reads: Vec<FileRead>,
    next_read: usize,
    file: usize,
    /// The open file's header bytes, and its pieces (byte ranges of whole blocks) not read.
    header: Vec<u8>,
    pieces: std::collections::VecDeque<(u64, u64)>,
    /// The open file's top-level fields decoded, and the needed field each one is.
    projection: Vec<usize>,
    names: Vec<Option<usize>>,
    pending: std::collections::VecDeque<RecordBatch>,
    done: bool,
}

impl std::fmt::Debug for AvroStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AvroStream")
            .field("file", &self.file)
            .finish()
    }
}

/// Compressed bytes of blocks decoded as one piece.
const PIECE_BYTES: u64 = 8 << 20;

impl AvroStream {
    /// Opens the next file: its framing checked, its blocks cut into pieces, the needed fields
    /// it has found; false when no file is left.
    fn open_next(&mut self) -> Result<bool> {
        let Some(read) = self.reads.get(self.next_read).copied() else {
            return Ok(false);
        };
        self.next_read += 1;
        self.file = read.file;
        let f = &self.plan.listing.files[read.file];
        let path = f.path.clone();
        let (start, end) = read.range.unwrap_or((0, f.size));
        self.plan.metrics.add("files", 1);
        // A split reads the blocks whose preceding sync marker starts inside it.
        let framing = check_framing(&path, Some((start, end)))?;
        self.plan.metrics.add(
            "bytes_read",
            framing.blocks.iter().map(|b| b.1).sum::<u64>() + framing.header,
        );
        let full = file_schema(&path, &self.options)?;
        let needed: Vec<&str> = self
            .asm
            .needed
            .iter()
            .map(|&i| self.plan.data.field(i).name().as_str())
            .collect();
        self.projection = (0..full.fields().len())
            .filter(|&i| needed.contains(&full.field(i).name().as_str()))
            .collect();
        self.names = self
            .projection
            .iter()
            .map(|&i| needed.iter().position(|n| *n == full.field(i).name()))
            .collect();
        let file = File::open(&path).map_err(|e| FerroError::io(&path, e))?;
        self.header = vec![0; framing.header as usize];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut self.header, 0)
            .map_err(|e| FerroError::io(&path, e))?;
        self.pieces.clear();
        for (start, len) in framing.blocks {
            match self.pieces.back_mut() {
                Some((s, l)) if *l < PIECE_BYTES && *s + *l == start => *l += len,
                _ => self.pieces.push_back((start, len)),
            }
        }
        Ok(true)
    }

    /// The output batches of the blocks at `start..start + len` of the open file.
    fn decode_piece(&self, (start, len): (u64, u64)) -> Result<Vec<RecordBatch>> {
        let path = &self.plan.listing.files[self.file].path;
        let file = File::open(path).map_err(|e| FerroError::io(path, e))?;
        let mut bytes = Vec::with_capacity(self.header.len() + len as usize);
        bytes.extend_from_slice(&self.header);
        bytes.resize(self.header.len() + len as usize, 0);
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes[self.header.len()..], start)
            .map_err(|e| FerroError::io(path, e))?;
        let mut b = ReaderBuilder::new()
            .with_batch_size(self.options.batch_size.max(1))
            .with_utf8_view(false)
            .with_projection(self.projection.clone());
        if let Some(s) = &self.options.avro_schema {
            b = b.with_reader_schema(AvroSchema::new(s.clone()));
        }
        let reader = b
            .build(std::io::Cursor::new(bytes))
            .map_err(|e| unreadable(path, e))?;
        let mut out = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| unreadable(path, e))?;
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
            let b = self.asm.batch(&self.plan, self.file, &[], rows)?;
            if b.num_rows() > 0 {
                out.push(b);
            }
        }
        Ok(out)
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Ok(Some(b));
            }
            if self.done {
                return Ok(None);
            }
            if self.pieces.is_empty() {
                if !self.open_next()? {
                    self.done = true;
                }
                continue;
            }
            let take = rayon::current_num_threads().max(1).min(self.pieces.len());
            let group: Vec<(u64, u64)> = self.pieces.drain(..take).collect();
            let mut pending = std::mem::take(&mut self.pending);
            let this = &*self;
            convert_in_parallel(&group, |&p| this.decode_piece(p), &mut pending)?;
            self.pending = pending;
        }
    }
}

impl Iterator for AvroStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.next_batch();
        fused(&mut self.done, next)
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
            Some(c) => to_spark(c, to)?,
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

    /// Avro records are never malformed (a bad file is an error), so no text is asked for;
    /// each row is its own record.
    fn span(&self, row: usize) -> (usize, usize, u64) {
        (row, row, 0)
    }
}
