//! Criterion benches of the aggregation paths: one primitive key (low and high cardinality),
//! string keys, several keys on the row format, object buffers, and the spill + merge path.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, criterion_main, Criterion};
use ferrospark_agg::{AggregateCall, AggregatePlan};
use ferrospark_common::Config;
use ferrospark_expr::{parse_expr, Expr};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ROWS: usize = 1_000_000;
const BATCH: usize = 8192;

fn input(groups: i64) -> (SchemaRef, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("x", DataType::Float64, true),
    ]));
    let mut rng = StdRng::seed_from_u64(42);
    let mut out = Vec::new();
    let mut done = 0;
    while done < ROWS {
        let n = BATCH.min(ROWS - done);
        let k: Int64Array = (0..n).map(|_| Some(rng.random_range(0..groups))).collect();
        let s: StringArray = k
            .values()
            .iter()
            .map(|v| Some(format!("key-{}", v % 7)))
            .collect();
        let x: Float64Array = (0..n).map(|_| Some(rng.random_range(0.0..100.0))).collect();
        out.push(
            RecordBatch::try_new(schema.clone(), vec![Arc::new(k), Arc::new(s), Arc::new(x)])
                .expect("batch"),
        );
        done += n;
    }
    (schema, out)
}

fn calls(texts: &[(&str, &str)]) -> Vec<AggregateCall> {
    texts
        .iter()
        .map(|(f, a)| {
            let args = if a.is_empty() {
                vec![]
            } else {
                vec![parse_expr(a).expect("arg")]
            };
            AggregateCall::new(f, args)
        })
        .collect()
}

fn bench_case(
    c: &mut Criterion,
    name: &str,
    groups: i64,
    by: &[&str],
    aggs: &[(&str, &str)],
    cfg: Config,
) {
    let (schema, batches) = input(groups);
    let by: Vec<Expr> = by.iter().map(|b| parse_expr(b).expect("key")).collect();
    let plan = AggregatePlan::new(&schema, &by, &calls(aggs), &cfg).expect("plan");
    c.bench_function(name, |b| {
        b.iter(|| {
            let input = batches.iter().cloned().map(Ok);
            plan.run_complete(input, &cfg).expect("run")
        })
    });
}

fn benches(c: &mut Criterion) {
    let sums = &[("sum", "x"), ("count", ""), ("avg", "x")];
    bench_case(c, "agg/int-key/10-groups", 10, &["k"], sums, Config::new());
    bench_case(
        c,
        "agg/int-key/500k-groups",
        500_000,
        &["k"],
        sums,
        Config::new(),
    );
    bench_case(
        c,
        "agg/string-key/7-groups",
        10,
        &["s"],
        sums,
        Config::new(),
    );
    bench_case(
        c,
        "agg/two-keys-rows/70-groups",
        10,
        &["k", "s"],
        sums,
        Config::new(),
    );
    let lists = &[("collect_set", "s"), ("collect_list", "x")];
    let no_fallback = Config::from_pairs([(
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
        "100000000",
    )])
    .expect("config");
    bench_case(
        c,
        "agg/collect/10k-groups",
        10_000,
        &["k"],
        lists,
        no_fallback,
    );
    bench_case(
        c,
        "agg/collect/10k-groups-sort-fallback",
        10_000,
        &["k"],
        lists,
        Config::new(),
    );
    let limited = Config::from_pairs([("ferrospark.memory.limit", "8m")]).expect("config");
    bench_case(
        c,
        "agg/int-key/500k-groups-spilling",
        500_000,
        &["k"],
        sums,
        limited,
    );
}

fn configured() -> Criterion {
    Criterion::default().sample_size(10)
}

criterion_group! {
    name = aggregate;
    config = configured();
    targets = benches
}
criterion_main!(aggregate);
