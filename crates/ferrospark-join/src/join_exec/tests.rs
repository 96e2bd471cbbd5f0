//! Every join type and build side against a naive nested loop, over NULL, duplicate and
//! skewed keys, `=` and `<=>`, a residual condition, empty sides and batch sizes 1, 7, 8192.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{MemoryPool, Result};
use ferrospark_expr::{bind, parse_expr, BindContext, PhysicalExpr};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::{join_schema, BuildSide, JoinAlgorithm, JoinExec, JoinType};

fn side_schema(prefix: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(format!("{prefix}k1"), DataType::Int32, true),
        Field::new(format!("{prefix}k2"), DataType::Utf8, true),
        Field::new(format!("{prefix}v"), DataType::Int64, false),
    ]))
}

fn side(rng: &mut StdRng, prefix: &str, n: usize) -> RecordBatch {
    // Skew: a third of the rows share key 0.
    let k1: Vec<Option<i32>> = (0..n)
        .map(|_| match rng.random_range(0..10) {
            0 => None,
            1..=3 => Some(0),
            _ => Some(rng.random_range(0..12)),
        })
        .collect();
    let words = ["a", "b", "é", ""];
    let k2: Vec<Option<&str>> = (0..n)
        .map(|_| {
            if rng.random_range(0..8) == 0 {
                None
            } else {
                Some(words[rng.random_range(0..words.len())])
            }
        })
        .collect();
    let v: Vec<i64> = (0..n).map(|_| rng.random_range(-50..50)).collect();
    RecordBatch::try_new(
        side_schema(prefix),
        vec![
            Arc::new(Int32Array::from(k1)) as ArrayRef,
            Arc::new(StringArray::from(k2)),
            Arc::new(Int64Array::from(v)),
        ],
    )
    .expect("batch")
}

fn cells(b: &RecordBatch, r: usize) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    b.columns()
        .iter()
        .map(|c| {
            ArrayFormatter::try_new(c.as_ref(), &opts)
                .expect("fmt")
                .value(r)
                .to_string()
        })
        .collect()
}

/// Key `i` of row `r`, as text (NULL as `None`).
fn key(b: &RecordBatch, r: usize, i: usize) -> Option<String> {
    let c = b.column(i);
    c.is_valid(r).then(|| cells(b, r)[i].clone())
}

/// The naive join: every pair compared.
fn reference(
    l: &RecordBatch,
    r: &RecordBatch,
    nkeys: usize,
    null_safe: bool,
    cond: bool,
    jt: JoinType,
) -> Vec<String> {
    let matches = |a: usize, b: usize| -> bool {
        let keys = (0..nkeys).all(|i| match (key(l, a, i), key(r, b, i)) {
            (Some(x), Some(y)) => x == y,
            (None, None) => null_safe,
            _ => false,
        });
        let lv = l
            .column(2)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("v");
        let rv = r
            .column(2)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("v");
        keys && (!cond || lv.value(a) < rv.value(b))
    };
    let nulls = |n: usize| vec!["NULL".to_string(); n];
    let mut out = Vec::new();
    let mut right_hit = vec![false; r.num_rows()];
    for a in 0..l.num_rows() {
        let mut hit = false;
        for (b, rh) in right_hit.iter_mut().enumerate() {
            if matches(a, b) {
                hit = true;
                *rh = true;
                if !jt.left_only() {
                    out.push([cells(l, a), cells(r, b)].concat().join("|"));
                }
            }
        }
        match jt {
            JoinType::LeftSemi if hit => out.push(cells(l, a).join("|")),
            JoinType::LeftAnti if !hit => out.push(cells(l, a).join("|")),
            JoinType::LeftOuter | JoinType::FullOuter if !hit => {
                out.push([cells(l, a), nulls(3)].concat().join("|"))
            }
            _ => {}
        }
    }
    if jt.keeps_right() {
        for (b, h) in right_hit.iter().enumerate() {
            if !h {
                out.push([nulls(3), cells(r, b)].concat().join("|"));
            }
        }
    }
    out.sort();
    out
}

fn expr(e: &str, schema: &Schema) -> PhysicalExpr {
    bind(&parse_expr(e).expect("parses"), &BindContext::new(schema)).expect("binds")
}

/// A hash join of `l` and `r` on one key (`keys`: the left and right column names) with an
/// optional residual `condition`, building the right side.
fn one_key_join(
    l: &SchemaRef,
    r: &SchemaRef,
    keys: (&str, &str),
    condition: Option<&str>,
    jt: JoinType,
    batch: usize,
    pool: &MemoryPool,
) -> Result<JoinExec> {
    let joined = join_schema(l, r, JoinType::Inner);
    JoinExec::try_new(
        l.clone(),
        r.clone(),
        vec![expr(keys.0, l)],
        vec![expr(keys.1, r)],
        vec![false],
        condition.map(|c| expr(c, &joined)),
        jt,
        JoinAlgorithm::Hash,
        BuildSide::Right,
        batch,
        pool,
    )
}

#[allow(clippy::too_many_arguments)]
fn run(
    l: &RecordBatch,
    r: &RecordBatch,
    nkeys: usize,
    null_safe: bool,
    cond: bool,
    jt: JoinType,
    build: BuildSide,
    batch: usize,
    algorithm: JoinAlgorithm,
) -> Result<Vec<String>> {
    let pool = MemoryPool::unbounded();
    let (rows, _) = run_in(
        l, r, nkeys, null_safe, cond, jt, build, batch, algorithm, &pool,
    )?;
    Ok(rows)
}

/// [`run`] in `pool`, a hash join allowed to fall back to sort-merge; the rows and metrics.
#[allow(clippy::too_many_arguments)]
fn run_in(
    l: &RecordBatch,
    r: &RecordBatch,
    nkeys: usize,
    null_safe: bool,
    cond: bool,
    jt: JoinType,
    build: BuildSide,
    batch: usize,
    algorithm: JoinAlgorithm,
    pool: &MemoryPool,
) -> Result<(Vec<String>, ferrospark_common::MetricsSet)> {
    let (ls, rs) = (l.schema(), r.schema());
    let names = ["k1", "k2"];
    let joined = join_schema(&ls, &rs, JoinType::Inner);
    let (lk, rk, condition) = match algorithm {
        JoinAlgorithm::Hash | JoinAlgorithm::SortMerge => (
            (0..nkeys)
                .map(|i| expr(&format!("l{}", names[i]), &ls))
                .collect(),
            (0..nkeys)
                .map(|i| expr(&format!("r{}", names[i]), &rs))
                .collect(),
            cond.then(|| expr("lv < rv", &joined)),
        ),
        JoinAlgorithm::NestedLoop => {
            // The equalities become part of the condition.
            let op = if null_safe { "<=>" } else { "=" };
            let mut parts: Vec<String> = (0..nkeys)
                .map(|i| format!("l{0} {op} r{0}", names[i]))
                .collect();
            if cond {
                parts.push("lv < rv".into());
            }
            let text = parts.join(" AND ");
            (
                Vec::new(),
                Vec::new(),
                (!parts.is_empty()).then(|| expr(&text, &joined)),
            )
        }
    };
    let mut exec = JoinExec::try_new(
        ls,
        rs,
        lk,
        rk,
        vec![
            null_safe;
            if algorithm == JoinAlgorithm::NestedLoop {
                0
            } else {
                nkeys
            }
        ],
        condition,
        jt,
        algorithm,
        build,
        batch,
        pool,
    )?
    .with_sort_merge_fallback(true);
    let (b, p) = match build {
        BuildSide::Left => (l, r),
        BuildSide::Right => (r, l),
    };
    for off in (0..b.num_rows()).step_by(batch) {
        exec.push_build(&b.slice(off, batch.min(b.num_rows() - off)))?;
    }
    exec.finish_build()?;
    let mut out = Vec::new();
    let mut drain = |exec: &mut JoinExec| -> Result<()> {
        while let Some(o) = exec.pull()? {
            assert!(o.num_rows() <= batch, "batch of {} rows", o.num_rows());
            for i in 0..o.num_rows() {
                out.push(cells(&o, i).join("|"));
            }
        }
        Ok(())
    };
    for off in (0..p.num_rows()).step_by(batch) {
        exec.push_probe(&p.slice(off, batch.min(p.num_rows() - off)))?;
        drain(&mut exec)?;
    }
    exec.finish()?;
    drain(&mut exec)?;
    assert_eq!(exec.metrics().get("output_rows") as usize, out.len());
    out.sort();
    Ok((out, exec.metrics().clone()))
}

const TYPES: [JoinType; 6] = [
    JoinType::Inner,
    JoinType::LeftOuter,
    JoinType::RightOuter,
    JoinType::FullOuter,
    JoinType::LeftSemi,
    JoinType::LeftAnti,
];

/// Semi / anti joins build their right side, except that a hash join may build the left
/// side of a semi or anti join (spilling as a sort-merge join when refused memory).
fn buildable(jt: JoinType, build: BuildSide, algorithm: JoinAlgorithm) -> bool {
    !jt.left_only()
        || build == BuildSide::Right
        || (algorithm == JoinAlgorithm::Hash && jt != JoinType::NullAwareAnti)
}

#[test]
fn every_type_and_build_side_matches_a_nested_loop() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(7);
    let sizes = [(60, 50), (0, 30), (30, 0), (1, 1)];
    for (case, &(nl, nr)) in sizes.iter().enumerate() {
        let l = side(&mut rng, "l", nl);
        let r = side(&mut rng, "r", nr);
        for jt in TYPES {
            for build in [BuildSide::Left, BuildSide::Right] {
                for (nkeys, null_safe, cond) in [
                    (1, false, false),
                    (2, false, false),
                    (2, true, false),
                    (1, false, true),
                ] {
                    let want = reference(&l, &r, nkeys, null_safe, cond, jt);
                    for batch in [1, 7, 8192] {
                        for algorithm in [
                            JoinAlgorithm::Hash,
                            JoinAlgorithm::NestedLoop,
                            JoinAlgorithm::SortMerge,
                        ] {
                            if !buildable(jt, build, algorithm) {
                                continue;
                            }
                            let got =
                                run(&l, &r, nkeys, null_safe, cond, jt, build, batch, algorithm)?;
                            assert_eq!(
                                got, want,
                                "case {case}, {jt:?} {algorithm:?} build {build:?}, {nkeys} keys, null-safe {null_safe}, condition {cond}, batch {batch}"
                            );
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// Sort-merge joins spilling both sides (and the buffered rows of a key), and hash joins
/// falling back to sort-merge, under a limit that holds a few rows.
#[test]
fn spilling_joins_match_a_nested_loop() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(11);
    let (l, r) = (side(&mut rng, "l", 90), side(&mut rng, "r", 70));
    let mut spilled = [0u64; 3];
    for jt in TYPES {
        for build in [BuildSide::Left, BuildSide::Right] {
            for (nkeys, null_safe, cond) in [(1, false, false), (2, true, false), (1, false, true)]
            {
                let want = reference(&l, &r, nkeys, null_safe, cond, jt);
                for batch in [1, 7, 8192] {
                    for algorithm in [JoinAlgorithm::SortMerge, JoinAlgorithm::Hash] {
                        if !buildable(jt, build, algorithm) {
                            continue;
                        }
                        let pool = MemoryPool::new(Some(1500));
                        let (got, m) = run_in(
                            &l, &r, nkeys, null_safe, cond, jt, build, batch, algorithm, &pool,
                        )?;
                        assert_eq!(
                            got, want,
                            "{jt:?} {algorithm:?} build {build:?}, {nkeys} keys, null-safe {null_safe}, condition {cond}, batch {batch}"
                        );
                        assert!(
                            m.get("spill_count") > 0,
                            "{jt:?} {algorithm:?} batch {batch}"
                        );
                        assert_eq!(pool.reserved(), 0, "memory given back");
                        spilled[0] += m.get("spilled_rows");
                        spilled[1] += m.get("buffered_spill_count");
                        spilled[2] += m.get("fallback_to_sort_merge");
                    }
                }
            }
        }
    }
    assert!(spilled.iter().all(|&n| n > 0), "{spilled:?}");
    Ok(())
}

#[test]
fn null_aware_anti_join_follows_not_in() -> Result<()> {
    let schema = |p: &str| {
        Arc::new(Schema::new(vec![Field::new(
            format!("{p}k"),
            DataType::Int32,
            true,
        )]))
    };
    let batch = |p: &str, v: Vec<Option<i32>>| {
        RecordBatch::try_new(schema(p), vec![Arc::new(Int32Array::from(v)) as ArrayRef])
            .expect("batch")
    };
    let left = batch("l", vec![Some(1), Some(2), None, Some(3)]);
    let naaj = |right: RecordBatch| -> Result<Vec<String>> {
        let (ls, rs) = (left.schema(), right.schema());
        let mut exec = one_key_join(
            &ls,
            &rs,
            ("lk", "rk"),
            None,
            JoinType::NullAwareAnti,
            8192,
            &MemoryPool::unbounded(),
        )?;
        exec.push_build(&right)?;
        exec.push_probe(&left)?;
        exec.finish()?;
        let mut out = Vec::new();
        while let Some(o) = exec.pull()? {
            out.extend((0..o.num_rows()).map(|i| cells(&o, i).join("|")));
        }
        out.sort();
        Ok(out)
    };
    // An empty subquery keeps every row, the NULL one too.
    assert_eq!(naaj(batch("r", vec![]))?, vec!["1", "2", "3", "NULL"]);
    // A NULL in the subquery keeps none.
    assert_eq!(naaj(batch("r", vec![Some(2), None]))?, Vec::<String>::new());
    // Otherwise an anti join that drops the NULL left key.
    assert_eq!(naaj(batch("r", vec![Some(2), Some(9)]))?, vec!["1", "3"]);
    Ok(())
}

#[test]
fn unsupported_build_sides_and_missing_keys_are_clear_errors() {
    let (l, r) = (side_schema("l"), side_schema("r"));
    let make = |jt: JoinType, build: BuildSide, keys: bool| {
        JoinExec::try_new(
            l.clone(),
            r.clone(),
            if keys { vec![expr("lk1", &l)] } else { vec![] },
            if keys { vec![expr("rk1", &r)] } else { vec![] },
            vec![],
            None,
            jt,
            JoinAlgorithm::Hash,
            build,
            8192,
            &MemoryPool::unbounded(),
        )
    };
    let err = make(JoinType::NullAwareAnti, BuildSide::Left, true)
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("cannot build the Left side"),
        "{err}"
    );
    let err = make(JoinType::Inner, BuildSide::Right, false)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("nested loop"), "{err}");
}

#[test]
fn a_build_side_over_the_memory_limit_is_a_memory_error() {
    let mut rng = StdRng::seed_from_u64(3);
    let (lb, rb) = (side(&mut rng, "l", 2000), side(&mut rng, "r", 2000));
    let (l, r) = (lb.schema(), rb.schema());
    let mut exec = one_key_join(
        &l,
        &r,
        ("lk1", "rk1"),
        None,
        JoinType::Inner,
        8192,
        &MemoryPool::new(Some(1024)),
    )
    .expect("plans");
    let err = exec.push_build(&rb).expect_err("over the limit");
    assert!(err.to_string().contains("ferrospark.memory.limit"), "{err}");
}

#[test]
fn cross_joins_and_joins_without_keys_pair_every_row() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(9);
    for (nl, nr) in [(13, 9), (0, 5), (5, 0)] {
        let l = side(&mut rng, "l", nl);
        let r = side(&mut rng, "r", nr);
        for jt in [JoinType::Cross, JoinType::Inner] {
            for batch in [1, 7, 8192] {
                let got = run(
                    &l,
                    &r,
                    0,
                    false,
                    false,
                    jt,
                    BuildSide::Right,
                    batch,
                    JoinAlgorithm::NestedLoop,
                )?;
                assert_eq!(
                    got,
                    reference(&l, &r, 0, false, false, JoinType::Inner),
                    "{jt:?} batch {batch}"
                );
                assert_eq!(got.len(), nl * nr);
            }
        }
        // A condition alone (no equality) with outer rows.
        for jt in [JoinType::LeftOuter, JoinType::FullOuter, JoinType::LeftAnti] {
            let got = run(
                &l,
                &r,
                0,
                false,
                true,
                jt,
                BuildSide::Right,
                7,
                JoinAlgorithm::NestedLoop,
            )?;
            assert_eq!(got, reference(&l, &r, 0, false, true, jt), "{jt:?}");
        }
    }
    Ok(())
}

#[test]
fn forked_probers_give_the_single_prober_answer() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(13);
    let (l, r) = (side(&mut rng, "l", 300), side(&mut rng, "r", 200));
    for jt in [
        JoinType::Inner,
        JoinType::LeftOuter,
        JoinType::LeftSemi,
        JoinType::LeftAnti,
    ] {
        let want = reference(&l, &r, 1, false, true, jt);
        let (ls, rs) = (l.schema(), r.schema());
        let mut exec = one_key_join(
            &ls,
            &rs,
            ("lk1", "rk1"),
            Some("lv < rv"),
            jt,
            16,
            &MemoryPool::unbounded(),
        )?;
        exec.push_build(&r)?;
        exec.finish_build()?;
        let mut fork = exec.fork_probe()?;
        let mut got = Vec::new();
        for (i, off) in (0..l.num_rows()).step_by(37).enumerate() {
            let b = l.slice(off, 37.min(l.num_rows() - off));
            let e = if i % 2 == 0 { &mut exec } else { &mut fork };
            e.push_probe(&b)?;
            while let Some(o) = e.pull()? {
                got.extend((0..o.num_rows()).map(|i| cells(&o, i).join("|")));
            }
        }
        got.sort();
        assert_eq!(got, want, "{jt:?}");
    }
    // A join that keeps build rows unmatched cannot be split.
    let (ls, rs) = (l.schema(), r.schema());
    let mut exec = one_key_join(
        &ls,
        &rs,
        ("lk1", "rk1"),
        None,
        JoinType::RightOuter,
        16,
        &MemoryPool::unbounded(),
    )?;
    exec.finish_build()?;
    assert!(!exec.can_fork_probe());
    assert!(exec.fork_probe().is_err());
    Ok(())
}

/// Two sides of `n` rows: integer keys with duplicates (every key of one side twice, most
/// keys of the other), NULLs, and a string payload.
fn large_sides(n: usize) -> (RecordBatch, RecordBatch) {
    let schema = |p: &str| {
        Arc::new(Schema::new(vec![
            Field::new(format!("{p}k"), DataType::Int64, true),
            Field::new(format!("{p}s"), DataType::Utf8, true),
        ]))
    };
    let mut rng = StdRng::seed_from_u64(5);
    let mut make = |p: &str, spread: i64| {
        let k: Vec<Option<i64>> = (0..n)
            .map(|_| (rng.random_range(0..50) > 0).then(|| rng.random_range(0..spread)))
            .collect();
        let s: Vec<String> = (0..n).map(|i| format!("{p}{}", i % 977)).collect();
        RecordBatch::try_new(
            schema(p),
            vec![
                Arc::new(Int64Array::from(k)) as ArrayRef,
                Arc::new(StringArray::from(s)),
            ],
        )
        .expect("batch")
    };
    let l = make("l", n as i64 / 2);
    let r = make("r", n as i64 * 2 / 3);
    (l, r)
}

/// Rows, and the sum of each row's text hashed, of `jt` over `l` and `r` in `pool`.
fn digest(
    l: &RecordBatch,
    r: &RecordBatch,
    jt: JoinType,
    algorithm: JoinAlgorithm,
    pool: &MemoryPool,
) -> Result<(usize, u64, ferrospark_common::MetricsSet)> {
    use std::hash::{BuildHasher, Hasher};
    let (ls, rs) = (l.schema(), r.schema());
    let mut exec = one_key_join(&ls, &rs, ("lk", "rk"), None, jt, 4096, pool)?;
    if algorithm == JoinAlgorithm::SortMerge {
        exec = JoinExec::try_new(
            ls.clone(),
            rs.clone(),
            vec![expr("lk", &ls)],
            vec![expr("rk", &rs)],
            vec![false],
            None,
            jt,
            JoinAlgorithm::SortMerge,
            BuildSide::Right,
            4096,
            pool,
        )?;
    }
    let hasher = foldhash::fast::FixedState::with_seed(1);
    let (mut rows, mut sum) = (0usize, 0u64);
    let mut take = |o: RecordBatch| {
        rows += o.num_rows();
        for i in 0..o.num_rows() {
            let mut h = hasher.build_hasher();
            h.write(cells(&o, i).join("|").as_bytes());
            sum = sum.wrapping_add(h.finish());
        }
    };
    for off in (0..r.num_rows()).step_by(4096) {
        exec.push_build(&r.slice(off, 4096.min(r.num_rows() - off)))?;
    }
    for off in (0..l.num_rows()).step_by(4096) {
        exec.push_probe(&l.slice(off, 4096.min(l.num_rows() - off)))?;
        while let Some(o) = exec.pull()? {
            take(o);
        }
    }
    exec.finish()?;
    while let Some(o) = exec.pull()? {
        take(o);
    }
    Ok((rows, sum, exec.metrics().clone()))
}

/// A sort-merge join of sides ten times the memory limit spills both sides and agrees with
/// an unbounded hash join; the pool's peak stays under the limit.
#[test]
fn a_sort_merge_join_of_sides_over_the_limit_spills_and_agrees() -> Result<()> {
    let (l, r) = large_sides(60_000);
    let limit = (l.get_array_memory_size() / 10) as u64;
    for jt in [JoinType::Inner, JoinType::FullOuter, JoinType::LeftAnti] {
        let want = digest(&l, &r, jt, JoinAlgorithm::Hash, &MemoryPool::unbounded())?;
        let pool = MemoryPool::new(Some(limit));
        let got = digest(&l, &r, jt, JoinAlgorithm::SortMerge, &pool)?;
        assert_eq!((got.0, got.1), (want.0, want.1), "{jt:?}");
        assert!(
            got.2.get("spill_count") >= 2,
            "{jt:?}: {:?}",
            got.2.snapshot()
        );
        assert!(pool.peak() <= limit, "peak {} over {limit}", pool.peak());
    }
    Ok(())
}

/// One key holding more build rows than the limit: its rows are spilled while the probe
/// rows of that key stream past them.
#[test]
fn a_skewed_key_spills_its_buffered_rows() -> Result<()> {
    let n = 20_000;
    let schema = |p: &str| {
        Arc::new(Schema::new(vec![
            Field::new(format!("{p}k"), DataType::Int64, true),
            Field::new(format!("{p}v"), DataType::Int64, false),
        ]))
    };
    let batch = |p: &str, k: Vec<i64>| {
        let v: Vec<i64> = (0..k.len() as i64).collect();
        RecordBatch::try_new(
            schema(p),
            vec![
                Arc::new(Int64Array::from(k)) as ArrayRef,
                Arc::new(Int64Array::from(v)),
            ],
        )
        .expect("batch")
    };
    // Right: key 7 on every other row. Left: keys 0..100, key 7 a few times.
    let r = batch(
        "r",
        (0..n).map(|i| if i % 2 == 0 { 7 } else { i }).collect(),
    );
    let l = batch(
        "l",
        (0..300)
            .map(|i| if i % 50 == 0 { 7 } else { i % 100 })
            .collect(),
    );
    for jt in [JoinType::Inner, JoinType::RightOuter, JoinType::LeftSemi] {
        let want = digest(&l, &r, jt, JoinAlgorithm::Hash, &MemoryPool::unbounded())?;
        let pool = MemoryPool::new(Some(40_000));
        let got = digest(&l, &r, jt, JoinAlgorithm::SortMerge, &pool)?;
        assert_eq!((got.0, got.1), (want.0, want.1), "{jt:?}");
        assert!(
            got.2.get("buffered_spill_count") > 0,
            "{:?}",
            got.2.snapshot()
        );
    }
    Ok(())
}

/// `side`'s first key moved to Int64 as `k * scale + offset`: equal keys stay equal.
fn rekeyed(b: &RecordBatch, scale: i64, offset: i64) -> RecordBatch {
    let k = b
        .column(0)
        .as_any()
        .downcast_ref::<Int32Array>()
        .expect("k1");
    let wide: Int64Array = k
        .iter()
        .map(|v| v.map(|v| (v as i64).wrapping_mul(scale).wrapping_add(offset)))
        .collect();
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[0] = Field::new(fields[0].name(), DataType::Int64, true);
    let mut columns = b.columns().to_vec();
    columns[0] = Arc::new(wide);
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("batch")
}

/// Integer keys indexed densely (a small range, also at the ends of `i64`) and by hash
/// (sparse) give the nested loop's answer.
#[test]
fn dense_and_sparse_integer_keys_match_a_nested_loop() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(17);
    let (l, r) = (side(&mut rng, "l", 80), side(&mut rng, "r", 60));
    for (scale, offset) in [
        (1, 0),
        (1, i64::MIN + 5),
        (-1, i64::MAX),
        (1_000_000_007, -3),
        (i64::MAX / 16, 0),
    ] {
        let (l, r) = (rekeyed(&l, scale, offset), rekeyed(&r, scale, offset));
        for jt in TYPES {
            let want = reference(&l, &r, 1, false, false, jt);
            for algorithm in [JoinAlgorithm::Hash, JoinAlgorithm::SortMerge] {
                let got = run(&l, &r, 1, false, false, jt, BuildSide::Right, 7, algorithm)?;
                assert_eq!(
                    got, want,
                    "{jt:?} {algorithm:?} scale {scale} offset {offset}"
                );
            }
        }
    }
    Ok(())
}
