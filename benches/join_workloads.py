"""Join workloads of ``benches/compare.py``: TPC-H lineitem ⋈ orders on the order key, then
sum(l_extendedprice) by o_orderpriority (5 rows), in every engine.

"join" lets each engine choose its plan (ferrospark and PySpark through their join
selection); "join-bhj" and "join-shj" force the broadcast hash and shuffled hash joins in
ferrospark and, through hints, in PySpark. "fss" runs ferrospark's join and aggregation
inside Spark's tasks, both sides read by ``fss.read_parquet``.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

JOIN_SQL = """
SELECT o_orderpriority, sum(l_extendedprice) AS revenue
FROM read_parquet('{lineitem}') JOIN read_parquet('{orders}') ON l_orderkey = o_orderkey
GROUP BY o_orderpriority ORDER BY o_orderpriority
"""


def _glob(paths: dict[str, str], table: str) -> str:
    return (Path(paths[table]) / "*.parquet").as_posix().replace("'", "''")


def _rows(rows: Any) -> list[tuple]:
    return [(str(p), Decimal(str(v))) for p, v in rows]


def _describe(result: Any) -> str:
    return ", ".join(f"{p}: {v}" for p, v in result)


def _fs_join(strategy: str):
    def run(e: Any, paths: dict[str, str]) -> Any:
        fs = e.fs
        items = e.session.read_parquet(paths["lineitem"], columns=["l_orderkey", "l_extendedprice"])
        orders = e.session.read_parquet(paths["orders"], columns=["o_orderkey", "o_orderpriority"])
        joined = e.session.join(
            items, orders, fs.col("l_orderkey") == fs.col("o_orderkey"), "inner", strategy=strategy
        )
        e.notes["plan"] = fs.last_join_plan()
        e.notes["metrics"] = fs.last_join_metrics()
        t = e.session.aggregate(joined, "o_orderpriority", [fs.sum("l_extendedprice").alias("revenue")])
        t = t.sort_by("o_orderpriority")
        return _rows(zip(t["o_orderpriority"].to_pylist(), t["revenue"].to_pylist(), strict=True))

    return run


def _duck(e: Any, paths: dict[str, str]) -> Any:
    sql = JOIN_SQL.format(lineitem=_glob(paths, "lineitem"), orders=_glob(paths, "orders"))
    return _rows(e.con.execute(sql).fetchall())


def _pl(e: Any, paths: dict[str, str]) -> Any:
    pl = e.pl
    items = pl.scan_parquet(Path(paths["lineitem"]) / "*.parquet").select("l_orderkey", "l_extendedprice")
    orders = pl.scan_parquet(Path(paths["orders"]) / "*.parquet").select("o_orderkey", "o_orderpriority")
    out = (
        items.join(orders, left_on="l_orderkey", right_on="o_orderkey")
        .group_by("o_orderpriority")
        .agg(pl.col("l_extendedprice").sum().alias("revenue"))
        .sort("o_orderpriority")
        .collect()
    )
    return _rows(out.iter_rows())


def _spark(hint: str | None):
    def run(e: Any, paths: dict[str, str]) -> Any:
        F = e.F  # noqa: N806
        items = e.spark.read.parquet(paths["lineitem"]).select("l_orderkey", "l_extendedprice")
        orders = e.spark.read.parquet(paths["orders"]).select("o_orderkey", "o_orderpriority")
        if hint:
            orders = orders.hint(hint)
        rows = (
            items.join(orders, items.l_orderkey == orders.o_orderkey)
            .groupBy("o_orderpriority")
            .agg(F.sum("l_extendedprice").alias("revenue"))
            .orderBy("o_orderpriority")
            .collect()
        )
        return _rows((r[0], r[1]) for r in rows)

    return run


def _fss(strategy: str):
    """Both sides from ``fss.read_parquet``, ``fss.join``, then ``fss.aggregate`` over the
    join's result (its partial step runs inside the join's tasks)."""

    def run(e: Any, paths: dict[str, str]) -> Any:
        fs, fss = e.fs, e.fss
        items = fss.read_parquet(e.spark, paths["lineitem"], columns=["l_orderkey", "l_extendedprice"])
        orders = fss.read_parquet(e.spark, paths["orders"], columns=["o_orderkey", "o_orderpriority"])
        cond = fs.col("l_orderkey") == fs.col("o_orderkey")
        joined = fss.join(items, orders, cond, "inner", strategy=strategy)
        e.notes["plan"] = fss.last_spark_join_plan()
        grouped = fss.aggregate(joined, "o_orderpriority", [fs.sum("l_extendedprice").alias("revenue")])
        rows = grouped.orderBy("o_orderpriority").collect()
        return _rows((r[0], r[1]) for r in rows)

    return run


def register_all(c: Any) -> None:
    """Registers the workloads in ``compare`` (passed as its module object)."""
    specs = [
        ("join", "auto", None, "each engine's own plan"),
        ("join-bhj", "broadcast_hash", "broadcast", "broadcast hash join (orders built)"),
        ("join-shj", "shuffle_hash", "shuffle_hash", "shuffled hash join"),
    ]
    for name, strategy, hint, what in specs:
        w = c.register(
            c.Workload(
                name,
                f"lineitem JOIN orders ON l_orderkey = o_orderkey, sum(l_extendedprice) BY "
                f"o_orderpriority: {what}",
                tables=("lineitem", "orders"),
                describe=_describe,
            )
        )
        w.runs["ferrospark"] = _fs_join(strategy)
        w.runs["pyspark"] = _spark(hint)
        w.runs["fss"] = _fss(strategy)
        if name == "join":
            w.runs["duckdb"] = _duck
            w.runs["polars"] = _pl
