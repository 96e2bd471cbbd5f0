"""``fss.window`` inside Spark tasks against Spark's own window functions: Spark shuffles on
each specification's partition keys, ferrospark sorts and evaluates each partition."""

from __future__ import annotations

import pytest
from test_window_spark import FRAMED

import ferrospark as fs
from ferrospark import spark as fss
from helpers import assert_same_rows, spark_rows

pytestmark = pytest.mark.spark


def test_fss_window_equals_spark(spark):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.createDataFrame(FRAMED).repartition(3)
    w = Window.partitionBy("p").orderBy(F.col("k").desc(), "t")
    w2 = Window.orderBy("t").rowsBetween(-3, 1)
    expected = df.select(
        "*",
        F.row_number().over(w).alias("rn"),
        F.rank().over(w).alias("rk"),
        F.lag("v", 2, -1).over(w).alias("lag2"),
        F.sum("v").over(w).alias("running"),
        F.max("f").over(w2).alias("slide_max"),
    )
    o = fs.Window.partition_by("p").order_by(fs.col("k").desc(), "t")
    o2 = fs.Window.order_by("t").rows_between(-3, 1)
    got = fss.window(
        df,
        [
            fs.row_number().over(o).alias("rn"),
            fs.rank().over(o).alias("rk"),
            fs.lag("v", 2, -1).over(o).alias("lag2"),
            fs.sum("v").over(o).alias("running"),
            fs.max("f").over(o2).alias("slide_max"),
        ],
    )
    assert got.columns == expected.columns
    assert_same_rows(spark_rows(expected), spark_rows(got), "fss.window")
    # Spark's default names, and an empty input.
    named = fss.window(df.limit(0), [fs.cume_dist().over(o)])
    assert named.columns == df.limit(0).select("*", F.cume_dist().over(w)).columns
    assert named.count() == 0


def test_fss_window_chains_specifications_over_a_native_scan(spark, tmp_path):
    """A native scan read inside the first tasks, two specifications sharing the partition
    keys (one exchange), a third on other keys (its exchange fed straight from the previous
    tasks' blocks), and one without keys (everything in one partition)."""
    import pyarrow.parquet as pq
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from test_window_spark import FRAMED

    path = tmp_path / "framed.parquet"
    pq.write_table(FRAMED.drop_columns(["d"]), path, row_group_size=64)
    df = fss.read_parquet(spark, str(path))
    o1 = fs.Window.partition_by("p").order_by("k", "t")
    o2 = fs.Window.partition_by("p").order_by(fs.col("f").desc(), "t")
    o3 = fs.Window.partition_by("k").order_by("t")
    o4 = fs.Window.order_by("t").rows_between(-2, 0)
    got = fss.window(
        df,
        [
            fs.row_number().over(o1).alias("rn"),
            fs.sum("v").over(o2).alias("s"),
            fs.lag("f", 1).over(o3).alias("prev"),
            fs.count("v").over(o4).alias("c3"),
        ],
    )
    w1 = Window.partitionBy("p").orderBy("k", "t")
    w2 = Window.partitionBy("p").orderBy(F.col("f").desc(), "t")
    w3 = Window.partitionBy("k").orderBy("t")
    w4 = Window.orderBy("t").rowsBetween(-2, 0)
    expected = spark.read.parquet(str(path)).select(
        "*",
        F.row_number().over(w1).alias("rn"),
        F.sum("v").over(w2).alias("s"),
        F.lag("f", 1).over(w3).alias("prev"),
        F.count("v").over(w4).alias("c3"),
    )
    assert got.columns == expected.columns
    assert_same_rows(spark_rows(expected), spark_rows(got), "chained fss.window")
