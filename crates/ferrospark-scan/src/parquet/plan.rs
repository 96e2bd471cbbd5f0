//! Planning a Parquet scan: footers, schema agreement, binding the filter, and pruning files,
//! row groups and pages down to a list of [`ScanTask`]s.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Array, ArrayRef, Int64Array, UInt64Array};
use arrow_schema::{Field, FieldRef, Schema, SchemaRef};
use ferrospark_common::{FerroError, MetricsSet, Result};
use ferrospark_expr::types::spark_type_name;
use ferrospark_expr::{bind_predicate, resolve_column, BindContext, PhysicalExpr};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, RowSelection, RowSelector,
};
use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::PageIndexPolicy;

use super::exec::FilterGroup;
use super::footer_cache;
use super::pruning::{ColumnStats, PruningPredicate};
use super::source::FileSource;
use super::{bloom, dictionary, new_metrics, spark_types, ParquetScanOptions};
use crate::listing::{list_files, Listing};

/// One file's footer and partition values.
#[derive(Debug, Clone)]
pub(crate) struct FileEntry {
    /// The open file (each task reopens it to read on its own).
    pub source: FileSource,
    pub meta: ArrowReaderMetadata,
    /// Typed partition values (one-element arrays), in partition column order.
    pub partition_values: Vec<ArrayRef>,
    /// Raw partition values, for splits.
    pub raw_partition_values: Vec<Option<String>>,
    /// The filter as this file's row filter (see `exec::row_filter_groups`).
    pub row_filter: Vec<FilterGroup>,
    /// The filter's conjuncts that read no data column, partition values substituted:
    /// planning keeps the file only if they all hold.
    pub partition_conjuncts: Vec<PhysicalExpr>,
    /// The leaf columns a task reads: those of the output and of the row filter.
    pub read_leaves: Vec<usize>,
}

/// One unit of work: a row group of a file, possibly narrowed to a row selection.
#[derive(Debug, Clone)]
pub(crate) struct ScanTask {
    pub file: usize,
    pub row_group: usize,
    pub selection: Option<RowSelection>,
}

/// Everything workers share.
#[derive(Debug)]
pub(crate) struct ScanShared {
    pub files: Vec<FileEntry>,
    /// Data columns (from the files) followed by partition columns.
    pub table_schema: SchemaRef,
    /// How many of the table columns come from the files.
    pub data_columns: usize,
    /// Table column indices of the output, in order.
    pub output: Vec<usize>,
    /// The data columns a task decodes for its output, sorted (the reader's column order).
    pub decoded_columns: Vec<usize>,
    /// Output schema (Spark-typed when asked).
    pub output_schema: SchemaRef,
    /// The filter bound to the table schema.
    pub predicate: Option<PhysicalExpr>,
    pub options: ParquetScanOptions,
    pub metrics: MetricsSet,
}

impl ScanShared {
    /// Whether the query owning this scan was cancelled.
    pub fn cancelled(&self) -> bool {
        self.options
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// A piece of a scan Spark can run as one task: a file and some of its row groups.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanSplit {
    /// The file.
    pub path: PathBuf,
    /// Row groups to read.
    pub row_groups: Vec<usize>,
    /// Raw hive partition values of the file.
    pub partition_values: Vec<Option<String>>,
    /// Compressed bytes of those row groups, to balance tasks.
    pub bytes: u64,
}

/// A planned Parquet scan. Create with [`ParquetScan::try_new`], run with
/// [`ParquetScan::execute`].
#[derive(Debug)]
pub struct ParquetScan {
    pub(crate) shared: Arc<ScanShared>,
    pub(crate) tasks: Vec<ScanTask>,
    pruning: Option<String>,
    paths: Vec<PathBuf>,
}

/// The Parquet leaf of top-level column `root` when it is a single primitive column (not a
/// struct, list or map), the only case bloom filters and dictionaries can decide.
pub(crate) fn single_leaf(
    schema: &parquet::schema::types::SchemaDescriptor,
    root: usize,
) -> Option<usize> {
    let mut leaves = (0..schema.num_columns()).filter(|&l| schema.get_column_root_idx(l) == root);
    let leaf = leaves.next()?;
    let flat = leaves.next().is_none() && schema.column(leaf).max_rep_level() == 0;
    flat.then_some(leaf)
}

pub(crate) fn catch_corruption<T>(
    path: &std::path::Path,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    // A corrupt file must never take the process down: decoder panics become errors.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = ferrospark_common::workers::panic_message(&p);
            Err(FerroError::parquet(path, format!("corrupt file ({msg})")))
        }
    }
}

/// An opened file and its parsed footer, and whether the footer came from the cache.
struct Footer {
    source: FileSource,
    meta: ArrowReaderMetadata,
    cached: bool,
}

fn load_footer(path: &std::path::Path, page_index: bool, cache_budget: usize) -> Result<Footer> {
    catch_corruption(path, || {
        let source = FileSource::open(path)?;
        let cacheable = source.version().filter(|_| cache_budget > 0);
        if let Some(meta) = cacheable.and_then(|v| footer_cache::get(path, page_index, v)) {
            source.close();
            return Ok(Footer {
                source,
                meta,
                cached: true,
            });
        }
        let policy = if page_index {
            PageIndexPolicy::Optional
        } else {
            PageIndexPolicy::Skip
        };
        let options = ArrowReaderOptions::new().with_page_index_policy(policy);
        let meta = ArrowReaderMetadata::load(&source, options.clone())
            .map_err(|e| FerroError::parquet(path, e))?;
        let meta = int96_as_nanoseconds(meta, options).map_err(|e| FerroError::parquet(path, e))?;
        if let Some(v) = cacheable {
            footer_cache::put(path, page_index, v, &meta, cache_budget);
        }
        source.close();
        Ok(Footer {
            source,
            meta,
            cached: false,
        })
    })
}

/// Legacy INT96 timestamps read as nanoseconds, as pyarrow reads them, whatever unit an
/// embedded Arrow schema remembers.
fn int96_as_nanoseconds(
    meta: ArrowReaderMetadata,
    options: ArrowReaderOptions,
) -> parquet::errors::Result<ArrowReaderMetadata> {
    let schema = meta.parquet_schema();
    let mut fields: Vec<Field> = meta
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut changed = false;
    for leaf in 0..schema.num_columns() {
        let descr = schema.column(leaf);
        let root = schema.get_column_root_idx(leaf);
        if descr.physical_type() != PhysicalType::INT96
            || descr.max_def_level() > 1
            || descr.max_rep_level() > 0
        {
            continue;
        }
        if let Some(f) = fields.get_mut(root) {
            let ns = arrow_schema::DataType::Timestamp(arrow_schema::TimeUnit::Nanosecond, None);
            if matches!(f.data_type(), arrow_schema::DataType::Timestamp(..))
                && f.data_type() != &ns
            {
                *f = f.clone().with_data_type(ns);
                changed = true;
            }
        }
    }
    if !changed {
        return Ok(meta);
    }
    let hint = Arc::new(Schema::new_with_metadata(
        fields,
        meta.schema().metadata().clone(),
    ));
    ArrowReaderMetadata::try_new(meta.metadata().clone(), options.with_schema(hint))
}

fn load_footers(
    paths: &[PathBuf],
    threads: usize,
    page_index: bool,
    cache_budget: usize,
) -> Result<Vec<Footer>> {
    let load = |p: &PathBuf| load_footer(p, page_index, cache_budget);
    if paths.len() <= 1 || threads <= 1 {
        return paths.iter().map(load).collect();
    }
    let chunk = paths.len().div_ceil(threads);
    let parts = ferrospark_common::workers::try_run_each(
        paths.chunks(chunk).collect(),
        "a footer reader thread",
        |part: &[PathBuf]| part.iter().map(load).collect::<Result<Vec<_>>>(),
    )?;
    Ok(parts.into_iter().flatten().collect())
}

fn describe_difference(a: &Schema, b: &Schema) -> String {
    for (i, fa) in a.fields().iter().enumerate() {
        match b.fields().get(i) {
            Some(fb) if fb.name() != fa.name() => {
                return format!(
                    "column {i} is `{}` in one and `{}` in the other",
                    fa.name(),
                    fb.name()
                )
            }
            Some(fb) if fb.data_type() != fa.data_type() => {
                return format!(
                    "column `{}` is {} in one and {} in the other",
                    fa.name(),
                    spark_type_name(fa.data_type()),
                    spark_type_name(fb.data_type())
                )
            }
            None => return format!("column `{}` is missing from one", fa.name()),
            _ => {}
        }
    }
    format!(
        "they have {} and {} columns",
        a.fields().len(),
        b.fields().len()
    )
}

fn same_shape(a: &Schema, b: &Schema) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| x.name() == y.name() && x.data_type().equals_datatype(y.data_type()))
}

impl ParquetScan {
    /// Plans a scan of `paths` (files or directories).
    pub fn try_new(paths: &[PathBuf], options: ParquetScanOptions) -> Result<Self> {
        let listing = match &options.partition_dirs {
            Some(parts) => crate::listing::list_partition_dirs(parts, options.threads)?,
            None => list_files(paths)?,
        };
        Self::from_listing(paths.to_vec(), listing, options)
    }

    /// Plans one Spark split: a single file with partition values typed by the driver.
    pub fn for_split(
        split: &ScanSplit,
        partition_fields: Vec<Field>,
        mut options: ParquetScanOptions,
    ) -> Result<Self> {
        let size = std::fs::metadata(&split.path)
            .map_err(|e| FerroError::io(&split.path, e))?
            .len();
        let listing = Listing {
            files: vec![crate::listing::PartitionedFile {
                path: split.path.clone(),
                size,
                partition_values: split.partition_values.clone(),
            }],
            partition_fields,
        };
        options.row_groups = Some(split.row_groups.clone());
        // The driver kept these row groups after reading their bloom filters and dictionaries;
        // reading them again on every executor could only answer "keep". Statistics and the
        // page index come with the footer and are applied again (pages are per task).
        options.bloom_filter = false;
        options.dictionary_filter = false;
        Self::from_listing(vec![split.path.clone()], listing, options)
    }

    /// Plans a scan of files already listed (`paths` as given, for splits and messages).
    pub fn from_listing(
        paths: Vec<PathBuf>,
        listing: Listing,
        options: ParquetScanOptions,
    ) -> Result<Self> {
        let start = Instant::now();
        let metrics = new_metrics();
        // Spark skips zero-length files. A task given splits opens only their files (and the
        // first file when it was given none of this scan's, for the schema: it reads no row
        // group of it).
        let wanted = |i: usize| match &options.only {
            Some(only) => i == 0 || only.contains_key(&listing.files[i].path),
            None => true,
        };
        let files: Vec<usize> = (0..listing.files.len())
            .filter(|&i| listing.files[i].size > 0 && wanted(i))
            .collect();
        let file_paths: Vec<PathBuf> = files
            .iter()
            .map(|&i| listing.files[i].path.clone())
            .collect();
        let footers = load_footers(
            &file_paths,
            options.threads,
            options.filter_pushdown,
            options.metadata_cache_bytes,
        )?;
        let cached = footers.iter().filter(|f| f.cached).count();
        metrics.add("footers_cached", cached as u64);
        let metas: Vec<(FileSource, ArrowReaderMetadata)> =
            footers.into_iter().map(|f| (f.source, f.meta)).collect();

        let file_schema: SchemaRef = match metas.first() {
            Some((_, m)) => Arc::new(Schema::new(m.schema().fields().clone())),
            None => Arc::new(Schema::empty()),
        };
        for ((_, m), p) in metas.iter().zip(&file_paths).skip(1) {
            if !same_shape(&file_schema, m.schema()) {
                return Err(FerroError::Schema(format!(
                    "Parquet files have different schemas: {} and {}: {}. Read them separately or rewrite them with one schema.",
                    file_paths[0].display(),
                    p.display(),
                    describe_difference(&file_schema, m.schema())
                )));
            }
        }
        for pf in &listing.partition_fields {
            if file_schema
                .fields()
                .iter()
                .any(|f| f.name().eq_ignore_ascii_case(pf.name()))
            {
                return Err(FerroError::Schema(format!(
                    "partition column `{}` is also a column inside the files",
                    pf.name()
                )));
            }
        }
        let data_columns = file_schema.fields().len();
        let mut table_fields: Vec<Field> = file_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        table_fields.extend(listing.partition_fields.iter().cloned());
        let table_schema = Arc::new(Schema::new(table_fields));

        let output: Vec<usize> = match &options.columns {
            None => (0..table_schema.fields().len()).collect(),
            Some(cols) => cols
                .iter()
                .map(|c| resolve_column(&table_schema, c))
                .collect::<Result<_>>()?,
        };
        let projected = Arc::new(Schema::new(
            output
                .iter()
                .map(|&i| table_schema.field(i).clone())
                .collect::<Vec<_>>(),
        ));
        let output_schema = if options.spark_types {
            let int96 = int96_columns(metas.first().map(|(_, m)| m), data_columns, &output);
            spark_types::spark_schema(&projected, &int96)?
        } else {
            projected
        };

        let predicate = match &options.filter {
            None => None,
            Some(e) => {
                let ctx = BindContext {
                    schema: &table_schema,
                    session_tz: &options.session_tz,
                    ansi: true,
                    legacy_coding: false,
                    legacy_charsets: false,
                    decimal_precision_loss: true,
                };
                Some(bind_predicate(e, &ctx)?)
            }
        };
        let predicate = with_key_filters(predicate, &options.key_filters, &table_schema, &metas)?;
        let pruning = if options.filter_pushdown {
            predicate
                .as_ref()
                .and_then(|p| PruningPredicate::try_new(p, &table_schema))
        } else {
            None
        };

        let decoded_columns: Vec<usize> = {
            let mut v: Vec<usize> = output
                .iter()
                .copied()
                .filter(|&c| c < data_columns)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut entries = Vec::with_capacity(files.len());
        for (&i, (source, meta)) in files.iter().zip(metas) {
            let partition_values = listing.partition_scalars(i)?;
            let (row_filter, partition_conjuncts) =
                predicate.as_ref().map_or_else(Default::default, |p| {
                    super::exec::row_filter_groups(p, data_columns, &partition_values)
                });
            let schema = meta.parquet_schema();
            let read_leaves = (0..schema.num_columns())
                .filter(|&leaf| {
                    let root = schema.get_column_root_idx(leaf);
                    decoded_columns.contains(&root)
                        || row_filter.iter().any(|g| g.columns.contains(&root))
                })
                .collect();
            entries.push(FileEntry {
                source,
                meta,
                partition_values,
                raw_partition_values: listing.files[i].partition_values.clone(),
                row_filter,
                partition_conjuncts,
                read_leaves,
            });
        }
        metrics.add("files_total", entries.len() as u64);

        let shared_pred = predicate.clone();
        let mut scan = ParquetScan {
            shared: Arc::new(ScanShared {
                files: entries,
                table_schema: table_schema.clone(),
                data_columns,
                decoded_columns,
                output,
                output_schema,
                predicate: shared_pred,
                options,
                metrics: metrics.clone(),
            }),
            tasks: Vec::new(),
            pruning: pruning.as_ref().map(|p| p.to_string()),
            paths,
        };
        scan.tasks = scan.plan_tasks(pruning.as_ref())?;
        scan.split_for_parallelism();
        metrics.add_elapsed("plan_time_ns", start);
        Ok(scan)
    }

    fn plan_tasks(&self, pruning: Option<&PruningPredicate>) -> Result<Vec<ScanTask>> {
        let s = &self.shared;
        let m = &s.metrics;
        let n_files = s.files.len();
        // 1. Files, by partition values.
        let mut keep_file = vec![true; n_files];
        if let Some(p) = pruning {
            let part_cols: Vec<usize> = p
                .columns()
                .iter()
                .copied()
                .filter(|&c| c >= s.data_columns)
                .collect();
            if !part_cols.is_empty() && n_files > 0 {
                let stats = part_cols
                    .iter()
                    .map(|&c| {
                        Ok((
                            c,
                            self.partition_stats(
                                c,
                                &(0..n_files).collect::<Vec<_>>(),
                                &vec![1; n_files],
                            )?,
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?;
                keep_file = p.keep(n_files, &stats, &Int64Array::from(vec![1i64; n_files]))?;
            }
        }
        // Conjuncts over partition columns only are decided exactly per file.
        for (fi, keep) in keep_file.iter_mut().enumerate() {
            if *keep {
                *keep = self.partition_conjuncts_hold(fi)?;
            }
        }
        let conjuncts: Vec<&PhysicalExpr> = match (&s.predicate, s.options.filter_pushdown) {
            (Some(pred), true) => pred.conjuncts(),
            _ => Vec::new(),
        };
        let mut tasks = Vec::new();
        for (fi, file) in s.files.iter().enumerate() {
            // Bloom and dictionary pruning open files again: hold one at a time.
            if let Some(previous) = fi.checked_sub(1) {
                s.files[previous].source.close();
            }
            let md = file.meta.metadata();
            let rgs: Vec<usize> = match (&s.options.only, &s.options.row_groups) {
                (Some(only), _) => only
                    .get(file.source.path())
                    .map(|r| {
                        r.iter()
                            .copied()
                            .filter(|&g| g < md.num_row_groups())
                            .collect()
                    })
                    .unwrap_or_default(),
                (None, Some(r)) => r
                    .iter()
                    .copied()
                    .filter(|&g| g < md.num_row_groups())
                    .collect(),
                (None, None) => (0..md.num_row_groups()).collect(),
            };
            let rows: Vec<i64> = rgs.iter().map(|&g| md.row_group(g).num_rows()).collect();
            m.add("row_groups_total", rgs.len() as u64);
            m.add("rows_total", rows.iter().sum::<i64>().max(0) as u64);
            if !keep_file[fi] {
                m.add("files_pruned", 1);
                continue;
            }
            catch_corruption(file.source.path(), || {
                let bloom_probes = if s.options.bloom_filter {
                    bloom::probes(file, &conjuncts, s.data_columns)
                } else {
                    Vec::new()
                };
                let dictionary_probes = if s.options.dictionary_filter {
                    dictionary::probes(file, &conjuncts, s.data_columns, &s.table_schema)
                } else {
                    Vec::new()
                };
                let converters =
                    pruning.map_or_else(Vec::new, |p| self.converters(fi, p.columns()));
                let mut keep = vec![true; rgs.len()];
                if let Some(p) = pruning {
                    let stats = self.row_group_stats(fi, p.columns(), &rgs, &rows, &converters)?;
                    keep = p.keep(rgs.len(), &stats, &Int64Array::from(rows.clone()))?;
                    m.add(
                        "row_groups_pruned_statistics",
                        keep.iter().filter(|k| !**k).count() as u64,
                    );
                }
                for (k, &g) in rgs.iter().enumerate() {
                    if !keep[k] {
                        continue;
                    }
                    if bloom::prunes(file, g, &bloom_probes) {
                        m.add("row_groups_pruned_bloom_filter", 1);
                        continue;
                    }
                    if dictionary::prunes(file, g, &dictionary_probes)? {
                        m.add("row_groups_pruned_dictionary", 1);
                        continue;
                    }
                    let selection = match pruning {
                        Some(p) => self.page_selection(fi, g, p, &converters)?,
                        None => None,
                    };
                    if let Some(sel) = &selection {
                        if !sel.selects_any() {
                            m.add("row_groups_pruned_statistics", 1);
                            continue;
                        }
                    }
                    tasks.push(ScanTask {
                        file: fi,
                        row_group: g,
                        selection,
                    });
                }
                Ok(())
            })?;
        }
        if let Some(last) = s.files.last() {
            last.source.close();
        }
        m.add("row_groups_read", tasks.len() as u64);
        for t in &tasks {
            self.count_pages_and_rows(t);
        }
        Ok(tasks)
    }

    fn partition_conjuncts_hold(&self, fi: usize) -> Result<bool> {
        let one = arrow_array::RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        for c in &self.shared.files[fi].partition_conjuncts {
            let v = ferrospark_expr::evaluate_predicate(c, &one)?;
            if !(v.is_valid(0) && v.value(0)) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn partition_stats(&self, c: usize, files: &[usize], counts: &[i64]) -> Result<ColumnStats> {
        let s = &self.shared;
        let p = c - s.data_columns;
        let mut values: Vec<ArrayRef> = Vec::new();
        let mut nulls = Vec::new();
        for (&f, &n) in files.iter().zip(counts) {
            let v = s.files[f].partition_values[p].clone();
            nulls.push(if v.is_null(0) { n as u64 } else { 0 });
            values.push(v);
        }
        let refs: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
        let all = if refs.is_empty() {
            arrow_array::new_empty_array(s.table_schema.field(c).data_type())
        } else {
            arrow_select::concat::concat(&refs)?
        };
        Ok(ColumnStats {
            min: all.clone(),
            max: all,
            nulls: Arc::new(UInt64Array::from(nulls)),
        })
    }

    /// Statistics converters of file `fi` for the data columns among `columns` (those the
    /// file's schema lets parquet convert), built once per file.
    fn converters(&self, fi: usize, columns: &[usize]) -> Vec<(usize, StatisticsConverter<'_>)> {
        let s = &self.shared;
        let meta = &s.files[fi].meta;
        columns
            .iter()
            .filter(|&&c| c < s.data_columns)
            .filter_map(|&c| {
                let name = s.table_schema.field(c).name();
                let conv = StatisticsConverter::try_new(name, meta.schema(), meta.parquet_schema())
                    .ok()?;
                Some((c, conv))
            })
            .collect()
    }

    fn row_group_stats(
        &self,
        fi: usize,
        columns: &[usize],
        rgs: &[usize],
        rows: &[i64],
        converters: &[(usize, StatisticsConverter<'_>)],
    ) -> Result<Vec<(usize, ColumnStats)>> {
        let s = &self.shared;
        let md = s.files[fi].meta.metadata();
        let mut out = Vec::new();
        for &c in columns {
            if c >= s.data_columns {
                out.push((c, self.partition_stats(c, &vec![fi; rgs.len()], rows)?));
                continue;
            }
            let Some((_, conv)) = converters.iter().find(|(cc, _)| *cc == c) else {
                continue;
            };
            let groups = rgs.iter().map(|&g| md.row_group(g));
            let (Ok(min), Ok(max), Ok(nulls)) = (
                conv.row_group_mins(groups.clone()),
                conv.row_group_maxes(groups.clone()),
                conv.row_group_null_counts(groups),
            ) else {
                continue;
            };
            out.push((
                c,
                ColumnStats {
                    min,
                    max,
                    nulls: Arc::new(nulls),
                },
            ));
        }
        Ok(out)
    }

    /// Rows of row group `g` whose pages can match, from the page index; `None` when every
    /// row may match or there is no page index.
    fn page_selection(
        &self,
        fi: usize,
        g: usize,
        p: &PruningPredicate,
        converters: &[(usize, StatisticsConverter<'_>)],
    ) -> Result<Option<RowSelection>> {
        let s = &self.shared;
        let file = &s.files[fi];
        let md = file.meta.metadata();
        let (Some(ci), Some(oi)) = (md.column_index(), md.offset_index()) else {
            return Ok(None);
        };
        let total = md.row_group(g).num_rows().max(0) as usize;
        let mut result: Option<RowSelection> = None;
        for (c, conv) in converters {
            let c = *c;
            let Some(leaf) = conv.parquet_column_index() else {
                continue;
            };
            let Some(locations) = oi
                .get(g)
                .and_then(|r| r.get(leaf))
                .map(|o| o.page_locations())
            else {
                continue;
            };
            if locations.is_empty() || ci.get(g).and_then(|r| r.get(leaf)).is_none() {
                continue;
            }
            let (Ok(min), Ok(max), Ok(nulls)) = (
                conv.data_page_mins(ci, oi, [&g]),
                conv.data_page_maxes(ci, oi, [&g]),
                conv.data_page_null_counts(ci, oi, [&g]),
            ) else {
                continue;
            };
            let n = locations.len();
            if min.len() != n || max.len() != n || nulls.len() != n {
                continue;
            }
            let mut counts = Vec::with_capacity(n);
            for (i, loc) in locations.iter().enumerate() {
                let end = locations
                    .get(i + 1)
                    .map_or(total as i64, |l| l.first_row_index);
                counts.push((end - loc.first_row_index).max(0));
            }
            let mut stats = vec![(
                c,
                ColumnStats {
                    min,
                    max,
                    nulls: Arc::new(nulls),
                },
            )];
            for &pc in p.columns().iter().filter(|&&pc| pc >= s.data_columns) {
                stats.push((pc, self.partition_stats(pc, &vec![fi; n], &counts)?));
            }
            let keep = p.keep(n, &stats, &Int64Array::from(counts.clone()))?;
            if keep.iter().all(|k| *k) {
                continue;
            }
            let mut selectors: Vec<RowSelector> = Vec::new();
            for (k, &cnt) in keep.iter().zip(&counts) {
                let cnt = cnt as usize;
                if cnt == 0 {
                    continue;
                }
                selectors.push(if *k {
                    RowSelector::select(cnt)
                } else {
                    RowSelector::skip(cnt)
                });
            }
            let sel = RowSelection::from(selectors);
            result = Some(match result {
                None => sel,
                Some(prev) => prev.intersection(&sel),
            });
        }
        Ok(result)
    }

    /// Records pages read/skipped and rows decoded for a task, over every column it reads.
    fn count_pages_and_rows(&self, t: &ScanTask) {
        let s = &self.shared;
        let file = &s.files[t.file];
        let md = file.meta.metadata();
        let rg = md.row_group(t.row_group);
        let total = rg.num_rows().max(0) as usize;
        let rows = t.selection.as_ref().map_or(total, |sel| sel.row_count());
        s.metrics.add("rows_read", rows as u64);
        let ranges: Vec<(usize, usize)> = match &t.selection {
            None => vec![(0, total)],
            Some(sel) => {
                let mut pos = 0;
                let mut out = Vec::new();
                for sel in sel.iter() {
                    if !sel.skip {
                        out.push((pos, pos + sel.row_count));
                    }
                    pos += sel.row_count;
                }
                out
            }
        };
        let oi = md.offset_index();
        for &leaf in &file.read_leaves {
            let col = rg.column(leaf);
            let Some(locations) = oi
                .and_then(|o| o.get(t.row_group))
                .and_then(|r| r.get(leaf))
                .map(|o| o.page_locations())
            else {
                s.metrics
                    .add("bytes_read", col.compressed_size().max(0) as u64);
                continue;
            };
            s.metrics.add("pages_total", locations.len() as u64);
            for (i, loc) in locations.iter().enumerate() {
                let start = loc.first_row_index.max(0) as usize;
                let end = locations
                    .get(i + 1)
                    .map_or(total, |l| l.first_row_index.max(0) as usize);
                if ranges.iter().any(|&(a, b)| a < end && start < b) {
                    s.metrics
                        .add("bytes_read", loc.compressed_page_size.max(0) as u64);
                } else {
                    s.metrics.add("pages_pruned", 1);
                }
            }
        }
    }

    /// With fewer tasks than threads, splits large row groups into row ranges so every core
    /// works; only where the offset index lets each part skip the others' pages.
    fn split_for_parallelism(&mut self) {
        let s = self.shared.clone();
        let threads = s.options.threads.max(1);
        if self.tasks.is_empty() || self.tasks.len() >= threads {
            return;
        }
        let parts = threads.div_ceil(self.tasks.len());
        let mut out = Vec::new();
        for t in self.tasks.drain(..) {
            let md = s.files[t.file].meta.metadata();
            let total = md.row_group(t.row_group).num_rows().max(0) as usize;
            if md.offset_index().is_none() || total < 2 * s.options.batch_size {
                out.push(t);
                continue;
            }
            let step = total.div_ceil(parts);
            let mut start = 0;
            while start < total {
                let end = (start + step).min(total);
                let range = RowSelection::from(vec![
                    RowSelector::skip(start),
                    RowSelector::select(end - start),
                    RowSelector::skip(total - end),
                ]);
                let selection = match &t.selection {
                    None => range,
                    Some(sel) => sel.intersection(&range),
                };
                if selection.selects_any() {
                    out.push(ScanTask {
                        file: t.file,
                        row_group: t.row_group,
                        selection: Some(selection),
                    });
                }
                start = end;
            }
        }
        self.tasks = out;
    }

    /// The output schema.
    pub fn schema(&self) -> SchemaRef {
        self.shared.output_schema.clone()
    }

    /// This scan with some string or binary output columns (positions in the output) handed
    /// out dictionary-encoded, as `Dictionary(Int32, Utf8 | Binary)`: Parquet's dictionary
    /// pages become the arrays' dictionaries and rows carry only their codes, so a consumer
    /// that works on codes (a group table) skips materialising every value. Columns the
    /// filter reads, partition columns and columns not stored as plain byte arrays in every
    /// file are left as they are; the output schema says which changed.
    pub fn with_dictionary_output(&self, columns: &[usize]) -> Result<ParquetScan> {
        use arrow_schema::DataType;
        let s = &self.shared;
        let filtered = s
            .predicate
            .as_ref()
            .map(|p| p.column_indices())
            .unwrap_or_default();
        let byte_array_everywhere = |c: usize| {
            s.files.iter().all(|f| {
                let schema = f.meta.parquet_schema();
                single_leaf(schema, c).is_some_and(|leaf| {
                    schema.column(leaf).physical_type() == PhysicalType::BYTE_ARRAY
                })
            })
        };
        // (output position, table column, dictionary type)
        let mut chosen: Vec<(usize, usize, DataType)> = Vec::new();
        for &pos in columns {
            let Some(&c) = s.output.get(pos) else {
                continue;
            };
            if c >= s.data_columns || filtered.contains(&c) || !byte_array_everywhere(c) {
                continue;
            }
            let value = match s.output_schema.field(pos).data_type() {
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
                DataType::Binary | DataType::BinaryView | DataType::LargeBinary => DataType::Binary,
                _ => continue,
            };
            let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(value));
            chosen.push((pos, c, dict));
        }
        let files = if chosen.is_empty() {
            s.files.clone()
        } else {
            s.files
                .iter()
                .map(|f| {
                    let mut fields: Vec<Field> = f
                        .meta
                        .schema()
                        .fields()
                        .iter()
                        .map(|x| x.as_ref().clone())
                        .collect();
                    for (_, c, dict) in &chosen {
                        if let Some(field) = fields.get_mut(*c) {
                            *field = field.clone().with_data_type(dict.clone());
                        }
                    }
                    let hint = Arc::new(Schema::new_with_metadata(
                        fields,
                        f.meta.schema().metadata().clone(),
                    ));
                    let meta = ArrowReaderMetadata::try_new(
                        f.meta.metadata().clone(),
                        ArrowReaderOptions::new().with_schema(hint),
                    )
                    .map_err(|e| FerroError::parquet(f.source.path(), e))?;
                    Ok(FileEntry { meta, ..f.clone() })
                })
                .collect::<Result<Vec<_>>>()?
        };
        s.metrics.add("columns_as_dictionary", chosen.len() as u64);
        let mut out_fields: Vec<Field> = s
            .output_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        for (pos, _, dict) in &chosen {
            out_fields[*pos] = out_fields[*pos].clone().with_data_type(dict.clone());
        }
        let shared = ScanShared {
            files,
            table_schema: s.table_schema.clone(),
            data_columns: s.data_columns,
            output: s.output.clone(),
            decoded_columns: s.decoded_columns.clone(),
            output_schema: Arc::new(Schema::new_with_metadata(
                out_fields,
                s.output_schema.metadata().clone(),
            )),
            predicate: s.predicate.clone(),
            options: s.options.clone(),
            metrics: s.metrics.clone(),
        };
        Ok(ParquetScan {
            shared: Arc::new(shared),
            tasks: self.tasks.clone(),
            pruning: self.pruning.clone(),
            paths: self.paths.clone(),
        })
    }

    /// The scan's metrics (plan counts now; rows, batches and decode time as it runs).
    pub fn metrics(&self) -> &MetricsSet {
        &self.shared.metrics
    }

    /// Partition columns with their inferred types.
    pub fn partition_fields(&self) -> &[FieldRef] {
        let s = &self.shared;
        &s.table_schema.fields()[s.data_columns..]
    }

    /// The split size the scan's configuration asks for (`spark.sql.files.maxPartitionBytes`).
    pub fn max_partition_bytes(&self) -> u64 {
        self.shared.options.max_partition_bytes
    }

    /// Groups the surviving row groups into splits of about `max_bytes` compressed bytes,
    /// never crossing files, for Spark to run as tasks.
    pub fn splits(&self, max_bytes: u64) -> Vec<ScanSplit> {
        let s = &self.shared;
        let mut out: Vec<ScanSplit> = Vec::new();
        for t in &self.tasks {
            let file = &s.files[t.file];
            let bytes = file
                .meta
                .metadata()
                .row_group(t.row_group)
                .compressed_size()
                .max(0) as u64;
            match out.last_mut() {
                Some(last)
                    if last.path == file.source.path()
                        && last.row_groups.last() == Some(&t.row_group) => {}
                Some(last)
                    if last.path == file.source.path()
                        && last.bytes + bytes <= max_bytes.max(1) =>
                {
                    last.row_groups.push(t.row_group);
                    last.bytes += bytes;
                }
                _ => out.push(ScanSplit {
                    path: file.source.path().to_path_buf(),
                    row_groups: vec![t.row_group],
                    partition_values: file.raw_partition_values.clone(),
                    bytes,
                }),
            }
        }
        out
    }

    /// A readable summary in the spirit of Spark's `FileScan parquet` node.
    pub fn explain(&self) -> String {
        let s = &self.shared;
        let m = &s.metrics;
        let cols: Vec<&str> = s
            .output
            .iter()
            .map(|&i| s.table_schema.field(i).name().as_str())
            .collect();
        let mut out = format!(
            "ParquetScan [{}]\n  Location: {}\n",
            cols.join(", "),
            self.paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        if !self.partition_fields().is_empty() {
            let pf: Vec<String> = self
                .partition_fields()
                .iter()
                .map(|f| format!("{}: {}", f.name(), spark_type_name(f.data_type())))
                .collect();
            out += &format!("  PartitionColumns: [{}]\n", pf.join(", "));
        }
        if let Some(p) = &s.predicate {
            out += &format!("  Filter: {p}\n");
        }
        if let Some(p) = &self.pruning {
            out += &format!("  PruningPredicate: {p}\n");
        }
        out += &format!(
            "  Files: {} ({} pruned by partition values)\n  RowGroups: {} of {} to read ({} pruned by statistics or page index, {} by bloom filters, {} by dictionaries)\n  Pages: {} of {} skipped\n  Tasks: {} on {} threads, batch size {}",
            m.get("files_total"),
            m.get("files_pruned"),
            m.get("row_groups_read"),
            m.get("row_groups_total"),
            m.get("row_groups_pruned_statistics"),
            m.get("row_groups_pruned_bloom_filter"),
            m.get("row_groups_pruned_dictionary"),
            m.get("pages_pruned"),
            m.get("pages_total"),
            self.tasks.len(),
            s.options.threads.min(self.tasks.len().max(1)),
            s.options.batch_size
        );
        out
    }
}

fn int96_columns(
    meta: Option<&ArrowReaderMetadata>,
    data_columns: usize,
    output: &[usize],
) -> Vec<bool> {
    let Some(meta) = meta else {
        return vec![false; output.len()];
    };
    let schema = meta.parquet_schema();
    output
        .iter()
        .map(|&c| {
            c < data_columns
                && (0..schema.num_columns()).any(|leaf| {
                    schema.get_column_root_idx(leaf) == c
                        && schema.column(leaf).physical_type() == PhysicalType::INT96
                })
        })
        .collect()
}

/// Above this expected share of rows kept, a runtime filter tests its keys' range only.
const MAX_MEMBERSHIP_SHARE: f64 = 0.5;

/// The share assumed kept by keys whose column has no integer range to compare with.
const UNKNOWN_KEY_SHARE: f64 = 0.5;

/// `predicate` and each runtime filter: the keys' range (which statistics and the page index
/// prune by) and their set (which the row filter tests before other columns decode).
fn with_key_filters(
    predicate: Option<PhysicalExpr>,
    filters: &[super::KeyFilter],
    schema: &Schema,
    metas: &[(FileSource, ArrowReaderMetadata)],
) -> Result<Option<PhysicalExpr>> {
    use ferrospark_expr::{BinaryOp, Literal};
    let rows: i64 = metas
        .iter()
        .map(|(_, m)| m.metadata().file_metadata().num_rows())
        .sum();
    // Each filter's tests, with the share of rows its keys are expected to keep.
    let mut tests: Vec<(f64, Vec<PhysicalExpr>)> = Vec::new();
    for f in filters {
        // With about as many keys as rows, nearly every row would pass.
        if f.set.len() as i64 * 2 > rows {
            continue;
        }
        let index = resolve_column(schema, &f.column)?;
        let field = schema.field(index);
        if field.data_type() != f.set.data_type() {
            continue;
        }
        // Integer keys against the column's range in the files: the keys' share of the values
        // the range holds is about the share of rows they keep. A filter keeping most rows
        // (the suppliers of Q9's parts: 9,866 of 10,000) costs a membership test per row and
        // spares the join little, so only its range is tested, and nothing where the files
        // hold no value outside the keys' range.
        let mut membership = f.set.dense_range().is_none();
        let mut share = UNKNOWN_KEY_SHARE;
        if let (Some(keys), Some(column)) = (f.set.int_bounds(), int_range(metas, field.name())) {
            share = kept_share(f.set.len(), keys, column);
            if share > MAX_MEMBERSHIP_SHARE {
                membership = false;
                if keys.0 <= column.0 && column.1 <= keys.1 {
                    continue;
                }
            }
        }
        let col = || {
            Box::new(PhysicalExpr::Column {
                index,
                name: field.name().clone(),
                data_type: field.data_type().clone(),
            })
        };
        let mut parts = Vec::new();
        match f.set.bounds() {
            None => parts.push(PhysicalExpr::Literal(Literal::boolean(false))),
            Some((lo, hi)) => {
                for (op, v) in [(BinaryOp::GtEq, lo), (BinaryOp::LtEq, hi)] {
                    parts.push(PhysicalExpr::Compare {
                        op,
                        left: col(),
                        right: Box::new(PhysicalExpr::Literal(v.clone())),
                    });
                }
                if membership {
                    parts.push(PhysicalExpr::InSet {
                        expr: col(),
                        set: f.set.clone(),
                    });
                }
            }
        }
        tests.push((share, parts));
    }
    // The most selective first: the row filter decodes each later column only for the rows
    // earlier ones kept.
    tests.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = predicate;
    for p in tests.into_iter().flat_map(|(_, parts)| parts) {
        out = Some(match out {
            None => p,
            Some(e) => PhysicalExpr::And(Box::new(e), Box::new(p)),
        });
    }
    Ok(out)
}

/// The share of a column's rows that `len` integer keys spanning `keys` keep, taking the values
/// of the column's range `column` as equally likely: the keys' count over the values of the two
/// ranges' overlap (0 without overlap).
fn kept_share(len: usize, keys: (i64, i64), column: (i64, i64)) -> f64 {
    let overlap = keys.1.min(column.1) as i128 - keys.0.max(column.0) as i128 + 1;
    if overlap <= 0 {
        return 0.0;
    }
    (len as f64 / overlap as f64).min(1.0)
}

/// The smallest and largest value of integer column `name` over every row group of the files,
/// from their statistics; `None` where some row group has none.
fn int_range(metas: &[(FileSource, ArrowReaderMetadata)], name: &str) -> Option<(i64, i64)> {
    let mut range: Option<(i64, i64)> = None;
    for (_, meta) in metas {
        let conv = StatisticsConverter::try_new(name, meta.schema(), meta.parquet_schema()).ok()?;
        let groups = meta.metadata().row_groups();
        for (stats, lowest) in [
            (conv.row_group_mins(groups.iter()).ok()?, true),
            (conv.row_group_maxes(groups.iter()).ok()?, false),
        ] {
            let ints = arrow_cast::cast(&stats, &arrow_schema::DataType::Int64).ok()?;
            let ints =
                arrow_array::cast::AsArray::as_primitive::<arrow_array::types::Int64Type>(&ints);
            if ints.null_count() > 0 {
                return None;
            }
            for &v in ints.values() {
                let (lo, hi) = range.get_or_insert((v, v));
                if lowest {
                    *lo = (*lo).min(v);
                } else {
                    *hi = (*hi).max(v);
                }
            }
        }
    }
    range
}
