"""Window workloads of ``benches/compare.py`` (issue 5, in progress): "window" is
row_number() and a running sum(l_extendedprice) over (PARTITION BY l_suppkey ORDER BY
l_shipdate, l_orderkey, l_linenumber) on lineitem, in every engine.

Each engine reduces its 6M result rows to checksums inside itself (row count, sum of the row
numbers, sum of the running sums), so timing measures the window and not the transfer of the
rows into Python.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

COLUMNS = ["l_suppkey", "l_shipdate", "l_orderkey", "l_linenumber", "l_extendedprice"]
ORDER = ["l_shipdate", "l_orderkey", "l_linenumber"]
WINDOW_SQL = """
SELECT count(*), sum(rn), sum(rs) FROM (
  SELECT row_number() OVER w AS rn, sum(l_extendedprice) OVER w AS rs
  FROM read_parquet('{lineitem}')
  WINDOW w AS (PARTITION BY l_suppkey ORDER BY l_shipdate, l_orderkey, l_linenumber)
)
"""


def _glob(paths: dict[str, str]) -> str:
    return (Path(paths["lineitem"]) / "*.parquet").as_posix().replace("'", "''")


def _result(rows: Any, a: Any, b: Any) -> tuple:
    return (int(rows), Decimal(str(a)), Decimal(str(b)))


def _describe(r: Any) -> str:
    return f"rows {r[0]}, checksums {r[1]}, {r[2]}"


def _fs(e: Any, paths: dict[str, str]) -> Any:
    import pyarrow.compute as pc

    fs = e.fs
    data = e.session.read_parquet(paths["lineitem"], columns=COLUMNS)
    w = fs.Window.partition_by("l_suppkey").order_by(*ORDER)
    out = e.session.window(
        data, [fs.row_number().over(w).alias("rn"), fs.sum("l_extendedprice").over(w).alias("rs")]
    )
    e.notes["metrics"] = fs.last_window_metrics()
    return _result(out.num_rows, pc.sum(out["rn"]).as_py(), pc.sum(out["rs"]).as_py())


def _duck(e: Any, paths: dict[str, str]) -> Any:
    return _result(*e.con.execute(WINDOW_SQL.format(lineitem=_glob(paths))).fetchone())


def _pl(e: Any, paths: dict[str, str]) -> Any:
    pl = e.pl
    out = (
        pl.scan_parquet(Path(paths["lineitem"]) / "*.parquet")
        .select(COLUMNS)
        .sort(["l_suppkey", *ORDER])
        .with_columns(
            (pl.int_range(pl.len()).over("l_suppkey") + 1).alias("rn"),
            pl.col("l_extendedprice").cum_sum().over("l_suppkey").alias("rs"),
        )
        .select(pl.len(), pl.col("rn").sum(), pl.col("rs").sum())
        .collect()
    )
    return _result(*out.row(0))


def _spark(e: Any, paths: dict[str, str]) -> Any:
    from pyspark.sql import Window

    F = e.F  # noqa: N806
    w = Window.partitionBy("l_suppkey").orderBy(*ORDER)
    df = e.spark.read.parquet(paths["lineitem"]).select(*COLUMNS)
    row = (
        df.select(F.row_number().over(w).alias("rn"), F.sum("l_extendedprice").over(w).alias("rs"))
        .agg(F.count(F.lit(1)), F.sum("rn"), F.sum("rs"))
        .collect()[0]
    )
    return _result(row[0], row[1], row[2])


SLIDING_COLUMNS = ["l_suppkey", "l_shipdate", "l_orderkey", "l_linenumber", "l_quantity", "l_extendedprice"]
SLIDING_SQL = """
SELECT count(*), sum(a), sum(m) FROM (
  SELECT avg(l_quantity) OVER (PARTITION BY l_suppkey ORDER BY l_shipdate, l_orderkey, l_linenumber
                               ROWS BETWEEN 100 PRECEDING AND 100 FOLLOWING) AS a,
         min(l_extendedprice) OVER (PARTITION BY l_suppkey ORDER BY l_shipdate
                                    RANGE BETWEEN INTERVAL 30 DAYS PRECEDING AND CURRENT ROW) AS m
  FROM read_parquet('{lineitem}')
)
"""


def _fs_sliding(e: Any, paths: dict[str, str]) -> Any:
    import pyarrow.compute as pc

    fs = e.fs
    data = e.session.read_parquet(paths["lineitem"], columns=SLIDING_COLUMNS)
    rows = fs.Window.partition_by("l_suppkey").order_by(*ORDER).rows_between(-100, 100)
    days = fs.Window.partition_by("l_suppkey").order_by("l_shipdate").range_between(-30, 0)
    out = e.session.window(
        data,
        [fs.avg("l_quantity").over(rows).alias("a"), fs.min("l_extendedprice").over(days).alias("m")],
    )
    e.notes["metrics"] = fs.last_window_metrics()
    return _result(out.num_rows, pc.sum(out["a"]).as_py(), pc.sum(out["m"]).as_py())


def _duck_sliding(e: Any, paths: dict[str, str]) -> Any:
    return _result(*e.con.execute(SLIDING_SQL.format(lineitem=_glob(paths))).fetchone())


def _spark_sliding(e: Any, paths: dict[str, str]) -> Any:
    from pyspark.sql import Window

    F = e.F  # noqa: N806
    rows = Window.partitionBy("l_suppkey").orderBy(*ORDER).rowsBetween(-100, 100)
    days = Window.partitionBy("l_suppkey").orderBy(F.unix_date("l_shipdate")).rangeBetween(-30, 0)
    df = e.spark.read.parquet(paths["lineitem"]).select(*SLIDING_COLUMNS)
    row = (
        df.select(F.avg("l_quantity").over(rows).alias("a"), F.min("l_extendedprice").over(days).alias("m"))
        .agg(F.count(F.lit(1)), F.sum("a"), F.sum("m"))
        .collect()[0]
    )
    return _result(row[0], row[1], row[2])


def register_all(c: Any) -> None:
    """Registers the workloads in ``compare`` (passed as its module object)."""
    w = c.register(
        c.Workload(
            "window",
            "row_number() and running sum(l_extendedprice) OVER (PARTITION BY l_suppkey ORDER BY "
            "l_shipdate, l_orderkey, l_linenumber)",
            tables=("lineitem",),
            describe=_describe,
        )
    )
    w.runs["ferrospark"] = _fs
    w.runs["duckdb"] = _duck
    w.runs["polars"] = _pl
    w.runs["pyspark"] = _spark
    s = c.register(
        c.Workload(
            "sliding",
            "avg(l_quantity) OVER (... ROWS BETWEEN 100 PRECEDING AND 100 FOLLOWING) and "
            "min(l_extendedprice) OVER (PARTITION BY l_suppkey ORDER BY l_shipdate RANGE 30 days "
            "PRECEDING .. CURRENT ROW)",
            tables=("lineitem",),
            describe=_describe,
        )
    )
    s.runs["ferrospark"] = _fs_sliding
    s.runs["duckdb"] = _duck_sliding
    s.runs["pyspark"] = _spark_sliding
