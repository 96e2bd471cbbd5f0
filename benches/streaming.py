"""Clickstream streaming benchmark: stream-stream joins and session windows over
micro-batches, through ferrospark in-process, ferrospark on Spark (``fss``) and Spark's own
Structured Streaming, on the same Parquet files.

    python benches/streaming.py [--sizes 10000,100000,1000000] [--batches 3] [--repeat 1] [--no-spark]

Workloads (event time moves one minute a batch, rows out of order by up to 40 s, 1% of
rows 30 minutes late):

* ``join-inner`` / ``join-left``: ad views (``ad``, ``vt``) joined with clicks (``ad``,
  ``ct``) on ``ad`` and ``ct BETWEEN vt AND vt + INTERVAL 10 MINUTES``, both sides with a
  10-minute watermark; each batch has ``size`` views and ``size / 2`` clicks, clicks on
  views of this batch or the one before, 1% on unknown ads;
* ``sessions``: clicks of ``size / 20`` users, ``session_window(ts, '5 minutes')`` with a
  10-minute watermark, append mode, ``count(*)`` and ``sum(v)``.

Each engine reads batch ``i`` from file ``i`` of each input (Spark: a file source with
``maxFilesPerTrigger=1`` under ``Trigger.AvailableNow``; each batch's output is counted).
Printed per workload and batch size: rows/s (input rows over the batches' total time),
the median batch latency, the CPU-seconds a batch cost on all cores (in process: the
process's; on Spark: the whole machine's over the query, divided by its batches with data),
the state on disk after the last batch, the median state commit time (every store of every
partition, summed; Spark's from its progress reports), the time to recover (a new operator
over the checkpoint re-running the last batch: state loaded from its files), the ferrospark
process's peak RSS, and the ratios to Spark. ferrospark in-process runs in a process of its own (its Parquet reader
set up before the clock starts); Spark runs on one ``local[2]`` session, its time per batch
from its progress reports (``triggerExecution``). Every in-process run comes first, before
Spark's JVM starts (see ``main``); the table is printed once Spark's runs are done.

With ``--repeat N`` each engine runs N times (Spark's engines in turn, so a drift of the
machine touches each alike) and the row printed is its run of median rows/s; every run's
rows/s goes to stderr. Run to run, the same engine varies by 10-20% on this kind of machine.
Between engines the finished queries' state stores are unloaded from Spark's JVM (without
it, as their maintenance is held off, a ninth 1M-row join query exhausted the driver's
6 GB).

``limited`` is ferrospark in-process under a ``ferrospark.memory.limit`` the state outgrows
after its first batch (64 bytes per batch row for joins, half a byte for sessions): its
stores move to disk and the batches after run on the disk provider.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from child import run_json

MIN_US = 60_000_000
BASE_US = 1_709_294_400_000_000  # 2024-03-01 12:00 UTC
TS = pa.timestamp("us", tz="UTC")
WORKLOADS = ("join-inner", "join-left", "sessions")
RANGE = "ct BETWEEN vt AND vt + INTERVAL 10 MINUTES"


def _times(rng: random.Random, n: int, clock: int) -> list[int]:
    out = []
    for _ in range(n):
        t = clock + rng.randrange(MIN_US) + rng.randrange(-40_000_000, 40_000_000)
        if rng.random() < 0.01:
            t -= 30 * MIN_US
        out.append(t)
    return out


def generate(root: Path, size: int, batches: int) -> None:
    """Writes the inputs of every workload under ``root`` (one file per batch)."""
    rng = random.Random(size)
    for d in ("views", "clicks", "events"):
        (root / d).mkdir(parents=True, exist_ok=True)
    prev: list[tuple[int, int]] = []
    for b in range(batches):
        clock = BASE_US + b * MIN_US
        vt = _times(rng, size, clock)
        ads = list(range(b * size, (b + 1) * size))
        views = pa.table({"ad": pa.array(ads, pa.int64()), "vt": pa.array(vt, TS)})
        pool = prev + list(zip(ads, vt, strict=True))
        picks = [pool[rng.randrange(len(pool))] for _ in range(size // 2)]
        click_ads = [a if rng.random() > 0.01 else -1 - a for a, _ in picks]
        click_t = [t + rng.randrange(2 * MIN_US) for _, t in picks]
        clicks = pa.table({"ad": pa.array(click_ads, pa.int64()), "ct": pa.array(click_t, TS)})
        users = max(size // 20, 1)
        events = pa.table(
            {
                "user": pa.array([f"user-{rng.randrange(users)}" for _ in range(size)]),
                "ts": pa.array(_times(rng, size, clock), TS),
                "v": pa.array([rng.randrange(100) for _ in range(size)], pa.int64()),
            }
        )
        for name, t in (("views", views), ("clicks", clicks), ("events", events)):
            path = root / name / f"batch-{b:05d}.parquet"
            pq.write_table(t, path)
            os.utime(path, (1_700_000_000 + b, 1_700_000_000 + b))
        prev = list(zip(ads, vt, strict=True))


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _operator(workload: str, ckpt: str, limit: str | None = None) -> Any:
    import ferrospark as fs
    from ferrospark import streaming as fst

    conf = {"ferrospark.memory.limit": limit} if limit else None
    if workload == "sessions":
        return fst.SessionWindowAggregation(
            "ts",
            "5 minutes",
            by="user",
            aggs=[fs.count("*").alias("n"), fs.sum("v").alias("s")],
            watermark=("ts", "10 minutes"),
            checkpoint=ckpt,
            conf=conf,
        )
    return fst.StreamStreamJoin(
        on=["ad"],
        how="inner" if workload == "join-inner" else "left",
        condition=RANGE,
        left_watermark=("vt", "10 minutes"),
        right_watermark=("ct", "10 minutes"),
        checkpoint=ckpt,
        conf=conf,
    )


def _inputs(root: Path, workload: str, b: int) -> tuple[pa.Table, ...]:
    name = f"batch-{b:05d}.parquet"
    if workload == "sessions":
        return (pq.read_table(root / "events" / name),)
    return pq.read_table(root / "views" / name), pq.read_table(root / "clicks" / name)


def in_process(root: Path, workload: str, batches: int, limit: str | None = None) -> dict[str, float]:
    """One workload through ferrospark in this process (under ``ferrospark.memory.limit``
    ``limit``, if given)."""
    with tempfile.TemporaryDirectory() as ckpt:
        op = _operator(workload, ckpt, limit)
        # pyarrow's Parquet reader sets itself up on its first read (a quarter second, once
        # per process): done before the clock starts, as Spark's session has read the files'
        # schema before its query starts.
        _inputs(root, workload, 0)
        times, rows, commits = [], 0, []
        cpu = time.process_time()
        for b in range(batches):
            t0 = time.perf_counter()
            inputs = _inputs(root, workload, b)
            op.process(b, *inputs)
            times.append(time.perf_counter() - t0)
            rows += sum(t.num_rows for t in inputs)
            commits.append(op.metrics()["commitTimeMs"] / 1000)
        cpu = time.process_time() - cpu
        state = _du(Path(ckpt))
        t0 = time.perf_counter()
        _operator(workload, ckpt, limit).process(batches - 1, *_inputs(root, workload, batches - 1))
        recovery = time.perf_counter() - t0
        on_disk = bool(list(Path(ckpt).rglob("state.db")))
    return {
        "rows_per_s": rows / sum(times),
        "latency_s": sorted(times)[len(times) // 2],
        "cpu_s": cpu / batches,
        "state_mb": state / 1e6,
        "commit_s": sorted(commits)[len(commits) // 2] if commits else float("nan"),
        "recovery_s": recovery,
        "on_disk": on_disk,
    }


def _spark_session() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    s = (
        SparkSession.builder.master("local[2]")
        .appName("ferrospark-streaming-bench")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "6g")
        # Spark snapshots and cleans its state stores in the background, also for queries
        # that have finished: left at its 60 s, it runs in this JVM while the next engine
        # (a ferrospark process) is being timed. Spark's batch times do not include it.
        .config("spark.sql.streaming.stateStore.maintenanceInterval", "1h")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("OFF")
    return s


def _streams(spark: Any, root: Path, workload: str) -> list[Any]:
    names = ["events"] if workload == "sessions" else ["views", "clicks"]
    out = []
    for n in names:
        schema = spark.read.parquet(str(root / n / "batch-00000.parquet")).schema
        out.append(spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(root / n)))
    return out


def _machine_cpu_s() -> float:
    """CPU-seconds every core of the machine has spent busy so far (Linux's ``/proc/stat``;
    NaN elsewhere)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:8]]
    except OSError:
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _run_query(writer: Any, rows: int) -> dict[str, float]:
    cpu = _machine_cpu_s()
    q = writer.trigger(availableNow=True).start()
    q.awaitTermination()
    cpu = _machine_cpu_s() - cpu
    if q.exception() is not None:
        raise q.exception()
    with_rows = [p for p in q.recentProgress if p["numInputRows"] > 0]
    batch_s = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in with_rows]
    # Spark's own stateful operators report their state stores' commit time (summed over
    # tasks, as ferrospark's metric sums it over partitions).
    commits = [sum(o.get("commitTimeMs", 0) for o in p.get("stateOperators", [])) / 1000 for p in with_rows]
    return {
        "rows_per_s": rows / sum(batch_s),
        "latency_s": sorted(batch_s)[len(batch_s) // 2],
        "cpu_s": cpu / len(batch_s),
        "commit_s": sorted(commits)[len(commits) // 2] if any(commits) else float("nan"),
    }


def _floor(spark: Any, streams: list[Any], workload: str, ckpt: Path, count: Any) -> Any:
    """The query fss runs with its operator doing nothing: each batch's rows exchanged by
    key into Python tasks that return no rows. What Spark charges to move the rows to
    ferrospark's tasks, whatever those do: the bound on fss."""
    from ferrospark.spark_streaming import SidePacking

    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    if workload == "sessions":
        df, keys = streams[0], ["user"]
    else:
        # The two sides in the columns fss moves them in (a view's and a click's columns
        # sharing slots by type).
        packing = SidePacking(streams[0], streams[1], ["ad"], ["ad"])
        df, keys = packing.packed(streams[0], streams[1]), packing.keys
    schema = df.schema

    def each(batch_df: Any, b: int) -> None:
        out = (
            batch_df.repartition(n, *keys)
            .mapInArrow(lambda it: (x.slice(0, 0) for x in it), schema)
            .persist()
        )
        try:
            count(out, b)
        finally:
            out.unpersist()

    return df.writeStream.option("checkpointLocation", str(ckpt)).foreachBatch(each)


def on_spark(
    spark: Any, root: Path, workload: str, batches: int, engine: str, ckpt: Path
) -> dict[str, float]:
    """One workload through Spark's own operators (``spark``) or fss (``fss``)."""
    from pyspark.sql import functions as F

    import ferrospark as fs
    from ferrospark import spark as fss

    rows = sum(
        pq.ParquetFile(p).metadata.num_rows
        for d in (["events"] if workload == "sessions" else ["views", "clicks"])
        for p in sorted((root / d).iterdir())[:batches]
    )

    def count(df: Any, _b: int) -> None:
        df.count()

    streams = _streams(spark, root, workload)
    if engine == "floor":
        r = _run_query(_floor(spark, streams, workload, ckpt, count), rows)
        r["state_mb"] = 0.0
        return r
    if engine == "fss":
        if workload == "sessions":
            w = fss.session_window_stream(
                streams[0],
                "ts",
                "5 minutes",
                by="user",
                aggs=[fs.count("*").alias("n"), fs.sum("v").alias("s")],
                watermark=("ts", "10 minutes"),
                checkpoint=str(ckpt),
                on_batch=count,
            )
        else:
            w = fss.stream_join(
                streams[0],
                streams[1],
                on=["ad"],
                how="inner" if workload == "join-inner" else "left",
                condition=RANGE,
                left_watermark=("vt", "10 minutes"),
                right_watermark=("ct", "10 minutes"),
                checkpoint=str(ckpt),
                on_batch=count,
            )
        r = _run_query(w, rows)
        r["state_mb"] = _du(ckpt / "state") / 1e6
        return r
    if workload == "sessions":
        df = (
            streams[0]
            .withWatermark("ts", "10 minutes")
            .groupBy(F.session_window("ts", "5 minutes"), "user")
            .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
        )
        mode = "append"
    else:
        views = streams[0].withWatermark("vt", "10 minutes")
        clicks = streams[1].withWatermark("ct", "10 minutes").withColumnRenamed("ad", "cad")
        df = views.join(
            clicks,
            F.expr(f"ad = cad AND {RANGE}"),
            "inner" if workload == "join-inner" else "left_outer",
        )
        mode = "append"
    w = df.writeStream.outputMode(mode).option("checkpointLocation", str(ckpt)).foreachBatch(count)
    r = _run_query(w, rows)
    r["state_mb"] = _du(ckpt / "state") / 1e6
    return r


def _settle(spark: Any) -> None:
    """Lets the last engine's work finish before the next engine is timed on the same cores
    and disk: the Spark JVM's garbage, and the files the last engine wrote still being
    flushed (each ferrospark commit syncs its files, and would wait behind them)."""
    if spark is not None:
        jvm = spark.sparkContext._jvm
        # The finished queries' state stores stay loaded in the JVM until Spark's maintenance
        # (held off, below) unloads them: unloaded here, as that maintenance would, so
        # repeated 1M-row queries do not fill the driver's heap.
        jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
        jvm.System.gc()
    os.sync()
    time.sleep(1)


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median rows/s (the lower middle one of an even count): one run's figures,
    not a mix of several."""
    return sorted(runs, key=lambda r: r["rows_per_s"])[(len(runs) - 1) // 2]


def _worker(root: Path, workload: str, batches: int, limit: str) -> dict[str, Any] | None:
    """One workload through ferrospark in a process of its own; its figures and peak RSS."""
    cmd = [sys.executable, __file__, "--worker", str(root), workload, str(batches), limit]
    return run_json(cmd, f"{workload} ferrospark")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each engine; the row printed is the run of median rows/s",
    )
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        root, workload, batches, limit = args.worker
        print(json.dumps(in_process(Path(root), workload, int(batches), limit or None)))
        return 0
    header = (
        f"{'workload':<11} {'batch':>8} {'engine':<10} {'rows/s':>10} {'latency s':>9} {'cpu s':>6} {'state MB':>8} "
        f"{'commit s':>8} {'recover s':>9} {'peak MB':>7} {'x Spark':>7}"
    )
    sizes = [int(s) for s in args.sizes.split(",")]
    workloads = args.workloads.split(",")
    results: dict[tuple[int, str], dict[str, list[dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {size: Path(tmp) / f"data-{size}" for size in sizes}
        # First every in-process run, before Spark's JVM starts: on this machine a process
        # started after Spark's own 1M-row join faults its new memory in more slowly (0.70 s
        # a batch before, 1.04 s after, with the JVM idle), an after-effect of the other
        # engine that a user of ferrospark in process does not have.
        for size in sizes:
            generate(roots[size], size, args.batches)
            for workload in workloads:
                # "limited": under a ferrospark.memory.limit the state outgrows after its
                # first batch, so the stores move to disk (checked: state.db found).
                limit = str(size // 2 if workload == "sessions" else 64 * size)
                for _ in range(args.repeat):
                    for engine, lim in (("ferrospark", ""), ("limited", limit)):
                        _settle(None)
                        r = _worker(roots[size], workload, args.batches, lim)
                        if r is None:
                            continue
                        if engine == "limited" and not r["on_disk"]:
                            print(
                                f"{workload} {size}: the state stayed in memory under {lim} bytes",
                                file=sys.stderr,
                            )
                        results.setdefault((size, workload), {}).setdefault(engine, []).append(r)
        spark = None if args.no_spark else _spark_session()
        print(header)
        for size in sizes:
            for workload in workloads:
                found = results.setdefault((size, workload), {})
                if spark is not None:
                    # Repeats go round the engines, so a drift of the machine touches each alike.
                    for _ in range(args.repeat):
                        for engine in ("fss", "floor", "spark"):
                            ckpt = Path(tmp) / f"ckpt-{size}-{workload}-{engine}"
                            _settle(spark)
                            try:
                                r = on_spark(spark, roots[size], workload, args.batches, engine, ckpt)
                                found.setdefault(engine, []).append(r)
                            except Exception as e:  # noqa: BLE001 - reported, the run goes on
                                print(f"{workload} {size} {engine}: failed: {e}", file=sys.stderr)
                            shutil.rmtree(ckpt, ignore_errors=True)
                chosen = {engine: _median_run(runs) for engine, runs in found.items()}
                for engine, runs in found.items():
                    if len(runs) > 1:
                        spread = ", ".join(f"{x['rows_per_s']:.0f}" for x in runs)
                        print(f"{workload} {size} {engine}: rows/s of each run: {spread}", file=sys.stderr)
                base = chosen.get("spark", {}).get("rows_per_s")
                for engine, r in chosen.items():
                    ratio = f"{r['rows_per_s'] / base:>7.1f}" if base else f"{'-':>7}"
                    print(
                        f"{workload:<11} {size:>8} {engine:<10} {r['rows_per_s']:>10.0f} {r['latency_s']:>9.3f} "
                        f"{r.get('cpu_s', float('nan')):>6.2f} "
                        f"{r.get('state_mb', float('nan')):>8.1f} {r.get('commit_s', float('nan')):>8.3f} "
                        f"{r.get('recovery_s', float('nan')):>9.3f} {r.get('peak_mb', float('nan')):>7.0f} {ratio}",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
