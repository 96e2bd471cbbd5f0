//! Criterion benches of the join operator: a foreign-key join (1M probe rows, 250K build rows)
//! by hash, sort-merge and, on a smaller input, nested loop; one integer key (dense, and
//! sparse enough to be hashed) and two keys on the row format; clustered and shuffled probe
//! keys; a sort-merge join spilling under a memory limit.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, criterion_main, Criterion};
use ferrospark_common::MemoryPool;
use ferrospark_expr::{bind, parse_expr, BindContext, PhysicalExpr};
use ferrospark_join::{join_schema, BuildSide, JoinAlgorithm, JoinExec, JoinType};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const BATCH: usize = 8192;

/// `rows` rows of `(key, tag, value)`; keys `0..distinct` times `spread`, sorted when
/// `clustered`.
fn side(
    prefix: &str,
    rows: usize,
    distinct: i64,
    clustered: bool,
    seed: u64,
    spread: i64,
) -> Vec<RecordBatch> {
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new(format!("{prefix}k"), DataType::Int64, false),
        Field::new(format!("{prefix}t"), DataType::Utf8, false),
        Field::new(format!("{prefix}v"), DataType::Int64, false),
    ]));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys: Vec<i64> = (0..rows as i64)
        .map(|i| i * distinct / rows as i64 * spread)
        .collect();
    if !clustered {
        keys.shuffle(&mut rng);
    }
    keys.chunks(BATCH)
        .map(|k| {
            let t: StringArray = k.iter().map(|v| Some(format!("t{}", v % 5))).collect();
            let v: Int64Array = k.iter().map(|_| Some(rng.random_range(0..1000))).collect();
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(k.to_vec())),
                    Arc::new(t),
                    Arc::new(v),
                ],
            )
            .expect("batch")
        })
        .collect()
}

fn expr(text: &str, schema: &Schema) -> PhysicalExpr {
    bind(
        &parse_expr(text).expect("parses"),
        &BindContext::new(schema),
    )
    .expect("binds")
}

fn run(
    probe: &[RecordBatch],
    build: &[RecordBatch],
    keys: &[(&str, &str)],
    algorithm: JoinAlgorithm,
    pool: &MemoryPool,
) -> usize {
    let (ls, rs) = (probe[0].schema(), build[0].schema());
    let (lk, rk, cond) = match algorithm {
        JoinAlgorithm::NestedLoop => {
            let joined = join_schema(&ls, &rs, JoinType::Inner);
            let text: Vec<String> = keys.iter().map(|(l, r)| format!("{l} = {r}")).collect();
            (vec![], vec![], Some(expr(&text.join(" AND "), &joined)))
        }
        _ => (
            keys.iter().map(|(l, _)| expr(l, &ls)).collect(),
            keys.iter().map(|(_, r)| expr(r, &rs)).collect(),
            None,
        ),
    };
    let null_safe = vec![false; lk.len()];
    let mut exec = JoinExec::try_new(
        ls,
        rs,
        lk,
        rk,
        null_safe,
        cond,
        JoinType::Inner,
        algorithm,
        BuildSide::Right,
        BATCH,
        pool,
    )
    .expect("plans");
    for b in build {
        exec.push_build(b).expect("build");
    }
    let mut rows = 0;
    for b in probe {
        exec.push_probe(b).expect("probe");
        while let Some(o) = exec.pull().expect("pull") {
            rows += o.num_rows();
        }
    }
    exec.finish().expect("finish");
    while let Some(o) = exec.pull().expect("pull") {
        rows += o.num_rows();
    }
    rows
}

fn joins(c: &mut Criterion) {
    let mut g = c.benchmark_group("join");
    g.sample_size(10);
    let unbounded = MemoryPool::unbounded();
    let build = side("r", 250_000, 250_000, true, 1, 1);
    let one = [("lk", "rk")];
    let two = [("lk", "rk"), ("lt", "rt")];
    for (name, clustered) in [("clustered", true), ("shuffled", false)] {
        let probe = side("l", 1_000_000, 250_000, clustered, 2, 1);
        for (alg, a) in [
            ("hash", JoinAlgorithm::Hash),
            ("sort_merge", JoinAlgorithm::SortMerge),
        ] {
            g.bench_function(format!("{alg}/int key/{name} probe"), |b| {
                b.iter(|| run(&probe, &build, &one, a, &unbounded))
            });
        }
        g.bench_function(format!("hash/two keys (row format)/{name} probe"), |b| {
            b.iter(|| run(&probe, &build, &two, JoinAlgorithm::Hash, &unbounded))
        });
    }
    // Keys 1000 apart: too sparse for the dense index, so hashed.
    let sparse_build = side("r", 250_000, 250_000, true, 1, 1000);
    let sparse_probe = side("l", 1_000_000, 250_000, false, 2, 1000);
    g.bench_function("hash/sparse int key/shuffled probe", |b| {
        b.iter(|| {
            run(
                &sparse_probe,
                &sparse_build,
                &one,
                JoinAlgorithm::Hash,
                &unbounded,
            )
        })
    });
    let probe = side("l", 1_000_000, 250_000, false, 2, 1);
    g.bench_function(
        "sort_merge/int key/shuffled probe/spilling under 4MB",
        |b| {
            b.iter(|| {
                let pool = MemoryPool::new(Some(4 << 20));
                run(&probe, &build, &one, JoinAlgorithm::SortMerge, &pool)
            })
        },
    );
    let small_build = side("r", 2_000, 2_000, true, 3, 1);
    let small_probe = side("l", 20_000, 2_000, false, 4, 1);
    g.bench_function("nested_loop/20K x 2K", |b| {
        b.iter(|| {
            run(
                &small_probe,
                &small_build,
                &one,
                JoinAlgorithm::NestedLoop,
                &unbounded,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, joins);
criterion_main!(benches);
