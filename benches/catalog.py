"""Catalog benchmark: metastore operations, partition planning and the write path.

    python benches/catalog.py [--tables 10000] [--partitions 100000] [--scale 1]
                              [--spark-tables 2000] [--spark-partitions 100000]
                              [--engines ferrospark,ferrospark-sqlite,pyspark,pyspark-hive,duckdb,polars]

Each engine runs in a process of its own (its peak RSS is the process's, a JVM's included),
on 2 threads, in one run:

* metastore: CREATE TABLE (ops/s), DESCRIBE TABLE EXTENDED (ops/s), SHOW TABLES over all
  of them (ops/s), ALTER TABLE ADD PARTITION (partitions/s), SHOW PARTITIONS, and the
  planning time of ``SELECT count(*) FROM pt WHERE p = <one value>`` on the partitioned
  table (cold: the table's first query; warm: again).
* writes: TPC-H lineitem as Parquet by CTAS and by INSERT INTO an empty table (ferrospark,
  PySpark in-memory catalog), DuckDB's ``COPY ... TO ... (FORMAT parquet)`` and Polars'
  ``scan_parquet(...).sink_parquet(...)`` for the same rows (neither has a catalog: their
  figure is the write alone); seconds, rows/s and output MB.

PySpark creates ``--spark-tables`` tables (its per-table cost makes 10,000 take many
minutes), with Hive support ``--hive-tables`` and ``--hive-partitions`` (Derby is slower
still); their rates are per operation, measured on fewer tables and partitions than
ferrospark's, which favours them (SHOW TABLES lists fewer names).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _lineitem(scale: float) -> Path:
    sys.path.insert(0, str(REPO / "benches"))
    from gen_data import ensure_tpch

    return Path(ensure_tpch(scale, tables=("lineitem",))["lineitem"])


def _files_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*.parquet"))


class Runner:
    """One engine's SQL, timed."""

    def __init__(self, engine: str, work: Path) -> None:
        self.engine = engine
        self.work = work
        wh = work / "warehouse"
        if engine.startswith("ferrospark"):
            import ferrospark as fs

            url = f"sqlite://{work / 'metastore.db'}" if engine == "ferrospark-sqlite" else "memory"
            self.s = fs.Session(
                conf={"spark.sql.warehouse.dir": str(wh), "ferrospark.scan.threads": "2"}, catalog=url
            )
            self.run = lambda q: self.s.sql(q).toArrow()
            self.plan = lambda q: self.s.sql("EXPLAIN " + q).toArrow()
        else:
            from pyspark.sql import SparkSession

            b = (
                SparkSession.builder.master("local[2]")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.driver.memory", "4g")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.warehouse.dir", str(wh))
            )
            if engine == "pyspark-hive":
                b = b.enableHiveSupport().config(
                    "spark.driver.extraJavaOptions", f"-Dderby.system.home={work}"
                )
            self.spark = b.getOrCreate()
            self.spark.sparkContext.setLogLevel("ERROR")
            self.run = lambda q: self.spark.sql(q).collect()
            self.plan = lambda q: self.spark.sql("EXPLAIN " + q).collect()


def bench_metastore(r: Runner, tables: int, partitions: int) -> dict:
    out: dict = {}
    r.run("CREATE DATABASE bench")
    r.run("USE bench")
    t0 = time.perf_counter()
    for i in range(tables):
        r.run(f"CREATE TABLE t{i} (a INT, b STRING, c DECIMAL(12,2)) USING parquet")
    out["create"] = tables / (time.perf_counter() - t0)
    sample = min(tables, 1000)
    t0 = time.perf_counter()
    for i in range(sample):
        r.run(f"DESCRIBE TABLE EXTENDED t{(i * 7919) % tables}")
    out["describe"] = sample / (time.perf_counter() - t0)
    reps = 10
    t0 = time.perf_counter()
    for _ in range(reps):
        n = len(r.run("SHOW TABLES"))
    out["show"] = reps / (time.perf_counter() - t0)
    assert n == tables, (n, tables)
    r.run("CREATE TABLE pt (a INT, p INT) USING parquet PARTITIONED BY (p)")
    t0 = time.perf_counter()
    batch = 1000
    for start in range(0, partitions, batch):
        specs = " ".join(f"PARTITION (p={i})" for i in range(start, min(start + batch, partitions)))
        r.run(f"ALTER TABLE pt ADD {specs}")
    out["add_partitions"] = partitions / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    n = len(r.run("SHOW PARTITIONS pt"))
    out["show_partitions_s"] = time.perf_counter() - t0
    assert n == partitions, (n, partitions)
    q = f"SELECT count(*) FROM pt WHERE p = {partitions // 2}"
    t0 = time.perf_counter()
    r.plan(q)
    out["prune_plan_cold_s"] = time.perf_counter() - t0
    warm = []
    for _ in range(5):
        t0 = time.perf_counter()
        r.plan(q)
        warm.append(time.perf_counter() - t0)
    out["prune_plan_warm_s"] = sorted(warm)[len(warm) // 2]
    out["tables"], out["partitions"] = tables, partitions
    return out


def bench_writes(r: Runner, lineitem: Path) -> dict:
    out: dict = {}
    src = f"parquet.`{lineitem}`"
    r.run("CREATE DATABASE IF NOT EXISTS w")
    t0 = time.perf_counter()
    r.run(f"CREATE TABLE w.l_ctas USING parquet AS SELECT * FROM {src}")
    out["ctas_s"] = time.perf_counter() - t0
    r.run(f"CREATE TABLE w.l_ins USING parquet AS SELECT * FROM {src} LIMIT 0")
    t0 = time.perf_counter()
    r.run(f"INSERT INTO w.l_ins SELECT * FROM {src}")
    out["insert_s"] = time.perf_counter() - t0
    rows = r.run("SELECT count(*) FROM w.l_ins")
    out["rows"] = int(rows[0][0]) if not hasattr(rows, "column") else int(rows.column(0)[0].as_py())
    out["out_mb"] = _files_bytes(r.work / "warehouse" / "w.db" / "l_ins") / 1e6
    return out


def bench_duckdb(work: Path, lineitem: Path) -> dict:
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 2")
    target = work / "duck.parquet"
    t0 = time.perf_counter()
    con.execute(
        f"COPY (SELECT * FROM read_parquet('{lineitem}/*.parquet')) TO '{target}' (FORMAT parquet, COMPRESSION snappy)"
    )
    s = time.perf_counter() - t0
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{target}')").fetchone()[0]
    return {"ctas_s": s, "insert_s": s, "rows": rows, "out_mb": target.stat().st_size / 1e6}


def bench_polars(work: Path, lineitem: Path) -> dict:
    import polars as pl

    target = work / "polars.parquet"
    t0 = time.perf_counter()
    pl.scan_parquet(f"{lineitem}/*.parquet").sink_parquet(target, compression="snappy")
    s = time.perf_counter() - t0
    rows = pl.scan_parquet(target).select(pl.len()).collect().item()
    return {"ctas_s": s, "insert_s": s, "rows": rows, "out_mb": target.stat().st_size / 1e6}


def worker(args) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"catalog-{args.worker}-", dir=args.tmp))
    try:
        result: dict = {"engine": args.worker}
        if args.worker == "duckdb":
            result["writes"] = bench_duckdb(work, Path(args.lineitem))
        elif args.worker == "polars":
            result["writes"] = bench_polars(work, Path(args.lineitem))
        else:
            r = Runner(args.worker, work)
            tables, partitions = {
                "pyspark": (args.spark_tables, args.spark_partitions),
                "pyspark-hive": (args.hive_tables, args.hive_partitions),
            }.get(args.worker, (args.tables, args.partitions))
            result["metastore"] = bench_metastore(r, tables, partitions)
            if args.worker in ("ferrospark", "pyspark") and args.lineitem:
                result["writes"] = bench_writes(r, Path(args.lineitem))
        print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--spark-tables", type=int, default=2_000)
    ap.add_argument("--spark-partitions", type=int, default=100_000)
    ap.add_argument("--hive-tables", type=int, default=1_000)
    ap.add_argument("--hive-partitions", type=int, default=20_000)
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--engines", default="ferrospark,ferrospark-sqlite,pyspark,pyspark-hive,duckdb,polars")
    ap.add_argument("--no-writes", action="store_true")
    ap.add_argument("--tmp", default=None, help="directory for warehouses (default: the system's)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--lineitem", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    lineitem = None if args.no_writes else _lineitem(args.scale)
    results = {}
    for engine in args.engines.split(","):
        cmd = [sys.executable, __file__, "--worker", engine]
        for k in (
            "tables",
            "partitions",
            "spark_tables",
            "spark_partitions",
            "hive_tables",
            "hive_partitions",
        ):
            cmd += [f"--{k.replace('_', '-')}", str(getattr(args, k))]
        if lineitem is not None:
            cmd += ["--lineitem", str(lineitem)]
        if args.tmp:
            cmd += ["--tmp", args.tmp]
        print(f"running {engine} ...", file=sys.stderr, flush=True)
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, POLARS_MAX_THREADS="2")
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env)
            # This child's own peak (with the JVM it waited for), not the run's so far.
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        if p.returncode != 0 or not lines:
            print(f"{engine} failed:\n{stderr[-3000:]}", file=sys.stderr)
            continue
        res = json.loads(lines[-1])
        res["peak_mb"] = usage.ru_maxrss / 1024
        results[engine] = res
    print_tables(results, lineitem)
    return 0


def print_tables(results: dict, lineitem: Path | None) -> None:
    meta = {e: r["metastore"] for e, r in results.items() if "metastore" in r}
    if meta:
        base = meta.get("ferrospark")
        print("\nMetastore (higher ops/s is better; time in s, lower is better)")
        cols = [
            ("create", "CREATE TABLE ops/s"),
            ("describe", "DESCRIBE EXT ops/s"),
            ("show", "SHOW TABLES ops/s"),
            ("add_partitions", "ADD PARTITION /s"),
            ("show_partitions_s", "SHOW PARTITIONS s"),
            ("prune_plan_cold_s", "prune plan cold s"),
            ("prune_plan_warm_s", "prune plan warm s"),
        ]
        print(
            f"{'engine':<19} {'tables':>7} {'parts':>7} "
            + " ".join(f"{h:>19}" for _, h in cols)
            + f" {'peak MB':>8}"
        )
        for e, m in meta.items():
            cells = []
            for k, _ in cols:
                v = m[k]
                if base and e != "ferrospark":
                    ratio = base[k] / v if not k.endswith("_s") else v / base[k]
                    cells.append(
                        f"{v:>10.3f} ({ratio:>5.1f}x)" if v < 100 else f"{v:>10.0f} ({ratio:>5.1f}x)"
                    )
                else:
                    cells.append(f"{v:>19.3f}" if v < 100 else f"{v:>19.0f}")
            peak = results[e].get("peak_mb")
            print(f"{e:<19} {m['tables']:>7} {m['partitions']:>7} " + " ".join(cells) + f" {peak or 0:>8.0f}")
        print("(x: how many times ferrospark (memory) is better)")
    writes = {e: r["writes"] for e, r in results.items() if "writes" in r}
    if writes and lineitem is not None:
        print(f"\nWrite path: TPC-H lineitem ({lineitem}) as snappy Parquet")
        base = writes.get("ferrospark")
        print(
            f"{'engine':<19} {'CTAS s':>8} {'INSERT s':>9} {'rows':>10} {'Mrows/s':>8} {'out MB':>7} "
            f"{'INSERT / ferrospark':>20} {'peak MB':>8}"
        )
        for e, w in writes.items():
            ratio = f"{w['insert_s'] / base['insert_s']:.2f}x" if base else ""
            print(
                f"{e:<19} {w['ctas_s']:>8.2f} {w['insert_s']:>9.2f} {w['rows']:>10} "
                f"{w['rows'] / w['insert_s'] / 1e6:>8.2f} {w['out_mb']:>7.0f} {ratio:>20} "
                f"{results[e].get('peak_mb') or 0:>8.0f}"
            )


if __name__ == "__main__":
    sys.exit(main())
