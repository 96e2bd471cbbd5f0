"""Python functions in queries, timed in ferrospark, PySpark, DuckDB and Polars on TPC-H's files.

    python benches/python_udfs.py --scale 1                    # all four engines
    python benches/python_udfs.py --engines ferrospark,pyspark --reps 5

The same Python functions in each engine's own way of calling Python:

- ``row_udf``: a row-at-a-time function over orders' comments (``F.udf`` / ``spark.udf.register``;
  DuckDB's ``create_function``; Polars' ``map_elements``);
- ``row_udf_arrow``: the same, results converted by Arrow (``useArrow=True``; DuckDB's
  ``type='arrow'`` is columnar, so it calls the function per column there);
- ``pandas_scalar``: a ``pandas_udf`` over lineitem's prices (DuckDB: an Arrow function;
  Polars: ``map_batches``);
- ``pandas_grouped_agg``: a grouped-aggregate ``pandas_udf`` (median per group; Polars:
  ``map_batches`` inside ``group_by().agg``; DuckDB has no Python aggregate functions, n/a).

Each engine runs each query once to warm up, then ``--reps`` times (median printed), in one
process per engine; answers are checked against PySpark's when it runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from ferrospark.tpch import ensure_tpch  # noqa: E402

TABLES = ["orders", "lineitem"]


def comment_words(s):
    return None if s is None else len(s.split())


def disc_price(price, discount):
    return price * (1 - discount)


def median_of(v):
    return float(v.median())


SQL = {
    "row_udf": "SELECT o_orderstatus, sum(comment_words(o_comment)) AS w FROM orders GROUP BY o_orderstatus",
    "row_udf_arrow": "SELECT o_orderstatus, sum(comment_words_arrow(o_comment)) AS w FROM orders GROUP BY o_orderstatus",
    "pandas_scalar": "SELECT l_returnflag, sum(disc_price(CAST(l_extendedprice AS DOUBLE), CAST(l_discount AS DOUBLE))) AS s "
    "FROM lineitem GROUP BY l_returnflag",
    "pandas_grouped_agg": "SELECT l_returnflag, l_linestatus, median_of(CAST(l_quantity AS DOUBLE)) AS m "
    "FROM lineitem GROUP BY l_returnflag, l_linestatus",
}


def rows(table) -> list[tuple]:
    cols = [c.to_pylist() for c in table.columns]
    return sorted(
        tuple(f"{float(v):.9g}" if isinstance(v, (int, float)) else str(v) for v in r) for r in zip(*cols)
    )


def _spark_like(engine: str, data: dict[str, Path]):
    if engine == "ferrospark":
        import ferrospark as fs
        from ferrospark import functions as F

        s = fs.Session()
    else:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        s = (
            SparkSession.builder.master("local[2]")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
        s.sparkContext.setLogLevel("ERROR")
    for t in TABLES:
        s.read.parquet(str(data[t])).createOrReplaceTempView(t)

    def series_price(p: pd.Series, d: pd.Series) -> pd.Series:
        return disc_price(p, d)

    def series_median(v: pd.Series) -> float:
        return median_of(v)

    s.udf.register("comment_words", F.udf(comment_words, "int"))
    s.udf.register("comment_words_arrow", F.udf(comment_words, "int", useArrow=True))
    s.udf.register("disc_price", F.pandas_udf(series_price, "double"))
    s.udf.register("median_of", F.pandas_udf(series_median, "double"))
    return {name: (lambda q=q: s.sql(q).toArrow()) for name, q in SQL.items()}


def _duckdb(data: dict[str, Path]):
    import duckdb
    import pyarrow.compute as pc
    from duckdb.sqltypes import BIGINT, DOUBLE, VARCHAR

    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{data[t]}/*.parquet')")
    con.create_function("comment_words", comment_words, [VARCHAR], BIGINT)

    def words_arrow(s):
        return pc.list_value_length(pc.utf8_split_whitespace(s))

    con.create_function("comment_words_arrow", words_arrow, [VARCHAR], BIGINT, type="arrow")

    def price_arrow(p, d):
        return pc.multiply(p, pc.subtract(1, d))

    con.create_function("disc_price", price_arrow, [DOUBLE, DOUBLE], DOUBLE, type="arrow")
    return {
        name: (lambda q=q: con.execute(q).to_arrow_table())
        for name, q in SQL.items()
        if name != "pandas_grouped_agg"
    }


def _polars(data: dict[str, Path]):
    import polars as pl

    orders = pl.scan_parquet(f"{data['orders']}/*.parquet")
    lineitem = pl.scan_parquet(f"{data['lineitem']}/*.parquet")

    def row_udf():
        return (
            orders.group_by("o_orderstatus")
            .agg(pl.col("o_comment").map_elements(comment_words, return_dtype=pl.Int64).sum().alias("w"))
            .collect()
            .to_arrow()
        )

    def row_udf_arrow():
        return (
            orders.group_by("o_orderstatus")
            .agg(
                pl.col("o_comment")
                .map_batches(lambda s: s.str.split(" ").list.len(), return_dtype=pl.UInt32)
                .sum()
                .alias("w")
            )
            .collect()
            .to_arrow()
        )

    def pandas_scalar():
        price = pl.col("l_extendedprice").cast(pl.Float64)
        disc = pl.col("l_discount").cast(pl.Float64)
        return (
            lineitem.group_by("l_returnflag")
            .agg(
                pl.struct(price.alias("p"), disc.alias("d"))
                .map_batches(
                    lambda s: disc_price(s.struct.field("p"), s.struct.field("d")), return_dtype=pl.Float64
                )
                .sum()
                .alias("s")
            )
            .collect()
            .to_arrow()
        )

    def pandas_grouped_agg():
        return (
            lineitem.group_by("l_returnflag", "l_linestatus")
            .agg(
                pl.col("l_quantity")
                .cast(pl.Float64)
                .map_batches(
                    lambda s: pl.Series([median_of(s.to_pandas())]),
                    returns_scalar=True,
                    return_dtype=pl.Float64,
                )
                .alias("m")
            )
            .collect()
            .to_arrow()
        )

    return {
        "row_udf": row_udf,
        "row_udf_arrow": row_udf_arrow,
        "pandas_scalar": pandas_scalar,
        "pandas_grouped_agg": pandas_grouped_agg,
    }


def run_engine(engine: str, dirs: dict[str, str], reps: int) -> dict[str, tuple[float, list[tuple]]]:
    data = {t: Path(dirs[t]) for t in TABLES}
    if engine in ("ferrospark", "pyspark"):
        runs = _spark_like(engine, data)
    elif engine == "duckdb":
        runs = _duckdb(data)
    else:
        runs = _polars(data)
    out = {}
    for name, run in runs.items():
        result = run()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            result = run()
            times.append(time.perf_counter() - t0)
        out[name] = (statistics.median(times), rows(result))
        print(f"  {engine:<11} {name:<22} {out[name][0]:8.3f} s", file=sys.stderr, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--engines", default="ferrospark,pyspark,duckdb,polars")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    dirs = ensure_tpch(args.scale, ROOT / "data" / f"tpch-sf{args.scale:g}", tables=TABLES)
    engines = args.engines.split(",")
    results = {e: run_engine(e, dirs, args.reps) for e in engines}
    head = f"{'workload':<22}" + "".join(f"{e:>12}" for e in engines)
    if "ferrospark" in engines:
        head += "".join(f"{'fs/' + e:>14}" for e in engines if e != "ferrospark")
    print(head)
    for name in SQL:
        cell = {e: results[e].get(name) for e in engines}
        line = f"{name:<22}" + "".join(f"{c[0]:>11.3f}s" if c else f"{'n/a':>12}" for c in cell.values())
        mine = cell.get("ferrospark")
        if mine:
            line += "".join(
                f"{mine[0] / cell[e][0]:>13.2f}x" if cell[e] else f"{'n/a':>14}"
                for e in engines
                if e != "ferrospark"
            )
        if mine and cell.get("pyspark"):
            line += "   same as Spark" if mine[1] == cell["pyspark"][1] else "   DIFFERS from Spark"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
