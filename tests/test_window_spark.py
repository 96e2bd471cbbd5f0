"""Window functions (issue 5, first part) against PySpark: ranking and offset functions over
data with ties, NULL, NaN and -0.0 partition and order keys, one-row partitions, several
specifications in one call, ascending and descending orders with either NULL placement."""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

import ferrospark as fs
from helpers import arrow_rows, assert_same_rows, norm_float_any, spark_rows

pytestmark = pytest.mark.spark

NAN = float("nan")


def _table(seed: int, n: int) -> pa.Table:
    rng = random.Random(seed)
    p = [None if rng.random() < 0.1 else rng.choice(["a", "b", "é", "日本", ""]) for _ in range(n)]
    o = [rng.choice([None, NAN, -0.0, 0.0, 1.5, 2.0, 3.0, -7.25]) for _ in range(n)]
    # A unique tie-breaker: functions that depend on the order among ties are compared with it.
    t = list(range(n))
    rng.shuffle(t)
    v = [None if rng.random() < 0.3 else rng.randint(-50, 50) for _ in range(n)]
    return pa.table(
        {
            "p": pa.array(p, pa.string()),
            "o": pa.array(o, pa.float64()),
            "t": pa.array(t, pa.int64()),
            "v": pa.array(v, pa.int64()),
        }
    )


DATA = _table(5, 300)
# One-row partitions and a partition of one repeated key.
SMALL = pa.table(
    {
        "p": pa.array(["x", "y", "z", "z", "z"]),
        "o": pa.array([1.0, None, 2.0, 2.0, 2.0]),
        "t": pa.array([1, 2, 3, 4, 5], pa.int64()),
        "v": pa.array([1, None, 3, None, 5], pa.int64()),
    }
)


@pytest.fixture(scope="module")
def frames(spark):
    return spark.createDataFrame(DATA), spark.createDataFrame(SMALL)


ORDERS = {
    "asc": lambda F, c: F.col(c).asc(),
    "desc": lambda F, c: F.col(c).desc(),
    "asc_nulls_last": lambda F, c: F.col(c).asc_nulls_last(),
    "desc_nulls_first": lambda F, c: F.col(c).desc_nulls_first(),
}
OURS = {
    "asc": lambda c: fs.col(c).asc(),
    "desc": lambda c: fs.col(c).desc(),
    "asc_nulls_last": lambda c: fs.col(c).asc_nulls_last(),
    "desc_nulls_first": lambda c: fs.col(c).desc_nulls_first(),
}


@pytest.mark.parametrize("order", list(ORDERS))
def test_ranking_functions_match_spark(spark, frames, order):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    for table, df in [(DATA, frames[0]), (SMALL, frames[1])]:
        # Ties in `o` are peers: rank, dense_rank, percent_rank and cume_dist do not depend on
        # the order among them.
        w = Window.partitionBy("p").orderBy(ORDERS[order](F, "o"))
        expected = df.select(
            "*",
            F.rank().over(w).alias("rk"),
            F.dense_rank().over(w).alias("drk"),
            F.percent_rank().over(w).alias("prk"),
            F.cume_dist().over(w).alias("cd"),
        )
        ours = fs.Window.partition_by("p").order_by(OURS[order]("o"))
        got = fs.window(
            table,
            [
                fs.rank().over(ours).alias("rk"),
                fs.dense_rank().over(ours).alias("drk"),
                fs.percent_rank().over(ours).alias("prk"),
                fs.cume_dist().over(ours).alias("cd"),
            ],
        )
        assert got.column_names == expected.columns
        assert_same_rows(spark_rows(expected), arrow_rows(got), f"ranking {order}")


@pytest.mark.parametrize("order", list(ORDERS))
def test_position_and_offset_functions_match_spark(spark, frames, order):
    """row_number, ntile, lag and lead depend on the order among ties: a unique second key."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    for table, df in [(DATA, frames[0]), (SMALL, frames[1])]:
        w = Window.partitionBy("p").orderBy(ORDERS[order](F, "o"), "t")
        expected = df.select(
            "*",
            F.row_number().over(w).alias("rn"),
            F.ntile(4).over(w).alias("n4"),
            F.ntile(1000).over(w).alias("n1000"),
            F.lag("v").over(w).alias("lag1"),
            F.lag("v", 3, -1).over(w).alias("lag3"),
            F.lead("v", 2).over(w).alias("lead2"),
            F.lead("v", 1, 99).over(w).alias("lead1d"),
            F.expr("lag(v, 1) IGNORE NULLS").over(w).alias("lag_in"),
            F.expr("lead(v, 2, 0) IGNORE NULLS").over(w).alias("lead_in"),
        )
        ours = fs.Window.partition_by("p").order_by(OURS[order]("o"), "t")
        got = fs.window(
            table,
            [
                fs.row_number().over(ours).alias("rn"),
                fs.ntile(4).over(ours).alias("n4"),
                fs.ntile(1000).over(ours).alias("n1000"),
                fs.lag("v").over(ours).alias("lag1"),
                fs.lag("v", 3, -1).over(ours).alias("lag3"),
                fs.lead("v", 2).over(ours).alias("lead2"),
                fs.lead("v", 1, 99).over(ours).alias("lead1d"),
                fs.lag("v", 1, None, ignore_nulls=True).over(ours).alias("lag_in"),
                fs.lead("v", 2, 0, ignore_nulls=True).over(ours).alias("lead_in"),
            ],
        )
        assert got.column_names == expected.columns
        assert_same_rows(spark_rows(expected), arrow_rows(got), f"offsets {order}")


def test_several_specifications_and_no_partition(spark, frames):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = frames[0]
    w1 = Window.orderBy("t")
    w2 = Window.partitionBy("p", "o").orderBy(F.col("t").desc())
    expected = df.select(
        "*",
        F.row_number().over(w1).alias("global_rn"),
        F.rank().over(w2).alias("rk"),
        F.lag("t", 1).over(w1).alias("prev_t"),
    )
    o1 = fs.Window.order_by("t")
    o2 = fs.Window.partition_by("p", "o").order_by(fs.col("t").desc())
    got = fs.window(
        DATA,
        [
            fs.row_number().over(o1).alias("global_rn"),
            fs.rank().over(o2).alias("rk"),
            fs.lag("t", 1).over(o1).alias("prev_t"),
        ],
    )
    assert got.column_names == expected.columns
    assert_same_rows(spark_rows(expected), arrow_rows(got), "several specifications")
    # Two passes, one per specification.
    assert len(fs.last_window_plan()) == 2, fs.last_window_plan()


def test_empty_input_and_errors():
    w = fs.Window.partition_by("p").order_by("o")
    got = fs.window(DATA.slice(0, 0), [fs.row_number().over(w).alias("rn")])
    assert got.num_rows == 0 and got.column_names == [*DATA.column_names, "rn"]
    with pytest.raises(fs.AnalysisError, match="needs an ordered window"):
        fs.window(DATA, [fs.rank().over(fs.Window.partition_by("p"))])
    with pytest.raises(fs.AnalysisError, match="positive"):
        fs.window(DATA, [fs.ntile(0).over(w)])
    with pytest.raises(fs.AnalysisError, match="drop the frame"):
        fs.window(DATA, [fs.row_number().over(w.rows_between(-1, 1))])
    with pytest.raises(fs.AnalysisError, match="nope"):
        fs.window(DATA, [fs.lag("nope").over(w)])


def test_default_column_names_are_spark_names(spark, frames):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = frames[0]
    w = Window.partitionBy("p").orderBy("o")
    w2 = Window.orderBy(F.col("o").desc(), "v")
    expected = df.select(
        F.row_number().over(w),
        F.rank().over(w),
        F.dense_rank().over(w),
        F.percent_rank().over(w),
        F.cume_dist().over(w),
        F.ntile(3).over(w),
        F.lag("v").over(w),
        F.lag("v", 2, -1).over(w),
        F.lead("v").over(w2),
    ).columns
    o = fs.Window.partition_by("p").order_by("o")
    o2 = fs.Window.order_by(fs.col("o").desc(), "v")
    got = fs.window(
        DATA,
        [
            fs.row_number().over(o),
            fs.rank().over(o),
            fs.dense_rank().over(o),
            fs.percent_rank().over(o),
            fs.cume_dist().over(o),
            fs.ntile(3).over(o),
            fs.lag("v").over(o),
            fs.lag("v", 2, -1).over(o),
            fs.lead("v").over(o2),
        ],
    ).column_names[DATA.num_columns :]
    assert got == expected


FRAMED = (
    _table(9, 400)
    .append_column("k", pa.array([None if i % 13 == 0 else (i * 7) % 11 for i in range(400)], pa.int32()))
    .append_column(
        "f",
        pa.array(
            [None if i % 9 == 0 else [NAN, -0.0, 0.1, 1e16, -3.3][i % 5] * (i % 7) for i in range(400)],
            pa.float64(),
        ),
    )
    .append_column(
        "d",
        pa.array(
            [None if i % 11 == 0 else Decimal(i * 37 % 1000 - 500).scaleb(-2) for i in range(400)],
            pa.decimal128(9, 2),
        ),
    )
)
FRAMES = {
    "default": None,
    "rows -2..1": ("rows", -2, 1),
    "rows current..unbounded": ("rows", 0, "uf"),
    "rows 1..3 following": ("rows", 1, 3),
    "rows unbounded..-1": ("rows", "up", -1),
    "range current..current": ("range", 0, 0),
    "range -2..1": ("range", -2, 1),
    "range 1..unbounded": ("range", 1, "uf"),
}


def _bounds(spec, W):
    kind, lo, hi = spec
    conv = {"up": W.unboundedPreceding, "uf": W.unboundedFollowing}
    return kind, conv.get(lo, lo), conv.get(hi, hi)


def _framed(spec, w, o):
    """PySpark's window `w` and ours `o` with the frame `spec` (``None``: Spark's default)."""
    from pyspark.sql import Window

    if spec is None:
        return w, o
    kind, lo, hi = _bounds(spec, Window)
    w = w.rowsBetween(lo, hi) if kind == "rows" else w.rangeBetween(lo, hi)
    kind, lo, hi = _bounds(spec, fs.Window)
    o = o.rows_between(lo, hi) if kind == "rows" else o.range_between(lo, hi)
    return w, o


@pytest.mark.parametrize("frame", list(FRAMES))
@pytest.mark.parametrize("desc", [False, True])
def test_aggregates_over_frames_match_spark(spark, frame, desc):
    """count, sum, min and max over ROWS and RANGE frames, ordered by an int key with ties and
    NULLs (RANGE offsets are values of it), with a unique second key for ROWS frames."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.createDataFrame(FRAMED)
    spec = FRAMES[frame]
    rng = spec is not None and spec[0] == "range"
    sorted_by = [F.col("k").desc() if desc else F.col("k")] + ([] if rng else ["t"])
    ours_by = [fs.col("k").desc() if desc else fs.col("k")] + ([] if rng else ["t"])
    w = Window.partitionBy("p").orderBy(*sorted_by)
    o = fs.Window.partition_by("p").order_by(*ours_by)
    w, o = _framed(spec, w, o)
    expected = df.select(
        "*",
        F.count(F.lit(1)).over(w).alias("n"),
        F.count("v").over(w).alias("nv"),
        F.sum("v").over(w).alias("sv"),
        F.sum("f").over(w).alias("sf"),
        F.min("f").over(w).alias("minf"),
        F.max("f").over(w).alias("maxf"),
        F.max("p").over(w).alias("maxp"),
        F.avg("v").over(w).alias("av"),
        F.avg("f").over(w).alias("af"),
        F.avg("d").over(w).alias("ad"),
        F.sum("d").over(w).alias("sd"),
    )
    got = fs.window(
        FRAMED,
        [
            fs.count().over(o).alias("n"),
            fs.count("v").over(o).alias("nv"),
            fs.sum("v").over(o).alias("sv"),
            fs.sum("f").over(o).alias("sf"),
            fs.min("f").over(o).alias("minf"),
            fs.max("f").over(o).alias("maxf"),
            fs.max("p").over(o).alias("maxp"),
            fs.avg("v").over(o).alias("av"),
            fs.avg("f").over(o).alias("af"),
            fs.avg("d").over(o).alias("ad"),
            fs.sum("d").over(o).alias("sd"),
        ],
    )
    assert got.column_names == expected.columns
    assert_same_rows(spark_rows(expected), arrow_rows(got), f"{frame} desc={desc}")


@pytest.mark.parametrize("frame", list(FRAMES))
def test_statistics_and_collections_over_frames_match_spark(spark, frame):
    """The variance family (Spark's one-pass moments, in row order), bool_and / bool_or, and
    collect_list / collect_set over every frame kind (lists compared as sorted multisets,
    since Spark's order among ties and inside a set is its own)."""
    import pyarrow.compute as pc
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    data = FRAMED.append_column("b", pc.greater(FRAMED["v"], 0))
    df = spark.createDataFrame(data)
    spec = FRAMES[frame]
    rng = spec is not None and spec[0] == "range"
    w = Window.partitionBy("p").orderBy(*(["k"] if rng else ["k", "t"]))
    o = fs.Window.partition_by("p").order_by(*(["k"] if rng else ["k", "t"]))
    w, o = _framed(spec, w, o)
    expected = df.select(
        "t",
        F.stddev("v").over(w).alias("sd"),
        F.var_pop("f").over(w).alias("vp"),
        F.variance("d").over(w).alias("vs"),
        F.stddev_pop("v").over(w).alias("sp"),
        F.bool_and("b").over(w).alias("all"),
        F.bool_or("b").over(w).alias("any"),
        F.array_sort(F.collect_list("v").over(w)).alias("lv"),
        F.array_sort(F.collect_set("v").over(w)).alias("cv"),
        F.size(F.collect_set("f").over(w)).alias("nf"),
        F.percentile("v", 0.5).over(w).alias("med"),
        F.percentile("d", [0.1, 0.75, 1.0]).over(w).alias("pd"),
        F.percentile("f", 0.3).over(w).alias("pf"),
        F.approx_count_distinct("v").over(w).alias("acd"),
        F.approx_count_distinct("f", 0.01).over(w).alias("acs"),
    )
    got = fs.window(
        data,
        [
            fs.stddev("v").over(o).alias("sd"),
            fs.var_pop("f").over(o).alias("vp"),
            fs.variance("d").over(o).alias("vs"),
            fs.stddev_pop("v").over(o).alias("sp"),
            fs.bool_and("b").over(o).alias("all"),
            fs.bool_or("b").over(o).alias("any"),
            fs.collect_list("v").over(o).alias("lv"),
            fs.collect_set("v").over(o).alias("cv"),
            fs.collect_set("f").over(o).alias("nf"),
            fs.percentile("v", 0.5).over(o).alias("med"),
            fs.percentile("d", [0.1, 0.75, 1.0]).over(o).alias("pd"),
            fs.percentile("f", 0.3).over(o).alias("pf"),
            fs.approx_count_distinct("v").over(o).alias("acd"),
            fs.approx_count_distinct("f", 0.01).over(o).alias("acs"),
        ],
    )
    got = got.select(
        ["t", "sd", "vp", "vs", "sp", "all", "any", "lv", "cv", "nf", "med", "pd", "pf", "acd", "acs"]
    )
    rows = []
    for r in got.to_pylist():
        r["lv"], r["cv"], r["nf"] = tuple(sorted(r["lv"])), tuple(sorted(r["cv"])), len(r["nf"])
        r["pd"] = tuple(map(norm_float_any, r["pd"])) if r["pd"] is not None else None
        rows.append(tuple(r.values()))
    want = [
        tuple(tuple(map(norm_float_any, x)) if isinstance(x, list) else x for x in r)
        for r in expected.collect()
    ]

    # The sign of a zero percentile, when a frame holds both -0.0 and 0.0, follows the order
    # of Spark's hash map of counts (boxed doubles keep the two apart); it is not reproduced.
    def unsigned_zero(r):
        return (*r[:12], 0.0 if r[12] == 0.0 else r[12], *r[13:])

    assert_same_rows(
        [tuple(map(norm_float_any, unsigned_zero(r))) for r in want],
        [tuple(map(norm_float_any, unsigned_zero(r))) for r in rows],
        frame,
    )


def test_aggregates_over_whole_partitions_and_double_range_keys(spark):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.createDataFrame(FRAMED)
    whole = Window.partitionBy("p")
    # PySpark's rangeBetween takes whole numbers only; SQL takes fractional offsets.
    by_o = "OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 1.5 PRECEDING AND 0.5 FOLLOWING)"
    expected = df.select(
        "*",
        F.sum("v").over(whole).alias("total"),
        F.min("o").over(whole).alias("lowest"),
        F.expr(f"count(v) {by_o}").alias("near"),
        F.expr(f"sum(f) {by_o}").alias("near_f"),
    )
    got = fs.window(
        FRAMED,
        [
            fs.sum("v").over(fs.Window.partition_by("p")).alias("total"),
            fs.min("o").over(fs.Window.partition_by("p")).alias("lowest"),
            fs.count("v")
            .over(fs.Window.partition_by("p").order_by("o").range_between(-1.5, 0.5))
            .alias("near"),
            fs.sum("f")
            .over(fs.Window.partition_by("p").order_by("o").range_between(-1.5, 0.5))
            .alias("near_f"),
        ],
    )
    assert_same_rows(spark_rows(expected), arrow_rows(got), "whole partitions, double RANGE offsets")
    names = fs.window(
        FRAMED,
        [
            fs.sum("v").over(fs.Window.partition_by("p")),
            fs.count().over(fs.Window.partition_by("p").order_by("k")),
            fs.max("f").over(fs.Window.partition_by("p").order_by("k").rows_between(-2, 1)),
        ],
    ).column_names[FRAMED.num_columns :]
    w2 = Window.partitionBy("p").orderBy("k")
    assert (
        names
        == df.select(
            F.sum("v").over(whole), F.count("*").over(w2), F.max("f").over(w2.rowsBetween(-2, 1))
        ).columns
    )
    with pytest.raises(fs.AnalysisError, match="lower bound"):
        fs.window(FRAMED, [fs.sum("v").over(fs.Window.partition_by("p").order_by("k").rows_between(2, 1))])
    with pytest.raises(fs.AnalysisError, match="RANGE_FRAME_MULTI_ORDER"):
        fs.window(
            FRAMED, [fs.sum("v").over(fs.Window.partition_by("p").order_by("k", "t").range_between(-1, 1))]
        )


@pytest.mark.parametrize("frame", ["default", "rows -2..1", "range 1..unbounded"])
def test_nth_first_and_last_values_match_spark(spark, frame):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.createDataFrame(FRAMED)
    spec = FRAMES[frame]
    rng = spec is not None and spec[0] == "range"
    w = Window.partitionBy("p").orderBy(*(["k"] if rng else ["k", "t"]))
    o = fs.Window.partition_by("p").order_by(*(["k"] if rng else ["k", "t"]))
    w, o = _framed(spec, w, o)
    expected = df.select(
        "*",
        F.nth_value("v", 2).over(w).alias("n2"),
        F.nth_value("v", 3, True).over(w).alias("n3i"),
        F.first_value("v").over(w).alias("fv"),
        F.last_value("v", F.lit(True)).over(w).alias("lvi"),
        F.first("v", ignorenulls=True).over(w).alias("fi"),
        F.last("f").over(w).alias("lf"),
    )
    got = fs.window(
        FRAMED,
        [
            fs.nth_value("v", 2).over(o).alias("n2"),
            fs.nth_value("v", 3, ignore_nulls=True).over(o).alias("n3i"),
            fs.first_value("v").over(o).alias("fv"),
            fs.last_value("v", ignore_nulls=True).over(o).alias("lvi"),
            fs.first("v", ignore_nulls=True).over(o).alias("fi"),
            fs.last("f").over(o).alias("lf"),
        ],
    )
    assert got.column_names == expected.columns
    assert_same_rows(spark_rows(expected), arrow_rows(got), f"nth/first/last {frame}")


def test_window_past_the_memory_limit_spills_and_matches_spark(spark):
    """200k rows in 8,000 window partitions (an int and a string key) under a 2 MB limit: the input is sorted and
    spilled in runs, merged back, and evaluated a partition at a time (metrics say so), with
    the same rows as Spark's."""
    import pyarrow.compute as pc
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    n = 200_000
    rng = random.Random(11)
    big = pa.table(
        {
            "g": pa.array(
                [rng.randrange(2000) if rng.random() > 0.01 else None for _ in range(n)], pa.int64()
            ),
            # A string key too: the spilled runs merge on the row format of both.
            "h": pa.array([rng.choice(["x", "é", "日本", ""]) for _ in range(n)], pa.string()),
            "o": pa.array([rng.choice([None, NAN, -0.0, 0.0, 1.5, 2.5]) for _ in range(n)], pa.float64()),
            "t": pa.array(range(n), pa.int64()),
            "v": pa.array([rng.randint(-1000, 1000) for _ in range(n)], pa.int64()),
        }
    )
    limited = fs.Session(conf={"ferrospark.memory.limit": "2m", "ferrospark.batch.size": "4096"})
    o = fs.Window.partition_by("g", "h").order_by(fs.col("o").desc(), "t")
    got = limited.window(
        pa.Table.from_batches(big.to_batches(max_chunksize=8192)),
        [
            fs.row_number().over(o).alias("rn"),
            fs.sum("v").over(o).alias("s"),
            fs.lag("v", 1).over(o).alias("prev"),
            fs.max("v").over(o.rows_between(-5, 5)).alias("m"),
        ],
    )
    (m,) = fs.last_window_metrics()
    assert m["spill_count"] >= 2 and m["spilled_rows"] == n, m
    w = Window.partitionBy("g", "h").orderBy(F.col("o").desc(), "t")
    expected = spark.createDataFrame(big).select(
        "*",
        F.row_number().over(w).alias("rn"),
        F.sum("v").over(w).alias("s"),
        F.lag("v", 1).over(w).alias("prev"),
        F.max("v").over(w.rowsBetween(-5, 5)).alias("m"),
    )
    assert_same_rows(spark_rows(expected), arrow_rows(got), "spilled window")
    assert pc.sum(got["rn"]).as_py() > n


def test_one_window_partition_past_the_memory_limit_goes_wide_and_matches_spark(spark):
    """No PARTITION BY: 100k rows are one window partition, larger than the 3 MB limit. Its
    rows go to a spill file and only the columns the functions read stay in memory (metrics
    say so), with the same rows as Spark's."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    n = 100_000
    rng = random.Random(12)
    big = pa.table(
        {
            "s": pa.array([rng.choice(["alpha", "beta", "日本語テキスト", ""]) * 3 for _ in range(n)]),
            "t": pa.array(rng.sample(range(n), n), pa.int64()),
            "v": pa.array(
                [rng.randint(-1000, 1000) if rng.random() > 0.1 else None for _ in range(n)], pa.int64()
            ),
            "x": pa.array([rng.random() for _ in range(n)], pa.float64()),
        }
    )
    limited = fs.Session(conf={"ferrospark.memory.limit": "3m", "ferrospark.batch.size": "4096"})
    o = fs.Window.order_by("t")
    got = limited.window(
        pa.Table.from_batches(big.to_batches(max_chunksize=4096)),
        [
            fs.row_number().over(o).alias("rn"),
            fs.sum("v").over(o.rows_between(-5, 5)).alias("s11"),
            fs.lag("v", 2).over(o).alias("lag2"),
        ],
    )
    (m,) = fs.last_window_metrics()
    assert m["wide_partitions"] == 1 and m["spill_count"] >= 1, m
    w = Window.orderBy("t")
    expected = spark.createDataFrame(big).select(
        "*",
        F.row_number().over(w).alias("rn"),
        F.sum("v").over(w.rowsBetween(-5, 5)).alias("s11"),
        F.lag("v", 2).over(w).alias("lag2"),
    )
    assert_same_rows(spark_rows(expected), arrow_rows(got), "one wide partition")


def test_running_float_frames_opt_in_equals_spark_up_to_rounding(spark):
    """``ferrospark.window.exactFloatFrames=false``: sliding sums, means and deviations of
    doubles in O(n) from running buffers, equal to Spark's up to rounding (Spark's last bit
    needs its order of additions, which the default keeps)."""
    import math

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    fast = fs.Session(conf={"ferrospark.window.exactFloatFrames": "false"})
    o = fs.Window.partition_by("p").order_by("k", "t").rows_between(-7, 3)
    got = fast.window(
        FRAMED,
        [fs.sum("f").over(o).alias("s"), fs.avg("f").over(o).alias("a"), fs.stddev("f").over(o).alias("dev")],
    )
    w = Window.partitionBy("p").orderBy("k", "t").rowsBetween(-7, 3)
    want = {
        r["t"]: (r["s"], r["a"], r["dev"])
        for r in spark.createDataFrame(FRAMED)
        .select(
            "t",
            F.sum("f").over(w).alias("s"),
            F.avg("f").over(w).alias("a"),
            F.stddev("f").over(w).alias("dev"),
        )
        .collect()
    }

    def close(x, y):
        if x is None or y is None:
            return x is None and y is None
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6)

    for t, s, a, d in zip(*(got[c].to_pylist() for c in ["t", "s", "a", "dev"]), strict=True):
        ws, wa, wd = want[t]
        assert close(s, ws) and close(a, wa) and close(d, wd), (t, (s, a, d), want[t])
    with pytest.raises(fs.ConfigError):
        fs.Session(conf={"ferrospark.window.exactFloatFrames": "sometimes"})
