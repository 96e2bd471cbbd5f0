"""Aggregation workloads of ``benches/compare.py``: TPC-H Q1, a high-cardinality group-by and
collect_set / collect_list, in every engine.

Large results are reduced to a few checksums *over the grouped result* (number of groups,
sums of the aggregates, a key-weighted sum), computed inside each engine after the group-by,
so that timing measures the aggregation and not the transfer of 1.5 million rows into Python.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

Q1_CUTOFF = dt.date(1998, 9, 2)  # DATE '1998-12-01' - INTERVAL '90' DAY
Q1_FILTER = f"l_shipdate <= DATE '{Q1_CUTOFF}'"
Q1_COLUMNS = ["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax"]
Q1_SQL = f"""
SELECT l_returnflag, l_linestatus,
       sum(l_quantity) AS sum_qty,
       sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty,
       avg(l_extendedprice) AS avg_price,
       avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM {{table}}
WHERE {Q1_FILTER}
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus
"""
HIGH_SQL = """
SELECT count(*) AS groups, sum(s) AS sum_qty, sum(n) AS rows, sum(l_orderkey * n) AS key_weight
FROM (SELECT l_orderkey, sum(l_quantity) AS s, count(*) AS n FROM {table} GROUP BY l_orderkey) g
"""
COLLECT_SQL = """
SELECT count(*) AS groups, sum(sz_set) AS set_items, sum(sz_list) AS list_items,
       sum(l_suppkey * sz_set) AS key_weight
FROM (SELECT l_suppkey, len(list(DISTINCT l_shipmode)) AS sz_set, len(list(l_partkey)) AS sz_list
      FROM {table} GROUP BY l_suppkey) g
"""


def _glob(paths: dict[str, str]) -> str:
    return (Path(paths["lineitem"]) / "*.parquet").as_posix().replace("'", "''")


def _rows(rows: list[tuple]) -> list[tuple]:
    return [tuple(r) for r in rows]


def _spark_avgs(rows: list[tuple]) -> list[tuple]:
    """Q1's three averages as Spark types them: avg(decimal(15,2)) is decimal(19,6), rounded
    HALF_UP; engines that average in double are rounded the same way to compare."""
    six = Decimal("0.000001")
    return [(*r[:6], *(Decimal(repr(v)).quantize(six, ROUND_HALF_UP) for v in r[6:9]), r[9]) for r in rows]


def _describe_rows(result: Any) -> str:
    return f"{len(result)} rows, first {result[0] if result else None}"


def _describe_summary(result: Any) -> str:
    return ", ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in result)


# -------------------------------------------------------------------- ferrospark (in process)


def _q1_aggs(m: Any, count_all: Any) -> list[Any]:
    """Q1's aggregates in ``m``: ``ferrospark`` or ``pyspark.sql.functions`` (same names)."""
    disc = m.col("l_extendedprice") * (1 - m.col("l_discount"))
    return [
        m.sum("l_quantity").alias("sum_qty"),
        m.sum("l_extendedprice").alias("sum_base_price"),
        m.sum(disc).alias("sum_disc_price"),
        m.sum(disc * (1 + m.col("l_tax"))).alias("sum_charge"),
        m.avg("l_quantity").alias("avg_qty"),
        m.avg("l_extendedprice").alias("avg_price"),
        m.avg("l_discount").alias("avg_disc"),
        count_all.alias("count_order"),
    ]


def _fs_q1(e: Any, paths: dict[str, str]) -> Any:
    fs = e.fs
    scan = e.session.scan_parquet(paths["lineitem"], columns=Q1_COLUMNS, filter=Q1_FILTER)
    t = e.session.aggregate(scan, ["l_returnflag", "l_linestatus"], _q1_aggs(fs, fs.count()))
    e.notes["metrics"] = fs.last_aggregate_metrics()
    t = t.sort_by([("l_returnflag", "ascending"), ("l_linestatus", "ascending")])
    return _rows(list(zip(*[c.to_pylist() for c in t.columns], strict=True)))


def _fs_high(e: Any, paths: dict[str, str]) -> Any:
    fs, pc = e.fs, e.pc
    scan = e.session.scan_parquet(paths["lineitem"], columns=["l_orderkey", "l_quantity"])
    t = e.session.aggregate(scan, "l_orderkey", [fs.sum("l_quantity").alias("s"), fs.count().alias("n")])
    e.notes["metrics"] = fs.last_aggregate_metrics()
    weight = pc.sum(pc.multiply(t["l_orderkey"], t["n"])).as_py()
    return (t.num_rows, pc.sum(t["s"]).as_py(), pc.sum(t["n"]).as_py(), weight)


def _fs_collect(e: Any, paths: dict[str, str]) -> Any:
    fs, pc = e.fs, e.pc
    scan = e.session.scan_parquet(paths["lineitem"], columns=["l_suppkey", "l_shipmode", "l_partkey"])
    t = e.session.aggregate(
        scan,
        "l_suppkey",
        [fs.collect_set("l_shipmode").alias("set"), fs.collect_list("l_partkey").alias("list")],
    )
    e.notes["metrics"] = fs.last_aggregate_metrics()
    sz_set = pc.list_value_length(t["set"])
    sz_list = pc.list_value_length(t["list"])
    weight = pc.sum(pc.multiply(t["l_suppkey"], sz_set)).as_py()
    return (t.num_rows, pc.sum(sz_set).as_py(), pc.sum(sz_list).as_py(), weight)


# -------------------------------------------------------------------- DuckDB / Polars


def _duck(sql: str) -> Any:
    def run(e: Any, paths: dict[str, str]) -> Any:
        table = f"read_parquet('{_glob(paths)}')"
        return _rows(e.con.execute(sql.format(table=table)).fetchall())

    return run


def _duck_summary(sql: str) -> Any:
    inner = _duck(sql)

    def run(e: Any, paths: dict[str, str]) -> Any:
        return inner(e, paths)[0]

    return run


def _pl_scan(e: Any, paths: dict[str, str]) -> Any:
    return e.pl.scan_parquet(Path(paths["lineitem"]) / "*.parquet")


def _pl_q1(e: Any, paths: dict[str, str]) -> Any:
    pl = e.pl
    disc = pl.col("l_extendedprice") * (1 - pl.col("l_discount"))
    frame = (
        _pl_scan(e, paths)
        .filter(pl.col("l_shipdate") <= Q1_CUTOFF)
        .group_by("l_returnflag", "l_linestatus")
        .agg(
            pl.col("l_quantity").sum().alias("sum_qty"),
            pl.col("l_extendedprice").sum().alias("sum_base_price"),
            disc.sum().alias("sum_disc_price"),
            (disc * (1 + pl.col("l_tax"))).sum().alias("sum_charge"),
            pl.col("l_quantity").mean().alias("avg_qty"),
            pl.col("l_extendedprice").mean().alias("avg_price"),
            pl.col("l_discount").mean().alias("avg_disc"),
            pl.len().alias("count_order"),
        )
        .sort("l_returnflag", "l_linestatus")
        .collect()
    )
    return _spark_avgs(_rows(frame.rows()))


def _pl_high(e: Any, paths: dict[str, str]) -> Any:
    pl = e.pl
    frame = (
        _pl_scan(e, paths)
        .group_by("l_orderkey")
        .agg(pl.col("l_quantity").sum().alias("s"), pl.len().alias("n"))
        .select(
            pl.len().alias("groups"),
            pl.col("s").sum(),
            pl.col("n").sum(),
            (pl.col("l_orderkey") * pl.col("n")).sum(),
        )
        .collect()
    )
    return frame.row(0)


def _pl_collect(e: Any, paths: dict[str, str]) -> Any:
    pl = e.pl
    frame = (
        _pl_scan(e, paths)
        .group_by("l_suppkey")
        .agg(
            pl.col("l_shipmode").unique().alias("set"),
            pl.col("l_partkey").alias("list"),
        )
        .select(
            pl.len().alias("groups"),
            pl.col("set").list.len().sum(),
            pl.col("list").list.len().sum(),
            (pl.col("l_suppkey") * pl.col("set").list.len()).sum(),
        )
        .collect()
    )
    return frame.row(0)


# -------------------------------------------------------------------- Spark and ferrospark on Spark


def _sorted_rows(df: Any) -> list[tuple]:
    return sorted(_rows(df.collect()))


def _spark_q1(e: Any, paths: dict[str, str]) -> Any:
    df = e.spark.read.parquet(paths["lineitem"]).filter(Q1_FILTER)
    return _sorted_rows(df.groupBy("l_returnflag", "l_linestatus").agg(*_q1_aggs(e.F, e.F.count(e.F.lit(1)))))


def _high_summary(F: Any, grouped: Any) -> Any:
    row = grouped.agg(
        F.count(F.lit(1)), F.sum("s"), F.sum("n"), F.sum(F.col("l_orderkey") * F.col("n"))
    ).collect()[0]
    return tuple(row)


def _collect_summary(F: Any, grouped: Any) -> Any:
    row = grouped.agg(
        F.count(F.lit(1)),
        F.sum(F.size("set")),
        F.sum(F.size("list")),
        F.sum(F.col("l_suppkey") * F.size("set")),
    ).collect()[0]
    return tuple(row)


def _spark_high(e: Any, paths: dict[str, str]) -> Any:
    F = e.F
    grouped = (
        e.spark.read.parquet(paths["lineitem"])
        .groupBy("l_orderkey")
        .agg(F.sum("l_quantity").alias("s"), F.count(F.lit(1)).alias("n"))
    )
    return _high_summary(F, grouped)


def _spark_collect(e: Any, paths: dict[str, str]) -> Any:
    F = e.F
    grouped = (
        e.spark.read.parquet(paths["lineitem"])
        .groupBy("l_suppkey")
        .agg(F.collect_set("l_shipmode").alias("set"), F.collect_list("l_partkey").alias("list"))
    )
    return _collect_summary(F, grouped)


def _fss_source(e: Any, paths: dict[str, str], columns: list[str], filter: str | None = None) -> Any:
    if e.name == "fss":
        return e.fss.read_parquet(e.spark, paths["lineitem"], columns=columns, filter=filter)
    df = e.spark.read.parquet(paths["lineitem"])
    if filter:
        df = df.filter(filter)
    return df.select(*columns)


def _fss_q1(e: Any, paths: dict[str, str]) -> Any:
    df = _fss_source(e, paths, Q1_COLUMNS, Q1_FILTER)
    out = e.fss.aggregate(df, ["l_returnflag", "l_linestatus"], _q1_aggs(e.fs, e.fs.count()))
    return _sorted_rows(out)


def _fss_high(e: Any, paths: dict[str, str]) -> Any:
    fs = e.fs
    df = _fss_source(e, paths, ["l_orderkey", "l_quantity"])
    grouped = e.fss.aggregate(df, "l_orderkey", [fs.sum("l_quantity").alias("s"), fs.count().alias("n")])
    return _high_summary(e.F, grouped)


def _fss_collect(e: Any, paths: dict[str, str]) -> Any:
    fs = e.fs
    df = _fss_source(e, paths, ["l_suppkey", "l_shipmode", "l_partkey"])
    grouped = e.fss.aggregate(
        df,
        "l_suppkey",
        [fs.collect_set("l_shipmode").alias("set"), fs.collect_list("l_partkey").alias("list")],
    )
    return _collect_summary(e.F, grouped)


def register_all(c: Any) -> None:
    """Registers the workloads in ``compare`` (passed as its module object)."""
    q1 = c.register(
        c.Workload(
            "q1",
            "TPC-H Q1: lineitem WHERE l_shipdate <= 1998-09-02 GROUP BY returnflag, linestatus "
            "(4 sums, 3 avgs, count)",
            tables=("lineitem",),
            describe=_describe_rows,
        )
    )
    high = c.register(
        c.Workload(
            "high-card",
            "lineitem GROUP BY l_orderkey: sum(l_quantity), count(*) (1.5M groups) -> "
            "groups, sum, rows, sum(key*count)",
            tables=("lineitem",),
            describe=_describe_summary,
        )
    )
    collect = c.register(
        c.Workload(
            "collect",
            "lineitem GROUP BY l_suppkey: collect_set(l_shipmode), collect_list(l_partkey) -> "
            "groups, set items, list items, sum(key*set size)",
            tables=("lineitem",),
            describe=_describe_summary,
        )
    )
    for workload, runs in (
        (
            q1,
            {
                "ferrospark": _fs_q1,
                "duckdb": lambda e, p: _spark_avgs(_duck(Q1_SQL)(e, p)),
                "polars": _pl_q1,
                "pyspark": _spark_q1,
            },
        ),
        (
            high,
            {
                "ferrospark": _fs_high,
                "duckdb": _duck_summary(HIGH_SQL),
                "polars": _pl_high,
                "pyspark": _spark_high,
            },
        ),
        (
            collect,
            {
                "ferrospark": _fs_collect,
                "duckdb": _duck_summary(COLLECT_SQL),
                "polars": _pl_collect,
                "pyspark": _spark_collect,
            },
        ),
    ):
        for engine, fn in runs.items():
            workload.engine(engine)(fn)
    for workload, fn in ((q1, _fss_q1), (high, _fss_high), (collect, _fss_collect)):
        workload.engine("fss")(fn)
        workload.engine("fss-df")(fn)
