//! The stream-stream join over micro-batches, as Spark's `StreamingSymmetricHashJoinExec`
//! runs one partition of it: inner, left / right / full outer and left semi.
//!
//! ```text
//!  batch b, eviction watermark E (computed at the end of b - 1), late watermark L (b - 1's E):
//!    left rows, late ones (time <= L) dropped, those failing the left-only conjuncts never
//!        kept (an outer left side emits them at once) ─▶ each joins the right state ─▶ kept
//!        in the left state (matched flag: whether it joined)
//!    right rows, likewise ─▶ join the left state (which now holds this batch's left rows:
//!        each new pair is made once)
//!    rows E frees leave the state; an outer side's that never joined are emitted with NULLs
//!        for the other side (a row E frees in its own batch still passes through the state)
//!    commit the four stores as version b + 1
//! ```
//! Rows and keys live in the state as `arrow-row` encodings. A row with a NULL key is
//! dropped on each side Spark's optimizer filters it from (see `join_side`); otherwise NULL
//! keys are equal, as in Spark's state.

use hashbrown::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::{
    bind_predicate, evaluate_predicate, BinaryOp, BindContext, ColumnRef, Expr, PhysicalExpr,
};

use super::predicates::{state_watermark_predicates, JoinInput, StateWatermarkPredicate};
use super::state::{Append, JoinSide, JoinStateManager, Partners, StoredRow};
use crate::state::{
    check_batch, column_name, min_latest, open_provider, run_moving_to_disk, StateStoreConf,
    StateStoreId, StateStoreMetrics, StateStoreProvider,
};
use crate::watermark::{micros, BatchWatermark};

/// The joins a stream-stream join runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamJoinType {
    /// Pairs only.
    Inner,
    /// Pairs, and left rows that never found a partner once the watermark frees them.
    LeftOuter,
    /// Pairs, and right rows likewise.
    RightOuter,
    /// Pairs, and both sides' rows likewise.
    FullOuter,
    /// Each left row once, when it first finds a partner.
    LeftSemi,
}

impl StreamJoinType {
    /// Spark's name of the join (as its errors print it).
    pub fn spark_name(self) -> &'static str {
        match self {
            StreamJoinType::Inner => "Inner",
            StreamJoinType::LeftOuter => "LeftOuter",
            StreamJoinType::RightOuter => "RightOuter",
            StreamJoinType::FullOuter => "FullOuter",
            StreamJoinType::LeftSemi => "LeftSemi",
        }
    }

    /// Whether the left side's unmatched rows are emitted.
    fn keeps_left(self) -> bool {
        matches!(self, StreamJoinType::LeftOuter | StreamJoinType::FullOuter)
    }

    /// Whether the right side's unmatched rows are emitted.
    fn keeps_right(self) -> bool {
        matches!(self, StreamJoinType::RightOuter | StreamJoinType::FullOuter)
    }

    /// Whether the left (`left`) or right side's unmatched rows are emitted.
    fn keeps(self, left: bool) -> bool {
        if left {
            self.keeps_left()
        } else {
            self.keeps_right()
        }
    }
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

impl StreamJoinSpec {
    /// The spec with its key and watermark columns spelled as its schemas spell them
    /// ([`column_name`]).
    pub fn resolved(mut self) -> Result<Self> {
        let (l, r) = (&self.left_schema, &self.right_schema);
        let names = |s: &SchemaRef, k: &[String]| {
            k.iter()
                .map(|c| column_name(s, c))
                .collect::<Result<Vec<_>>>()
        };
        self.left_keys = names(l, &self.left_keys)?;
        self.right_keys = names(r, &self.right_keys)?;
        for (s, w) in [
            (l, &mut self.left_watermark),
            (r, &mut self.right_watermark),
        ] {
            if let Some((c, _)) = w {
                *c = column_name(s, c)?;
            }
        }
        // The condition's columns too: its equalities become keys and its time range
        // bounds a watermark by name. An unknown one is refused here, before it could be
        // taken for a missing equality (a field path is left to binding).
        if let Some(c) = &self.condition {
            let both = Schema::new(
                l.fields()
                    .iter()
                    .chain(r.fields().iter())
                    .cloned()
                    .collect::<Vec<_>>(),
            );
            self.condition = Some(ferrospark_expr::transform::transform_up(c, &mut |e| {
                let Expr::Column(name) = &e else {
                    return Ok(e);
                };
                match ferrospark_expr::resolve_column_or_path(&both, name)? {
                    ColumnRef::Column(i) => Ok(Expr::Column(both.field(i).name().clone())),
                    ColumnRef::FieldPath(..) => Ok(e),
                }
            })?);
        }
        Ok(self)
    }
}

/// One side's encoders.
struct Side {
    schema: SchemaRef,
    keys: Vec<usize>,
    key_rows: RowConverter,
    rows: RowConverter,
    time: Option<usize>,
    /// The conjuncts of the condition that read only this side (Spark's pre-join filter):
    /// a row failing them can never join, so it is not kept.
    pre_filter: Option<PhysicalExpr>,
}

impl Side {
    fn new(
        schema: &SchemaRef,
        keys: &[String],
        watermark: Option<&(String, i64)>,
        pre_filter: Option<&Expr>,
        cfg: &Config,
    ) -> Result<Self> {
        let index = |name: &str| ferrospark_expr::resolve_column(schema, name);
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
        let pre_filter = match pre_filter {
            Some(e) => Some(bind_predicate(e, &BindContext::for_session(schema, cfg))?),
            None => None,
        };
        Ok(Self {
            schema: schema.clone(),
            key_rows: RowConverter::new(keys.iter().map(|&i| field(i)).collect())?,
            rows: RowConverter::new((0..schema.fields().len()).map(field).collect())?,
            keys,
            time,
            pre_filter,
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

    /// Those of the stored `keys` a key predicate frees (their `ordinal`th column at or below
    /// the watermark), in their order, decoded together.
    fn expired_keys(
        &self,
        ordinal: usize,
        watermark_ms: i64,
        keys: Vec<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>> {
        if keys.is_empty() {
            return Ok(keys);
        }
        let parser = self.key_rows.parser();
        let decoded = self
            .key_rows
            .convert_rows(keys.iter().map(|k| parser.parse(k)))?;
        let t = micros(&decoded[ordinal])?;
        let bound = watermark_ms.saturating_mul(1000);
        Ok(keys
            .into_iter()
            .enumerate()
            .filter(|(i, _)| t.is_valid(*i) && t.value(*i) <= bound)
            .map(|(_, k)| k)
            .collect())
    }

    /// The columns of stored `rows`, decoded together.
    fn decode<'a>(&self, rows: impl Iterator<Item = &'a [u8]>) -> Result<Vec<ArrayRef>> {
        let parser = self.rows.parser();
        let parsed: Vec<arrow_row::Row<'_>> = rows.map(|r| parser.parse(r)).collect();
        if parsed.is_empty() {
            return Ok(self
                .schema
                .fields()
                .iter()
                .map(|f| arrow_array::new_empty_array(f.data_type()))
                .collect());
        }
        Ok(self.rows.convert_rows(parsed)?)
    }
}

/// The condition's conjuncts as (left only, right only, both sides), each `None` when empty.
fn split_condition(
    condition: Option<&Expr>,
    left: &SchemaRef,
    right: &SchemaRef,
) -> (Option<Expr>, Option<Expr>, Option<Expr>) {
    let Some(c) = condition else {
        return (None, None, None);
    };
    let reads_only = |e: &Expr, s: &SchemaRef| {
        let refs = e.column_refs();
        !refs.is_empty() && refs.iter().all(|c| s.index_of(c).is_ok())
    };
    let (mut l, mut r, mut both) = (Vec::new(), Vec::new(), Vec::new());
    for part in c.conjuncts() {
        if reads_only(part, left) {
            l.push(part.clone());
        } else if reads_only(part, right) {
            r.push(part.clone());
        } else {
            both.push(part.clone());
        }
    }
    let and = |v: Vec<Expr>| v.into_iter().reduce(|a, b| a.and(b));
    (and(l), and(r), and(both))
}

/// The equalities of `condition` between a left and a right column, as (left keys, right
/// keys), and the rest of the condition (`None` when nothing is left).
pub fn split_equi_keys(
    condition: &Expr,
    left: &Schema,
    right: &Schema,
) -> (Vec<String>, Vec<String>, Option<Expr>) {
    let (mut lk, mut rk, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    let side = |name: &str| (left.index_of(name).is_ok(), right.index_of(name).is_ok());
    for part in condition.conjuncts() {
        if let Expr::Binary {
            left: a,
            op: BinaryOp::Eq,
            right: b,
        } = part
        {
            if let (Expr::Column(a), Expr::Column(b)) = (a.as_ref(), b.as_ref()) {
                match (side(a), side(b)) {
                    ((true, false), (false, true)) => {
                        lk.push(a.clone());
                        rk.push(b.clone());
                        continue;
                    }
                    ((false, true), (true, false)) => {
                        lk.push(b.clone());
                        rk.push(a.clone());
                        continue;
                    }
                    _ => {}
                }
            }
        }
        rest.push(part.clone());
    }
    (lk, rk, rest.into_iter().reduce(|a, b| a.and(b)))
}

/// A stream-stream join's state and watermark across micro-batches.
pub struct StreamJoin {
    spec: StreamJoinSpec,
    left: Side,
    right: Side,
    /// Both sides' columns, all nullable: what the condition reads and outer rows fill.
    joined: SchemaRef,
    output: SchemaRef,
    /// The conjuncts reading both sides (Spark's post-join filter).
    condition: Option<PhysicalExpr>,
    /// left counts, left rows, right counts, right rows.
    providers: Vec<Box<dyn StateStoreProvider>>,
    /// The sides as the watermark predicates see them.
    inputs: (JoinInput, JoinInput),
    /// The last batch's milliseconds joining and storing rows, and evicting.
    timings: (f64, f64),
    /// Rows of an input joined and kept at a time (`ferrospark.batch.size`).
    run_rows: usize,
}

/// Whether the condition bounds `this` side's watermarked column by some timestamp column of
/// `other` (Spark's "appropriate range condition" on the nullable side).
fn range_bounded(
    this: &JoinInput,
    other: &JoinInput,
    other_schema: &SchemaRef,
    condition: Option<&Expr>,
) -> bool {
    let Some(c) = condition else { return false };
    // The bound must come from the other side's watermarked column (Spark's attributes
    // "with event watermark").
    let watermarked = other
        .watermark_column
        .as_deref()
        .is_some_and(|w| other_schema.field_with_name(w).is_ok());
    watermarked && super::predicates::state_value_watermark(this, other, c, 0).is_some()
}

/// Spark's check of an outer or semi stream-stream join (its `UnsupportedOperationChecker`):
/// a watermarked join key, or a range condition that bounds the rows the join keeps
/// unmatched from below by the other side's watermark (the left side's for a left outer or
/// semi join, the right side's for a right outer join, either for a full outer join), so
/// that state can be evicted. A left outer join on `lt <= rt` only bounds the left rows
/// from above, and is refused as Spark refuses it.
fn check_evictable(
    join_type: StreamJoinType,
    spec: &StreamJoinSpec,
    left: &JoinInput,
    right: &JoinInput,
) -> Result<()> {
    let key_watermark = |s: &JoinInput| {
        s.keys
            .iter()
            .any(|k| s.watermark_column.as_deref() == Some(k.as_str()))
    };
    if key_watermark(left) || key_watermark(right) {
        return Ok(());
    }
    let c = spec.condition.as_ref();
    let right_ok = || range_bounded(right, left, &spec.left_schema, c);
    let left_ok = || range_bounded(left, right, &spec.right_schema, c);
    let ok = match join_type {
        StreamJoinType::Inner => true,
        StreamJoinType::LeftOuter | StreamJoinType::LeftSemi => left_ok(),
        StreamJoinType::RightOuter => right_ok(),
        StreamJoinType::FullOuter => left_ok() || right_ok(),
    };
    if ok {
        return Ok(());
    }
    Err(FerroError::Analysis(format!(
        "Stream-stream {} join between two streaming DataFrame/Datasets is not supported \
         without a watermark in the join keys, or a watermark on the nullable side and an \
         appropriate range condition: add a watermark to each input's event-time column and \
         a condition bounding each side's time by the other's (for example \
         `lt BETWEEN rt - INTERVAL 10 MINUTES AND rt`)",
        join_type.spark_name()
    )))
}

impl StreamJoin {
    /// The join `spec` under `checkpoint` (operator `operator_id`, partition `partition_id`),
    /// its stores by `state`. The operator's opener (`PartitionedStreamJoin::open`) has
    /// resolved the spec's names ([`StreamJoinSpec::resolved`]) and checked the checkpoint's
    /// row format, once for all its partitions.
    pub(crate) fn open(
        mut spec: StreamJoinSpec,
        checkpoint: &Path,
        operator_id: u64,
        partition_id: u32,
        cfg: &Config,
        state: &StateStoreConf,
    ) -> Result<Self> {
        if let Some(c) = &spec.condition {
            let (lk, rk, rest) = split_equi_keys(c, &spec.left_schema, &spec.right_schema);
            if !lk.is_empty() {
                spec.left_keys.extend(lk);
                spec.right_keys.extend(rk);
                spec.condition = rest;
            }
        }
        if spec.left_keys.is_empty() {
            return Err(FerroError::Analysis(
                "Stream-stream join without equality predicate is not supported: join on a \
                 column of each side (on=[...] or a condition with `left_col = right_col`)"
                    .into(),
            ));
        }
        if spec.left_keys.len() != spec.right_keys.len() {
            return Err(FerroError::Analysis(format!(
                "the join has {} left keys ({}) and {} right keys ({}): give one of each side per key",
                spec.left_keys.len(),
                spec.left_keys.join(", "),
                spec.right_keys.len(),
                spec.right_keys.join(", ")
            )));
        }
        for (l, r) in spec.left_keys.iter().zip(&spec.right_keys) {
            let lt = spec
                .left_schema
                .field_with_name(l)
                .map(|f| f.data_type().clone());
            let rt = spec
                .right_schema
                .field_with_name(r)
                .map(|f| f.data_type().clone());
            if let (Ok(lt), Ok(rt)) = (lt, rt) {
                if lt != rt {
                    return Err(FerroError::Analysis(format!(
                        "the join keys `{l}` ({lt}) and `{r}` ({rt}) have different types: cast one to the other's type"
                    )));
                }
            }
        }
        let (left_only, right_only, both) = split_condition(
            spec.condition.as_ref(),
            &spec.left_schema,
            &spec.right_schema,
        );
        let left = Side::new(
            &spec.left_schema,
            &spec.left_keys,
            spec.left_watermark.as_ref(),
            left_only.as_ref(),
            cfg,
        )?;
        let right = Side::new(
            &spec.right_schema,
            &spec.right_keys,
            spec.right_watermark.as_ref(),
            right_only.as_ref(),
            cfg,
        )?;
        let nullable = |s: &SchemaRef| -> Vec<Field> {
            s.fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect()
        };
        let mut fields = nullable(&spec.left_schema);
        fields.extend(nullable(&spec.right_schema));
        let joined = Arc::new(Schema::new(fields));
        let output = match spec.join_type {
            StreamJoinType::LeftSemi => spec.left_schema.clone(),
            _ => joined.clone(),
        };
        let condition = match &both {
            Some(c) => Some(bind_predicate(c, &BindContext::for_session(&joined, cfg))?),
            None => None,
        };
        let inputs = (
            left.input(spec.left_watermark.as_ref(), &spec.left_keys),
            right.input(spec.right_watermark.as_ref(), &spec.right_keys),
        );
        check_evictable(spec.join_type, &spec, &inputs.0, &inputs.1)?;
        let id = StateStoreId::new(checkpoint, operator_id, partition_id);
        let mut providers = Vec::new();
        for side in [JoinSide::Left, JoinSide::Right] {
            for name in side.store_names() {
                providers.push(open_provider(&id.clone().named(name), state)?);
            }
        }
        Ok(Self {
            spec,
            left,
            right,
            joined,
            output,
            condition,
            providers,
            inputs,
            timings: (0.0, 0.0),
            run_rows: cfg.batch_size()?,
        })
    }

    /// The output's columns: the left's then the right's, all nullable (a semi join: the
    /// left's).
    pub fn schema(&self) -> SchemaRef {
        self.output.clone()
    }

    /// The latest version all four stores committed: a batch whose commit a crash cut
    /// between the stores runs again.
    pub fn latest_version(&self) -> Result<u64> {
        min_latest(self.providers.iter().map(|p| p.latest_version()))
    }

    /// Its four stores' counters, added up, with the last batch's timings.
    pub fn metrics(&self) -> StateStoreMetrics {
        let mut m: StateStoreMetrics = self.providers.iter().map(|p| p.metrics()).sum();
        (m.all_updates_ms, m.all_removals_ms) = self.timings;
        m
    }

    /// The join keys, (left, right), the condition's equalities included.
    pub fn keys(&self) -> (&[String], &[String]) {
        (&self.spec.left_keys, &self.spec.right_keys)
    }

    /// The rows batch `batch_id` emits for these inputs under the query's watermarks, which
    /// the caller keeps over every partition's rows (`PartitionedStreamJoin` in one process,
    /// Spark's driver on Spark). Running the last committed batch again gives the same rows
    /// and leaves the state as it was; an older one is an error.
    pub fn process_under(
        &mut self,
        batch_id: u64,
        left: Option<&RecordBatch>,
        right: Option<&RecordBatch>,
        marks: Option<BatchWatermark>,
    ) -> Result<RecordBatch> {
        // A store the memory pool refused mid-way: none committed, every store's changes
        // undone, and the refused one opens on disk for the batch's next run.
        let stores = self.providers.len();
        run_moving_to_disk(
            self,
            stores,
            |j| j.run_batch(batch_id, left, right, marks),
            |j| j.providers.iter().any(|p| p.refused_memory()),
        )
    }

    fn run_batch(
        &mut self,
        batch_id: u64,
        left: Option<&RecordBatch>,
        right: Option<&RecordBatch>,
        marks: Option<BatchWatermark>,
    ) -> Result<RecordBatch> {
        check_batch(batch_id, self.latest_version()?)?;
        for (side, batch) in [(&self.left, left), (&self.right, right)] {
            if let Some(b) = batch {
                if b.schema().fields() != side.schema.fields() {
                    return Err(FerroError::Analysis(format!(
                        "a micro-batch's columns ({}) are not the join input's ({})",
                        b.schema(),
                        side.schema
                    )));
                }
            }
        }
        let has_watermark =
            self.spec.left_watermark.is_some() || self.spec.right_watermark.is_some();
        let marks = marks.filter(|_| has_watermark);
        let wm = marks.map(|m| m.eviction);
        let late_wm = marks.map(|m| m.late);
        let (lp, rp) = state_watermark_predicates(
            &self.inputs.0,
            &self.inputs.1,
            self.spec.condition.as_ref(),
            wm,
        );
        let (lc, rest) = self.providers.split_at_mut(1);
        let (lr, rest) = rest.split_at_mut(1);
        let (rc, rr) = rest.split_at_mut(1);
        let mut lstate = JoinStateManager::open(lc[0].as_mut(), lr[0].as_mut(), batch_id)?;
        let mut rstate = JoinStateManager::open(rc[0].as_mut(), rr[0].as_mut(), batch_id)?;
        let ctx = Probe {
            joined: &self.joined,
            output: &self.output,
            condition: self.condition.as_ref(),
            join_type: self.spec.join_type,
            run_rows: self.run_rows,
        };
        let mut pieces: Vec<RecordBatch> = Vec::new();
        let updates = Instant::now();
        if let Some(b) = left {
            let sides = (&self.left, &self.right);
            join_side(
                sides,
                b,
                late_wm,
                (&mut lstate, &mut rstate),
                true,
                &ctx,
                &mut pieces,
            )?;
        }
        if let Some(b) = right {
            let sides = (&self.right, &self.left);
            join_side(
                sides,
                b,
                late_wm,
                (&mut rstate, &mut lstate),
                false,
                &ctx,
                &mut pieces,
            )?;
        }
        let removals = Instant::now();
        let updates = removals.duration_since(updates);
        let left_gone = evict(&mut lstate, &self.left, lp.as_ref())?;
        let right_gone = evict(&mut rstate, &self.right, rp.as_ref())?;
        let join_type = self.spec.join_type;
        if join_type.keeps_left() {
            let rows: Vec<&[u8]> = unmatched(&left_gone);
            let cols = self.left.decode(rows.iter().copied())?;
            pieces.push(ctx.padded(cols, true, rows.len())?);
        }
        if join_type.keeps_right() {
            let rows: Vec<&[u8]> = unmatched(&right_gone);
            let cols = self.right.decode(rows.iter().copied())?;
            pieces.push(ctx.padded(cols, false, rows.len())?);
        }
        let removals = removals.elapsed();
        let out = arrow_select::concat::concat_batches(&self.output, &pieces)?;
        lstate.commit()?;
        rstate.commit()?;
        drop(lstate);
        drop(rstate);
        self.timings = (
            updates.as_secs_f64() * 1000.0,
            removals.as_secs_f64() * 1000.0,
        );
        Ok(out)
    }
}

fn unmatched(rows: &[StoredRow]) -> Vec<&[u8]> {
    rows.iter()
        .filter(|r| !r.matched)
        .map(|r| r.row.as_slice())
        .collect()
}

/// Removes the rows `p` frees from `state`; those rows.
fn evict(
    state: &mut JoinStateManager<'_>,
    side: &Side,
    p: Option<&StateWatermarkPredicate>,
) -> Result<Vec<StoredRow>> {
    match p {
        Some(StateWatermarkPredicate::Key {
            ordinal,
            watermark_ms,
        }) => {
            let gone = side.expired_keys(*ordinal, *watermark_ms, state.keys()?)?;
            state.remove_keys(&gone)
        }
        Some(StateWatermarkPredicate::Value { watermark_ms, .. }) => {
            state.remove_older(watermark_ms.saturating_mul(1000))
        }
        None => Ok(Vec::new()),
    }
}

/// What a probe needs to test pairs and make output.
struct Probe<'a> {
    joined: &'a SchemaRef,
    output: &'a SchemaRef,
    condition: Option<&'a PhysicalExpr>,
    join_type: StreamJoinType,
    /// Rows of an input joined and kept at a time.
    run_rows: usize,
}

impl Probe<'_> {
    /// Both sides' columns as one batch of the joined schema.
    fn joined_batch(
        &self,
        this: Vec<ArrayRef>,
        other: Vec<ArrayRef>,
        this_is_left: bool,
        rows: usize,
    ) -> Result<RecordBatch> {
        let (mut l, r) = if this_is_left {
            (this, other)
        } else {
            (other, this)
        };
        l.extend(r);
        Ok(RecordBatch::try_new_with_options(
            self.joined.clone(),
            l,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?)
    }

    /// Output rows of one side's `cols`, the other side's columns NULL.
    fn padded(&self, cols: Vec<ArrayRef>, is_left: bool, rows: usize) -> Result<RecordBatch> {
        let other: &[Arc<Field>] = if is_left {
            &self.joined.fields()[cols.len()..]
        } else {
            &self.joined.fields()[..self.joined.fields().len() - cols.len()]
        };
        let nulls = other
            .iter()
            .map(|f| arrow_array::new_null_array(f.data_type(), rows))
            .collect();
        self.joined_batch(cols, nulls, is_left, rows)
    }

    /// A batch of the output schema from the joined schema's `batch` (a semi join keeps the
    /// left columns).
    fn output_of(&self, batch: RecordBatch) -> Result<RecordBatch> {
        if self.join_type != StreamJoinType::LeftSemi {
            return Ok(batch);
        }
        let n = self.output.fields().len();
        Ok(RecordBatch::try_new_with_options(
            self.output.clone(),
            batch.columns()[..n].to_vec(),
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?)
    }
}

fn take_all(columns: &[ArrayRef], indices: &[u32]) -> Result<Vec<ArrayRef>> {
    let idx = arrow_array::UInt32Array::from(indices.to_vec());
    columns
        .iter()
        .map(|c| Ok(arrow_select::take::take(c.as_ref(), &idx, None)?))
        .collect()
}

fn mask_values(mask: &BooleanArray) -> Vec<bool> {
    (0..mask.len())
        .map(|i| mask.is_valid(i) && mask.value(i))
        .collect()
}

/// Joins `batch` (rows of `sides.0`) with the other side's state, then keeps its rows
/// (Spark's `OneSideHashJoiner.storeAndJoinWithOtherSide`), pushing output to `pieces`.
///
/// The rows go in runs of `ferrospark.batch.size`: a run's pairs are found, its condition
/// evaluated over all of them at once, the stored rows it joins marked, its output made,
/// then its rows kept, so what a run needs is small and made again in the same memory. The
/// other side's state changes only in its matched flags while this side's rows probe it,
/// and a run sees the flags the runs before it set, as Spark's row-by-row probe does.
#[allow(clippy::too_many_arguments)]
fn join_side(
    sides: (&Side, &Side),
    batch: &RecordBatch,
    late_wm: Option<i64>,
    states: (&mut JoinStateManager<'_>, &mut JoinStateManager<'_>),
    this_is_left: bool,
    probe: &Probe<'_>,
    pieces: &mut Vec<RecordBatch>,
) -> Result<()> {
    let (this, other) = sides;
    let (this_state, other_state) = states;
    let n = batch.num_rows();
    if n == 0 {
        // Nothing to join or keep (and some expressions cannot be evaluated over no rows).
        return Ok(());
    }
    let times = match this.time {
        Some(i) => Some(micros(batch.column(i))?),
        None => None,
    };
    // Late rows (event time at or below the watermark; a NULL time is never late) are
    // dropped; rows failing the pre-join filter are never kept and can never join.
    let mut live = vec![true; n];
    if let (Some(t), Some(w)) = (&times, late_wm) {
        let bound = w.saturating_mul(1000);
        for (r, l) in live.iter_mut().enumerate() {
            *l = !(t.is_valid(r) && t.value(r) <= bound);
        }
    }
    let mut passes = vec![true; n];
    if let Some(f) = &this.pre_filter {
        passes = mask_values(&evaluate_predicate(f, batch)?);
    }
    let outer_here = probe.join_type.keeps(this_is_left);
    let failed: Vec<u32> = (0..n)
        .filter(|&r| live[r] && !passes[r])
        .map(|r| r as u32)
        .collect();
    if outer_here && !failed.is_empty() {
        let cols = take_all(batch.columns(), &failed)?;
        pieces.push(probe.padded(cols, this_is_left, failed.len())?);
    }
    // Spark normalises floating-point join keys (-0.0 is 0.0, every NaN one NaN).
    let keys: Vec<ArrayRef> = this
        .keys
        .iter()
        .map(|&i| ferrospark_expr::normalize_key(batch.column(i)))
        .collect();
    let key_rows = this.key_rows.convert_columns(&keys)?;
    let rows = this.rows.convert_columns(batch.columns())?;
    let null_key = |r: usize| keys.iter().any(|k| k.is_null(r));
    // Spark's optimizer infers `key IS NOT NULL` on each side whose rows need not survive
    // the join (both for inner and semi joins, the other side of an outer one), so such a
    // row never reaches the join; the rows it lets through are kept by key, where NULL
    // keys are equal (a full outer join pairs NULL keys, as Spark's does).
    let filtered = match probe.join_type {
        StreamJoinType::Inner | StreamJoinType::LeftSemi => true,
        StreamJoinType::LeftOuter => !this_is_left,
        StreamJoinType::RightOuter => this_is_left,
        StreamJoinType::FullOuter => false,
    };
    for (r, l) in live.iter_mut().enumerate() {
        if filtered && null_key(r) {
            *l = false;
        }
    }
    let semi = probe.join_type == StreamJoinType::LeftSemi;
    // Only a side whose unmatched rows are emitted (an outer side, a semi join's left) ever
    // reads its rows' matched flags: the other side's stored rows are not rewritten to mark
    // them (Spark rewrites them all the same, a put per pair that changes no answer).
    let other_flags_read = probe.join_type.keeps(!this_is_left) || (semi && !this_is_left);
    let kept = |r: usize| live[r] && passes[r];
    let run_rows = probe.run_rows;
    let mut appends = Vec::with_capacity(run_rows.min(n));
    let mut partners = Partners::default();
    // A run's buffers, made again in the same memory by each run.
    let mut marked: HashSet<(&[u8], u64)> = HashSet::new();
    let mut marks: Vec<(&[u8], usize)> = Vec::new();
    let mut pairs: Vec<u32> = Vec::new();
    let mut joined_any: Vec<bool> = Vec::with_capacity(run_rows.min(n));
    for run_start in (0..n).step_by(run_rows) {
        let run = run_start..(run_start + run_rows).min(n);
        // Every (row, stored partner) pair of the run.
        let probes: Vec<(u32, &[u8])> = run
            .clone()
            .filter(|&r| kept(r))
            .map(|r| (r as u32, key_rows.row(r).data()))
            .collect();
        partners.clear();
        other_state.probe_all(&probes, &mut partners)?;
        let probe_rows: Vec<u32> = partners.iter().map(|p| p.probe_row).collect();
        let partner_cols = other.decode(partners.rows())?;
        let this_cols = take_all(batch.columns(), &probe_rows)?;
        let accept = match probe.condition {
            Some(c) if !partners.is_empty() => {
                let b = probe.joined_batch(
                    this_cols.clone(),
                    partner_cols.clone(),
                    this_is_left,
                    partners.len(),
                )?;
                mask_values(&evaluate_predicate(c, &b)?)
            }
            _ => vec![true; partners.len()],
        };
        joined_any.clear();
        joined_any.resize(run.len(), false);
        marked.clear();
        marks.clear();
        pairs.clear();
        for (p, (partner, ok)) in partners.iter().zip(&accept).enumerate() {
            if !ok {
                continue;
            }
            let key = key_rows.row(partner.probe_row as usize).data();
            let first_mark =
                other_flags_read && !partner.matched && marked.insert((key, partner.index));
            // A semi join's right rows emit each left row once: when it is first matched.
            if semi && !this_is_left && !first_mark {
                continue;
            }
            if first_mark {
                marks.push((key, p));
            }
            joined_any[partner.probe_row as usize - run.start] = true;
            pairs.push(p as u32);
        }
        other_state.mark_partners(&marks, &partners)?;
        // A row joins when it makes a pair: a run without pairs has no output.
        if !pairs.is_empty() {
            pieces.push(if semi && this_is_left {
                let emitted: Vec<u32> = run
                    .clone()
                    .filter(|&r| joined_any[r - run.start])
                    .map(|r| r as u32)
                    .collect();
                let cols = take_all(batch.columns(), &emitted)?;
                probe
                    .padded(cols, true, emitted.len())?
                    .project_left(probe)?
            } else if semi {
                let cols = take_all(&partner_cols, &pairs)?;
                probe.padded(cols, true, pairs.len())?.project_left(probe)?
            } else {
                let mine = take_all(&this_cols, &pairs)?;
                let theirs = take_all(&partner_cols, &pairs)?;
                probe.joined_batch(mine, theirs, this_is_left, pairs.len())?
            });
        }
        appends.clear();
        for r in run.clone() {
            if !kept(r) {
                continue;
            }
            let joined = joined_any[r - run.start];
            // Spark keeps no left row of a semi join that has already been emitted.
            if semi && this_is_left && joined {
                continue;
            }
            // Kept even when the watermark already frees it: the eviction that ends the
            // batch takes it out again, emitting it if an outer join never matched it (as
            // Spark does).
            appends.push(Append {
                key: key_rows.row(r).data(),
                row: rows.row(r).data(),
                time: times.as_ref().filter(|t| t.is_valid(r)).map(|t| t.value(r)),
                matched: joined,
            });
        }
        this_state.append_all(&appends)?;
    }
    Ok(())
}

/// A joined-schema batch cut to the output schema.
trait ProjectLeft {
    fn project_left(self, probe: &Probe<'_>) -> Result<RecordBatch>;
}

impl ProjectLeft for RecordBatch {
    fn project_left(self, probe: &Probe<'_>) -> Result<RecordBatch> {
        probe.output_of(self)
    }
}
