//! Criterion benches of the window operator on 1M rows in 1,000 partitions (shuffled): the
//! ranking / running-sum pass, sliding ROWS frames over doubles (added row by row, as Spark)
//! and over exactly summable values (prefix sums), a RANGE minimum over a timestamp key, a
//! sliding percentile, session bounds, and the spill path under a memory limit.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch, TimestampMicrosecondArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use criterion::{criterion_group, criterion_main, Criterion};
use ferrospark_common::MemoryPool;
use ferrospark_expr::{bind, parse_expr, BindContext, PhysicalExpr};
use ferrospark_window::{
    FrameAggregate, FrameBound, FrameOffset, FrameUnit, OrderKey, WindowCall, WindowExec,
    WindowFrame, WindowFunction, WindowSpec,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ROWS: usize = 1_000_000;
const BATCH: usize = 8192;

/// `(p, t, ts, x, q, e)`: partition, unique tie-breaker, timestamp (whole minutes), a double,
/// a quarter-valued double, and each row's span end (`ts` + 1..30 minutes).
fn input() -> (SchemaRef, Vec<RecordBatch>) {
    let minute = 60_000_000i64;
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("p", DataType::Int64, false),
        Field::new("t", DataType::Int64, false),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            false,
        ),
        Field::new("x", DataType::Float64, false),
        Field::new("q", DataType::Float64, false),
        Field::new("e", DataType::Timestamp(TimeUnit::Microsecond, None), false),
    ]));
    let mut rng = StdRng::seed_from_u64(3);
    let batches = (0..ROWS)
        .step_by(BATCH)
        .map(|at| {
            let n = BATCH.min(ROWS - at);
            let p: Int64Array = (0..n).map(|_| Some(rng.random_range(0..1000))).collect();
            let t: Int64Array = (at as i64..(at + n) as i64).map(Some).collect();
            let ts: Vec<i64> = (0..n)
                .map(|_| rng.random_range(0..100_000) * minute)
                .collect();
            let e: TimestampMicrosecondArray = ts
                .iter()
                .map(|&v| Some(v + rng.random_range(1..30) * minute))
                .collect();
            let x: Float64Array = (0..n).map(|_| Some(rng.random::<f64>() * 100.0)).collect();
            let q: Float64Array = (0..n)
                .map(|_| Some(rng.random_range(0..400) as f64 / 4.0))
                .collect();
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(p),
                    Arc::new(t),
                    Arc::new(TimestampMicrosecondArray::from(ts)),
                    Arc::new(x),
                    Arc::new(q),
                    Arc::new(e),
                ],
            )
            .expect("batch")
        })
        .collect();
    (schema, batches)
}

fn expr(text: &str, schema: &Schema) -> PhysicalExpr {
    bind(
        &parse_expr(text).expect("parses"),
        &BindContext::new(schema),
    )
    .expect("binds")
}

fn rows(before: i64, after: i64) -> WindowFrame {
    WindowFrame {
        unit: FrameUnit::Rows,
        start: FrameBound::Preceding(FrameOffset::Int(before)),
        end: FrameBound::Following(FrameOffset::Int(after)),
    }
}

fn run(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    order: &[&str],
    functions: Vec<WindowFunction>,
    limit: Option<u64>,
) -> usize {
    run_with(schema, batches, order, functions, limit, true)
}

fn run_with(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    order: &[&str],
    functions: Vec<WindowFunction>,
    limit: Option<u64>,
    exact_floats: bool,
) -> usize {
    let spec = WindowSpec {
        partition_by: vec![expr("p", schema)],
        order_by: order
            .iter()
            .map(|o| OrderKey::asc(expr(o, schema)))
            .collect(),
    };
    let calls = functions
        .into_iter()
        .enumerate()
        .map(|(i, function)| WindowCall {
            name: format!("w{i}"),
            function,
        })
        .collect();
    let pool = MemoryPool::new(limit);
    let mut exec = WindowExec::try_new(schema.clone(), spec, calls, BATCH, &pool)
        .expect("window")
        .with_exact_float_frames(exact_floats);
    for b in batches {
        exec.push(b).expect("push");
    }
    exec.finish().expect("finish");
    let mut rows = 0;
    while let Some(b) = exec.pull().expect("pull") {
        rows += b.num_rows();
    }
    rows
}

fn benches(c: &mut Criterion) {
    let (schema, batches) = input();
    let s = &schema;
    let mut g = c.benchmark_group("window_1m_rows_1000_partitions");
    g.sample_size(10);
    let agg = |agg, col: &str, frame| WindowFunction::Aggregate {
        agg,
        input: Some(expr(col, s)),
        frame,
    };
    g.bench_function("row_number and running sum", |b| {
        b.iter(|| {
            let f = vec![
                WindowFunction::RowNumber,
                agg(FrameAggregate::Sum, "x", WindowFrame::default_for(true)),
            ];
            run(s, &batches, &["ts", "t"], f, None)
        })
    });
    g.bench_function("avg of doubles over rows ±100 (row by row)", |b| {
        b.iter(|| {
            run(
                s,
                &batches,
                &["ts", "t"],
                vec![agg(FrameAggregate::Avg, "x", rows(100, 100))],
                None,
            )
        })
    });
    g.bench_function("avg of quarters over rows ±100 (prefix sums)", |b| {
        b.iter(|| {
            run(
                s,
                &batches,
                &["ts", "t"],
                vec![agg(FrameAggregate::Avg, "q", rows(100, 100))],
                None,
            )
        })
    });
    g.bench_function(
        "stddev of doubles over rows ±100 (in Spark's order)",
        |b| {
            b.iter(|| {
                let f = vec![agg(FrameAggregate::StddevSamp, "x", rows(100, 100))];
                run(s, &batches, &["ts", "t"], f, None)
            })
        },
    );
    g.bench_function(
        "avg and stddev of doubles over rows ±100, running (opt-in O(n))",
        |b| {
            b.iter(|| {
                let f = vec![
                    agg(FrameAggregate::Avg, "x", rows(100, 100)),
                    agg(FrameAggregate::StddevSamp, "x", rows(100, 100)),
                ];
                run_with(s, &batches, &["ts", "t"], f, None, false)
            })
        },
    );
    g.bench_function("min over a 30-minute range", |b| {
        let frame = WindowFrame {
            unit: FrameUnit::Range,
            start: FrameBound::Preceding(FrameOffset::Interval {
                months: 0,
                days: 0,
                micros: 30 * 60_000_000,
            }),
            end: FrameBound::CurrentRow,
        };
        b.iter(|| {
            run(
                s,
                &batches,
                &["ts"],
                vec![agg(FrameAggregate::Min, "x", frame)],
                None,
            )
        })
    });
    g.bench_function("median over rows ±50", |b| {
        let f = WindowFunction::Percentile {
            input: expr("x", s),
            percentages: vec![0.5],
            as_array: false,
            kind: Default::default(),
            frame: rows(50, 50),
        };
        b.iter(|| run(s, &batches, &["ts", "t"], vec![f.clone()], None))
    });
    g.bench_function("session bounds", |b| {
        let session = |end| WindowFunction::Session {
            start: expr("ts", s),
            stop: expr("e", s),
            end,
        };
        b.iter(|| {
            run(
                s,
                &batches,
                &["ts"],
                vec![session(false), session(true)],
                None,
            )
        })
    });
    g.bench_function("row_number spilling under 8 MB", |b| {
        b.iter(|| {
            run(
                s,
                &batches,
                &["ts", "t"],
                vec![WindowFunction::RowNumber],
                Some(8 << 20),
            )
        })
    });
    g.finish();
}

criterion_group!(window_benches, benches);
criterion_main!(window_benches);
