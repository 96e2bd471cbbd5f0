//! A JSON scan: its files and schema planned once ([`JsonScan`]), then read by the shared text
//! stream. A record is a line (a whole file with `multiLine`); an object is a row, an array
//! of objects is a row per object, anything else is a malformed record. A record's fields
//! come in any order, so the filter's fields convert first and each conjunct is checked as
//! soon as its own fields are converted (Spark's `JsonFilters`).

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Schema, SchemaRef};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::types::spark_type_name;
use ferrospark_expr::Expr;

use crate::listing::{list_files, Listing};
use crate::text::{
    pieces, read_text, text_splits, Charset, FileRanges, FileScanPlan, ParseMode, PlanSpec,
    RawRows, RecordReader, TextStream,
};
use ferrospark_expr::json::convert::convert_spans;
use ferrospark_expr::json::infer::{struct_fields, JType, Untyped};
use ferrospark_expr::json::lexer::{decode_string, Kind, Lexer, Malformed, Span};
use ferrospark_expr::json::JsonOptions;

/// A planned JSON scan.
#[derive(Debug)]
pub struct JsonScan {
    plan: Arc<FileScanPlan>,
    options: Arc<JsonOptions>,
}

impl JsonScan {
    /// Plans a scan of `paths` (files or directories, hive partitions too). `schema` is the
    /// user's (it may name the corrupt-record column, a string); without it the schema is
    /// inferred from the records. `columns` selects the output; `filter` (over column names)
    /// drops rows.
    pub fn try_new(
        paths: &[PathBuf],
        schema: Option<SchemaRef>,
        columns: Option<Vec<String>>,
        filter: Option<Expr>,
        options: JsonOptions,
        cfg: Config,
    ) -> Result<Self> {
        let listing = list_files(paths)?;
        let table = match schema {
            Some(s) => {
                check_types(&s)?;
                s
            }
            None => infer(&listing, &options)?,
        };
        let spec = PlanSpec {
            table,
            corrupt_column: &options.corrupt_column,
            columns,
            filter,
            mode: options.mode,
            batch_size: options.batch_size,
            pushdown_key: "spark.sql.json.filterPushdown.enabled",
        };
        let plan = FileScanPlan::new(listing, spec, cfg)?;
        Ok(Self {
            plan: Arc::new(plan),
            options: Arc::new(options),
        })
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

    fn records(&self) -> JsonRecords {
        let names = self
            .plan
            .data
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        JsonRecords {
            options: self.options.clone(),
            names,
        }
    }
}

/// Where records start: past a byte order mark.
fn first_record(text: &[u8]) -> (usize, u64) {
    (
        if text.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            0
        },
        1,
    )
}

/// How a file's text is cut into records.
#[derive(Debug, Clone, Copy)]
enum Cut<'a> {
    /// A record per line.
    Lines,
    /// The whole text is one record (`multiLine`).
    Whole,
    /// Records end at this `lineSep`.
    Sep(&'a [u8]),
}

impl<'a> Cut<'a> {
    fn of(o: &'a JsonOptions) -> Self {
        match (&o.line_sep, o.multi_line) {
            (_, true) => Cut::Whole,
            (Some(sep), false) => Cut::Sep(sep),
            (None, false) => Cut::Lines,
        }
    }
}

/// The records of `text[start..end]`: `(start, end, line)` of each, blank records skipped.
fn records_of(
    text: &[u8],
    (start, end, line): (usize, usize, u64),
    cut: Cut<'_>,
    mut each: impl FnMut(usize, usize, u64) -> Result<()>,
) -> Result<()> {
    let (mut at, mut line) = (start, line);
    match cut {
        Cut::Whole => each(start, end, line),
        Cut::Lines => {
            while at < end {
                let stop = memchr::memchr(b'\n', &text[at..end]).map_or(end, |i| at + i);
                let mut e = stop;
                if e > at && text[e - 1] == b'\r' {
                    e -= 1;
                }
                if text[at..e].iter().any(|c| !c.is_ascii_whitespace()) {
                    each(at, e, line)?;
                }
                at = stop + 1;
                line += 1;
            }
            Ok(())
        }
        Cut::Sep(sep) => {
            let finder = memchr::memmem::Finder::new(sep);
            while at < end {
                let stop = finder.find(&text[at..end]).map_or(end, |i| at + i);
                if text[at..stop].iter().any(|c| !c.is_ascii_whitespace()) {
                    each(at, stop, line)?;
                }
                let next = (stop + sep.len()).min(end);
                line += memchr::memchr_iter(b'\n', &text[at..next]).count() as u64;
                at = next;
            }
            Ok(())
        }
    }
}

/// The root of a record: its objects' spans, or `Err` when the record is malformed. An
/// empty array has none.
fn roots(text: &[u8], start: usize, end: usize, o: &JsonOptions) -> Result<Vec<Span>, Malformed> {
    let mut lx = Lexer::new(&text[..end], start, o);
    let root = lx.value(0)?;
    match root.kind {
        Kind::Object => Ok(vec![root]),
        Kind::Array => array_roots(text, root.start, end, o),
        _ => Err(Malformed),
    }
}

/// The objects of a root array at `start`; `Err` when an element is not an object.
fn array_roots(
    text: &[u8],
    start: usize,
    end: usize,
    o: &JsonOptions,
) -> Result<Vec<Span>, Malformed> {
    let mut out = Vec::new();
    let mut ok = true;
    Lexer::new(&text[..end], start, o).array(0, |_, v| {
        ok &= v.kind == Kind::Object;
        out.push(v);
    })?;
    if ok {
        Ok(out)
    } else {
        Err(Malformed)
    }
}

/// Spark's schema inference over every file (a sample with `samplingRatio`).
fn infer(listing: &Listing, o: &JsonOptions) -> Result<SchemaRef> {
    use rayon::prelude::*;
    let step = (1.0 / o.sampling_ratio).round().max(1.0) as usize;
    let mut root = JType::Null;
    let mut corrupt = false;
    for file in &listing.files {
        let text = read_text(&file.path, o.charset)?;
        let (start, line) = first_record(&text);
        let (parts, _) = pieces(&text, start, line, o.whole_file());
        // Each piece's merged type, whether it had a malformed record, and the first
        // malformed record's line for FAILFAST.
        let typed: Vec<Result<(JType, Option<u64>)>> = parts
            .par_iter()
            .map(|&piece| {
                let mut t = JType::Null;
                let mut bad: Option<u64> = None;
                let mut n = 0usize;
                records_of(&text, piece, Cut::of(o), |s, e, line| {
                    n += 1;
                    if !(n - 1).is_multiple_of(step) {
                        return Ok(());
                    }
                    let found: std::result::Result<Vec<JType>, Untyped> = roots(&text, s, e, o)
                        .map_err(Untyped::from)
                        .and_then(|spans| {
                            spans.into_iter().map(|v| JType::of(&text, v, o)).collect()
                        });
                    match found {
                        Ok(types) => {
                            for ty in types {
                                t = std::mem::replace(&mut t, JType::Null).merge(ty);
                            }
                        }
                        Err(Untyped::Duplicate(name)) => {
                            return Err(Untyped::duplicate_error(&name));
                        }
                        Err(Untyped::Malformed) => {
                            bad.get_or_insert(line);
                        }
                    }
                    Ok(())
                })?;
                Ok((t, bad))
            })
            .collect();
        for r in typed {
            let (t, bad) = r?;
            root = root.merge(t);
            if let Some(line) = bad {
                match o.mode {
                    ParseMode::FailFast => {
                        return Err(FerroError::Malformed {
                            path: file.path.clone(),
                            line,
                            message: "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in schema inference. Parse Mode: FAILFAST.".into(),
                        })
                    }
                    ParseMode::Permissive => corrupt = true,
                    ParseMode::DropMalformed => {}
                }
            }
        }
    }
    let mut fields = match root {
        JType::Struct(f) => f,
        JType::Null => Default::default(),
        // Records of other shapes were malformed; their types do not count.
        _ => Default::default(),
    };
    if corrupt {
        fields.insert(o.corrupt_column.clone(), JType::String);
    }
    let fields = struct_fields(&fields, o)?;
    let mut seen = std::collections::HashSet::new();
    for f in fields.iter() {
        if !seen.insert(f.name().to_lowercase()) {
            return Err(Untyped::duplicate_error(f.name()));
        }
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// How JSON text splits into records.
struct JsonRecords {
    options: Arc<JsonOptions>,
    /// The files' columns by position.
    names: Vec<String>,
}

impl RecordReader for JsonRecords {
    type Rows = JsonRows;

    fn first_record(&self, text: &[u8]) -> (usize, u64) {
        first_record(text)
    }

    fn whole_file(&self) -> bool {
        self.options.whole_file()
    }

    fn charset(&self) -> Charset {
        self.options.charset
    }

    fn filter_first(&self) -> bool {
        true
    }

    fn records(
        &self,
        text: &[u8],
        piece: (usize, usize, u64),
        needed: &[usize],
        early: &[usize],
        batch: usize,
        each: &mut dyn FnMut(JsonRows) -> Result<()>,
    ) -> Result<()> {
        let o = &*self.options;
        let fields = Rc::new(FieldNames::new(
            needed
                .iter()
                .map(|&i| self.names[i].as_bytes().into())
                .collect(),
            early,
        ));
        let width = needed.len();
        let fresh = || JsonRows {
            width,
            spans: Vec::with_capacity(batch.min(1 << 16) * width),
            rows: Vec::with_capacity(batch.min(1 << 16)),
            options: self.options.clone(),
            fields: fields.clone(),
        };
        let mut rows = fresh();
        records_of(text, piece, Cut::of(o), |s, e, line| {
            let mut lx = Lexer::new(&text[..e], s, o);
            let at_root = lx.skip_ws().map(|_| lx.b.get(lx.pos).copied());
            match at_root {
                // A root object: scanned until the filter's fields are found; the rest
                // only if its row passes the filter.
                Ok(Some(b'{')) => {
                    let at = rows.spans.len();
                    rows.spans.resize(at + width, None);
                    let start = lx.pos;
                    let (resume, malformed) =
                        match fields.scan(&mut lx, (start, 0), &mut rows.spans[at..], true, true) {
                            Ok(resume) => (resume, false),
                            Err(Malformed) => (None, true),
                        };
                    rows.rows.push(RowInfo {
                        start: s,
                        end: e,
                        line,
                        malformed,
                        resume,
                    });
                }
                // A root array: a row per object, each scanned whole.
                Ok(Some(b'[')) => match array_roots(text, lx.pos, e, o) {
                    Err(Malformed) => rows.push_malformed(s, e, line),
                    Ok(objects) => {
                        for obj in objects {
                            let at = rows.spans.len();
                            rows.spans.resize(at + width, None);
                            let mut lx = Lexer::new(&text[..e], obj.start, o);
                            let scanned = fields.scan(
                                &mut lx,
                                (obj.start, 0),
                                &mut rows.spans[at..],
                                true,
                                false,
                            );
                            rows.rows.push(RowInfo {
                                start: s,
                                end: e,
                                line,
                                malformed: scanned.is_err(),
                                resume: None,
                            });
                        }
                    }
                },
                _ => rows.push_malformed(s, e, line),
            }
            if rows.rows.len() >= batch {
                each(std::mem::replace(&mut rows, fresh()))?;
            }
            Ok(())
        })?;
        if !rows.rows.is_empty() {
            each(rows)?;
        }
        Ok(())
    }
}

/// The needed fields by name, and which of them the pushed filter reads.
struct FieldNames {
    names: Vec<Box<[u8]>>,
    /// Positions (in `names`) the pushed filter reads: a record is scanned until all are
    /// found, and further only when its row passes.
    early: Vec<bool>,
    early_count: usize,
    /// The member names of the last records, by position in their object.
    seen: std::cell::RefCell<Vec<SeenName>>,
}

impl FieldNames {
    fn new(names: Vec<Box<[u8]>>, early: &[usize]) -> Self {
        let mut flags = vec![false; names.len()];
        for &k in early {
            flags[k] = true;
        }
        Self {
            early_count: flags.iter().filter(|f| **f).count(),
            early: flags,
            names,
            seen: Default::default(),
        }
    }

    /// The position of the field named at `ns..ne` of `b` (a quoted or bare name; `plain`
    /// when `"`-quoted without escapes).
    fn find(&self, b: &[u8], ns: usize, ne: usize, plain: bool) -> Option<usize> {
        // A plain quoted name is compared without decoding it. (Most members never get
        // here: [`FieldNames::scan`] knows them from the names it remembers.)
        let lookup = |name: &[u8]| self.names.iter().position(|n| &n[..] == name);
        if plain {
            lookup(&b[ns + 1..ne - 1])
        } else {
            decode_string(b, ns, ne).and_then(|n| lookup(n.as_bytes()))
        }
    }

    /// Scans the object members from the lexer's position (its `{` when `first`) into
    /// `spans`; `member` is the position in the object of the member at `from`. With `stop`,
    /// returns where to go on from (position, member) after the member that completes the
    /// filter's fields; `None` once the object is read to its end.
    fn scan(
        &self,
        lx: &mut Lexer<'_>,
        (from, mut member): (usize, usize),
        spans: &mut [Option<Span>],
        first: bool,
        stop: bool,
    ) -> Result<Option<(usize, usize)>, Malformed> {
        lx.pos = from;
        if first {
            lx.open_object(1)?;
        }
        let stop = stop && self.early_count > 0;
        let mut found = 0;
        let mut first = first;
        let mut seen = self.seen.borrow_mut();
        while lx.member_start(first)? {
            first = false;
            // Records tend to repeat one order of names: when this member's name is
            // written as the last record's name at this position was, its field is known
            // without reading the name.
            let known = seen
                .get(member)
                .filter(|s| s.written_at(lx.b, lx.pos))
                .map(|s| s.field);
            let k = match known {
                Some(k) => {
                    lx.pos += seen[member].quoted.len();
                    k
                }
                None => {
                    let (ns, ne, plain) = lx.name()?;
                    let k = self.find(lx.b, ns, ne, plain);
                    if plain {
                        let name = SeenName::new(&lx.b[ns..ne], k);
                        if member < seen.len() {
                            seen[member] = name;
                        } else if member == seen.len() && member < MAX_SEEN {
                            seen.push(name);
                        }
                    }
                    k
                }
            };
            member += 1;
            lx.colon()?;
            let v = lx.value(1)?;
            if let Some(k) = k {
                if stop && self.early[k] && spans[k].is_none() {
                    found += 1;
                }
                spans[k] = Some(v);
                if stop && found == self.early_count {
                    return Ok(Some((lx.pos, member)));
                }
            }
        }
        Ok(None)
    }
}

/// How many leading member names of a record [`FieldNames`] remembers.
const MAX_SEEN: usize = 256;

/// A member name as the last record wrote it at one position.
struct SeenName {
    /// The name with its quotes, holding no escape.
    quoted: Box<[u8]>,
    /// Its position among the needed fields.
    field: Option<usize>,
    /// Its bytes `0..8`, `8..16` (or again `0..8` when shorter) and its last eight, when it
    /// has 8 to 24 (most names do).
    words: Option<[u64; 3]>,
}

fn word(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8)
        .and_then(|w| w.try_into().ok())
        .map(u64::from_ne_bytes)
}

impl SeenName {
    fn new(quoted: &[u8], field: Option<usize>) -> Self {
        let n = quoted.len();
        let words = (8..=24)
            .contains(&n)
            .then(|| {
                Some([
                    word(quoted, 0)?,
                    word(quoted, if n >= 16 { 8 } else { 0 })?,
                    word(quoted, n - 8)?,
                ])
            })
            .flatten();
        Self {
            quoted: quoted.into(),
            field,
            words,
        }
    }

    /// Whether `b` holds this name at `at`.
    #[inline(always)]
    fn written_at(&self, b: &[u8], at: usize) -> bool {
        let n = self.quoted.len();
        match self.words {
            // Three word compares instead of a `memcmp` call.
            Some([w0, w1, w2]) => {
                word(b, at) == Some(w0)
                    && word(b, at + if n >= 16 { 8 } else { 0 }) == Some(w1)
                    && word(b, at + n - 8) == Some(w2)
            }
            None => b[at..].starts_with(&self.quoted),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct RowInfo {
    start: usize,
    end: usize,
    line: u64,
    malformed: bool,
    /// Where the scan of the record's object stopped once the filter's fields were found
    /// (its position, and the member's position in the object).
    resume: Option<(usize, usize)>,
}

/// A batch of JSON rows: each needed field's value span, row by row (for a record with a
/// syntax error, the fields before the error; for a record scanned only up to the filter's
/// fields, those).
struct JsonRows {
    width: usize,
    spans: Vec<Option<Span>>,
    rows: Vec<RowInfo>,
    options: Arc<JsonOptions>,
    fields: Rc<FieldNames>,
}

impl JsonRows {
    fn push_malformed(&mut self, start: usize, end: usize, line: u64) {
        self.spans.extend(std::iter::repeat_n(None, self.width));
        self.rows.push(RowInfo {
            start,
            end,
            line,
            malformed: true,
            resume: None,
        });
    }
}

impl RawRows for JsonRows {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn malformed(&self) -> Vec<bool> {
        self.rows.iter().map(|r| r.malformed).collect()
    }

    fn values_lost(&self) -> Vec<bool> {
        self.malformed()
    }

    fn convert(
        &self,
        text: &[u8],
        k: usize,
        to: &DataType,
        cfg: &Config,
    ) -> Result<(ArrayRef, Vec<bool>)> {
        let column: Vec<Option<Span>> = (0..self.rows.len())
            .map(|r| self.spans[r * self.width + k])
            .collect();
        convert_spans(text, &column, to, &self.options, cfg)
    }

    fn finish(&mut self, text: &[u8]) {
        let w = self.width;
        for (r, row) in self.rows.iter_mut().enumerate() {
            let Some(at) = row.resume.take() else {
                continue;
            };
            let mut lx = Lexer::new(&text[..row.end], at.0, &self.options);
            let spans = &mut self.spans[r * w..(r + 1) * w];
            if self.fields.scan(&mut lx, at, spans, false, false).is_err() {
                row.malformed = true;
            }
        }
    }

    fn retain(&mut self, keep: &[bool]) {
        let w = self.width;
        let mut spans = Vec::with_capacity(self.spans.len());
        for (r, k) in keep.iter().enumerate() {
            if *k {
                spans.extend_from_slice(&self.spans[r * w..(r + 1) * w]);
            }
        }
        self.spans = spans;
        let mut it = keep.iter();
        self.rows.retain(|_| *it.next().unwrap_or(&false));
    }

    fn span(&self, row: usize) -> (usize, usize, u64) {
        let r = &self.rows[row];
        (r.start, r.end, r.line)
    }
}

/// Fields of a user's schema the JSON reader cannot fill.
pub(crate) fn check_types(schema: &Schema) -> Result<()> {
    fn string_keys(t: &DataType) -> bool {
        match t {
            DataType::List(f) => string_keys(f.data_type()),
            DataType::Struct(fs) => fs.iter().all(|f| string_keys(f.data_type())),
            DataType::Map(e, _) => match e.data_type() {
                DataType::Struct(kv) if kv.len() == 2 => {
                    kv[0].data_type() == &DataType::Utf8 && string_keys(kv[1].data_type())
                }
                _ => false,
            },
            _ => true,
        }
    }
    fn ok(t: &DataType) -> bool {
        match t {
            DataType::Utf8
            | DataType::Binary
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Boolean
            | DataType::Decimal128(..)
            | DataType::Date32
            | DataType::Timestamp(..)
            | DataType::Null => true,
            DataType::List(f) => ok(f.data_type()),
            DataType::Struct(fs) => fs.iter().all(|f| ok(f.data_type())),
            DataType::Map(e, _) => match e.data_type() {
                DataType::Struct(kv) => {
                    kv.len() == 2 && kv[0].data_type() == &DataType::Utf8 && ok(kv[1].data_type())
                }
                _ => false,
            },
            _ => false,
        }
    }
    if !schema.fields().iter().all(|f| string_keys(f.data_type())) {
        let columns: Vec<String> = schema
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), spark_type_name(f.data_type())))
            .collect();
        return Err(FerroError::Analysis(format!(
            "[INVALID_JSON_SCHEMA_MAP_TYPE] Input schema \"STRUCT<{}>\" can only contain STRING as a key type for a MAP.",
            columns.join(", ")
        )));
    }
    for f in schema.fields() {
        if !ok(f.data_type()) {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_DATATYPE] The JSON reader cannot read column `{}` of type {}.",
                f.name(),
                f.data_type()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A record's members found with names remembered from earlier records are those found
    /// by reading every name: names of every length around the word sizes, names that
    /// start alike, escaped and single-quoted names, in changing orders.
    #[test]
    fn remembered_names_find_what_reading_finds() {
        let o = JsonOptions::default();
        let pool = [
            r#""a""#,
            r#""abcdef""#,
            r#""abcdefg""#,
            r#""abcdefgh""#,
            r#""abcdefghijklmn""#,
            r#""abcdefghijklmno""#,
            r#""abcdefghijklmnop""#,
            r#""abcdefghijklmnopqrstuvw""#,
            r#""abcdefghijklmnopqrstuvwx""#,
            r#""abcdefghijklmnopqrstuvwxyz""#,
            r#""ab\u0063defgh""#,
            r#"'abcdefgh'"#,
            r#""abcdefgx""#,
            r#""xbcdefghijklmnop""#,
        ];
        let needed: Vec<Box<[u8]>> = [
            "abcdefgh",
            "abcdefghijklmnop",
            "abcdefghijklmnopqrstuvwx",
            "a",
            "abcdefghijklmnopqrstuvwxyz",
        ]
        .iter()
        .map(|n| n.as_bytes().into())
        .collect();
        let warm = FieldNames::new(needed.clone(), &[]);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut orders: Vec<Vec<usize>> = Vec::new();
        for _ in 0..2000 {
            // Mostly a repeated order, sometimes a new one.
            if orders.is_empty() || rng.random_bool(0.2) {
                let n = rng.random_range(0..8);
                orders.push((0..n).map(|_| rng.random_range(0..pool.len())).collect());
            }
            let order = &orders[rng.random_range(0..orders.len())];
            let members: Vec<String> = order
                .iter()
                .enumerate()
                .map(|(i, &k)| format!("{}:{i}", pool[k]))
                .collect();
            let text = format!("{{{}}}", members.join(","));
            let b = text.as_bytes();
            let scan = |names: &FieldNames| {
                let mut spans = vec![None; needed.len()];
                let mut lx = Lexer::new(b, 0, &o);
                names
                    .scan(&mut lx, (0, 0), &mut spans, true, false)
                    .map(|_| spans)
            };
            let fresh = FieldNames::new(needed.clone(), &[]);
            assert_eq!(scan(&warm), scan(&fresh), "{text}");
        }
    }
}
