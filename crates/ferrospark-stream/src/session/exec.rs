//! The streaming session window aggregation over micro-batches, as Spark runs one state
//! partition of `SessionWindowStateStoreRestoreExec` -> `MergingSessionsExec` ->
//! `SessionWindowStateStoreSaveExec`.
//!
//! ```text
//!  batch b (eviction watermark E: computed at the end of b - 1; late watermark L: of b - 1):
//!    rows ─▶ each opens [time, time + gap); spans ending at or below L are late: dropped
//!         ─▶ the rest merged per key into the batch's sessions
//!         ─▶ merged with the key's stored sessions (one prefix scan per key)
//!         ─▶ aggregate buffers: new rows update, stored buffers merge
//!    append:   store them all; then every stored session ending at or below E leaves, emitted
//!    update:   those ending at or below E leave unemitted; the rest are stored, the changed
//!              ones emitted; every stored session ending at or below E leaves, unemitted
//!              (Spark 4 refuses update mode for session windows; this is what its 3.2
//!              design emits, offered for sinks that upsert)
//!    complete: store them all; every stored session is emitted; nothing leaves
//!    commit version b + 1; the watermark moves for b + 1
//! ```
//! Two spans of a key join when the later one starts at or before the earlier one's end.

use hashbrown::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{
    Array, ArrayRef, DurationMicrosecondArray, RecordBatch, StringArray, StructArray,
    TimestampMicrosecondArray, UInt32Array,
};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use ferrospark_agg::accumulators::{EmitTo, GroupsAccumulator};
use ferrospark_agg::{AggregateCall, AggregateExpr};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::interval::interval_text_micros;
use ferrospark_expr::{bind, evaluate, BindContext, Expr, PhysicalExpr};

use super::state::{ended_sessions, put_session, remove_session, sessions, StoredSession};
use crate::state::{
    check_batch, column_name, open_provider, run_moving_to_disk, StateStore, StateStoreConf,
    StateStoreId, StateStoreMetrics, StateStoreProvider,
};
use crate::watermark::{micros, BatchWatermark};

/// Which sessions each batch emits (Spark's output modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Each session once, when the watermark passes its end.
    Append,
    /// The sessions this batch changed.
    Update,
    /// Every session, every batch.
    Complete,
}

impl OutputMode {
    /// The mode named `name` (`append`, `update`, `complete`).
    pub fn parse(name: &str) -> Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "append" => Ok(OutputMode::Append),
            "update" => Ok(OutputMode::Update),
            "complete" => Ok(OutputMode::Complete),
            other => Err(FerroError::Config(format!(
                "output_mode is '{other}': use 'append', 'update' or 'complete'"
            ))),
        }
    }
}

/// A session's gap: one for all rows, or an expression over each row (an interval string
/// or a duration; a NULL, unreadable or non-positive gap drops the row, as in Spark).
#[derive(Debug, Clone)]
pub enum SessionGap {
    /// Microseconds.
    Fixed(i64),
    /// An expression over the input.
    PerRow(Expr),
}

impl SessionGap {
    /// A gap written as text (`"5 minutes"`).
    pub fn from_text(text: &str) -> Result<Self> {
        match interval_text_micros(text)? {
            Some(m) if m > 0 => Ok(SessionGap::Fixed(m)),
            _ => Err(FerroError::Analysis(format!(
                "the session gap '{text}' is not a positive interval such as '5 minutes'"
            ))),
        }
    }
}

/// What a streaming session window aggregation computes.
#[derive(Debug, Clone)]
pub struct SessionWindowSpec {
    /// The input's columns.
    pub schema: SchemaRef,
    /// The event-time column.
    pub time: String,
    /// The gap.
    pub gap: SessionGap,
    /// The grouping columns beside the session window.
    pub keys: Vec<String>,
    /// The aggregates.
    pub aggs: Vec<AggregateCall>,
    /// The watermark's column (must be `time`) and delay (ms).
    pub watermark: Option<(String, i64)>,
    /// What each batch emits.
    pub output_mode: OutputMode,
}

/// A session being built this batch: its bounds, the stored sessions and the batch's rows in it.
struct Merged {
    key: Vec<u8>,
    start: i64,
    end: i64,
    stored: Vec<StoredSession>,
    rows: Vec<u32>,
}

impl SessionWindowSpec {
    /// The spec with its time, key and watermark columns spelled as its schema spells them
    /// ([`column_name`]).
    pub fn resolved(mut self) -> Result<Self> {
        let schema = &self.schema;
        self.time = column_name(schema, &self.time)?;
        self.keys = self
            .keys
            .iter()
            .map(|c| column_name(schema, c))
            .collect::<Result<_>>()?;
        if let Some((c, _)) = &mut self.watermark {
            *c = column_name(schema, c)?;
        }
        Ok(self)
    }
}

/// A streaming session window aggregation's state and watermark across micro-batches.
pub struct SessionWindowAggregation {
    core: Core,
    provider: Box<dyn StateStoreProvider>,
    metrics: StateStoreMetrics,
}

/// What turns rows into sessions and sessions into output.
struct Core {
    spec: SessionWindowSpec,
    time: usize,
    keys: Vec<usize>,
    key_rows: RowConverter,
    gap: Option<PhysicalExpr>,
    aggs: Vec<AggregateExpr>,
    /// The aggregates' state columns, as stored.
    buffer_fields: Vec<Field>,
    buffer_rows: RowConverter,
    output: SchemaRef,
}

fn spark_append_error() -> FerroError {
    FerroError::Analysis(
        "Append output mode not supported when there are streaming aggregations on streaming \
         DataFrames/DataSets without watermark: add a watermark on the event-time column, or \
         use the update or complete output mode"
            .into(),
    )
}

impl SessionWindowAggregation {
    /// The aggregation `spec` under `checkpoint` (operator `operator_id`, partition
    /// `partition_id`), its store by `state`. The operator's opener
    /// (`PartitionedSessionWindow::open`) has resolved the spec's names
    /// ([`SessionWindowSpec::resolved`]) and checked the checkpoint's row format, once for all
    /// its partitions.
    pub(crate) fn open(
        spec: SessionWindowSpec,
        checkpoint: &Path,
        operator_id: u64,
        partition_id: u32,
        cfg: &Config,
        state: &StateStoreConf,
    ) -> Result<Self> {
        let schema = &spec.schema;
        let index = |name: &str| ferrospark_expr::resolve_column(schema, name);
        let time = index(&spec.time)?;
        let time_type = schema.field(time).data_type().clone();
        let tz = match &time_type {
            DataType::Timestamp(_, tz) => tz.clone(),
            other => {
                return Err(FerroError::Analysis(format!(
                    "the session window's time column `{}` is {other}, not a TIMESTAMP",
                    spec.time
                )))
            }
        };
        if let Some((c, _)) = &spec.watermark {
            if c != &spec.time {
                return Err(FerroError::Analysis(format!(
                    "the watermark is on `{c}` but the session window is over `{}`: put the \
                     watermark on the session window's time column",
                    spec.time
                )));
            }
        }
        if spec.output_mode == OutputMode::Append && spec.watermark.is_none() {
            return Err(spark_append_error());
        }
        let keys = spec
            .keys
            .iter()
            .map(|k| index(k))
            .collect::<Result<Vec<_>>>()?;
        let key_rows = RowConverter::new(
            keys.iter()
                .map(|&i| SortField::new(schema.field(i).data_type().clone()))
                .collect(),
        )?;
        let ctx = BindContext::for_session(schema, cfg);
        let gap = match &spec.gap {
            SessionGap::Fixed(_) => None,
            SessionGap::PerRow(e) => Some(bind(e, &ctx)?),
        };
        let ansi = cfg.ansi_enabled()?;
        let aggs = spec
            .aggs
            .iter()
            .map(|c| {
                let a = AggregateExpr::bind(c, schema, ansi, cfg.session_time_zone())?;
                if c.distinct {
                    a.over_distinct_set()
                } else {
                    Ok(a)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let buffer_fields: Vec<Field> = aggs.iter().flat_map(|a| a.state_fields()).collect();
        let buffer_rows = RowConverter::new(
            buffer_fields
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )?;
        let ts = DataType::Timestamp(TimeUnit::Microsecond, tz);
        let window = Fields::from(vec![
            Field::new("start", ts.clone(), true),
            Field::new("end", ts, true),
        ]);
        let mut fields = vec![Field::new(
            "session_window",
            DataType::Struct(window),
            false,
        )];
        fields.extend(keys.iter().map(|&i| schema.field(i).clone()));
        for (a, c) in aggs.iter().zip(&spec.aggs) {
            fields.push(Field::new(
                c.output_name(),
                a.result_type(),
                a.result_nullable(),
            ));
        }
        // Sessions are read by their group's prefix (see `state`).
        let conf = StateStoreConf {
            prefix_index: true,
            ..state.clone()
        };
        let provider = open_provider(
            &StateStoreId::new(checkpoint, operator_id, partition_id),
            &conf,
        )?;
        Ok(Self {
            core: Core {
                time,
                keys,
                key_rows,
                gap,
                aggs,
                buffer_fields,
                buffer_rows,
                output: Arc::new(Schema::new(fields)),
                spec,
            },
            provider,
            metrics: StateStoreMetrics::default(),
        })
    }

    /// The output's columns: `session_window` (a struct of `start` and `end`), the keys,
    /// then the aggregates.
    pub fn schema(&self) -> SchemaRef {
        self.core.output.clone()
    }

    /// The state store's counters after the last batch.
    pub fn metrics(&self) -> &StateStoreMetrics {
        &self.metrics
    }

    /// The latest batch committed.
    pub fn latest_version(&self) -> Result<u64> {
        self.provider.latest_version()
    }
}

impl Core {
    /// Each row's gap (microseconds; `None` drops the row).
    fn gaps(&self, batch: &RecordBatch) -> Result<Vec<Option<i64>>> {
        let n = batch.num_rows();
        if n == 0 {
            // Some expressions cannot be evaluated over no rows.
            return Ok(Vec::new());
        }
        let Some(e) = &self.gap else {
            let SessionGap::Fixed(g) = self.spec.gap else {
                return Err(FerroError::Internal(
                    "a per-row gap without its expression".into(),
                ));
            };
            return Ok(vec![Some(g); n]);
        };
        let v = evaluate(e, batch)?.into_array(n)?;
        let positive = |g: Option<i64>| g.filter(|&g| g > 0);
        match v.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                let s = arrow_cast::cast(&v, &DataType::Utf8)?;
                let s = s
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or_else(|| FerroError::Internal("a string gap".into()))?;
                (0..n)
                    .map(|i| {
                        // Text that is no interval, or one of months, drops the row.
                        if s.is_null(i) {
                            Ok(None)
                        } else {
                            Ok(positive(interval_text_micros(s.value(i)).ok().flatten()))
                        }
                    })
                    .collect()
            }
            DataType::Duration(_) => {
                let d = arrow_cast::cast(&v, &DataType::Duration(TimeUnit::Microsecond))?;
                let d = d
                    .as_any()
                    .downcast_ref::<DurationMicrosecondArray>()
                    .ok_or_else(|| FerroError::Internal("a duration gap".into()))?;
                Ok((0..n)
                    .map(|i| positive(d.is_valid(i).then(|| d.value(i))))
                    .collect())
            }
            other => Err(FerroError::Analysis(format!(
                "a session window's gap must be an interval string or a duration, not {other}"
            ))),
        }
    }

    /// The batch's sessions per key, merged with the stored ones of the keys it touches.
    fn merged_sessions(
        &self,
        store: &dyn StateStore,
        batch: &RecordBatch,
        late_micros: Option<i64>,
    ) -> Result<Vec<Merged>> {
        let times = micros(batch.column(self.time))?;
        let gaps = self.gaps(batch)?;
        // Grouping keys normalised as Spark's (-0.0 is 0.0, every NaN one NaN).
        let key_cols: Vec<ArrayRef> = self
            .keys
            .iter()
            .map(|&i| ferrospark_expr::normalize_key(batch.column(i)))
            .collect();
        let key_rows = self.key_rows.convert_columns(&key_cols)?;
        // Each key's rows with their spans, read here in row order: the rows of a key lie
        // all over the batch, and reading their times later, by row, misses the cache.
        let mut by_key: HashMap<&[u8], Vec<(i64, i64, u32)>> = HashMap::new();
        for (r, gap) in gaps.iter().enumerate() {
            let Some(gap) = gap.filter(|_| times.is_valid(r)) else {
                continue;
            };
            let start = times.value(r);
            let end = start.saturating_add(gap);
            // A row is late when its own span ends at or below the late watermark, before
            // any merging (Spark merges sessions only after the exchange).
            if late_micros.is_some_and(|l| end <= l) {
                continue;
            }
            by_key
                .entry(key_rows.row(r).data())
                .or_default()
                .push((start, end, r as u32));
        }
        let mut keys: Vec<&[u8]> = by_key.keys().copied().collect();
        keys.sort_unstable();
        let mut out = Vec::new();
        for key in keys {
            let mut rows = by_key.remove(key).unwrap_or_default();
            rows.sort_by_key(|&(s, _, _)| s);
            // The batch's own sessions of this key, late ones dropped whole.
            let mut batch_sessions: Vec<(i64, i64, Vec<u32>)> = Vec::new();
            for (s, e, r) in rows {
                match batch_sessions.last_mut() {
                    Some(last) if s <= last.1 => {
                        last.1 = last.1.max(e);
                        last.2.push(r);
                    }
                    _ => batch_sessions.push((s, e, vec![r])),
                }
            }
            // With the stored sessions of the key, by start.
            enum Part {
                Stored(StoredSession),
                New(Vec<u32>),
            }
            let mut parts: Vec<(i64, i64, Part)> = sessions(store, Some(key))?
                .into_iter()
                .map(|s| (s.start, s.end, Part::Stored(s)))
                .collect();
            parts.extend(
                batch_sessions
                    .into_iter()
                    .map(|(s, e, rows)| (s, e, Part::New(rows))),
            );
            parts.sort_by_key(|p| p.0);
            let mut current: Option<Merged> = None;
            for (s, e, part) in parts {
                let joins = current.as_ref().is_some_and(|c| s <= c.end);
                if !joins {
                    out.extend(current.take());
                    current = Some(Merged {
                        key: key.to_vec(),
                        start: s,
                        end: e,
                        stored: Vec::new(),
                        rows: Vec::new(),
                    });
                }
                if let Some(c) = current.as_mut() {
                    c.end = c.end.max(e);
                    match part {
                        Part::Stored(st) => c.stored.push(st),
                        Part::New(rows) => c.rows.extend(rows),
                    }
                }
            }
            out.extend(current);
        }
        Ok(out)
    }

    fn accumulators(&self) -> Result<Vec<Box<dyn GroupsAccumulator>>> {
        self.aggs.iter().map(|a| a.create_accumulator()).collect()
    }

    /// `buffers` (encoded rows) decoded into each aggregate's state columns.
    fn decode_buffers(&self, buffers: &[&[u8]]) -> Result<Vec<Vec<ArrayRef>>> {
        let cols = if buffers.is_empty() {
            self.buffer_fields
                .iter()
                .map(|f| arrow_array::new_empty_array(f.data_type()))
                .collect()
        } else {
            let parser = self.buffer_rows.parser();
            self.buffer_rows
                .convert_rows(buffers.iter().map(|b| parser.parse(b)))?
        };
        let mut it = cols.into_iter();
        Ok(self
            .aggs
            .iter()
            .map(|a| it.by_ref().take(a.state_fields().len()).collect())
            .collect())
    }

    /// The merged sessions' new buffers: the batch's rows update them, the stored buffers
    /// merge into them.
    fn aggregate(&self, batch: &RecordBatch, merged: &[Merged]) -> Result<Vec<Vec<u8>>> {
        let total = merged.len();
        let mut accs = self.accumulators()?;
        let mut rows: Vec<u32> = Vec::new();
        let mut row_groups: Vec<u32> = Vec::new();
        let mut stored: Vec<&[u8]> = Vec::new();
        let mut stored_groups: Vec<u32> = Vec::new();
        for (g, m) in merged.iter().enumerate() {
            rows.extend(&m.rows);
            row_groups.extend(std::iter::repeat_n(g as u32, m.rows.len()));
            stored.extend(m.stored.iter().map(|s| s.buffers.as_slice()));
            stored_groups.extend(std::iter::repeat_n(g as u32, m.stored.len()));
        }
        let take = UInt32Array::from(rows);
        for (a, acc) in self.aggs.iter().zip(accs.iter_mut()) {
            let values = a
                .args
                .iter()
                .map(|e| {
                    let v = evaluate(e, batch)?.into_array(batch.num_rows())?;
                    Ok(arrow_select::take::take(v.as_ref(), &take, None)?)
                })
                .collect::<Result<Vec<_>>>()?;
            acc.update_batch(&values, &row_groups, total)?;
        }
        let states = self.decode_buffers(&stored)?;
        for (acc, s) in accs.iter_mut().zip(&states) {
            acc.merge_batch(s, &stored_groups, total)?;
        }
        let mut cols = Vec::with_capacity(self.buffer_fields.len());
        for acc in accs.iter_mut() {
            cols.extend(acc.state(EmitTo::All)?);
        }
        let encoded = self.buffer_rows.convert_columns(&cols)?;
        Ok((0..total).map(|i| encoded.row(i).data().to_vec()).collect())
    }

    /// The output rows of `sessions`.
    fn emit(&self, sessions: &[StoredSession]) -> Result<RecordBatch> {
        let n = sessions.len();
        if n == 0 {
            // Some accumulators cannot hand out zero groups.
            return Ok(RecordBatch::new_empty(self.output.clone()));
        }
        let groups: Vec<u32> = (0..n as u32).collect();
        let buffers: Vec<&[u8]> = sessions.iter().map(|s| s.buffers.as_slice()).collect();
        let states = self.decode_buffers(&buffers)?;
        let mut accs = self.accumulators()?;
        let mut results = Vec::with_capacity(accs.len());
        for (acc, s) in accs.iter_mut().zip(&states) {
            acc.merge_batch(s, &groups, n)?;
            results.push(acc.evaluate(EmitTo::All)?);
        }
        let DataType::Struct(window) = self.output.field(0).data_type().clone() else {
            return Err(FerroError::Internal(
                "the session window is not a struct".into(),
            ));
        };
        let tz = match window[0].data_type() {
            DataType::Timestamp(_, tz) => tz.clone(),
            other => {
                return Err(FerroError::Internal(format!(
                    "a session window bound of type {other}"
                )))
            }
        };
        // The bounds are instants (UTC microseconds): labelled with the time zone, not cast
        // to it (a cast would read them as wall-clock times there and shift them).
        let bound = |f: &dyn Fn(&StoredSession) -> i64| -> Result<ArrayRef> {
            let a = TimestampMicrosecondArray::from(sessions.iter().map(f).collect::<Vec<_>>());
            Ok(Arc::new(a.with_timezone_opt(tz.clone())))
        };
        let window =
            StructArray::try_new(window, vec![bound(&|s| s.start)?, bound(&|s| s.end)?], None)?;
        let mut columns: Vec<ArrayRef> = vec![Arc::new(window)];
        if !self.keys.is_empty() {
            let parser = self.key_rows.parser();
            columns.extend(
                self.key_rows
                    .convert_rows(sessions.iter().map(|s| parser.parse(&s.key)))?,
            );
        }
        columns.extend(results);
        Ok(RecordBatch::try_new_with_options(
            self.output.clone(),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
        )?)
    }
}

impl SessionWindowAggregation {
    /// The sessions batch `batch_id` emits for its rows (`None`: a batch without data, which
    /// still moves the watermark's work along) under the query's watermarks, which the
    /// caller keeps over every partition's rows (`PartitionedSessionWindow` in one process,
    /// Spark's driver on Spark). Running the last committed batch again gives the same rows
    /// and leaves the state as it was; an older one is an error.
    pub fn process_under(
        &mut self,
        batch_id: u64,
        batch: Option<&RecordBatch>,
        marks: Option<BatchWatermark>,
    ) -> Result<RecordBatch> {
        run_moving_to_disk(
            self,
            1,
            |s| s.run_batch(batch_id, batch, marks),
            |s| s.provider.refused_memory(),
        )
    }

    fn run_batch(
        &mut self,
        batch_id: u64,
        batch: Option<&RecordBatch>,
        marks: Option<BatchWatermark>,
    ) -> Result<RecordBatch> {
        let core = &self.core;
        check_batch(batch_id, self.provider.latest_version()?)?;
        if let Some(b) = batch {
            if b.schema().fields() != core.spec.schema.fields() {
                return Err(FerroError::Analysis(format!(
                    "a micro-batch's columns ({}) are not the aggregation input's ({})",
                    b.schema(),
                    core.spec.schema
                )));
            }
        }
        let marks = marks.filter(|_| core.spec.watermark.is_some());
        let evict = marks.map(|m| m.eviction.saturating_mul(1000));
        let late = marks.map(|m| m.late.saturating_mul(1000));
        let mut store = self.provider.get_store(batch_id)?;
        let updates = Instant::now();
        let merged = match batch {
            Some(b) => core.merged_sessions(store.as_ref(), b, late)?,
            None => Vec::new(),
        };
        let buffers = match batch {
            Some(b) if !merged.is_empty() => core.aggregate(b, &merged)?,
            _ => Vec::new(),
        };
        let mut emitted: Vec<StoredSession> = Vec::new();
        for (m, buffers) in merged.into_iter().zip(buffers) {
            for s in &m.stored {
                remove_session(store.as_mut(), &s.key, s.start)?;
            }
            let session = StoredSession {
                key: m.key,
                start: m.start,
                end: m.end,
                buffers,
            };
            if core.spec.output_mode == OutputMode::Update {
                if evict.is_some_and(|e| session.end <= e) {
                    continue;
                }
                // Every merged session holds new rows: each one changed.
                emitted.push(session.clone());
            }
            put_session(store.as_mut(), &session)?;
        }
        let removals = Instant::now();
        let updates = removals.duration_since(updates);
        match (core.spec.output_mode, evict) {
            (OutputMode::Complete, _) => emitted = sessions(store.as_ref(), None)?,
            (mode, Some(e)) => {
                let gone = ended_sessions(store.as_ref(), e)?;
                for s in &gone {
                    remove_session(store.as_mut(), &s.key, s.start)?;
                }
                if mode == OutputMode::Append {
                    emitted = gone;
                }
            }
            (_, None) => {}
        }
        let removals = removals.elapsed();
        let out = core.emit(&emitted)?;
        store.commit()?;
        drop(store);
        self.metrics = StateStoreMetrics {
            all_updates_ms: updates.as_secs_f64() * 1000.0,
            all_removals_ms: removals.as_secs_f64() * 1000.0,
            ..self.provider.metrics()
        };
        Ok(out)
    }
}
