//! The stream-stream join over micro-batches, as Spark's `StreamingSymmetricHashJoinExec`
//! runs one partition of it.
//!
//! ```text
//!  batch b, under watermark W (computed at the end of batch b - 1):
//!    left rows, late ones (time <= W) dropped ─▶ each joins the right state ─▶ kept in the
//!        left state unless W already frees it (matched flag: whether it joined)
//!    right rows, likewise ─▶ join the left state (which now holds this batch's left rows:
//!        each new pair is made once)
//!    outer side: rows W frees leave the state; those that never joined are emitted with
//!        NULLs for the other side.  Other sides: rows W frees leave the state.
//!    commit the four stores as version b + 1; the watermark moves for batch b + 1
//! ```
//! Rows and keys live in the state as `arrow-row` encodings. A key with a NULL matches
//! nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, TimestampMicrosecondArray};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::{bind_predicate, evaluate_predicate, BindContext, Expr, PhysicalExpr};

use super::predicates::{state_watermark_predicates, JoinInput, StateWatermarkPredicate};
use super::state::{JoinSide, JoinStateManager, StoredRow};
use crate::state::{open_provider, StateStoreConf, StateStoreId, StateStoreProvider};
use crate::watermark::{WatermarkPolicy, WatermarkTracker};

/// An output row as its (left, right) encoded rows; `None` is a side of NULLs.
type OutputPair = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The joins a stream-stream join runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamJoinType {
    /// Pairs only.
    Inner,
    /// Pairs, and left rows that never found a partner once the watermark frees them.
    LeftOuter,
    /// Pairs, and right rows likewise.
    RightOuter,
}

/// What a stream-stream join joins.
#[derive(Debug, Clone)]
pub struct StreamJoinSpec {
    /// The left input's columns.
    pub left_schema: SchemaRef,
    /// The right input's columns (names distinct from the left's).
    pub right_schema: SchemaRef,
    /// Left key columns.
    pub left_keys: Vec<String>,
    /// Right key columns, in the same order.
    pub right_keys: Vec<String>,
    /// The join.
    pub join_type: StreamJoinType,
    /// A condition over both sides' columns beyond the keys.
    pub condition: Option<Expr>,
    /// The left input's event-time column and delay (ms).
    pub left_watermark: Option<(String, i64)>,
    /// The right input's event-time column and delay (ms).
    pub right_watermark: Option<(String, i64)>,
}

/// One side's encoders.
struct Side {
    schema: SchemaRef,
    keys: Vec<usize>,
    key_rows: RowConverter,
    rows: RowConverter,
    time: Option<usize>,
}

impl Side {
    fn new(schema: &SchemaRef, keys: &[String], watermark: Option<&(String, i64)>) -> Result<Self> {
        let index = |name: &str| {
            schema.index_of(name).map_err(|_| {
                FerroError::Analysis(format!(
                    "[UNRESOLVED_COLUMN] `{name}` is not a column of the join input ({})",
                    schema
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
        };
        let keys = keys.iter().map(|k| index(k)).collect::<Result<Vec<_>>>()?;
        let field = |i: usize| SortField::new(schema.field(i).data_type().clone());
        let time = match watermark {
            Some((c, _)) => {
                let i = index(c)?;
                if !matches!(schema.field(i).data_type(), DataType::Timestamp(_, _)) {
                    return Err(FerroError::Analysis(format!(
                        "the watermark column `{c}` is not a TIMESTAMP"
                    )));
                }
                Some(i)
            }
            None => None,
        };
        Ok(Self {
            schema: schema.clone(),
            key_rows: RowConverter::new(keys.iter().map(|&i| field(i)).collect())?,
            rows: RowConverter::new((0..schema.fields().len()).map(field).collect())?,
            keys,
            time,
        })
    }

    fn input(&self, watermark: Option<&(String, i64)>, key_names: &[String]) -> JoinInput {
        JoinInput {
            columns: self
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
            keys: key_names.to_vec(),
            watermark_column: watermark.map(|(c, _)| c.clone()),
        }
    }

    /// Whether a stored row goes under `p`.
    fn expired(&self, p: &StateWatermarkPredicate, key: &[u8], row: &[u8]) -> Result<bool> {
        Ok(match p {
            StateWatermarkPredicate::Key {
                ordinal,
                watermark_ms,
            } => {
                let parsed = self.key_rows.parser();
                let k = self.key_rows.convert_rows([parsed.parse(key)])?;
                time_at_or_below(&k[*ordinal], *watermark_ms)
            }
            StateWatermarkPredicate::Value {
                column,
                watermark_ms,
            } => {
                let i = self
                    .schema
                    .index_of(column)
                    .map_err(|e| FerroError::Internal(e.to_string()))?;
                let parsed = self.rows.parser();
                let r = self.rows.convert_rows([parsed.parse(row)])?;
                time_at_or_below(&r[i], *watermark_ms)
            }
        })
    }
}

/// The timestamps of `a` in microseconds.
fn micros(a: &ArrayRef) -> Result<TimestampMicrosecondArray> {
    let t = arrow_cast::cast(
        a,
        &DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
    )?;
    t.as_any()
        .downcast_ref::<TimestampMicrosecondArray>()
        .cloned()
        .ok_or_else(|| FerroError::Internal("a watermark column that is not a timestamp".into()))
}

/// Whether the one value of `a` (a timestamp) is at or below `ms`.
fn time_at_or_below(a: &ArrayRef, ms: i64) -> bool {
    micros(a).is_ok_and(|t| t.is_valid(0) && t.value(0) <= ms.saturating_mul(1000))
}

/// A stream-stream join's state and watermark across micro-batches.
pub struct StreamJoin {
    spec: StreamJoinSpec,
    left: Side,
    right: Side,
    output: SchemaRef,
    condition: Option<PhysicalExpr>,
    /// left counts, left rows, right counts, right rows.
    providers: Vec<Box<dyn StateStoreProvider>>,
    tracker: WatermarkTracker,
    policy: WatermarkPolicy,
    /// The watermarked inputs' delays (ms), left first.
    delays: Vec<i64>,
    /// The sides as the watermark predicates see them.
    inputs: (JoinInput, JoinInput),
    watermarks: PathBuf,
}

impl StreamJoin {
    /// The join `spec` under `checkpoint` (operator `operator_id`, partition `partition_id`).
    pub fn open(
        spec: StreamJoinSpec,
        checkpoint: &Path,
        operator_id: u64,
        partition_id: u32,
        cfg: &Config,
    ) -> Result<Self> {
        let left = Side::new(
            &spec.left_schema,
            &spec.left_keys,
            spec.left_watermark.as_ref(),
        )?;
        let right = Side::new(
            &spec.right_schema,
            &spec.right_keys,
            spec.right_watermark.as_ref(),
        )?;
        let nullable = |s: &SchemaRef| -> Vec<Field> {
            s.fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect()
        };
        let mut fields = nullable(&spec.left_schema);
        fields.extend(nullable(&spec.right_schema));
        let output = Arc::new(Schema::new(fields));
        let condition = match &spec.condition {
            Some(c) => Some(bind_predicate(c, &BindContext::for_session(&output, cfg))?),
            None => None,
        };
        let conf = StateStoreConf::from_config(cfg)?;
        let id = StateStoreId::new(checkpoint, operator_id, partition_id);
        let mut providers = Vec::new();
        for side in [JoinSide::Left, JoinSide::Right] {
            for name in side.store_names() {
                providers.push(open_provider(&id.clone().named(name), &conf)?);
            }
        }
        let delays: Vec<i64> = [&spec.left_watermark, &spec.right_watermark]
            .iter()
            .filter_map(|w| w.as_ref().map(|(_, d)| *d))
            .collect();
        let policy = WatermarkPolicy::from_config(cfg)?;
        let tracker = WatermarkTracker::new(delays.clone(), policy);
        let inputs = (
            left.input(spec.left_watermark.as_ref(), &spec.left_keys),
            right.input(spec.right_watermark.as_ref(), &spec.right_keys),
        );
        Ok(Self {
            spec,
            left,
            right,
            output,
            condition,
            providers,
            tracker,
            policy,
            delays,
            inputs,
            watermarks: checkpoint.join("watermarks").join(operator_id.to_string()),
        })
    }

    /// The output's columns: the left's then the right's, all nullable.
    pub fn schema(&self) -> SchemaRef {
        self.output.clone()
    }

    /// The rows batch `batch_id` emits for these inputs. Running the last committed batch
    /// again gives the same rows and leaves the state as it was; an older one is an error.
    pub fn process(
        &mut self,
        batch_id: u64,
        left: Option<&RecordBatch>,
        right: Option<&RecordBatch>,
    ) -> Result<RecordBatch> {
        let latest = self.providers[0].latest_version()?;
        if batch_id + 1 < latest {
            return Err(FerroError::Config(format!(
                "batch {batch_id} is older than the last committed batch {}: only the last one can run again",
                latest - 1
            )));
        }
        if batch_id > latest {
            return Err(FerroError::Config(format!(
                "batch {batch_id} follows no committed batch (the next one is {latest})"
            )));
        }
        if batch_id > 0 {
            self.tracker.load(&self.watermarks, batch_id)?;
        } else {
            self.tracker = WatermarkTracker::new(self.delays.clone(), self.policy);
        }
        let has_watermark =
            self.spec.left_watermark.is_some() || self.spec.right_watermark.is_some();
        let wm = has_watermark.then(|| self.tracker.current());
        let (lp, rp) = state_watermark_predicates(
            &self.inputs.0,
            &self.inputs.1,
            self.spec.condition.as_ref(),
            wm,
        );
        // Event times for the next batch's watermark.
        let mut input_index = 0;
        for (side, batch) in [(&self.left, left), (&self.right, right)] {
            if let Some(i) = side.time {
                if let Some(b) = batch {
                    observe(&mut self.tracker, input_index, b.column(i))?;
                }
                input_index += 1;
            }
        }
        let (lc, rest) = self.providers.split_at_mut(1);
        let (lr, rest) = rest.split_at_mut(1);
        let (rc, rr) = rest.split_at_mut(1);
        let mut lstate = JoinStateManager::open(lc[0].as_mut(), lr[0].as_mut(), batch_id)?;
        let mut rstate = JoinStateManager::open(rc[0].as_mut(), rr[0].as_mut(), batch_id)?;
        let mut pairs: Vec<OutputPair> = Vec::new();
        let ctx = Probe {
            output: &self.output,
            condition: self.condition.as_ref(),
        };
        if let Some(b) = left {
            join_side(
                &self.left,
                &self.right,
                b,
                wm,
                lp.as_ref(),
                &mut lstate,
                &mut rstate,
                true,
                &ctx,
                &mut pairs,
            )?;
        }
        if let Some(b) = right {
            join_side(
                &self.right,
                &self.left,
                b,
                wm,
                rp.as_ref(),
                &mut rstate,
                &mut lstate,
                false,
                &ctx,
                &mut pairs,
            )?;
        }
        let evict = |state: &mut JoinStateManager<'_>,
                     side: &Side,
                     p: &Option<StateWatermarkPredicate>|
         -> Result<Vec<StoredRow>> {
            match p {
                Some(key @ StateWatermarkPredicate::Key { .. }) => {
                    state.remove_by_key(&mut |k| side.expired(key, k, &[]))
                }
                Some(value @ StateWatermarkPredicate::Value { .. }) => {
                    state.remove_by_value(&mut |r| side.expired(value, &[], r))
                }
                None => Ok(Vec::new()),
            }
        };
        let left_gone = evict(&mut lstate, &self.left, &lp)?;
        let right_gone = evict(&mut rstate, &self.right, &rp)?;
        match self.spec.join_type {
            StreamJoinType::Inner => {}
            StreamJoinType::LeftOuter => pairs.extend(
                left_gone
                    .into_iter()
                    .filter(|r| !r.matched)
                    .map(|r| (Some(r.row), None)),
            ),
            StreamJoinType::RightOuter => pairs.extend(
                right_gone
                    .into_iter()
                    .filter(|r| !r.matched)
                    .map(|r| (None, Some(r.row))),
            ),
        }
        let out = pairs_batch(&self.left, &self.right, &self.output, &pairs)?;
        lstate.commit()?;
        rstate.commit()?;
        drop(lstate);
        drop(rstate);
        self.tracker.advance();
        self.tracker.save(&self.watermarks, batch_id + 1)?;
        Ok(out)
    }
}

/// The output rows of `pairs` (`None`: that side's columns NULL).
fn pairs_batch(
    left: &Side,
    right: &Side,
    output: &SchemaRef,
    pairs: &[OutputPair],
) -> Result<RecordBatch> {
    let mut columns = side_columns(left, pairs.iter().map(|p| p.0.as_deref()))?;
    columns.extend(side_columns(right, pairs.iter().map(|p| p.1.as_deref()))?);
    Ok(RecordBatch::try_new_with_options(
        output.clone(),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(pairs.len())),
    )?)
}

/// One side's columns for `rows` (`None`: NULLs).
fn side_columns<'a>(
    side: &Side,
    rows: impl Iterator<Item = Option<&'a [u8]>>,
) -> Result<Vec<ArrayRef>> {
    let rows: Vec<Option<&[u8]>> = rows.collect();
    let parser = side.rows.parser();
    let present: Vec<arrow_row::Row<'_>> = rows.iter().flatten().map(|r| parser.parse(r)).collect();
    let decoded = side.rows.convert_rows(present)?;
    // Spread the decoded rows over the output, NULL where a row is absent.
    let mut take = Vec::with_capacity(rows.len());
    let mut next = 0u32;
    for r in &rows {
        if r.is_some() {
            take.push(Some(next));
            next += 1;
        } else {
            take.push(None);
        }
    }
    let indices = arrow_array::UInt32Array::from(take);
    decoded
        .iter()
        .map(|c| Ok(arrow_select::take::take(c.as_ref(), &indices, None)?))
        .collect()
}

fn observe(tracker: &mut WatermarkTracker, input: usize, times: &ArrayRef) -> Result<()> {
    if let Some(max) = arrow_arith::aggregate::max(&micros(times)?) {
        tracker.observe(input, max);
    }
    Ok(())
}

/// What a probe needs to test a pair.
struct Probe<'a> {
    output: &'a SchemaRef,
    condition: Option<&'a PhysicalExpr>,
}

/// Joins `batch` (rows of `this` side) with the other side's state, then keeps its rows.
#[allow(clippy::too_many_arguments)]
fn join_side(
    this: &Side,
    other: &Side,
    batch: &RecordBatch,
    wm: Option<i64>,
    predicate: Option<&StateWatermarkPredicate>,
    this_state: &mut JoinStateManager<'_>,
    other_state: &mut JoinStateManager<'_>,
    this_is_left: bool,
    probe: &Probe<'_>,
    pairs: &mut Vec<OutputPair>,
) -> Result<()> {
    let keys: Vec<ArrayRef> = this.keys.iter().map(|&i| batch.column(i).clone()).collect();
    let key_rows = this.key_rows.convert_columns(&keys)?;
    let rows = this.rows.convert_columns(batch.columns())?;
    let late = match (this.time, wm) {
        (Some(i), Some(w)) => Some((micros(batch.column(i))?, w)),
        _ => None,
    };
    let null_key = |r: usize| keys.iter().any(|k| k.is_null(r));
    for r in 0..batch.num_rows() {
        // Rows at or before the watermark are late: Spark drops them.
        if let Some((t, w)) = &late {
            if t.is_null(r) || t.value(r) <= w.saturating_mul(1000) {
                continue;
            }
        }
        let key = key_rows.row(r);
        let row = rows.row(r);
        let mut joined_any = false;
        if !null_key(r) {
            let candidates = other_state.get(key.as_ref())?;
            let accept = matching(this, other, row.as_ref(), &candidates, this_is_left, probe)?;
            let accepted = other_state.mark_matched(key.as_ref(), candidates, &accept)?;
            joined_any = !accepted.is_empty();
            for other_row in accepted {
                pairs.push(if this_is_left {
                    (Some(row.as_ref().to_vec()), Some(other_row))
                } else {
                    (Some(other_row), Some(row.as_ref().to_vec()))
                });
            }
        }
        let expired = match predicate {
            Some(p) => this.expired(p, key.as_ref(), row.as_ref())?,
            None => false,
        };
        if !expired {
            this_state.append(key.as_ref(), row.as_ref(), joined_any)?;
        }
    }
    Ok(())
}

/// Which `candidates` (rows of `other`) pass the condition with `row` (of `this`).
fn matching(
    this: &Side,
    other: &Side,
    row: &[u8],
    candidates: &[StoredRow],
    this_is_left: bool,
    probe: &Probe<'_>,
) -> Result<Vec<bool>> {
    let Some(cond) = probe.condition else {
        return Ok(vec![true; candidates.len()]);
    };
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let repeated: Vec<Option<&[u8]>> = vec![Some(row); candidates.len()];
    let theirs: Vec<Option<&[u8]>> = candidates.iter().map(|c| Some(c.row.as_slice())).collect();
    let (l, r) = if this_is_left {
        (repeated, theirs)
    } else {
        (theirs, repeated)
    };
    let (ls, rs) = if this_is_left {
        (this, other)
    } else {
        (other, this)
    };
    let mut columns = side_columns(ls, l.into_iter())?;
    columns.extend(side_columns(rs, r.into_iter())?);
    let batch = RecordBatch::try_new(probe.output.clone(), columns)?;
    let mask = evaluate_predicate(cond, &batch)?;
    Ok((0..mask.len())
        .map(|i| mask.is_valid(i) && mask.value(i))
        .collect())
}
