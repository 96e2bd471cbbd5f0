"""Scans of the same files sharing one read, against PySpark.

A query that reads a table twice with the same pushed filter (TPC-H Q2, Q11, Q17: once in the
query, once in its subquery) reads it once when a runtime filter narrows the first read: the
first scan keeps its rows, and the second replays them if its own runtime filters lie within
the first's. Each query runs with sharing (the default), without it
(``spark.sql.exchange.reuse=false``) and in PySpark; the rows must agree, and the executed plan
must show whether the second scan replayed. Keys hold NULLs, duplicates and unicode strings;
values hold NaN, -0.0 and decimals.
"""

from __future__ import annotations

import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from helpers import arrow_rows, check_rows, plan_metric, register_parquet_views, scan_lines, spark_rows

WORDS = ["a", "é", "日本", "zz", None]


def _fact(n: int = 4000, seed: int = 11) -> pa.Table:
    rnd = random.Random(seed)
    return pa.table(
        {
            "pk": pa.array([i // 2 if rnd.random() > 0.05 else None for i in range(n)], pa.int64()),
            "word": [rnd.choice(WORDS) for _ in range(n)],
            "code": [None if i % 97 == 0 else f"日{i // 3}é" for i in range(n)],
            "qty": pa.array(
                [rnd.randint(-3, 50) if rnd.random() > 0.1 else None for _ in range(n)], pa.int32()
            ),
            "price": pa.array(
                [decimal.Decimal(rnd.randint(-99999, 99999)).scaleb(-2) for _ in range(n)],
                pa.decimal128(12, 2),
            ),
            "x": [rnd.choice([1.5, -0.0, 0.0, float("nan"), None, 2.0]) for _ in range(n)],
        }
    )


def _dim() -> pa.Table:
    keys = list(range(0, 2000, 3)) + [None, 9, 12]
    return pa.table(
        {
            "pk": pa.array(keys, pa.int64()),
            "brand": [f"B{(k or 0) % 4}" for k in keys],
            "word": [WORDS[(k or 0) % len(WORDS)] for k in keys],
            "code": [None if k is None else f"日{k}é" for k in keys],
        }
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("shared_scan")
    pq.write_table(_fact(), d / "fact.parquet", row_group_size=500)
    pq.write_table(_dim(), d / "dim.parquet")
    return d


def _session(data_dir, conf=None) -> fs.Session:
    # No broadcast: as at TPC-H's scale, the subquery's aggregation is a join's probe side,
    # so the join's runtime filter reaches its scan.
    s = fs.Session(conf={"spark.sql.autoBroadcastJoinThreshold": "-1", **(conf or {})})
    return register_parquet_views(s, data_dir, ["fact", "dim"])


@pytest.fixture(scope="module")
def sp(spark, data_dir):
    return register_parquet_views(spark, data_dir, ["fact", "dim"])


# name -> (query, whether the second fact scan replays the first one's rows)
QUERIES = {
    # Q17's shape: the subquery's scan has a filter built from the first scan's join rows.
    "correlated_average": (
        """SELECT sum(f.price) AS s, count(*) AS n FROM fact f JOIN dim d ON f.pk = d.pk
           WHERE d.brand = 'B1' AND f.qty < (SELECT 0.6 * avg(qty) FROM fact f2 WHERE f2.pk = d.pk)""",
        True,
    ),
    # Q11's shape: the same join in the query and in an uncorrelated scalar subquery.
    "same_join_in_subquery": (
        """SELECT f.pk, sum(f.price * f.qty) AS v FROM fact f JOIN dim d ON f.pk = d.pk
           WHERE d.brand = 'B2' GROUP BY f.pk
           HAVING sum(f.price * f.qty) > (SELECT 0.01 * sum(f2.price * f2.qty)
                                          FROM fact f2 JOIN dim d2 ON f2.pk = d2.pk WHERE d2.brand = 'B2')""",
        True,
    ),
    # A unicode string key.
    "string_key_same_join": (
        """SELECT f.code, sum(f.qty) AS q, sum(f.x) AS sx FROM fact f JOIN dim d ON f.code = d.code
           WHERE d.brand = 'B3' GROUP BY f.code
           HAVING sum(f.qty) > (SELECT 0.002 * sum(f2.qty)
                                FROM fact f2 JOIN dim d2 ON f2.code = d2.code WHERE d2.brand = 'B3')""",
        True,
    ),
    # Different keys: the second read's filter is not within the first's, so it reads alone.
    "different_keys": (
        """SELECT 'one' AS side, f.pk, f.qty FROM fact f JOIN dim d ON f.pk = d.pk WHERE d.brand = 'B1'
           UNION ALL
           SELECT 'two', f.pk, f.qty FROM fact f JOIN dim d ON f.pk = d.pk WHERE d.brand = 'B2'""",
        False,
    ),
    # Different pushed filters: two different reads, never shared.
    "different_pushed_filters": (
        """SELECT count(*) FROM fact f JOIN dim d ON f.pk = d.pk
           WHERE d.brand = 'B0' AND f.qty > 10
             AND f.qty < (SELECT max(qty) FROM fact f2 WHERE f2.pk = d.pk AND f2.qty < 40)""",
        False,
    ),
}


def _fact_scans(plan: str) -> list[str]:
    return scan_lines(plan, "fact.parquet")


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_shared_reads_match_spark(data_dir, sp, name):
    text, replays = QUERIES[name]
    expected = spark_rows(sp.sql(text))
    on = _session(data_dir).sql(text)
    check_rows(name, arrow_rows(on.toArrow()), expected, ordered=False)
    off = _session(data_dir, {"spark.sql.exchange.reuse": "false"}).sql(text)
    check_rows(name + " (off)", arrow_rows(off.toArrow()), expected, ordered=False)
    assert "SharedRead" not in (off.executedPlan() or "")
    scans = _fact_scans(on.executedPlan() or "")
    assert len(scans) == 2, scans
    shared = [s for s in scans if plan_metric(s, "shared_reads")]
    if not replays:
        assert not shared, scans
        return
    assert len(shared) == 1, scans
    # The replaying scan reads no file; the other kept exactly the rows it output.
    assert plan_metric(shared[0], "rows_read") == 0, shared[0]
    (reader,) = [s for s in scans if s is not shared[0]]
    assert plan_metric(reader, "shared_rows_kept") == plan_metric(reader, "rows_output") > 0, reader
    assert plan_metric(reader, "rows_output") < plan_metric(reader, "rows_total"), reader


@pytest.mark.parametrize("batch", [1, 7, 8192])
def test_odd_batch_sizes(data_dir, sp, batch):
    s = _session(data_dir, {"ferrospark.batch.size": str(batch)})
    for name in ["correlated_average", "same_join_in_subquery"]:
        text = QUERIES[name][0]
        check_rows(name, arrow_rows(s.sql(text).toArrow()), spark_rows(sp.sql(text)), ordered=False)


def test_the_same_dataframe_runs_twice_with_fresh_shares(data_dir):
    # Kept rows belong to one run: a second run reads again and replays again.
    df = _session(data_dir).sql(QUERIES["correlated_average"][0])
    first = arrow_rows(df.toArrow())
    assert arrow_rows(df.toArrow()) == first
    scans = _fact_scans(df.executedPlan() or "")
    assert sum(plan_metric(s, "shared_reads") for s in scans) >= 1, scans
