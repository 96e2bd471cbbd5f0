//! Tests of the aggregation operators: results against a naive reference, every path (hash,
//! spill + sort merge, object-hash fall-back) against the others over odd batch sizes.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{
    Array, ArrayRef, Decimal128Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::{parse_expr, Expr};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::{AggregateCall, AggregatePlan};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("x", DataType::Int64, true),
        Field::new("f", DataType::Float64, true),
        Field::new("d", DataType::Decimal128(10, 2), true),
    ]))
}

/// `n` rows: keys in `0..groups` (10% NULL), strings, ints with NULLs, floats with NaN/-0.0.
fn data(n: usize, groups: i64, seed: u64) -> RecordBatch {
    let mut rng = StdRng::seed_from_u64(seed);
    let k: Int64Array = (0..n)
        .map(|_| (rng.random_range(0..10) != 0).then(|| rng.random_range(0..groups)))
        .collect();
    let s: StringArray = (0..n)
        .map(|_| match rng.random_range(0..5) {
            0 => None,
            1 => Some("é".to_string()),
            v => Some(format!("s{}", v * rng.random_range(0..3))),
        })
        .collect();
    let x: Int64Array = (0..n)
        .map(|_| (rng.random_range(0..6) != 0).then(|| rng.random_range(-1000..1000)))
        .collect();
    let f: Float64Array = (0..n)
        .map(|_| match rng.random_range(0..8) {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-0.0),
            _ => Some(rng.random_range(-10..10) as f64 / 4.0),
        })
        .collect();
    let d: Decimal128Array = (0..n)
        .map(|_| (rng.random_range(0..5) != 0).then(|| rng.random_range(-100_000..100_000) as i128))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(10, 2)
        .expect("decimal");
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(k),
            Arc::new(s),
            Arc::new(x),
            Arc::new(f),
            Arc::new(d),
        ],
    )
    .expect("batch")
}

fn chunks(b: &RecordBatch, size: usize) -> Vec<Result<RecordBatch>> {
    (0..b.num_rows())
        .step_by(size.max(1))
        .map(|o| Ok(b.slice(o, size.min(b.num_rows() - o))))
        .collect()
}

fn call(text: &str) -> AggregateCall {
    // "name(args)" / "name(DISTINCT arg)"
    let open = text.find('(').expect("(");
    let name = &text[..open];
    let inner = &text[open + 1..text.len() - 1];
    let (distinct, inner) = match inner.strip_prefix("DISTINCT ") {
        Some(rest) => (true, rest),
        None => (false, inner),
    };
    let args = if inner.is_empty() {
        vec![]
    } else {
        inner
            .split(", ")
            .map(|a| parse_expr(a).expect("arg"))
            .collect()
    };
    let mut c = AggregateCall::new(name, args);
    c.distinct = distinct;
    c
}

/// Output rows as sorted text lines.
fn lines(batches: &[RecordBatch]) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let fmts: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).expect("formatter"))
            .collect();
        for r in 0..b.num_rows() {
            out.push(
                fmts.iter()
                    .map(|f| f.value(r).to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            );
        }
    }
    out.sort();
    out
}

fn run(
    by: &[&str],
    aggs: &[&str],
    input: Vec<Result<RecordBatch>>,
    cfg: &Config,
) -> Result<Vec<RecordBatch>> {
    let by: Vec<Expr> = by.iter().map(|b| parse_expr(b).expect("key")).collect();
    let calls: Vec<AggregateCall> = aggs.iter().map(|a| call(a)).collect();
    let plan = AggregatePlan::new(&schema(), &by, &calls, cfg)?;
    Ok(plan.run_complete(input, cfg)?.0)
}

fn cfg(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()))).expect("config")
}

/// The naive answer of `k, count(*), count(x), sum(x), min(x), max(x)`.
fn reference(b: &RecordBatch) -> Vec<String> {
    let k = b.column(0).as_primitive::<Int64Type>();
    let x = b.column(2).as_primitive::<Int64Type>();
    type Row = (i64, i64, Option<i64>, Option<i64>, Option<i64>);
    let mut m: BTreeMap<Option<i64>, Row> = BTreeMap::new();
    for r in 0..b.num_rows() {
        let key = k.is_valid(r).then(|| k.value(r));
        let e = m.entry(key).or_insert((0, 0, None, None, None));
        e.0 += 1;
        if x.is_valid(r) {
            let v = x.value(r);
            e.1 += 1;
            e.2 = Some(e.2.unwrap_or(0) + v);
            e.3 = Some(e.3.map_or(v, |c: i64| c.min(v)));
            e.4 = Some(e.4.map_or(v, |c: i64| c.max(v)));
        }
    }
    let show = |v: Option<i64>| v.map_or("NULL".to_string(), |v| v.to_string());
    let mut out: Vec<String> = m
        .into_iter()
        .map(|(k, e)| {
            format!(
                "{}|{}|{}|{}|{}|{}",
                show(k),
                e.0,
                e.1,
                show(e.2),
                show(e.3),
                show(e.4)
            )
        })
        .collect();
    out.sort();
    out
}

const BASIC: &[&str] = &["count()", "count(x)", "sum(x)", "min(x)", "max(x)"];

#[test]
fn hash_aggregation_matches_the_reference_over_odd_batch_sizes() -> Result<()> {
    let b = data(3000, 50, 1);
    let want = reference(&b);
    for size in [1, 7, 8192] {
        let got = run(&["k"], BASIC, chunks(&b, size), &Config::new())?;
        assert_eq!(lines(&got), want, "batch size {size}");
    }
    Ok(())
}

#[test]
fn spilled_runs_merge_to_the_same_answer() -> Result<()> {
    let b = data(40_000, 20_000, 2);
    let want = reference(&b);
    let limited = cfg(&[
        ("ferrospark.memory.limit", "256k"),
        ("ferrospark.batch.size", "1000"),
    ]);
    let by: Vec<Expr> = vec![Expr::col("k")];
    let calls: Vec<AggregateCall> = BASIC.iter().map(|a| call(a)).collect();
    let plan = AggregatePlan::new(&schema(), &by, &calls, &limited)?;
    let (out, metrics) = plan.run_complete(chunks(&b, 777), &limited)?;
    assert_eq!(lines(&out), want);
    assert!(
        metrics[0].get("spill_count") > 0,
        "partial step spilled: {}",
        metrics[0]
    );
    assert!(metrics[0].get("spilled_rows") > 0);
    Ok(())
}

#[test]
fn every_key_layout_gives_the_same_groups() -> Result<()> {
    let b = data(5000, 30, 3);
    for by in [&["s"][..], &["f"], &["k", "s"], &["d"], &["s", "f", "d"]] {
        let aggs = &["count()", "sum(x)", "avg(d)", "max(s)", "min(f)"];
        let want = lines(&run(by, aggs, chunks(&b, 8192), &Config::new())?);
        for size in [1, 7] {
            let got = lines(&run(by, aggs, chunks(&b, size), &Config::new())?);
            assert_eq!(got, want, "keys {by:?} batch size {size}");
        }
        let limited = cfg(&[
            ("ferrospark.memory.limit", "64k"),
            ("ferrospark.batch.size", "100"),
        ]);
        let got = lines(&run(by, aggs, chunks(&b, 333), &limited)?);
        assert_eq!(got, want, "keys {by:?} with spills");
    }
    Ok(())
}

#[test]
fn nan_and_negative_zero_are_one_group_each() -> Result<()> {
    let b = data(2000, 10, 4);
    let got = lines(&run(&["f"], &["count()"], chunks(&b, 100), &Config::new())?);
    assert!(got.iter().any(|l| l.starts_with("NaN|")));
    assert!(!got.iter().any(|l| l.starts_with("-0.0|")));
    assert_eq!(got.iter().filter(|l| l.starts_with("0.0|")).count(), 1);
    Ok(())
}

#[test]
fn object_hash_falls_back_to_sort_and_agrees() -> Result<()> {
    let b = data(6000, 500, 5);
    let aggs = &[
        "collect_list(x)",
        "collect_set(s)",
        "percentile(x, 0.25)",
        "count()",
    ];
    let sort_lists = |ls: Vec<String>| -> Vec<String> {
        // collect_* order is not part of the answer: compare each list's sorted items.
        ls.into_iter()
            .map(|l| {
                l.split('|')
                    .map(|f| {
                        if f.starts_with('[') {
                            let mut items: Vec<&str> = f[1..f.len() - 1].split(", ").collect();
                            items.sort();
                            items.join(",")
                        } else {
                            f.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect()
    };
    let big = cfg(&[(
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
        "100000",
    )]);
    let want = sort_lists(lines(&run(&["k"], aggs, chunks(&b, 8192), &big)?));
    let by = vec![Expr::col("k")];
    let calls: Vec<AggregateCall> = aggs.iter().map(|a| call(a)).collect();
    for size in [1, 7, 8192] {
        let small = cfg(&[
            (
                "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
                "16",
            ),
            ("ferrospark.batch.size", "64"),
        ]);
        let plan = AggregatePlan::new(&schema(), &by, &calls, &small)?;
        let (out, m) = plan.run_complete(chunks(&b, size), &small)?;
        assert_eq!(sort_lists(lines(&out)), want, "batch size {size}");
        assert!(m[0].get("sort_fallbacks") > 0);
        // Sort-based output: groups in key order, the NULL key first.
        let keys: Vec<Option<i64>> = out
            .iter()
            .flat_map(|o| {
                o.column(0)
                    .as_primitive::<Int64Type>()
                    .iter()
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "batch size {size}");
        assert_eq!(keys.first(), Some(&None));
    }
    Ok(())
}

#[test]
fn global_aggregate_of_nothing_is_one_row() -> Result<()> {
    let b = data(0, 1, 6);
    let got = lines(&run(
        &[],
        &["count()", "sum(x)", "collect_list(x)", "avg(d)"],
        chunks(&b, 10),
        &Config::new(),
    )?);
    assert_eq!(got, vec!["0|NULL|[]|NULL".to_string()]);
    Ok(())
}

#[test]
fn integral_sum_overflow_raises_in_ansi_mode_and_wraps_otherwise() -> Result<()> {
    let s = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
    let b = RecordBatch::try_new(
        s.clone(),
        vec![Arc::new(Int64Array::from(vec![i64::MAX, 1])) as ArrayRef],
    )?;
    let calls = vec![AggregateCall::new("sum", vec![Expr::col("x")])];
    let plan = AggregatePlan::new(&s, &[], &calls, &Config::new())?;
    match plan.run_complete(vec![Ok(b.clone())], &Config::new()) {
        Err(FerroError::Arithmetic(m)) => assert!(m.contains("ARITHMETIC_OVERFLOW"), "{m}"),
        other => panic!("expected an overflow error, got {other:?}"),
    }
    let legacy = cfg(&[("spark.sql.ansi.enabled", "false")]);
    let plan = AggregatePlan::new(&s, &[], &calls, &legacy)?;
    let out = plan.run_complete(vec![Ok(b)], &legacy)?.0;
    assert_eq!(
        out[0].column(0).as_primitive::<Int64Type>().value(0),
        i64::MIN
    );
    Ok(())
}

#[test]
fn distinct_aggregates_use_four_steps_and_count_each_value_once() -> Result<()> {
    let b = data(4000, 20, 7);
    let by = vec![Expr::col("k")];
    let calls = vec![
        call("count(DISTINCT x)"),
        call("sum(x)"),
        call("sum(DISTINCT x)"),
    ];
    let plan = AggregatePlan::new(&schema(), &by, &calls, &Config::new())?;
    assert_eq!(plan.stages.len(), 4);
    let out = plan.run_complete(chunks(&b, 7), &Config::new())?.0;
    // reference
    let k = b.column(0).as_primitive::<Int64Type>();
    let x = b.column(2).as_primitive::<Int64Type>();
    let mut m: BTreeMap<Option<i64>, (std::collections::BTreeSet<i64>, Option<i64>)> =
        BTreeMap::new();
    for r in 0..b.num_rows() {
        let e = m.entry(k.is_valid(r).then(|| k.value(r))).or_default();
        if x.is_valid(r) {
            e.0.insert(x.value(r));
            e.1 = Some(e.1.unwrap_or(0) + x.value(r));
        }
    }
    let show = |v: Option<i64>| v.map_or("NULL".to_string(), |v| v.to_string());
    let mut want: Vec<String> = m
        .iter()
        .map(|(k, (set, sum))| {
            let ds: Option<i64> = (!set.is_empty()).then(|| set.iter().sum());
            format!("{}|{}|{}|{}", show(*k), set.len(), show(*sum), show(ds))
        })
        .collect();
    want.sort();
    assert_eq!(lines(&out), want);
    assert_eq!(out[0].schema().field(1).name(), "count(DISTINCT x)");
    // In one process the last two steps run as one complete step: the four steps one after
    // another, and the first step in three producers with the rest on two threads, agree.
    assert!(plan.complete_tail.is_some());
    let four = AggregatePlan {
        complete_tail: None,
        ..plan.clone()
    };
    assert_eq!(
        lines(&four.run_complete(chunks(&b, 7), &Config::new())?.0),
        want
    );
    for p in [&plan, &four] {
        let (parallel, metrics) = p.run_parallel(&Config::new(), |make| {
            let mut execs = vec![make()?, make()?, make()?];
            for (i, c) in chunks(&b, 300).into_iter().enumerate() {
                execs[i % 3].push(&c?)?;
            }
            Ok(execs)
        })?;
        assert_eq!(lines(&parallel), want);
        let groups = metrics.last().map_or(0, |m| m.get("groups"));
        assert_eq!(groups as usize, m.len());
    }
    Ok(())
}

#[test]
fn decimal_sum_and_avg_follow_spark_types_and_rounding() -> Result<()> {
    let s = Arc::new(Schema::new(vec![Field::new(
        "d",
        DataType::Decimal128(10, 2),
        true,
    )]));
    let d = Decimal128Array::from(vec![Some(100), Some(200), Some(201), None])
        .with_precision_and_scale(10, 2)?;
    let b = RecordBatch::try_new(s.clone(), vec![Arc::new(d) as ArrayRef])?;
    let calls = vec![call("sum(d)"), call("avg(d)")];
    let plan = AggregatePlan::new(&s, &[], &calls, &Config::new())?;
    let out = plan.run_complete(vec![Ok(b)], &Config::new())?.0;
    assert_eq!(
        out[0].schema().field(0).data_type(),
        &DataType::Decimal128(20, 2)
    );
    assert_eq!(
        out[0].schema().field(1).data_type(),
        &DataType::Decimal128(14, 6)
    );
    // 5.01 / 3 = 1.67 exactly -> 1.670000
    assert_eq!(lines(&out), vec!["5.01|1.670000".to_string()]);
    Ok(())
}

#[test]
fn partial_steps_merged_in_parallel_equal_one_complete_step() -> Result<()> {
    let b = data(9000, 300, 8);
    let by = vec![Expr::col("k"), Expr::col("s")];
    let aggs = &[
        "count()",
        "sum(x)",
        "avg(d)",
        "min(s)",
        "collect_list(x)",
        "collect_set(f)",
        "percentile(x, 0.5)",
        "stddev(f)",
        "approx_count_distinct(x)",
    ];
    let calls: Vec<AggregateCall> = aggs.iter().map(|a| call(a)).collect();
    let config = cfg(&[
        ("ferrospark.scan.threads", "3"),
        (
            "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
            "100000",
        ),
    ]);
    let plan = AggregatePlan::new(&schema(), &by, &calls, &config)?;
    // one producer's input in arrival order, so collect_list's order is comparable
    let (complete, _) = plan.run_complete(chunks(&b, 1000), &config)?;
    let (parallel, metrics) = plan.run_parallel(&config, |make| {
        let mut execs = vec![make()?];
        for c in chunks(&b, 1000) {
            execs[0].push(&c?)?;
        }
        Ok(execs)
    })?;
    assert_eq!(lines(&parallel), lines(&complete));
    assert_eq!(metrics[0].get("input_rows"), 9000);
    // several producers: compare with list items sorted
    let (parallel3, _) = plan.run_parallel(&config, |make| {
        let mut execs = vec![make()?, make()?, make()?];
        for (i, c) in chunks(&b, 700).into_iter().enumerate() {
            execs[i % 3].push(&c?)?;
        }
        Ok(execs)
    })?;
    let sorted_items = |ls: Vec<String>| -> Vec<String> {
        ls.into_iter()
            .map(|l| {
                l.split('|')
                    .map(
                        |f| match f.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
                            Some(inner) => {
                                let mut items: Vec<&str> = inner.split(", ").collect();
                                items.sort();
                                items.join(",")
                            }
                            None => f.to_string(),
                        },
                    )
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect()
    };
    let drop_float_sums = |ls: Vec<String>| -> Vec<String> {
        // stddev of doubles depends on merge order in the last digits: compare 6 digits
        ls.into_iter()
            .map(|l| {
                l.split('|')
                    .map(|f| match f.parse::<f64>() {
                        Ok(v) if f.contains('.') && !f.contains('[') => format!("{v:.6}"),
                        _ => f.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect()
    };
    assert_eq!(
        drop_float_sums(sorted_items(lines(&parallel3))),
        drop_float_sums(sorted_items(lines(&complete)))
    );
    Ok(())
}

#[test]
fn distinct_aggregates_over_different_arguments_keep_a_set_each() -> Result<()> {
    let b = data(3000, 15, 9);
    let by = vec![Expr::col("k")];
    let calls = vec![
        call("count(DISTINCT x)"),
        call("count(DISTINCT s)"),
        call("sum(x)"),
    ];
    let plan = AggregatePlan::new(&schema(), &by, &calls, &Config::new())?;
    assert_eq!(plan.stages.len(), 2);
    let (out, _) = plan.run_complete(chunks(&b, 7), &Config::new())?;
    // the same per distinct argument, one at a time, through the four-step plan
    let one = |c: &str| -> Result<Vec<String>> {
        let plan = AggregatePlan::new(&schema(), &by, &[call(c)], &Config::new())?;
        Ok(lines(&plan.run_complete(chunks(&b, 7), &Config::new())?.0))
    };
    let (xs, ss, sums) = (
        one("count(DISTINCT x)")?,
        one("count(DISTINCT s)")?,
        one("sum(x)")?,
    );
    let want: Vec<String> = xs
        .iter()
        .zip(&ss)
        .zip(&sums)
        .map(|((x, s), t)| {
            let last = |l: &str| l.rsplit('|').next().unwrap_or_default().to_string();
            format!("{x}|{}|{}", last(s), last(t))
        })
        .collect();
    assert_eq!(lines(&out), want);
    Ok(())
}

#[test]
fn the_sort_fall_back_keeps_arrival_order_within_a_group() -> Result<()> {
    let b = data(5000, 400, 10);
    let aggs = &["collect_list(x)", "first(x)", "last(s)"];
    let hash = cfg(&[(
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
        "100000",
    )]);
    let want = lines(&run(&["k"], aggs, chunks(&b, 500), &hash)?);
    for keys in [&["k"][..], &["k", "s"]] {
        let sort = cfg(&[(
            "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
            "4",
        )]);
        let want = lines(&run(keys, aggs, chunks(&b, 500), &hash)?);
        assert_eq!(
            lines(&run(keys, aggs, chunks(&b, 500), &sort)?),
            want,
            "keys {keys:?}"
        );
    }
    assert!(!want.is_empty());
    Ok(())
}

#[test]
fn collect_set_of_strings_stays_exact_past_64_distinct_values() -> Result<()> {
    // The set starts as one bit per value and group and switches to a hash set at 64 values.
    let n = 4000;
    let mut rng = StdRng::seed_from_u64(9);
    let keys: Vec<i64> = (0..n).map(|_| rng.random_range(0..20)).collect();
    let strs: Vec<String> = (0..n)
        .map(|r| format!("v{}", (r * 7919 + rng.random_range(0..3)) % 150))
        .collect();
    let mut want: BTreeMap<i64, std::collections::BTreeSet<String>> = BTreeMap::new();
    for (k, s) in keys.iter().zip(&strs) {
        want.entry(*k).or_default().insert(s.clone());
    }
    let b = filled(keys, strs, vec![0; n])?;
    for size in [7, 8192] {
        let out = run(
            &["k"],
            &["collect_set(s)"],
            chunks(&b, size),
            &Config::new(),
        )?;
        let mut got: BTreeMap<i64, std::collections::BTreeSet<String>> = BTreeMap::new();
        for o in &out {
            let k = o.column(0).as_primitive::<Int64Type>();
            let l = o.column(1).as_list::<i32>();
            for r in 0..o.num_rows() {
                let v = l.value(r);
                let items: Vec<String> = v
                    .as_string::<i32>()
                    .iter()
                    .map(|s| s.unwrap_or_default().to_string())
                    .collect();
                let set: std::collections::BTreeSet<String> = items.iter().cloned().collect();
                assert_eq!(set.len(), items.len(), "duplicates in key {}", k.value(r));
                got.insert(k.value(r), set);
            }
        }
        assert_eq!(got, want, "batch size {size}");
    }
    Ok(())
}

#[test]
fn decimal_sums_of_few_groups_without_nulls_match_the_reference() -> Result<()> {
    // No NULLs and few groups: the batch is added through per-group lanes.
    let n = 5000;
    let mut rng = StdRng::seed_from_u64(21);
    let keys: Vec<i64> = (0..n).map(|_| rng.random_range(0..5)).collect();
    let ds: Vec<i128> = (0..n)
        .map(|_| rng.random_range(-9_999_999_999i64..9_999_999_999) as i128)
        .collect();
    let mut want: BTreeMap<i64, (i128, i64)> = BTreeMap::new();
    for (k, d) in keys.iter().zip(&ds) {
        let e = want.entry(*k).or_default();
        e.0 += d;
        e.1 += 1;
    }
    let b = filled(keys, vec!["a".to_string(); n], ds)?;
    for size in [1, 7, 8192] {
        let out = run(
            &["k"],
            &["sum(d)", "avg(d)", "count(d)"],
            chunks(&b, size),
            &Config::new(),
        )?;
        for o in &out {
            let k = o.column(0).as_primitive::<Int64Type>();
            let sum = o
                .column(1)
                .as_primitive::<arrow_array::types::Decimal128Type>();
            let cnt = o.column(3).as_primitive::<Int64Type>();
            for r in 0..o.num_rows() {
                let (s, c) = want[&k.value(r)];
                assert_eq!((sum.value(r), cnt.value(r)), (s, c), "batch size {size}");
            }
        }
    }
    Ok(())
}

/// A batch of [`schema`] with the given keys, strings and decimals (scale 2), the other
/// columns filled with zeros.
fn filled(keys: Vec<i64>, strs: Vec<String>, decimals: Vec<i128>) -> Result<RecordBatch> {
    let n = keys.len();
    Ok(RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(keys)) as ArrayRef,
            Arc::new(StringArray::from(strs)),
            Arc::new(Int64Array::from(vec![0; n])),
            Arc::new(Float64Array::from(vec![0.0; n])),
            Arc::new(Decimal128Array::from(decimals).with_precision_and_scale(10, 2)?),
        ],
    )?)
}

#[test]
fn a_group_count_hint_is_taken_only_when_the_pool_grants_it() -> Result<()> {
    use crate::exec::AggregateOptions;
    use ferrospark_common::MemoryPool;
    let n = 20_000;
    let keys: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 5000).collect();
    let ds: Vec<i128> = (0..n as i128).collect();
    let b = filled(keys, vec!["s".to_string(); n], ds)?;
    let by = vec![parse_expr("k").expect("key")];
    let calls = vec![call("sum(d)"), call("count(x)")];
    let config = Config::new();
    let plan = AggregatePlan::new(&schema(), &by, &calls, &config)?;
    let run_with = |limit: Option<u64>, hint: usize| -> Result<(Vec<String>, u64)> {
        let options = AggregateOptions {
            pool: MemoryPool::new(limit),
            ..AggregateOptions::default()
        };
        let mut exec = plan.first_stage()?.exec(options)?;
        exec.expect_groups(hint)?;
        let (out, metrics) = exec.run(chunks(&b, 1000))?;
        Ok((lines(&out), metrics.get("spill_count")))
    };
    let (plain, _) = run_with(None, 0)?;
    let (hinted, spills) = run_with(None, 5000)?;
    assert_eq!(hinted, plain);
    assert_eq!(spills, 0);
    // A hint far beyond a small limit is dropped, not reserved: the answer is the same, and
    // the spills are those of the limit, not of the hint.
    let (limited, limited_spills) = run_with(Some(256 * 1024), 0)?;
    let (limited_hinted, limited_hinted_spills) = run_with(Some(256 * 1024), 10_000_000)?;
    assert_eq!(limited_hinted, plain);
    assert_eq!(limited, plain);
    assert_eq!(limited_hinted_spills, limited_spills);
    Ok(())
}

#[test]
fn unreduced_first_steps_pass_rows_on_and_answers_stay() -> Result<()> {
    // Steps pass some batches of 500 rows on, then the pool refuses them.
    const LIMIT: u64 = 6 << 20;
    // Nearly unique (k, x) pairs, NULLs and repeats included: the first step stops grouping.
    let n = 60_000usize;
    let mut rng = StdRng::seed_from_u64(11);
    let k: Int64Array = (0..n)
        .map(|_| (rng.random_range(0..50) != 0).then(|| rng.random_range(0..40)))
        .collect();
    let x: Int64Array = (0..n)
        .map(|i| (rng.random_range(0..100) != 0).then(|| (i as i64) / 2 - 7))
        .collect();
    let s: ArrayRef = Arc::new(StringArray::from(vec![Some("a"); n]));
    let f: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![Some(1.0); n]));
    let d: ArrayRef =
        Arc::new(Decimal128Array::from(vec![Some(1); n]).with_precision_and_scale(10, 2)?);
    let b = RecordBatch::try_new(schema(), vec![Arc::new(k), s, Arc::new(x), f, d])?;
    let by = vec![Expr::col("k")];
    let run = |plan: &AggregatePlan| -> Result<(Vec<String>, u64)> {
        let (out, metrics) = plan.run_parallel(&Config::new(), |make| {
            let mut execs = vec![make()?, make()?, make()?];
            for (i, c) in chunks(&b, 4096).into_iter().enumerate() {
                execs[i % 3].push(&c?)?;
            }
            Ok(execs)
        })?;
        Ok((lines(&out), metrics[0].get("rows_passed_through")))
    };
    // count(DISTINCT x): the first step groups by (k, x).
    let plan = AggregatePlan::new(&schema(), &by, &[call("count(DISTINCT x)")], &Config::new())?;
    let (parallel, passed) = run(&plan)?;
    let complete = lines(&plan.run_complete(chunks(&b, 4096), &Config::new())?.0);
    assert_eq!(parallel, complete);
    assert!(passed > 0, "the first step kept grouping");
    // Under a pool that refuses part way, a step goes back to grouping and keeps the rows it
    // handed on: the answer stays.
    let limited = |limit: u64| -> Result<(Vec<String>, u64, u64)> {
        let options = crate::exec::AggregateOptions {
            pool: ferrospark_common::MemoryPool::new(Some(limit)),
            ..crate::exec::AggregateOptions::default()
        };
        let (out, metrics) = plan.run_parallel_with(options, 2, |make| {
            let mut execs = vec![make()?, make()?, make()?];
            for (i, c) in chunks(&b, 500).into_iter().enumerate() {
                execs[i % 3].push(&c?)?;
            }
            Ok(execs)
        })?;
        let m = &metrics[0];
        Ok((
            lines(&out),
            m.get("rows_passed_through"),
            m.get("input_rows"),
        ))
    };
    let (got, passed_limited, input) = limited(LIMIT)?;
    assert_eq!(got, complete);
    assert!(
        passed_limited > 0 && passed_limited < passed,
        "{passed_limited} of {input}"
    );
    // A GROUP BY without aggregates (a DISTINCT) over the nearly unique (x, k).
    let plan = AggregatePlan::new(
        &schema(),
        &[Expr::col("x"), Expr::col("k")],
        &[],
        &Config::new(),
    )?;
    let (parallel, passed) = run(&plan)?;
    let mut want: Vec<String> = lines(&plan.run_complete(chunks(&b, 4096), &Config::new())?.0);
    let mut got = parallel;
    want.sort();
    got.sort();
    assert!(got.len() > n * 9 / 10);
    assert_eq!(got, want);
    assert!(passed > 0);
    // Few groups: grouping pays and goes on.
    let plan = AggregatePlan::new(&schema(), &by, &[], &Config::new())?;
    let (_, passed) = run(&plan)?;
    assert_eq!(passed, 0);
    Ok(())
}
