"""TPC-H's 22 queries in ferrospark, DuckDB, Polars, DataFusion and PySpark on the same files.

    python benches/tpch.py --scale 1 --reps 3                       # every engine, every query
    python benches/tpch.py --scale 10 --engines ferrospark,duckdb,polars --no-check
    python benches/tpch.py --layout one                              # each table as one file

Each (engine, query) runs in its own process, so its peak memory is its own: a warm-up run,
then ``--reps`` timed runs (the median wall time is reported, and the median CPU time, user
plus system, which a slow spell of the machine moves less). The in-process engines take turns query
by query, so the machine's slow spells fall on all of them alike. PySpark runs all queries in one session
(its JVM's memory is not measured). Every result is checked against PySpark's (numbers to 9
significant digits; in order where the query orders its output). Prints one table per query
and the totals, then whether the issue's goals are met.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from ferrospark.tpch import TABLES, ensure_tpch  # noqa: E402
from ferrospark.tpch_queries import QUERIES  # noqa: E402

ENGINES = ["ferrospark", "duckdb", "polars", "datafusion", "pyspark"]


def norm(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float, decimal.Decimal)):
        return f"{float(v):.9g}"
    if isinstance(v, (dt.date, dt.datetime)):
        return (
            v.isoformat()[:10] if isinstance(v, dt.date) and not isinstance(v, dt.datetime) else v.isoformat()
        )
    return str(v)


def table_rows(t) -> list[tuple]:
    cols = [c.to_pylist() for c in t.columns]
    return [tuple(norm(v) for v in r) for r in zip(*cols)]


def ordered(q: int) -> bool:
    return "order by" in QUERIES[q]


def runner(engine: str, dirs: dict[str, str]):
    """A function running a query's text, returning a pyarrow Table."""
    if engine == "ferrospark":
        import ferrospark as fs

        s = fs.Session()
        for t, d in dirs.items():
            s.read.parquet(d).createOrReplaceTempView(t)
        return lambda q: s.sql(q).toArrow()
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads TO 2")
        for t, d in dirs.items():
            con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{d}/*.parquet')")
        return lambda q: con.sql(q).fetch_arrow_table()
    if engine == "polars":
        import polars as pl

        ctx = pl.SQLContext({t: pl.scan_parquet(f"{d}/*.parquet") for t, d in dirs.items()})
        return lambda q: ctx.execute(q).collect().to_arrow()
    if engine == "datafusion":
        import datafusion

        cfg = datafusion.SessionConfig().with_target_partitions(2)
        ctx = datafusion.SessionContext(cfg)
        for t, d in dirs.items():
            ctx.register_parquet(t, d)
        return lambda q: ctx.sql(q).to_arrow_table()
    raise ValueError(engine)


def worker(engine: str, query: int, dirs: dict[str, str], reps: int) -> dict:
    run = runner(engine, dirs)
    text = QUERIES[query]
    try:
        t0 = time.perf_counter()
        result = run(text)
        warm = time.perf_counter() - t0
        times, cpu = [], []
        for _ in range(reps):
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            result = run(text)
            times.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    except Exception as e:  # an engine that cannot run a query is reported, not fatal
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "warm": warm,
        "times": times,
        "cpu": statistics.median(cpu),
        "rows": table_rows(result),
        "peak_mib": peak,
    }


def spark_worker(queries: list[int], dirs: dict[str, str], reps: int) -> dict:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "6g")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t, d in dirs.items():
        spark.read.parquet(d).createOrReplaceTempView(t)
    out = {}
    for q in queries:
        text = QUERIES[q]
        t0 = time.perf_counter()
        result = spark.sql(text).toArrow()
        warm = time.perf_counter() - t0
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            result = spark.sql(text).toArrow()
            times.append(time.perf_counter() - t0)
        out[str(q)] = {"warm": warm, "times": times, "rows": table_rows(result), "peak_mib": None}
    return out


def spawn(args: list[str]) -> dict:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:120]}"}
    return json.loads(lines[-1])


def same(a: list[tuple], b: list[tuple], keep_order: bool) -> bool:
    return a == b if keep_order else sorted(a, key=repr) == sorted(b, key=repr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--queries", default="all")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--layout", choices=["many", "one"], default="many")
    ap.add_argument("--no-check", action="store_true", help="skip PySpark's answers")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--query", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dirs", help=argparse.SUPPRESS)
    a = ap.parse_args()
    queries = sorted(QUERIES) if a.queries == "all" else [int(x) for x in a.queries.split(",")]
    if a.worker:
        dirs = json.loads(a.dirs)
        if a.worker == "pyspark":
            print(json.dumps(spark_worker(queries, dirs, a.reps)))
        else:
            print(json.dumps(worker(a.worker, a.query, dirs, a.reps)))
        return
    scale_name = f"{a.scale:g}"
    out = ROOT / "data" / (f"tpch-sf{scale_name}" + ("-one" if a.layout == "one" else ""))
    dirs = ensure_tpch(a.scale, out, tables=list(TABLES), parts=1 if a.layout == "one" else None)
    engines = [e for e in a.engines.split(",") if e]
    if not a.no_check and "pyspark" not in engines:
        engines.append("pyspark")
    results: dict[str, dict[int, dict]] = {e: {} for e in engines}
    # The in-process engines take turns on each query, so a slow minute on the machine falls
    # on every engine of the queries it hits rather than on one engine's whole run.
    for q in queries:
        for e in engines:
            if e == "pyspark":
                continue
            print(f"running {e} Q{q}...", file=sys.stderr)
            results[e][q] = spawn(
                ["--worker", e, "--query", str(q), "--dirs", json.dumps(dirs), "--reps", str(a.reps)]
            )
    if "pyspark" in engines:
        print(f"running pyspark ({len(queries)} queries in one session)...", file=sys.stderr)
        r = spawn(
            [
                "--worker",
                "pyspark",
                "--queries",
                ",".join(map(str, queries)),
                "--dirs",
                json.dumps(dirs),
                "--reps",
                str(a.reps),
            ]
        )
        for q in queries:
            results["pyspark"][q] = r.get(str(q), {"error": r.get("error", "missing")})
    print(f"TPC-H SF{scale_name}, {a.layout} file(s) per table, median of {a.reps}, 2 cores")
    totals = {e: 0.0 for e in engines}
    complete = {e: True for e in engines}
    worst = []
    for q in queries:
        ref = results.get("pyspark", {}).get(q, {}).get("rows")
        fs_med = None
        rows_out = []
        for e in engines:
            r = results[e][q]
            if "error" in r:
                rows_out.append(f"  {e:<11} {'-':>8}   {r['error']}")
                complete[e] = False
                continue
            med = statistics.median(r["times"])
            totals[e] += med
            if e == "ferrospark":
                fs_med = med
            check = "" if ref is None else ("ok" if same(r["rows"], ref, ordered(q)) else "MISMATCH")
            peak = f"{r['peak_mib']:.0f} MiB" if r.get("peak_mib") else "-"
            cpu = f"cpu {r['cpu']:.3f}s" if r.get("cpu") else ""
            rows_out.append((e, med, peak, check, cpu))
        print(f"Q{q}")
        best = min((x[1] for x in rows_out if isinstance(x, tuple)), default=None)
        for x in rows_out:
            if isinstance(x, str):
                print(x)
                continue
            e, med, peak, check, cpu = x
            ratio = f"{med / fs_med:.2f}x" if fs_med else "-"
            print(f"  {e:<11} {med:8.3f}s  {ratio:>7}  {peak:>9}  {check:<8}  {cpu}".rstrip())
        if fs_med and best:
            worst.append((fs_med / best, q))
    print("\ntotal (queries every engine ran)")
    for e in engines:
        cpu = [r["cpu"] for r in results[e].values() if r.get("cpu")]
        cpu_text = f"  cpu {sum(cpu):.2f}s" if cpu and complete[e] else ""
        print(f"  {e:<11} {totals[e]:8.2f}s{'' if complete[e] else '  (incomplete)'}{cpu_text}")
    if worst:
        r, q = max(worst)
        print(f"ferrospark's worst query against the fastest engine: Q{q} at {r:.2f}x")
    # CPU time moves less with the machine's slow spells than wall time: the same comparison
    # against the engine spending the least CPU on each query.
    by_cpu = []
    for q in queries:
        cpus = {e: results[e][q]["cpu"] for e in engines if results[e].get(q, {}).get("cpu")}
        if "ferrospark" in cpus and len(cpus) > 1:
            by_cpu.append((cpus["ferrospark"] / min(cpus.values()), q))
    if by_cpu:
        r, q = max(by_cpu)
        print(f"ferrospark's worst query by CPU time against the least: Q{q} at {r:.2f}x")
    goals(results, engines, queries)


def goals(results: dict, engines: list[str], queries: list[int]) -> None:
    """The issue's goals, each met or not, from this run's figures."""
    fs = results.get("ferrospark", {})
    ok_q = [q for q in queries if "error" not in fs.get(q, {"error": 1})]
    ref = results.get("pyspark", {})
    equal = [q for q in ok_q if "rows" in ref.get(q, {}) and same(fs[q]["rows"], ref[q]["rows"], ordered(q))]
    print("\ngoals")
    if ref:
        print(f"  all {len(queries)} run and equal Spark's answers: {len(equal)}/{len(queries)}")
    else:
        print(f"  ran {len(ok_q)}/{len(queries)} (answers not checked: --no-check)")

    def total(e: str) -> float | None:
        r = results.get(e, {})
        if any("error" in r.get(q, {"error": 1}) for q in queries):
            return None
        return sum(statistics.median(r[q]["times"]) for q in queries)

    t_fs, t_duck, t_spark = total("ferrospark"), total("duckdb"), total("pyspark")
    if t_fs and t_duck:
        print(f"  total at most DuckDB's: {t_fs:.2f}s vs {t_duck:.2f}s ({t_fs / t_duck:.2f}x)")
    if t_fs and t_spark:
        print(f"  at least 10x faster than PySpark: {t_spark / t_fs:.1f}x")
    slow = []
    for q in ok_q:
        meds = {
            e: statistics.median(results[e][q]["times"])
            for e in engines
            if e != "pyspark" and "times" in results[e].get(q, {})
        }
        best = min(meds.values())
        if meds["ferrospark"] > 1.5 * best:
            slow.append(f"Q{q} {meds['ferrospark'] / best:.2f}x")
    print(f"  no query slower than 1.5x the fastest engine: {'met' if not slow else ', '.join(slow)}")
    mem = []
    for q in ok_q:
        d = results.get("duckdb", {}).get(q, {})
        if d.get("peak_mib") and fs[q].get("peak_mib") and fs[q]["peak_mib"] > 1.5 * d["peak_mib"]:
            mem.append(f"Q{q} {fs[q]['peak_mib'] / d['peak_mib']:.2f}x")
    print(f"  peak memory at most 1.5x DuckDB's: {'met' if not mem else ', '.join(mem)}")


if __name__ == "__main__":
    main()
