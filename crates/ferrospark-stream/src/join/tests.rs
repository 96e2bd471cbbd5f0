//! The join state manager against a model: a multi-map per version.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::state::{JoinSide, JoinStateManager, StoredRow};
use crate::state::{open_provider, ProviderKind, StateStoreConf, StateStoreId};

type Model = BTreeMap<Vec<u8>, Vec<(Vec<u8>, bool)>>;

fn sorted(mut v: Vec<(Vec<u8>, bool)>) -> Vec<(Vec<u8>, bool)> {
    v.sort();
    v
}

fn rows_of(v: Vec<StoredRow>) -> Vec<(Vec<u8>, bool)> {
    sorted(v.into_iter().map(|r| (r.row, r.matched)).collect())
}

/// Appends, joins (marking matches), removals by key and by value over 25 versions, with
/// the providers reopened every fifth version; each key's rows and flags match the model's.
#[test]
fn a_sides_rows_match_a_model() {
    for kind in [ProviderKind::Memory, ProviderKind::Disk] {
        let dir = tempfile::tempdir().expect("tempdir");
        let conf = StateStoreConf {
            provider: kind,
            min_deltas_for_snapshot: 3,
            min_versions_to_retain: 10,
            ..StateStoreConf::default()
        };
        let [counts_name, rows_name] = JoinSide::Left.store_names();
        let id = StateStoreId::new(dir.path(), 0, 4);
        let mut counts = open_provider(&id.clone().named(counts_name), &conf).expect("open");
        let mut rows = open_provider(&id.clone().named(rows_name), &conf).expect("open");
        let mut rng = StdRng::seed_from_u64(11);
        let mut model = Model::new();
        for v in 0..25u64 {
            if v % 5 == 4 {
                counts = open_provider(&id.clone().named(counts_name), &conf).expect("reopen");
                rows = open_provider(&id.clone().named(rows_name), &conf).expect("reopen");
            }
            let mut m = JoinStateManager::open(counts.as_mut(), rows.as_mut(), v).expect("state");
            for _ in 0..40 {
                let key = vec![rng.random_range(0..12u8)];
                let row = vec![rng.random_range(0..50u8)];
                match rng.random_range(0..10) {
                    0..=5 => {
                        m.append(&key, &row, Some(i64::from(row[0])), false)
                            .expect("append");
                        model.entry(key).or_default().push((row, false));
                    }
                    6 | 7 => {
                        // Rows below a bound join; they are marked matched.
                        let bound = rng.random_range(0..50u8);
                        let mut joined = m
                            .join_with(&key, false, &mut |r| Ok(r[0] < bound))
                            .expect("join");
                        joined.sort();
                        let mut want = Vec::new();
                        for (r, matched) in model.entry(key.clone()).or_default() {
                            if r[0] < bound {
                                *matched = true;
                                want.push(r.clone());
                            }
                        }
                        model.retain(|_, rows| !rows.is_empty());
                        want.sort();
                        assert_eq!(joined, want);
                    }
                    8 => {
                        let below = rng.random_range(0..12u8);
                        let got = m.remove_by_key(&mut |k| Ok(k[0] < below)).expect("by key");
                        let mut want = Vec::new();
                        model.retain(|k, rows| {
                            if k[0] < below {
                                want.extend(rows.iter().cloned());
                                false
                            } else {
                                true
                            }
                        });
                        assert_eq!(rows_of(got), sorted(want));
                    }
                    _ => {
                        let below = rng.random_range(0..50u8);
                        // Both forms: by a condition on the row, and by the stored time.
                        let got = if v % 2 == 0 {
                            m.remove_by_value(&mut |r| Ok(r.row[0] < below))
                        } else {
                            m.remove_older(i64::from(below) - 1)
                        }
                        .expect("by value");
                        let mut want = Vec::new();
                        for rows in model.values_mut() {
                            want.extend(rows.iter().filter(|(r, _)| r[0] < below).cloned());
                            rows.retain(|(r, _)| r[0] >= below);
                        }
                        model.retain(|_, rows| !rows.is_empty());
                        assert_eq!(rows_of(got), sorted(want));
                    }
                }
            }
            for (k, want) in &model {
                assert_eq!(
                    rows_of(m.get(k).expect("get")),
                    sorted(want.clone()),
                    "{kind:?} v{v}"
                );
            }
            assert_eq!(
                m.keys().expect("keys"),
                model.keys().cloned().collect::<Vec<_>>()
            );
            let total: usize = model.values().map(Vec::len).sum();
            assert_eq!(m.num_rows().expect("rows"), total as u64);
            assert_eq!(m.commit().expect("commit"), v + 1);
        }
    }
}

/// A batch longer than one append run, its keys met again in later runs (and twice in a
/// run): each key's rows come back in the order appended, at indexes `0..n`, in the batch
/// that stored them and after a restart from the files.
#[test]
fn appends_across_runs_keep_each_keys_order() {
    use super::state::{Append, APPEND_RUN};
    for kind in [ProviderKind::Memory, ProviderKind::Disk] {
        let dir = tempfile::tempdir().expect("tempdir");
        let conf = StateStoreConf {
            provider: kind,
            ..StateStoreConf::default()
        };
        let id = StateStoreId::new(dir.path(), 2, 0);
        let [a, b] = JoinSide::Left.store_names();
        let n = 2 * APPEND_RUN + 77;
        let key_of = |i: usize| vec![u8::try_from(i % 5).expect("small"); 1 + i % 2];
        let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
            .map(|i| (key_of(i), (i as u64).to_be_bytes().to_vec()))
            .collect();
        let appends: Vec<Append<'_>> = rows
            .iter()
            .map(|(k, r)| Append {
                key: k,
                row: r,
                time: None,
                matched: false,
            })
            .collect();
        let mut want: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
        for (k, r) in &rows {
            want.entry(k.clone()).or_default().push(r.clone());
        }
        for reopen in [false, true] {
            let mut counts = open_provider(&id.clone().named(a), &conf).expect("open");
            let mut stored = open_provider(&id.clone().named(b), &conf).expect("open");
            let mut m = JoinStateManager::open(counts.as_mut(), stored.as_mut(), u64::from(reopen))
                .expect("state");
            if !reopen {
                // Ten keys, each many times in every run.
                m.append_all(&appends).expect("append");
            }
            for (k, rs) in &want {
                let got: Vec<Vec<u8>> = m.get(k).expect("get").into_iter().map(|r| r.row).collect();
                assert_eq!(&got, rs, "{kind:?}, key {k:?}, reopened {reopen}");
            }
            assert_eq!(m.num_rows().expect("rows"), n as u64);
            if !reopen {
                m.commit().expect("commit");
            }
        }
    }
}

#[test]
fn matched_rows_can_be_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = StateStoreConf::default();
    let id = StateStoreId::new(dir.path(), 1, 0);
    let [a, b] = JoinSide::Right.store_names();
    let mut counts = open_provider(&id.clone().named(a), &conf).expect("open");
    let mut rows = open_provider(&id.named(b), &conf).expect("open");
    let mut m = JoinStateManager::open(counts.as_mut(), rows.as_mut(), 0).expect("state");
    m.append(b"k", b"r1", None, false).expect("append");
    m.append(b"k", b"r2", Some(-5), true).expect("append");
    let got = m.join_with(b"k", true, &mut |_| Ok(true)).expect("join");
    assert_eq!(got, vec![b"r1".to_vec()]);
    let stored = m.get(b"k").expect("get");
    assert!(stored.iter().all(|r| r.matched));
    assert_eq!(
        stored.iter().map(|r| r.time).collect::<Vec<_>>(),
        vec![None, Some(-5)],
        "the event time survives being marked matched"
    );
    assert!(m.get(b"other").expect("get").is_empty());
}

mod exec {
    use std::sync::Arc;

    use arrow_array::{Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
    use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
    use ferrospark_common::Config;
    use ferrospark_expr::parse_expr;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use crate::join::exec::{StreamJoinSpec, StreamJoinType};
    use crate::partitioned::PartitionedStreamJoin as StreamJoin;
    use crate::watermark::{WatermarkPolicy, WatermarkTracker};

    /// (key, time in ms, label)
    type Row = (i64, i64, String);
    type Pair = (Option<Row>, Option<Row>);

    fn schema(p: &str) -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new(format!("{p}k"), DataType::Int64, true),
            Field::new(
                format!("{p}t"),
                DataType::Timestamp(TimeUnit::Microsecond, None),
                true,
            ),
            Field::new(format!("{p}v"), DataType::Utf8, true),
        ]))
    }

    fn batch(s: &SchemaRef, rows: &[Row]) -> RecordBatch {
        RecordBatch::try_new(
            s.clone(),
            vec![
                Arc::new(Int64Array::from(
                    rows.iter().map(|r| r.0).collect::<Vec<_>>(),
                )),
                Arc::new(TimestampMicrosecondArray::from(
                    rows.iter().map(|r| r.1 * 1000).collect::<Vec<_>>(),
                )),
                Arc::new(StringArray::from(
                    rows.iter().map(|r| r.2.as_str()).collect::<Vec<_>>(),
                )),
            ],
        )
        .expect("batch")
    }

    fn side_of(b: &RecordBatch, at: usize, i: usize) -> Option<Row> {
        let k = b
            .column(at)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("k");
        if k.is_null(i) {
            return None;
        }
        let t = b
            .column(at + 1)
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .expect("t");
        let v = b
            .column(at + 2)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("v");
        Some((k.value(i), t.value(i) / 1000, v.value(i).to_string()))
    }

    /// What `j` emits for each batch of `input`, in order.
    fn outputs(j: &mut StreamJoin, input: &[(Vec<Row>, Vec<Row>)]) -> Vec<RecordBatch> {
        input
            .iter()
            .enumerate()
            .map(|(b, (l, r))| {
                j.process(
                    b as u64,
                    Some(&batch(&schema("l"), l)),
                    Some(&batch(&schema("r"), r)),
                )
                .expect("batch")
            })
            .collect()
    }

    /// Each batch's pairs, sorted.
    fn sorted_pairs(outputs: &[RecordBatch]) -> Vec<Vec<Pair>> {
        outputs
            .iter()
            .map(|o| {
                let mut p = pairs(o);
                p.sort();
                p
            })
            .collect()
    }

    fn pairs(b: &RecordBatch) -> Vec<Pair> {
        (0..b.num_rows())
            .map(|i| (side_of(b, 0, i), side_of(b, 3, i)))
            .collect()
    }

    fn spec(join_type: StreamJoinType) -> StreamJoinSpec {
        StreamJoinSpec {
            left_schema: schema("l"),
            right_schema: schema("r"),
            left_keys: vec!["lk".into()],
            right_keys: vec!["rk".into()],
            join_type,
            condition: Some(
                parse_expr("lt BETWEEN rt - INTERVAL 10 SECONDS AND rt + INTERVAL 5 SECONDS")
                    .expect("parses"),
            ),
            left_watermark: Some(("lt".into(), 2_000)),
            right_watermark: Some(("rt".into(), 3_000)),
        }
    }

    /// 14 batches of both sides: times around a clock moving 5 s a batch, out of order by up
    /// to 4 s, a few rows far behind (late).
    fn batches(seed: u64) -> Vec<(Vec<Row>, Vec<Row>)> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..14)
            .map(|b| {
                let clock = 20_000 + b * 5_000;
                // Left keys 8..12 never meet a right row: those rows leave unmatched.
                let mut side = |p: &str, keys: i64| {
                    (0..rng.random_range(0..25))
                        .map(|i| {
                            let late = rng.random_bool(0.1);
                            let t = clock + rng.random_range(-4_000..4_000)
                                - if late { 30_000 } else { 0 };
                            (rng.random_range(0..keys), t, format!("{p}{b}-{i}"))
                        })
                        .collect::<Vec<Row>>()
                };
                (side("l", 12), side("r", 8))
            })
            .collect()
    }

    /// What the join must give: its pairs, and each side's rows that never joined.
    struct Reference {
        pairs: Vec<Pair>,
        left_unmatched: Vec<Row>,
        right_unmatched: Vec<Row>,
    }

    /// Every pair of non-late rows the keys and the condition join, by Spark's rules: a row
    /// is late at or below the watermark of the batch before its own.
    fn reference(input: &[(Vec<Row>, Vec<Row>)]) -> Reference {
        let mut tracker = WatermarkTracker::new(vec![2_000, 3_000], WatermarkPolicy::Min);
        let (mut ls, mut rs) = (Vec::new(), Vec::new());
        let mut previous = 0;
        for (l, r) in input {
            let w = previous;
            previous = tracker.current();
            ls.extend(l.iter().filter(|x| x.1 > w).cloned());
            rs.extend(r.iter().filter(|x| x.1 > w).cloned());
            for x in l {
                tracker.observe(0, x.1 * 1000);
            }
            for x in r {
                tracker.observe(1, x.1 * 1000);
            }
            tracker.advance();
        }
        let joins = |l: &Row, r: &Row| l.0 == r.0 && l.1 >= r.1 - 10_000 && l.1 <= r.1 + 5_000;
        let mut pairs = Vec::new();
        for l in &ls {
            for r in &rs {
                if joins(l, r) {
                    pairs.push((Some(l.clone()), Some(r.clone())));
                }
            }
        }
        let mut left_unmatched: Vec<Row> = ls
            .iter()
            .filter(|l| !rs.iter().any(|r| joins(l, r)))
            .cloned()
            .collect();
        let mut right_unmatched: Vec<Row> = rs
            .iter()
            .filter(|r| !ls.iter().any(|l| joins(l, r)))
            .cloned()
            .collect();
        pairs.sort();
        left_unmatched.sort();
        right_unmatched.sort();
        Reference {
            pairs,
            left_unmatched,
            right_unmatched,
        }
    }

    /// Each of `emitted` is one of `pool`, none twice.
    fn drawn_from(emitted: &[Row], pool: &[Row], what: &str) {
        let mut left = pool.to_vec();
        for o in emitted {
            let at = left.iter().position(|u| u == o);
            assert!(
                at.is_some(),
                "{what}: {o:?} emitted unmatched but it matched, or twice"
            );
            if let Some(i) = at {
                left.remove(i);
            }
        }
    }

    /// Runs `join_type` over `input`: (pairs, left rows with NULLs, right rows with NULLs).
    fn run(
        join_type: StreamJoinType,
        input: &[(Vec<Row>, Vec<Row>)],
    ) -> (Vec<Pair>, Vec<Row>, Vec<Row>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut j = StreamJoin::open(spec(join_type), dir.path(), 0, Some(0), &Config::default())
            .expect("open");
        let (mut inner, mut louter, mut router) = (Vec::new(), Vec::new(), Vec::new());
        for out in outputs(&mut j, input) {
            for p in pairs(&out) {
                match p {
                    (Some(l), None) => louter.push(l),
                    (None, Some(r)) => router.push(r),
                    p => inner.push(p),
                }
            }
        }
        inner.sort();
        louter.sort();
        router.sort();
        (inner, louter, router)
    }

    #[test]
    fn full_outer_joins_pairs_and_both_sides_unmatched_rows() {
        for seed in 0..4 {
            let input = batches(seed);
            let want = reference(&input);
            let (inner, louter, router) = run(StreamJoinType::FullOuter, &input);
            assert_eq!(inner, want.pairs, "seed {seed}");
            assert!(!louter.is_empty() && !router.is_empty(), "seed {seed}");
            drawn_from(&louter, &want.left_unmatched, "left");
            drawn_from(&router, &want.right_unmatched, "right");
        }
    }

    #[test]
    fn a_left_semi_join_emits_each_matching_left_row_once() {
        for seed in 0..4 {
            let input = batches(seed);
            let want = reference(&input);
            let dir = tempfile::tempdir().expect("tempdir");
            let mut j = StreamJoin::open(
                spec(StreamJoinType::LeftSemi),
                dir.path(),
                0,
                Some(0),
                &Config::default(),
            )
            .expect("open");
            let mut got = Vec::new();
            for out in outputs(&mut j, &input) {
                assert_eq!(out.num_columns(), 3, "a semi join gives the left columns");
                got.extend((0..out.num_rows()).filter_map(|i| side_of(&out, 0, i)));
            }
            got.sort();
            let mut matched: Vec<Row> = want.pairs.iter().filter_map(|p| p.0.clone()).collect();
            matched.sort();
            matched.dedup();
            assert_eq!(got, matched, "seed {seed}");
        }
    }

    #[test]
    fn a_row_failing_its_own_sides_condition_is_emitted_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = spec(StreamJoinType::LeftOuter);
        s.condition = Some(
            parse_expr("lt BETWEEN rt - INTERVAL 10 SECONDS AND rt AND lv <> 'skip'")
                .expect("parses"),
        );
        let mut j = StreamJoin::open(s, dir.path(), 0, Some(0), &Config::default()).expect("open");
        let l = batch(
            &schema("l"),
            &[(1, 10_000, "skip".into()), (1, 10_000, "keep".into())],
        );
        let r = batch(&schema("r"), &[(1, 12_000, "r".into())]);
        let out = j.process(0, Some(&l), Some(&r)).expect("batch");
        let mut got = pairs(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (
                    Some((1, 10_000, "keep".into())),
                    Some((1, 12_000, "r".into()))
                ),
                (Some((1, 10_000, "skip".into())), None),
            ]
        );
    }

    #[test]
    fn an_outer_join_whose_state_cannot_be_freed_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open =
            |s: StreamJoinSpec| StreamJoin::open(s, dir.path(), 0, Some(0), &Config::default());
        let mut no_wm = spec(StreamJoinType::LeftOuter);
        no_wm.left_watermark = None;
        no_wm.right_watermark = None;
        let err = open(no_wm).err().expect("refused").to_string();
        assert!(
            err.contains("LeftOuter join") && err.contains("watermark"),
            "{err}"
        );
        let mut no_range = spec(StreamJoinType::FullOuter);
        no_range.condition = None;
        let err = open(no_range).err().expect("refused").to_string();
        assert!(err.contains("FullOuter join"), "{err}");
        let mut inner = spec(StreamJoinType::Inner);
        inner.condition = None;
        inner.left_watermark = None;
        inner.right_watermark = None;
        assert!(
            open(inner).is_ok(),
            "an inner join may keep its state forever"
        );
    }

    #[test]
    fn streamed_pairs_are_the_joins_pairs() {
        for seed in 0..4 {
            let input = batches(seed);
            let want = reference(&input);
            let (inner, outer, right) = run(StreamJoinType::LeftOuter, &input);
            assert_eq!(inner, want.pairs, "seed {seed}");
            assert!(right.is_empty());
            assert!(
                !outer.is_empty(),
                "seed {seed}: some unmatched left rows aged out"
            );
            drawn_from(&outer, &want.left_unmatched, "left");
            let (inner, _, right) = run(StreamJoinType::RightOuter, &input);
            assert_eq!(inner, want.pairs, "seed {seed}");
            drawn_from(&right, &want.right_unmatched, "right");
        }
    }

    /// A full outer join of `input` under `settings`: its output per batch (sorted), whether
    /// any store's state went to disk, and the moves to disk.
    fn full_outer_run(
        input: &[(Vec<Row>, Vec<Row>)],
        settings: &[(&str, &str)],
    ) -> (Vec<Vec<Pair>>, bool, u64) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = Config::default();
        for (k, v) in settings {
            cfg.set(*k, *v).expect("set");
        }
        let mut j = StreamJoin::open(
            spec(StreamJoinType::FullOuter),
            dir.path(),
            0,
            Some(0),
            &cfg,
        )
        .expect("open");
        let out = sorted_pairs(&outputs(&mut j, input));
        let on_disk = std::fs::read_dir(dir.path().join("state/0/0"))
            .expect("state")
            .filter_map(|e| e.ok())
            .any(|e| e.path().join("state.db").exists());
        (out, on_disk, j.metrics().spills)
    }

    #[test]
    fn the_disk_provider_joins_as_the_memory_provider() {
        let input = batches(12);
        let run = |provider: &str, limit: Option<&str>| {
            let mut settings = vec![("spark.sql.streaming.stateStore.providerClass", provider)];
            settings.extend(limit.map(|l| ("ferrospark.memory.limit", l)));
            full_outer_run(&input, &settings)
        };
        let hdfs = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
        let (memory, on_disk, spills) = run(hdfs, None);
        assert!(memory.iter().map(Vec::len).sum::<usize>() > 0);
        assert!(
            !on_disk && spills == 0,
            "no limit: the state stays in memory"
        );
        let rocks = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
        assert_eq!(run(rocks, None).0, memory);
        // Under a memory limit the state outgrows, the stores move to disk mid-stream.
        let (limited, on_disk, spills) = run(hdfs, Some("2k"));
        assert!(
            on_disk && spills > 0,
            "the state moved to disk ({spills} moves)"
        );
        assert_eq!(limited, memory);
    }

    /// A first batch whose state outgrows `ferrospark.memory.limit` runs on disk: the pool
    /// refuses a store's growth mid-batch, every store's changes are undone, and the batch
    /// runs again with that store on disk, joining as in memory.
    #[test]
    fn a_first_batch_over_the_memory_limit_joins_on_disk() {
        let input = batches(3);
        let limited = [("ferrospark.memory.limit", "64")];
        let (want, on_disk, _) = full_outer_run(&input, &[]);
        assert!(!on_disk);
        let (first, on_disk, spills) = full_outer_run(&input[..1], &limited);
        assert_eq!(first[..], want[..1]);
        assert!(on_disk && spills > 0, "the first batch ran on disk");
        assert_eq!(full_outer_run(&input, &limited).0, want);
    }

    /// Every join type gives the same rows whatever the runs an input is joined in
    /// (`ferrospark.batch.size` 1, 2 and 7 against the default): a stored row two runs
    /// join is marked once, a semi join emits a left row once, and each key's rows keep
    /// their order.
    #[test]
    fn runs_of_any_size_join_as_one() {
        let input = batches(5);
        let run = |join_type: StreamJoinType, batch_size: Option<&str>| {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut cfg = Config::default();
            if let Some(n) = batch_size {
                cfg.set("ferrospark.batch.size", n).expect("set");
            }
            let mut j =
                StreamJoin::open(spec(join_type), dir.path(), 0, Some(0), &cfg).expect("open");
            let got = outputs(&mut j, &input);
            if join_type != StreamJoinType::LeftSemi {
                return sorted_pairs(&got);
            }
            got.iter()
                .map(|o| {
                    let mut rows: Vec<Pair> = (0..o.num_rows())
                        .map(|i| (side_of(o, 0, i), None))
                        .collect();
                    rows.sort();
                    rows
                })
                .collect::<Vec<_>>()
        };
        for join_type in [
            StreamJoinType::Inner,
            StreamJoinType::LeftOuter,
            StreamJoinType::RightOuter,
            StreamJoinType::FullOuter,
            StreamJoinType::LeftSemi,
        ] {
            let whole = run(join_type, None);
            assert!(
                whole.iter().map(Vec::len).sum::<usize>() > 0,
                "{join_type:?}"
            );
            for n in ["1", "2", "7"] {
                assert_eq!(
                    run(join_type, Some(n)),
                    whole,
                    "{join_type:?} in runs of {n}"
                );
            }
        }
    }

    #[test]
    fn state_partitions_on_threads_give_one_partitions_rows() {
        let input = batches(4);
        let run = |n: &str| {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut cfg = Config::default();
            cfg.set("ferrospark.streaming.statePartitions", n)
                .expect("set");
            let mut j =
                StreamJoin::open(spec(StreamJoinType::FullOuter), dir.path(), 0, None, &cfg)
                    .expect("open");
            assert_eq!(j.partitions().to_string(), n);
            sorted_pairs(&outputs(&mut j, &input))
        };
        let one = run("1");
        assert!(one.iter().map(Vec::len).sum::<usize>() > 0);
        assert_eq!(run("3"), one);
    }

    #[test]
    fn rerunning_the_last_batch_changes_nothing() {
        let input = batches(9);
        let run = |rerun_at: Option<usize>| {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut j = StreamJoin::open(
                spec(StreamJoinType::Inner),
                dir.path(),
                0,
                Some(0),
                &Config::default(),
            )
            .expect("open");
            let mut all = Vec::new();
            for (b, (l, r)) in input.iter().enumerate() {
                let (lb, rb) = (batch(&schema("l"), l), batch(&schema("r"), r));
                let mut out = pairs(&j.process(b as u64, Some(&lb), Some(&rb)).expect("batch"));
                if rerun_at == Some(b) {
                    // A restart that runs the batch again: a new join over the same checkpoint.
                    let mut again = StreamJoin::open(
                        spec(StreamJoinType::Inner),
                        dir.path(),
                        0,
                        Some(0),
                        &Config::default(),
                    )
                    .expect("open");
                    let mut second = pairs(
                        &again
                            .process(b as u64, Some(&lb), Some(&rb))
                            .expect("rerun"),
                    );
                    out.sort();
                    second.sort();
                    assert_eq!(out, second, "the re-run emits what the first run did");
                    assert!(
                        again.process(0, None, None).is_err() || b <= 1,
                        "an older batch is refused"
                    );
                    j = again;
                }
                all.extend(out);
            }
            all.sort();
            all
        };
        assert_eq!(run(Some(6)), run(None));
    }
}
