//! Frames and aggregates against a naive reference that finds each bound by scanning the
//! partition in sort order (as Spark's bound orderings do): ROWS and RANGE, every bound kind,
//! value offsets on integer and floating keys ascending and descending, NULL, NaN and -0.0
//! keys, batch sizes 1, 7 and 8192.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{MemoryPool, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::tests::{cell, expr};
use crate::{
    FrameAggregate, FrameBound, FrameOffset, FrameUnit, OrderKey, WindowCall, WindowExec,
    WindowFrame, WindowFunction, WindowSpec,
};

pub(crate) fn data(seed: u64, n: usize) -> RecordBatch {
    let mut rng = StdRng::seed_from_u64(seed);
    let p: Int32Array = (0..n).map(|_| Some(rng.random_range(0..3))).collect();
    let k: Int32Array = (0..n)
        .map(|_| (rng.random_range(0..8) > 0).then(|| rng.random_range(-3..6)))
        .collect();
    let o: Float64Array = (0..n)
        .map(|_| match rng.random_range(0..10) {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-0.0),
            k => Some(k as f64 / 2.0),
        })
        .collect();
    // A unique key: the order within ties is then Spark's too.
    let t: Int64Array = (0..n as i64).map(Some).collect();
    let v: Int64Array = (0..n)
        .map(|_| (rng.random_range(0..4) > 0).then(|| rng.random_range(-100..100)))
        .collect();
    let f: Float64Array = (0..n)
        .map(|_| match rng.random_range(0..12) {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-0.0),
            _ => Some(rng.random_range(-1000..1000) as f64 / 7.0),
        })
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("p", DataType::Int32, true),
            Field::new("k", DataType::Int32, true),
            Field::new("o", DataType::Float64, true),
            Field::new("t", DataType::Int64, false),
            Field::new("v", DataType::Int64, true),
            Field::new("f", DataType::Float64, true),
        ])),
        vec![
            Arc::new(p) as ArrayRef,
            Arc::new(k),
            Arc::new(o),
            Arc::new(t),
            Arc::new(v),
            Arc::new(f),
        ],
    )
    .expect("batch")
}

/// A key value as Spark orders it: NULL, then numbers (-0.0 = 0.0), NaN last.
#[derive(Clone, Copy, Debug)]
enum Key {
    Null,
    Num(f64),
}

fn key_of(b: &RecordBatch, col: usize, r: usize) -> Key {
    let a = b.column(col);
    if a.is_null(r) {
        return Key::Null;
    }
    let v = match a.data_type() {
        DataType::Int32 => f64::from(
            a.as_any()
                .downcast_ref::<Int32Array>()
                .expect("int")
                .value(r),
        ),
        DataType::Int64 => a
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("long")
            .value(r) as f64,
        _ => a
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("float")
            .value(r),
    };
    Key::Num(if v == 0.0 { 0.0 } else { v })
}

/// `a` against `b` in the window's sort order.
fn cmp_keys(a: Key, b: Key, desc: bool, nulls_first: bool) -> Ordering {
    match (a, b) {
        (Key::Null, Key::Null) => Ordering::Equal,
        (Key::Null, _) => {
            if nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (_, Key::Null) => {
            if nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Key::Num(x), Key::Num(y)) => {
            let o = match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            };
            if desc {
                o.reverse()
            } else {
                o
            }
        }
    }
}

struct Case {
    frame: WindowFrame,
    /// ORDER BY column index (k or o) and direction.
    key: usize,
    desc: bool,
}

/// The bound's key value for row `r` moved by `delta` rows-worth (preceding negative, in sort
/// order): NULL stays NULL, NaN stays NaN.
fn moved(k: Key, delta: f64, desc: bool) -> Key {
    match k {
        Key::Null => Key::Null,
        Key::Num(x) if x.is_nan() => k,
        Key::Num(x) => Key::Num(if desc { x - delta } else { x + delta }),
    }
}

fn offset_of(b: FrameBound) -> f64 {
    match b {
        FrameBound::Preceding(FrameOffset::Int(v)) => -(v as f64),
        FrameBound::Preceding(FrameOffset::Float(v)) => -v,
        FrameBound::Following(FrameOffset::Int(v)) => v as f64,
        FrameBound::Following(FrameOffset::Float(v)) => v,
        _ => 0.0,
    }
}

/// The rows of row `r`'s partition in the window's order, and `r`'s position among them.
fn sorted_partition(b: &RecordBatch, c: &Case, r: usize) -> (Vec<usize>, usize) {
    let part = |r: usize| key_of(b, 0, r);
    let mut members: Vec<usize> = (0..b.num_rows())
        .filter(|&m| cmp_keys(part(m), part(r), false, true) == Ordering::Equal)
        .collect();
    members.sort_by(|&x, &y| {
        cmp_keys(key_of(b, c.key, x), key_of(b, c.key, y), c.desc, !c.desc).then(x.cmp(&y))
    });
    let pos = members.iter().position(|&m| m == r).expect("member");
    (members, pos)
}

/// The frame `[lo, hi)` (positions in `members`) of the member at `pos`.
fn naive_frame(b: &RecordBatch, members: &[usize], pos: usize, c: &Case) -> (usize, usize) {
    let n = members.len();
    let nulls_first = !c.desc;
    let key = |p: usize| key_of(b, c.key, members[p]);
    let cmp = |x: Key, y: Key| cmp_keys(x, y, c.desc, nulls_first);
    let lo = match (c.frame.start, c.frame.unit) {
        (FrameBound::UnboundedPreceding, _) => 0,
        (bound, FrameUnit::Rows) => {
            (pos as i64 + offset_of(bound) as i64).clamp(0, n as i64) as usize
        }
        (bound, FrameUnit::Range) => {
            let target = moved(key(pos), offset_of(bound), c.desc);
            (0..n)
                .find(|&p| cmp(key(p), target) != Ordering::Less)
                .unwrap_or(n)
        }
    };
    let hi = match (c.frame.end, c.frame.unit) {
        (FrameBound::UnboundedFollowing, _) => n,
        (bound, FrameUnit::Rows) => {
            (pos as i64 + offset_of(bound) as i64 + 1).clamp(0, n as i64) as usize
        }
        (bound, FrameUnit::Range) => {
            let target = moved(key(pos), offset_of(bound), c.desc);
            (0..n)
                .find(|&p| cmp(key(p), target) == Ordering::Greater)
                .unwrap_or(n)
        }
    };
    (lo, hi.max(lo))
}

fn naive(b: &RecordBatch, c: &Case, agg: FrameAggregate, col: Option<usize>) -> Vec<String> {
    let n = b.num_rows();
    (0..n)
        .map(|r| {
            let (members, pos) = sorted_partition(b, c, r);
            let (lo, hi) = naive_frame(b, &members, pos, c);
            let rows = &members[lo..hi];
            let Some(col) = col else {
                return rows.len().to_string();
            };
            let a = b.column(col);
            let valid: Vec<usize> = rows.iter().copied().filter(|&m| a.is_valid(m)).collect();
            match agg {
                FrameAggregate::Count => valid.len().to_string(),
                FrameAggregate::CollectList | FrameAggregate::CollectSet => {
                    let mut kept: Vec<usize> = Vec::new();
                    for &m in &valid {
                        let dup = agg == FrameAggregate::CollectSet
                            && kept.iter().any(|&k| {
                                cmp_keys(key_of(b, col, k), key_of(b, col, m), false, true)
                                    == Ordering::Equal
                            });
                        if !dup {
                            kept.push(m);
                        }
                    }
                    let items: Vec<String> = kept.iter().map(|&m| cell(a, m)).collect();
                    format!("[{}]", items.join(", "))
                }
                FrameAggregate::VarSamp
                | FrameAggregate::VarPop
                | FrameAggregate::StddevSamp
                | FrameAggregate::StddevPop => {
                    let x = arrow_cast::cast(a, &DataType::Float64).expect("double");
                    let x = x.as_any().downcast_ref::<Float64Array>().expect("f");
                    let (mut n, mut avg, mut m2) = (0.0f64, 0.0f64, 0.0f64);
                    for &m in &valid {
                        n += 1.0;
                        let delta = x.value(m) - avg;
                        avg += delta / n;
                        m2 += delta * (delta - delta / n);
                    }
                    let v = match agg {
                        FrameAggregate::VarSamp if n > 1.0 => Some(m2 / (n - 1.0)),
                        FrameAggregate::StddevSamp if n > 1.0 => Some((m2 / (n - 1.0)).sqrt()),
                        FrameAggregate::VarPop if n > 0.0 => Some(m2 / n),
                        FrameAggregate::StddevPop if n > 0.0 => Some((m2 / n).sqrt()),
                        _ => None,
                    };
                    cell(&Float64Array::from(vec![v]), 0)
                }
                FrameAggregate::BoolAnd | FrameAggregate::BoolOr => {
                    unreachable!("this data has no boolean column; bool_and/bool_or are tested against Spark")
                }
                _ if valid.is_empty() => "NULL".into(),
                FrameAggregate::Avg => {
                    let mean = match a.data_type() {
                        DataType::Int64 => {
                            let v = a.as_any().downcast_ref::<Int64Array>().expect("v");
                            valid.iter().map(|&m| v.value(m)).sum::<i64>() as f64
                        }
                        _ => {
                            let f = a.as_any().downcast_ref::<Float64Array>().expect("f");
                            let mut acc = 0.0;
                            for &m in &valid {
                                acc += f.value(m);
                            }
                            acc
                        }
                    } / valid.len() as f64;
                    cell(&Float64Array::from(vec![mean]), 0)
                }
                FrameAggregate::Sum => match a.data_type() {
                    DataType::Int64 => {
                        let v = a.as_any().downcast_ref::<Int64Array>().expect("v");
                        valid.iter().map(|&m| v.value(m)).sum::<i64>().to_string()
                    }
                    _ => {
                        let f = a.as_any().downcast_ref::<Float64Array>().expect("f");
                        let mut acc = 0.0;
                        for &m in &valid {
                            acc += f.value(m);
                        }
                        cell(&Float64Array::from(vec![acc]), 0)
                    }
                },
                FrameAggregate::Min | FrameAggregate::Max => {
                    let key = |m: usize| key_of(b, col, m);
                    let mut best = valid[0];
                    for &m in &valid[1..] {
                        let o = cmp_keys(key(m), key(best), false, true);
                        if (agg == FrameAggregate::Max && o.is_gt())
                            || (agg == FrameAggregate::Min && o.is_lt())
                        {
                            best = m;
                        }
                    }
                    cell(a, best)
                }
            }
        })
        .collect()
}

fn run(
    b: &RecordBatch,
    c: &Case,
    agg: FrameAggregate,
    col: Option<&str>,
    batch: usize,
) -> Result<Vec<String>> {
    let schema = b.schema();
    let function = WindowFunction::Aggregate {
        agg,
        input: col.map(|c| expr(c, &schema)),
        frame: c.frame,
    };
    run_function(b, c, function, batch)
}

fn run_function(
    b: &RecordBatch,
    c: &Case,
    function: WindowFunction,
    batch: usize,
) -> Result<Vec<String>> {
    run_function_with(b, c, function, batch, true)
}

fn run_function_with(
    b: &RecordBatch,
    c: &Case,
    function: WindowFunction,
    batch: usize,
    exact_floats: bool,
) -> Result<Vec<String>> {
    let schema = b.schema();
    let key = expr(["p", "k", "o"][c.key], &schema);
    let spec = WindowSpec {
        partition_by: vec![expr("p", &schema)],
        order_by: vec![if c.desc {
            OrderKey::desc(key)
        } else {
            OrderKey::asc(key)
        }],
    };
    let call = WindowCall {
        name: "w".into(),
        function,
    };
    let mut exec = WindowExec::try_new(schema, spec, vec![call], batch, &MemoryPool::unbounded())?
        .with_exact_float_frames(exact_floats);
    for off in (0..b.num_rows()).step_by(batch) {
        exec.push(&b.slice(off, batch.min(b.num_rows() - off)))?;
    }
    exec.finish()?;
    let mut out = vec![String::new(); b.num_rows()];
    while let Some(o) = exec.pull()? {
        let t = o
            .column(3)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("t");
        for r in 0..o.num_rows() {
            out[t.value(r) as usize] = cell(o.column(6), r);
        }
    }
    Ok(out)
}

#[test]
fn frames_and_aggregates_match_a_naive_reference() -> Result<()> {
    use FrameBound::*;
    let int = |v: i64| FrameOffset::Int(v);
    let rows = |start, end| WindowFrame {
        unit: FrameUnit::Rows,
        start,
        end,
    };
    let range = |start, end| WindowFrame {
        unit: FrameUnit::Range,
        start,
        end,
    };
    let mut frames = vec![
        rows(UnboundedPreceding, CurrentRow),
        rows(UnboundedPreceding, UnboundedFollowing),
        rows(Preceding(int(2)), Following(int(1))),
        rows(CurrentRow, UnboundedFollowing),
        rows(Following(int(1)), Following(int(3))),
        rows(Preceding(int(3)), Preceding(int(1))),
        range(UnboundedPreceding, CurrentRow),
        range(CurrentRow, CurrentRow),
        range(CurrentRow, UnboundedFollowing),
    ];
    let value_frames = [
        range(Preceding(int(2)), Following(int(1))),
        range(UnboundedPreceding, Preceding(int(1))),
        range(Following(int(1)), UnboundedFollowing),
        range(Preceding(int(3)), CurrentRow),
    ];
    let b = data(3, 90);
    for (key, desc) in [(1, false), (1, true), (2, false), (2, true)] {
        let mut all = frames.clone();
        all.extend(value_frames.iter().copied());
        if key == 2 {
            all.push(range(
                Preceding(FrameOffset::Float(1.5)),
                Following(FrameOffset::Float(0.5)),
            ));
        }
        for frame in &all {
            let c = Case {
                frame: *frame,
                key,
                desc,
            };
            for (agg, col) in [
                (FrameAggregate::Count, None),
                (FrameAggregate::Count, Some(4)),
                (FrameAggregate::Sum, Some(4)),
                (FrameAggregate::Sum, Some(5)),
                (FrameAggregate::Min, Some(5)),
                (FrameAggregate::Max, Some(5)),
                (FrameAggregate::Min, Some(4)),
                (FrameAggregate::Max, Some(4)),
                (FrameAggregate::Avg, Some(4)),
                (FrameAggregate::Avg, Some(5)),
                (FrameAggregate::VarSamp, Some(5)),
                (FrameAggregate::StddevPop, Some(4)),
                (FrameAggregate::CollectList, Some(5)),
                (FrameAggregate::CollectSet, Some(4)),
                (FrameAggregate::CollectSet, Some(5)),
            ] {
                let want = naive(&b, &c, agg, col);
                for batch in [1, 7, 8192] {
                    let name = col.map(|c| ["p", "k", "o", "t", "v", "f"][c]);
                    let got = run(&b, &c, agg, name, batch)?;
                    assert_eq!(
                        got,
                        want,
                        "{}({name:?}) {} key {key} desc {desc} batch {batch}",
                        agg.name(),
                        frame.text()
                    );
                }
            }
        }
    }
    frames.clear();
    Ok(())
}

/// The naive `nth` row (from 1, from the end when `from_end`) of each row's frame.
fn naive_nth(
    b: &RecordBatch,
    c: &Case,
    col: usize,
    nth: usize,
    from_end: bool,
    ignore_nulls: bool,
) -> Vec<String> {
    let n = b.num_rows();
    let a = b.column(col);
    (0..n)
        .map(|r| {
            let (members, pos) = sorted_partition(b, c, r);
            let (lo, hi) = naive_frame(b, &members, pos, c);
            let rows: Vec<usize> = members[lo..hi]
                .iter()
                .copied()
                .filter(|&m| !ignore_nulls || a.is_valid(m))
                .collect();
            if rows.len() < nth {
                return "NULL".into();
            }
            let m = if from_end {
                rows[rows.len() - nth]
            } else {
                rows[nth - 1]
            };
            cell(a, m)
        })
        .collect()
}

#[test]
fn nth_first_and_last_values_match_a_naive_reference() -> Result<()> {
    use FrameBound::*;
    let int = |v: i64| FrameOffset::Int(v);
    let frames = [
        WindowFrame {
            unit: FrameUnit::Range,
            start: UnboundedPreceding,
            end: CurrentRow,
        },
        WindowFrame {
            unit: FrameUnit::Rows,
            start: Preceding(int(2)),
            end: Following(int(2)),
        },
        WindowFrame {
            unit: FrameUnit::Range,
            start: Preceding(int(1)),
            end: UnboundedFollowing,
        },
    ];
    let b = data(8, 80);
    let schema = b.schema();
    for frame in frames {
        for (key, desc) in [(1, false), (2, true)] {
            let c = Case { frame, key, desc };
            for (nth, from_end, ignore_nulls) in [
                (1, false, false),
                (2, false, true),
                (3, false, false),
                (1, true, false),
                (1, true, true),
            ] {
                let want = naive_nth(&b, &c, 4, nth, from_end, ignore_nulls);
                for batch in [1, 7, 8192] {
                    let f = WindowFunction::Nth {
                        input: expr("v", &schema),
                        n: nth as i64,
                        from_end,
                        ignore_nulls,
                        frame,
                    };
                    let got = run_function(&b, &c, f, batch)?;
                    assert_eq!(
                        got,
                        want,
                        "nth {nth} from_end {from_end} ignore_nulls {ignore_nulls} {} key {key}",
                        frame.text()
                    );
                }
            }
        }
    }
    Ok(())
}

#[test]
fn frames_spark_refuses_are_analysis_errors() {
    use FrameBound::*;
    let b = data(1, 4);
    let schema = b.schema();
    let bad = |frame: WindowFrame, order: Vec<OrderKey>| {
        WindowExec::try_new(
            schema.clone(),
            WindowSpec {
                partition_by: vec![],
                order_by: order,
            },
            vec![WindowCall {
                name: "w".into(),
                function: WindowFunction::Aggregate {
                    agg: FrameAggregate::Sum,
                    input: Some(expr("v", &schema)),
                    frame,
                },
            }],
            8,
            &MemoryPool::unbounded(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
    };
    let k = || OrderKey::asc(expr("k", &schema));
    let f = |start, end| WindowFrame {
        unit: FrameUnit::Rows,
        start,
        end,
    };
    let r = |start, end| WindowFrame {
        unit: FrameUnit::Range,
        start,
        end,
    };
    let one = FrameOffset::Int(1);
    assert!(bad(f(Following(one), Preceding(one)), vec![k()])
        .contains("SPECIFIED_WINDOW_FRAME_WRONG_COMPARISON"));
    assert!(bad(f(UnboundedFollowing, CurrentRow), vec![k()])
        .contains("SPECIFIED_WINDOW_FRAME_INVALID_BOUND"));
    assert!(bad(r(Preceding(one), CurrentRow), vec![k(), k()]).contains("RANGE_FRAME_MULTI_ORDER"));
    assert!(bad(r(Preceding(one), CurrentRow), vec![]).contains("RANGE_FRAME_WITHOUT_ORDER"));
    let s = OrderKey::asc(expr("cast(k as string)", &schema));
    assert!(bad(r(Preceding(one), CurrentRow), vec![s]).contains("RANGE_FRAME_INVALID_TYPE"));
    // Intervals move dates and timestamps, not numbers; a DATE moves by whole days only.
    let interval = |months, days, micros| FrameOffset::Interval {
        months,
        days,
        micros,
    };
    assert!(bad(r(Preceding(interval(1, 0, 0)), CurrentRow), vec![k()])
        .contains("RANGE_FRAME_INVALID_TYPE"));
    let d = OrderKey::asc(expr("date_add(date'2020-01-01', k)", &schema));
    assert!(bad(r(Preceding(interval(0, 0, 5)), CurrentRow), vec![d])
        .contains("RANGE_FRAME_INVALID_TYPE"));
    // A timestamp moves by intervals, not numbers.
    let t = OrderKey::asc(expr("timestamp_seconds(k)", &schema));
    assert!(bad(r(Preceding(one), CurrentRow), vec![t]).contains("RANGE_FRAME_INVALID_TYPE"));
    // A ROWS frame counts whole rows.
    assert!(
        bad(f(Preceding(FrameOffset::Float(1.5)), CurrentRow), vec![k()])
            .contains("SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE")
    );
}

/// RANGE frames over DATE and TIMESTAMP keys moved by intervals, against a row-by-row
/// reference: months land on the same day (or the month's last), in the session zone for
/// timestamps (across a DST change), and descending keys move the other way.
#[test]
fn interval_range_frames_match_a_naive_reference() -> Result<()> {
    use ferrospark_expr::functions::datetime::{add_months, date_of, days_of};
    use FrameBound::*;
    let days: Vec<Option<i32>> = [
        Some(18_290), // 2020-01-30
        Some(18_291),
        Some(18_321), // 2020-02-29
        Some(18_322),
        Some(18_350),
        None,
        Some(18_351),
        Some(18_380),
    ]
    .to_vec();
    let n = days.len();
    for descending in [false, true] {
        let (mut lo, mut hi) = (vec![0u32; n], vec![0u32; n]);
        let frame = WindowFrame {
            unit: FrameUnit::Range,
            start: CurrentRow,
            end: Following(FrameOffset::Interval {
                months: 1,
                days: 0,
                micros: 0,
            }),
        };
        // Rows sorted by the key, NULL first.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| days[i].map(|d| if descending { -d } else { d }));
        let sorted: Vec<Option<i32>> = order.iter().map(|&i| days[i]).collect();
        let sorted_keys: ArrayRef = Arc::new(arrow_array::Date32Array::from(sorted.clone()));
        let k2 = crate::frame::RangeKeys::new(&sorted_keys, descending)?;
        let peers: Vec<u32> = (0..n as u32).collect();
        let peer_end: Vec<u32> = (1..=n as u32).collect();
        crate::frame::frame_bounds(
            &frame,
            (0, n),
            &peers,
            &peer_end,
            Some(&k2),
            &mut lo,
            &mut hi,
        );
        for i in 0..n {
            let Some(d) = sorted[i] else { continue };
            let step = if descending { -1 } else { 1 };
            let limit = days_of(add_months(date_of(d).expect("date"), step).expect("month"));
            let expected: Vec<usize> = (0..n)
                .filter(|&j| match sorted[j] {
                    Some(v) if descending => v <= d && v >= limit,
                    Some(v) => v >= d && v <= limit,
                    None => false,
                })
                .collect();
            let got: Vec<usize> = (lo[i] as usize..hi[i] as usize).collect();
            assert_eq!(got, expected, "row {i} (day {d}), descending {descending}");
        }
    }
    Ok(())
}

/// Sums and means of doubles that add up exactly (quarters, -0.0, NULLs) take the prefix-sum
/// path on sliding frames; they must equal the row-by-row sums Spark computes.
#[test]
fn exactly_summable_doubles_match_a_naive_reference() -> Result<()> {
    use FrameBound::*;
    let b = data(7, 120);
    let v = b
        .column(4)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("v");
    let quarters: Float64Array = (0..b.num_rows())
        .map(|r| match r % 17 {
            0 => Some(-0.0),
            _ => v.is_valid(r).then(|| v.value(r) as f64 / 4.0),
        })
        .collect();
    let mut columns = b.columns().to_vec();
    columns[5] = Arc::new(quarters);
    let b = RecordBatch::try_new(b.schema(), columns)?;
    let frames = [
        WindowFrame {
            unit: FrameUnit::Rows,
            start: Preceding(FrameOffset::Int(3)),
            end: Following(FrameOffset::Int(2)),
        },
        WindowFrame {
            unit: FrameUnit::Rows,
            start: CurrentRow,
            end: UnboundedFollowing,
        },
        WindowFrame {
            unit: FrameUnit::Range,
            start: Preceding(FrameOffset::Int(2)),
            end: CurrentRow,
        },
    ];
    for frame in frames {
        let c = Case {
            frame,
            key: 1,
            desc: false,
        };
        for agg in [FrameAggregate::Sum, FrameAggregate::Avg] {
            let want = naive(&b, &c, agg, Some(5));
            for batch in [1, 7, 8192] {
                assert_eq!(
                    run(&b, &c, agg, Some("f"), batch)?,
                    want,
                    "{}",
                    frame.text()
                );
            }
        }
    }
    Ok(())
}

/// Percentiles through the rank counts against sorting each frame's values (NaN last, -0.0
/// before 0.0) and interpolating as Spark's `getPercentile`.
#[test]
fn percentiles_match_sorting_each_frame() -> Result<()> {
    use FrameBound::*;
    let b = data(9, 150);
    let f = b
        .column(5)
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("f");
    let percentages = vec![0.0, 0.3, 0.5, 1.0];
    let key = |v: f64| {
        let v = if v.is_nan() { f64::NAN } else { v };
        let bits = if v == 0.0 { 0 } else { v.to_bits() as i64 };
        (
            bits ^ ((((bits >> 63) as u64) >> 1) as i64),
            v == 0.0 && v.is_sign_positive(),
        )
    };
    for frame in [
        WindowFrame::default_for(true),
        WindowFrame {
            unit: FrameUnit::Rows,
            start: Preceding(FrameOffset::Int(4)),
            end: Following(FrameOffset::Int(2)),
        },
        WindowFrame {
            unit: FrameUnit::Range,
            start: Following(FrameOffset::Int(1)),
            end: UnboundedFollowing,
        },
    ] {
        let c = Case {
            frame,
            key: 1,
            desc: true,
        };
        let want: Vec<String> = (0..b.num_rows())
            .map(|r| {
                let (members, pos) = sorted_partition(&b, &c, r);
                let (lo, hi) = naive_frame(&b, &members, pos, &c);
                let mut v: Vec<f64> = members[lo..hi]
                    .iter()
                    .filter(|&&m| f.is_valid(m))
                    .map(|&m| f.value(m))
                    .collect();
                if v.is_empty() {
                    return "NULL".into();
                }
                v.sort_by_key(|&x| key(x));
                let items: Vec<String> = percentages
                    .iter()
                    .map(|p| {
                        let at = (v.len() - 1) as f64 * p;
                        let (l, h) = (at.floor(), at.ceil());
                        let (a, bb) = (v[l as usize], v[h as usize]);
                        let x =
                            if l == h || a.to_bits() == bb.to_bits() || (a.is_nan() && bb.is_nan())
                            {
                                a
                            } else {
                                a + (at - l) * (bb - a)
                            };
                        cell(&Float64Array::from(vec![x]), 0)
                    })
                    .collect();
                format!("[{}]", items.join(", "))
            })
            .collect();
        let schema = b.schema();
        for batch in [1, 7, 8192] {
            let function = WindowFunction::Percentile {
                input: expr("f", &schema),
                percentages: percentages.clone(),
                as_array: true,
                kind: Default::default(),
                frame,
            };
            assert_eq!(
                run_function(&b, &c, function, batch)?,
                want,
                "{}",
                frame.text()
            );
        }
    }
    Ok(())
}

/// `ferrospark.window.exactFloatFrames=false`: sums, means and the variance family of doubles
/// on sliding and shrinking frames from one running buffer equal the exact ones up to
/// rounding, with NaN, infinities, -0.0 and NULLs in the data.
#[test]
fn running_float_frames_equal_the_exact_ones_up_to_rounding() -> Result<()> {
    use FrameBound::*;
    let mut b = data(11, 300);
    // Infinities among the doubles too.
    let f = b
        .column(5)
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("f");
    let with_inf: Float64Array = (0..f.len())
        .map(|r| match r % 53 {
            7 => Some(f64::INFINITY),
            19 => Some(f64::NEG_INFINITY),
            _ => f.is_valid(r).then(|| f.value(r)),
        })
        .collect();
    let mut columns = b.columns().to_vec();
    columns[5] = Arc::new(with_inf);
    b = RecordBatch::try_new(b.schema(), columns)?;
    let frames = [
        WindowFrame {
            unit: FrameUnit::Rows,
            start: Preceding(FrameOffset::Int(4)),
            end: Following(FrameOffset::Int(3)),
        },
        WindowFrame {
            unit: FrameUnit::Rows,
            start: CurrentRow,
            end: UnboundedFollowing,
        },
        WindowFrame {
            unit: FrameUnit::Range,
            start: Preceding(FrameOffset::Int(1)),
            end: Following(FrameOffset::Int(2)),
        },
    ];
    let close = |a: &str, e: &str| -> bool {
        match (a.parse::<f64>(), e.parse::<f64>()) {
            (Ok(x), Ok(y)) if x.is_nan() || y.is_nan() => x.is_nan() && y.is_nan(),
            (Ok(x), Ok(y)) if x.is_infinite() || y.is_infinite() => x == y,
            (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
            _ => a == e,
        }
    };
    for frame in frames {
        let c = Case {
            frame,
            key: 1,
            desc: false,
        };
        for agg in [
            FrameAggregate::Sum,
            FrameAggregate::Avg,
            FrameAggregate::VarSamp,
            FrameAggregate::StddevPop,
        ] {
            let function = WindowFunction::Aggregate {
                agg,
                input: Some(expr("f", &b.schema())),
                frame,
            };
            let exact = run_function_with(&b, &c, function.clone(), 7, true)?;
            let running = run_function_with(&b, &c, function, 7, false)?;
            for (r, (a, e)) in running.iter().zip(&exact).enumerate() {
                assert!(
                    close(a, e),
                    "{} {} row {r}: {a} vs {e}",
                    agg.name(),
                    frame.text()
                );
            }
        }
    }
    Ok(())
}
