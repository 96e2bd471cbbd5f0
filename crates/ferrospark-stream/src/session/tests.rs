//! The streaming session window aggregation against sessions computed over all rows at once.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{
    Array, Int64Array, RecordBatch, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use ferrospark_agg::AggregateCall;
use ferrospark_common::Config;
use ferrospark_expr::{parse_expr, Expr};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{OutputMode, SessionGap, SessionWindowSpec};
use crate::partitioned::PartitionedSessionWindow as SessionWindowAggregation;

const SEC: i64 = 1_000_000;

/// (user, time in µs, value)
type Row = (String, i64, i64);
/// (user, start, end) -> (count, sum)
type Sessions = BTreeMap<(String, i64, i64), (i64, i64)>;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("user", DataType::Utf8, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn batch(rows: &[Row]) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
            )),
            Arc::new(
                TimestampMicrosecondArray::from(rows.iter().map(|r| r.1).collect::<Vec<_>>())
                    .with_timezone("UTC"),
            ),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("batch")
}

fn spec(mode: OutputMode, gap_secs: i64, delay_ms: i64) -> SessionWindowSpec {
    let mut count = AggregateCall::new("count", vec![Expr::Column("v".into())]);
    count.alias = Some("n".into());
    let mut sum = AggregateCall::new("sum", vec![Expr::Column("v".into())]);
    sum.alias = Some("s".into());
    SessionWindowSpec {
        schema: schema(),
        time: "ts".into(),
        gap: SessionGap::Fixed(gap_secs * SEC),
        keys: vec!["user".into()],
        aggs: vec![count, sum],
        watermark: Some(("ts".into(), delay_ms)),
        output_mode: mode,
    }
}

fn rows_of(b: &RecordBatch) -> Sessions {
    let w = b
        .column(0)
        .as_any()
        .downcast_ref::<StructArray>()
        .expect("window");
    let ts = |i: usize| {
        w.column(i)
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .expect("ts")
            .clone()
    };
    let (start, end) = (ts(0), ts(1));
    let user = b
        .column(1)
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("user");
    let n = b
        .column(2)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("n");
    let s = b
        .column(3)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("s");
    (0..b.num_rows())
        .map(|i| {
            (
                (user.value(i).to_string(), start.value(i), end.value(i)),
                (n.value(i), s.value(i)),
            )
        })
        .collect()
}

/// Sessions of all rows at once.
fn reference(rows: &[Row], gap: i64) -> Sessions {
    let mut by_user: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        by_user.entry(r.0.clone()).or_default().push(r);
    }
    let mut out = Sessions::new();
    for (u, mut rs) in by_user {
        rs.sort_by_key(|r| r.1);
        let mut cur: Option<(i64, i64, i64, i64)> = None;
        for r in rs {
            match cur.as_mut() {
                Some(c) if r.1 <= c.1 => {
                    c.1 = c.1.max(r.1 + gap);
                    c.2 += 1;
                    c.3 += r.2;
                }
                _ => {
                    if let Some(c) = cur.take() {
                        out.insert((u.clone(), c.0, c.1), (c.2, c.3));
                    }
                    cur = Some((r.1, r.1 + gap, 1, r.2));
                }
            }
        }
        if let Some(c) = cur {
            out.insert((u.clone(), c.0, c.1), (c.2, c.3));
        }
    }
    out
}

/// 12 batches over 6 users, clock moving 20 s a batch, disorder up to 15 s (never late
/// under a 30 s delay), then a far-future row of another user so the watermark passes all.
fn input(seed: u64) -> Vec<Vec<Row>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out: Vec<Vec<Row>> = (0..12)
        .map(|b| {
            let clock = 100 * SEC + b * 20 * SEC;
            (0..rng.random_range(0..30))
                .map(|_| {
                    (
                        format!("u{}", rng.random_range(0..6)),
                        clock + rng.random_range(-15 * SEC..5 * SEC),
                        rng.random_range(-5..100),
                    )
                })
                .collect()
        })
        .collect();
    out.push(vec![("zz".into(), 10_000 * SEC, 0)]);
    out
}

fn run(mode: OutputMode, batches: &[Vec<Row>]) -> Vec<Sessions> {
    let dir = tempfile::tempdir().expect("tempdir");
    run_in(mode, batches, dir.path(), &Config::default())
}

fn run_in(
    mode: OutputMode,
    batches: &[Vec<Row>],
    dir: &std::path::Path,
    cfg: &Config,
) -> Vec<Sessions> {
    let mut sw =
        SessionWindowAggregation::open(spec(mode, 10, 30_000), dir, 0, Some(0), cfg).expect("open");
    let mut out = Vec::new();
    for (b, rows) in batches.iter().enumerate() {
        out.push(rows_of(
            &sw.process(b as u64, Some(&batch(rows))).expect("batch"),
        ));
    }
    // A batch without data: the watermark the last batch moved frees the sessions.
    out.push(rows_of(
        &sw.process(batches.len() as u64, None)
            .expect("no-data batch"),
    ));
    out
}

fn without_zz(s: Sessions) -> Sessions {
    s.into_iter().filter(|((u, _, _), _)| u != "zz").collect()
}

#[test]
fn every_output_mode_ends_with_the_sessions_of_all_rows() {
    for seed in 0..5 {
        let batches = input(seed);
        let all: Vec<Row> = batches.concat();
        let want = without_zz(reference(&all, 10 * SEC));
        // Complete: the last batch emits every session.
        let complete = run(OutputMode::Complete, &batches);
        assert_eq!(
            without_zz(complete.last().cloned().unwrap_or_default()),
            want,
            "seed {seed}"
        );
        // Append: each session once, final.
        let mut appended = Sessions::new();
        for s in run(OutputMode::Append, &batches) {
            for (k, v) in s {
                assert!(
                    appended.insert(k, v).is_none(),
                    "seed {seed}: a session emitted twice"
                );
            }
        }
        assert_eq!(without_zz(appended), want, "seed {seed}");
        // Update: each final session's last emission carries its final values.
        let mut latest = Sessions::new();
        for s in run(OutputMode::Update, &batches) {
            latest.extend(s);
        }
        for (k, v) in &want {
            assert_eq!(latest.get(k), Some(v), "seed {seed}: {k:?}");
        }
    }
}

#[test]
fn late_sessions_are_dropped_under_the_previous_batchs_watermark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sw = SessionWindowAggregation::open(
        spec(OutputMode::Update, 10, 5_000),
        dir.path(),
        0,
        Some(0),
        &Config::default(),
    )
    .expect("open");
    let r = |u: &str, secs: i64| (u.to_string(), secs * SEC, 1);
    // Batch 0 sees time 100 s: batch 1 runs under watermark 95 s, late rows under 0.
    sw.process(0, Some(&batch(&[r("a", 100)]))).expect("b0");
    let b1 = rows_of(&sw.process(1, Some(&batch(&[r("b", 50)]))).expect("b1"));
    assert_eq!(
        b1.len(),
        0,
        "a session ending at or below the eviction watermark is not emitted"
    );
    // Batch 2 drops rows under 95 s: b at 84 s ends at 94 s (late), c at 86 s is not; d at
    // 80 s is late even though d at 88 s would have merged its span into one ending later.
    let rows = [r("b", 84), r("c", 86), r("c", 200), r("d", 80), r("d", 88)];
    let b2 = rows_of(&sw.process(2, Some(&batch(&rows))).expect("b2"));
    let starts: Vec<(&str, i64)> = b2.keys().map(|k| (k.0.as_str(), k.1 / SEC)).collect();
    assert_eq!(starts, vec![("c", 86), ("c", 200), ("d", 88)], "{b2:?}");
}

#[test]
fn a_per_row_gap_and_a_rerun() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = spec(OutputMode::Complete, 0, 1_000);
    s.gap = SessionGap::PerRow(
        parse_expr("CASE WHEN user = 'a' THEN '20 seconds' WHEN user = 'b' THEN '5 seconds' END")
            .expect("parses"),
    );
    let open =
        || SessionWindowAggregation::open(s.clone(), dir.path(), 0, Some(0), &Config::default());
    let mut sw = open().expect("open");
    let r = |u: &str, secs: i64| (u.to_string(), secs * SEC, 1);
    let rows = [r("a", 0), r("a", 15), r("b", 0), r("b", 7), r("z", 3)];
    let first = rows_of(&sw.process(0, Some(&batch(&rows))).expect("b0"));
    let want: Vec<(String, i64, i64)> = vec![
        ("a".into(), 0, 35 * SEC),
        ("b".into(), 0, 5 * SEC),
        ("b".into(), 7 * SEC, 12 * SEC),
    ];
    assert_eq!(
        first.keys().cloned().collect::<Vec<_>>(),
        want,
        "a NULL gap drops z"
    );
    let again = rows_of(
        &open()
            .expect("reopen")
            .process(0, Some(&batch(&rows)))
            .expect("rerun"),
    );
    assert_eq!(first, again);
    assert!(
        open().expect("reopen").process(2, None).is_err(),
        "a batch after a gap is refused"
    );
}

#[test]
fn append_without_a_watermark_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = spec(OutputMode::Append, 10, 0);
    s.watermark = None;
    let err = SessionWindowAggregation::open(s, dir.path(), 0, Some(0), &Config::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("Append output mode not supported"), "{err}");
}

#[test]
fn a_batch_without_rows_for_a_partition_is_fine_with_any_aggregate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = spec(OutputMode::Append, 10, 1_000);
    let mut max = AggregateCall::new("max", vec![Expr::Column("v".into())]);
    max.alias = Some("top".into());
    let mut list = AggregateCall::new("collect_list", vec![Expr::Column("v".into())]);
    list.alias = Some("all".into());
    s.aggs = vec![max, list];
    let mut sw = SessionWindowAggregation::open(s, dir.path(), 0, Some(0), &Config::default())
        .expect("open");
    let out = sw.process(0, Some(&batch(&[]))).expect("an empty batch");
    assert_eq!(out.num_rows(), 0);
    let out = sw
        .process(1, Some(&batch(&[("a".into(), SEC, 1)])))
        .expect("a batch");
    assert_eq!(out.num_rows(), 0, "the session is still open");
}

#[test]
fn a_per_row_gap_over_no_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = spec(OutputMode::Append, 0, 1_000);
    s.gap = SessionGap::PerRow(
        parse_expr("CASE WHEN user = 'a' THEN '20 seconds' ELSE '5 seconds' END").expect("parses"),
    );
    let mut sw = SessionWindowAggregation::open(s, dir.path(), 0, Some(0), &Config::default())
        .expect("open");
    assert_eq!(
        sw.process(0, Some(&batch(&[])))
            .expect("no rows")
            .num_rows(),
        0
    );
}

/// A first batch whose sessions outgrow `ferrospark.memory.limit` runs on disk: the pool
/// refuses its store's growth mid-batch, the batch's changes are undone and it runs again
/// on disk, with the sessions it emits in memory. (The pool used to be told only what a
/// loaded version held, so such a batch ran in memory whole.)
#[test]
fn a_first_batch_over_the_memory_limit_runs_on_disk() {
    let batches: Vec<Vec<Row>> = input(7).into_iter().filter(|b| !b.is_empty()).collect();
    for mode in [OutputMode::Append, OutputMode::Update, OutputMode::Complete] {
        let want = run(mode, &batches);
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = Config::default();
        cfg.set("ferrospark.memory.limit", "64").expect("set");
        let db = dir.path().join("state/0/0/state.db");
        let mut sw =
            SessionWindowAggregation::open(spec(mode, 10, 30_000), dir.path(), 0, Some(0), &cfg)
                .expect("open");
        let first = rows_of(&sw.process(0, Some(&batch(&batches[0]))).expect("batch"));
        assert!(db.exists(), "{mode:?}: the first batch ran on disk");
        assert_eq!(first, want[0], "{mode:?}");
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(run_in(mode, &batches, dir.path(), &cfg), want, "{mode:?}");
    }
}
