//! A CSV scan: its files and schema planned once ([`CsvScan`]), then read as a stream of
//! Arrow batches ([`CsvStream`]) with Spark's pushed filters applied while records convert.
//!
//! ```text
//!   file bytes (decompressed by extension) --Tokenizer--> records (text fields)
//!     --> a batch of records, one text column per needed field
//!     --> field 0 converted, predicates whose last field is 0 drop rows
//!     --> field 1 converted (surviving rows only), predicates at 1 drop rows ...
//!     --> mode (malformed rows kept / dropped / an error), corrupt-record column
//!     --> partition columns, the whole filter again, the requested columns
//! ```
//!
//! Filters are placed as Spark's `OrderedFilters` places them: a conjunct is checked once
//! every field it reads has been converted, at the position of its last field; a row that
//! fails it has no further field converted. Reading every field first gives the same rows
//! (`spark.sql.csv.filterPushdown.enabled=false`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{Config, FerroError, MetricValue, MetricsSet, Result};
use ferrospark_expr::{bind_predicate, evaluate_predicate, BindContext, Expr};

use super::convert::{convert_column, keep};
use super::infer::{infer_column, Inferred};
use super::options::{CsvOptions, ParseMode};
use super::tokenize::{Record, Tokenizer};
use crate::listing::{list_files, Listing};

/// The counters a CSV scan keeps.
pub const CSV_METRICS: &[(&str, MetricValue)] = &[
    ("files", MetricValue::Count),
    ("bytes_read", MetricValue::Bytes),
    ("rows_read", MetricValue::Count),
    ("rows_skipped_early", MetricValue::Count),
    ("fields_not_converted", MetricValue::Count),
    ("malformed_rows", MetricValue::Count),
    ("output_rows", MetricValue::Count),
];

/// The text of `path`, decompressed by its extension (`.gz`, `.bz2`, `.zst`).
fn read_text(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| FerroError::io(path, e))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut out = Vec::new();
    let decoded = match ext.as_str() {
        "gz" | "gzip" => flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map(|_| out),
        "bz2" => bzip2::read::MultiBzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map(|_| out),
        "zst" | "zstd" => zstd::stream::decode_all(&raw[..]),
        _ => return Ok(raw),
    };
    decoded.map_err(|e| FerroError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(e.kind(), format!("cannot decompress ({ext}): {e}")),
    })
}

/// Spark's `makeSafeHeader`: an empty name becomes `_c{i}`, and names repeated (ignoring
/// case) get their position appended.
fn safe_header(names: &[Option<String>]) -> Vec<String> {
    let lower: Vec<String> = names
        .iter()
        .map(|n| n.clone().unwrap_or_default().to_lowercase())
        .collect();
    names
        .iter()
        .enumerate()
        .map(|(i, n)| match n {
            None => format!("_c{i}"),
            Some(n) if n.is_empty() => format!("_c{i}"),
            Some(n) if lower.iter().filter(|l| **l == lower[i]).count() > 1 => format!("{n}{i}"),
            Some(n) => n.clone(),
        })
        .collect()
}

/// A planned CSV scan.
#[derive(Debug)]
pub struct CsvScan {
    listing: Listing,
    options: CsvOptions,
    cfg: Config,
    /// The files' columns (the corrupt-record column excluded).
    data: SchemaRef,
    /// The files' columns with the corrupt-record column, as a schema to read them with again.
    table: SchemaRef,
    /// The corrupt-record column's position in `output`, when requested.
    corrupt: Option<usize>,
    /// What the scan returns.
    output: SchemaRef,
    filter: Option<Expr>,
    metrics: MetricsSet,
}

impl CsvScan {
    /// Plans a scan of `paths` (files or directories, hive partitions too). `schema` is the
    /// user's (it may name the corrupt-record column, a string); without it the columns come
    /// from the first record (its values with `header`) and are strings, or inferred with
    /// `inferSchema`. `columns` selects the output; `filter` (over column names) drops rows.
    pub fn try_new(
        paths: &[PathBuf],
        schema: Option<SchemaRef>,
        columns: Option<Vec<String>>,
        filter: Option<Expr>,
        options: CsvOptions,
        cfg: Config,
    ) -> Result<Self> {
        let listing = list_files(paths)?;
        let (data, corrupt_field) = match schema {
            Some(s) => {
                let corrupt: Vec<&Arc<Field>> = s
                    .fields()
                    .iter()
                    .filter(|f| f.name() == &options.corrupt_column)
                    .collect();
                if let Some(f) = corrupt.first() {
                    if f.data_type() != &DataType::Utf8 {
                        return Err(FerroError::Analysis(format!(
                            "[INVALID_CORRUPT_RECORD_TYPE] The column `{}` for corrupt records must have the nullable STRING type, but got {}.",
                            f.name(),
                            f.data_type()
                        )));
                    }
                }
                let data: Vec<Field> = s
                    .fields()
                    .iter()
                    .filter(|f| f.name() != &options.corrupt_column)
                    .map(|f| f.as_ref().clone().with_nullable(true))
                    .collect();
                (
                    Arc::new(Schema::new(data)),
                    corrupt.first().map(|f| (*f).clone()),
                )
            }
            None => (Self::discover(&listing, &options, &cfg)?, None),
        };
        let table = Arc::new(Schema::new(schema_order(&data, corrupt_field.as_ref())));
        let mut all: Vec<Arc<Field>> = table.fields().iter().cloned().collect();
        let corrupt_at_full = corrupt_field
            .as_ref()
            .and_then(|c| all.iter().position(|f| f.name() == c.name()));
        for f in &listing.partition_fields {
            all.push(Arc::new(f.clone()));
        }
        let full = Arc::new(Schema::new(all));
        let output = match &columns {
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
            None => full.clone(),
        };
        let corrupt = corrupt_at_full.and_then(|_| {
            output
                .fields()
                .iter()
                .position(|f| f.name() == &options.corrupt_column)
        });
        Ok(Self {
            listing,
            options,
            cfg,
            data,
            table,
            corrupt,
            output,
            filter,
            metrics: MetricsSet::new(CSV_METRICS),
        })
    }

    /// The columns of a scan without a schema: from the first record, typed by inference
    /// when asked.
    fn discover(listing: &Listing, o: &CsvOptions, cfg: &Config) -> Result<SchemaRef> {
        let mut names: Option<Vec<String>> = None;
        let mut samples: Vec<Vec<Option<String>>> = Vec::new();
        let step = (1.0 / o.sampling_ratio).round().max(1.0) as usize;
        for file in &listing.files {
            let text = read_text(&file.path)?;
            let mut t = Tokenizer::new(&text, o);
            let mut first = true;
            let mut n = 0usize;
            while let Some(r) = t.next_record() {
                if first && names.is_none() {
                    names = Some(if o.header {
                        safe_header(&r.fields)
                    } else {
                        (0..r.fields.len()).map(|i| format!("_c{i}")).collect()
                    });
                }
                let header_line = first && o.header;
                first = false;
                if header_line {
                    continue;
                }
                if !o.infer_schema {
                    break;
                }
                if n.is_multiple_of(step) {
                    samples.push(r.fields);
                }
                n += 1;
            }
            if names.is_some() && !o.infer_schema {
                break;
            }
        }
        let names = names.unwrap_or_default();
        let tz = cfg.session_time_zone().to_string();
        let fields = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let kind = if o.infer_schema {
                    let column: StringArray = samples
                        .iter()
                        .map(|r| r.get(i).cloned().flatten())
                        .collect();
                    infer_column(&column, o, cfg)?
                } else {
                    Inferred::String
                };
                Ok(Field::new(name, kind.data_type(&tz), true))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(Schema::new(fields)))
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
        self.listing.files.iter().map(|f| f.size).sum()
    }

    /// The scan's counters.
    pub fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }

    /// The files read.
    pub fn files(&self) -> Vec<PathBuf> {
        self.listing.files.iter().map(|f| f.path.clone()).collect()
    }

    /// Reads the scan.
    pub fn stream(self: &Arc<Self>) -> Result<CsvStream> {
        CsvStream::new(self.clone())
    }
}

/// The user's fields in order, the corrupt-record column where the user put it.
fn schema_order(data: &SchemaRef, corrupt: Option<&Arc<Field>>) -> Vec<Arc<Field>> {
    let mut out: Vec<Arc<Field>> = data.fields().iter().cloned().collect();
    if let Some(c) = corrupt {
        out.push(c.clone());
    }
    out
}

/// Bytes of one piece of a file converted on its own.
const CHUNK_BYTES: usize = 4 << 20;

/// The records of `text` from `start` (line `line`) in pieces of about [`CHUNK_BYTES`], each
/// ending at a line end: records are lines unless `multiLine` (then one piece), and each
/// piece knows its first line.
fn chunks(text: &[u8], start: usize, line: u64, o: &CsvOptions) -> Vec<(usize, usize, u64)> {
    if start >= text.len() {
        return Vec::new();
    }
    if o.multi_line || o.line_sep.is_some() {
        return vec![(start, text.len(), line)];
    }
    let mut out = Vec::new();
    let (mut at, mut line) = (start, line);
    while at < text.len() {
        let guess = (at + CHUNK_BYTES).min(text.len());
        let end = match memchr::memchr(b'\n', &text[guess..]) {
            Some(i) => guess + i + 1,
            None => text.len(),
        };
        out.push((at, end, line));
        line += memchr::memchr_iter(b'\n', &text[at..end]).count() as u64;
        at = end;
    }
    out
}

/// A conjunct pushed into conversion: checked once field `at` has been converted.
#[derive(Debug)]
struct Pushed {
    at: usize,
    predicate: ferrospark_expr::PhysicalExpr,
}

/// The batches of a [`CsvScan`].
pub struct CsvStream {
    scan: Arc<CsvScan>,
    /// Fields converted, in file order: those the output or the filter read.
    needed: Vec<usize>,
    /// Which fields of a record are kept (those in `needed`).
    wanted: Vec<bool>,
    /// Conjuncts by the position in `needed` of their last field.
    pushed: Vec<Pushed>,
    /// The whole filter over `needed` fields then partition columns.
    post: Option<ferrospark_expr::PhysicalExpr>,
    /// Schema of the converted fields then partition columns.
    work: SchemaRef,
    /// The file being read, and the next one.
    file: usize,
    next_file: usize,
    text: Vec<u8>,
    /// The open file's records in pieces converted in parallel: (start, end, first line).
    chunks: Vec<(usize, usize, u64)>,
    next_chunk: usize,
    /// Converted batches not handed out yet.
    pending: std::collections::VecDeque<RecordBatch>,
    done: bool,
}

impl std::fmt::Debug for CsvStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvStream")
            .field("file", &self.file)
            .finish()
    }
}

fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    if let Expr::Binary {
        left,
        op: ferrospark_expr::BinaryOp::And,
        right,
    } = e
    {
        conjuncts(left, out);
        conjuncts(right, out);
    } else {
        out.push(e.clone());
    }
}

impl CsvStream {
    fn new(scan: Arc<CsvScan>) -> Result<Self> {
        let data = &scan.data;
        let partition: Vec<Field> = scan.listing.partition_fields.clone();
        let refs: Vec<String> = scan
            .filter
            .as_ref()
            .map(|f| f.column_refs())
            .unwrap_or_default();
        let wanted = |name: &str| {
            scan.output.fields().iter().any(|f| f.name() == name)
                || refs.iter().any(|r| r.eq_ignore_ascii_case(name))
        };
        let needed: Vec<usize> = (0..data.fields().len())
            .filter(|&i| wanted(data.field(i).name()))
            .collect();
        let mut fields: Vec<Field> = needed.iter().map(|&i| data.field(i).clone()).collect();
        fields.extend(partition.iter().cloned());
        let work = Arc::new(Schema::new(fields));
        let bctx = BindContext::for_session(&work, &scan.cfg);
        let post = scan
            .filter
            .as_ref()
            .map(|f| bind_predicate(f, &bctx))
            .transpose()?;
        let mut pushed = Vec::new();
        let enabled = scan
            .cfg
            .get_bool("spark.sql.csv.filterPushdown.enabled", true)?;
        if let (Some(f), true) = (&scan.filter, enabled) {
            let mut parts = Vec::new();
            conjuncts(f, &mut parts);
            for c in parts {
                let cols = c.column_refs();
                let positions: Option<Vec<usize>> = cols
                    .iter()
                    .map(|n| {
                        needed
                            .iter()
                            .position(|&i| data.field(i).name().eq_ignore_ascii_case(n))
                    })
                    .collect();
                // Conjuncts over partition columns (or none) wait for the whole filter.
                let Some(positions) = positions.filter(|p| !p.is_empty()) else {
                    continue;
                };
                let at = positions.into_iter().max().unwrap_or(0);
                pushed.push(Pushed {
                    at,
                    predicate: bind_predicate(&c, &bctx)?,
                });
            }
        }
        let mut wanted = vec![false; data.fields().len()];
        for &i in &needed {
            wanted[i] = true;
        }
        Ok(Self {
            scan,
            needed,
            wanted,
            pushed,
            post,
            work,
            file: 0,
            next_file: 0,
            text: Vec::new(),
            chunks: Vec::new(),
            next_chunk: 0,
            pending: Default::default(),
            done: false,
        })
    }

    /// Reads the next file with records and cuts it into pieces; false when none is left.
    fn open_next(&mut self) -> Result<bool> {
        let o = &self.scan.options;
        while self.next_file < self.scan.listing.files.len() {
            self.file = self.next_file;
            self.next_file += 1;
            let path = &self.scan.listing.files[self.file].path;
            self.text = read_text(path)?;
            self.scan.metrics.add("files", 1);
            self.scan.metrics.add("bytes_read", self.text.len() as u64);
            let mut t = Tokenizer::new(&self.text, o);
            let (mut pos, mut line) = (t.position(), 1);
            if o.header && t.next_record().is_some() {
                pos = t.position();
                line = t.line();
            }
            self.chunks = chunks(&self.text, pos, line, o);
            self.next_chunk = 0;
            if !self.chunks.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The batches of the records in `start..end` of the open file, whose first line is
    /// `line`.
    fn convert_chunk(&self, start: usize, end: usize, line: u64) -> Result<Vec<RecordBatch>> {
        let o = &self.scan.options;
        let mut t = Tokenizer::resume(&self.text[..end], o, start, line).keeping(&self.wanted);
        let mut out = Vec::new();
        loop {
            let mut records = Vec::with_capacity(o.batch_size.min(1 << 16));
            while records.len() < o.batch_size {
                match t.next_record() {
                    Some(r) => records.push(r),
                    None => break,
                }
            }
            if records.is_empty() {
                return Ok(out);
            }
            let b = self.convert(records)?;
            if b.num_rows() > 0 {
                out.push(b);
            }
        }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        use rayon::prelude::*;
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Ok(Some(b));
            }
            if self.done {
                return Ok(None);
            }
            if self.next_chunk >= self.chunks.len() {
                if !self.open_next()? {
                    self.done = true;
                }
                continue;
            }
            let take = rayon::current_num_threads().max(1);
            let group: Vec<(usize, usize, u64)> = self.chunks
                [self.next_chunk..(self.next_chunk + take).min(self.chunks.len())]
                .to_vec();
            self.next_chunk += group.len();
            let this = &*self;
            let outs: Vec<Result<Vec<RecordBatch>>> = group
                .par_iter()
                .map(|&(s, e, l)| this.convert_chunk(s, e, l))
                .collect();
            for o in outs {
                self.pending.extend(o?);
            }
        }
    }

    /// A batch of records converted, filtered and shaped as the output.
    fn convert(&self, records: Vec<Record>) -> Result<RecordBatch> {
        let scan = &self.scan;
        let o = &scan.options;
        let m = &scan.metrics;
        let width = scan.data.fields().len();
        let n = records.len();
        m.add("rows_read", n as u64);
        let mut malformed: Vec<bool> = records.iter().map(|r| r.fields.len() != width).collect();
        let mut columns: Vec<StringArray> = self
            .needed
            .iter()
            .map(|&i| {
                let mut b = StringBuilder::with_capacity(n, n * 8);
                for r in &records {
                    b.append_option(r.fields.get(i).cloned().flatten());
                }
                b.finish()
            })
            .collect();
        let mut raw: Vec<String> = if scan.corrupt.is_some() || o.mode == ParseMode::FailFast {
            records
                .iter()
                .map(|r| String::from_utf8_lossy(&self.text[r.start..r.end]).into_owned())
                .collect()
        } else {
            Vec::new()
        };
        let mut lines: Vec<u64> = records.iter().map(|r| r.line).collect();
        drop(records);
        let mut converted: Vec<ArrayRef> = Vec::with_capacity(self.needed.len());
        for (k, &i) in self.needed.iter().enumerate() {
            let to = scan.data.field(i).data_type();
            let (array, bad) = convert_column(&columns[k], to, o, &scan.cfg)?;
            for (row, b) in bad.into_iter().enumerate() {
                malformed[row] |= b;
            }
            converted.push(array);
            let here: Vec<&Pushed> = self.pushed.iter().filter(|p| p.at == k).collect();
            if here.is_empty() {
                continue;
            }
            let rows = converted[0].len();
            let mut probe: Vec<ArrayRef> = converted.clone();
            for f in &self.work.fields()[converted.len()..] {
                probe.push(new_null_array(f.data_type(), rows));
            }
            let batch = RecordBatch::try_new(self.work.clone(), probe)?;
            let mut pass = vec![true; rows];
            for p in here {
                let ok = evaluate_predicate(&p.predicate, &batch)?;
                for (r, v) in pass.iter_mut().enumerate() {
                    *v &= ok.is_valid(r) && ok.value(r);
                }
            }
            let dropped = pass.iter().filter(|v| !**v).count();
            if dropped == 0 {
                continue;
            }
            m.add("rows_skipped_early", dropped as u64);
            m.add(
                "fields_not_converted",
                (dropped * (self.needed.len() - k - 1)) as u64,
            );
            let mask = BooleanArray::from(pass.clone());
            for c in converted.iter_mut() {
                *c = keep(c, &mask)?;
            }
            for c in columns.iter_mut().skip(k + 1) {
                *c = arrow_select::filter::filter(&*c, &mask)?
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .cloned()
                    .ok_or_else(|| FerroError::Internal("a text column".into()))?;
            }
            let mut it = pass.iter();
            malformed.retain(|_| *it.next().unwrap_or(&false));
            if !raw.is_empty() {
                let mut it = pass.iter();
                raw.retain(|_| *it.next().unwrap_or(&false));
            }
            let mut it = pass.iter();
            lines.retain(|_| *it.next().unwrap_or(&false));
        }
        let rows = malformed.len();
        let bad_rows = malformed.iter().filter(|b| **b).count();
        m.add("malformed_rows", bad_rows as u64);
        let path = &scan.listing.files[self.file].path;
        match o.mode {
            ParseMode::FailFast if bad_rows > 0 => {
                let at = malformed.iter().position(|b| *b).unwrap_or(0);
                return Err(FerroError::Malformed {
                    path: path.clone(),
                    line: lines[at],
                    message: format!(
                        "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in record parsing: [{}]. Parse Mode: FAILFAST. To process malformed records as null result, try setting the option 'mode' as 'PERMISSIVE'.",
                        raw[at]
                    ),
                });
            }
            _ => {}
        }
        let keep_rows: Option<BooleanArray> = (o.mode == ParseMode::DropMalformed && bad_rows > 0)
            .then(|| malformed.iter().map(|b| Some(!b)).collect());
        // Partition values of this file, one per row.
        let scalars = scan.listing.partition_scalars(self.file)?;
        let mut work_cols = converted;
        for s in &scalars {
            let idx = arrow_array::UInt32Array::from(vec![0u32; rows]);
            work_cols.push(arrow_select::take::take(s.as_ref(), &idx, None)?);
        }
        let mut batch = RecordBatch::try_new_with_options(
            self.work.clone(),
            work_cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?;
        let corrupt: Option<ArrayRef> = scan.corrupt.map(|_| {
            Arc::new(
                raw.iter()
                    .zip(&malformed)
                    .map(|(t, b)| b.then(|| t.clone()))
                    .collect::<StringArray>(),
            ) as ArrayRef
        });
        let mut corrupt = corrupt;
        if let Some(mask) = &keep_rows {
            batch = arrow_select::filter::filter_record_batch(&batch, mask)?;
            corrupt = corrupt.map(|c| keep(&c, mask)).transpose()?;
        }
        if let Some(post) = &self.post {
            let ok = evaluate_predicate(post, &batch)?;
            let mask: BooleanArray = (0..ok.len())
                .map(|r| Some(ok.is_valid(r) && ok.value(r)))
                .collect();
            batch = arrow_select::filter::filter_record_batch(&batch, &mask)?;
            corrupt = corrupt.map(|c| keep(&c, &mask)).transpose()?;
        }
        let columns: Vec<ArrayRef> = scan
            .output
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if Some(i) == scan.corrupt {
                    return Ok(corrupt
                        .clone()
                        .unwrap_or_else(|| new_null_array(&DataType::Utf8, batch.num_rows())));
                }
                let at = self
                    .work
                    .fields()
                    .iter()
                    .position(|w| w.name() == f.name())
                    .ok_or_else(|| FerroError::Internal(format!("no column {}", f.name())))?;
                Ok(batch.column(at).clone())
            })
            .collect::<Result<Vec<_>>>()?;
        let out = RecordBatch::try_new_with_options(
            scan.output.clone(),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?;
        m.add("output_rows", out.num_rows() as u64);
        Ok(out)
    }
}

impl Iterator for CsvStream {
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
