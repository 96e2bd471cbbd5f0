"""TPC-H's 22 queries on Spark: Spark's own plans against ferrospark's plans run as Spark stages.

    python benches/tpch_spark.py --scale 1 --reps 3
    python benches/tpch_spark.py --scale 10 --reps 1
    python benches/tpch_spark.py --master 'local-cluster[2,1,1024]' --reps 1

One SparkSession runs both (same files, same settings, ``local[2]`` unless ``--master``):
``spark.sql(q)`` is Spark's own plan; ``fs.Session(spark=spark).sql(q)`` is ferrospark's plan cut
into stages that run natively inside Spark tasks. The two take turns query by query, each
with a warm-up run, then ``--reps`` timed runs (the median is reported). Every result is
checked against Spark's (numbers to 9 significant digits; in order where the query orders its
output). Prints one row per query, the totals, and whether the issue's goals are met.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benches"))

from tpch import ordered, same, table_rows  # noqa: E402

from ferrospark.tpch import TABLES, ensure_tpch  # noqa: E402
from ferrospark.tpch_queries import QUERIES  # noqa: E402


def spark_session(master: str, memory: str):
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if master.startswith("local-cluster"):
        builder = builder.config("spark.executor.memory", "1g")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def timed(run, reps: int) -> dict:
    try:
        t0 = time.perf_counter()
        result = run()
        warm = time.perf_counter() - t0
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            result = run()
            times.append(time.perf_counter() - t0)
    except Exception as e:  # a query an engine cannot run is reported, not fatal
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}
    return {"warm": warm, "times": times, "rows": table_rows(result)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--queries", default="all")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--layout", choices=["many", "one"], default="many")
    a = ap.parse_args()
    base = ROOT / "data" / (f"tpch-sf{a.scale:g}" + ("-one" if a.layout == "one" else ""))
    dirs = ensure_tpch(a.scale, base, tables=list(TABLES), parts=1 if a.layout == "one" else None)
    queries = list(range(1, 23)) if a.queries == "all" else [int(q) for q in a.queries.split(",")]

    import ferrospark as fs

    spark = spark_session(a.master, a.driver_memory)
    s = fs.Session(spark=spark)
    for t, d in dirs.items():
        spark.read.parquet(d).createOrReplaceTempView(t)
        s.read.parquet(d).createOrReplaceTempView(t)

    print(f"TPC-H SF{a.scale:g} on {a.master}, {a.reps} timed run(s) each, median seconds")
    print(f"{'query':>5} {'spark':>8} {'ferrospark':>11} {'speedup':>8}  answer")
    rows = []
    for q in queries:
        text = QUERIES[q]
        sp = timed(lambda text=text: spark.sql(text).toArrow(), a.reps)
        fr = timed(lambda text=text: s.sql(text).toArrow(), a.reps)
        if "error" in sp or "error" in fr:
            print(f"Q{q:>4}  {sp.get('error', '')} {fr.get('error', '')}")
            rows.append((q, None, None, False))
            continue
        t_sp, t_fr = statistics.median(sp["times"]), statistics.median(fr["times"])
        equal = same(fr["rows"], sp["rows"], ordered(q))
        rows.append((q, t_sp, t_fr, equal))
        print(
            f"Q{q:>4} {t_sp:8.3f} {t_fr:11.3f} {t_sp / t_fr:7.2f}x  {'equal' if equal else 'DIFFERENT'}",
            flush=True,
        )
    done = [r for r in rows if r[1] is not None]
    tot_sp = sum(r[1] for r in done)
    tot_fr = sum(r[2] for r in done)
    print(f"{'total':>5} {tot_sp:8.3f} {tot_fr:11.3f} {tot_sp / max(tot_fr, 1e-9):7.2f}x")
    print("\ngoals")
    print(
        f"  all {len(queries)} run and equal Spark's answers: {sum(1 for r in rows if r[3])}/{len(queries)}"
    )
    target = 3.0 if a.scale >= 10 else 2.0
    print(f"  total at least {target:g}x Spark's: {tot_sp / max(tot_fr, 1e-9):.2f}x")
    slower = [f"Q{r[0]} {r[2] / r[1]:.2f}x" for r in done if r[2] > r[1]]
    print(f"  no query slower than Spark's: {'met' if not slower else ', '.join(slower)}")
    spark.stop()


if __name__ == "__main__":
    main()
