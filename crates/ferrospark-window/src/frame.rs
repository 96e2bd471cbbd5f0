//! Window frames: ROWS and RANGE bounds, Spark's validation and defaults, and the `[lo, hi)`
//! row range of every row's frame, found in one pass per partition (bounds only move forward
//! as the row does).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

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
}

impl FrameOffset {
    fn as_f64(self) -> f64 {
        match self {
            FrameOffset::Int(v) => v as f64,
            FrameOffset::Float(v) => v,
        }
    }

    fn is_negative(self) -> bool {
        self.as_f64() < 0.0
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
    fn has_value_offset(&self) -> bool {
        self.unit == FrameUnit::Range
            && [self.start, self.end]
                .iter()
                .any(|b| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_)))
    }

    /// Refuses what Spark's analyzer refuses; `order_types` are the ORDER BY key types.
    pub fn validate(&self, order_types: &[DataType]) -> Result<()> {
        let bad = |why: String| Err(FerroError::Analysis(format!("{}: {why}", self.text())));
        if self.start == FrameBound::UnboundedFollowing {
            return bad("a frame cannot start at UNBOUNDED FOLLOWING".into());
        }
        if self.end == FrameBound::UnboundedPreceding {
            return bad("a frame cannot end at UNBOUNDED PRECEDING".into());
        }
        for b in [self.start, self.end] {
            if let FrameBound::Preceding(o) | FrameBound::Following(o) = b {
                if o.is_negative() {
                    return bad("a frame offset cannot be negative".into());
                }
                if self.unit == FrameUnit::Rows && matches!(o, FrameOffset::Float(_)) {
                    return bad("a ROWS frame counts whole rows".into());
                }
            }
        }
        if let (Some(s), Some(e)) = (self.start.signed(), self.end.signed()) {
            if s > e {
                return bad(
                    "the lower bound of a window frame must be less than or equal to the upper bound"
                        .into(),
                );
            }
        }
        if self.has_value_offset() {
            let [t] = order_types else {
                return bad(format!(
                    "a RANGE frame with a value offset needs exactly one ORDER BY key, got {}",
                    order_types.len()
                ));
            };
            if RangeKeys::kind(t).is_none() {
                return bad(format!(
                    "a RANGE frame with a value offset needs a numeric, date or timestamp ORDER BY key, got {t}"
                ));
            }
        }
        Ok(())
    }
}

/// The order key of a RANGE frame with value offsets, as numbers that ascend with the sort
/// order (descending keys negated); `None` for NULL keys.
pub(crate) enum RangeKeys {
    /// Integral, date and timestamp keys.
    Int(Vec<Option<i128>>),
    /// Floating keys (-0.0 as 0.0, NaN above everything).
    Float(Vec<Option<f64>>),
}

impl RangeKeys {
    fn kind(t: &DataType) -> Option<bool> {
        use DataType as D;
        match t {
            D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::Date32 => Some(true),
            D::Timestamp(arrow_schema::TimeUnit::Microsecond, _) => Some(true),
            D::Float32 | D::Float64 => Some(false),
            _ => None,
        }
    }

    /// The key values of `key` (sorted rows), negated when `descending`.
    pub(crate) fn new(key: &ArrayRef, descending: bool) -> Result<Self> {
        use DataType as D;
        let sign = if descending { -1 } else { 1 };
        let ints = |v: Vec<Option<i64>>| {
            RangeKeys::Int(v.into_iter().map(|x| x.map(|x| x as i128 * sign)).collect())
        };
        Ok(match key.data_type() {
            D::Int8 => ints(
                key.as_primitive::<Int8Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
            ),
            D::Int16 => ints(
                key.as_primitive::<Int16Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
            ),
            D::Int32 => ints(
                key.as_primitive::<Int32Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
            ),
            D::Int64 => ints(key.as_primitive::<Int64Type>().iter().collect()),
            D::Date32 => ints(
                key.as_primitive::<Date32Type>()
                    .iter()
                    .map(|v| v.map(i64::from))
                    .collect(),
            ),
            D::Timestamp(arrow_schema::TimeUnit::Microsecond, _) => ints(
                key.as_primitive::<TimestampMicrosecondType>()
                    .iter()
                    .collect(),
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
            RangeKeys::Int(v) => v[i].is_none(),
            RangeKeys::Float(v) => v[i].is_none(),
        }
    }

    /// Whether the key at `j` is below (`strict`) or at most the key at `i` moved by `delta`.
    fn before(&self, j: usize, i: usize, delta: FrameOffset, strict: bool) -> bool {
        match self {
            RangeKeys::Int(v) => {
                let (Some(a), Some(b)) = (v[j], v[i]) else {
                    return false;
                };
                let target = b + match delta {
                    FrameOffset::Int(d) => d as i128,
                    FrameOffset::Float(d) => d as i128,
                };
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
    let signed = |o: FrameOffset, negative: bool| match o {
        FrameOffset::Int(v) => FrameOffset::Int(if negative { -v } else { v }),
        FrameOffset::Float(v) => FrameOffset::Float(if negative { -v } else { v }),
    };
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
