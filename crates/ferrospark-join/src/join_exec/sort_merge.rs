//! The sort-merge join past memory: each side sorted in runs spilled to Arrow IPC files, the
//! runs merged back, and the two sorted streams joined a streamed batch at a time.
//!
//! ```text
//!   push (sides buffered) ──refused──► sort buffer by key ─► spill run    (per side)
//!   finish ─► RunMerger(build runs), RunMerger(probe runs)
//!   pull ─► step: next probe batch [kmin..kmax]
//!                 load build batches until one starts past kmax ─► segments
//!                 (a segment refused memory is spilled: a skewed key's rows on disk)
//!                 retire segments ending before kmin (unmatched build rows out)
//!                 merge the probe batch with each overlapping segment
//!                 retire segments ending before kmax
//! ```
//!
//! Both streams are sorted by the same row-format order, so a build row whose key is below
//! the current probe batch's smallest key can never match again: it is retired then, and an
//! outer join emits it if nothing matched it. Rows of one key may span probe batches and
//! build segments; a segment stays until every probe row that could match it has passed.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_row::{OwnedRow, Row, Rows};
use arrow_schema::{Field, Schema, SchemaRef};
use ferrospark_common::{FerroError, Result, SpillFile, SpillWriter};
use ferrospark_sort::{sort_by_keys, write_run, Run, RunMerger};

use super::exec::JoinExec;
use super::sorted_keys::{merge_sorted, SortedKeys};

/// Spill files one side keeps before merging them into one.
const MAX_RUNS_PER_SIDE: usize = 32;

/// Build rows loaded from the build stream, in key order.
struct Segment {
    data: SegmentData,
    /// Which rows matched a probe row (outer joins keeping build rows only).
    matched: Vec<bool>,
    last: OwnedRow,
    /// Bytes reserved for it.
    bytes: u64,
}

enum SegmentData {
    /// One batch (key columns dropped) and its sorted keys.
    Memory {
        payload: RecordBatch,
        keys: SortedKeys,
    },
    /// Key-prefixed batches on disk, read back for each probe batch they overlap.
    File(SpillFile),
}

/// A spilling sort-merge join's merge of both sides.
pub(super) struct MergeJoin {
    probe: RunMerger,
    build: RunMerger,
    build_done: bool,
    /// The last key loaded from the build stream.
    last_loaded: Option<OwnedRow>,
    segments: VecDeque<Segment>,
}

impl JoinExec {
    /// Side 0 (build) or 1 (probe): its schema with the key columns in front.
    fn keyed_schema(&self, side: usize) -> SchemaRef {
        let data = if side == 0 {
            self.build_schema.clone()
        } else {
            self.probe_schema()
        };
        let keys = self
            .key_types
            .iter()
            .enumerate()
            .map(|(i, t)| Arc::new(Field::new(format!("__join_key{i}"), t.clone(), true)));
        let fields: Vec<_> = keys.chain(data.fields().iter().cloned()).collect();
        Arc::new(Schema::new(fields))
    }

    /// `batches` of one side with their keys in front, sorted by key.
    fn sorted_run(&self, batches: &[RecordBatch], side: usize) -> Result<RecordBatch> {
        let schema = self.keyed_schema(side);
        let exprs = if side == 0 {
            self.build_keys()
        } else {
            self.probe_keys()
        };
        let keyed = batches
            .iter()
            .map(|b| {
                let mut columns = self.keys_of(exprs, b)?;
                columns.extend(b.columns().iter().cloned());
                Ok(RecordBatch::try_new(schema.clone(), columns)?)
            })
            .collect::<Result<Vec<_>>>()?;
        let all = arrow_select::concat::concat_batches(&schema, &keyed)?;
        drop(keyed);
        sort_by_keys(&all, &self.converter, self.key_types.len())
    }

    /// Sorts one side's buffered batches into a run on disk and gives their memory back.
    pub(super) fn spill_side(&mut self, side: usize) -> Result<()> {
        let batches = std::mem::take(if side == 0 {
            &mut self.build_batches
        } else {
            &mut self.probe_buffer
        });
        if batches.is_empty() {
            return Ok(());
        }
        let run = self.sorted_run(&batches, side)?;
        drop(batches);
        let file = write_run(&self.spill_dir, &run.schema(), &[run], self.batch_size)?;
        self.note_spill(&file);
        self.reservation
            .shrink(std::mem::take(&mut self.buffered_bytes[side]));
        self.runs[side].push(Run::File(file));
        if self.runs[side].len() > MAX_RUNS_PER_SIDE {
            self.compact_runs(side)?;
        }
        Ok(())
    }

    fn note_spill(&self, file: &SpillFile) {
        self.metrics.add("spill_count", 1);
        self.metrics.add("spilled_bytes", file.bytes());
        self.metrics.add("spilled_rows", file.rows() as u64);
    }

    /// Merges a side's runs into one, keeping the open files few.
    fn compact_runs(&mut self, side: usize) -> Result<()> {
        let runs = std::mem::take(&mut self.runs[side]);
        let schema = self.keyed_schema(side);
        let mut merger = RunMerger::new(
            &runs,
            ferrospark_sort::key_converter(&self.key_types)?,
            self.key_types.len(),
            self.batch_size,
            schema.clone(),
        )?;
        let mut w = self.spill_dir.create(&schema)?;
        while let Some(b) = merger.next_batch()? {
            w.write(&b)?;
        }
        drop(merger);
        drop(runs);
        let file = w.finish()?;
        self.note_spill(&file);
        self.runs[side].push(Run::File(file));
        Ok(())
    }

    /// Holds a batch of a sort-merge join's streamed side; spills the build side, then the
    /// streamed side, when memory is refused.
    pub(super) fn buffer_probe(&mut self, batch: &RecordBatch) -> Result<()> {
        let bytes = ferrospark_common::batch_bytes(batch) as u64;
        if !self.reservation.try_grow(bytes) {
            self.spill_side(0)?;
            if !self.reservation.try_grow(bytes) {
                self.probe_buffer.push(batch.clone());
                return self.spill_side(1);
            }
        }
        self.buffered_bytes[1] += bytes;
        self.probe_buffer.push(batch.clone());
        Ok(())
    }

    /// Starts merging: what each side still holds becomes an in-memory run beside its spilled
    /// ones.
    pub(super) fn start_merge(&mut self) -> Result<MergeJoin> {
        for side in 0..2 {
            let batches = std::mem::take(if side == 0 {
                &mut self.build_batches
            } else {
                &mut self.probe_buffer
            });
            if batches.is_empty() {
                continue;
            }
            // Sorting copies the buffer: kept in memory only when the copy is allowed too.
            let bytes = self.buffered_bytes[side];
            if self.reservation.try_grow(bytes) {
                let run = self.sorted_run(&batches, side)?;
                drop(batches);
                self.reservation.shrink(bytes);
                self.runs[side].push(Run::Memory(vec![run]));
            } else {
                *(if side == 0 {
                    &mut self.build_batches
                } else {
                    &mut self.probe_buffer
                }) = batches;
                self.spill_side(side)?;
            }
        }
        let nk = self.key_types.len();
        let merger = |this: &mut Self, side: usize| -> Result<RunMerger> {
            let runs = std::mem::take(&mut this.runs[side]);
            RunMerger::new(
                &runs,
                ferrospark_sort::key_converter(&this.key_types)?,
                nk,
                this.batch_size,
                this.keyed_schema(side),
            )
        };
        Ok(MergeJoin {
            build: merger(self, 0)?,
            probe: merger(self, 1)?,
            build_done: false,
            last_loaded: None,
            segments: VecDeque::new(),
        })
    }

    /// Joins the next batch of the streamed side; `false` when both sides are done.
    pub(super) fn step_merge(&mut self, m: &mut MergeJoin) -> Result<bool> {
        let nk = self.key_types.len();
        let Some(probe) = m.probe.next_batch()? else {
            // Every build row left is past the last probe key.
            while let Some(seg) = m.segments.pop_front() {
                self.retire(seg)?;
            }
            if self.tracks_build() {
                while let Some(b) = m.build.next_batch()? {
                    let payload = payload_of(&b, nk)?;
                    self.emit_build_outcome(&payload, &vec![false; b.num_rows()])?;
                }
            }
            return Ok(false);
        };
        let probe_rows = self.converter.convert_columns(&probe.columns()[..nk])?;
        let (kmin, kmax) = (
            probe_rows.row(0).owned(),
            probe_rows.row(probe.num_rows() - 1).owned(),
        );
        self.load_build(m, kmax.row())?;
        while m
            .segments
            .front()
            .is_some_and(|s| s.last.row() < kmin.row())
        {
            if let Some(seg) = m.segments.pop_front() {
                self.retire(seg)?;
            }
        }
        let probe_keys = SortedKeys::new(&self.converter, &probe.columns()[..nk], &self.null_safe)?;
        let probe_payload = payload_of(&probe, nk)?;
        let mut hit = vec![false; probe.num_rows()];
        for seg in m.segments.iter_mut() {
            match &seg.data {
                SegmentData::Memory { payload, keys } => {
                    let (p, b) = pairs(&probe_keys, keys)?;
                    self.matched_pairs(&probe_payload, payload, p, b, &mut hit, &mut seg.matched)?;
                }
                SegmentData::File(file) => {
                    let mut offset = 0;
                    for b in file.read()? {
                        let b = b?;
                        let n = b.num_rows();
                        let keys =
                            SortedKeys::new(&self.converter, &b.columns()[..nk], &self.null_safe)?;
                        let (p, bi) = pairs(&probe_keys, &keys)?;
                        let flags = if seg.matched.is_empty() {
                            &mut []
                        } else {
                            &mut seg.matched[offset..offset + n]
                        };
                        self.matched_pairs(
                            &probe_payload,
                            &payload_of(&b, nk)?,
                            p,
                            bi,
                            &mut hit,
                            flags,
                        )?;
                        offset += n;
                    }
                }
            }
        }
        self.emit_probe_outcome(&probe_payload, &hit, None)?;
        while m
            .segments
            .front()
            .is_some_and(|s| s.last.row() < kmax.row())
        {
            if let Some(seg) = m.segments.pop_front() {
                self.retire(seg)?;
            }
        }
        Ok(true)
    }

    /// Loads build batches until one ends past `kmax` (the rows a probe batch up to `kmax`
    /// can match are then all loaded). Batches memory refuses go to one spill file.
    fn load_build(&mut self, m: &mut MergeJoin, kmax: Row<'_>) -> Result<()> {
        let nk = self.key_types.len();
        let mut spilling: Option<(SpillWriter, OwnedRow, usize)> = None;
        while !m.build_done && m.last_loaded.as_ref().is_none_or(|k| k.row() <= kmax) {
            let Some(b) = m.build.next_batch()? else {
                m.build_done = true;
                break;
            };
            let rows: Rows = self.converter.convert_columns(&b.columns()[..nk])?;
            let last = rows.row(b.num_rows() - 1).owned();
            drop(rows);
            m.last_loaded = Some(last.clone());
            let keys = SortedKeys::new(&self.converter, &b.columns()[..nk], &self.null_safe)?;
            let payload = payload_of(&b, nk)?;
            let bytes = (ferrospark_common::batch_bytes(&payload) + keys.size()) as u64;
            if spilling.is_none() && self.reservation.try_grow(bytes) {
                m.segments.push_back(Segment {
                    matched: self.matched_flags(b.num_rows()),
                    data: SegmentData::Memory { payload, keys },
                    last,
                    bytes,
                });
                continue;
            }
            if spilling.is_none() {
                spilling = Some((self.spill_dir.create(&b.schema())?, last.clone(), 0));
            }
            if let Some((w, end, n)) = spilling.as_mut() {
                w.write(&b)?;
                *n += b.num_rows();
                *end = last;
            }
        }
        if let Some((w, last, n)) = spilling {
            let file = w.finish()?;
            self.note_spill(&file);
            self.metrics.add("buffered_spill_count", 1);
            m.segments.push_back(Segment {
                matched: self.matched_flags(n),
                data: SegmentData::File(file),
                last,
                bytes: 0,
            });
        }
        Ok(())
    }

    fn matched_flags(&self, rows: usize) -> Vec<bool> {
        if self.tracks_build() {
            vec![false; rows]
        } else {
            Vec::new()
        }
    }

    /// A segment no later probe row can match: its unmatched rows out (outer joins), its
    /// memory back.
    fn retire(&mut self, seg: Segment) -> Result<()> {
        if self.tracks_build() {
            match &seg.data {
                SegmentData::Memory { payload, .. } => {
                    self.emit_build_outcome(payload, &seg.matched)?;
                }
                SegmentData::File(file) => {
                    let nk = self.key_types.len();
                    let mut offset = 0;
                    for b in file.read()? {
                        let b = b?;
                        let n = b.num_rows();
                        let flags = seg.matched.get(offset..offset + n).ok_or_else(|| {
                            FerroError::Internal("a spilled join segment changed size".into())
                        })?;
                        self.emit_build_outcome(&payload_of(&b, nk)?, flags)?;
                        offset += n;
                    }
                }
            }
        }
        self.reservation.shrink(seg.bytes);
        Ok(())
    }
}

/// A key-prefixed batch without its keys.
fn payload_of(batch: &RecordBatch, num_keys: usize) -> Result<RecordBatch> {
    let columns: Vec<usize> = (num_keys..batch.num_columns()).collect();
    Ok(batch.project(&columns)?)
}

/// Every `(probe row, build row)` pair of equal keys.
fn pairs(probe: &SortedKeys, build: &SortedKeys) -> Result<(Vec<u32>, Vec<u32>)> {
    let (mut p, mut b) = (Vec::new(), Vec::new());
    merge_sorted(probe, build, &mut p, &mut b)?;
    Ok((p, b))
}
