"""DISTINCT aggregations over nearly unique rows and joins on several integer keys, against
PySpark.

Over nearly unique rows the first aggregation step hands its rows on ungrouped
(`rows_passed_through`); joins on two integer keys index them packed into one integer. The
data has NULLs, negative keys, duplicates, unicode, NaN and -0.0.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from helpers import arrow_rows, check_rows, plan_metric, spark_rows

ROWS = 120_000


def _table(n: int, seed: int) -> pa.Table:
    rnd = random.Random(seed)
    keys = ["a", "b", "é", "日本", None]
    floats = [1.5, -0.0, 0.0, float("nan"), None, 2.25]
    return pa.table(
        {
            "k": [rnd.choice(keys) for _ in range(n)],
            # Nearly unique, with NULLs and a few repeats.
            "x": [None if rnd.random() < 0.01 else (i // 2 if i % 97 == 0 else i) - 5_000 for i in range(n)],
            "g": [None if rnd.random() < 0.02 else rnd.randint(-3, 40) for _ in range(n)],
            "f": [rnd.choice(floats) for _ in range(n)],
            "v": [rnd.randint(-100, 100) for _ in range(n)],
        },
        schema=pa.schema(
            [("k", pa.string()), ("x", pa.int64()), ("g", pa.int32()), ("f", pa.float64()), ("v", pa.int64())]
        ),
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("distinct")
    pq.write_table(_table(ROWS, 5), d / "t.parquet", row_group_size=20_000)
    pq.write_table(_table(30_000, 6), d / "u.parquet", row_group_size=10_000)
    return d


@pytest.fixture(scope="module")
def sessions(spark, data_dir):
    s = fs.Session()
    for name in ("t", "u"):
        s.read.parquet(str(data_dir / f"{name}.parquet")).createOrReplaceTempView(name)
        spark.read.parquet(str(data_dir / f"{name}.parquet")).createOrReplaceTempView(name)
    return s, spark


QUERIES = {
    "count_distinct_by_key": "SELECT k, count(DISTINCT x) AS n FROM t GROUP BY k",
    "count_distinct_pairs": "SELECT k, count(DISTINCT x, g) AS n, count(DISTINCT f) AS nf FROM t GROUP BY k",
    "select_distinct": "SELECT DISTINCT x, k FROM t",
    "group_by_without_aggregates": "SELECT x, g FROM t GROUP BY x, g",
    "join_two_int_keys": "SELECT t.k, count(*) AS n, sum(t.v + u.v) AS s FROM t JOIN u ON t.x = u.x AND t.g = u.g GROUP BY t.k",
    "left_join_two_int_keys": "SELECT count(*), count(u.v), sum(u.v) FROM t LEFT JOIN u ON t.g = u.g AND t.x = u.x + 3",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_matches_spark(sessions, name):
    s, spark = sessions
    text = QUERIES[name]
    check_rows(name, arrow_rows(s.sql(text).toArrow()), spark_rows(spark.sql(text)), ordered=False)


@pytest.mark.parametrize("name", ["count_distinct_by_key", "select_distinct"])
def test_unreduced_first_steps_pass_rows_on(sessions, name):
    s, _ = sessions
    df = s.sql(QUERIES[name])
    df.toArrow()
    plan = df.executedPlan()
    line = next(ln for ln in plan.splitlines() if "HashAggregate" in ln)
    assert plan_metric(line, "rows_passed_through") > 0, plan
