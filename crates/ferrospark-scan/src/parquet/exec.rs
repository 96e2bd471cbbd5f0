//! Running a planned scan: worker threads claim row-group tasks and decode them (filter
//! columns first through a `RowFilter`, then only surviving rows of the others); a
//! [`ScanStream`] hands their batches out in task order through an [`OrderedQueue`].

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{
    Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, RecordBatchReader, Scalar,
};
use arrow_schema::{ArrowError, SchemaRef};
use ferrospark_common::progress::TASKS_DONE;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::{evaluate_predicate, filter_batch, ColumnarValue, Literal, PhysicalExpr};
use parquet::arrow::arrow_reader::{
    ArrowPredicateFn, ParquetRecordBatchReaderBuilder, RowFilter, RowSelection, RowSelectionPolicy,
};
use parquet::arrow::ProjectionMask;

use super::dictionary_codes::{row_verdicts, take_kept, ChunkCodes};
use super::ordered::OrderedQueue;
use super::plan::{catch_corruption, single_leaf, FileEntry, ParquetScan, ScanShared, ScanTask};
use super::source::RowGroupChunks;
use super::spark_types::to_spark_batch;

/// Batches a task ahead of the reader may queue.
const SLOT_CAPACITY: usize = 4;

/// The running scan: an iterator of batches in file order (also an Arrow `RecordBatchReader`).
pub struct ScanStream {
    schema: SchemaRef,
    queue: Arc<OrderedQueue>,
}

impl ParquetScan {
    /// Starts the scan on worker threads and returns the stream of its batches.
    pub fn execute(&self) -> ScanStream {
        let shared = self.shared.clone();
        let tasks = Arc::new(self.tasks.clone());
        let workers = shared.options.threads.max(1).min(tasks.len().max(1));
        let queue = Arc::new(OrderedQueue::new(
            tasks.len(),
            2 * workers + 1,
            SLOT_CAPACITY,
        ));
        for w in 0..workers {
            let (shared, tasks, q) = (shared.clone(), tasks.clone(), queue.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("ferrospark-scan-{w}"))
                .spawn(move || worker(&shared, &tasks, &q));
            if spawned.is_err() && w == 0 {
                // Without any thread nothing would run: fail the first task instead of hanging.
                queue.finish(
                    0,
                    Some(FerroError::Internal("could not start a scan thread".into())),
                );
            }
        }
        ScanStream {
            schema: shared.output_schema.clone(),
            queue,
        }
    }
}

impl ParquetScan {
    /// Runs the scan with one consumer per worker thread instead of one ordered stream: each
    /// thread makes its own state with `make`, claims tasks (in no particular order) and feeds
    /// every batch it decodes to `consume`. Returns the states once every task is done. This is
    /// how an operator runs fused into the scan (a partial aggregation per thread).
    pub fn fold_tasks<S, M, C>(&self, make: M, consume: C) -> Result<Vec<S>>
    where
        S: Send,
        M: Fn() -> Result<S> + Sync,
        C: Fn(&mut S, RecordBatch) -> Result<()> + Sync,
    {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let shared = &*self.shared;
        let tasks = &self.tasks;
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let workers = shared.options.threads.max(1).min(tasks.len().max(1));
        let run_worker = || -> Result<S> {
            let mut state = make()?;
            loop {
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                if shared.cancelled() {
                    failed.store(true, Ordering::Relaxed);
                    return Err(FerroError::Cancelled);
                }
                let t = next.fetch_add(1, Ordering::Relaxed);
                let Some(task) = tasks.get(t) else { break };
                let path = shared.files[task.file].source.path();
                let started = Instant::now();
                let mut err = None;
                let r = catch_corruption(path, || {
                    run_task(shared, task, &mut |b| match consume(&mut state, b) {
                        Ok(()) => true,
                        Err(e) => {
                            err = Some(e);
                            false
                        }
                    })
                });
                shared.metrics.add_elapsed("decode_time_ns", started);
                if let Some(e) = err {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                if let Err(e) = r {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                shared.metrics.add(TASKS_DONE, 1);
            }
            Ok(state)
        };
        ferrospark_common::workers::try_run_each((0..workers).collect(), "a scan thread", |_| {
            run_worker()
        })
    }
}

fn worker(shared: &ScanShared, tasks: &[ScanTask], queue: &OrderedQueue) {
    while let Some(t) = queue.claim() {
        if shared.cancelled() {
            queue.finish(t, Some(FerroError::Cancelled));
            return;
        }
        let task = &tasks[t];
        let path = shared.files[task.file].source.path();
        let started = Instant::now();
        let result = catch_corruption(path, || run_task(shared, task, &mut |b| queue.push(t, b)));
        shared.metrics.add_elapsed("decode_time_ns", started);
        match result {
            Ok(true) => {
                shared.metrics.add(TASKS_DONE, 1);
                queue.finish(t, None)
            }
            // The reader went away: stop quietly.
            Ok(false) => return,
            Err(e) => {
                queue.finish(t, Some(e));
                return;
            }
        }
    }
}

/// Reads one task, emitting its batches; `Ok(false)` when the reader has gone away.
fn run_task(
    s: &ScanShared,
    task: &ScanTask,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<bool> {
    let file = &s.files[task.file];
    let path = file.source.path();
    let parquet_schema = file.meta.parquet_schema();
    let data_out = &s.decoded_columns;
    let rg = file.meta.metadata().row_group(task.row_group);
    let ranges = file
        .read_leaves
        .iter()
        .map(|&leaf| rg.column(leaf).byte_range())
        .collect();
    let chunks = RowGroupChunks::new(file.source.reopen()?, ranges);
    // Leading filter columns may be decided on their dictionary codes; the rest of the filter
    // then runs only on the rows they keep. Once under 1% of the rows are left, the row filter
    // reads the next columns faster, skipping the pages without any of those rows.
    let mut selection = task.selection.clone();
    let mut row_filter: &[FilterGroup] = &file.row_filter;
    // Rows to keep, applied to the decoded batches instead of as a selection.
    let mut mask: Option<arrow_buffer::BooleanBuffer> = None;
    // Output columns made from the codes their filter decided on, for the rows kept (see
    // `ChunkCodes`): the reader then does not decode them a second time.
    let mut decoded_early: Vec<(usize, ArrayRef)> = Vec::new();
    // Rows the codes kept while filter groups remain: applied by whichever way the rest of
    // the filter is read.
    let mut codes_kept: Option<arrow_buffer::BooleanBuffer> = None;
    let mut chunk_codes: Vec<(usize, ChunkCodes)> = Vec::new();
    let rows = usize::try_from(rg.num_rows()).unwrap_or(0);
    if selection.is_none() && s.options.dictionary_codes {
        let mut kept: Option<arrow_buffer::BooleanBuffer> = None;
        let mut left = rows;
        while left * 100 >= rows {
            let Some((group, rest)) = row_filter.split_first() else {
                break;
            };
            let keep_codes = output_from_codes(file, data_out, group);
            let Some((verdicts, codes)) =
                code_verdicts(file, task.row_group, &chunks, group, keep_codes)
            else {
                break;
            };
            if let Some(c) = codes {
                chunk_codes.push((group.columns[0], c));
            }
            let both = match kept.take() {
                Some(k) => &k & &verdicts,
                None => verdicts,
            };
            left = both.count_set_bits();
            kept = Some(both);
            row_filter = rest;
        }
        if let Some(k) = kept {
            s.metrics.add("row_groups_filtered_by_codes", 1);
            if left == 0 {
                return Ok(true);
            }
            if row_filter.is_empty() {
                // With the whole filter decided on codes, each filtered output column is its
                // dictionary's values at the kept rows' codes.
                take_from_codes(s, &chunk_codes, &k, data_out, &mut decoded_early)?;
                take_rest_by_codes(
                    s,
                    file,
                    task.row_group,
                    &chunks,
                    &k,
                    &chunk_codes,
                    &mut decoded_early,
                );
                if keep_rows(k, rows, &mut mask, &mut selection) {
                    s.metrics.add("row_groups_masked_by_codes", 1);
                }
            } else {
                codes_kept = Some(k);
            }
        }
    }
    // A last filter group reading every column the scan outputs would decode those columns
    // twice through a row filter (once to decide, once more for the kept rows): decode them
    // once and filter the batches instead (an `o_custkey IN keys(...)` runtime filter on a
    // scan of `o_custkey` alone: 68 -> 30 ms of decoding on SF1 orders).
    let mut post_filter: Option<&FilterGroup> = None;
    if let [group] = row_filter {
        if *data_out == group.columns {
            post_filter = Some(group);
            row_filter = &[];
            s.metrics.add("row_groups_filtered_after_decode", 1);
            if let Some(k) = codes_kept.take() {
                keep_rows(k, rows, &mut mask, &mut selection);
            }
        }
    }
    if post_filter.is_none()
        && !row_filter.is_empty()
        && row_filter
            .iter()
            .all(|g| g.columns.iter().all(|c| data_out.contains(c)))
    {
        // The filter's columns are output too (a runtime filter's key, which the join
        // reads): a row filter would decode them once to decide and again for the kept
        // rows. Decide first, group after group, keep them, and read only the other columns
        // for the kept rows (TPC-H Q17's `l_partkey`: 6 pages of 18,000 rows per chunk, a
        // kept row in every page, so the second decode was a whole second decompression;
        // Q8's orders: two runtime filters, each column read once). Rows kept in many short
        // runs are decoded whole and masked here too (Q3's order dates keep half the orders,
        // scattered).
        let mut under = match (codes_kept.take(), &selection) {
            (Some(k), _) => RowsToRead::of(k, rows),
            (None, Some(sel)) => RowsToRead::Selected(sel.clone()),
            (None, None) => RowsToRead::All,
        };
        let batch_size = decode_batch_size(s);
        // Each group's columns, at the rows that group kept; narrowed once to the last
        // group's rows below.
        let mut decided: Vec<(Vec<(usize, ArrayRef)>, arrow_buffer::BooleanBuffer)> = Vec::new();
        for group in row_filter {
            if let Some((_, before)) = decided.last() {
                under = RowsToRead::of(before.clone(), rows);
            }
            let (kept, columns) = decide_first(
                file,
                task.row_group,
                &chunks,
                group,
                &under,
                rows,
                batch_size,
            )?;
            if decided.is_empty() {
                s.metrics.add("row_groups_decided_first", 1);
            }
            if kept.count_set_bits() == 0 {
                return Ok(true);
            }
            decided.push((group.columns.iter().copied().zip(columns).collect(), kept));
        }
        if let Some((_, kept)) = decided.last() {
            let kept = kept.clone();
            let last = decided.len() - 1;
            for (i, (columns, at)) in decided.into_iter().enumerate() {
                if i == last {
                    decoded_early.extend(columns);
                    continue;
                }
                let still: arrow_buffer::BooleanBuffer =
                    at.set_indices().map(|r| kept.value(r)).collect();
                let still = BooleanArray::new(still, None);
                for (c, a) in columns {
                    decoded_early.push((c, arrow_select::filter::filter(a.as_ref(), &still)?));
                }
            }
            take_from_codes(s, &chunk_codes, &kept, data_out, &mut decoded_early)?;
            take_rest_by_codes(
                s,
                file,
                task.row_group,
                &chunks,
                &kept,
                &chunk_codes,
                &mut decoded_early,
            );
            // The other columns decoded whole when that is faster (Q10's customers: a
            // quarter of them kept, scattered), the kept columns joined in after masking.
            if keep_rows(kept, rows, &mut mask, &mut selection) {
                s.metrics.add("row_groups_masked_after_deciding", 1);
            }
        }
        row_filter = &[];
    }
    if let Some(k) = codes_kept {
        selection = Some(selection_of(k));
    }
    if row_filter.is_empty()
        && post_filter.is_none()
        && !data_out.is_empty()
        && data_out
            .iter()
            .all(|c| decoded_early.iter().any(|(d, _)| d == c))
    {
        // Every output column was made from codes: nothing is left for the reader.
        let decoded = data_out
            .iter()
            .filter_map(|c| decoded_early.iter().find(|(d, _)| d == c))
            .map(|(_, a)| a.clone())
            .collect::<Vec<_>>();
        let n = decoded[0].len();
        if n == 0 {
            return Ok(true);
        }
        let out = assemble(s, task.file, data_out, &decoded, n)?;
        return Ok(emit_in_slices(s, &out, emit));
    }
    // Large decoded batches amortise the row filter's per-batch costs; with no row filter
    // left, batches of the output size stay in the cache from decoding through masking to
    // the consumer.
    let batch_size = if row_filter.is_empty() && post_filter.is_none() {
        s.options.batch_size
    } else {
        decode_batch_size(s)
    };
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(chunks, file.meta.clone())
        .with_batch_size(batch_size)
        .with_row_groups(vec![task.row_group])
        .with_projection(ProjectionMask::roots(
            parquet_schema,
            data_out
                .iter()
                .copied()
                .filter(|c| !decoded_early.iter().any(|(d, _)| d == c)),
        ));
    if let Some(sel) = selection {
        builder = builder.with_row_selection(sel);
    }
    // Skipping runs of unselected rows beats decoding everything and masking for the sparse
    // selections filters and page pruning produce (measured on TPC-H lineitem: 42 vs 49 ms).
    builder = builder.with_row_selection_policy(RowSelectionPolicy::Selectors);
    if !row_filter.is_empty() {
        let mut filters: Vec<Box<dyn parquet::arrow::arrow_reader::ArrowPredicate>> = Vec::new();
        for group in row_filter {
            let predicate = group.predicate.clone();
            let mask = ProjectionMask::roots(parquet_schema, group.columns.iter().copied());
            filters.push(Box::new(ArrowPredicateFn::new(
                mask,
                move |batch: RecordBatch| {
                    let verdict =
                        evaluate_predicate(&predicate, &batch).map_err(ArrowError::from)?;
                    Ok(nulls_as_false(verdict))
                },
            )));
        }
        builder = builder.with_row_filter(RowFilter::new(filters));
    }
    // The sync reader evaluates the row filter while building, so filter errors surface here.
    let reader = builder
        .build()
        .map_err(|e| match unwrap_ferro(Box::new(e)) {
            Ok(fe) => fe,
            Err(other) => FerroError::parquet(path, other),
        })?;
    // Where each output column comes from: a position in the decoded batch or a partition value.
    let mut first_row = 0;
    let mut code_row = 0;
    for batch in reader {
        let batch = batch.map_err(|e| match unwrap_ferro(Box::new(e)) {
            Ok(fe) => fe,
            Err(other) => FerroError::parquet(path, other),
        })?;
        let batch = match &mask {
            Some(m) => {
                let keep = mask_slice(m, first_row, batch.num_rows(), path)?;
                first_row += batch.num_rows();
                arrow_select::filter::filter_record_batch(&batch, &BooleanArray::new(keep, None))?
            }
            None => batch,
        };
        let batch = match post_filter {
            Some(group) => filter_batch(&batch, &group.predicate)?,
            None => batch,
        };
        if batch.num_rows() == 0 {
            continue;
        }
        let n = batch.num_rows();
        let decoded: Vec<ArrayRef> = if decoded_early.is_empty() {
            batch.columns().to_vec()
        } else {
            let mut from_reader = batch.columns().iter();
            let columns = data_out
                .iter()
                .map(|c| match decoded_early.iter().find(|(d, _)| d == c) {
                    Some((_, a)) => Some(a.slice(code_row, n)),
                    None => from_reader.next().cloned(),
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| FerroError::Internal("decoded columns do not add up".into()))?;
            code_row += n;
            columns
        };
        let out = assemble(s, task.file, data_out, &decoded, n)?;
        if !emit_in_slices(s, &out, emit) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Hands `out` to `emit` in slices of the output batch size (decoding may run in larger
/// batches than the user asked for); false when the reader has gone away.
fn emit_in_slices(
    s: &ScanShared,
    out: &RecordBatch,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> bool {
    let step = s.options.batch_size.max(1);
    let mut offset = 0;
    while offset < out.num_rows() {
        let len = step.min(out.num_rows() - offset);
        let piece = out.slice(offset, len);
        s.metrics.add("rows_output", piece.num_rows() as u64);
        s.metrics.add("batches_output", 1);
        if !emit(piece) {
            return false;
        }
        offset += len;
    }
    true
}

/// Takes each output column still to decode from its dictionary codes at the rows `kept`
/// (see `take_kept`), when so few rows are kept that the reader would mostly seek or mask;
/// a column that cannot be taken so is left to the reader, and so is one whose codes a filter
/// already holds (`held`: `take_from_codes` left it to the reader on purpose, and its pages
/// need not be read a second time).
fn take_rest_by_codes(
    s: &ScanShared,
    file: &FileEntry,
    g: usize,
    chunks: &RowGroupChunks,
    kept: &arrow_buffer::BooleanBuffer,
    held: &[(usize, ChunkCodes)],
    decoded_early: &mut Vec<(usize, ArrayRef)>,
) {
    if kept.count_set_bits() * TAKE_BY_CODES_UNDER > kept.len() {
        return;
    }
    let rg = file.meta.metadata().row_group(g);
    for &c in &s.decoded_columns {
        if decoded_early.iter().any(|(d, _)| *d == c) || held.iter().any(|(h, _)| *h == c) {
            continue;
        }
        let taken = single_leaf(file.meta.parquet_schema(), c).and_then(|leaf| {
            let field = file.meta.schema().fields().get(c)?;
            take_kept(Arc::new(chunks.clone()), rg.column(leaf), kept, field)
        });
        if let Some(a) = taken {
            decoded_early.push((c, a));
            s.metrics.add("columns_taken_by_codes", 1);
        }
    }
}

/// Columns are taken by their codes when at most one row in this many is kept.
const TAKE_BY_CODES_UNDER: usize = 4;

/// Reads only the rows set in `kept` (of a row group of `rows` rows): by a mask when that is
/// faster and no selection (page pruning) is already set, else by a selection. True when
/// masked.
fn keep_rows(
    kept: arrow_buffer::BooleanBuffer,
    rows: usize,
    mask: &mut Option<arrow_buffer::BooleanBuffer>,
    selection: &mut Option<RowSelection>,
) -> bool {
    if selection.is_none() && faster_masked(&kept, rows) {
        *mask = Some(kept);
        true
    } else {
        *selection = Some(selection_of(kept));
        false
    }
}

/// The rows set in `kept`, to skip to.
fn selection_of(kept: arrow_buffer::BooleanBuffer) -> RowSelection {
    RowSelection::from_filters(&[BooleanArray::new(kept, None)])
}

/// Rows `at..at + n` of a row group's `mask`, or an error naming the file when its reader
/// returned more rows than its footer counts.
fn mask_slice(
    mask: &arrow_buffer::BooleanBuffer,
    at: usize,
    n: usize,
    path: &std::path::Path,
) -> Result<arrow_buffer::BooleanBuffer> {
    if at.checked_add(n).is_none_or(|end| end > mask.len()) {
        return Err(FerroError::parquet(
            path,
            "a row group holds more rows than its footer counts",
        ));
    }
    Ok(mask.slice(at, n))
}

/// Pushes onto `decoded_early` each column of `chunk_codes` at the rows `kept`, when that
/// leaves the reader at least one output column of `data_out` still to decode; when every
/// output column's codes are held, the reader decodes them instead (taking them all and
/// skipping the reader, as `run_task` does for columns taken by codes, is not measured yet).
fn take_from_codes(
    s: &ScanShared,
    chunk_codes: &[(usize, ChunkCodes)],
    kept: &arrow_buffer::BooleanBuffer,
    data_out: &[usize],
    decoded_early: &mut Vec<(usize, ArrayRef)>,
) -> Result<()> {
    let early = |c: &usize, d: &[(usize, ArrayRef)]| d.iter().any(|(e, _)| e == c);
    let fresh: Vec<&(usize, ChunkCodes)> = chunk_codes
        .iter()
        .filter(|(c, _)| !early(c, decoded_early))
        .collect();
    let undecided = data_out.iter().filter(|c| !early(c, decoded_early)).count();
    if fresh.len() < undecided {
        for (col, codes) in fresh {
            decoded_early.push((*col, codes.take(kept)?));
            s.metrics.add("columns_from_codes", 1);
        }
    }
    Ok(())
}

/// Whether the rows `kept` of a row group of `rows` rows are read faster by decoding every
/// row and masking than by skipping the others. Skipping costs per run of kept rows (two
/// selectors, each a seek in every column), decoding costs per row, and a run costs about
/// what decoding 16 rows does: a selection in many short runs (Q1's ship date keeps 98%,
/// `l_returnflag = 'R'` a scattered 25%, Q3's orders a scattered 10%) is masked, a sparse
/// one (Q6's scattered 2%) skips. Measured on lineitem: the 25% case 258 ms of decoding
/// skipping, 118 ms masked; the 22 TPC-H queries were fastest at 16 (of 4 to 64).
fn faster_masked(kept: &arrow_buffer::BooleanBuffer, rows: usize) -> bool {
    let left = kept.count_set_bits();
    kept.set_slices().count() * 16 > rows.saturating_sub(left)
}

/// The rows of a row group a filter runs over.
enum RowsToRead {
    All,
    /// Those a selection picks (read by skipping to them).
    Selected(RowSelection),
    /// Those set in a mask (read whole, then masked).
    Masked(arrow_buffer::BooleanBuffer),
}

impl RowsToRead {
    /// The rows set in `kept` (of a row group of `rows` rows), masked or selected, whichever
    /// reads them faster.
    fn of(kept: arrow_buffer::BooleanBuffer, rows: usize) -> Self {
        if faster_masked(&kept, rows) {
            RowsToRead::Masked(kept)
        } else {
            RowsToRead::Selected(selection_of(kept))
        }
    }
}

/// Runs filter `group` over rows `under` of row group `g`, reading only its columns: the
/// kept rows of the row group, and each of the group's columns at those rows.
fn decide_first(
    file: &FileEntry,
    g: usize,
    chunks: &RowGroupChunks,
    group: &FilterGroup,
    under: &RowsToRead,
    rows: usize,
    batch_size: usize,
) -> Result<(arrow_buffer::BooleanBuffer, Vec<ArrayRef>)> {
    let path = file.source.path();
    let mut builder =
        ParquetRecordBatchReaderBuilder::new_with_metadata(chunks.clone(), file.meta.clone())
            .with_batch_size(batch_size)
            .with_row_groups(vec![g])
            .with_projection(ProjectionMask::roots(
                file.meta.parquet_schema(),
                group.columns.iter().copied(),
            ));
    // The row group's index of each row the reader returns, in order.
    let mut row_of: Box<dyn Iterator<Item = usize>> = Box::new(0..rows);
    let mask = match under {
        RowsToRead::Masked(m) => Some(m),
        _ => None,
    };
    if let RowsToRead::Selected(sel) = under {
        builder = builder
            .with_row_selection(sel.clone())
            .with_row_selection_policy(RowSelectionPolicy::Selectors);
        let mut at = 0usize;
        let mut selected = Vec::new();
        for r in sel.iter() {
            if !r.skip {
                selected.extend(at..at + r.row_count);
            }
            at += r.row_count;
        }
        row_of = Box::new(selected.into_iter());
    }
    let reader = builder.build().map_err(|e| FerroError::parquet(path, e))?;
    let mut kept = arrow_buffer::BooleanBufferBuilder::new(rows);
    kept.append_n(rows, false);
    let mut pieces: Vec<Vec<ArrayRef>> = vec![Vec::new(); group.columns.len()];
    let mut at_row = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| FerroError::parquet(path, e))?;
        let verdict = match mask {
            None => nulls_as_false(evaluate_predicate(&group.predicate, &batch)?),
            Some(m) => {
                // Read whole (no selection), so batches follow the row group's rows. The
                // predicate sees only the rows the mask keeps: an earlier conjunct rejected
                // the others, and Spark's AND never evaluates this one there (`b <> 0 AND
                // a / b > 1` must not divide by zero).
                let n = batch.num_rows();
                let keep = mask_slice(m, at_row, n, path)?;
                at_row += n;
                let kept_rows = arrow_select::filter::filter_record_batch(
                    &batch,
                    &BooleanArray::new(keep.clone(), None),
                )?;
                let v = nulls_as_false(evaluate_predicate(&group.predicate, &kept_rows)?);
                let mut full = arrow_buffer::BooleanBufferBuilder::new(n);
                full.append_n(n, false);
                for (j, r) in keep.set_indices().enumerate() {
                    if v.value(j) {
                        full.set_bit(r, true);
                    }
                }
                BooleanArray::new(full.finish(), None)
            }
        };
        for v in verdict.values().iter() {
            let r = row_of
                .next()
                .ok_or_else(|| FerroError::Internal("the reader returned extra rows".into()))?;
            if v {
                kept.set_bit(r, true);
            }
        }
        let filtered = arrow_select::filter::filter_record_batch(&batch, &verdict)?;
        for (p, c) in pieces.iter_mut().zip(filtered.columns()) {
            p.push(c.clone());
        }
    }
    // No batch at all keeps no row, and the caller reads nothing more.
    let columns = pieces
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| {
            let refs: Vec<&dyn Array> = p.iter().map(|a| a.as_ref()).collect();
            Ok(arrow_select::concat::concat(&refs)?)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((kept.finish(), columns))
}

/// Whether the one column of filter `group` is also output and can be made from its codes:
/// a primitive or view column (taking views shares the dictionary page; other string layouts
/// would copy every value) beside others the reader decodes.
fn output_from_codes(file: &FileEntry, data_out: &[usize], group: &FilterGroup) -> bool {
    let [col] = group.columns.as_slice() else {
        return false;
    };
    data_out.len() > 1
        && data_out.contains(col)
        && file.meta.schema().fields().get(*col).is_some_and(|f| {
            f.data_type().is_primitive()
                || matches!(
                    f.data_type(),
                    arrow_schema::DataType::Utf8View | arrow_schema::DataType::BinaryView
                )
        })
}

/// Verdicts for every row of row group `g` from the dictionary codes of a one-column filter
/// group, when that column allows it (see `dictionary_codes`), and with `keep_codes` the
/// column's codes.
fn code_verdicts(
    file: &FileEntry,
    g: usize,
    chunks: &RowGroupChunks,
    group: &FilterGroup,
    keep_codes: bool,
) -> Option<(arrow_buffer::BooleanBuffer, Option<ChunkCodes>)> {
    let [col] = group.columns.as_slice() else {
        return None;
    };
    let leaf = single_leaf(file.meta.parquet_schema(), *col)?;
    let rg = file.meta.metadata().row_group(g);
    let rows = usize::try_from(rg.num_rows()).ok()?;
    let field = file.meta.schema().fields().get(*col)?;
    row_verdicts(
        Arc::new(chunks.clone()),
        rg.column(leaf),
        rows,
        field,
        &group.predicate,
        keep_codes,
    )
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Finds a ferrospark error (an ANSI error from a filter, say) inside the wrappers arrow and
/// parquet put around it, so it reaches the user as itself rather than as a decoding error.
fn unwrap_ferro(e: BoxError) -> std::result::Result<FerroError, BoxError> {
    let e = match e.downcast::<FerroError>() {
        Ok(f) => return Ok(*f),
        Err(e) => e,
    };
    let e = match e.downcast::<ArrowError>() {
        Ok(a) => match *a {
            ArrowError::ExternalError(inner) => return unwrap_ferro(inner),
            other => return Err(Box::new(other)),
        },
        Err(e) => e,
    };
    match e.downcast::<parquet::errors::ParquetError>() {
        Ok(p) => match *p {
            parquet::errors::ParquetError::External(inner) => unwrap_ferro(inner),
            other => Err(Box::new(other)),
        },
        Err(e) => Err(e),
    }
}

/// Rows per decoded batch. With a row filter, predicates run once per decoded batch, so
/// larger batches amortise their fixed costs (TPC-H lineitem scan+filter: 50 ms at 8192 rows,
/// 40 ms at 65536); output is still sliced to `batch_size`.
fn decode_batch_size(s: &ScanShared) -> usize {
    if s.predicate.is_some() {
        s.options.filter_batch_size.max(s.options.batch_size)
    } else {
        s.options.batch_size
    }
}

/// One predicate of a file's row filter: the conjuncts that read exactly these data columns.
#[derive(Debug, Clone)]
pub(crate) struct FilterGroup {
    /// Table indices of the data columns it reads, sorted.
    pub columns: Vec<usize>,
    /// The conjuncts over a batch of just those columns (column `i` is `columns[i]`).
    pub predicate: PhysicalExpr,
}

/// The filter of one file, with the file's partition values substituted: the row filter
/// (conjuncts grouped by the data columns they read, one predicate per group, in first-use
/// order: each decodes its columns once, later ones only the rows earlier ones kept) and the
/// conjuncts that read no data column, which planning decides once for the whole file.
pub(crate) fn row_filter_groups(
    pred: &PhysicalExpr,
    data_columns: usize,
    partition_values: &[ArrayRef],
) -> (Vec<FilterGroup>, Vec<PhysicalExpr>) {
    let local = pred.transform_columns(&|index, name, data_type| {
        if index >= data_columns {
            PhysicalExpr::Literal(Literal::new(partition_values[index - data_columns].clone()))
        } else {
            PhysicalExpr::Column {
                index,
                name: name.to_string(),
                data_type: data_type.clone(),
            }
        }
    });
    let mut constant = Vec::new();
    let mut groups: Vec<(Vec<usize>, PhysicalExpr)> = Vec::new();
    for c in local.conjuncts() {
        let mut cols = c.column_indices();
        if cols.is_empty() {
            constant.push(c.clone());
            continue;
        }
        cols.sort_unstable();
        match groups.iter_mut().find(|(g, _)| *g == cols) {
            Some((_, e)) => *e = PhysicalExpr::And(Box::new(e.clone()), Box::new(c.clone())),
            None => groups.push((cols, c.clone())),
        }
    }
    // Single-column conjuncts first: each is decoded for the rows every earlier group kept,
    // so the cheap ones (and those decided on dictionary codes, which only a single-column
    // group can be) narrow the rows before a comparison of two columns decodes both (TPC-H
    // Q12's date range before `l_commitdate < l_receiptdate`). Stable, so the text's order
    // holds among equals.
    groups.sort_by_key(|(cols, _)| cols.len());
    // Comparisons of several columns that share one (Q12's `l_commitdate < l_receiptdate`
    // and `l_shipdate < l_commitdate`) run as one predicate, so the shared column decodes
    // once rather than once per comparison.
    let mut merged: Vec<(Vec<usize>, PhysicalExpr)> = Vec::with_capacity(groups.len());
    for (cols, e) in groups {
        let overlapping = if cols.len() > 1 {
            merged
                .iter()
                .position(|(m, _)| m.len() > 1 && m.iter().any(|c| cols.contains(c)))
        } else {
            None
        };
        match overlapping {
            Some(i) => {
                let (m, prev) = &mut merged[i];
                m.extend(cols);
                m.sort_unstable();
                m.dedup();
                *prev = PhysicalExpr::And(Box::new(prev.clone()), Box::new(e));
            }
            None => merged.push((cols, e)),
        }
    }
    let groups = merged
        .into_iter()
        .map(|(columns, e)| {
            let predicate =
                e.remap_columns(&|i| columns.iter().position(|&p| p == i).unwrap_or(usize::MAX));
            FilterGroup { columns, predicate }
        })
        .collect();
    (groups, constant)
}

fn nulls_as_false(b: BooleanArray) -> BooleanArray {
    if b.null_count() == 0 {
        b
    } else {
        arrow_select::filter::prep_null_mask_filter(&b)
    }
}

fn assemble(
    s: &ScanShared,
    file: usize,
    data_out: &[usize],
    decoded: &[ArrayRef],
    n: usize,
) -> Result<RecordBatch> {
    let columns =
        s.output
            .iter()
            .map(|&c| -> Result<ArrayRef> {
                if c < s.data_columns {
                    let pos = data_out.iter().position(|&d| d == c).ok_or_else(|| {
                        FerroError::Internal(format!("column {c} was not decoded"))
                    })?;
                    Ok(decoded[pos].clone())
                } else {
                    let v = &s.files[file].partition_values[c - s.data_columns];
                    ColumnarValue::Scalar(Scalar::new(v.clone())).into_array(n)
                }
            })
            .collect::<Result<Vec<_>>>()?;
    if s.options.spark_types {
        return to_spark_batch(columns, n, &s.output_schema);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(n));
    Ok(RecordBatch::try_new_with_options(
        s.output_schema.clone(),
        columns,
        &options,
    )?)
}

impl Iterator for ScanStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.queue.next()
    }
}

impl Drop for ScanStream {
    fn drop(&mut self) {
        self.queue.cancel();
    }
}

impl ScanStream {
    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// An Arrow `RecordBatchReader` view, for exporting through the C stream interface.
    pub fn into_reader(self) -> ScanReader {
        ScanReader(self)
    }
}

/// [`ScanStream`] as an `arrow_array::RecordBatchReader`.
pub struct ScanReader(ScanStream);

impl Iterator for ScanReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map_err(ArrowError::from))
    }
}

impl RecordBatchReader for ScanReader {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }
}
