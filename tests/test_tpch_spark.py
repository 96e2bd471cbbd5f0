"""The 22 TPC-H queries through ``Session.sql``, against PySpark on the same files (SF 0.01)."""

from __future__ import annotations

import pytest

import ferrospark as fs
from ferrospark.tpch_queries import QUERIES
from helpers import arrow_rows, assert_same_rows, spark_rows


@pytest.fixture(scope="module")
def tpch_dirs(tpch_sf001) -> dict[str, str]:
    return tpch_sf001


@pytest.fixture(scope="module")
def fss_tpch(tpch_dirs) -> fs.Session:
    s = fs.Session()
    for t, d in tpch_dirs.items():
        s.read.parquet(d).createOrReplaceTempView(t)
    return s


@pytest.fixture(scope="module")
def spark_tpch(spark, tpch_dirs):
    for t, d in tpch_dirs.items():
        spark.read.parquet(d).createOrReplaceTempView(t)
    return spark


@pytest.mark.parametrize("q", sorted(QUERIES))
def test_tpch_query_matches_spark(fss_tpch, spark_tpch, q):
    text = QUERIES[q]
    got = arrow_rows(fss_tpch.sql(text).toArrow())
    expected = spark_rows(spark_tpch.sql(text))
    assert len(expected) > 0 or q in (), f"Q{q} returned no rows in Spark: the data is too small to test it"
    if "order by" in text and "limit" not in text.split("order by")[-1]:
        assert got == expected, f"Q{q}: {got[:5]} != {expected[:5]}"
    else:
        assert_same_rows(expected, got, f"Q{q}")
