//! Writes: `INSERT INTO / OVERWRITE` (static and dynamic partitions), `CREATE TABLE AS
//! SELECT`, `df.write.saveAsTable / insertInto / parquet / json / csv / text`, as Spark's
//! commit protocol does them: rows go to files in a hidden staging directory, the files are
//! renamed into place, then the catalog changes in one transaction.
//!
//! ```text
//!  query ─execute─▶ batches ─split by partition values─▶ writer threads (one file per
//!        thread and directory: snappy Parquet, or JSON / CSV / text by
//!        ferrospark_scan::write) ─close─▶ staging ─commit─▶ table ─▶ catalog
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_catalog::commit::MovedWrite;
use ferrospark_catalog::names::{parse_partition_path, quote};
use ferrospark_catalog::warehouse::{location_uri, resolve_location, StagedWrite};
use ferrospark_catalog::{CatalogPartition, CatalogTable, PartitionSpec, TableIdent, TableType};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::{Expr, Literal};
use ferrospark_scan::write::{RowFileWriter, WriteFormat};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::ddl::{
    new_table_location, normalize_spec, nullable_fields, owner, provider_of, require_table,
    table_location, table_schema,
};
use super::relation::cast;
use super::{CreateTable, InsertSpec};
use crate::engine::QueryEngine;
use crate::logical::LogicalPlan;

/// Spark's save modes (`df.write.mode(...)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveMode {
    /// `error` / `errorifexists` (the default): an existing table or path is an error.
    ErrorIfExists,
    /// `append`: rows are added.
    Append,
    /// `overwrite`: the rows replace what was there.
    Overwrite,
    /// `ignore`: nothing happens if it exists.
    Ignore,
}

impl SaveMode {
    /// Parses Spark's mode names.
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "error" | "errorifexists" | "default" => SaveMode::ErrorIfExists,
            "append" => SaveMode::Append,
            "overwrite" => SaveMode::Overwrite,
            "ignore" => SaveMode::Ignore,
            other => {
                return Err(FerroError::Config(format!(
                    "unknown save mode '{other}'. Accepted save modes are 'overwrite', 'append', 'ignore', 'error', 'errorifexists', 'default'."
                )))
            }
        })
    }
}

/// What a write produced.
#[derive(Debug, Default)]
struct Written {
    rows: u64,
}

fn writer_props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("ferrospark version {}", env!("CARGO_PKG_VERSION")))
        .build()
}

fn write_error(path: &Path, e: parquet::errors::ParquetError) -> FerroError {
    match e {
        parquet::errors::ParquetError::External(inner) => {
            match inner.downcast::<std::io::Error>() {
                Ok(io) => FerroError::io(path, *io),
                Err(other) => FerroError::Internal(format!("writing {}: {other}", path.display())),
            }
        }
        other => FerroError::parquet(path, other.to_string()),
    }
}

/// An open file of a write.
enum OpenFile {
    Parquet(ArrowWriter<BufWriter<File>>),
    Row(RowFileWriter),
}

/// One writer thread's open files, by partition directory.
struct ThreadFiles<'a> {
    task: usize,
    partitioned: bool,
    schema: SchemaRef,
    format: &'a WriteFormat,
    session_tz: &'a str,
    open: HashMap<String, OpenFile>,
    /// Files already closed per directory, for the next name's `c000` counter.
    closed: HashMap<String, usize>,
}

/// At most this many files open per writer thread; more partitions close the open ones and
/// go on in new files (`c001`, ...).
const MAX_OPEN_FILES: usize = 256;

impl ThreadFiles<'_> {
    fn write(&mut self, staged: &StagedWrite, dir: &str, batch: &RecordBatch) -> Result<()> {
        if !self.open.contains_key(dir) {
            if self.open.len() >= MAX_OPEN_FILES {
                self.close_all()?;
            }
            let n = self.closed.get(dir).copied().unwrap_or(0);
            let sep = if self.partitioned { '.' } else { '-' };
            let name = format!(
                "part-{:05}-{}{sep}c{n:03}.{}",
                self.task,
                staged.job,
                self.format.extension()
            );
            let folder = if dir.is_empty() {
                staged.staging.clone()
            } else {
                staged.staging.join(dir)
            };
            std::fs::create_dir_all(&folder).map_err(|e| FerroError::io(&folder, e))?;
            let path = folder.join(name);
            let w = if *self.format == WriteFormat::Parquet {
                let file = File::create(&path).map_err(|e| FerroError::io(&path, e))?;
                OpenFile::Parquet(
                    ArrowWriter::try_new(
                        BufWriter::with_capacity(1 << 20, file),
                        self.schema.clone(),
                        Some(writer_props()),
                    )
                    .map_err(|e| write_error(&path, e))?,
                )
            } else {
                OpenFile::Row(RowFileWriter::create(
                    &path,
                    self.schema.clone(),
                    self.format,
                    self.session_tz,
                )?)
            };
            self.open.insert(dir.to_string(), w);
        }
        match self.open.get_mut(dir) {
            Some(OpenFile::Parquet(w)) => w
                .write(batch)
                .map_err(|e| write_error(&staged.staging.join(dir), e))?,
            Some(OpenFile::Row(w)) => w.write(batch)?,
            None => {}
        }
        Ok(())
    }

    fn close_all(&mut self) -> Result<()> {
        for (dir, w) in self.open.drain() {
            match w {
                OpenFile::Parquet(w) => {
                    w.close().map_err(|e| write_error(Path::new(&dir), e))?;
                }
                OpenFile::Row(w) => w.close()?,
            }
            *self.closed.entry(dir).or_default() += 1;
        }
        Ok(())
    }
}

fn writer_thread(
    mut files: ThreadFiles<'_>,
    staged: &StagedWrite,
    rx: Receiver<(String, RecordBatch)>,
) -> Result<()> {
    for (dir, batch) in rx {
        files.write(staged, &dir, &batch)?;
    }
    files.close_all()
}

/// Each row's partition directory (`p=1/q=a`) from the partition columns.
fn partition_dirs(cols: &[(String, ArrayRef)], rows: usize) -> Result<Vec<String>> {
    let options = arrow_cast::display::FormatOptions::default();
    let formatters = cols
        .iter()
        .map(|(_, a)| arrow_cast::display::ArrayFormatter::try_new(a.as_ref(), &options))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut out = Vec::with_capacity(rows);
    let mut spec: PartitionSpec = cols.iter().map(|(n, _)| (n.clone(), None)).collect();
    for r in 0..rows {
        for (i, (_, a)) in cols.iter().enumerate() {
            spec[i].1 = if a.is_null(r) {
                None
            } else {
                Some(formatters[i].value(r).to_string())
            };
        }
        out.push(ferrospark_catalog::names::partition_path(&spec));
    }
    Ok(out)
}

/// Runs `plan` (data columns then `partition_columns`) and writes its rows into `staged`
/// in `format`.
fn write_files(
    engine: &QueryEngine,
    plan: &Arc<LogicalPlan>,
    data_schema: SchemaRef,
    partition_columns: &[String],
    staged: &StagedWrite,
    format: &WriteFormat,
) -> Result<Written> {
    format.check_schema(&data_schema)?;
    let session_tz = engine.config().session_time_zone().to_string();
    let session_tz = session_tz.as_str();
    let result = engine.execute_streaming(plan)?;
    let n_data = data_schema.fields().len();
    let threads = engine.config().scan_threads()?.clamp(1, 8);
    let partitioned = !partition_columns.is_empty();
    let mut written = Written::default();
    std::thread::scope(|scope| -> Result<()> {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for task in 0..threads {
            let (tx, rx) = sync_channel::<(String, RecordBatch)>(4);
            senders.push(tx);
            let files = ThreadFiles {
                task,
                partitioned,
                schema: data_schema.clone(),
                format,
                session_tz,
                open: HashMap::new(),
                closed: HashMap::new(),
            };
            handles.push(scope.spawn(move || writer_thread(files, staged, rx)));
        }
        let mut next = 0usize;
        let mut failure = None;
        for batch in result.stream {
            let batch = match batch {
                Ok(b) => b,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            if batch.num_rows() == 0 {
                continue;
            }
            written.rows += batch.num_rows() as u64;
            let data =
                RecordBatch::try_new(data_schema.clone(), batch.columns()[..n_data].to_vec())?;
            let sent = if !partitioned {
                next = (next + 1) % threads;
                senders[next].send((String::new(), data)).is_ok()
            } else {
                let cols: Vec<(String, ArrayRef)> = partition_columns
                    .iter()
                    .zip(&batch.columns()[n_data..])
                    .map(|(n, a)| (n.clone(), a.clone()))
                    .collect();
                let dirs = partition_dirs(&cols, batch.num_rows())?;
                let mut groups: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
                for (i, d) in dirs.iter().enumerate() {
                    groups.entry(d.as_str()).or_default().push(i as u32);
                }
                let mut ok = true;
                for (dir, rows) in groups {
                    let part = if rows.len() == data.num_rows() {
                        data.clone()
                    } else {
                        ferrospark_common::take_batch(&data, &UInt32Array::from(rows))?
                    };
                    // A directory always goes to the same thread: one file per directory.
                    let t = dir
                        .bytes()
                        .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize))
                        % threads;
                    ok &= senders[t].send((dir.to_string(), part)).is_ok();
                }
                ok
            };
            if !sent {
                break;
            }
        }
        drop(senders);
        let mut first_err = failure;
        for h in handles {
            let r = h
                .join()
                .map_err(|_| FerroError::Internal("a file writer thread panicked".into()))?;
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })?;
    Ok(written)
}

/// Writes `input`'s rows into a new staging directory of `location`: the staged write, or
/// nothing left behind when the rows fail.
fn stage(
    engine: &QueryEngine,
    location: &Path,
    table: Option<&TableIdent>,
    input: &Arc<LogicalPlan>,
    data_schema: SchemaRef,
    partition_columns: &[String],
    format: &WriteFormat,
) -> Result<StagedWrite> {
    recover_writes(engine, location, table)?;
    std::fs::create_dir_all(location).map_err(|e| FerroError::io(location, e))?;
    let staged = StagedWrite::begin(location)?;
    match write_files(
        engine,
        input,
        data_schema,
        partition_columns,
        &staged,
        format,
    ) {
        Ok(_) => Ok(staged),
        Err(e) => {
            staged.abort();
            Err(e)
        }
    }
}

/// Finishes or undoes the writes into `location` (the files of `table`, when it is a
/// catalog table's) whose writers died mid-commit: finished when the metastore recorded the
/// write (or the table a `CREATE TABLE ... AS SELECT` made exists; a write to a path, which
/// has no metastore, once its journal is whole), undone otherwise. Runs before a table is
/// read or written, so no reader sees half a write.
pub(crate) fn recover_writes(
    engine: &QueryEngine,
    location: &Path,
    table: Option<&TableIdent>,
) -> Result<()> {
    let writes = ferrospark_catalog::commit::interrupted_writes(location)?;
    if writes.is_empty() {
        return Ok(());
    }
    // What the metastore says, asked once for all of them.
    let (last_job, table_exists) = match table {
        Some(ident) => {
            let external = engine.catalog().external();
            (
                external.last_write_job(ident)?,
                external.get_table(ident)?.is_some(),
            )
        }
        None => (None, false),
    };
    for w in writes {
        let committed = table.is_none()
            || last_job.as_deref() == Some(w.job().as_str())
            || (w.creates_table() && table_exists);
        w.recover(committed)?;
    }
    Ok(())
}

/// Whether Spark would store a value of `from` into a column of `to` (ANSI store
/// assignment): numbers into numbers, anything atomic into strings, dates and timestamps
/// into each other; never text into numbers.
fn can_store(from: &DataType, to: &DataType) -> bool {
    use ferrospark_expr::types::is_numeric;
    if from.equals_datatype(to) || matches!(from, DataType::Null) {
        return true;
    }
    let temporal = |d: &DataType| matches!(d, DataType::Date32 | DataType::Timestamp(_, _));
    match to {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => !matches!(
            from,
            DataType::List(_) | DataType::Struct(_) | DataType::Map(_, _)
        ),
        t if is_numeric(t) => is_numeric(from),
        t if temporal(t) => temporal(from),
        _ => false,
    }
}

/// `plan`'s columns stored into `table`'s `targets` (field name, type) by position, cast as
/// Spark's store assignment casts.
fn store_columns(
    ident: &TableIdent,
    plan: &Arc<LogicalPlan>,
    targets: &[Field],
) -> Result<Vec<Expr>> {
    let out = plan.output();
    out.iter()
        .zip(targets)
        .map(|(a, f)| {
            if !can_store(&a.data_type, f.data_type()) {
                return Err(FerroError::Analysis(format!(
                    "[INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_SAFELY_CAST] Cannot write incompatible data for the table {}: Cannot safely cast {} \"{}\" to \"{}\". SQLSTATE: KD000",
                    ident.quoted(),
                    quote(f.name()),
                    ferrospark_expr::types::spark_type_name(&a.data_type),
                    ferrospark_expr::types::spark_type_name(f.data_type())
                )));
            }
            let c = Expr::Column(a.key());
            let v = if a.data_type.equals_datatype(f.data_type()) {
                c
            } else {
                cast(c, f.data_type())
            };
            Ok(Expr::Alias {
                expr: Box::new(v),
                name: f.name().clone(),
            })
        })
        .collect()
}

fn arity_error(ident: &TableIdent, table_cols: &[String], data: &[String]) -> FerroError {
    let (kind, why) = if data.len() > table_cols.len() {
        ("TOO_MANY_DATA_COLUMNS", "too many data columns")
    } else {
        ("NOT_ENOUGH_DATA_COLUMNS", "not enough data columns")
    };
    let list = |v: &[String]| v.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", ");
    FerroError::Analysis(format!(
        "[INSERT_COLUMN_ARITY_MISMATCH.{kind}] Cannot write to {}, the reason is {why}:\nTable columns: {}.\nData columns: {}. SQLSTATE: 21S01",
        ident.quoted(),
        list(table_cols),
        list(data)
    ))
}

/// `INSERT INTO / OVERWRITE t [PARTITION (...)] [(cols)] query`.
pub(crate) fn insert_sql(
    engine: &QueryEngine,
    table: &[String],
    plan: Arc<LogicalPlan>,
    overwrite: bool,
    spec: InsertSpec,
    columns: Vec<String>,
) -> Result<()> {
    let t = require_table(engine, table)?;
    if t.table_type == TableType::View {
        return Err(FerroError::Analysis(format!(
            "[EXPECT_TABLE_NOT_VIEW.NO_ALTERNATIVE] 'INSERT' expects a table but {} is a view. SQLSTATE: 42809",
            t.ident.quoted()
        )));
    }
    if !spec.is_empty() && !t.is_partitioned() {
        return Err(super::ddl::not_partitioned(&t));
    }
    let statics: Vec<(String, Option<String>)> = spec
        .iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
        .collect();
    let static_spec = if statics.is_empty() {
        Vec::new()
    } else {
        normalize_spec(&t, &statics, false)?
    };
    let is_static = |name: &str| {
        static_spec
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    };
    // The columns the query supplies, in order.
    let supplied: Vec<Field> = if columns.is_empty() {
        t.schema
            .fields()
            .iter()
            .filter(|f| !is_static(f.name()))
            .map(|f| f.as_ref().clone())
            .collect()
    } else {
        columns
            .iter()
            .map(|c| {
                t.schema
                    .fields()
                    .iter()
                    .find(|f| f.name().eq_ignore_ascii_case(c))
                    .map(|f| f.as_ref().clone())
                    .ok_or_else(|| {
                        FerroError::Analysis(format!(
                            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name {} cannot be resolved. Did you mean one of the following? [{}]. SQLSTATE: 42703",
                            quote(c),
                            t.schema.fields().iter().map(|f| quote(f.name())).collect::<Vec<_>>().join(", ")
                        ))
                    })
            })
            .collect::<Result<_>>()?
    };
    let out = plan.output();
    if out.len() != supplied.len() {
        return Err(arity_error(
            &t.ident,
            &supplied
                .iter()
                .map(|f| f.name().clone())
                .collect::<Vec<_>>(),
            &out.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
        ));
    }
    let stored = store_columns(&t.ident, &plan, &supplied)?;
    let input = engine.builder.project(plan, &stored)?;
    // Every table column in table order: supplied ones, static values, NULL for the rest.
    let items: Vec<Expr> = t
        .schema
        .fields()
        .iter()
        .map(|f| {
            let v = if let Some((_, v)) = static_spec
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(f.name()))
            {
                let lit = match v {
                    Some(v) => Expr::Literal(Literal::string(v)),
                    None => Expr::Literal(Literal::null(&DataType::Utf8)),
                };
                cast(lit, f.data_type())
            } else if supplied.iter().any(|s| s.name() == f.name()) {
                Expr::Column(f.name().clone())
            } else {
                cast(Expr::Literal(Literal::null(&DataType::Null)), f.data_type())
            };
            Expr::Alias {
                expr: Box::new(v),
                name: f.name().clone(),
            }
        })
        .collect();
    let input = engine.builder.project(input, &items)?;
    write_into_table(engine, &t, input, overwrite, static_spec)
}

/// Writes `input` (every table column, table order) into `t`, appending or overwriting
/// (the partitions matching `static_spec`, or those written under dynamic overwrite).
fn write_into_table(
    engine: &QueryEngine,
    t: &CatalogTable,
    input: Arc<LogicalPlan>,
    overwrite: bool,
    static_spec: PartitionSpec,
) -> Result<()> {
    let cat = engine.catalog();
    let format = table_format(t)?;
    let loc = table_location(t)?;
    let data_schema = Arc::new(Schema::new(
        t.data_fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
    ));
    let staged = stage(
        engine,
        &loc,
        Some(&t.ident),
        &input,
        data_schema,
        &t.partition_columns,
        &format,
    )?;
    let dynamic = engine
        .config()
        .get("spark.sql.sources.partitionOverwriteMode")
        .is_some_and(|m| m.eq_ignore_ascii_case("dynamic"));
    let (replaced, dropped): (Vec<String>, Vec<PartitionSpec>) = if !overwrite {
        (Vec::new(), Vec::new())
    } else if !t.is_partitioned() {
        (vec![String::new()], Vec::new())
    } else if dynamic && static_spec.len() < t.partition_columns.len() {
        // Only the partitions written are replaced: known once the files are staged.
        (staged.dirs()?, Vec::new())
    } else {
        let matching = cat
            .external()
            .list_partitions(&t.ident, (!static_spec.is_empty()).then_some(&static_spec))?;
        let mut dirs: Vec<String> = matching
            .iter()
            .filter_map(|p| {
                Path::new(&p.location)
                    .strip_prefix(&loc)
                    .ok()
                    .map(|r| r.to_string_lossy().into_owned())
            })
            .collect();
        if static_spec.is_empty() {
            dirs = vec![String::new()];
        } else if static_spec.len() == t.partition_columns.len() {
            dirs.push(ferrospark_catalog::names::partition_path(&static_spec));
        }
        (dirs, matching.into_iter().map(|p| p.spec).collect())
    };
    let moved = staged.commit(&replaced, false)?;
    let mut dirs = moved.dirs();
    // A static partition exists after its INSERT even when no row went into it.
    let static_dir = (static_spec.len() == t.partition_columns.len() && !static_spec.is_empty())
        .then(|| ferrospark_catalog::names::partition_path(&static_spec));
    if let Some(d) = &static_dir {
        if !dirs.contains(d) {
            dirs.push(d.clone());
        }
    }
    let added = partitions_of(t, &loc, &dirs);
    let recorded = cat
        .external()
        .commit_write(&t.ident, &dropped, &added, None, Some(moved.job()));
    cat.invalidate(&t.ident);
    finish_or_undo(moved, recorded)?;
    if let Some(d) = static_dir {
        std::fs::create_dir_all(loc.join(&d)).map_err(|e| FerroError::io(&loc, e))?;
    }
    Ok(())
}

/// Catalog partitions of the directories a write made.
fn partitions_of(t: &CatalogTable, loc: &Path, dirs: &[String]) -> Vec<CatalogPartition> {
    if !t.is_partitioned() {
        return Vec::new();
    }
    dirs.iter()
        .filter(|d| !d.is_empty())
        .filter_map(|d| {
            let spec = parse_partition_path(d)?;
            let spec = spec
                .into_iter()
                .zip(&t.partition_columns)
                .map(|((_, v), k)| (k.clone(), v))
                .collect();
            Some(CatalogPartition {
                spec,
                location: loc.join(d).to_string_lossy().into_owned(),
                parameters: BTreeMap::new(),
                created_ms: ferrospark_catalog::model::now_ms(),
            })
        })
        .collect()
}

/// `CREATE TABLE ... AS SELECT` (and `saveAsTable` of a new table): the files are written
/// and committed, then the table and its partitions enter the catalog in one transaction.
pub(crate) fn create_table_as(
    engine: &QueryEngine,
    c: &CreateTable,
    ident: &TableIdent,
    plan: Arc<LogicalPlan>,
) -> Result<()> {
    let cat = engine.catalog();
    if cat.external().get_table(ident)?.is_some() {
        if c.if_not_exists {
            return Ok(());
        }
        if !c.replace {
            return Err(ferrospark_catalog::external::table_exists(ident));
        }
        cat.drop_table(ident, true)?;
    }
    if c.columns.is_some() {
        return Err(FerroError::Analysis(
            "[SPECIFY_SCHEMA_WHEN_CREATE_TABLE_AS_SELECT] Operation not allowed: Schema may not be specified in a Create Table As Select (CTAS) statement. SQLSTATE: 0A000".into(),
        ));
    }
    let provider = provider_of(engine, c.provider.as_deref())?;
    WriteFormat::parse(&provider, &c.options)?;
    let (location, table_type) = new_table_location(engine, ident, c.location.as_deref())?;
    let fields = nullable_fields(&plan);
    let (schema, partition_columns) = table_schema(ident, fields, &c.partition_by)?;
    let table = CatalogTable {
        ident: ident.clone(),
        table_type,
        provider: Some(provider),
        location: Some(location.to_string_lossy().into_owned()),
        schema: schema.clone(),
        partition_columns,
        properties: c.properties.clone(),
        storage_options: c.options.clone(),
        comment: c.comment.clone(),
        view_text: None,
        created_ms: ferrospark_catalog::model::now_ms(),
        owner: owner(),
        stats: None,
    };
    let input = by_name(engine, plan, &schema)?;
    let (added, moved) = write_new(engine, &table, &location, input, true)?;
    let recorded = cat.create_table_with_partitions(&table, &added).map(|_| ());
    finish_or_undo(moved, recorded)
}

/// `plan`'s columns in `schema`'s order, by name.
fn by_name(
    engine: &QueryEngine,
    plan: Arc<LogicalPlan>,
    schema: &Schema,
) -> Result<Arc<LogicalPlan>> {
    let out = plan.output();
    let items: Vec<Expr> = schema
        .fields()
        .iter()
        .map(|f| {
            let a = out
                .iter()
                .find(|a| a.name.eq_ignore_ascii_case(f.name()))
                .ok_or_else(|| {
                    FerroError::Analysis(format!(
                        "[INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_FIND_DATA] Cannot write incompatible data for the table: Cannot find data for the output column {}. SQLSTATE: KD000",
                        quote(f.name())
                    ))
                })?;
            let c = Expr::Column(a.key());
            Ok(Expr::Alias {
                expr: Box::new(if a.data_type.equals_datatype(f.data_type()) {
                    c
                } else {
                    cast(c, f.data_type())
                }),
                name: f.name().clone(),
            })
        })
        .collect::<Result<_>>()?;
    engine.builder.project(plan, &items)
}

/// Writes a whole new table's files, replacing any there: the partitions made, and the
/// moved write to finish once the metastore has the table (`creates_table`: its creation
/// is the commit point) or the write's job.
fn write_new(
    engine: &QueryEngine,
    t: &CatalogTable,
    location: &Path,
    input: Arc<LogicalPlan>,
    creates_table: bool,
) -> Result<(Vec<CatalogPartition>, MovedWrite)> {
    let data_schema = Arc::new(Schema::new(t.data_fields()));
    let staged = stage(
        engine,
        location,
        Some(&t.ident),
        &input,
        data_schema,
        &t.partition_columns,
        &table_format(t)?,
    )?;
    let moved = staged.commit(&[String::new()], creates_table)?;
    let parts = partitions_of(t, location, &moved.dirs());
    Ok((parts, moved))
}

/// Finishes `moved` when the metastore change `recorded` went in, else undoes it.
fn finish_or_undo(moved: MovedWrite, recorded: Result<()>) -> Result<()> {
    match recorded {
        Ok(()) => moved.finish(),
        Err(e) => {
            moved.roll_back();
            Err(e)
        }
    }
}

/// `df.write.mode(mode).partitionBy(...).saveAsTable(name)`.
pub fn save_as_table(
    engine: &QueryEngine,
    plan: Arc<LogicalPlan>,
    name: &str,
    mode: SaveMode,
    format: Option<&str>,
    partition_by: Vec<String>,
    options: BTreeMap<String, String>,
) -> Result<()> {
    let cat = engine.catalog();
    let parts = ferrospark_catalog::names::parse_multipart(name)?;
    let ident = cat.qualify(&parts)?;
    ferrospark_catalog::names::validate(&ident.table, "table")?;
    cat.require_database(&ident.database)?;
    let create = CreateTable {
        name: parts.clone(),
        replace: false,
        external: false,
        if_not_exists: false,
        columns: None,
        provider: format.map(str::to_string),
        options,
        partition_by,
        location: None,
        comment: None,
        properties: BTreeMap::new(),
        query: None,
    };
    let Some(existing) = cat.external().get_table(&ident)? else {
        return create_table_as(engine, &create, &ident, plan);
    };
    match mode {
        SaveMode::ErrorIfExists => Err(ferrospark_catalog::external::table_exists(&ident)),
        SaveMode::Ignore => Ok(()),
        SaveMode::Append => {
            let input = by_name(engine, plan, &existing.schema)?;
            write_into_table(engine, &existing, input, false, Vec::new())
        }
        SaveMode::Overwrite => {
            if existing.table_type == TableType::View {
                return Err(ferrospark_catalog::external::table_exists(&ident));
            }
            // The table is replaced with the new rows' schema; its files are swapped in
            // place, then its metadata and partitions in one transaction each.
            let location = PathBuf::from(existing.location.clone().unwrap_or_default());
            let fields = nullable_fields(&plan);
            let (schema, partition_columns) = table_schema(&ident, fields, &create.partition_by)?;
            let mut table = existing.clone();
            table.schema = schema.clone();
            table.partition_columns = partition_columns;
            table.provider = Some(provider_of(engine, format)?);
            table.stats = None;
            let input = by_name(engine, plan, &schema)?;
            let (added, moved) = write_new(engine, &table, &location, input, false)?;
            let recorded = (|| {
                let old: Vec<PartitionSpec> = cat
                    .external()
                    .list_partitions(&ident, None)?
                    .into_iter()
                    .map(|p| p.spec)
                    .collect();
                cat.alter_table(&table)?;
                cat.external()
                    .commit_write(&ident, &old, &added, None, Some(moved.job()))
            })();
            cat.invalidate(&ident);
            finish_or_undo(moved, recorded)
        }
    }
}

/// `df.write.insertInto(name, overwrite)`: columns by position, as `INSERT` does.
pub fn insert_into(
    engine: &QueryEngine,
    plan: Arc<LogicalPlan>,
    name: &str,
    overwrite: bool,
) -> Result<()> {
    let parts = ferrospark_catalog::names::parse_multipart(name)?;
    insert_sql(engine, &parts, plan, overwrite, Vec::new(), Vec::new())
}

/// The format a table's files are written in: its provider with its options.
fn table_format(t: &CatalogTable) -> Result<WriteFormat> {
    WriteFormat::parse(
        t.provider.as_deref().unwrap_or("parquet"),
        &t.storage_options,
    )
}

/// `df.write.mode(mode).partitionBy(...).format(format).options(...).save(path)` (and
/// `.parquet / .json / .csv / .text(path)`): files outside any catalog.
pub fn write_path(
    engine: &QueryEngine,
    plan: Arc<LogicalPlan>,
    path: &str,
    mode: SaveMode,
    partition_by: Vec<String>,
    format: &str,
    options: &BTreeMap<String, String>,
) -> Result<()> {
    let format = WriteFormat::parse(&format.to_ascii_lowercase(), options)?;
    let location = resolve_location(path)?;
    let exists = location.exists();
    if exists {
        match mode {
            SaveMode::ErrorIfExists => {
                return Err(FerroError::Analysis(format!(
                    "[PATH_ALREADY_EXISTS] Path {} already exists. Set mode as \"overwrite\" to overwrite the existing path. SQLSTATE: 42K04",
                    location_uri(&location.to_string_lossy())
                )))
            }
            SaveMode::Ignore => return Ok(()),
            _ => {}
        }
    }
    let ident = TableIdent::new("", "");
    let fields = nullable_fields(&plan);
    let (schema, partition_columns) = table_schema(&ident, fields, &partition_by)?;
    let input = by_name(engine, plan, &schema)?;
    let data: Vec<Field> = schema
        .fields()
        .iter()
        .filter(|f| !partition_columns.contains(f.name()))
        .map(|f| f.as_ref().clone())
        .collect();
    let staged = stage(
        engine,
        &location,
        None,
        &input,
        Arc::new(Schema::new(data)),
        &partition_columns,
        &format,
    )?;
    let replaced = if mode == SaveMode::Overwrite {
        vec![String::new()]
    } else {
        Vec::new()
    };
    // No metastore: the moves are the commit.
    staged.commit(&replaced, false)?.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_assignment_refuses_text_into_numbers_only() {
        assert!(can_store(&DataType::Int32, &DataType::Int64));
        assert!(can_store(&DataType::Int64, &DataType::Decimal128(10, 2)));
        assert!(can_store(&DataType::Int32, &DataType::Utf8));
        assert!(can_store(&DataType::Null, &DataType::Date32));
        assert!(!can_store(&DataType::Utf8, &DataType::Int32));
        assert!(!can_store(&DataType::Boolean, &DataType::Int32));
        assert!(!can_store(&DataType::Float64, &DataType::Boolean));
    }

    #[test]
    fn partition_directories_follow_the_values() {
        let cols: Vec<(String, ArrayRef)> = vec![
            (
                "p".into(),
                Arc::new(arrow_array::Int32Array::from(vec![Some(1), None])),
            ),
            (
                "s".into(),
                Arc::new(arrow_array::StringArray::from(vec![Some("a/b"), Some("")])),
            ),
        ];
        assert_eq!(
            partition_dirs(&cols, 2).expect("dirs"),
            [
                "p=1/s=a%2Fb",
                "p=__HIVE_DEFAULT_PARTITION__/s=__HIVE_DEFAULT_PARTITION__"
            ]
        );
    }
}
