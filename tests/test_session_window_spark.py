"""Session windows against Spark's ``groupBy(session_window(...), keys)``: NULL times dropped,
NULL keys grouped, sessions touching exactly at the gap merged, events out of order, several
aggregates; per-row gaps (NULL, unreadable and non-positive ones dropped), date times; and
``fss.session_window`` in Spark's plan shape, with each key's rows spread over partitions so
that partial sessions must merge across them."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import ferrospark as fs
from helpers import assert_same_rows

pytestmark = pytest.mark.spark

BASE = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)


def _events(seed: int, n: int) -> pa.Table:
    rng = random.Random(seed)
    users = ["ann", "bob", "日本", None]
    ts = []
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            ts.append(None)
        else:
            # Minutes, some exactly 10 apart (a session boundary that touches).
            ts.append(
                BASE + dt.timedelta(minutes=rng.choice([0, 10, 20, 25, 40, 41, 90]) + rng.randint(0, 3) * 10)
            )
    gaps = ["5 minutes", "10 minutes", "10 minutes", "15 minutes", "0 seconds", "-5 minutes", "soon", None]
    return pa.table(
        {
            "user": pa.array([rng.choice(users) for _ in range(n)], pa.string()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "v": pa.array([rng.randint(-5, 50) for _ in range(n)], pa.int64()),
            "g": pa.array([rng.choice(gaps) for _ in range(n)], pa.string()),
        }
    )


EVENTS = _events(3, 300)


def _flat_ours(t: pa.Table) -> list[tuple]:
    sw = t["session_window"].combine_chunks()
    cols = [pc.struct_field(sw, "start"), pc.struct_field(sw, "end")] + [t[c] for c in t.column_names[1:]]
    return [tuple(row) for row in zip(*(c.to_pylist() for c in cols), strict=True)]


@pytest.mark.parametrize("gap", ["10 minutes", "5 minutes", "1 hour"])
def test_static_gap_sessions_match_spark(spark, gap):
    from pyspark.sql import functions as F

    df = spark.createDataFrame(EVENTS)
    expected = (
        df.groupBy(F.session_window("ts", gap), "user")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.max("v").alias("m"))
        .select("session_window.start", "session_window.end", "user", "n", "s", "m")
        .collect()
    )
    got = fs.session_window(
        EVENTS,
        "ts",
        gap,
        by="user",
        aggs=[fs.count().alias("n"), fs.sum("v").alias("s"), fs.max("v").alias("m")],
    )
    assert got.column_names == ["session_window", "user", "n", "s", "m"]
    norm = [
        (r[0].replace(tzinfo=None) if r[0] else None, r[1].replace(tzinfo=None) if r[1] else None, *r[2:])
        for r in expected
    ]
    ours = [(r[0].replace(tzinfo=None), r[1].replace(tzinfo=None), *r[2:]) for r in _flat_ours(got)]
    assert_same_rows(norm, ours, f"sessions gap={gap}")


def _spark_rows(df) -> list[tuple]:
    """Spark's session rows flattened as ours are, times without their zone."""
    names = [c for c in df.columns if c != "session_window"]
    rows = df.select("session_window.start", "session_window.end", *names).collect()
    return [(_naive(r[0]), _naive(r[1]), *r[2:]) for r in rows]


def _naive(t):
    return t.replace(tzinfo=None) if t is not None else None


def _ours(t: pa.Table) -> list[tuple]:
    return [(_naive(r[0]), _naive(r[1]), *r[2:]) for r in _flat_ours(t)]


AGGS = [("n", "count"), ("s", "sum"), ("lo", "min")]


def _spark_aggs():
    from pyspark.sql import functions as F

    return [F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo")]


def _fs_aggs():
    return [fs.count().alias("n"), fs.sum("v").alias("s"), fs.min("v").alias("lo")]


def test_per_row_gap_sessions_match_spark(spark):
    """Interval strings per row; NULL, unreadable ('soon') and non-positive gaps dropped."""
    from pyspark.sql import functions as F

    df = spark.createDataFrame(EVENTS)
    expected = _spark_rows(df.groupBy(F.session_window("ts", F.col("g")), "user").agg(*_spark_aggs()))
    got = fs.session_window(EVENTS, "ts", fs.col("g"), by="user", aggs=_fs_aggs())
    assert_same_rows(expected, _ours(got), "per-row gap")
    assert len(expected) > 5


def test_duration_gap_equals_the_same_gap_as_text():
    """Spark takes interval strings only; a duration column is the same gap."""
    minutes = pa.array([int(x.split()[0]) if x and x[0].isdigit() else None for x in EVENTS["g"].to_pylist()])
    durations = pc.cast(pc.multiply(minutes, 60_000_000), pa.duration("us"))
    texts = [f"{m} minutes" if m is not None else None for m in minutes.to_pylist()]
    a = EVENTS.set_column(3, "g", durations)
    b = EVENTS.set_column(3, "g", pa.array(texts, pa.string()))
    got = fs.session_window(a, "ts", fs.col("g"), by="user", aggs=_fs_aggs())
    want = fs.session_window(b, "ts", fs.col("g"), by="user", aggs=_fs_aggs())
    assert_same_rows(_ours(want), _ours(got), "duration gap")


@pytest.mark.parametrize("gap", ["0 seconds", "-5 minutes"])
def test_non_positive_literal_gap_drops_every_row(spark, gap):
    from pyspark.sql import functions as F

    df = spark.createDataFrame(EVENTS)
    assert df.groupBy(F.session_window("ts", gap), "user").count().collect() == []
    assert fs.session_window(EVENTS, "ts", gap, by="user", aggs=[fs.count()]).num_rows == 0


def test_date_time_is_midnight_in_the_session_zone(spark):
    from pyspark.sql import functions as F

    days = pa.table(
        {
            "k": pa.array(["a", "a", "a", "b", None, "b"]),
            "d": pa.array([dt.date(2024, 1, d) for d in (1, 2, 5, 1, 3, 9)], pa.date32()),
            "v": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
        }
    )
    df = spark.createDataFrame(days)
    expected = _spark_rows(df.groupBy(F.session_window("d", "2 days"), "k").agg(F.sum("v").alias("s")))
    got = fs.session_window(days, "d", "2 days", by="k", aggs=[fs.sum("v").alias("s")])
    assert_same_rows(expected, _ours(got), "date sessions")


def test_no_keys_and_empty_input(spark):
    from pyspark.sql import functions as F

    df = spark.createDataFrame(EVENTS)
    expected = _spark_rows(df.groupBy(F.session_window("ts", "10 minutes")).agg(*_spark_aggs()))
    got = fs.session_window(EVENTS, "ts", "10 minutes", aggs=_fs_aggs())
    assert_same_rows(expected, _ours(got), "no keys")
    empty = fs.session_window(EVENTS.slice(0, 0), "ts", "10 minutes", by="user", aggs=_fs_aggs())
    assert empty.num_rows == 0
    assert empty.column_names == ["session_window", "user", "n", "s", "lo"]


@pytest.mark.parametrize("gap", ["10 minutes", "dynamic"])
def test_fss_session_window_merges_partial_sessions_across_partitions(spark, gap):
    """Rows of one key sit in every partition (round-robin), so each partition's partial
    sessions are pieces that only Spark's shuffle and the final merge put together."""
    from pyspark.sql import functions as F

    from ferrospark import spark as fss

    big = pa.concat_tables([_events(s, 400) for s in (5, 6, 7)])
    df = spark.createDataFrame(big).repartition(4)
    spark_gap = F.col("g") if gap == "dynamic" else gap
    ours_gap = fs.col("g") if gap == "dynamic" else gap
    expected = _spark_rows(df.groupBy(F.session_window("ts", spark_gap), "user").agg(*_spark_aggs()))
    got = fss.session_window(df, "ts", ours_gap, by="user", aggs=_fs_aggs())
    assert got.columns == ["session_window", "user", "n", "s", "lo"]
    assert_same_rows(expected, _spark_rows(got), f"fss sessions gap={gap}")
    # A quarter of the rows alone finds about as many sessions as the whole, each a piece:
    # the pieces of four partitions far outnumber the sessions they merge into.
    pieces = sum(
        fs.session_window(big.slice(q * 300, 300), "ts", ours_gap, by="user", aggs=_fs_aggs()).num_rows
        for q in range(4)
    )
    assert pieces > 2 * len(expected)


def test_fss_session_window_distinct_and_global(spark):
    from pyspark.sql import functions as F

    from ferrospark import spark as fss

    df = spark.createDataFrame(EVENTS).repartition(3)
    expected = _spark_rows(
        df.groupBy(F.session_window("ts", "20 minutes"), "user").agg(F.count_distinct("v").alias("d"))
    )
    got = fss.session_window(df, "ts", "20 minutes", by="user", aggs=[fs.count_distinct("v").alias("d")])
    assert_same_rows(expected, _spark_rows(got), "distinct")
    expected = _spark_rows(df.groupBy(F.session_window("ts", "20 minutes")).agg(*_spark_aggs()))
    got = fss.session_window(df, "ts", "20 minutes", aggs=_fs_aggs())
    assert_same_rows(expected, _spark_rows(got), "global")


def test_session_window_errors():
    with pytest.raises(fs.AnalysisError, match=r"gap .*requires interval text"):
        fs.session_window(EVENTS, "ts", fs.col("v"), by="user", aggs=[fs.count()])
    with pytest.raises(fs.AnalysisError, match="'ten minutes' is not an interval"):
        fs.session_window(EVENTS, "ts", "ten minutes", by="user", aggs=[fs.count()])
    with pytest.raises(fs.UnsupportedError, match="months"):
        fs.session_window(EVENTS, "ts", "1 month", by="user", aggs=[fs.count()])
    with pytest.raises(fs.AnalysisError, match=r"session_window\(v\).*TIMESTAMP"):
        fs.session_window(EVENTS, "v", "10 minutes", by="user", aggs=[fs.count()])
    with pytest.raises(fs.AnalysisError, match="UNRESOLVED_COLUMN.*nope"):
        fs.session_window(EVENTS, "ts", fs.col("nope"), by="user", aggs=[fs.count()])
    # The session keeps working after each error.
    assert fs.session_window(EVENTS, "ts", "10 minutes", by="user", aggs=[fs.count()]).num_rows > 0


def test_fss_session_window_reads_a_native_scan_in_its_first_tasks(spark, tmp_path):
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from ferrospark import spark as fss

    path = tmp_path / "events.parquet"
    pq.write_table(pa.concat_tables([_events(s, 300) for s in (8, 9)]), path, row_group_size=100)
    df = fss.read_parquet(spark, str(path))
    got = fss.session_window(df, "ts", "10 minutes", by="user", aggs=_fs_aggs())
    theirs = spark.read.parquet(str(path))
    expected = _spark_rows(theirs.groupBy(F.session_window("ts", "10 minutes"), "user").agg(*_spark_aggs()))
    assert_same_rows(expected, _spark_rows(got), "fss sessions over a native scan")


def test_time_as_an_expression(spark):
    """``time=fs.col("day").cast("timestamp")``: evaluated natively in one process, by Spark
    in fss (API.md: every argument naming a column takes an expression)."""
    from pyspark.sql import functions as F

    from ferrospark import spark as fss

    rng = random.Random(4)
    days = pa.table(
        {
            "k": pa.array([rng.choice(["a", "b", None]) for _ in range(200)]),
            "day": pa.array(
                [
                    None
                    if rng.random() < 0.05
                    else dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 60))
                    for _ in range(200)
                ],
                pa.date32(),
            ),
            "v": pa.array([rng.randint(0, 9) for _ in range(200)], pa.int64()),
        }
    )
    df = spark.createDataFrame(days).repartition(3)
    expected = _spark_rows(
        df.groupBy(F.session_window(F.col("day").cast("timestamp"), "3 days"), "k").agg(F.sum("v").alias("s"))
    )
    ours = fs.session_window(
        days, fs.col("day").cast("timestamp"), "3 days", by="k", aggs=[fs.sum("v").alias("s")]
    )
    assert_same_rows(expected, _ours(ours), "time expression")
    on_spark = fss.session_window(
        df, fs.col("day").cast("timestamp"), "3 days", by="k", aggs=[fs.sum("v").alias("s")]
    )
    assert_same_rows(expected, _spark_rows(on_spark), "time expression on Spark")
    with pytest.raises(fs.AnalysisError, match="UNRESOLVED_COLUMN.*nope"):
        fs.session_window(days, fs.col("nope").cast("timestamp"), "3 days", by="k", aggs=[fs.count()])


def test_dataframe_group_by_session_window_matches_pyspark(spark):
    """PySpark's own code with only the session swapped: ``groupBy(session_window(...), key)``
    with a static and a per-row gap (a CASE expression of interval text, as Spark's docs
    write it), the same column names, and rows equal to Spark's."""
    from pyspark.sql import functions as PF

    from ferrospark import functions as F

    def build(s, F):
        df = s.createDataFrame(EVENTS)
        static = df.groupBy(F.session_window("ts", "10 minutes"), "user").agg(
            F.count("*").alias("n"), F.sum("v").alias("s")
        )
        dynamic_gap = F.when(F.col("user") == "ann", "5 minutes").otherwise("20 minutes")
        dynamic = df.groupBy(F.session_window(F.col("ts"), dynamic_gap)).agg(F.max("v").alias("m"))
        return static, dynamic

    ours, theirs = build(fs.Session(conf={"spark.sql.session.timeZone": "UTC"}), F), build(spark, PF)
    for o, t in zip(ours, theirs, strict=True):
        assert o.columns == t.columns
        assert_same_rows(_spark_rows(t), _ours(o.toArrow()), "groupBy(session_window)")


def test_sql_group_by_session_window_matches_spark(spark):
    """Spark's documented SQL form: ``GROUP BY a, session_window(b, '5 minutes')`` with
    ``session_window.start`` / ``.end`` read in the select list, and the whole struct."""
    s = fs.Session(conf={"spark.sql.session.timeZone": "UTC"})
    s.createDataFrame(EVENTS).createOrReplaceTempView("events")
    spark.createDataFrame(EVENTS).createOrReplaceTempView("events")
    q = """SELECT user, session_window.start AS s, session_window.end AS e, count(*) AS cnt, sum(v) AS total
        FROM events GROUP BY user, session_window(ts, '10 minutes')"""
    got, want = s.sql(q), spark.sql(q)
    assert got.columns == want.columns
    assert_same_rows(
        [(r[0], _naive(r[1]), _naive(r[2]), *r[3:]) for r in want.collect()],
        [
            (r[0], _naive(r[1]), _naive(r[2]), *r[3:])
            for r in (tuple(d.values()) for d in got.toArrow().to_pylist())
        ],
        "SQL session_window",
    )
    q2 = "SELECT session_window(ts, g), count(*) AS n FROM events GROUP BY session_window(ts, g)"
    assert s.sql(q2).columns == spark.sql(q2).columns
    assert_same_rows(_spark_rows(spark.sql(q2)), _ours(s.sql(q2).toArrow()), "SQL per-row gap")
