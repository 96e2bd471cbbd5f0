"""ferrospark on a real multi-executor Spark (``local-cluster[2,1,1024]``: two executor JVMs,
each with its own Python workers), against Spark's own answers. Prints one JSON line; exits 0
only when everything agrees.

    local_cluster.py <work dir> [<TPC-H SF 0.01 dir>]

One application runs both sets of checks: starting a local cluster and warming its executors'
Python workers is most of a minute of a 2-core machine, so it is done once per test run.

``stages`` (tests/test_spark_local_cluster.py::test_queries_...): whole queries through
``fs.Session(spark=...)``: five TPC-H queries (SF 0.01), one of each plan shape (all 22 run on
local[2] in test_spark_stages.py); a query whose first task to write a block kills its Python
worker midway (Spark retries it: same answer, no duplicate rows); an aggregation spilling
inside the tasks under a small ``ferrospark.memory.limit``. They run first, on a fresh
application, as they did in a script of their own.

``distributed`` (tests/test_spark_local_cluster.py::test_read_parquet_...): ``fss.read_parquet``
splits read natively by the executors' Python workers, aggregations, broadcast and sort-merge
joins, windows and session windows across executors, against Spark's own reader and operators,
with Spark's default ``spark.sql.shuffle.partitions`` (200) as in a script of their own.

Each part reports ``ok``, or ``{"error": ...}`` when it raised (the other still runs).

Run as a subprocess: a process holds one SparkContext, and the test session's is local[2].
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
import time
import traceback
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))


# One query per plan shape that crosses executors: an aggregation (Q1), a six-way join (Q9),
# an outer join counted twice (Q13), EXISTS / NOT EXISTS (Q21), a scalar subquery with an
# anti join (Q22). The 22 run on local[2] in test_spark_stages.py.
CLUSTER_QUERIES = (1, 9, 13, 21, 22)


# --------------------------------------------------------------------------------------------
# stages: whole queries cut into Spark stages
# --------------------------------------------------------------------------------------------


def stage_checks(spark, marker: Path, tpch: Path) -> dict:
    import ferrospark as fs
    from ferrospark.tpch import TABLES, ensure_tpch
    from ferrospark.tpch_queries import QUERIES
    from helpers import arrow_rows, diff_rows, spark_rows

    # The tables already there (a directory the test run generated) are used as they are.
    dirs = ensure_tpch(0.01, tpch, tables=list(TABLES), parts=1, progress=False)
    s = fs.Session(spark=spark)
    for t, d in dirs.items():
        s.read.parquet(d).createOrReplaceTempView(t)
        spark.read.parquet(d).createOrReplaceTempView(t)

    checks: dict[str, dict] = {}

    def check(name: str, got: list, expected: list, ordered: bool, **extra) -> None:
        same = got == expected if ordered else sorted(got, key=repr) == sorted(expected, key=repr)
        checks[name] = {
            "same": same,
            "rows": len(got),
            "expected": len(expected),
            "diff": None if same else diff_rows(expected, got),
            **extra,
        }

    # A task killed midway: the first task of the run to hand Spark a block dies after it.
    marker.unlink(missing_ok=True)
    text = QUERIES[3]
    df = s.sql(text)
    got = arrow_rows(df.toArrow())
    check("killed_task_retried", got, spark_rows(spark.sql(text)), True, killed=marker.exists())

    marker.touch()  # no more kills
    # One query of each shape the stage cutter makes (all 22 run on local[2] in
    # tests/test_spark_stages.py, through the same cutter): aggregation, broadcast and shuffled
    # joins, a six-way join, an outer join under an aggregate, EXISTS / NOT EXISTS, NOT IN, IN
    # over an aggregate, a scalar subquery.
    for q in CLUSTER_QUERIES:
        text = QUERIES[q]
        ordered = "order by" in text and "limit" not in text.split("order by")[-1]
        try:
            got = arrow_rows(s.sql(text).toArrow())
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            checks[f"Q{q}"] = {"same": False, "error": f"{type(e).__name__}: {e}"[:500]}
            continue
        check(f"Q{q}", got, spark_rows(spark.sql(text)), ordered)

    spill = fs.Session(spark=spark, conf={"ferrospark.memory.limit": "1MB"})
    spill.read.parquet(dirs["lineitem"]).createOrReplaceTempView("lineitem")
    text = "SELECT l_orderkey, l_partkey, count(*) c, sum(l_extendedprice) p FROM lineitem GROUP BY 1, 2"
    df = spill.sql(text)
    got = arrow_rows(df.toArrow())
    spilled = sum(
        1 for _, task, plan in df._last_spark_run.task_reports() if task >= 0 and "spill_count=" in plan
    )
    check("spilled_in_tasks", got, spark_rows(spark.sql(text)), False, spilled_tasks=spilled)
    return {"checks": checks, "ok": all(c["same"] for c in checks.values())}


# --------------------------------------------------------------------------------------------
# distributed: fss.read_parquet, aggregate, join, window, session_window across executors
# --------------------------------------------------------------------------------------------


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


def distributed_checks(spark, root: str) -> dict:
    from pyspark.sql import functions as F  # noqa: N812

    import ferrospark as fs
    from ferrospark import spark as fss

    write_data(root)
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
    ok = all(c["same"] and c["rows"] == c["expected"] for c in checks.values())
    return {"checks": checks, "ok": ok}


# --------------------------------------------------------------------------------------------


def main() -> int:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    tpch = Path(sys.argv[2]) if len(sys.argv) > 2 else work / "tpch"
    marker = work / "killed-once"
    marker.touch()  # no kills until the check that wants one
    os.environ["FERROSPARK_TEST_KILL_TASK_ONCE"] = ""
    from pyspark.sql import SparkSession

    from helpers import SPARK_TEST_JVM_OPTIONS

    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("ferrospark-local-cluster")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.executor.memory", "1g")
        .config("spark.task.maxFailures", "4")
        .config("spark.sql.parquet.filterPushdown", "false")
        .config("spark.executorEnv.TZ", "UTC")
        .config("spark.executorEnv.FERROSPARK_TEST_KILL_TASK_ONCE", str(marker))
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.driver.extraJavaOptions", SPARK_TEST_JVM_OPTIONS)
        .config("spark.executor.extraJavaOptions", SPARK_TEST_JVM_OPTIONS)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    sc = spark.sparkContext
    timings: dict[str, float] = {}
    start = time.monotonic()
    result: dict = {}
    try:
        # Executors register with the driver a few seconds after it starts.
        deadline = time.time() + 120
        while time.time() < deadline:
            if sc._jsc.sc().getExecutorMemoryStatus().size() - 1 >= 2:
                break
            time.sleep(1)
        timings["executors"] = time.monotonic() - start
        for name, run in (
            ("stages", lambda: stage_checks(spark, marker, tpch)),
            ("distributed", lambda: distributed_checks(spark, str(work / "data"))),
        ):
            began = time.monotonic()
            if name == "distributed":
                # Spark's default, as the distributed checks always ran with.
                spark.conf.set("spark.sql.shuffle.partitions", "200")
            try:
                result[name] = run()
            except Exception:  # noqa: BLE001 - reported; the other part still runs
                result[name] = {"error": traceback.format_exc()[-3000:]}
            timings[name] = time.monotonic() - began
        # Counted once the jobs ran: local-cluster registers its executors while the first starts.
        result["executors"] = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
        result["seconds"] = timings
        print(json.dumps(result, default=str))
    finally:
        spark.stop()
    ok = result["executors"] >= 2 and result["stages"].get("ok") and result["distributed"].get("ok")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
