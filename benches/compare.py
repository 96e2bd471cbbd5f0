"""Compare ferrospark with pyarrow.dataset, DuckDB, Polars and PySpark on one data set.

    python benches/compare.py --workload scan+filter --scale 1 --reps 5 --threads 2
    python benches/compare.py --workload q1 --layout one     # each table as one file

Every engine runs each workload once as a warm-up and then ``--reps`` times, the engines
taking turns so that a slow spell of the machine hits all of them; PySpark's JVM is started
only after the others are measured (its JIT and GC threads would slow them). The table
shows the median seconds, each engine's median / ferrospark's, and ferrospark's median /
the best of DuckDB, Polars and pyarrow. All engines must produce the same result
(integers exactly, decimals and floats within 1e-6 relative), otherwise the exit code is
1. Engines that are not installed are reported as skipped. Results are written to
``benches/results/compare-<workload>.json``.

Workloads are a registry: ``WORKLOADS[name].runs[engine]`` is a callable
``(engine, paths) -> result`` where ``engine`` is the opened engine (``.fs``, ``.con``,
``.pl``, ``.spark`` ...) and ``paths`` maps TPC-H table names to their Parquet
directories. To add one::

    AGG = register(Workload("agg", "...", tables=("lineitem",)))

    @AGG.engine("duckdb")
    def _agg_duckdb(e, paths): ...
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benches" / "results"

#: Engines in display order; ferrospark is the reference for ratios.
ENGINE_ORDER = ("ferrospark", "pyarrow", "duckdb", "polars", "pyspark", "fss", "fss-df")
#: ferrospark is also compared with the fastest of these single-node engines.
NATIVE_BASELINES = ("duckdb", "polars", "pyarrow")
REL_TOL = 1e-6


# ------------------------------------------------------------------------------------
# Engines: open (import + configure threads) once, close at the end.
# ------------------------------------------------------------------------------------


class Engine:
    name = "?"
    #: the package whose absence means "not installed"
    module = "?"
    #: Starts background threads (a JVM's JIT and GC) that would slow whatever runs beside
    #: it on a small machine: opened only after the other engines have been measured.
    heavy = False

    def __init__(self, threads: int) -> None:
        self.threads = threads
        #: Extra facts a run may record (e.g. ferrospark scan metrics), for the JSON.
        self.notes: dict[str, Any] = {}

    def open(self) -> None:
        """Import and configure; ImportError means "not installed" (skipped)."""

    def version(self) -> str:
        return "?"

    def close(self) -> None:
        pass


class FerrosparkEngine(Engine):
    name = "ferrospark"
    module = "ferrospark"

    def open(self) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        import ferrospark as fs

        pa.set_cpu_count(self.threads)
        pa.set_io_thread_count(self.threads)
        self.fs, self.pa, self.pc = fs, pa, pc
        conf = {
            "ferrospark.scan.threads": str(self.threads),
            "spark.sql.session.timeZone": "UTC",
        }
        self.session = fs.Session(conf=conf)
        self.read_parquet = self.session.read_parquet

    def version(self) -> str:
        return getattr(self.fs, "__version__", "?")


class PyArrowEngine(Engine):
    name = "pyarrow"
    module = "pyarrow"

    def open(self) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        pa.set_cpu_count(self.threads)
        pa.set_io_thread_count(self.threads)
        self.pa, self.pc, self.ds = pa, pc, ds

    def version(self) -> str:
        return self.pa.__version__


class DuckDBEngine(Engine):
    name = "duckdb"
    module = "duckdb"

    def open(self) -> None:
        import duckdb

        self.duckdb = duckdb
        self.con = duckdb.connect()
        self.con.execute(f"SET threads = {int(self.threads)}")

    def version(self) -> str:
        return self.duckdb.__version__

    def close(self) -> None:
        self.con.close()


class PolarsEngine(Engine):
    name = "polars"
    module = "polars"

    def open(self) -> None:
        # Must be set before polars is first imported (main() also sets it early).
        os.environ["POLARS_MAX_THREADS"] = str(self.threads)
        import polars as pl

        self.pl = pl
        if pl.thread_pool_size() != self.threads:
            self.notes["warning"] = (
                f"polars thread pool is {pl.thread_pool_size()}, not {self.threads} "
                "(polars was imported before POLARS_MAX_THREADS was set)"
            )

    def version(self) -> str:
        return self.pl.__version__


class PySparkEngine(Engine):
    name = "pyspark"
    module = "pyspark"
    heavy = True

    def open(self) -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        self.F = F
        self.spark = (
            SparkSession.builder.master(f"local[{self.threads}]")
            .appName("ferrospark-compare")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", str(self.threads))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        self.spark.sparkContext.setLogLevel("ERROR")

    def version(self) -> str:
        java = self.spark.sparkContext._jvm.java.lang.System.getProperty("java.version")
        return f"{self.spark.version} (java {java})"

    def close(self) -> None:
        self.spark.stop()


class FssEngine(PySparkEngine):
    """ferrospark inside Spark (``ferrospark.spark``) on the same local SparkSession as the
    ``pyspark`` engine: ``fss.read_parquet`` -> operator, scan and first step fused in tasks."""

    name = "fss"

    def open(self) -> None:
        super().open()
        import ferrospark as fs
        from ferrospark import spark as fss

        self.fs, self.fss = fs, fss

    def version(self) -> str:
        return f"ferrospark {self.fs.__version__} on spark {self.spark.version}"


class FssDataFrameEngine(FssEngine):
    """ferrospark's operators inside Spark over an ordinary DataFrame (``spark.read.parquet``):
    the plain path, where every row crosses from the JVM into the Python tasks."""

    name = "fss-df"


ENGINES: dict[str, type[Engine]] = {
    cls.name: cls
    for cls in (
        FerrosparkEngine,
        PyArrowEngine,
        DuckDBEngine,
        PolarsEngine,
        PySparkEngine,
        FssEngine,
        FssDataFrameEngine,
    )
}


# ------------------------------------------------------------------------------------
# Workload registry
# ------------------------------------------------------------------------------------

RunFn = Callable[[Any, dict[str, str]], Any]


@dataclass
class Workload:
    name: str
    description: str
    tables: tuple[str, ...]
    #: engine name -> callable(engine, paths) -> result (see ``results_agree``)
    runs: dict[str, RunFn] = field(default_factory=dict)
    #: how to print a result in the table
    describe: Callable[[Any], str] = repr

    def engine(self, name: str) -> Callable[[RunFn], RunFn]:
        if name not in ENGINES:
            raise ValueError(f"unknown engine {name!r}")

        def decorator(fn: RunFn) -> RunFn:
            self.runs[name] = fn
            return fn

        return decorator


WORKLOADS: dict[str, Workload] = {}


def register(workload: Workload) -> Workload:
    if workload.name in WORKLOADS:
        raise ValueError(f"workload {workload.name!r} registered twice")
    WORKLOADS[workload.name] = workload
    return workload


def _as_number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    if hasattr(value, "as_py"):  # a pyarrow scalar slipped through
        return _as_number(value.as_py())
    return None


def results_agree(a: Any, b: Any, rel_tol: float = REL_TOL) -> bool:
    """Equal; decimals/floats may differ by ``rel_tol`` relative, ints are exact."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(results_agree(x, y, rel_tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(results_agree(a[k], b[k], rel_tol) for k in a)
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    na = _as_number(a) if not isinstance(a, int) else Decimal(a)
    nb = _as_number(b) if not isinstance(b, int) else Decimal(b)
    if na is not None and nb is not None:
        if na == nb:
            return True
        scale = max(abs(na), abs(nb))
        return abs(na - nb) <= Decimal(str(rel_tol)) * scale
    return a == b


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


# ------------------------------------------------------------------------------------
# Workload: scan+filter
# ------------------------------------------------------------------------------------

SHIP_LO = dt.date(1995, 1, 1)
SHIP_HI = dt.date(1995, 3, 31)
QTY_LT = 24
SCAN_FILTER_SQL = f"l_shipdate BETWEEN DATE '{SHIP_LO}' AND DATE '{SHIP_HI}' AND l_quantity < {QTY_LT}"


def _count_sum(result: Any) -> str:
    count, total = result
    return f"count={count:,} sum={total}"


SCAN_FILTER = register(
    Workload(
        "scan+filter",
        f"lineitem WHERE {SCAN_FILTER_SQL} -> (count(*), sum(l_extendedprice))",
        tables=("lineitem",),
        describe=_count_sum,
    )
)


def _sql_path_glob(directory: str) -> str:
    return (Path(directory) / "*.parquet").as_posix().replace("'", "''")


def _pa_literal(pa: Any, value: Any, type_: Any) -> Any:
    """A pyarrow scalar of ``type_`` (so the dataset filter compares like with like)."""
    if pa.types.is_decimal(type_):
        value = Decimal(value)
    return pa.scalar(value, type_)


@SCAN_FILTER.engine("ferrospark")
def _scan_filter_ferrospark(e: FerrosparkEngine, paths: dict[str, str]) -> tuple[int, Any]:
    # No aggregation operator yet: scan + filter natively, sum with pyarrow.compute.
    reader = e.read_parquet(
        paths["lineitem"],
        columns=["l_extendedprice"],
        filter=e.fs.expr(SCAN_FILTER_SQL),
    )
    table = reader.read_all()
    e.notes["metrics"] = dict(e.fs.scan_metrics(reader))
    return table.num_rows, e.pc.sum(table["l_extendedprice"]).as_py()


@SCAN_FILTER.engine("pyarrow")
def _scan_filter_pyarrow(e: PyArrowEngine, paths: dict[str, str]) -> tuple[int, Any]:
    dataset = e.ds.dataset(paths["lineitem"], format="parquet")
    schema = dataset.schema
    shipdate, quantity = e.ds.field("l_shipdate"), e.ds.field("l_quantity")
    date_type, qty_type = (
        schema.field("l_shipdate").type,
        schema.field("l_quantity").type,
    )
    predicate = (
        (shipdate >= e.pa.scalar(SHIP_LO, date_type))
        & (shipdate <= e.pa.scalar(SHIP_HI, date_type))
        & (quantity < _pa_literal(e.pa, QTY_LT, qty_type))
    )
    table = dataset.to_table(columns=["l_extendedprice"], filter=predicate, use_threads=True)
    return table.num_rows, e.pc.sum(table["l_extendedprice"]).as_py()


@SCAN_FILTER.engine("duckdb")
def _scan_filter_duckdb(e: DuckDBEngine, paths: dict[str, str]) -> tuple[int, Any]:
    query = (
        "SELECT count(*), sum(l_extendedprice) "
        f"FROM read_parquet('{_sql_path_glob(paths['lineitem'])}') "
        f"WHERE {SCAN_FILTER_SQL}"
    )
    count, total = e.con.execute(query).fetchone()
    return count, total


@SCAN_FILTER.engine("polars")
def _scan_filter_polars(e: PolarsEngine, paths: dict[str, str]) -> tuple[int, Any]:
    pl = e.pl
    frame = (
        pl.scan_parquet(Path(paths["lineitem"]) / "*.parquet")
        .filter(
            pl.col("l_shipdate").is_between(SHIP_LO, SHIP_HI, closed="both") & (pl.col("l_quantity") < QTY_LT)
        )
        .select(pl.len().alias("count"), pl.col("l_extendedprice").sum().alias("sum"))
        .collect()
    )
    count, total = frame.row(0)
    return count, total


@SCAN_FILTER.engine("pyspark")
def _scan_filter_pyspark(e: PySparkEngine, paths: dict[str, str]) -> tuple[int, Any]:
    F = e.F
    row = (
        e.spark.read.parquet(paths["lineitem"])
        .filter(SCAN_FILTER_SQL)
        .agg(F.count(F.lit(1)).alias("count"), F.sum("l_extendedprice").alias("sum"))
        .collect()[0]
    )
    return row["count"], row["sum"]


# The aggregation workloads (q1, high-card, collect) live in their own module.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import agg_workloads  # noqa: E402

agg_workloads.register_all(sys.modules[__name__])

import join_workloads  # noqa: E402

join_workloads.register_all(sys.modules[__name__])

import window_workloads  # noqa: E402

window_workloads.register_all(sys.modules[__name__])


# ------------------------------------------------------------------------------------
# Running and reporting
# ------------------------------------------------------------------------------------


@dataclass
class EngineRun:
    engine: str
    status: str  # "ok", "skipped", "error", "mismatch"
    reason: str = ""
    version: str = ""
    result: Any = None
    warmup_s: float | None = None
    times_s: list[float] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float | None:
        return statistics.median(self.times_s) if self.times_s else None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "version": self.version,
            "result": _jsonable(self.result),
            "warmup_s": self.warmup_s,
            "times_s": self.times_s,
            "median_s": self.median,
            "min_s": min(self.times_s) if self.times_s else None,
            "notes": _jsonable(self.notes),
        }


def run_engines(
    workload: Workload, engines: list[Engine], paths: dict[str, str], reps: int
) -> dict[str, EngineRun]:
    """Warms every engine up once, then times them in turns (A B C, A B C, ...), so a slow
    spell of the machine lands on all of them instead of on whichever ran then."""
    runs: dict[str, EngineRun] = {}
    live: list[Engine] = []
    for engine in engines:
        run = EngineRun(engine.name, "ok", version=engine.version())
        runs[engine.name] = run
        engine.notes = {}
        try:
            t0 = time.perf_counter()
            run.result = workload.runs[engine.name](engine, paths)
            run.warmup_s = time.perf_counter() - t0
            live.append(engine)
        except Exception as exc:  # noqa: BLE001 - a failing engine must not stop others
            _fail(run, exc)
    for _ in range(reps):
        for engine in list(live):
            run = runs[engine.name]
            try:
                t0 = time.perf_counter()
                result = workload.runs[engine.name](engine, paths)
                run.times_s.append(time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001
                _fail(run, exc)
                live.remove(engine)
                continue
            if not results_agree(result, run.result):
                run.status = "error"
                run.reason = f"result changed between repetitions: {result!r} vs {run.result!r}"
                live.remove(engine)
    for engine in engines:
        runs[engine.name].notes = dict(engine.notes)
    return runs


def _fail(run: EngineRun, exc: Exception) -> None:
    run.status = "error"
    run.reason = f"{type(exc).__name__}: {exc}".strip()
    traceback.print_exc()


def _open_engines(names: list[str], threads: int, skipped: dict[str, EngineRun]) -> dict[str, Engine]:
    """Opens engines by name; those missing or broken go to ``skipped`` with the reason."""
    engines: dict[str, Engine] = {}
    for name in names:
        engine = ENGINES[name](threads)
        try:
            engine.open()
        except Exception as exc:  # noqa: BLE001 - report it, run the other engines
            if isinstance(exc, ImportError) and _not_installed(exc, engine):
                skipped[name] = EngineRun(name, "skipped", reason=f"not installed ({exc})")
            else:  # missing pieces of an installed engine, or any other failure to start
                skipped[name] = EngineRun(name, "ok")
                _fail(skipped[name], exc)
            continue
        engines[name] = engine
        print(f"  {name:<11} {engine.version()}")
    for name in names:
        if name in skipped:
            print(f"  {name:<11} {skipped[name].status}: {skipped[name].reason}")
    return engines


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }
    if hasattr(os, "sched_getaffinity"):
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gib"] = round(int(line.split()[1]) / 1024**2, 1)
                break
    except OSError:
        pass
    return info


def _fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def report(
    workload: Workload,
    runs: list[EngineRun],
    args: argparse.Namespace,
    paths: dict[str, str],
) -> tuple[dict[str, Any], bool]:
    """Print the table, return (json document, all results agree)."""
    ok = [r for r in runs if r.status == "ok"]
    # The reference is the result most engines agree with (ferrospark wins ties), so the
    # odd one out is the one flagged.
    reference = max(
        ok,
        key=lambda r: (
            sum(results_agree(r.result, o.result) for o in ok),
            r.engine == "ferrospark",
        ),
        default=None,
    )
    agree = True
    for r in ok:
        if reference is not None and not results_agree(r.result, reference.result):
            r.status = "mismatch"
            r.reason = f"differs from {reference.engine}"
            agree = False

    fs_run = next((r for r in runs if r.engine == "ferrospark" and r.median is not None), None)
    fs_median = fs_run.median if fs_run else None

    print()
    print(f"workload {workload.name}: {workload.description}")
    print(
        f"scale {args.scale:g}, {args.threads} threads, "
        f"median of {args.reps} after 1 warm-up; "
        f"data {', '.join(paths.values())}"
    )
    header = f"{'engine':<11} {'median s':>9} {'min s':>8} {'warm-up s':>9} {'/ ferrospark':>12}  result"
    print(header)
    print("-" * len(header))
    ratios: dict[str, float | None] = {}
    for r in runs:
        if r.median is None:
            print(f"{r.engine:<11} {r.status}: {r.reason}")
            continue
        ratio = r.median / fs_median if fs_median else None
        ratios[r.engine] = ratio
        ratio_s = "-" if ratio is None else f"{ratio:.2f}x"
        flag = "" if r.status == "ok" else f"  <-- {r.status.upper()}: {r.reason}"
        print(
            f"{r.engine:<11} {_fmt_s(r.median):>9} {_fmt_s(min(r.times_s)):>8} "
            f"{_fmt_s(r.warmup_s):>9} {ratio_s:>12}  "
            f"{workload.describe(r.result)}{flag}"
        )

    best = min(
        (r for r in runs if r.engine in NATIVE_BASELINES and r.median is not None),
        key=lambda r: r.median,
        default=None,
    )
    vs_best = None
    if best is not None and fs_median is not None:
        vs_best = fs_median / best.median
        print(
            f"ferrospark / best of {'/'.join(NATIVE_BASELINES)} ({best.engine}, "
            f"{best.median:.3f}s) = {vs_best:.2f}x"
        )
    if fs_run is not None and fs_run.notes.get("metrics"):
        m = fs_run.notes["metrics"]
        keys = (
            "files_total",
            "row_groups_total",
            "row_groups_pruned_statistics",
            "row_groups_read",
            "pages_total",
            "pages_pruned",
            "rows_read",
            "rows_output",
        )
        if isinstance(m, list):  # an operator: one metrics dict per step
            steps = [
                ", ".join(f"{k}={v}" for k, v in step.items() if v and not k.endswith("_ns")) for step in m
            ]
            print("ferrospark steps: " + " | ".join(steps))
        else:
            # A scan's counters when it is one, else an operator's (a join's) non-zero ones.
            shown = [k for k in keys if k in m] or [k for k, v in m.items() if v and not k.endswith("_ns")]
            print("ferrospark metrics: " + ", ".join(f"{k}={m[k]}" for k in shown))
    print("results agree" if agree else "RESULTS DISAGREE")

    doc = {
        "workload": workload.name,
        "description": workload.description,
        "scale": args.scale,
        "threads": args.threads,
        "reps": args.reps,
        "paths": paths,
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "engines": {r.engine: r.to_json() for r in runs},
        "ratio_to_ferrospark": ratios,
        "ferrospark_vs_best_native": {
            "baselines": list(NATIVE_BASELINES),
            "best": best.engine if best else None,
            "ratio": vs_best,
        },
        "results_agree": agree,
    }
    return doc, agree


def _not_installed(exc: ImportError, engine: Engine) -> bool:
    """The engine's own package (or pyarrow) is missing, as opposed to broken."""
    top = (exc.name or "").split(".")[0]
    return isinstance(exc, ModuleNotFoundError) and top in (engine.module, "pyarrow")


def _parse_engines(values: list[str] | None) -> list[str]:
    if not values:
        return list(ENGINE_ORDER)
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ENGINES))
    if unknown:
        raise SystemExit(f"unknown engine(s) {unknown}; choose from {', '.join(ENGINE_ORDER)}")
    return [n for n in ENGINE_ORDER if n in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compare ferrospark with other engines on TPC-H Parquet data."
    )
    parser.add_argument(
        "--workload",
        default="scan+filter",
        help=f"comma-separated workloads or 'all' (available: {', '.join(WORKLOADS)})",
    )
    parser.add_argument("--scale", type=float, default=1, help="TPC-H scale factor (default 1)")
    parser.add_argument("--data", help="TPC-H data directory (default data/tpch-sf<scale>[-one])")
    parser.add_argument(
        "--layout",
        choices=["many", "one"],
        default="many",
        help="each table as several files (default) or as one file",
    )
    parser.add_argument(
        "--engines",
        nargs="+",
        help=(f"subset of engines, space- or comma-separated ({', '.join(ENGINE_ORDER)})"),
    )
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions (default 5)")
    parser.add_argument("--threads", type=int, default=2, help="threads per engine (default 2)")
    parser.add_argument("--out", help="JSON output directory (default benches/results)")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.threads < 1:
        parser.error("--reps and --threads must be >= 1")

    names = list(WORKLOADS) if args.workload == "all" else args.workload.split(",")
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; available: {', '.join(WORKLOADS)}")
    workloads = [WORKLOADS[n] for n in names]
    engine_names = _parse_engines(args.engines)

    # Thread limits that must be in place before the engines are imported.
    os.environ["POLARS_MAX_THREADS"] = str(args.threads)
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gen_data import ensure_tpch

    tables = sorted({t for w in workloads for t in w.tables})
    one = args.layout == "one"
    data = args.data
    if data is None and one:
        scale_name = f"{args.scale:g}"
        data = str(REPO / "data" / f"tpch-sf{scale_name}-one")
    paths = ensure_tpch(args.scale, data, tables, parts=1 if one else None)

    info = machine_info()
    print(
        f"machine: {info.get('cpu', info['machine'])}, "
        f"{info.get('cpus_usable', info['cpu_count'])} CPUs, "
        f"{info.get('memory_gib', '?')} GiB; {info['platform']}; "
        f"python {info['python']}"
    )

    skipped: dict[str, EngineRun] = {}
    measured: dict[str, dict[str, EngineRun]] = {w.name: {} for w in workloads}
    light = [n for n in engine_names if not ENGINES[n].heavy]
    heavy = [n for n in engine_names if ENGINES[n].heavy]
    for phase in (light, heavy):
        engines = _open_engines(phase, args.threads, skipped)
        try:
            for workload in workloads:
                todo = [e for e in engines.values() if e.name in workload.runs]
                if todo:
                    print(
                        f"running {workload.name} on {', '.join(e.name for e in todo)} ...",
                        file=sys.stderr,
                        flush=True,
                    )
                    measured[workload.name].update(run_engines(workload, todo, paths, args.reps))
        finally:
            for engine in engines.values():
                try:
                    engine.close()
                except Exception:  # noqa: BLE001 - close the others anyway
                    traceback.print_exc()

    out_dir = Path(args.out) if args.out else RESULTS_DIR
    exit_code = 0
    for workload in workloads:
        runs: list[EngineRun] = []
        for name in engine_names:
            if name in skipped:
                runs.append(skipped[name])
            elif name in measured[workload.name]:
                runs.append(measured[workload.name][name])
            else:
                runs.append(EngineRun(name, "skipped", reason="workload not implemented"))
        doc, agree = report(workload, runs, args, {t: paths[t] for t in workload.tables})
        doc["versions"] = {r.engine: r.version for r in runs if r.version}
        out_dir.mkdir(parents=True, exist_ok=True)
        out_file = out_dir / f"compare-{workload.name}.json"
        out_file.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {out_file}")
        if not agree or any(r.status == "error" for r in runs):
            exit_code = 1
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
