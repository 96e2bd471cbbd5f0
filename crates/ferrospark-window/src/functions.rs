//! Window functions: what each computes for a row from its sorted partition, Spark's names
//! and result types.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, RecordBatch, UInt32Array,
};
use arrow_schema::{DataType, Field};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::PhysicalExpr;

use crate::aggregates::{frame_aggregate, FrameAggregate};
use crate::frame::{frame_bounds, FrameUnit, RangeKeys, WindowFrame};

/// A window function.
#[derive(Debug, Clone)]
pub enum WindowFunction {
    /// The row's position in its partition, from 1.
    RowNumber,
    /// 1 + the number of rows before the row's peers.
    Rank,
    /// 1 + the number of distinct peer groups before the row's.
    DenseRank,
    /// `(rank - 1) / (rows - 1)`, 0 for a partition of one row.
    PercentRank,
    /// Rows up to the row's last peer, over the partition's rows.
    CumeDist,
    /// The bucket (1..=n) of `n` near-equal buckets in partition order; the first
    /// `rows mod n` buckets get one row more.
    Ntile(i64),
    /// The value `offset` rows before (`lag`) or after (`lead`) the row in its partition;
    /// `default` when that row does not exist. With `ignore_nulls`, only rows where `input`
    /// is not NULL count.
    Offset {
        /// `lead` (rows after) rather than `lag` (rows before).
        lead: bool,
        /// The value read.
        input: PhysicalExpr,
        /// How many rows away (negative: the other direction).
        offset: i64,
        /// The value when the row does not exist (a literal).
        default: Option<PhysicalExpr>,
        /// Count only rows where `input` is not NULL.
        ignore_nulls: bool,
    },
    /// The `n`-th row (from 1) of each row's frame, from its end when `from_end`
    /// (`nth_value`, `first_value`, `last_value`); NULL when the frame is shorter. With
    /// `ignore_nulls`, only rows where `input` is not NULL count.
    Nth {
        /// The value read.
        input: PhysicalExpr,
        /// Which row of the frame, from 1.
        n: i64,
        /// Count from the frame's last row.
        from_end: bool,
        /// Count only rows where `input` is not NULL.
        ignore_nulls: bool,
        /// The frame.
        frame: WindowFrame,
    },
    /// The session a row belongs to, in a partition ordered by `start`: each row spans
    /// `[start, stop)`, and a row starting at most at the current session's end joins it (the
    /// end becomes the latest stop seen). The session's start, or its end when `end`. The rows
    /// may be events (`stop` = time + gap) or sessions already merged elsewhere: merging
    /// partial sessions gives the sessions of their rows.
    Session {
        /// Where each row's span starts (a timestamp in microseconds, never NULL here).
        start: PhysicalExpr,
        /// Where each row's span ends (same type, never NULL, after `start`).
        stop: PhysicalExpr,
        /// The session's end rather than its start.
        end: bool,
    },
    /// `counter_diff(input [, start])`: each row's increase over the partition's previous
    /// value, NULL where the counter reset (see `counter_diff.rs`).
    CounterDiff {
        /// The cumulative counter (a number).
        input: PhysicalExpr,
        /// When the counter last started from zero (a timestamp), if given.
        start: Option<PhysicalExpr>,
    },
    /// `percentile(input, p)` / `percentile(input, array(p1, ...))` of each row's frame:
    /// exact, interpolated as Spark's `Percentile`; NULL for a frame without a value.
    Percentile {
        /// The values (numbers, read as doubles).
        input: PhysicalExpr,
        /// The percentages, each in `[0, 1]`.
        percentages: Vec<f64>,
        /// Hand out `array<double>` (percentages given as an array).
        as_array: bool,
        /// `percentile_cont` / `percentile_disc` and their ordering.
        kind: ferrospark_agg::accumulators::percentile::PercentileKind,
        /// The rows it aggregates, relative to the current row.
        frame: WindowFrame,
    },
    /// `approx_count_distinct(input, relative_sd)` of each row's frame: Spark's HyperLogLog++
    /// over Spark's xxhash64 of the values, so the estimates are Spark's.
    ApproxCountDistinct {
        /// The values counted.
        input: PhysicalExpr,
        /// The relative standard deviation asked for (0.05 by default).
        relative_sd: f64,
        /// The rows it counts, relative to the current row.
        frame: WindowFrame,
    },
    /// An aggregate of each row's frame (`input` `None`: `count(*)`).
    Aggregate {
        /// The aggregate.
        agg: FrameAggregate,
        /// Its argument.
        input: Option<PhysicalExpr>,
        /// The rows it aggregates, relative to the current row.
        frame: WindowFrame,
    },
}

/// A window function with its output name.
#[derive(Debug, Clone)]
pub struct WindowCall {
    /// The function.
    pub function: WindowFunction,
    /// The output column's name (Spark's default name when not aliased).
    pub name: String,
}

impl WindowFunction {
    /// Spark's column name for the call, without the `OVER` clause.
    pub fn spark_name(&self) -> String {
        match self {
            WindowFunction::RowNumber => "row_number()".into(),
            WindowFunction::Rank => "RANK()".into(),
            WindowFunction::DenseRank => "DENSE_RANK()".into(),
            WindowFunction::PercentRank => "PERCENT_RANK()".into(),
            WindowFunction::CumeDist => "cume_dist()".into(),
            WindowFunction::Ntile(n) => format!("ntile({n})"),
            WindowFunction::Offset {
                lead,
                input,
                offset,
                default,
                ..
            } => format!(
                "{}({input}, {offset}, {})",
                if *lead { "lead" } else { "lag" },
                default
                    .as_ref()
                    .map_or("NULL".to_string(), |d| d.to_string()),
            ),
            WindowFunction::Session { end, .. } => {
                if *end { "session_end" } else { "session_start" }.to_string()
            }
            WindowFunction::CounterDiff { input, start } => match start {
                Some(s) => format!("counter_diff({input}, {s})"),
                None => format!("counter_diff({input})"),
            },
            WindowFunction::Nth {
                input, n, from_end, ..
            } => match (*from_end, *n) {
                (true, _) => format!("last_value({input})"),
                (false, 1) => format!("first_value({input})"),
                (false, n) => format!("nth_value({input}, {n})"),
            },
            WindowFunction::Percentile {
                input,
                percentages,
                as_array,
                ..
            } => {
                let p: Vec<String> = percentages.iter().map(|p| p.to_string()).collect();
                if *as_array {
                    format!("percentile({input}, array({}), 1)", p.join(", "))
                } else {
                    format!("percentile({input}, {}, 1)", p.join(", "))
                }
            }
            WindowFunction::ApproxCountDistinct { input, .. } => {
                format!("approx_count_distinct({input})")
            }
            WindowFunction::Aggregate { agg, input, .. } => format!(
                "{}({})",
                agg.name(),
                input.as_ref().map_or("1".to_string(), |i| i.to_string())
            ),
        }
    }

    /// The input columns the function reads (by index).
    pub fn column_indices(&self) -> Vec<usize> {
        let exprs: Vec<&PhysicalExpr> = match self {
            WindowFunction::RowNumber
            | WindowFunction::Rank
            | WindowFunction::DenseRank
            | WindowFunction::PercentRank
            | WindowFunction::CumeDist
            | WindowFunction::Ntile(_) => vec![],
            WindowFunction::Offset { input, default, .. } => {
                std::iter::once(input).chain(default.as_ref()).collect()
            }
            WindowFunction::Nth { input, .. }
            | WindowFunction::Percentile { input, .. }
            | WindowFunction::ApproxCountDistinct { input, .. } => vec![input],
            WindowFunction::Session { start, stop, .. } => vec![start, stop],
            WindowFunction::CounterDiff { input, start } => {
                std::iter::once(input).chain(start.as_ref()).collect()
            }
            WindowFunction::Aggregate { input, .. } => input.iter().collect(),
        };
        let mut out: Vec<usize> = exprs.iter().flat_map(|e| e.column_indices()).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The output field named `name`.
    pub fn field(&self, name: &str) -> Field {
        match self {
            WindowFunction::RowNumber
            | WindowFunction::Rank
            | WindowFunction::DenseRank
            | WindowFunction::Ntile(_) => Field::new(name, DataType::Int32, false),
            WindowFunction::PercentRank | WindowFunction::CumeDist => {
                Field::new(name, DataType::Float64, false)
            }
            WindowFunction::Offset { input, .. }
            | WindowFunction::Nth { input, .. }
            | WindowFunction::CounterDiff { input, .. } => {
                Field::new(name, input.data_type(), true)
            }
            WindowFunction::Session { start, .. } => Field::new(name, start.data_type(), false),
            WindowFunction::ApproxCountDistinct { .. } => Field::new(name, DataType::Int64, false),
            WindowFunction::Percentile { as_array, .. } => {
                let t = if *as_array {
                    DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
                } else {
                    DataType::Float64
                };
                Field::new(name, t, true)
            }
            WindowFunction::Aggregate { agg, input, .. } => {
                let t = agg
                    .result_type(input.as_ref().map(|i| i.data_type()).as_ref())
                    .unwrap_or(DataType::Null);
                Field::new(
                    name,
                    t,
                    !matches!(
                        agg,
                        FrameAggregate::Count
                            | FrameAggregate::CollectList
                            | FrameAggregate::CollectSet
                    ),
                )
            }
        }
    }

    /// Refuses arguments Spark refuses; `order_types` are the ORDER BY key types.
    pub fn validate(&self, order_types: &[DataType]) -> Result<()> {
        match self {
            WindowFunction::Aggregate { agg, input, frame } => {
                agg.result_type(input.as_ref().map(|i| i.data_type()).as_ref())?;
                frame.validate(order_types)
            }
            WindowFunction::ApproxCountDistinct {
                relative_sd, frame, ..
            } => {
                ferrospark_agg::accumulators::hll::HyperLogLogPlusPlus::new(*relative_sd)
                    .map_err(FerroError::Analysis)?;
                frame.validate(order_types)
            }
            WindowFunction::Percentile {
                input,
                percentages,
                frame,
                ..
            } => {
                if !input.data_type().is_numeric() {
                    return Err(FerroError::Analysis(format!(
                        "percentile({input}) over a window needs a numeric argument, got {}",
                        input.data_type()
                    )));
                }
                if let Some(p) = percentages.iter().find(|p| !(0.0..=1.0).contains(*p)) {
                    return Err(FerroError::Analysis(format!(
                        "percentile's percentage must be between 0.0 and 1.0, got {p}"
                    )));
                }
                frame.validate(order_types)
            }
            WindowFunction::Session { start, stop, .. } => {
                for e in [start, stop] {
                    if !matches!(
                        e.data_type(),
                        DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, _)
                    ) {
                        return Err(FerroError::Analysis(format!(
                            "a session window's bound `{e}` must be a timestamp in microseconds, got {}; cast it",
                            e.data_type()
                        )));
                    }
                }
                Ok(())
            }
            WindowFunction::CounterDiff { input, start } => {
                let mismatch = |position: &str, wanted: &str, e: &PhysicalExpr| {
                    FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{}\" due to data type mismatch: The {position} parameter requires the {wanted} type, however \"{e}\" has the type \"{}\". SQLSTATE: 42K09",
                        self.spark_name(),
                        ferrospark_expr::types::spark_type_name(&e.data_type())
                    ))
                };
                if !matches!(
                    input.data_type(),
                    DataType::Int8
                        | DataType::Int16
                        | DataType::Int32
                        | DataType::Int64
                        | DataType::Float32
                        | DataType::Float64
                        | DataType::Decimal128(..)
                ) {
                    return Err(mismatch("first", "\"NUMERIC\"", input));
                }
                match start {
                    Some(s)
                        if !matches!(
                            s.data_type(),
                            DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, _)
                                | DataType::Null
                        ) =>
                    {
                        Err(mismatch(
                            "second",
                            "(\"TIMESTAMP\" or \"TIMESTAMP_NTZ\")",
                            s,
                        ))
                    }
                    _ => Ok(()),
                }
            }
            WindowFunction::Nth { n, frame, .. } => {
                if *n <= 0 {
                    return Err(FerroError::Analysis(format!(
                        "nth_value(..., {n}): the row number must be a positive integer"
                    )));
                }
                frame.validate(order_types)
            }
            WindowFunction::Ntile(n) if *n <= 0 || *n > i32::MAX as i64 => {
                Err(FerroError::Analysis(format!(
                    "ntile({n}): the number of buckets must be a positive integer"
                )))
            }
            WindowFunction::Offset {
                input,
                default: Some(d),
                ..
            } => {
                let (t, dt) = (input.data_type(), d.data_type());
                if t != dt && dt != DataType::Null && !arrow_cast::can_cast_types(&dt, &t) {
                    return Err(FerroError::Analysis(format!(
                        "the default of {} ({dt}) cannot become {t}, the type of `{input}`",
                        self.spark_name()
                    )));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// A sorted batch cut into partitions and peer groups.
pub(crate) struct Layout {
    /// `(start, end)` of each partition, in order.
    pub partitions: Vec<(usize, usize)>,
    /// For each row, the first row of its peer group.
    pub peer_start: Vec<u32>,
    /// For each row, one past the last row of its peer group.
    pub peer_end: Vec<u32>,
    /// The single ORDER BY key (sorted rows, normalised) and whether it descends, for RANGE
    /// frames with value offsets.
    pub range_key: Option<(ArrayRef, bool)>,
    /// Whether overflow is an error (`spark.sql.ansi.enabled`).
    pub ansi: bool,
    /// Sliding frames of doubles and the variance family in Spark's order (see
    /// `FrameOptions::exact_floats`).
    pub exact_floats: bool,
}

/// `function` for every row of `batch` (sorted as `layout` describes).
pub(crate) fn evaluate(
    function: &WindowFunction,
    batch: &RecordBatch,
    layout: &Layout,
) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let per_row = |f: &dyn Fn(usize, usize, usize) -> i32| -> ArrayRef {
        let mut out = vec![0i32; n];
        for &(start, end) in &layout.partitions {
            for (i, o) in out.iter_mut().enumerate().take(end).skip(start) {
                *o = f(i, start, end);
            }
        }
        Arc::new(Int32Array::from(out))
    };
    Ok(match function {
        WindowFunction::RowNumber => per_row(&|i, start, _| (i - start + 1) as i32),
        WindowFunction::Rank => {
            per_row(&|i, start, _| (layout.peer_start[i] as usize - start + 1) as i32)
        }
        WindowFunction::DenseRank => {
            let mut out = vec![0i32; n];
            for &(start, end) in &layout.partitions {
                let mut rank = 0;
                for (i, o) in out.iter_mut().enumerate().take(end).skip(start) {
                    if layout.peer_start[i] as usize == i {
                        rank += 1;
                    }
                    *o = rank;
                }
            }
            Arc::new(Int32Array::from(out))
        }
        WindowFunction::PercentRank => {
            let mut out = vec![0f64; n];
            for &(start, end) in &layout.partitions {
                let rows = end - start;
                for (i, o) in out.iter_mut().enumerate().take(end).skip(start) {
                    let rank = layout.peer_start[i] as usize - start;
                    *o = if rows > 1 {
                        rank as f64 / (rows - 1) as f64
                    } else {
                        0.0
                    };
                }
            }
            Arc::new(Float64Array::from(out))
        }
        WindowFunction::CumeDist => {
            let mut out = vec![0f64; n];
            for &(start, end) in &layout.partitions {
                let rows = (end - start) as f64;
                for (i, o) in out.iter_mut().enumerate().take(end).skip(start) {
                    *o = (layout.peer_end[i] as usize - start) as f64 / rows;
                }
            }
            Arc::new(Float64Array::from(out))
        }
        WindowFunction::Ntile(buckets) => {
            let k = *buckets as usize;
            per_row(&|i, start, end| {
                let (rows, pos) = (end - start, i - start);
                let (size, extra) = (rows / k, rows % k);
                // The first `extra` buckets hold `size + 1` rows.
                let big = extra * (size + 1);
                let bucket = if pos < big {
                    pos / (size + 1)
                } else {
                    extra + (pos - big) / size.max(1)
                };
                (bucket + 1) as i32
            })
        }
        WindowFunction::Offset {
            lead,
            input,
            offset,
            default,
            ignore_nulls,
        } => offset_values(
            batch,
            layout,
            input,
            if *lead { *offset } else { -*offset },
            default.as_ref(),
            *ignore_nulls,
        )?,
        WindowFunction::CounterDiff { input, start } => {
            let values = ferrospark_expr::evaluate(input, batch)?.into_array(n)?;
            let start = match start {
                Some(s) => match ferrospark_expr::evaluate(s, batch)?.into_array(n)? {
                    // `counter_diff(v, NULL)`: no start time at all.
                    a if a.data_type() == &DataType::Null => None,
                    a => Some(a),
                },
                None => None,
            };
            crate::counter_diff::counter_diffs(&values, start.as_ref(), layout)?
        }
        WindowFunction::Session { start, stop, end } => {
            let s = ferrospark_expr::evaluate(start, batch)?.into_array(n)?;
            let e = ferrospark_expr::evaluate(stop, batch)?.into_array(n)?;
            sessions(&s, &e, layout, *end)?
        }
        WindowFunction::Nth {
            input,
            n: nth,
            from_end,
            ignore_nulls,
            frame,
        } => {
            let (lo, hi) = frames(frame, layout, n)?;
            let values = ferrospark_expr::evaluate(input, batch)?.into_array(n)?;
            nth_values(&values, &lo, &hi, *nth as usize, *from_end, *ignore_nulls)?
        }
        WindowFunction::Percentile {
            input,
            percentages,
            as_array,
            kind,
            frame,
        } => {
            let (lo, hi) = frames(frame, layout, n)?;
            let values = ferrospark_expr::evaluate(input, batch)?.into_array(n)?;
            crate::statistics::percentile_frames(
                &values,
                percentages,
                *as_array,
                *kind,
                &layout.partitions,
                &lo,
                &hi,
            )?
        }
        WindowFunction::ApproxCountDistinct {
            input,
            relative_sd,
            frame,
        } => {
            let (lo, hi) = frames(frame, layout, n)?;
            let values = ferrospark_expr::evaluate(input, batch)?.into_array(n)?;
            crate::statistics::approx_distinct_frames(
                &values,
                *relative_sd,
                &layout.partitions,
                &lo,
                &hi,
            )?
        }
        WindowFunction::Aggregate { agg, input, frame } => {
            let (lo, hi) = frames(frame, layout, n)?;
            let values = input
                .as_ref()
                .map(|e| ferrospark_expr::evaluate(e, batch)?.into_array(n))
                .transpose()?;
            frame_aggregate(
                *agg,
                values.as_ref(),
                &layout.partitions,
                &lo,
                &hi,
                n,
                crate::aggregates::FrameOptions {
                    ansi: layout.ansi,
                    exact_floats: layout.exact_floats,
                },
            )?
        }
    })
}

/// Each row's session start (or end) in its partition, rows ordered by their span's start.
fn sessions(start: &ArrayRef, stop: &ArrayRef, layout: &Layout, end: bool) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::TimestampMicrosecondType;
    let t = start.as_primitive::<TimestampMicrosecondType>();
    let u = stop.as_primitive::<TimestampMicrosecondType>();
    if t.null_count() > 0 || u.null_count() > 0 {
        return Err(FerroError::Internal(
            "session bounds must have their NULL rows dropped first".into(),
        ));
    }
    let (t, u) = (t.values(), u.values());
    let mut out = vec![0i64; t.len()];
    for &(first, stop) in &layout.partitions {
        if first == stop {
            continue;
        }
        // The open session: its first row, start and end.
        let (mut open, mut s, mut e) = (first, t[first], u[first]);
        for i in first + 1..stop {
            if t[i] > e {
                out[open..i].fill(if end { e } else { s });
                (open, s, e) = (i, t[i], u[i]);
            } else {
                e = e.max(u[i]);
            }
        }
        out[open..stop].fill(if end { e } else { s });
    }
    let values = arrow_array::TimestampMicrosecondArray::from(out);
    Ok(Arc::new(values.with_timezone_opt(
        match start.data_type() {
            DataType::Timestamp(_, tz) => tz.clone(),
            _ => None,
        },
    )))
}

/// Every row's frame `[lo, hi)` over the sorted rows of `layout`.
fn frames(frame: &WindowFrame, layout: &Layout, n: usize) -> Result<(Vec<u32>, Vec<u32>)> {
    let keys = match (&layout.range_key, frame.unit) {
        // Only value offsets read the key: CURRENT ROW and UNBOUNDED bounds go by peers, so a
        // BOOLEAN or STRING key is fine there.
        (Some((k, desc)), FrameUnit::Range) if frame.has_value_offset() => {
            Some(RangeKeys::new(k, *desc)?)
        }
        _ => None,
    };
    let (mut lo, mut hi) = (vec![0u32; n], vec![0u32; n]);
    for &p in &layout.partitions {
        frame_bounds(
            frame,
            p,
            &layout.peer_start,
            &layout.peer_end,
            keys.as_ref(),
            &mut lo,
            &mut hi,
        );
    }
    Ok((lo, hi))
}

/// The `nth` row (from 1) of each frame, from its end when `from_end`; with `ignore_nulls`
/// the `nth` non-NULL row, found through the positions of the non-NULL rows.
fn nth_values(
    values: &ArrayRef,
    lo: &[u32],
    hi: &[u32],
    nth: usize,
    from_end: bool,
    ignore_nulls: bool,
) -> Result<ArrayRef> {
    let n = values.len();
    let idx: Vec<Option<u32>> = if ignore_nulls {
        let present: Vec<u32> = (0..n as u32)
            .filter(|&r| values.is_valid(r as usize))
            .collect();
        // before[r]: non-NULL rows ahead of row r.
        let mut before = Vec::with_capacity(n + 1);
        let mut c = 0usize;
        before.push(0);
        for r in 0..n {
            c += usize::from(values.is_valid(r));
            before.push(c);
        }
        (0..n)
            .map(|i| {
                let (a, b) = (before[lo[i] as usize], before[hi[i] as usize]);
                if b - a < nth {
                    None
                } else if from_end {
                    Some(present[b - nth])
                } else {
                    Some(present[a + nth - 1])
                }
            })
            .collect()
    } else {
        (0..n)
            .map(|i| {
                let (a, b) = (lo[i] as usize, hi[i] as usize);
                if b - a < nth {
                    None
                } else if from_end {
                    Some((b - nth) as u32)
                } else {
                    Some((a + nth - 1) as u32)
                }
            })
            .collect()
    };
    Ok(arrow_select::take::take(
        values.as_ref(),
        &UInt32Array::from(idx),
        None,
    )?)
}

/// The value `delta` rows away from each row (negative: before) within its partition, or
/// `default`.
fn offset_values(
    batch: &RecordBatch,
    layout: &Layout,
    input: &PhysicalExpr,
    delta: i64,
    default: Option<&PhysicalExpr>,
    ignore_nulls: bool,
) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let values = ferrospark_expr::evaluate(input, batch)?.into_array(n)?;
    let mut idx: Vec<Option<u32>> = vec![None; n];
    for &(start, end) in &layout.partitions {
        if !ignore_nulls {
            for (i, slot) in idx.iter_mut().enumerate().take(end).skip(start) {
                let j = i as i64 + delta;
                if (start as i64..end as i64).contains(&j) {
                    *slot = Some(j as u32);
                }
            }
            continue;
        }
        // Positions of the partition's non-NULL values; `before` counts those ahead of a row.
        let present: Vec<usize> = (start..end).filter(|&r| values.is_valid(r)).collect();
        let mut before = 0usize;
        for (i, slot) in idx.iter_mut().enumerate().take(end).skip(start) {
            let here = usize::from(values.is_valid(i));
            // delta < 0: the |delta|-th non-NULL value before the row; delta > 0: after it;
            // 0: the row itself.
            let target = match delta.signum() {
                -1 => before as i64 + delta,
                1 => (before + here) as i64 + delta - 1,
                _ => {
                    if here == 1 {
                        before as i64
                    } else {
                        -1
                    }
                }
            };
            if (0..present.len() as i64).contains(&target) {
                *slot = Some(present[target as usize] as u32);
            }
            before += here;
        }
    }
    let taken = arrow_select::take::take(values.as_ref(), &UInt32Array::from(idx.clone()), None)?;
    let Some(default) = default else {
        return Ok(taken);
    };
    let fallback = ferrospark_expr::evaluate(default, batch)?.into_array(n)?;
    let fallback = if fallback.data_type() == values.data_type() {
        fallback
    } else {
        arrow_cast::cast(&fallback, values.data_type())?
    };
    let missing: BooleanArray = idx.iter().map(|i| Some(i.is_none())).collect();
    Ok(arrow_select::zip::zip(&missing, &fallback, &taken)?)
}
