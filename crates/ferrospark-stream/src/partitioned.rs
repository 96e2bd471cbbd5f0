//! A stateful operator's state partitions side by side in one process, as Spark runs them in
//! tasks: each batch's rows are split by a hash of their key, each partition runs on its own
//! worker thread over its own stores (`<checkpoint>/state/<operator>/<partition>`), and one
//! watermark, from every partition's rows, holds for all of them.
//!
//! ```text
//!   batch ─▶ split by key hash ─▶ partition 0 ─┐
//!                              ─▶ partition 1 ─┼─▶ outputs concatenated
//!                              ─▶ ...         ─┘   watermark: max event times of the batch
//! ```
//! The hash is FNV-1a over the key's `arrow-row` encoding: written here because the split
//! must never change for a checkpoint, which a library's hasher does not promise (the state
//! itself is `arrow-row` bytes too, so a checkpoint belongs to the arrow-rs row format it was
//! written with). The number of partitions is recorded under the checkpoint when the
//! operator is first opened.

use std::path::Path;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use ferrospark_common::config::STREAMING_STATE_PARTITIONS;
use ferrospark_common::workers::try_run_each;
use ferrospark_common::{Config, FerroError, Result};

use crate::join::exec::{StreamJoin, StreamJoinSpec};
use crate::row_format::check_row_format;
use crate::session::{SessionWindowAggregation, SessionWindowSpec};
use crate::state::{min_latest, state_error, StateStoreConf, StateStoreMetrics};
use crate::watermark::{BatchWatermark, BatchWatermarks, WatermarkPolicy};

/// The partitions of operator `operator_id` under `checkpoint`: as recorded, else as `cfg`
/// asks (default: the cores), then recorded.
pub fn state_partitions(checkpoint: &Path, operator_id: u64, cfg: &Config) -> Result<usize> {
    let dir = checkpoint.join("partitions");
    let path = dir.join(operator_id.to_string());
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            return text
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| state_error(&path, "not a partition count ferrospark wrote"))
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(FerroError::io(&path, e)),
        Err(_) => {}
    }
    let state = checkpoint.join("state").join(operator_id.to_string());
    if state.exists() {
        return Err(state_error(
            &state,
            "this operator's state was written without a recorded partition count (by one \
             partition, or by a query on Spark): open it with partition_id, or start a new checkpoint",
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = cfg.get_positive(STREAMING_STATE_PARTITIONS, cores)?;
    std::fs::create_dir_all(&dir).map_err(|e| FerroError::io(&dir, e))?;
    ferrospark_common::atomic_file::write_atomic(&path, n.to_string().as_bytes())?;
    Ok(n)
}

/// FNV-1a, 64 bits.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// How rows of one input are split: its key columns, encoded as the other inputs' are.
struct Splitter {
    keys: Vec<usize>,
    /// The types the keys are encoded as (every input's keys are cast to them).
    types: Vec<arrow_schema::DataType>,
    rows: RowConverter,
}

impl Splitter {
    fn new(keys: Vec<usize>, types: &[arrow_schema::DataType]) -> Result<Self> {
        Ok(Self {
            keys,
            types: types.to_vec(),
            rows: RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())?,
        })
    }

    /// The partition of each of `batch`'s rows.
    fn partition_of_rows(&self, batch: &RecordBatch, n: usize) -> Result<Vec<u32>> {
        let cols = self
            .keys
            .iter()
            .zip(&self.types)
            .map(|(&i, t)| {
                let c = arrow_cast::cast(batch.column(i), t)?;
                Ok(ferrospark_expr::normalize_key(&c))
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let encoded = self.rows.convert_columns(&cols)?;
        Ok((0..batch.num_rows())
            .map(|r| (fnv1a(encoded.row(r).as_ref()) % n as u64) as u32)
            .collect())
    }

    /// `batch`'s rows per partition, in their order. The rows' keys are encoded and hashed
    /// in pieces side by side, and each partition's rows taken side by side.
    fn split(&self, batch: &RecordBatch, n: usize) -> Result<Vec<RecordBatch>> {
        if n == 1 {
            return Ok(vec![batch.clone()]);
        }
        let rows = batch.num_rows();
        let pieces = std::thread::available_parallelism()
            .map_or(1, |p| p.get())
            .min(rows.div_ceil(SPLIT_PIECE_ROWS))
            .max(1);
        let per_piece = rows.div_ceil(pieces).max(1);
        let slices: Vec<RecordBatch> = (0..rows)
            .step_by(per_piece)
            .map(|start| batch.slice(start, per_piece.min(rows - start)))
            .collect();
        let ids = try_run_each(slices, "splitting a batch by key", |b| {
            self.partition_of_rows(&b, n)
        })?;
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (r, p) in ids.into_iter().flatten().enumerate() {
            parts[p as usize].push(r as u32);
        }
        try_run_each(parts, "splitting a batch by key", |rows| {
            let idx = UInt32Array::from(rows);
            ferrospark_common::take_batch(batch, &idx)
        })
    }
}

/// Rows below which a batch is split by key on one thread.
const SPLIT_PIECE_ROWS: usize = 64 * 1024;

/// The rows of `batches` (per partition) or `None` for every partition.
fn per_partition(
    batch: Option<&RecordBatch>,
    splitter: &Splitter,
    n: usize,
) -> Result<Vec<Option<RecordBatch>>> {
    match batch {
        Some(b) => Ok(splitter.split(b, n)?.into_iter().map(Some).collect()),
        None => Ok(vec![None; n]),
    }
}

fn concat(schema: &arrow_schema::SchemaRef, outs: Vec<RecordBatch>) -> Result<RecordBatch> {
    Ok(arrow_select::concat::concat_batches(schema, &outs)?)
}

/// A stream-stream join over all its state partitions in this process, or over one of them
/// (a Spark task's, under the driver's watermark).
pub struct PartitionedStreamJoin {
    parts: Vec<StreamJoin>,
    splitters: (Splitter, Splitter),
    watermarks: BatchWatermarks,
    /// Each watermarked input's event-time column: (input is left, column).
    times: Vec<(bool, usize)>,
}

impl PartitionedStreamJoin {
    /// The join over every partition of operator `operator_id` (see [`state_partitions`]),
    /// or over partition `only` alone.
    pub fn open(
        spec: StreamJoinSpec,
        checkpoint: &Path,
        operator_id: u64,
        only: Option<u32>,
        cfg: &Config,
    ) -> Result<Self> {
        let spec = spec.resolved()?;
        let ids: Vec<u32> = match only {
            Some(p) => vec![p],
            None => (0..state_partitions(checkpoint, operator_id, cfg)? as u32).collect(),
        };
        // One conf for every partition: their stores share the query's memory pool.
        let state = StateStoreConf::from_config(cfg)?;
        let parts = ids
            .iter()
            .map(|&p| StreamJoin::open(spec.clone(), checkpoint, operator_id, p, cfg, &state))
            .collect::<Result<Vec<_>>>()?;
        // Once the spec is known good: the row format is the operator's, not a partition's.
        check_row_format(checkpoint, operator_id)?;
        let (lk, rk) = parts[0].keys();
        let index = |s: &arrow_schema::SchemaRef, k: &[String]| {
            k.iter()
                .map(|c| {
                    s.index_of(c)
                        .map_err(|e| FerroError::Internal(e.to_string()))
                })
                .collect::<Result<Vec<usize>>>()
        };
        let li = index(&spec.left_schema, lk)?;
        let ri = index(&spec.right_schema, rk)?;
        let types: Vec<_> = li
            .iter()
            .map(|&i| spec.left_schema.field(i).data_type().clone())
            .collect();
        let mut times = Vec::new();
        let mut delays = Vec::new();
        for (is_left, schema, w) in [
            (true, &spec.left_schema, &spec.left_watermark),
            (false, &spec.right_schema, &spec.right_watermark),
        ] {
            if let Some((c, d)) = w {
                times.push((
                    is_left,
                    schema
                        .index_of(c)
                        .map_err(|e| FerroError::Internal(e.to_string()))?,
                ));
                delays.push(*d);
            }
        }
        Ok(Self {
            splitters: (Splitter::new(li, &types)?, Splitter::new(ri, &types)?),
            parts,
            watermarks: BatchWatermarks::new(
                checkpoint.join("watermarks").join(operator_id.to_string()),
                delays,
                WatermarkPolicy::from_config(cfg)?,
            ),
            times,
        })
    }

    /// The output's columns.
    pub fn schema(&self) -> arrow_schema::SchemaRef {
        self.parts[0].schema()
    }

    /// Every partition's state counters, added up.
    pub fn metrics(&self) -> StateStoreMetrics {
        self.parts.iter().map(StreamJoin::metrics).sum()
    }

    /// The join keys, (left, right).
    pub fn keys(&self) -> (&[String], &[String]) {
        self.parts[0].keys()
    }

    /// The state partitions this join runs.
    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// The latest batch every partition committed.
    pub fn latest_version(&self) -> Result<u64> {
        min_latest(self.parts.iter().map(StreamJoin::latest_version))
    }

    /// The rows batch `batch_id` emits, the join keeping its own watermark.
    pub fn process(
        &mut self,
        batch_id: u64,
        left: Option<&RecordBatch>,
        right: Option<&RecordBatch>,
    ) -> Result<RecordBatch> {
        crate::state::check_batch(batch_id, self.latest_version()?)?;
        let marks = self.watermarks.begin(batch_id)?;
        let out = self.process_under(batch_id, left, right, marks)?;
        for (input, &(is_left, column)) in self.times.iter().enumerate() {
            if let Some(b) = if is_left { left } else { right } {
                self.watermarks.observe(input, b.column(column))?;
            }
        }
        self.watermarks.end(batch_id)?;
        Ok(out)
    }

    /// The rows batch `batch_id` emits under watermarks kept elsewhere.
    pub fn process_under(
        &mut self,
        batch_id: u64,
        left: Option<&RecordBatch>,
        right: Option<&RecordBatch>,
        marks: Option<BatchWatermark>,
    ) -> Result<RecordBatch> {
        let n = self.parts.len();
        let ls = per_partition(left, &self.splitters.0, n)?;
        let rs = per_partition(right, &self.splitters.1, n)?;
        let work: Vec<_> = self.parts.iter_mut().zip(ls).zip(rs).collect();
        let outs = try_run_each(work, "a stream-stream join partition", |((j, l), r)| {
            j.process_under(batch_id, l.as_ref(), r.as_ref(), marks)
        })?;
        concat(&self.schema(), outs)
    }
}

/// A streaming session window aggregation over all its state partitions in this process,
/// or over one of them.
pub struct PartitionedSessionWindow {
    parts: Vec<SessionWindowAggregation>,
    splitter: Splitter,
    watermarks: BatchWatermarks,
    time: Option<usize>,
    metrics: StateStoreMetrics,
}

impl PartitionedSessionWindow {
    /// The aggregation over every partition of operator `operator_id`, or over partition
    /// `only` alone. Without keys there is one partition.
    pub fn open(
        spec: SessionWindowSpec,
        checkpoint: &Path,
        operator_id: u64,
        only: Option<u32>,
        cfg: &Config,
    ) -> Result<Self> {
        let spec = spec.resolved()?;
        let ids: Vec<u32> = match only {
            Some(p) => vec![p],
            None if spec.keys.is_empty() => vec![0],
            None => (0..state_partitions(checkpoint, operator_id, cfg)? as u32).collect(),
        };
        let state = StateStoreConf::from_config(cfg)?;
        let parts = ids
            .iter()
            .map(|&p| {
                SessionWindowAggregation::open(
                    spec.clone(),
                    checkpoint,
                    operator_id,
                    p,
                    cfg,
                    &state,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        check_row_format(checkpoint, operator_id)?;
        let keys = spec
            .keys
            .iter()
            .map(|c| {
                spec.schema
                    .index_of(c)
                    .map_err(|e| FerroError::Internal(e.to_string()))
            })
            .collect::<Result<Vec<usize>>>()?;
        let types: Vec<_> = keys
            .iter()
            .map(|&i| spec.schema.field(i).data_type().clone())
            .collect();
        let time = match &spec.watermark {
            Some(_) => Some(
                spec.schema
                    .index_of(&spec.time)
                    .map_err(|e| FerroError::Internal(e.to_string()))?,
            ),
            None => None,
        };
        Ok(Self {
            splitter: Splitter::new(keys, &types)?,
            parts,
            watermarks: BatchWatermarks::new(
                checkpoint.join("watermarks").join(operator_id.to_string()),
                spec.watermark.iter().map(|(_, d)| *d).collect(),
                WatermarkPolicy::from_config(cfg)?,
            ),
            time,
            metrics: StateStoreMetrics::default(),
        })
    }

    /// The output's columns.
    pub fn schema(&self) -> arrow_schema::SchemaRef {
        self.parts[0].schema()
    }

    /// The partitions' state store counters after the last batch, summed.
    pub fn metrics(&self) -> &StateStoreMetrics {
        &self.metrics
    }

    /// The sessions batch `batch_id` emits, the aggregation keeping its own watermark.
    pub fn process(&mut self, batch_id: u64, batch: Option<&RecordBatch>) -> Result<RecordBatch> {
        let latest = min_latest(
            self.parts
                .iter()
                .map(SessionWindowAggregation::latest_version),
        )?;
        crate::state::check_batch(batch_id, latest)?;
        let marks = self.watermarks.begin(batch_id)?;
        let out = self.process_under(batch_id, batch, marks)?;
        if let (Some(b), Some(t)) = (batch, self.time) {
            self.watermarks.observe(0, b.column(t))?;
        }
        self.watermarks.end(batch_id)?;
        Ok(out)
    }

    /// The sessions batch `batch_id` emits under watermarks kept elsewhere.
    pub fn process_under(
        &mut self,
        batch_id: u64,
        batch: Option<&RecordBatch>,
        marks: Option<BatchWatermark>,
    ) -> Result<RecordBatch> {
        let n = self.parts.len();
        let bs = per_partition(batch, &self.splitter, n)?;
        let work: Vec<_> = self.parts.iter_mut().zip(bs).collect();
        let outs = try_run_each(work, "a session window partition", |(a, b)| {
            a.process_under(batch_id, b.as_ref(), marks)
        })?;
        self.metrics = self.parts.iter().map(|p| p.metrics().clone()).sum();
        concat(&self.schema(), outs)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    /// A batch large enough to be hashed in pieces on several threads splits exactly as its
    /// rows' keys, hashed one by one, say: every row once, in its partition, in order.
    #[test]
    fn a_batch_split_in_pieces_puts_each_row_where_its_key_hashes() {
        let rows = 3 * SPLIT_PIECE_ROWS + 17;
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Int64, false),
        ]));
        let keys: StringArray = (0..rows)
            .map(|i| (i % 11 != 0).then(|| format!("user-{}", i % 977)))
            .collect();
        let values = Int64Array::from_iter_values(0..rows as i64);
        let batch =
            RecordBatch::try_new(schema, vec![Arc::new(keys), Arc::new(values)]).expect("batch");
        let splitter = Splitter::new(vec![0], &[DataType::Utf8]).expect("splitter");
        for n in [2, 3, 7] {
            let whole = splitter.partition_of_rows(&batch, n).expect("hash");
            let parts = splitter.split(&batch, n).expect("split");
            assert_eq!(parts.len(), n);
            for (p, part) in parts.iter().enumerate() {
                let v = part
                    .column(1)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("v");
                let want: Vec<i64> = (0..rows)
                    .filter(|&r| whole[r] as usize == p)
                    .map(|r| r as i64)
                    .collect();
                assert_eq!(v.values().to_vec(), want, "{n} partitions, partition {p}");
            }
            // The same keys hashed one row at a time.
            let first = batch.slice(5, 1);
            assert_eq!(
                splitter.partition_of_rows(&first, n).expect("hash")[0],
                whole[5]
            );
            assert!(parts.iter().map(|b| b.num_rows()).sum::<usize>() == rows);
            assert!(parts.iter().all(|b| b.column(0).len() == b.num_rows()));
        }
    }
}
