"""Runs fss.read_parquet on a real multi-executor Spark (local-cluster) and checks the result
against Spark's own reader. Prints one JSON line; exit code 0 only when everything agrees.

Run as a subprocess by tests/test_spark_distributed.py: a process can hold one SparkContext,
and the test session's is local[2].
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq


def write_data(root: str) -> None:
    for part in range(4):
        rows = 5000
        base = part * rows
        table = pa.table(
            {
                "id": pa.array(range(base, base + rows), pa.int64()),
                "k": pa.array(
                    [(i * 7919) % 101 if i % 17 else None for i in range(base, base + rows)], pa.int32()
                ),
                "x": pa.array([float("nan") if i % 97 == 0 else i / 10 for i in range(base, base + rows)]),
                "s": pa.array([f"name-{i % 13}-ü" if i % 11 else None for i in range(base, base + rows)]),
                "d": pa.array(
                    [dt.date(1995, 1, 1) + dt.timedelta(days=i % 400) for i in range(base, base + rows)]
                ),
                "p": pa.array(
                    [Decimal(i % 5000) / 100 for i in range(base, base + rows)], pa.decimal128(15, 2)
                ),
            }
        )
        d = os.path.join(root, f"region={'eu' if part % 2 else 'us'}")
        os.makedirs(d, exist_ok=True)
        pq.write_table(table, os.path.join(d, f"part-{part}.parquet"), row_group_size=1000)


def compare(ours, theirs) -> dict:
    """Whether two DataFrames hold the same rows, with their sizes and partitions."""
    same = ours.exceptAll(theirs).count() == 0 and theirs.exceptAll(ours).count() == 0
    return {
        "rows": ours.count(),
        "expected": theirs.count(),
        "same": same,
        "partitions": ours.rdd.getNumPartitions(),
    }


def main() -> int:
    root = sys.argv[1]
    write_data(root)
    from pyspark.sql import SparkSession

    from ferrospark import spark as fss

    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("ferrospark-distributed")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.parquet.filterPushdown", "false")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        import time

        # Executors register with the driver a few seconds after it starts.
        deadline = time.time() + 120
        executors = 0
        while time.time() < deadline:
            executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
            if executors >= 2:
                break
            time.sleep(1)
        checks = {}
        for name, flt in {
            "range": "d BETWEEN DATE '1995-02-01' AND DATE '1995-06-30' AND p < 24",
            "nan_and_nulls": "x > 100 OR k IS NULL",
            "partition": "region = 'eu' AND s LIKE 'name-1%'",
            "all": None,
        }.items():
            ours = fss.read_parquet(spark, root, filter=flt)
            theirs = spark.read.parquet(root)
            if flt:
                theirs = theirs.filter(flt)
            theirs = theirs.select(*ours.columns)
            checks[name] = compare(ours, theirs)
        # Aggregation across executors: partial steps in each executor's Python workers,
        # Spark's shuffle between them, final steps on the other side.
        from pyspark.sql import functions as F

        import ferrospark as fs

        for name, source in {
            "agg_fused": fss.read_parquet(spark, root),
            "agg_plain": spark.read.parquet(root).repartition(4),
        }.items():
            ours = fss.aggregate(source, "region", [fs.count(), fs.sum("p"), fs.count_distinct("s")])
            theirs = (
                spark.read.parquet(root)
                .groupBy("region")
                .agg(F.count(F.lit(1)), F.sum("p"), F.countDistinct("s"))
            )
            checks[name] = compare(ours, theirs)
        # Joins across executors: a broadcast side shipped once and built once per Python
        # worker, probed inside the scan tasks; a sort-merge join of two shuffled sides.
        names = spark.createDataFrame([(k, f"k{k}") for k in range(0, 101, 2)], "k INT, name STRING")
        ours = fss.join(fss.read_parquet(spark, root), names, "k", "left", strategy="broadcast_hash")
        checks["join_broadcast"] = compare(ours, spark.read.parquet(root).join(names, "k", "left"))
        # One more job over the join, measured on its own: Spark's own count of its tasks (one per
        # split) against the probes ferrospark counted in it. compare() ran three jobs over `ours`.
        probes_before = fss.last_spark_join_probes() or 0
        builds_before = fss.last_spark_join_builds() or 0
        ours.count()
        checks["join_broadcast"]["jobs"] = 4
        checks["join_broadcast"]["job_tasks"] = ours.rdd.getNumPartitions()
        checks["join_broadcast"]["job_probes"] = (fss.last_spark_join_probes() or 0) - probes_before
        checks["join_broadcast"]["job_builds"] = (fss.last_spark_join_builds() or 0) - builds_before
        checks["join_broadcast"]["builds"] = fss.last_spark_join_builds()
        checks["join_broadcast"]["probes"] = fss.last_spark_join_probes()
        checks["join_broadcast"]["workers"] = fss.last_spark_join_workers()
        # Spark's own count of task slots (executors x cores): with Python workers reused, at
        # most one worker per slot runs tasks at a time, so at most that many builds.
        checks["join_broadcast"]["slots"] = spark.sparkContext.defaultParallelism
        other = spark.read.parquet(root).select(F.col("id").alias("rid"), F.col("s").alias("rs"))
        other = other.filter("rid % 3 = 0").repartition(3)
        cond = fs.col("id") == fs.col("rid")
        ours = fss.join(fss.read_parquet(spark, root), other, cond, "full", strategy="sort_merge")
        theirs = spark.read.parquet(root).join(other, F.col("id") == F.col("rid"), "full")
        checks["join_sort_merge"] = compare(ours, theirs.select(*ours.columns))
        # Windows across executors: Spark shuffles on the partition key, each task sorts and
        # evaluates its partitions natively.
        from pyspark.sql import Window

        o = fs.Window.partition_by("k").order_by("d", "id")
        ours = fss.window(
            spark.read.parquet(root),
            [fs.row_number().over(o).alias("rn"), fs.sum("p").over(o.rows_between(-3, 3)).alias("s3")],
        )
        w = Window.partitionBy("k").orderBy("d", "id")
        theirs = spark.read.parquet(root).select(
            "*", F.row_number().over(w).alias("rn"), F.sum("p").over(w.rowsBetween(-3, 3)).alias("s3")
        )
        checks["window"] = compare(ours, theirs.select(*ours.columns))
        # Session windows: each input partition merges its own pieces of a key's sessions;
        # the final merge after Spark's shuffle (on another executor) joins them.
        events = spark.read.parquet(root).withColumn("ts", F.to_timestamp("d")).repartition(4)
        ours = fss.session_window(
            events, "ts", "3 days", by="k", aggs=[fs.count().alias("n"), fs.max("x").alias("mx")]
        )
        theirs = events.groupBy(F.session_window("ts", "3 days"), "k").agg(
            F.count(F.lit(1)).alias("n"), F.max("x").alias("mx")
        )
        checks["session_window"] = compare(ours, theirs.select(*ours.columns))
        ok = executors >= 2 and all(c["same"] and c["rows"] == c["expected"] for c in checks.values())
        print(json.dumps({"executors": executors, "checks": checks, "ok": ok}))
        return 0 if ok else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
