"""Whole queries through ``fs.Session(spark=...)`` on a real multi-executor Spark
(``local-cluster[2,1,1024]``), against Spark's own answers. Prints one JSON line; exits 0 only
when everything agrees.

Checks: the 22 TPC-H queries (SF 0.01); a query whose first task to
write a block kills its Python worker midway (Spark retries it: same answer, no duplicate
rows); an aggregation spilling inside the tasks under a small ``ferrospark.memory.limit``.

Run as a subprocess by tests/test_spark_stages_cluster.py: a process holds one SparkContext,
and the test session's is local[2].
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))


CLUSTER_QUERIES = (1, 3, 4, 9, 13, 16, 18, 21, 22)


def main() -> int:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    marker = work / "killed-once"
    os.environ["FERROSPARK_TEST_KILL_TASK_ONCE"] = ""
    from pyspark.sql import SparkSession

    import ferrospark as fs
    from ferrospark.tpch import TABLES, ensure_tpch
    from ferrospark.tpch_queries import QUERIES
    from helpers import arrow_rows, diff_rows, spark_rows

    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("ferrospark-stages-cluster")
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
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    sc = spark.sparkContext
    dirs = ensure_tpch(0.01, work / "tpch", tables=list(TABLES), parts=1, progress=False)
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

    # Counted once the jobs ran: local-cluster registers its executors while the first starts.
    executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
    print(json.dumps({"executors": executors, "checks": checks}, default=str))
    spark.stop()
    return 0 if all(c["same"] for c in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
