"""ferrospark demo: one scan-and-filter pipeline on plain Spark and on ferrospark.

    python -m ferrospark.demo --scale 1

1. generates TPC-H lineitem/orders Parquet (``ferrospark.tpch``; skipped when present);
2. starts local PySpark (``local[2]``, UTC) and runs
   (a) ``spark.read.parquet(lineitem).filter(F)``, and
   (b) ``ferrospark.spark.read_parquet(spark, lineitem, columns=..., filter=F)``,
   each followed by the same ``groupBy(l_returnflag, l_linestatus)`` with count and
   sum(l_extendedprice);
3. prints both results, whether they agree, and the times side by side; then (c) the same
   group-by with ferrospark's operators (``fss.read_parquet`` -> ``fss.aggregate``: scan,
   filter and partial aggregation fused in each task, Spark's shuffle, native final step);
4. reads the same data in-process with ``ferrospark.read_parquet`` and prints its time
   and scan metrics, then a selective ``l_orderkey`` filter that shows row-group and
   page pruning.

Exits with status 1 when any two results disagree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from . import tpch

DEFAULT_FILTER = "l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-03-31' AND l_quantity < 24"
#: lineitem is written in l_orderkey order: this range touches few row groups/pages.
PRUNING_FILTER = "l_orderkey BETWEEN 3000000 AND 3010000"
GROUP_KEYS = ("l_returnflag", "l_linestatus")
COLUMNS = [*GROUP_KEYS, "l_extendedprice"]
REL_TOL = 1e-9

Groups = dict[tuple[str, str], tuple[int, Any]]


def _timed(fn: Callable[[], Any], reps: int) -> tuple[Any, float, list[float]]:
    """A warm-up run, then ``reps`` timed runs: (result, median seconds, times)."""
    result = fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, statistics.median(times), times


def _attempt(what: str, fn: Callable[[], Any]) -> Any:
    """``fn()``, or None after printing the traceback (the demo goes on, then fails)."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - show every stage, exit non-zero at the end
        print(f"{what} FAILED:", file=sys.stderr)
        traceback.print_exc()
        return None


def _num_equal(a: Any, b: Any) -> bool:
    if isinstance(a, (int, Decimal)) and isinstance(b, (int, Decimal)):
        return a == b
    if a is None or b is None:
        return a is b
    fa, fb = float(a), float(b)
    return abs(fa - fb) <= REL_TOL * max(abs(fa), abs(fb), 1.0)


def _groups_equal(a: Groups, b: Groups) -> bool:
    return a.keys() == b.keys() and all(a[k][0] == b[k][0] and _num_equal(a[k][1], b[k][1]) for k in a)


def _totals(groups: Groups) -> tuple[int, Any]:
    count = sum(c for c, _ in groups.values())
    sums = [s for _, s in groups.values() if s is not None]
    if all(isinstance(s, (int, Decimal)) for s in sums):
        return count, sum(sums, Decimal(0))
    return count, sum(float(s) for s in sums)


def _start_spark(threads: int, driver_memory: str):
    # The mapInArrow workers must run this interpreter (it has ferrospark installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{threads}]")
        .appName("ferrospark-demo")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(threads))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _spark_groups(df) -> Groups:
    from pyspark.sql import functions as F

    rows = (
        df.groupBy(*GROUP_KEYS)
        .agg(F.count(F.lit(1)).alias("count"), F.sum("l_extendedprice").alias("sum"))
        .collect()
    )
    return {(r[GROUP_KEYS[0]], r[GROUP_KEYS[1]]): (r["count"], r["sum"]) for r in rows}


def _arrow_groups(table) -> Groups:
    import pyarrow as pa

    # Group on plain strings whatever the string flavour (view, large, dictionary).
    keys = []
    for name in GROUP_KEYS:
        column = table[name]
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if not pa.types.is_string(column.type):
            column = column.cast(pa.string())
        keys.append(column)
    flat = pa.table({"k0": keys[0], "k1": keys[1], "v": table["l_extendedprice"]})
    agg = flat.group_by(["k0", "k1"]).aggregate([("v", "count"), ("v", "sum")]).to_pylist()
    return {(r["k0"], r["k1"]): (r["v_count"], r["v_sum"]) for r in agg}


def _print_groups(a: Groups, b: Groups, label_a: str, label_b: str) -> None:
    print(f"  {'group':<6} {label_a + ' count':>18} {label_b + ' count':>22}   sums")
    for key in sorted(set(a) | set(b)):
        ca, sa = a.get(key, (None, None))
        cb, sb = b.get(key, (None, None))
        same = ca == cb and _num_equal(sa, sb)
        mark = "ok" if same else "DIFFERENT"
        print(f"  {'|'.join(key):<6} {ca!s:>18} {cb!s:>22}   {sa} / {sb}  {mark}")


_METRIC_LINES = (
    ("files", "files_", ("files_total", "files_pruned")),
    (
        "row groups",
        "row_groups_",
        (
            "row_groups_total",
            "row_groups_pruned_statistics",
            "row_groups_pruned_bloom_filter",
            "row_groups_pruned_dictionary",
            "row_groups_read",
        ),
    ),
    ("pages", "pages_", ("pages_total", "pages_pruned")),
    ("rows", "rows_", ("rows_total", "rows_read", "rows_output", "batches_output")),
)


def _print_metrics(metrics: dict[str, int]) -> None:
    for label, prefix, keys in _METRIC_LINES:
        present = [f"{k.removeprefix(prefix)}={metrics[k]:,}" for k in keys if k in metrics]
        if present:
            print(f"    {label:<11} " + "  ".join(present))
    extras = []
    if "bytes_read" in metrics:
        extras.append(f"bytes_read={tpch.format_bytes(metrics['bytes_read'])}")
    for key in ("plan_time_ns", "decode_time_ns"):
        if key in metrics:
            extras.append(f"{key.removesuffix('_ns')}={metrics[key] / 1e6:.1f} ms")
    if extras:
        print(f"    {'io/time':<11} " + "  ".join(extras))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ferrospark.demo",
        description="Scan, filter, aggregate and sessionize TPC-H lineitem with plain Spark and ferrospark.",
    )
    parser.add_argument("--scale", type=float, default=1, help="TPC-H scale factor (default 1)")
    parser.add_argument("--data", help="data directory (default data/tpch-sf<scale>)")
    parser.add_argument("--filter", default=DEFAULT_FILTER, help="Spark SQL filter on lineitem")
    parser.add_argument("--threads", type=int, default=2, help="Spark local[N] and scan threads")
    parser.add_argument("--reps", type=int, default=3, help="timed runs after a warm-up (3)")
    parser.add_argument("--driver-memory", default="4g", help="spark.driver.memory (4g)")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.threads < 1:
        parser.error("--reps and --threads must be >= 1")

    # 1. data
    paths = tpch.ensure_tpch(args.scale, args.data, ("lineitem", "orders"))
    print(f"TPC-H scale {args.scale:g}:")
    tpch.print_summary(paths)
    lineitem = paths["lineitem"]

    import ferrospark as fs
    from ferrospark import spark as fss

    print(f"\nferrospark {getattr(fs, '__version__', '?')}; filter: {args.filter}")
    agree = True
    failed: list[str] = []

    # 2. Spark, two ways
    spark = _start_spark(args.threads, args.driver_memory)
    try:
        print(f"Spark {spark.version}, master local[{args.threads}], session time zone UTC")

        def plain() -> Groups:
            return _spark_groups(spark.read.parquet(lineitem).filter(args.filter))

        def ferro() -> Groups:
            df = fss.read_parquet(spark, lineitem, columns=COLUMNS, filter=args.filter)
            return _spark_groups(df)

        print("running (a) plain Spark ...", flush=True)
        groups_a, time_a, _ = _timed(plain, args.reps)
        rows_a, sum_a = _totals(groups_a)
        print("running (b) ferrospark on Spark ...", flush=True)
        ran_b = _attempt("(b) ferrospark on Spark", lambda: _timed(ferro, args.reps))
        if ran_b is None:
            failed.append("(b) ferrospark on Spark")
            print(f"(a) plain Spark: {rows_a:,} rows, sum {sum_a}, {time_a:.3f}s")
        else:
            groups_b, time_b, _ = ran_b
            spark_agree = _groups_equal(groups_a, groups_b)
            agree &= spark_agree
            rows_b, sum_b = _totals(groups_b)
            print(f"\n{'':<26} {'(a) plain Spark':>22} {'(b) ferrospark on Spark':>24}")
            print(f"{'rows after filter':<26} {rows_a:>22,} {rows_b:>24,}")
            print(f"{'groups':<26} {len(groups_a):>22} {len(groups_b):>24}")
            print(f"{'sum(l_extendedprice)':<26} {sum_a!s:>22} {sum_b!s:>24}")
            print(f"{'median seconds':<26} {time_a:>22.3f} {time_b:>24.3f}")
            speedup = f"{time_a / time_b:.2f}x"
            print(f"{'speed-up vs plain Spark':<26} {'1.00x':>22} {speedup:>24}")
            _print_groups(groups_a, groups_b, "(a)", "(b)")
            print("results agree" if spark_agree else "RESULTS DISAGREE between (a) and (b)")

        # (c) the whole job in ferrospark's operators on Spark: scan, filter and the partial
        # aggregation fused in each task, Spark's shuffle, the final aggregation natively.
        def ferro_agg() -> Groups:
            df = fss.read_parquet(spark, lineitem, columns=COLUMNS, filter=args.filter)
            out = fss.aggregate(
                df,
                list(GROUP_KEYS),
                [fs.count().alias("count"), fs.sum("l_extendedprice").alias("sum")],
            )
            return {(r[GROUP_KEYS[0]], r[GROUP_KEYS[1]]): (r["count"], r["sum"]) for r in out.collect()}

        print("\nrunning (c) fss.read_parquet -> fss.aggregate ...", flush=True)
        ran_agg = _attempt("(c) ferrospark aggregation on Spark", lambda: _timed(ferro_agg, args.reps))
        if ran_agg is None:
            failed.append("(c) ferrospark aggregation on Spark")
        else:
            groups_g, time_g, _ = ran_agg
            agg_agree = _groups_equal(groups_a, groups_g)
            agree &= agg_agree
            print(
                f"(c) {len(groups_g)} groups in {time_g:.3f}s (median of {args.reps}), "
                f"{time_a / time_g:.2f}x plain Spark; "
                f"{'agrees' if agg_agree else 'DISAGREES'} with (a)"
            )
            if not agg_agree:
                _print_groups(groups_a, groups_g, "(a)", "(c)")

        # (d) session windows: Spark's own groupBy(session_window(...)) against
        # fss.session_window (rows exchanged on the keys, sessions merged per partition natively).
        def sessions_of(df) -> tuple[int, int, int]:
            from pyspark.sql import functions as F

            days = (
                F.unix_micros("session_window.end") - F.unix_micros("session_window.start")
            ) / 86_400_000_000
            row = df.agg(F.count(F.lit(1)), F.sum("n"), F.sum(days)).collect()[0]
            return int(row[0]), int(row[1]), int(row[2])

        def spark_sessions() -> tuple[int, int, int]:
            from pyspark.sql import functions as F

            items = spark.read.parquet(lineitem).select("l_suppkey", "l_shipdate")
            out = items.groupBy(F.session_window("l_shipdate", "10 days"), "l_suppkey").agg(
                F.count(F.lit(1)).alias("n")
            )
            return sessions_of(out)

        def ferro_sessions() -> tuple[int, int, int]:
            items = fss.read_parquet(spark, lineitem, columns=["l_suppkey", "l_shipdate"])
            out = fss.session_window(
                items, "l_shipdate", "10 days", by="l_suppkey", aggs=[fs.count().alias("n")]
            )
            return sessions_of(out)

        print("\nrunning (d) sessions per supplier, 10-day gap: Spark's session_window ...", flush=True)
        ran_s = _attempt("(d) Spark session windows", lambda: _timed(spark_sessions, args.reps))
        print("running (d) fss.session_window ...", flush=True)
        ran_f = _attempt("(d) ferrospark session windows", lambda: _timed(ferro_sessions, args.reps))
        if ran_s is None or ran_f is None:
            failed.append("(d) session windows")
        else:
            (sa, time_sa, _), (sf, time_sf, _) = ran_s, ran_f
            sessions_agree = sa == sf
            agree &= sessions_agree
            print(f"{'':<26} {'(a) plain Spark':>22} {'(d) fss.session_window':>24}")
            print(f"{'sessions':<26} {sa[0]:>22,} {sf[0]:>24,}")
            print(f"{'rows in sessions':<26} {sa[1]:>22,} {sf[1]:>24,}")
            print(f"{'session days':<26} {sa[2]:>22,} {sf[2]:>24,}")
            print(f"{'median seconds':<26} {time_sa:>22.3f} {time_sf:>24.3f}")
            print(f"{'speed-up vs plain Spark':<26} {'1.00x':>22} {time_sa / time_sf:>23.2f}x")
            print(
                "results agree" if sessions_agree else "RESULTS DISAGREE between Spark and fss.session_window"
            )

        # 4. in-process reads
        state: dict[str, Any] = {}

        def in_process(filter_sql: str, columns: list[str]) -> Any:
            reader = read_parquet(lineitem, columns=columns, filter=fs.expr(filter_sql))
            table = reader.read_all()
            state["metrics"] = fs.scan_metrics(reader)
            return table

        session_cls = getattr(fs, "Session", None)
        read_parquet = fs.read_parquet
        if session_cls is not None:
            conf = {
                "ferrospark.scan.threads": str(args.threads),
                "spark.sql.session.timeZone": "UTC",
            }
            read_parquet = session_cls(conf=conf).read_parquet

        print(f"\nin-process fs.read_parquet(lineitem, columns={COLUMNS}, filter=...):")
        ran_c = _attempt(
            "in-process read",
            lambda: _timed(lambda: in_process(args.filter, COLUMNS), args.reps),
        )
        if ran_c is None:
            failed.append("in-process read")
        else:
            table, time_c, _ = ran_c
            groups_c = _arrow_groups(table)
            local_agree = _groups_equal(groups_a, groups_c)
            agree &= local_agree
            print(
                f"  {table.num_rows:,} rows in {time_c:.3f}s (median of {args.reps}); "
                f"groups {'agree' if local_agree else 'DISAGREE'} with plain Spark"
            )
            if not local_agree:
                _print_groups(groups_a, groups_c, "spark", "in-process")
            _print_metrics(dict(state["metrics"]))

        print(f"\npruning example: filter {PRUNING_FILTER}")
        ran_d = _attempt(
            "in-process pruning read",
            lambda: _timed(lambda: in_process(PRUNING_FILTER, ["l_orderkey"]), 1),
        )
        if ran_d is None:
            failed.append("pruning example")
        else:
            table, time_d, _ = ran_d
            spark_rows = spark.read.parquet(lineitem).filter(PRUNING_FILTER).count()
            pruning_agree = table.num_rows == spark_rows
            agree &= pruning_agree
            print(
                f"  {table.num_rows:,} rows in {time_d:.3f}s "
                f"(Spark counts {spark_rows:,}: "
                f"{'agree' if pruning_agree else 'DISAGREE'})"
            )
            _print_metrics(dict(state["metrics"]))
    finally:
        spark.stop()

    if not agree:
        print("\nRESULTS DISAGREE")
    elif failed:
        print("\nthe results that were computed agree")
    else:
        print("\nall results agree")
    if failed:
        print(f"FAILED: {', '.join(failed)}")
    return 0 if agree and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
