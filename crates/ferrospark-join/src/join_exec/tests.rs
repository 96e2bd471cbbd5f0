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
        &MemoryPool::unbounded(),
    )?;
    let (b, p) = match build {
        BuildSide::Left => (l, r),
        BuildSide::Right => (r, l),
    };
    for off in (0..b.num_rows()).step_by(batch) {
        exec.push_build(&b.slice(off, batch.min(b.num_rows() - off)))?;
    }
    exec.finish_build()?;
    let mut out = Vec::new();
    let mut drain = |exec: &mut JoinExec| {
        while let Some(o) = exec.pull() {
            assert!(o.num_rows() <= batch, "batch of {} rows", o.num_rows());
            for i in 0..o.num_rows() {
                out.push(cells(&o, i).join("|"));
            }
        }
    };
    for off in (0..p.num_rows()).step_by(batch) {
        exec.push_probe(&p.slice(off, batch.min(p.num_rows() - off)))?;
        drain(&mut exec);
    }
    exec.finish()?;
    drain(&mut exec);
    assert_eq!(exec.metrics().get("output_rows") as usize, out.len());
    out.sort();
    Ok(out)
}

const TYPES: [JoinType; 6] = [
    JoinType::Inner,
    JoinType::LeftOuter,
    JoinType::RightOuter,
    JoinType::FullOuter,
    JoinType::LeftSemi,
    JoinType::LeftAnti,
];

#[test]
fn every_type_and_build_side_matches_a_nested_loop() -> Result<()> {
    let mut rng = StdRng::seed_from_u64(7);
    let sizes = [(60, 50), (0, 30), (30, 0), (1, 1)];
    for (case, &(nl, nr)) in sizes.iter().enumerate() {
        let l = side(&mut rng, "l", nl);
        let r = side(&mut rng, "r", nr);
        for jt in TYPES {
            for build in [BuildSide::Left, BuildSide::Right] {
                if jt.left_only() && build == BuildSide::Left {
                    continue;
                }
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
        while let Some(o) = exec.pull() {
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
    let err = make(JoinType::LeftSemi, BuildSide::Left, true)
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
            while let Some(o) = e.pull() {
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
