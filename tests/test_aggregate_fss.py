"""``ferrospark.spark.aggregate`` (fss) against Spark's own ``groupBy().agg()``: over ordinary
DataFrames (the plain path: partial step in mapInArrow, Spark's shuffle, final step) and over
the unchanged output of ``fss.read_parquet`` (scan, filter and partial step fused in the tasks).
"""

from __future__ import annotations

import math
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from ferrospark import spark as fss

pytestmark = pytest.mark.spark


def _table(n: int = 4000, seed: int = 11) -> pa.Table:
    rng = random.Random(seed)
    keys = [None if rng.random() < 0.05 else rng.randrange(40) for _ in range(n)]
    keys[: n // 3] = [7] * (n // 3)  # one huge group
    return pa.table(
        {
            "k": pa.array(keys, pa.int64()),
            "s": pa.array([rng.choice(["a", "é", "日本", "z", None]) for _ in range(n)]),
            "x": pa.array(
                [None if rng.random() < 0.1 else rng.randint(-1000, 1000) for _ in range(n)], pa.int64()
            ),
            "f": pa.array(
                [rng.choice([1.5, -0.0, 0.0, float("nan"), None, 2.25]) for _ in range(n)], pa.float64()
            ),
            "d": pa.array(
                [None if rng.random() < 0.1 else Decimal(rng.randint(-99999, 99999)) / 100 for _ in range(n)],
                pa.decimal128(10, 2),
            ),
        }
    )


@pytest.fixture(scope="module")
def parquet_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("fss_agg") / "t.parquet"
    pq.write_table(_table(), path, row_group_size=700)
    return str(path)


def _norm(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return round(v, 6) + 0.0
    if isinstance(v, list):
        return tuple(sorted((_norm(x) for x in v), key=repr))
    if isinstance(v, Decimal):
        return v.normalize()
    return v


def _rows(df) -> list[tuple]:
    return sorted((tuple(_norm(v) for v in r) for r in df.collect()), key=repr)


def _pairs(F):
    """(ferrospark aggregate, Spark aggregate) with the same default output name."""
    return [
        (fs.count(), F.count(F.lit(1))),
        (fs.sum("x"), F.sum("x")),
        (fs.avg("d"), F.avg("d")),
        (fs.sum("d"), F.sum("d")),
        (fs.min("s"), F.min("s")),
        (fs.max("f"), F.max("f")),
        (fs.stddev("x"), F.stddev("x")),
        (fs.collect_set("s"), F.collect_set("s")),
        (fs.approx_count_distinct("x"), F.approx_count_distinct("x")),
        (fs.percentile("x", 0.5), F.percentile("x", 0.5)),
    ]


def _check(spark, ours, theirs) -> None:
    assert ours.columns == theirs.columns
    assert _rows(ours) == _rows(theirs)


def test_plain_dataframe_equals_spark(spark, parquet_path):
    from pyspark.sql import functions as F  # noqa: N812

    df = spark.read.parquet(parquet_path).repartition(5)
    pairs = _pairs(F)
    ours = fss.aggregate(df, "k", [a for a, _ in pairs])
    theirs = df.groupBy("k").agg(*[b for _, b in pairs])
    _check(spark, ours, theirs)


def test_fused_read_parquet_equals_spark(spark, parquet_path):
    from pyspark.sql import functions as F  # noqa: N812

    pairs = _pairs(F)
    df = fss.read_parquet(spark, parquet_path, filter="x > -500")
    ours = fss.aggregate(df, ["k", "s"], [a for a, _ in pairs])
    theirs = spark.read.parquet(parquet_path).filter("x > -500").groupBy("k", "s").agg(*[b for _, b in pairs])
    _check(spark, ours, theirs)
    # the fused plan: the scan's tasks read the files and run the partial steps, so no step
    # reads Spark's rows
    from ferrospark.spark_stages import SparkRun

    text = SparkRun(fss._remembered(fss._PLANS, ours)).explain()
    assert "after partial aggregation" in text and "FileScan parquet" in text, text
    assert "PySpark DataFrame" not in text, text


def test_derived_dataframe_takes_the_plain_path(spark, parquet_path):
    from pyspark.sql import functions as F  # noqa: N812

    derived = fss.read_parquet(spark, parquet_path).filter("k IS NOT NULL")
    ours = fss.aggregate(derived, "k", [fs.sum("x"), fs.count()])
    theirs = (
        spark.read.parquet(parquet_path)
        .filter("k IS NOT NULL")
        .groupBy("k")
        .agg(F.sum("x"), F.count(F.lit(1)))
    )
    _check(spark, ours, theirs)


def test_distinct_and_global_aggregates(spark, parquet_path):
    from pyspark.sql import functions as F  # noqa: N812

    df = fss.read_parquet(spark, parquet_path)
    ours = fss.aggregate(df, "k", [fs.count_distinct("s"), fs.sum("x"), fs.sum_distinct("x")])
    theirs = (
        spark.read.parquet(parquet_path)
        .groupBy("k")
        .agg(F.countDistinct("s"), F.sum("x"), F.sum_distinct("x"))
    )
    _check(spark, ours, theirs)
    ours = fss.aggregate(spark.read.parquet(parquet_path).repartition(3), None, [fs.count(), fs.avg("d")])
    theirs = spark.read.parquet(parquet_path).agg(F.count(F.lit(1)), F.avg("d"))
    _check(spark, ours, theirs)
    empty = spark.read.parquet(parquet_path).filter("x > 100000")
    assert _rows(fss.aggregate(empty, None, [fs.count(), fs.sum("x")])) == [(0, None)]


def test_spilling_inside_spark_tasks(spark, parquet_path):
    from pyspark.sql import functions as F  # noqa: N812

    spark.conf.set("ferrospark.memory.limit", "64k")
    try:
        df = spark.read.parquet(parquet_path).repartition(2)
        ours = fss.aggregate(df, ["x"], [fs.count(), fs.collect_set("s")])
        theirs = df.groupBy("x").agg(F.count(F.lit(1)), F.collect_set("s"))
        _check(spark, ours, theirs)
    finally:
        spark.conf.unset("ferrospark.memory.limit")


def test_state_blocks_are_routed_to_their_own_shuffle_partition(spark):
    """Each partition's block carries an int that Spark's hash partitioning sends to exactly
    that partition (Spark's Murmur3 of the int, pmod n), so no final task gets two buckets."""
    from pyspark.sql import functions as F

    from ferrospark.spark_stages import _routing

    for n in (1, 2, 4, 7, 200):
        route = _routing(n)
        assert len(route) == n and len(set(route)) == n
        df = spark.createDataFrame([(p, v) for p, v in enumerate(route)], "p INT, v INT")
        got = df.repartition(n, "v").select("p", F.spark_partition_id().alias("pid")).collect()
        assert sorted((r.p, r.pid) for r in got) == [(p, p) for p in range(n)], n


def test_fss_aggregate_with_many_shuffle_partitions_and_without_aqe(spark, parquet_path):
    """Blocks cross Spark's shuffle whatever the partition count, with AQE on or off."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(parquet_path).repartition(3)
    want = sorted((tuple(r) for r in df.groupBy("k").agg(F.count(F.lit(1)), F.sum("x")).collect()), key=repr)
    saved = {k: spark.conf.get(k) for k in ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")}
    try:
        for parts, aqe in (("13", "false"), ("6", "true")):
            spark.conf.set("spark.sql.shuffle.partitions", parts)
            spark.conf.set("spark.sql.adaptive.enabled", aqe)
            out = fss.aggregate(df, "k", [fs.count(), fs.sum("x")])
            got = sorted((tuple(r) for r in out.collect()), key=repr)
            assert got == want, (parts, aqe)
            # A small shuffle coalesces to one partition per core, as Spark's adaptive
            # coalescing would, and never exceeds the setting.
            cores = spark.sparkContext.defaultParallelism
            assert out.rdd.getNumPartitions() == min(int(parts), cores), (parts, aqe)
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)
