//! A CSV scan: its files and schema planned once ([`CsvScan`]), then read by the shared text
//! stream with Spark's pushed filters applied while records convert: records are lines (or
//! span lines with `multiLine`), fields convert in file order, so a conjunct is checked at
//! the position of its last field as Spark's `OrderedFilters` checks it.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::builder::{Decimal128Builder, PrimitiveBuilder, StringBuilder};
use arrow_array::types::{Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{ArrayRef, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{Config, Result};
use ferrospark_expr::Expr;

use crate::listing::{list_files, Listing};
use crate::text::{
    fill, open_text, read_text, text_splits, Charset, FileRanges, FileScanPlan, PlanSpec, RawRows,
    RecordReader, TextStream,
};
use ferrospark_expr::csv::convert::{convert_column, decimal_bytes, java_long_bytes};
use ferrospark_expr::csv::infer::{infer_column, Inferred};
use ferrospark_expr::csv::tokenize::{can_stop_early, Extent, Text, Tokenizer};
use ferrospark_expr::csv::CsvOptions;

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
    plan: Arc<FileScanPlan>,
    options: Arc<CsvOptions>,
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
        let table = match schema {
            Some(s) => s,
            None => Self::discover(&listing, &options, &cfg)?,
        };
        let spec = PlanSpec {
            table,
            corrupt_column: &options.corrupt_column,
            columns,
            filter,
            mode: options.mode,
            batch_size: options.batch_size,
            pushdown_key: "spark.sql.csv.filterPushdown.enabled",
        };
        let plan = FileScanPlan::new(listing, spec, cfg)?;
        Ok(Self {
            plan: Arc::new(plan),
            options: Arc::new(options),
        })
    }

    /// The columns of a scan without a schema: from the first record, typed by inference
    /// when asked.
    fn discover(listing: &Listing, o: &CsvOptions, cfg: &Config) -> Result<SchemaRef> {
        let mut names: Option<Vec<String>> = None;
        let mut samples: Vec<Vec<Option<String>>> = Vec::new();
        let step = (1.0 / o.sampling_ratio).round().max(1.0) as usize;
        for file in &listing.files {
            // Without inference the first record is all that is read (Spark reads one line).
            let text = if o.infer_schema {
                read_text(&file.path, o.charset)?
            } else {
                first_record_text(&file.path, o)?
            };
            let mut t = Tokenizer::new(&text, o);
            let mut first = true;
            let mut n = 0usize;
            while let Some(r) = t.next_record() {
                if first && names.is_none() {
                    names = Some(if o.header {
                        safe_header(
                            &r.iter()
                                .map(|f| f.get(&text).map(|t| t.into_owned()))
                                .collect::<Vec<_>>(),
                        )
                    } else {
                        (0..r.len()).map(|i| format!("_c{i}")).collect()
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
                    samples.push(
                        r.iter()
                            .map(|f| f.get(&text).map(|t| t.into_owned()))
                            .collect(),
                    );
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

    /// The planned scan (schema, files, counters).
    pub fn plan(&self) -> &FileScanPlan {
        &self.plan
    }

    /// Reads the scan.
    pub fn stream(&self) -> Result<TextStream> {
        self.stream_only(None)
    }

    /// Reads the byte ranges `only` names (a Spark task's splits), or every file.
    pub fn stream_only(&self, only: Option<&FileRanges>) -> Result<TextStream> {
        TextStream::new(self.plan.clone(), self.records(), only)
    }

    /// The files cut into splits of at most `max_bytes` (see [`crate::FileScan::splits`]).
    pub fn splits(&self, max_bytes: u64) -> Vec<(PathBuf, u64, u64)> {
        text_splits(&self.plan, &self.records(), max_bytes)
    }

    fn records(&self) -> CsvRecords {
        // Spark's parser counts a record's fields only when it reads them all: with column
        // pruning it selects the needed ones, and a record of another length is not
        // malformed for that (unless the corrupt-record column is asked for, which turns
        // pruning off).
        let pruning = self
            .plan
            .cfg
            .get_bool("spark.sql.csv.parser.columnPruning.enabled", true)
            .unwrap_or(true);
        CsvRecords {
            options: self.options.clone(),
            width: self.plan.data.fields().len(),
            always_counted: !pruning || self.plan.corrupt.is_some(),
        }
    }
}

/// The start of `path`'s text holding its first record whole (the whole text when shorter).
fn first_record_text(path: &std::path::Path, o: &CsvOptions) -> Result<Vec<u8>> {
    let mut source = open_text(path, o.charset)?;
    let mut text = Vec::new();
    let mut want = 64 << 10;
    loop {
        let more = fill(&mut *source, &mut text, want, path)?;
        let mut t = Tokenizer::new(&text, o);
        if !more || (t.next_record().is_some() && t.position() < text.len()) {
            return Ok(text);
        }
        want *= 2;
    }
}

/// How CSV text splits into records.
struct CsvRecords {
    options: Arc<CsvOptions>,
    /// Fields a well-formed record has.
    width: usize,
    /// Whether a record's field count is checked even when not every field is needed.
    always_counted: bool,
}

impl RecordReader for CsvRecords {
    type Rows = CsvRows;

    fn first_record(&self, text: &[u8]) -> (usize, u64) {
        let mut t = Tokenizer::new(text, &self.options);
        let (pos, line) = (t.position(), 1);
        if self.options.header && t.next_record().is_some() {
            return (t.position(), t.line());
        }
        (pos, line)
    }

    fn whole_file(&self) -> bool {
        self.options.multi_line || self.options.line_sep.is_some()
    }

    fn charset(&self) -> Charset {
        self.options.charset
    }

    /// With records that are lines split by one byte, a record is read only through the
    /// pushed filter's fields, and whole only once it passes.
    fn filter_first(&self) -> bool {
        can_stop_early(&self.options)
    }

    fn records(
        &self,
        text: &[u8],
        (start, end, line): (usize, usize, u64),
        needed: &[usize],
        early: &[usize],
        batch: usize,
        each: &mut dyn FnMut(CsvRows) -> Result<()>,
    ) -> Result<()> {
        let width = needed.iter().max().map_or(0, |m| m + 1);
        let mut wanted = vec![false; width];
        for &i in needed {
            wanted[i] = true;
        }
        let counted = self.always_counted || needed.len() == self.width;
        let last_needed = needed.iter().max().copied();
        let filter_last = early.iter().filter_map(|&p| needed.get(p).copied()).max();
        // Where a record's reading stops, and whether a record the filter keeps is read again
        // whole (for its later fields, or its field count).
        let (stop, reread) = match (counted, filter_last) {
            (true, f) => (f, f.is_some()),
            (false, Some(f)) => (Some(f), Some(f) < last_needed),
            (false, None) => (Some(last_needed.unwrap_or(0)), false),
        };
        let mut t = Tokenizer::resume(&text[..end], &self.options, start, line)
            .keeping(&wanted)
            .stopping_after(stop);
        let stride = needed.len();
        loop {
            let cap = batch.min(1 << 16);
            let mut values = Vec::with_capacity(cap * stride);
            let mut extents = Vec::with_capacity(cap);
            while extents.len() < batch {
                match t.next_into(&mut values) {
                    Some(e) => {
                        // A short record lacks its last needed fields: NULL.
                        values.resize((extents.len() + 1) * stride, Text::Null);
                        extents.push(e);
                    }
                    None => break,
                }
            }
            if extents.is_empty() {
                return Ok(());
            }
            each(CsvRows {
                values,
                extents,
                stride,
                width: counted.then_some(self.width),
                options: self.options.clone(),
                wanted: wanted.clone(),
                reread,
            })?;
        }
    }
}

/// A batch of CSV records: the needed fields of each (`stride` a record, in `needed`'s
/// order), and where each lies.
struct CsvRows {
    values: Vec<Text>,
    extents: Vec<Extent>,
    stride: usize,
    /// The field count a well-formed record has, when counts are checked.
    width: Option<usize>,
    options: Arc<CsvOptions>,
    /// The fields kept (by position in the record).
    wanted: Vec<bool>,
    /// Whether records read partly are read again whole once the filter keeps them.
    reread: bool,
}

impl RawRows for CsvRows {
    fn len(&self) -> usize {
        self.extents.len()
    }

    /// A record read partly has not been counted yet: its count comes with
    /// [`RawRows::finish`].
    fn malformed(&self) -> Vec<bool> {
        match self.width {
            Some(width) => self
                .extents
                .iter()
                .map(|e| !e.partial && e.fields != width)
                .collect(),
            None => vec![false; self.extents.len()],
        }
    }

    /// Reads the records the filter kept again, whole: their later fields and field count.
    fn finish(&mut self, text: &[u8]) {
        if !self.reread {
            return;
        }
        let stride = self.stride;
        let mut fields = Vec::with_capacity(stride);
        for (r, e) in self.extents.iter_mut().enumerate() {
            if !e.partial {
                continue;
            }
            fields.clear();
            let mut t =
                Tokenizer::resume(text, &self.options, e.start, e.line).keeping(&self.wanted);
            if let Some(whole) = t.next_into(&mut fields) {
                fields.resize(stride, Text::Null);
                for (slot, v) in self.values[r * stride..(r + 1) * stride]
                    .iter_mut()
                    .zip(fields.drain(..))
                {
                    *slot = v;
                }
                *e = whole;
            }
        }
    }

    fn convert(
        &self,
        text: &[u8],
        k: usize,
        to: &DataType,
        cfg: &Config,
    ) -> Result<(ArrayRef, Vec<bool>)> {
        let n = self.extents.len();
        let column = || self.values.iter().skip(k).step_by(self.stride.max(1));
        // Numbers convert straight from the text, no string column between (they read only
        // ASCII, so text that is not UTF-8 fails as it would as a string).
        let bytes = || {
            column().map(|v| match v {
                Text::Span(s, e) => Some(&text[*s..*e]),
                Text::Owned(t) => Some(t.as_bytes()),
                Text::Null => None,
            })
        };
        macro_rules! direct {
            ($builder:expr, $parse:expr) => {{
                let mut b = $builder;
                let mut bad = Vec::with_capacity(n);
                for t in bytes() {
                    let v = t.and_then($parse);
                    bad.push(t.is_some() && v.is_none());
                    b.append_option(v);
                }
                (b.finish(), bad)
            }};
        }
        macro_rules! ints {
            ($t:ty) => {{
                let (a, bad) = direct!(PrimitiveBuilder::<$t>::with_capacity(n), |t| {
                    java_long_bytes(t).and_then(|x| x.try_into().ok())
                });
                return Ok((Arc::new(a), bad));
            }};
        }
        match to {
            DataType::Decimal128(p, s) => {
                let (a, bad) = direct!(Decimal128Builder::with_capacity(n), |t| {
                    decimal_bytes(t, *p, *s)
                });
                return Ok((Arc::new(a.with_precision_and_scale(*p, *s)?), bad));
            }
            DataType::Int64 => ints!(Int64Type),
            DataType::Int32 => ints!(Int32Type),
            DataType::Int16 => ints!(Int16Type),
            DataType::Int8 => ints!(Int8Type),
            _ => {}
        }
        let mut b = StringBuilder::with_capacity(n, n * 8);
        for v in column() {
            match v {
                // Valid UTF-8 (nearly always) goes straight from the input to the column.
                Text::Span(s, e) => match std::str::from_utf8(&text[*s..*e]) {
                    Ok(t) => b.append_value(t),
                    Err(_) => b.append_value(String::from_utf8_lossy(&text[*s..*e])),
                },
                Text::Owned(t) => b.append_value(t),
                Text::Null => b.append_null(),
            }
        }
        let column: StringArray = b.finish();
        convert_column(&column, to, &self.options, cfg)
    }

    fn retain(&mut self, keep: &[bool]) {
        let stride = self.stride;
        let mut kept = 0;
        for (r, k) in keep.iter().enumerate() {
            if *k {
                if kept != r {
                    self.extents[kept] = self.extents[r];
                    for f in 0..stride {
                        self.values.swap(kept * stride + f, r * stride + f);
                    }
                }
                kept += 1;
            }
        }
        self.extents.truncate(kept);
        self.values.truncate(kept * stride);
    }

    fn span(&self, row: usize) -> (usize, usize, u64) {
        let e = &self.extents[row];
        (e.start, e.end, e.line)
    }
}
