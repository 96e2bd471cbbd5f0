//! Which buffered rows of a stream-stream join can go, as Spark decides it
//! (`StreamingSymmetricHashJoinHelper.getStateWatermarkPredicates` and
//! `StreamingJoinHelper.getStateValueWatermark`).
//!
//! * When a join key is a watermarked column, a side's rows go by key: every key whose
//!   watermarked part is at or below the watermark (a *key* predicate).
//! * Otherwise, when the side has a watermarked column and the join condition bounds it by
//!   the other side's watermarked column (`lt BETWEEN rt - INTERVAL 10 MINUTES AND rt`), its
//!   rows go by value: each row whose watermarked column is at or below the *state value
//!   watermark* the condition gives (a *value* predicate).
//! * Otherwise its rows stay forever.
//!
//! The state value watermark: each conjunct `a < b` (`<=`, `>`, `>=`, and both halves of a
//! `BETWEEN`) is rewritten `a - b < 0` and split into terms (columns, intervals, numbers as
//! seconds); when exactly one term is this side's column, negated, and the rest are the
//! other side's watermarked column and constants, substituting the watermark solves it for
//! the column's lowest matching value. An inclusive bound is one millisecond lower (rows at
//! or below the result go). The smallest result over the conjuncts wins.

use std::collections::HashSet;

use arrow_array::Array;
use arrow_schema::DataType;
use ferrospark_expr::{BinaryOp, Expr};

/// Which of a side's buffered rows can go at a watermark.
#[derive(Debug, Clone, PartialEq)]
pub enum StateWatermarkPredicate {
    /// Rows whose join key's part `ordinal` (a timestamp) is at or below the watermark.
    Key {
        /// The watermarked join key's position among the keys.
        ordinal: usize,
        /// The watermark (ms).
        watermark_ms: i64,
    },
    /// Rows whose `column` (a timestamp) is at or below `watermark_ms`.
    Value {
        /// The side's watermarked column.
        column: String,
        /// The state value watermark (ms).
        watermark_ms: i64,
    },
}

/// One input of the join, as the predicates need it.
#[derive(Debug, Clone)]
pub struct JoinInput {
    /// Its column names.
    pub columns: HashSet<String>,
    /// Its join key columns, in key order.
    pub keys: Vec<String>,
    /// Its watermarked column, if it has one.
    pub watermark_column: Option<String>,
}

/// The (left, right) predicates at `watermark_ms` (`None` before the query has one).
pub fn state_watermark_predicates(
    left: &JoinInput,
    right: &JoinInput,
    condition: Option<&Expr>,
    watermark_ms: Option<i64>,
) -> (
    Option<StateWatermarkPredicate>,
    Option<StateWatermarkPredicate>,
) {
    let Some(wm) = watermark_ms else {
        return (None, None);
    };
    let watermarked_key = |side: &JoinInput| {
        side.keys
            .iter()
            .position(|k| side.watermark_column.as_deref() == Some(k.as_str()))
    };
    // The first watermarked key of the left side, else of the right: both sides drop by it.
    let key_ordinal = watermarked_key(left).or_else(|| watermarked_key(right));
    let one_side = |this: &JoinInput, other: &JoinInput| {
        if let Some(ordinal) = key_ordinal {
            return Some(StateWatermarkPredicate::Key {
                ordinal,
                watermark_ms: wm,
            });
        }
        let column = this.watermark_column.clone()?;
        let watermark_ms = state_value_watermark(this, other, condition?, wm)?;
        Some(StateWatermarkPredicate::Value {
            column,
            watermark_ms,
        })
    };
    (one_side(left, right), one_side(right, left))
}

/// The state value watermark (ms) of `this` side's rows, from `condition` and the other
/// side's watermarked column at `watermark_ms`; `None` when the condition bounds nothing.
pub fn state_value_watermark(
    this: &JoinInput,
    other: &JoinInput,
    condition: &Expr,
    watermark_ms: i64,
) -> Option<i64> {
    let other_wm = other.watermark_column.as_deref()?;
    let mut found: Option<i64> = None;
    let mut consider = |v: Option<i64>| {
        if let Some(v) = v {
            found = Some(found.map_or(v, |f| f.min(v)));
        }
    };
    let solve = |l: &Expr, r: &Expr| solve_less_than(l, r, this, other, other_wm, watermark_ms);
    for c in condition.conjuncts() {
        match c {
            Expr::Binary { left, op, right } => match op {
                BinaryOp::Lt => consider(solve(left, right)),
                BinaryOp::LtEq => consider(solve(left, right).map(|v| v - 1)),
                BinaryOp::Gt => consider(solve(right, left)),
                BinaryOp::GtEq => consider(solve(right, left).map(|v| v - 1)),
                _ => {}
            },
            Expr::Between {
                expr,
                low,
                high,
                negated: false,
            } => {
                consider(solve(low, expr).map(|v| v - 1));
                consider(solve(expr, high).map(|v| v - 1));
            }
            _ => {}
        }
    }
    found
}

/// A term of `l - r`: a column (negated or not) or a constant in microseconds.
#[derive(Debug, Clone, PartialEq)]
enum Term {
    Column(String, bool),
    Micros(f64),
}

/// Splits `e` into terms (negated when `negate`); `None` for anything but sums of
/// columns, numbers and intervals of days or less.
fn terms(e: &Expr, negate: bool, out: &mut Vec<Term>) -> Option<()> {
    let sign = if negate { -1.0 } else { 1.0 };
    match e {
        Expr::Binary {
            left,
            op: BinaryOp::Plus,
            right,
        } => {
            terms(left, negate, out)?;
            terms(right, negate, out)
        }
        Expr::Binary {
            left,
            op: BinaryOp::Minus,
            right,
        } => {
            terms(left, negate, out)?;
            terms(right, !negate, out)
        }
        Expr::Negative(inner) => terms(inner, !negate, out),
        Expr::Cast { expr, type_name } => {
            let t = type_name.to_ascii_lowercase();
            let numeric = [
                "timestamp",
                "tinyint",
                "smallint",
                "int",
                "bigint",
                "float",
                "double",
                "decimal",
            ]
            .iter()
            .any(|n| t.starts_with(n));
            numeric.then_some(())?;
            terms(expr, negate, out)
        }
        Expr::Column(name) => {
            out.push(Term::Column(name.clone(), negate));
            Some(())
        }
        Expr::Literal(l) => {
            let a = l.array();
            if a.is_null(0) {
                return None;
            }
            let micros = match a.data_type() {
                DataType::Duration(arrow_schema::TimeUnit::Microsecond) => {
                    a.as_any()
                        .downcast_ref::<arrow_array::DurationMicrosecondArray>()?
                        .value(0) as f64
                }
                DataType::Interval(arrow_schema::IntervalUnit::DayTime) => {
                    let v = a
                        .as_any()
                        .downcast_ref::<arrow_array::IntervalDayTimeArray>()?
                        .value(0);
                    (v.days as f64) * 86_400e6 + (v.milliseconds as f64) * 1e3
                }
                // Months have no fixed length: nothing can be solved with them.
                DataType::Interval(_) => return None,
                t if t.is_numeric() => {
                    let d = arrow_cast::cast(a, &DataType::Float64).ok()?;
                    d.as_any()
                        .downcast_ref::<arrow_array::Float64Array>()?
                        .value(0)
                        * 1e6
                }
                _ => return None,
            };
            out.push(Term::Micros(sign * micros));
            Some(())
        }
        _ => None,
    }
}

/// Solves `l < r` for `this` side's column with the other side's watermarked column at
/// `watermark_ms`: the column's state watermark (ms), when the conjunct bounds it from below.
fn solve_less_than(
    l: &Expr,
    r: &Expr,
    this: &JoinInput,
    other: &JoinInput,
    other_wm: &str,
    watermark_ms: i64,
) -> Option<i64> {
    let mut ts = Vec::new();
    terms(l, false, &mut ts)?;
    terms(r, true, &mut ts)?;
    let mine: Vec<&Term> = ts
        .iter()
        .filter(|t| matches!(t, Term::Column(c, _) if this.columns.contains(c)))
        .collect();
    let theirs = ts
        .iter()
        .filter(|t| matches!(t, Term::Column(c, _) if other.columns.contains(c)))
        .count();
    // One column of this side, negated (`... - leftTime < 0` bounds leftTime from below).
    let [Term::Column(_, true)] = mine.as_slice() else {
        return None;
    };
    if theirs > 1 {
        return None;
    }
    let mut sum = 0.0;
    for t in &ts {
        match t {
            Term::Column(c, _) if this.columns.contains(c) => {}
            Term::Column(c, negated) if c == other_wm => {
                let v = watermark_ms as f64 * 1000.0;
                sum += if *negated { -v } else { v };
            }
            // Another column than the watermarked one cannot be valued.
            Term::Column(..) => return None,
            Term::Micros(m) => sum += m,
        }
    }
    Some((sum / 1000.0) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrospark_expr::parse_expr;

    fn side(columns: &[&str], keys: &[&str], wm: Option<&str>) -> JoinInput {
        JoinInput {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            keys: keys.iter().map(|c| c.to_string()).collect(),
            watermark_column: wm.map(str::to_string),
        }
    }

    fn value(cond: &str, wm: i64) -> (Option<i64>, Option<i64>) {
        let l = side(&["lk", "lt"], &["lk"], Some("lt"));
        let r = side(&["rk", "rt"], &["rk"], Some("rt"));
        let c = parse_expr(cond).expect("parses");
        (
            state_value_watermark(&l, &r, &c, wm),
            state_value_watermark(&r, &l, &c, wm),
        )
    }

    #[test]
    fn a_time_range_bounds_both_sides() {
        // Future right rows have rt > 10 000: a left row needs lt > rt + 1 s > 11 000.
        assert_eq!(
            value("lt > rt + INTERVAL 1 SECOND", 10_000),
            (Some(11_000), None)
        );
        assert_eq!(
            value("lt >= rt + INTERVAL 1 SECOND", 10_000),
            (Some(10_999), None)
        );
        // Spark's guide: clicks within an hour after the impression.
        let (left, right) = value("rt >= lt AND rt <= lt + INTERVAL 1 HOUR", 10_000_000);
        assert_eq!(left, Some(10_000_000 - 3_600_000 - 1));
        assert_eq!(right, Some(10_000_000 - 1));
        // BETWEEN is both bounds.
        assert_eq!(
            value("lt BETWEEN rt - INTERVAL 10 MINUTES AND rt", 1_000_000),
            (Some(1_000_000 - 600_000 - 1), Some(1_000_000 - 1))
        );
        // Numbers are seconds; the smallest bound of several wins.
        assert_eq!(
            value("lt > rt - 5 AND lt > rt - INTERVAL 2 SECONDS", 100_000),
            (Some(95_000), None)
        );
    }

    #[test]
    fn conditions_that_bound_nothing_give_none() {
        assert_eq!(
            value("lt < rt", 10_000).0,
            None,
            "an upper bound frees nothing"
        );
        assert_eq!(value("lk = rk", 10_000), (None, None));
        assert_eq!(value("lt > rt + INTERVAL 1 MONTH", 10_000), (None, None));
        assert_eq!(
            value("lt + lk > rt", 10_000).0,
            None,
            "two columns of one side"
        );
        assert_eq!(
            value("lt > rk", 10_000).0,
            None,
            "not the watermarked column"
        );
    }

    #[test]
    fn a_watermarked_key_drops_by_key_on_both_sides() {
        let l = side(&["lk", "lt"], &["lk", "lt"], Some("lt"));
        let r = side(&["rk", "rt"], &["rk", "rt"], Some("rt"));
        let p = Some(StateWatermarkPredicate::Key {
            ordinal: 1,
            watermark_ms: 5,
        });
        assert_eq!(
            state_watermark_predicates(&l, &r, None, Some(5)),
            (p.clone(), p)
        );
        assert_eq!(state_watermark_predicates(&l, &r, None, None), (None, None));
        // Without one, the condition decides; a side without a watermark keeps its rows.
        let l = side(&["lk", "lt"], &["lk"], Some("lt"));
        let r = side(&["rk", "rt"], &["rk"], None);
        let c = parse_expr("lt > rt").expect("parses");
        assert_eq!(
            state_watermark_predicates(&l, &r, Some(&c), Some(5)),
            (None, None)
        );
    }
}
