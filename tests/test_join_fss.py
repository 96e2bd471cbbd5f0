"""``fss.join`` inside Spark tasks against Spark's own join: every join type with every
strategy Spark can run it with, from ordinary DataFrames and from ``fss.read_parquet`` scans
(the probe fused into the scan tasks), on the data of test_join_spark.py (NULL, duplicate and
skewed keys, unicode, decimals, NaN and -0.0)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from test_join_spark import HOWS, LEFT, RIGHT

import ferrospark as fs
from ferrospark import spark as fss
from helpers import assert_same_rows, spark_rows

pytestmark = pytest.mark.spark

SPARK_STRATEGIES = {
    "inner": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge"],
    "left": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge"],
    "right": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge"],
    "full": ["auto", "shuffle_hash", "sort_merge", "nested_loop"],
    "semi": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge"],
    "anti": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge", "nested_loop"],
}


@pytest.fixture(scope="module")
def frames(spark):
    return spark.createDataFrame(LEFT).repartition(3), spark.createDataFrame(RIGHT)


@pytest.fixture(scope="module")
def parquet_sides(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("join_fss")
    paths = []
    for name, table in [("left", LEFT), ("right", RIGHT)]:
        path = root / name
        path.mkdir()
        for i, at in enumerate(range(0, table.num_rows, 150)):
            pq.write_table(table.slice(at, 150), path / f"part-{i}.parquet", row_group_size=50)
        paths.append(str(path))
    return paths[0], paths[1]


@pytest.mark.parametrize("how", HOWS)
def test_using_join_equals_spark(spark, frames, how):
    ldf, rdf = frames
    for on in ["k", ["k", "s"]]:
        expected = ldf.join(rdf, on, how)
        want = spark_rows(expected)  # once for every strategy
        for strategy in SPARK_STRATEGIES[how]:
            got = fss.join(ldf, rdf, on, how, strategy=strategy)
            context = f"on={on} how={how} {fss.last_spark_join_plan()}"
            assert got.columns == expected.columns, context
            assert_same_rows(want, spark_rows(got), context)


@pytest.mark.parametrize("how", HOWS)
def test_condition_join_from_scans_equals_spark(spark, parquet_sides, how):
    """Both sides from fss.read_parquet: a broadcast join probes inside the scan tasks, a
    shuffled one partitions each scan's rows inside the scan tasks."""
    lpath, rpath = parquet_sides
    names = ["rk", "rs", "rd", "rf", "rv"]
    left = fss.read_parquet(spark, lpath)
    right = fss.read_parquet(spark, rpath).toDF(*names)
    ldf = spark.read.parquet(lpath)
    rdf = spark.read.parquet(rpath).toDF(*names)
    expected = ldf.join(rdf, (ldf.k == rdf.rk) & (ldf.lv < rdf.rv + 50), how)
    cond = (fs.col("k") == fs.col("rk")) & (fs.col("lv") < fs.col("rv") + 50)
    want = spark_rows(expected)
    for strategy in SPARK_STRATEGIES[how]:
        got = fss.join(left, right, cond, how, strategy=strategy)
        context = f"how={how} {fss.last_spark_join_plan()}"
        assert got.columns == expected.columns, context
        assert_same_rows(want, spark_rows(got), context)


def test_a_broadcast_side_is_built_once_per_python_worker(spark, frames):
    ldf, rdf = frames
    probe = ldf.repartition(8)
    got = fss.join(probe, rdf, "k", "inner", strategy="broadcast_hash")
    assert got.count() == ldf.join(rdf, "k").count()
    builds, probes = fss.last_spark_join_builds(), fss.last_spark_join_probes()
    # Fewer builds than probe tasks: each Python worker builds once. local[2] keeps a pool
    # of at most four workers here (earlier jobs ran two Python steps per task).
    assert probes == 8, probes
    assert builds is not None and 1 <= builds <= 4, builds
    # Exactly one build per worker process that probed, counted apart from the builds.
    assert builds == fss.last_spark_join_workers(), (builds, fss.last_spark_join_workers())


def test_auto_follows_spark_sizes(spark, frames, parquet_sides):
    ldf, rdf = frames
    fss.join(ldf, rdf, "k", "inner")
    assert fss.last_spark_join_plan().startswith("broadcast_hash"), fss.last_spark_join_plan()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        fss.join(ldf, rdf, "k", "inner")
        # Shuffled: ferrospark's tasks build a hash table per partition where Spark would
        # sort-merge (ferrospark.join.preferHashJoin), falling back to sort-merge past memory.
        plan = fss.last_spark_join_plan()
        assert plan.startswith(("sort_merge", "shuffle_hash")), plan
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


def test_bad_requests_are_clear_errors(spark, frames):
    ldf, rdf = frames
    with pytest.raises(fs.ConfigError, match="cannot build either side"):
        fss.join(ldf, rdf, "k", "full", strategy="broadcast_hash")
    with pytest.raises(fs.AnalysisError, match="UNRESOLVED_USING_COLUMN_FOR_JOIN"):
        fss.join(ldf, rdf.drop("s"), ["k", "s"], "inner")
    with pytest.raises(fs.ConfigError, match="unknown join strategy"):
        fss.join(ldf, rdf, "k", strategy="teleport")


def test_spilling_inside_spark_tasks(spark, frames):
    ldf, rdf = frames
    spark.conf.set("ferrospark.memory.limit", "8k")
    try:
        got = fss.join(ldf, rdf, "k", "full", strategy="sort_merge")
        assert_same_rows(spark_rows(ldf.join(rdf, "k", "full")), spark_rows(got), "spilling")
    finally:
        spark.conf.unset("ferrospark.memory.limit")


def test_empty_sides(spark, frames):
    ldf, rdf = frames
    for how in HOWS:
        for strategy in ["auto", "sort_merge"]:
            got = fss.join(ldf.limit(0), rdf, "k", how, strategy=strategy)
            assert_same_rows(spark_rows(ldf.limit(0).join(rdf, "k", how)), spark_rows(got), how)


@pytest.mark.parametrize("strategy", ["broadcast_hash", "sort_merge"])
def test_aggregate_over_a_join_equals_spark(spark, parquet_sides, strategy):
    """fss.aggregate of an fss.join result: same answer as Spark's join then groupBy."""
    from pyspark.sql import functions as F

    lpath, rpath = parquet_sides
    names = ["rk", "rs", "rd", "rf", "rv"]
    left = fss.read_parquet(spark, lpath)
    right = fss.read_parquet(spark, rpath).toDF(*names)
    joined = fss.join(left, right, fs.col("k") == fs.col("rk"), "left", strategy=strategy)
    got = fss.aggregate(joined, "s", [fs.count(), fs.sum("rv"), fs.sum("d")])
    ldf = spark.read.parquet(lpath)
    rdf = spark.read.parquet(rpath).toDF(*names)
    expected = (
        ldf.join(rdf, ldf.k == rdf.rk, "left").groupBy("s").agg(F.count(F.lit(1)), F.sum("rv"), F.sum("d"))
    )
    assert_same_rows(spark_rows(expected), spark_rows(got), strategy)


def test_not_in_equals_spark(spark, frames):
    """A null-aware anti join (``NOT IN``) broadcasts its right side: every task sees whether
    it holds a NULL key."""
    ldf, rdf = frames
    keys = rdf.select("k")
    ldf.createOrReplaceTempView("fss_naaj_l")
    for name, right in {"with NULL": keys, "without NULL": keys.filter("k IS NOT NULL")}.items():
        right.createOrReplaceTempView("fss_naaj_r")
        expected = spark.sql("SELECT * FROM fss_naaj_l WHERE k NOT IN (SELECT k FROM fss_naaj_r)")
        got = fss.join(ldf, right, "k", "null_aware_anti")
        assert fss.last_spark_join_plan().startswith("broadcast_hash"), fss.last_spark_join_plan()
        assert_same_rows(spark_rows(expected), spark_rows(got), name)
    with pytest.raises(fs.ConfigError, match="NOT IN runs as a broadcast hash join"):
        fss.join(ldf, keys, "k", "null_aware_anti", strategy="sort_merge")
