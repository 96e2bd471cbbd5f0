"""Window workloads of ``benches/compare.py``: "window" is row_number() and a running
sum(l_extendedprice) over (PARTITION BY l_suppkey ORDER BY l_shipdate, l_orderkey,
l_linenumber) on lineitem; "sliding" a ROWS and a RANGE frame; "session" sessions per
l_suppkey over l_shipdate with a 10-day gap, counted (Spark's session_window, the others
with lag and a running sum, as the issue measures them).

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


def _fss(e: Any, paths: dict[str, str]) -> Any:
    fs, fss, F = e.fs, e.fss, e.F  # noqa: N806
    df = fss.read_parquet(e.spark, paths["lineitem"], columns=COLUMNS)
    w = fs.Window.partition_by("l_suppkey").order_by(*ORDER)
    out = fss.window(df, [fs.row_number().over(w).alias("rn"), fs.sum("l_extendedprice").over(w).alias("rs")])
    row = out.agg(F.count(F.lit(1)), F.sum("rn"), F.sum("rs")).collect()[0]
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


SESSION_GAP_DAYS = 10
SESSION_SQL = """
WITH marked AS (
  SELECT l_suppkey, l_shipdate,
         CASE WHEN l_shipdate - lag(l_shipdate) OVER w <= {gap} THEN 0 ELSE 1 END AS opens
  FROM read_parquet('{lineitem}')
  WINDOW w AS (PARTITION BY l_suppkey ORDER BY l_shipdate)
), numbered AS (
  SELECT l_suppkey, l_shipdate,
         sum(opens) OVER (PARTITION BY l_suppkey ORDER BY l_shipdate, opens DESC
                          ROWS UNBOUNDED PRECEDING) AS sid
  FROM marked
), sessions AS (
  SELECT count(*) AS n, max(l_shipdate) - min(l_shipdate) + {gap} AS days
  FROM numbered GROUP BY l_suppkey, sid
)
SELECT count(*), sum(n), sum(days) FROM sessions
"""


def _session_result(sessions: Any, rows: Any, days: Any) -> tuple:
    return (int(sessions), int(rows), int(days))


def _describe_sessions(r: Any) -> str:
    return f"sessions {r[0]}, rows {r[1]}, days {r[2]}"


def _session_checksums(out: Any) -> tuple:
    import pyarrow.compute as pc

    sw = out["session_window"].combine_chunks()
    length = pc.subtract(pc.struct_field(sw, "end"), pc.struct_field(sw, "start"))
    days = pc.sum(pc.divide(pc.cast(length, "int64"), 86_400_000_000)).as_py()
    return _session_result(out.num_rows, pc.sum(out["n"]).as_py(), days)


def _fs_session(e: Any, paths: dict[str, str]) -> Any:
    fs = e.fs
    data = e.session.read_parquet(paths["lineitem"], columns=["l_suppkey", "l_shipdate"])
    out = e.session.session_window(
        data, "l_shipdate", f"{SESSION_GAP_DAYS} days", by="l_suppkey", aggs=[fs.count().alias("n")]
    )
    e.notes["metrics"] = fs.last_window_metrics()
    return _session_checksums(out)


def _duck_session(e: Any, paths: dict[str, str]) -> Any:
    sql = SESSION_SQL.format(lineitem=_glob(paths), gap=SESSION_GAP_DAYS)
    return _session_result(*e.con.execute(sql).fetchone())


def _pl_session(e: Any, paths: dict[str, str]) -> Any:
    pl = e.pl
    gap = pl.duration(days=SESSION_GAP_DAYS)
    out = (
        pl.scan_parquet(Path(paths["lineitem"]) / "*.parquet")
        .select("l_suppkey", "l_shipdate")
        .sort("l_suppkey", "l_shipdate")
        .with_columns(
            (pl.col("l_shipdate").diff().over("l_suppkey").fill_null(gap + pl.duration(days=1)) > gap)
            .cast(pl.UInt32)
            .cum_sum()
            .over("l_suppkey")
            .alias("sid")
        )
        .group_by("l_suppkey", "sid")
        .agg(pl.len().alias("n"), (pl.col("l_shipdate").max() - pl.col("l_shipdate").min()).alias("span"))
        .select(
            pl.len(),
            pl.col("n").sum(),
            (pl.col("span").dt.total_days() + SESSION_GAP_DAYS).sum(),
        )
        .collect()
    )
    return _session_result(*out.row(0))


def _spark_session(e: Any, paths: dict[str, str]) -> Any:
    F = e.F  # noqa: N806
    df = e.spark.read.parquet(paths["lineitem"]).select("l_suppkey", "l_shipdate")
    sessions = df.groupBy(F.session_window("l_shipdate", f"{SESSION_GAP_DAYS} days"), "l_suppkey").agg(
        F.count(F.lit(1)).alias("n")
    )
    return _spark_session_checksums(F, sessions)


def _spark_session_checksums(F: Any, sessions: Any) -> tuple:  # noqa: N803
    days = (F.unix_micros("session_window.end") - F.unix_micros("session_window.start")) / 86_400_000_000
    row = sessions.agg(F.count(F.lit(1)), F.sum("n"), F.sum(days)).collect()[0]
    return _session_result(row[0], row[1], row[2])


def _fss_session(e: Any, paths: dict[str, str]) -> Any:
    fs, fss = e.fs, e.fss
    df = fss.read_parquet(e.spark, paths["lineitem"], columns=["l_suppkey", "l_shipdate"])
    sessions = fss.session_window(
        df, "l_shipdate", f"{SESSION_GAP_DAYS} days", by="l_suppkey", aggs=[fs.count().alias("n")]
    )
    return _spark_session_checksums(e.F, sessions)


def _fss_sliding(e: Any, paths: dict[str, str]) -> Any:
    fs, fss, F = e.fs, e.fss, e.F  # noqa: N806
    df = fss.read_parquet(e.spark, paths["lineitem"], columns=SLIDING_COLUMNS)
    rows = fs.Window.partition_by("l_suppkey").order_by(*ORDER).rows_between(-100, 100)
    days = fs.Window.partition_by("l_suppkey").order_by("l_shipdate").range_between(-30, 0)
    out = fss.window(
        df, [fs.avg("l_quantity").over(rows).alias("a"), fs.min("l_extendedprice").over(days).alias("m")]
    )
    row = out.agg(F.count(F.lit(1)), F.sum("a"), F.sum("m")).collect()[0]
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
    w.runs["fss"] = _fss
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
    s.runs["fss"] = _fss_sliding
    sw = c.register(
        c.Workload(
            "session",
            "sessions per l_suppkey over l_shipdate with a 10-day gap, count per session "
            "(session_window in ferrospark and Spark; lag + running sum in DuckDB and Polars)",
            tables=("lineitem",),
            describe=_describe_sessions,
        )
    )
    sw.runs["ferrospark"] = _fs_session
    sw.runs["duckdb"] = _duck_session
    sw.runs["polars"] = _pl_session
    sw.runs["pyspark"] = _spark_session
    sw.runs["fss"] = _fss_session
