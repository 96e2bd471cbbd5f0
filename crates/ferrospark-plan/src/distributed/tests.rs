//! Stage plans run on a simulated Spark (tasks one after another, blocks moved by their
//! partition, broadcast rows handed to every task) against the same queries in process.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{Config, Result};

use super::*;
use crate::sql::SqlStatement;
use crate::QueryEngine;

fn write_parquet(path: &std::path::Path, batch: &RecordBatch, rows_per_group: usize) {
    crate::test_files::write_parquet(
        path,
        batch.schema(),
        std::slice::from_ref(batch),
        rows_per_group,
    );
}

/// A fact table in two files (NULLs, NaN, -0.0, skewed keys, unicode) and a dimension.
fn tables(dir: &std::path::Path) -> (String, String) {
    let fact = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("g", DataType::Utf8, true),
        Field::new("x", DataType::Float64, true),
        Field::new("n", DataType::Int64, true),
    ]));
    std::fs::create_dir_all(dir.join("fact")).expect("dir");
    for f in 0..2i64 {
        let rows = 4_000i64;
        let batch = RecordBatch::try_new(
            fact.clone(),
            vec![
                Arc::new(Int64Array::from_iter((0..rows).map(|i| {
                    let i = i + f * rows;
                    (i % 101 != 5).then_some(if i % 3 == 0 { 7 } else { i % 257 })
                }))),
                Arc::new(StringArray::from_iter((0..rows).map(|i| {
                    (i % 53 != 1).then(|| ["a", "b", "ü", "日本", ""][(i % 5) as usize].to_string())
                }))),
                Arc::new(Float64Array::from_iter((0..rows).map(|i| match i % 41 {
                    0 => Some(f64::NAN),
                    1 => Some(-0.0),
                    2 => None,
                    _ => Some((i % 97) as f64 * 0.25),
                }))),
                Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i * (f + 1)))),
            ],
        )
        .expect("batch");
        write_parquet(&dir.join(format!("fact/part-{f}.parquet")), &batch, 700);
    }
    let dim = Arc::new(Schema::new(vec![
        Field::new("dk", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        dim,
        vec![
            Arc::new(Int64Array::from_iter(
                (0..300i64).map(|i| (i != 13).then_some(i)),
            )),
            Arc::new(StringArray::from_iter_values(
                (0..300).map(|i| format!("d{}", i % 17)),
            )),
        ],
    )
    .expect("batch");
    write_parquet(&dir.join("dim.parquet"), &batch, 100);
    (
        format!("parquet.`{}`", dir.join("fact").display()),
        format!("parquet.`{}`", dir.join("dim.parquet").display()),
    )
}

/// Each row as text, sorted unless `ordered`.
fn rows(batches: &[RecordBatch], ordered: bool) -> Vec<String> {
    let mut out = Vec::new();
    let opts = FormatOptions::default().with_null("NULL");
    for b in batches {
        let fmts: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).expect("formatter"))
            .collect();
        for r in 0..b.num_rows() {
            let cells: Vec<String> = fmts.iter().map(|f| f.value(r).to_string()).collect();
            out.push(cells.join("|"));
        }
    }
    if !ordered {
        out.sort();
    }
    out
}

/// Runs `plan` as Spark would: stages in order, each task on its own, blocks delivered to
/// the partition they name, broadcast rows to every task of the reading stage. With `share`,
/// the tasks of a stage share their built broadcast sides, as in one Python worker.
fn run_simulated(plan: &StagePlan, cfg: &Config, share: bool) -> Result<Vec<RecordBatch>> {
    Ok(run_counting_builds(plan, cfg, share)?.0)
}

/// [`run_simulated`], with the broadcast sides the tasks built and the times a task
/// reused one another task built.
fn run_counting_builds(
    plan: &StagePlan,
    cfg: &Config,
    share: bool,
) -> Result<(Vec<RecordBatch>, usize, usize)> {
    let (mut built, mut reused) = (0, 0);
    let mut blocks: HashMap<usize, Vec<(u32, Vec<u8>)>> = HashMap::new();
    let mut broadcast: HashMap<usize, Arc<Vec<RecordBatch>>> = HashMap::new();
    let mut result = Vec::new();
    for stage in &plan.stages {
        // Round-trip through JSON, as a task receives its stage.
        let stage = Stage::from_json(&plan.stage_json(stage.id)?)?;
        let mut rows_out = Vec::new();
        let shared = Arc::new(crate::physical::shared_build::SharedBuilds::new());
        for t in 0..stage.tasks.count() {
            let mut input = TaskInput {
                task: t,
                shared_builds: share.then(|| shared.clone()),
                ..Default::default()
            };
            if let TaskLayout::Splits(s) = &stage.tasks {
                input.splits = s[t].clone();
            }
            for si in &stage.inputs {
                if si.broadcast {
                    input
                        .broadcasts
                        .insert(si.from, broadcast[&si.from].clone());
                } else {
                    for (p, b) in blocks.get(&si.from).into_iter().flatten() {
                        if *p as usize == t {
                            input.blocks.push((si.tag, b.clone()));
                        }
                    }
                }
            }
            match run_task(&stage, cfg, input)?.0 {
                TaskOutput::Rows(r) => rows_out.extend(r),
                TaskOutput::Blocks(b) => blocks.entry(stage.id).or_default().extend(b),
            }
        }
        match stage.sink {
            Sink::Broadcast => {
                broadcast.insert(stage.id, Arc::new(rows_out));
            }
            Sink::Result => result = rows_out,
            Sink::Exchange { .. } => {}
        }
        built += shared.builds();
        reused += shared.reuses();
    }
    Ok((result, built, reused))
}

fn check(e: &QueryEngine, sql: &str, cfg: &Config, parallelism: usize) -> StagePlan {
    let SqlStatement::Query(p) = e.sql(sql).expect("plans") else {
        panic!("not a query")
    };
    let r = e.execute(&p).expect("runs");
    let want: Vec<RecordBatch> = r.stream.collect::<Result<_>>().expect("streams");
    let (optimized, _) = e.optimize(&p).expect("optimizes");
    // Every join tried as a broadcast where it may be, then every join shuffled (the plan
    // the driver cuts again when a tried side proves large).
    let all: HashMap<usize, bool> = (0..64).map(|j| (j, false)).collect();
    let shuffled = plan_stages(&optimized, cfg, parallelism, &all).expect("cuts");
    let got = run_simulated(&shuffled, cfg, false).expect("runs on stages");
    let ordered = sql.contains("ORDER BY") && !sql.contains("OVER");
    assert_eq!(
        rows(&got, ordered),
        rows(&want, ordered),
        "{sql}, every join shuffled"
    );
    let tried: HashMap<usize, bool> = (0..64).map(|j| (j, true)).collect();
    let broadcast = plan_stages(&optimized, cfg, parallelism, &tried).expect("cuts");
    let got = run_simulated(&broadcast, cfg, true).expect("runs on stages");
    assert_eq!(
        rows(&got, ordered),
        rows(&want, ordered),
        "{sql}, tried sides broadcast"
    );
    let stages = plan_stages(&optimized, cfg, parallelism, &Default::default()).expect("cuts");
    let got = run_simulated(&stages, cfg, true).expect("runs on stages");
    let (g, w) = (rows(&got, ordered), rows(&want, ordered));
    if g != w {
        let missing: Vec<&String> = w.iter().filter(|r| !g.contains(r)).take(8).collect();
        let extra: Vec<&String> = g.iter().filter(|r| !w.contains(r)).take(8).collect();
        panic!(
            "{sql}\n{} rows, want {}; missing {missing:?}; extra {extra:?}\n{}",
            g.len(),
            w.len(),
            stages.explain(cfg).expect("explains")
        );
    }
    assert!(!rows(&want, ordered).is_empty(), "{sql}");
    stages
}

#[test]
fn stage_plans_give_the_in_process_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (f, d) = tables(dir.path());
    let queries = [
        format!("SELECT g, count(*), sum(n), avg(x), min(abs(x)), max(x) FROM {f} GROUP BY g"),
        format!("SELECT x, count(*) FROM {f} GROUP BY x"),
        format!("SELECT count(*), sum(n), count(DISTINCT g) FROM {f}"),
        format!("SELECT k, count(DISTINCT g), sum(n) FROM {f} GROUP BY k"),
        format!("SELECT name, count(*), sum(n) FROM {f} JOIN {d} ON k = dk GROUP BY name"),
        format!("SELECT k, g, n, name FROM {f} LEFT JOIN {d} ON k = dk WHERE n < 900"),
        format!("SELECT dk, name, n FROM {f} RIGHT JOIN {d} ON k = dk AND n < 50"),
        format!("SELECT k, dk FROM {f} FULL JOIN {d} ON k = dk + 200 WHERE n < 300 OR n IS NULL"),
        format!("SELECT k, n, dk FROM {f} FULL JOIN {d} ON k > dk + 250 WHERE n < 300 OR n IS NULL"),
        format!("SELECT * FROM {d} WHERE dk IN (SELECT k FROM {f} WHERE x > 20)"),
        format!("SELECT * FROM {d} WHERE NOT EXISTS (SELECT 1 FROM {f} WHERE k = dk)"),
        format!("SELECT * FROM {d} WHERE dk NOT IN (SELECT k FROM {f} WHERE n > 7000 AND k IS NOT NULL)"),
        format!("SELECT k, n, row_number() OVER (PARTITION BY k ORDER BY n) FROM {f} WHERE n < 2000"),
        format!("SELECT g, n FROM {f} ORDER BY n DESC, g LIMIT 17"),
        format!("SELECT k, sum(n) s FROM {f} GROUP BY k ORDER BY s DESC, k LIMIT 5"),
        format!("SELECT k FROM {f} WHERE n < 20 UNION ALL SELECT dk FROM {d} WHERE dk < 9"),
        format!("SELECT count(*), sum(n) FROM {f} WHERE n < 0"),
        format!("SELECT k, n FROM {f} WHERE n > (SELECT avg(n) FROM {f}) AND k = 7 ORDER BY n LIMIT 9"),
        format!(
            "WITH rev AS (SELECT k AS kk, sum(n) AS total FROM {f} WHERE n < 5000 GROUP BY k) \
             SELECT dk, name, total FROM {d} JOIN rev ON dk = kk \
             WHERE total = (SELECT max(total) FROM rev) ORDER BY dk"
        ),
    ];
    let e = QueryEngine::new(Config::default());
    for (threshold, split) in [("10MB", "128MB"), ("-1", "20KB")] {
        let mut cfg = Config::default();
        cfg.set("spark.sql.autoBroadcastJoinThreshold", threshold)
            .expect("conf");
        cfg.set("spark.sql.files.maxPartitionBytes", split)
            .expect("conf");
        for q in &queries {
            for parallelism in [1, 3] {
                check(&e, q, &cfg, parallelism);
            }
        }
    }
}

#[test]
fn exchanges_stand_where_spark_puts_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (f, d) = tables(dir.path());
    let e = QueryEngine::new(Config::default());
    let cfg = Config::default();
    let sql = format!("SELECT name, sum(n) FROM {f} JOIN {d} ON k = dk GROUP BY name ORDER BY 1");
    let plan = check(&e, &sql, &cfg, 2);
    // The dimension is broadcast; the join and the partial aggregation run in the fact
    // table's scan stage; the final aggregation after a hash exchange; the sort in one task.
    let sinks: Vec<String> = plan
        .stages
        .iter()
        .map(|s| match &s.sink {
            Sink::Broadcast => "broadcast".to_string(),
            Sink::Result => "result".to_string(),
            Sink::Exchange {
                keys, agg_steps, ..
            } => format!(
                "{}{}",
                match keys {
                    ExchangeKeys::Hash(_) => "hash",
                    ExchangeKeys::Leading(_) => "leading",
                    ExchangeKeys::Single => "single",
                    ExchangeKeys::RoundRobin => "roundrobin",
                },
                if agg_steps.is_some() { "+partial" } else { "" }
            ),
        })
        .collect();
    assert_eq!(sinks, ["broadcast", "leading+partial", "single", "result"]);
    let text = plan.explain(&cfg).expect("explains");
    assert!(text.contains("BroadcastExchange"), "{text}");
    assert!(text.contains("Exchange hashpartitioning"), "{text}");
    assert!(text.contains("ResultStage 3"), "{text}");
    assert!(matches!(plan.stages[1].tasks, TaskLayout::Splits(_)));

    // With broadcasts off, both sides of the join are shuffled on their keys.
    let mut off = Config::default();
    off.set("spark.sql.autoBroadcastJoinThreshold", "-1")
        .expect("conf");
    let plan = check(&e, &sql, &off, 2);
    let hashed = plan
        .stages
        .iter()
        .filter(|s| {
            matches!(
                &s.sink,
                Sink::Exchange {
                    keys: ExchangeKeys::Hash(_),
                    ..
                }
            )
        })
        .count();
    assert_eq!(hashed, 2, "{}", plan.explain(&off).expect("explains"));
}

#[test]
fn a_broadcast_side_is_built_once_per_worker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (f, d) = tables(dir.path());
    let e = QueryEngine::new(Config::default());
    let mut cfg = Config::default();
    // Small splits: the fact table's stage runs several tasks, each probing the dimension.
    cfg.set("spark.sql.files.maxPartitionBytes", "20KB")
        .expect("conf");
    for sql in [
        format!("SELECT name, count(*), sum(n) FROM {f} JOIN {d} ON k = dk GROUP BY name"),
        format!("SELECT k, g, name FROM {f} LEFT JOIN {d} ON k = dk WHERE n < 900"),
        format!("SELECT * FROM {f} WHERE k IN (SELECT dk FROM {d} WHERE name = 'd3')"),
        // Each task's share of the probe side smaller than the broadcast side.
        format!("SELECT k, n, name FROM {f} JOIN {d} ON k = dk WHERE n % 500 = 3"),
    ] {
        let plan = check(&e, &sql, &cfg, 3);
        let probe = plan
            .stages
            .iter()
            .find(|s| s.inputs.iter().any(|i| i.broadcast))
            .expect("a stage probing a broadcast");
        let tasks = probe.tasks.count();
        assert!(tasks > 1, "{sql}: {tasks} tasks");
        let (shared, built, reused) = run_counting_builds(&plan, &cfg, true).expect("runs");
        assert_eq!((built, reused), (1, tasks - 1), "{sql}");
        let (own, built, reused) = run_counting_builds(&plan, &cfg, false).expect("runs");
        assert_eq!((built, reused), (0, 0), "{sql}");
        assert_eq!(rows(&shared, false), rows(&own, false), "{sql}");
        // A reusing task says so in its metrics.
        let mut input = TaskInput {
            task: 1,
            shared_builds: Some(Arc::new(crate::physical::shared_build::SharedBuilds::new())),
            ..Default::default()
        };
        let bc = plan
            .stages
            .iter()
            .find(|s| matches!(s.sink, Sink::Broadcast))
            .expect("a broadcast stage");
        let mut rows_bc = Vec::new();
        for t in 0..bc.tasks.count() {
            let mut i = TaskInput {
                task: t,
                ..Default::default()
            };
            if let TaskLayout::Splits(s) = &bc.tasks {
                i.splits = s[t].clone();
            }
            if let TaskOutput::Rows(r) = run_task(bc, &cfg, i).expect("runs").0 {
                rows_bc.extend(r);
            }
        }
        let rows_bc = Arc::new(rows_bc);
        input.broadcasts.insert(bc.id, rows_bc.clone());
        if let TaskLayout::Splits(s) = &probe.tasks {
            input.splits = s[1].clone();
        }
        let shared = input.shared_builds.clone();
        run_task(probe, &cfg, input).expect("runs");
        let mut again = TaskInput {
            task: 0,
            shared_builds: shared,
            ..Default::default()
        };
        again.broadcasts.insert(bc.id, rows_bc);
        if let TaskLayout::Splits(s) = &probe.tasks {
            again.splits = s[0].clone();
        }
        let (_, report) = run_task(probe, &cfg, again).expect("runs");
        assert!(report.contains("build_reused=1"), "{sql}\n{report}");
    }
}

/// CSV, JSON and Avro tables split into byte ranges across tasks, as Spark splits them: the
/// stage's tasks together read each record once, whatever the cut.
#[test]
fn row_format_scans_split_across_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut csv, mut json) = (String::new(), String::new());
    // Large enough that a stage on three cores splits them (a task is at least a sixth of
    // the bytes plus the files' open costs).
    for i in 0..80_000i64 {
        let g = ["a", "b", "\u{fc}", "\u{65e5}\u{672c}", ""][(i % 5) as usize];
        let k = (i % 101 != 5).then_some(if i % 3 == 0 { 7 } else { i % 257 });
        let ks = k.map(|k| k.to_string()).unwrap_or_default();
        csv.push_str(&format!("{ks},\"{g}\",{i}\n"));
        match k {
            Some(k) => json.push_str(&format!("{{\"n\": {i}, \"g\": \"{g}\", \"k\": {k}}}\n")),
            None => json.push_str(&format!("{{\"g\": \"{g}\", \"n\": {i}}}\r\n")),
        }
    }
    let csv_path = dir.path().join("t.csv");
    std::fs::write(&csv_path, csv).expect("write");
    let json_path = dir.path().join("t.json");
    std::fs::write(&json_path, json).expect("write");
    let csv_t = format!("csv.`{}`", csv_path.display());
    let json_t = format!("json.`{}`", json_path.display());
    let queries = [
        format!("SELECT _c1, count(*), sum(CAST(_c2 AS BIGINT)), count(_c0) FROM {csv_t} GROUP BY _c1"),
        format!("SELECT _c0, _c2 FROM {csv_t} WHERE CAST(_c2 AS INT) % 97 = 3"),
        format!("SELECT g, count(*), sum(n), count(k) FROM {json_t} GROUP BY g"),
        format!("SELECT k, n FROM {json_t} WHERE n % 89 = 1"),
        format!("SELECT count(*) FROM {json_t} j JOIN {csv_t} c ON j.n = CAST(c._c2 AS BIGINT) WHERE j.k = 7"),
    ];
    let e = QueryEngine::new(Config::default());
    let mut cfg = Config::default();
    cfg.set("spark.sql.files.maxPartitionBytes", "4KB")
        .expect("conf");
    for q in &queries {
        for parallelism in [1, 3] {
            let plan = check(&e, q, &cfg, parallelism);
            if parallelism == 1 {
                continue;
            }
            let byte_splits = plan.stages.iter().any(|s| match &s.tasks {
                TaskLayout::Splits(t) => {
                    t.len() > 1
                        && t.iter()
                            .flatten()
                            .all(|r| matches!(r.part, SplitPart::Bytes { .. }))
                }
                _ => false,
            });
            assert!(byte_splits, "{q}: no stage over byte splits");
        }
    }
}
