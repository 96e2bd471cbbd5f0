//! Window frames: ROWS and RANGE bounds, Spark's validation and defaults, and the `[lo, hi)`
//! row range of every row's frame, found in one pass per partition (bounds only move forward
//! as the row does).

use arrow_array::cast::AsArray;
use arrow_array::timezone::Tz;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::functions::datetime::{add_months, date_of, days_of, from_local, local, zone};

/// How a frame's bounds count: rows, or values of the order key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnit {
    /// Physical rows.
    Rows,
    /// Values of the (single) order key; CURRENT ROW means every peer.
    Range,
}

/// A bound's distance from the current row: rows, or an order-key value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FrameOffset {
    /// Rows, or an integral (also date / timestamp) value.
    Int(i64),
    /// A fractional value (floating order keys).
    Float(f64),
    /// An interval over a DATE or TIMESTAMP key, as Spark's interval literals give it:
    /// `INTERVAL '1-1' YEAR TO MONTH` is 13 months, `INTERVAL '5' DAY` 5 days,
    /// `INTERVAL '1 2:3:4' DAY TO SECOND` microseconds. Signed as written.
    Interval {
        /// Calendar months (YEAR-MONTH intervals).
        months: i32,
        /// Whole days (day-only intervals, the only day-time ones a DATE key takes).
        days: i32,
        /// Microseconds (DAY TO SECOND intervals).
        micros: i64,
    },
}

impl FrameOffset {
    fn as_f64(self) -> f64 {
        match self {
            FrameOffset::Int(v) => v as f64,
            FrameOffset::Float(v) => v,
            // Interval bounds are never compared with each other (see `validate`); this
            // only gives their direction.
            FrameOffset::Interval {
                months,
                days,
                micros,
            } => months as f64 * 31.0 * 86_400e6 + days as f64 * 86_400e6 + micros as f64,
        }
    }

    fn is_negative(self) -> bool {
        self.as_f64() < 0.0
    }

    /// The offset the other way.
    pub fn negated(self) -> Self {
        match self {
            FrameOffset::Int(v) => FrameOffset::Int(-v),
            FrameOffset::Float(v) => FrameOffset::Float(-v),
            FrameOffset::Interval {
                months,
                days,
                micros,
            } => FrameOffset::Interval {
                months: -months,
                days: -days,
                micros: -micros,
            },
        }
    }

    /// Whether this offset can move an ORDER BY key of type `key` (Spark's rule: numbers
    /// move numbers, days and year-month intervals move dates, intervals move timestamps).
    fn moves(self, key: &DataType) -> bool {
        use DataType as D;
        match (self, key) {
            (
                FrameOffset::Int(_),
                D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::Float32 | D::Float64 | D::Date32,
            ) => true,
            (FrameOffset::Float(_), D::Float32 | D::Float64) => true,
            (FrameOffset::Interval { micros, .. }, D::Date32) => micros == 0,
            (
                FrameOffset::Interval { .. },
                D::Timestamp(arrow_schema::TimeUnit::Microsecond, _),
            ) => true,
            _ => false,
        }
    }
}

/// One end of a frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FrameBound {
    /// The partition's first row.
    UnboundedPreceding,
    /// `n` rows (or values) before the current row.
    Preceding(FrameOffset),
    /// The current row (RANGE: its first or last peer).
    CurrentRow,
    /// `n` rows (or values) after the current row.
    Following(FrameOffset),
    /// The partition's last row.
    UnboundedFollowing,
}

impl FrameBound {
    /// The bound as a signed distance (preceding negative), `None` when unbounded.
    fn signed(self) -> Option<f64> {
        match self {
            FrameBound::Preceding(o) => Some(-o.as_f64()),
            FrameBound::CurrentRow => Some(0.0),
            FrameBound::Following(o) => Some(o.as_f64()),
            _ => None,
        }
    }

    fn text(self) -> String {
        match self {
            FrameBound::UnboundedPreceding => "UNBOUNDED PRECEDING".into(),
            FrameBound::UnboundedFollowing => "UNBOUNDED FOLLOWING".into(),
            FrameBound::CurrentRow => "CURRENT ROW".into(),
            FrameBound::Preceding(o) => format!("{} PRECEDING", offset_text(o)),
            FrameBound::Following(o) => format!("{} FOLLOWING", offset_text(o)),
        }
    }
}

fn offset_text(o: FrameOffset) -> String {
    match o {
        FrameOffset::Int(v) => v.to_string(),
        FrameOffset::Float(v) => v.to_string(),
        FrameOffset::Interval {
            months,
            days,
            micros,
        } => {
            let mut parts = Vec::new();
            if months != 0 {
                parts.push(format!("{months} months"));
            }
            if days != 0 {
                parts.push(format!("{days} days"));
            }
            if micros != 0 || parts.is_empty() {
                parts.push(format!("{micros} microseconds"));
            }
            format!("INTERVAL '{}'", parts.join(" "))
        }
    }
}

/// `ROWS | RANGE BETWEEN start AND end`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowFrame {
    /// Rows or values.
    pub unit: FrameUnit,
    /// The first row of the frame.
    pub start: FrameBound,
    /// The last row of the frame.
    pub end: FrameBound,
}

impl WindowFrame {
    /// Spark's default frame of an aggregate: with ORDER BY, `RANGE BETWEEN UNBOUNDED
    /// PRECEDING AND CURRENT ROW`; without, the whole partition.
    pub fn default_for(ordered: bool) -> Self {
        if ordered {
            Self {
                unit: FrameUnit::Range,
                start: FrameBound::UnboundedPreceding,
                end: FrameBound::CurrentRow,
            }
        } else {
            Self {
                unit: FrameUnit::Rows,
                start: FrameBound::UnboundedPreceding,
                end: FrameBound::UnboundedFollowing,
            }
        }
    }

    /// Spark's text of the frame (`ROWS BETWEEN 2 PRECEDING AND CURRENT ROW`).
    pub fn text(&self) -> String {
        format!(
            "{} BETWEEN {} AND {}",
            match self.unit {
                FrameUnit::Rows => "ROWS",
                FrameUnit::Range => "RANGE",
            },
            self.start.text(),
            self.end.text()
        )
    }

    /// Whether a bound is a value offset (RANGE only).
    pub(crate) fn has_value_offset(&self) -> bool {
        self.unit == FrameUnit::Range
            && [self.start, self.end]
                .iter()
                .any(|b| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_)))
    }

    /// Refuses what Spark's analyzer refuses, with its error classes; `order_types` are the
    /// ORDER BY key types.
    pub fn validate(&self, order_types: &[DataType]) -> Result<()> {
        let bad = |class: &str, why: String| {
            Err(FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.{class}] Cannot resolve \"{}\" due to data type mismatch: {why}",
                self.text()
            )))
        };
        if self.start == FrameBound::UnboundedFollowing {
            return bad(
                "SPECIFIED_WINDOW_FRAME_INVALID_BOUND",
                "Window frame upper bound \"UNBOUNDED FOLLOWING\" does not follow the lower bound: a frame cannot start at UNBOUNDED FOLLOWING".into(),
            );
        }
        if self.end == FrameBound::UnboundedPreceding {
            return bad(
                "SPECIFIED_WINDOW_FRAME_INVALID_BOUND",
                "a frame cannot end at UNBOUNDED PRECEDING".into(),
            );
        }
        for b in [self.start, self.end] {
            if let FrameBound::Preceding(o) | FrameBound::Following(o) = b {
                if self.unit == FrameUnit::Rows && !matches!(o, FrameOffset::Int(_)) {
                    return bad(
                        "SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE",
                        format!(
                            "The data type of a ROWS frame bound must be INT, got {}",
                            offset_text(o)
                        ),
                    );
                }
                if !matches!(o, FrameOffset::Interval { .. }) && o.is_negative() {
                    return bad(
                        "SPECIFIED_WINDOW_FRAME_WRONG_COMPARISON",
                        "a frame offset cannot be negative".into(),
                    );
                }
            }
        }
        let is_interval = |b: FrameBound| {
            matches!(
                b,
                FrameBound::Preceding(FrameOffset::Interval { .. })
                    | FrameBound::Following(FrameOffset::Interval { .. })
            )
        };
        // Interval bounds of different units do not order; Spark compares numbers only.
        let comparable = !is_interval(self.start) && !is_interval(self.end);
        if let (Some(s), Some(e), true) = (self.start.signed(), self.end.signed(), comparable) {
            if s > e {
                return bad(
                    "SPECIFIED_WINDOW_FRAME_WRONG_COMPARISON",
                    "The lower bound of a window frame must be less than or equal to the upper bound".into(),
                );
            }
        }
        if self.has_value_offset() {
            let t = match order_types {
                [] => {
                    return bad(
                        "RANGE_FRAME_WITHOUT_ORDER",
                        "A range window frame cannot be used in an unordered window specification".into(),
                    )
                }
                [t] => t,
                _ => {
                    return bad(
                        "RANGE_FRAME_MULTI_ORDER",
                        format!(
                            "A range window frame with value boundaries cannot be used in a window specification with multiple order by expressions: {} keys",
                            order_types.len()
                        ),
                    )
                }
            };
            for b in [self.start, self.end] {
                if let FrameBound::Preceding(o) | FrameBound::Following(o) = b {
                    if !o.moves(t) {
                        return bad(
                            "RANGE_FRAME_INVALID_TYPE",
                            format!(
                                "The data type {t} used in the order specification does not match the data type of the frame offset {}",
                                offset_text(o)
                            ),
                        );
                    }
                }
            }
        }
        Ok(())
    }
}

/// How an interval offset moves an integral key: not at all (plain numbers), in days
/// (DATE), or in microseconds with months counted in a time zone (TIMESTAMP, NTZ in UTC).
pub(crate) enum Calendar {
    /// Numbers.
    Plain,
    /// Days since the epoch.
    Date,
    /// Microseconds since the epoch; months move the local date in this zone.
    Timestamp(Tz),
}

impl Calendar {
    /// `v` moved by `offset` (Spark's `DateAddInterval` / `timestampAddInterval`: months on
    /// the local date, clamped to the month's last day, then days, then microseconds).
    fn shift(&self, v: i64, offset: FrameOffset) -> Option<i64> {
        let FrameOffset::Interval {
            months,
            days,
            micros,
        } = offset
        else {
            return match offset {
                FrameOffset::Int(d) => v.checked_add(d),
                FrameOffset::Float(d) => v.checked_add(d as i64),
                FrameOffset::Interval { .. } => None,
            };
        };
        match self {
            Calendar::Plain => None,
            // Days only (the common `INTERVAL n DAYS`): no calendar arithmetic per comparison.
            Calendar::Date if months == 0 => v.checked_add(i64::from(days)),
            Calendar::Date => {
                let d = add_months(date_of(i32::try_from(v).ok()?)?, months)?;
                Some(i64::from(days_of(d)) + i64::from(days))
            }
            Calendar::Timestamp(tz) => {
                let moved = if months == 0 {
                    v
                } else {
                    let l = local(v, tz)?;
                    from_local(&add_months(l.date(), months)?.and_time(l.time()), tz)?
                };
                moved
                    .checked_add(i64::from(days).checked_mul(86_400_000_000)?)?
                    .checked_add(micros)
            }
        }
    }
}

/// The order key of a RANGE frame with value offsets, as numbers that ascend with the sort
/// order (descending keys negated); `None` for NULL keys.
pub(crate) enum RangeKeys {
    /// Integral, date and timestamp keys, negated when `descending`.
    Int {
        /// The keys.
        keys: Vec<Option<i128>>,
        /// What an interval offset means for them.
        calendar: Calendar,
        /// Whether the keys were negated.
        descending: bool,
    },
    /// Floating keys (-0.0 as 0.0, NaN above everything).
    Float(Vec<Option<f64>>),
}

impl RangeKeys {
    /// The key values of `key` (sorted rows), negated when `descending`.
    pub(crate) fn new(key: &ArrayRef, descending: bool) -> Result<Self> {
        use DataType as D;
        let sign = if descending { -1 } else { 1 };
        let ints = |v: Vec<Option<i64>>, calendar: Calendar| RangeKeys::Int {
            keys: v.into_iter().map(|x| x.map(|x| x as i128 * sign)).collect(),
            calendar,
            descending,
        };
        Ok(match key.data_type() {
            D::Int8 => ints(
                key.as_primitive::<Int8Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
                Calendar::Plain,
            ),
            D::Int16 => ints(
                key.as_primitive::<Int16Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
                Calendar::Plain,
            ),
            D::Int32 => ints(
                key.as_primitive::<Int32Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
                Calendar::Plain,
            ),
            D::Int64 => ints(
                key.as_primitive::<Int64Type>().iter().collect(),
                Calendar::Plain,
            ),
            D::Date32 => ints(
                key.as_primitive::<Date32Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
                Calendar::Date,
            ),
            D::Timestamp(arrow_schema::TimeUnit::Microsecond, tz) => ints(
                key.as_primitive::<TimestampMicrosecondType>()
                    .iter()
                    .collect(),
                Calendar::Timestamp(zone(tz.as_deref().unwrap_or("UTC"))?),
            ),
            D::Float32 | D::Float64 => {
                let vals: Vec<Option<f64>> = if key.data_type() == &D::Float32 {
                    key.as_primitive::<Float32Type>()
                        .iter()
                        .map(|v| v.map(f64::from))
                        .collect()
                } else {
                    key.as_primitive::<Float64Type>().iter().collect()
                };
                // NaN sorts above every number: below them all once negated (the negative NaN
                // is below -inf in the total order).
                let nan = if descending {
                    -f64::NAN.abs()
                } else {
                    f64::NAN.abs()
                };
                let norm = |v: f64| {
                    if v.is_nan() {
                        nan
                    } else if v == 0.0 {
                        0.0
                    } else {
                        v * sign as f64
                    }
                };
                RangeKeys::Float(vals.into_iter().map(|v| v.map(norm)).collect())
            }
            other => {
                return Err(FerroError::Analysis(format!(
                    "a RANGE frame with a value offset cannot order by {other}"
                )))
            }
        })
    }

    fn is_null(&self, i: usize) -> bool {
        match self {
            RangeKeys::Int { keys, .. } => keys[i].is_none(),
            RangeKeys::Float(v) => v[i].is_none(),
        }
    }

    /// Whether the key at `j` is below (`strict`) or at most the key at `i` moved by `delta`.
    fn before(&self, j: usize, i: usize, delta: FrameOffset, strict: bool) -> bool {
        match self {
            RangeKeys::Int {
                keys,
                calendar,
                descending,
            } => {
                let (Some(a), Some(b)) = (keys[j], keys[i]) else {
                    return false;
                };
                // Moved on the key's own scale: a descending key moves the other way.
                let target = if *descending {
                    calendar
                        .shift(-b as i64, delta.negated())
                        .map(|t| -(t as i128))
                } else {
                    calendar.shift(b as i64, delta).map(i128::from)
                };
                // Past the type's range: every key is before it (or none, moving down).
                let target = target.unwrap_or(if delta.is_negative() {
                    i128::MIN
                } else {
                    i128::MAX
                });
                if strict {
                    a < target
                } else {
                    a <= target
                }
            }
            RangeKeys::Float(v) => {
                let (Some(a), Some(b)) = (v[j], v[i]) else {
                    return false;
                };
                // NaN is above everything and equal to itself; moving it changes nothing.
                let target = if b.is_nan() { b } else { b + delta.as_f64() };
                let ord = a.total_cmp(&target);
                if strict {
                    ord.is_lt()
                } else {
                    ord.is_le()
                }
            }
        }
    }
}

/// The frame of every row of the sorted partition `[start, end)`: `lo[i]..hi[i]` (absolute
/// row numbers; `lo == hi` for an empty frame). `peer_start` / `peer_end` are the rows' peer
/// groups; `keys` the RANGE key when the frame has value offsets.
pub(crate) fn frame_bounds(
    frame: &WindowFrame,
    (start, end): (usize, usize),
    peer_start: &[u32],
    peer_end: &[u32],
    keys: Option<&RangeKeys>,
    lo: &mut [u32],
    hi: &mut [u32],
) {
    let signed = |o: FrameOffset, negative: bool| if negative { o.negated() } else { o };
    // The NULL-keyed rows of a RANGE frame with offsets: their own peer group.
    let mut a = start;
    let mut b = end;
    if let Some(k) = keys {
        while a < end && k.is_null(a) {
            a += 1;
        }
        while b > a && k.is_null(b - 1) {
            b -= 1;
        }
    }
    // Two cursors per bound, moving forward only.
    let (mut lo_cursor, mut hi_cursor) = (start, start);
    for i in start..end {
        let null_key = keys.is_some_and(|k| k.is_null(i));
        let lo_i = match frame.start {
            FrameBound::UnboundedPreceding => start,
            FrameBound::UnboundedFollowing => end,
            FrameBound::CurrentRow => match frame.unit {
                FrameUnit::Rows => i,
                FrameUnit::Range => peer_start[i] as usize,
            },
            FrameBound::Preceding(o) | FrameBound::Following(o) => {
                let neg = matches!(frame.start, FrameBound::Preceding(_));
                match (frame.unit, keys) {
                    (FrameUnit::Range, Some(k)) if !null_key => {
                        // First row of [a, b) whose key is at least key[i] + delta.
                        lo_cursor = lo_cursor.max(a);
                        while lo_cursor < b && k.before(lo_cursor, i, signed(o, neg), true) {
                            lo_cursor += 1;
                        }
                        lo_cursor
                    }
                    (FrameUnit::Range, _) => peer_start[i] as usize,
                    (FrameUnit::Rows, _) => {
                        let d = match o {
                            FrameOffset::Int(v) => v,
                            FrameOffset::Float(v) => v as i64,
                            FrameOffset::Interval { .. } => 0,
                        };
                        let at = if neg { i as i64 - d } else { i as i64 + d };
                        at.clamp(start as i64, end as i64) as usize
                    }
                }
            }
        };
        let hi_i = match frame.end {
            FrameBound::UnboundedFollowing => end,
            FrameBound::UnboundedPreceding => start,
            FrameBound::CurrentRow => match frame.unit {
                FrameUnit::Rows => i + 1,
                FrameUnit::Range => peer_end[i] as usize,
            },
            FrameBound::Preceding(o) | FrameBound::Following(o) => {
                let neg = matches!(frame.end, FrameBound::Preceding(_));
                match (frame.unit, keys) {
                    (FrameUnit::Range, Some(k)) if !null_key => {
                        // First row of [a, b) whose key is above key[i] + delta.
                        hi_cursor = hi_cursor.max(a);
                        while hi_cursor < b && k.before(hi_cursor, i, signed(o, neg), false) {
                            hi_cursor += 1;
                        }
                        hi_cursor
                    }
                    (FrameUnit::Range, _) => peer_end[i] as usize,
                    (FrameUnit::Rows, _) => {
                        let d = match o {
                            FrameOffset::Int(v) => v,
                            FrameOffset::Float(v) => v as i64,
                            FrameOffset::Interval { .. } => 0,
                        };
                        let at = if neg { i as i64 - d } else { i as i64 + d } + 1;
                        at.clamp(start as i64, end as i64) as usize
                    }
                }
            }
        };
        lo[i] = lo_i as u32;
        hi[i] = hi_i.max(lo_i) as u32;
    }
}
