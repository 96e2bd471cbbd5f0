"""Row-format readers compared on TPC-H lineitem written as CSV, as JSON lines and as Avro
(deflate): ferrospark (filter pushdown on and off), DuckDB, Polars and PySpark (pushdown on
and off), in one run on the same files.

    python benches/text_sources.py --scale 1 --reps 3 [--formats csv,json,avro]

Avro: DuckDB's reader is an extension this machine cannot download, and PySpark's is the
separate ``spark-avro`` package (not in pip's pyspark), so Avro compares ferrospark with Polars
(which reads a whole file eagerly, ``pl.read_avro``).

``ferrospark on Spark`` runs ferrospark's plan as Spark stages on the same ``local[2]`` session
PySpark uses: the files split across tasks as Spark splits them, each task reading its byte
ranges natively with the partial aggregation fused in.

Two workloads, each ``count(*), sum(l_extendedprice)`` with the columns typed by a given
schema: ``all`` over every row, ``selective`` over ``l_orderkey < 60000`` (about 1% of the
rows). Every engine runs once as a warm-up, then ``--reps`` times taking turns; PySpark runs
last. The table prints median seconds and each engine's time over ferrospark's; all answers
must agree. The files are written once from the Parquet files (``data/tpch-sf<scale>-csv``,
``-json``, ``-avro``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from decimal import Decimal
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

COLUMNS = [
    ("l_orderkey", "BIGINT"),
    ("l_partkey", "BIGINT"),
    ("l_suppkey", "BIGINT"),
    ("l_linenumber", "INT"),
    ("l_quantity", "DECIMAL(15,2)"),
    ("l_extendedprice", "DECIMAL(15,2)"),
    ("l_discount", "DECIMAL(15,2)"),
    ("l_tax", "DECIMAL(15,2)"),
    ("l_returnflag", "STRING"),
    ("l_linestatus", "STRING"),
    ("l_shipdate", "DATE"),
    ("l_commitdate", "DATE"),
    ("l_receiptdate", "DATE"),
    ("l_shipinstruct", "STRING"),
    ("l_shipmode", "STRING"),
    ("l_comment", "STRING"),
]
DDL = ", ".join(f"{n} {t}" for n, t in COLUMNS)
FILTERS = {"all": None, "selective": "l_orderkey < 60000"}


def make_csv(scale: float) -> Path:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.dataset as ds

    tag = f"{scale:g}"
    out = REPO / "data" / f"tpch-sf{tag}-csv" / "lineitem.csv"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    src = ds.dataset(REPO / "data" / f"tpch-sf{tag}" / "lineitem", format="parquet")
    names = [n for n, _ in COLUMNS]
    tmp = out.with_suffix(".tmp")

    def plain(t: pa.DataType) -> pa.DataType:
        return pa.string() if t in (pa.string_view(), pa.large_string()) else t

    schema = pa.schema([pa.field(n, plain(src.schema.field(n).type)) for n in names])
    with pacsv.CSVWriter(tmp, schema) as w:
        for batch in src.to_batches(columns=names):
            w.write_batch(
                pa.RecordBatch.from_arrays(
                    [c.cast(f.type) for c, f in zip(batch.columns, schema)], schema=schema
                )
            )
    os.replace(tmp, out)
    return out


def make_json(scale: float) -> Path:
    import duckdb

    tag = f"{scale:g}"
    out = REPO / "data" / f"tpch-sf{tag}-json" / "lineitem.json"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    src = REPO / "data" / f"tpch-sf{tag}" / "lineitem" / "*.parquet"
    cols = ", ".join(n for n, _ in COLUMNS)
    duckdb.connect().execute(f"COPY (SELECT {cols} FROM read_parquet('{src}')) TO '{tmp}' (FORMAT JSON)")
    os.replace(tmp, out)
    return out


def make_avro(scale: float) -> Path:
    import polars as pl

    tag = f"{scale:g}"
    out = REPO / "data" / f"tpch-sf{tag}-avro" / "lineitem.avro"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    src = REPO / "data" / f"tpch-sf{tag}" / "lineitem" / "*.parquet"
    frame = pl.scan_parquet(src).select([n for n, _ in COLUMNS]).collect()
    frame.write_avro(tmp, compression="deflate")
    os.replace(tmp, out)
    return out


MAKE = {"csv": make_csv, "json": make_json, "avro": make_avro}
# Engines that cannot read a format here (see the module doc).
UNAVAILABLE = {"avro": {"duckdb", "pyspark"}}


def _answer(count, total) -> tuple[int, Decimal]:
    return int(count), Decimal(str(total)).quantize(Decimal("0.01"))


def _frame(read, fmt: str, path: Path, cond: str | None):
    """lineitem read by a Spark-style ``read`` (ferrospark's or PySpark's) in ``fmt``, filtered:
    CSV and JSON typed by the schema, Avro by its own."""
    if fmt == "avro":
        df = read.avro(str(path))
    elif fmt == "csv":
        df = read.schema(DDL).csv(str(path), header=True)
    else:
        df = read.schema(DDL).json(str(path))
    return df.filter(cond) if cond else df


def run_ferrospark(fmt: str, path: Path, cond: str | None, pushdown: bool):
    import ferrospark as fs
    from ferrospark import functions as F

    s = fs.Session(conf={f"spark.sql.{fmt}.filterPushdown.enabled": str(pushdown).lower()})
    df = _frame(s.read, fmt, path, cond)
    row = df.agg(F.count("*"), F.sum("l_extendedprice")).toArrow().to_pylist()[0]
    return _answer(*row.values())


def run_ferrospark_on_spark(fmt: str, path: Path, cond: str | None, spark):
    """The same query as a ferrospark plan run as Spark stages: the files split across
    tasks, each reading its byte ranges natively, the partial aggregation in the same task."""
    import ferrospark as fs
    from ferrospark import functions as F

    df = _frame(fs.Session(spark=spark).read, fmt, path, cond)
    row = df.agg(F.count("*"), F.sum("l_extendedprice")).toArrow().to_pylist()[0]
    return _answer(*row.values())


def run_duckdb(fmt: str, path: Path, cond: str | None, con):
    types = ", ".join(f"'{n}': '{t.replace('STRING', 'VARCHAR')}'" for n, t in COLUMNS)
    where = f"WHERE {cond}" if cond else ""
    source = (
        f"read_csv('{path}', header=true, columns={{{types}}})"
        if fmt == "csv"
        else f"read_json('{path}', format='newline_delimited', columns={{{types}}})"
    )
    q = f"SELECT count(*), sum(l_extendedprice) FROM {source} {where}"
    return _answer(*con.execute(q).fetchone())


def run_polars(fmt: str, path: Path, cond: str | None):
    import polars as pl

    types = {
        "BIGINT": pl.Int64,
        "INT": pl.Int32,
        "DECIMAL(15,2)": pl.Decimal(15, 2),
        "STRING": pl.String,
        "DATE": pl.Date,
    }
    if fmt == "json":
        # Polars reads a JSON number into a decimal column only through a double.
        types["DECIMAL(15,2)"] = pl.Float64
    schema = {n: types[t] for n, t in COLUMNS}
    if fmt == "avro":
        lf = pl.read_avro(path, columns=["l_orderkey", "l_extendedprice"]).lazy()
    elif fmt == "csv":
        lf = pl.scan_csv(path, schema=schema)
    else:
        lf = pl.scan_ndjson(path, schema=schema)
    if cond:
        lf = lf.filter(pl.col("l_orderkey") < 60000)
    price = pl.col("l_extendedprice").cast(pl.Decimal(15, 2))
    out = lf.select(pl.len(), price.sum()).collect().row(0)
    return _answer(*out)


def run_pyspark(fmt: str, path: Path, cond: str | None, spark, pushdown: bool):
    from pyspark.sql import functions as F

    spark.conf.set(f"spark.sql.{fmt}.filterPushdown.enabled", str(pushdown).lower())
    df = _frame(spark.read, fmt, path, cond)
    row = df.agg(F.count(F.lit(1)), F.sum("l_extendedprice")).collect()[0]
    return _answer(row[0], row[1])


def timed(fn, reps: int):
    fn()  # warm-up
    times, answer = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        answer = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), answer


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--formats", default="csv,json,avro")
    ap.add_argument("--engines", default="ferrospark,duckdb,polars,pyspark")
    args = ap.parse_args()
    engines = args.engines.split(",")
    paths = {fmt: MAKE[fmt](args.scale) for fmt in args.formats.split(",")}
    for fmt, path in paths.items():
        print(f"lineitem SF{args.scale:g} as {fmt}: {path} ({path.stat().st_size / 1e6:.0f} MB), 2 threads")
    workloads = [(fmt, w, cond) for fmt in paths for w, cond in FILTERS.items()]
    results: dict[tuple[str, str], dict[str, tuple[float, object]]] = {(f, w): {} for f, w, _ in workloads}
    con = None
    if "duckdb" in engines:
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 2")
    os.environ.setdefault("POLARS_MAX_THREADS", "2")
    for fmt, w, cond in workloads:
        path, rows = paths[fmt], results[(fmt, w)]
        skip = UNAVAILABLE.get(fmt, set())
        if "ferrospark" in engines:
            rows["ferrospark"] = timed(partial(run_ferrospark, fmt, path, cond, True), args.reps)
            rows["ferrospark (no pushdown)"] = timed(
                partial(run_ferrospark, fmt, path, cond, False), args.reps
            )
        if con is not None and "duckdb" not in skip:
            rows["duckdb"] = timed(partial(run_duckdb, fmt, path, cond, con), args.reps)
        if "polars" in engines:
            rows["polars"] = timed(partial(run_polars, fmt, path, cond), args.reps)
    if "pyspark" in engines:
        from pyspark.sql import SparkSession

        # Spark's Python workers run ferrospark's tasks: they need this interpreter.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", "4g")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        for fmt, w, cond in workloads:
            path, rows = paths[fmt], results[(fmt, w)]
            if "ferrospark" in engines:
                rows["ferrospark on Spark"] = timed(
                    partial(run_ferrospark_on_spark, fmt, path, cond, spark), args.reps
                )
            if "pyspark" in UNAVAILABLE.get(fmt, set()):
                continue
            rows["pyspark"] = timed(partial(run_pyspark, fmt, path, cond, spark, True), args.reps)
            rows["pyspark (no pushdown)"] = timed(
                partial(run_pyspark, fmt, path, cond, spark, False), args.reps
            )
        spark.stop()
    ok = True
    for (fmt, w), rows in results.items():
        where = " WHERE " + FILTERS[w] if FILTERS[w] else ""
        print(f"\n{fmt}, workload {w}: count(*), sum(l_extendedprice){where}")
        print(f"{'engine':<26} {'median s':>9} {'/ ferrospark':>13}  answer")
        base = rows.get("ferrospark", (None, None))[0]
        answers = {a for _, a in rows.values()}
        for name, (t, a) in rows.items():
            ratio = f"{t / base:.2f}x" if base else ""
            print(f"{name:<26} {t:>9.3f} {ratio:>13}  {a}")
        if len(answers) > 1:
            ok = False
            print("ANSWERS DISAGREE")
        else:
            print("answers agree")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
