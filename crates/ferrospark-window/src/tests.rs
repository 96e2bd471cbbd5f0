//! Every function against a naive per-row reference: NULL, NaN and -0.0 partition and order
//! keys, ties, one-row and empty partitions, ascending and descending orders, batch sizes 1, 7
//! and 8192.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{MemoryPool, Result};
use ferrospark_expr::{bind, parse_expr, BindContext, PhysicalExpr};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::{OrderKey, WindowCall, WindowExec, WindowFunction, WindowSpec};

fn data(seed: u64, n: usize) -> RecordBatch {
    let mut rng = StdRng::seed_from_u64(seed);
    let p: Int32Array = (0..n)
        .map(|_| match rng.random_range(0..8) {
            0 => None,
            k => Some(k % 4),
        })
        .collect();
    let o: Float64Array = (0..n)
        .map(|_| match rng.random_range(0..9) {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-0.0),
            3 => Some(0.0),
            k => Some((k % 4) as f64),
        })
        .collect();
    let v: Int64Array = (0..n)
        .map(|i| (rng.random_range(0..4) > 0).then_some(i as i64))
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("p", DataType::Int32, true),
            Field::new("o", DataType::Float64, true),
            Field::new("v", DataType::Int64, true),
        ])),
        vec![Arc::new(p) as ArrayRef, Arc::new(o), Arc::new(v)],
    )
    .expect("batch")
}

pub(crate) fn expr(text: &str, schema: &Schema) -> PhysicalExpr {
    bind(
        &parse_expr(text).expect("parses"),
        &BindContext::new(schema),
    )
    .expect("binds")
}

pub(crate) fn cell(a: &dyn Array, r: usize) -> String {
    let opts = FormatOptions::default().with_null("NULL");
    ArrayFormatter::try_new(a, &opts)
        .expect("fmt")
        .value(r)
        .to_string()
}

/// Partition key of row `r` as Spark groups it (NULL, one NaN, -0.0 = 0.0).
fn part_of(b: &RecordBatch, r: usize) -> Option<i32> {
    let p = b
        .column(0)
        .as_any()
        .downcast_ref::<Int32Array>()
        .expect("p");
    p.is_valid(r).then(|| p.value(r))
}

/// Order key comparison as Spark sorts: NULLs per `nulls_first`, NaN largest, -0.0 = 0.0.
fn cmp_order(b: &RecordBatch, x: usize, y: usize, desc: bool, nulls_first: bool) -> Ordering {
    let o = b
        .column(1)
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("o");
    match (o.is_valid(x), o.is_valid(y)) {
        (false, false) => Ordering::Equal,
        (false, true) => {
            if nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (true, false) => {
            if nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (true, true) => {
            let norm = |v: f64| if v == 0.0 { 0.0 } else { v };
            let (a, c) = (norm(o.value(x)), norm(o.value(y)));
            let ord = match (a.is_nan(), c.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => a.partial_cmp(&c).unwrap_or(Ordering::Equal),
            };
            if desc {
                ord.reverse()
            } else {
                ord
            }
        }
    }
}

/// The naive value of `f` for every row, as text, keyed by the row's input index.
fn reference(b: &RecordBatch, f: &WindowFunction, desc: bool, ordered: bool) -> Vec<String> {
    let n = b.num_rows();
    let nulls_first = !desc;
    let v = b
        .column(2)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("v");
    (0..n)
        .map(|r| {
            let mut members: Vec<usize> =
                (0..n).filter(|&m| part_of(b, m) == part_of(b, r)).collect();
            if ordered {
                members.sort_by(|&x, &y| cmp_order(b, x, y, desc, nulls_first).then(x.cmp(&y)));
            }
            let cmp = |x: usize, y: usize| {
                if ordered {
                    cmp_order(b, x, y, desc, nulls_first)
                } else {
                    Ordering::Equal
                }
            };
            let size = members.len();
            let pos = members.iter().position(|&m| m == r).expect("member");
            let before = members
                .iter()
                .filter(|&&m| cmp(m, r) == Ordering::Less)
                .count();
            let upto = members
                .iter()
                .filter(|&&m| cmp(m, r) != Ordering::Greater)
                .count();
            match f {
                WindowFunction::RowNumber => (pos + 1).to_string(),
                WindowFunction::Rank => (before + 1).to_string(),
                WindowFunction::DenseRank => {
                    let mut distinct: Vec<usize> = Vec::new();
                    for &m in &members[..pos + 1] {
                        if distinct
                            .last()
                            .is_none_or(|&d| cmp(d, m) != Ordering::Equal)
                        {
                            distinct.push(m);
                        }
                    }
                    distinct.len().to_string()
                }
                WindowFunction::PercentRank => {
                    let x = if size > 1 {
                        before as f64 / (size - 1) as f64
                    } else {
                        0.0
                    };
                    cell(&Float64Array::from(vec![x]), 0)
                }
                WindowFunction::CumeDist => {
                    cell(&Float64Array::from(vec![upto as f64 / size as f64]), 0)
                }
                WindowFunction::Ntile(k) => {
                    let k = *k as usize;
                    let mut sizes = vec![size / k; k];
                    for s in sizes.iter_mut().take(size % k) {
                        *s += 1;
                    }
                    let (mut bucket, mut seen) = (0, 0);
                    while seen + sizes[bucket] <= pos {
                        seen += sizes[bucket];
                        bucket += 1;
                    }
                    (bucket + 1).to_string()
                }
                WindowFunction::Aggregate { .. }
                | WindowFunction::Percentile { .. }
                | WindowFunction::ApproxCountDistinct { .. }
                | WindowFunction::Nth { .. }
                | WindowFunction::Session { .. }
                | WindowFunction::CounterDiff { .. } => {
                    unreachable!("frames are tested in tests_frames, counter_diff beside it")
                }
                WindowFunction::Offset {
                    lead,
                    offset,
                    default,
                    ignore_nulls,
                    ..
                } => {
                    let delta = if *lead { *offset } else { -*offset };
                    let pool: Vec<usize> = if *ignore_nulls {
                        members.iter().copied().filter(|&m| v.is_valid(m)).collect()
                    } else {
                        members.clone()
                    };
                    // Where the row would sit among `pool`: its index, or where it would go.
                    let here = pool.iter().position(|&m| m == r);
                    let target = match (here, delta.signum()) {
                        (Some(h), _) => Some(h as i64 + delta),
                        (None, 0) => None,
                        (None, s) => {
                            let ahead = pool
                                .iter()
                                .filter(|&&m| members.iter().position(|&x| x == m) < Some(pos))
                                .count() as i64;
                            Some(if s < 0 {
                                ahead + delta
                            } else {
                                ahead + delta - 1
                            })
                        }
                    };
                    match target.filter(|t| (0..pool.len() as i64).contains(t)) {
                        Some(t) => cell(v, pool[t as usize]),
                        None => match default {
                            Some(_) => "-1".into(),
                            None => "NULL".into(),
                        },
                    }
                }
            }
        })
        .collect()
}

fn run(
    b: &RecordBatch,
    f: &WindowFunction,
    desc: bool,
    ordered: bool,
    batch: usize,
) -> Result<Vec<String>> {
    let schema = b.schema();
    let order_by = if !ordered {
        vec![]
    } else if desc {
        vec![OrderKey::desc(expr("o", &schema))]
    } else {
        vec![OrderKey::asc(expr("o", &schema))]
    };
    let spec = WindowSpec {
        partition_by: vec![expr("p", &schema)],
        order_by,
    };
    let call = WindowCall {
        name: f.spark_name(),
        function: f.clone(),
    };
    let mut exec = WindowExec::try_new(schema, spec, vec![call], batch, &MemoryPool::unbounded())?;
    for off in (0..b.num_rows()).step_by(batch) {
        exec.push(&b.slice(off, batch.min(b.num_rows() - off)))?;
    }
    exec.finish()?;
    let mut out = vec![String::new(); b.num_rows()];
    while let Some(o) = exec.pull()? {
        assert!(o.num_rows() <= batch);
        for r in 0..o.num_rows() {
            out.push(format!(
                "{}|{}|{}|{}",
                cell(o.column(0), r),
                cell(o.column(1), r),
                cell(o.column(2), r),
                cell(o.column(3), r)
            ));
        }
    }
    out.retain(|s| !s.is_empty());
    out.sort();
    Ok(out)
}

fn expected(b: &RecordBatch, f: &WindowFunction, desc: bool, ordered: bool) -> Vec<String> {
    let values = reference(b, f, desc, ordered);
    let mut out: Vec<String> = (0..b.num_rows())
        .map(|r| {
            format!(
                "{}|{}|{}|{}",
                cell(b.column(0), r),
                cell(b.column(1), r),
                cell(b.column(2), r),
                values[r]
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_function_matches_a_naive_reference() -> Result<()> {
    for (seed, n) in [(1, 120), (2, 1), (3, 0), (4, 40)] {
        let b = data(seed, n);
        let schema = b.schema();
        let v = || expr("v", &schema);
        let mut functions = vec![
            WindowFunction::RowNumber,
            WindowFunction::Rank,
            WindowFunction::DenseRank,
            WindowFunction::PercentRank,
            WindowFunction::CumeDist,
            WindowFunction::Ntile(1),
            WindowFunction::Ntile(3),
            WindowFunction::Ntile(50),
        ];
        for (lead, offset, default, ignore_nulls) in [
            (false, 1, false, false),
            (true, 2, true, false),
            (false, -1, false, false),
            (true, 0, false, false),
            (false, 2, true, true),
            (true, 1, false, true),
            (false, 0, false, true),
        ] {
            functions.push(WindowFunction::Offset {
                lead,
                input: v(),
                offset,
                default: default.then(|| expr("-1", &schema)),
                ignore_nulls,
            });
        }
        for f in &functions {
            for (desc, ordered) in [(false, true), (true, true), (false, false)] {
                // Without ORDER BY only order-free answers are defined.
                if !ordered
                    && !matches!(
                        f,
                        WindowFunction::Rank
                            | WindowFunction::DenseRank
                            | WindowFunction::PercentRank
                            | WindowFunction::CumeDist
                    )
                {
                    continue;
                }
                let want = expected(&b, f, desc, ordered);
                for batch in [1, 7, 8192] {
                    let got = run(&b, f, desc, ordered, batch)?;
                    assert_eq!(
                        got,
                        want,
                        "{} desc {desc} ordered {ordered} batch {batch} seed {seed}",
                        f.spark_name()
                    );
                }
            }
        }
    }
    Ok(())
}

#[test]
fn bad_arguments_are_analysis_errors() {
    let b = data(1, 3);
    let schema = b.schema();
    let err = WindowExec::try_new(
        schema,
        WindowSpec::default(),
        vec![WindowCall {
            name: "ntile(0)".into(),
            function: WindowFunction::Ntile(0),
        }],
        8,
        &MemoryPool::unbounded(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("positive"), "{err}");
}

/// Session starts and ends against a naive merge: each row opens `[t, t + gap)` with its own
/// gap, a row whose time is at most the open session's end joins it.
#[test]
fn sessions_match_a_naive_merge() -> Result<()> {
    use arrow_array::TimestampMicrosecondArray;
    let mut rng = StdRng::seed_from_u64(21);
    let n = 200;
    let p: Int32Array = (0..n).map(|_| Some(rng.random_range(0..4))).collect();
    let t: TimestampMicrosecondArray = (0..n).map(|_| Some(rng.random_range(0..30) * 5)).collect();
    let gaps: Vec<i64> = (0..n).map(|_| rng.random_range(1..15)).collect();
    let u: TimestampMicrosecondArray = (0..n).map(|r| Some(t.value(r) + gaps[r])).collect();
    let ts_field = |name: &str| {
        Field::new(
            name,
            DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
            false,
        )
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("p", DataType::Int32, true),
        ts_field("t"),
        ts_field("u"),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(p.clone()) as ArrayRef,
            Arc::new(t.clone()),
            Arc::new(u.clone()),
        ],
    )?;
    let spec = WindowSpec {
        partition_by: vec![expr("p", &schema)],
        order_by: vec![OrderKey::asc(expr("t", &schema))],
    };
    let call = |end: bool| WindowCall {
        name: if end { "e".into() } else { "s".into() },
        function: WindowFunction::Session {
            start: expr("t", &schema),
            stop: expr("u", &schema),
            end,
        },
    };
    let mut exec = WindowExec::try_new(
        schema.clone(),
        spec,
        vec![call(false), call(true)],
        7,
        &MemoryPool::unbounded(),
    )?;
    exec.push(&b)?;
    exec.finish()?;
    let mut got = Vec::new();
    while let Some(o) = exec.pull()? {
        for r in 0..o.num_rows() {
            got.push(
                [0, 1, 3, 4]
                    .iter()
                    .map(|&c| cell(o.column(c), r))
                    .collect::<Vec<_>>()
                    .join("|"),
            );
        }
    }
    got.sort();
    // Naive: per key, sorted times, merged while the next start is at most the end.
    let mut want = Vec::new();
    for key in 0..4 {
        let mut times: Vec<(i64, i64)> = (0..n)
            .filter(|&r| p.value(r) == key)
            .map(|r| (t.value(r), u.value(r)))
            .collect();
        times.sort();
        let mut i = 0;
        while i < times.len() {
            let (s, mut e, mut j) = (times[i].0, times[i].1, i + 1);
            while j < times.len() && times[j].0 <= e {
                e = e.max(times[j].1);
                j += 1;
            }
            for &(x, _) in &times[i..j] {
                let ts = |v: i64| cell(&TimestampMicrosecondArray::from(vec![v]), 0);
                want.push(format!("{key}|{}|{}|{}", ts(x), ts(s), ts(e)));
            }
            i = j;
        }
    }
    want.sort();
    assert_eq!(got, want);
    Ok(())
}
