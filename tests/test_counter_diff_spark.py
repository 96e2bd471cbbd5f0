"""``counter_diff`` (Spark 4.3's counter-to-delta window function) against PySpark: resets
on a falling value and on an advancing start time, NULL values and NULL start times, NaN,
-0.0, decimals, FLOATs, empty input, several partitions, its generated names and types, and
its refusals (negative values, a falling start time, unordered or other frames, DISTINCT,
no OVER clause) with Spark's error classes."""

from __future__ import annotations

import datetime as dt

import pytest

import ferrospark as fs
from ferrospark import functions as F
from helpers import arrow_rows, assert_both_refuse

pytestmark = pytest.mark.spark

T = "TIMESTAMP_NTZ '2026-01-01 00:00:00'"
T1 = "TIMESTAMP_NTZ '2026-01-01 00:01:00'"
T5 = "TIMESTAMP_NTZ '2026-01-01 00:05:00'"
COUNTERS = f"""WITH c AS (SELECT * FROM VALUES
 ('a', 1, 100, {T}), ('a', 2, 200, {T}), ('a', 3, NULL, {T1}), ('a', 4, 250, {T1}),
 ('a', 5, 50, {T1}), ('a', 6, 60, {T5}), ('a', 7, 70, NULL), ('a', 8, 80, NULL),
 ('a', 9, 90, {T5}), ('日本', 1, 5, {T}), ('日本', 2, 5, {T}), ('日本', 3, 7, {T1}),
 (NULL, 1, 3, NULL), (NULL, 2, 1, NULL) AS t(m, i, v, st)) """

SQL_FORMS = [
    COUNTERS + "SELECT m, i, v, counter_diff(v) OVER (PARTITION BY m ORDER BY i) AS d FROM c",
    COUNTERS + "SELECT m, i, counter_diff(v, st) OVER (PARTITION BY m ORDER BY i) FROM c",
    COUNTERS + "SELECT m, i, counter_diff(v) OVER (PARTITION BY m ORDER BY i DESC) FROM c",
    COUNTERS + "SELECT i, counter_diff(CAST(v AS DOUBLE)) OVER (PARTITION BY m ORDER BY i) AS d, "
    "counter_diff(CAST(v AS DECIMAL(10,2))) OVER (PARTITION BY m ORDER BY i) AS e, "
    "counter_diff(CAST(v AS SMALLINT)) OVER (PARTITION BY m ORDER BY i) AS f, "
    "counter_diff(CAST(v AS FLOAT)) OVER (PARTITION BY m ORDER BY i) AS g, "
    "counter_diff(CAST(v AS BIGINT)) OVER (PARTITION BY m ORDER BY i ROWS UNBOUNDED PRECEDING) AS h FROM c",
    COUNTERS + "SELECT i, counter_diff(v) OVER w + 1 AS z FROM c WINDOW w AS (PARTITION BY m ORDER BY i)",
    COUNTERS + "SELECT i, counter_diff(v) OVER (ORDER BY i) FROM c WHERE i > 100",
    "SELECT i, x, counter_diff(x) OVER (ORDER BY i) FROM VALUES (1, 1.0D), (2, double('NaN')), "
    "(3, 5.0D), (4, double('Infinity')), (5, 2.0D), (6, -0.0D), (7, 0.0D), (8, NULL) AS t(i, x)",
    "SELECT i, counter_diff(x, NULL) OVER (ORDER BY i) AS a, counter_diff(NULL) OVER (ORDER BY i) AS b "
    "FROM VALUES (1, 2), (2, 3) AS t(i, x)",
    "SELECT i, counter_diff(x, ts) OVER (ORDER BY i) FROM VALUES (1, 1, TIMESTAMP '2020-01-01 00:00:00'), "
    "(2, 3, TIMESTAMP '2020-01-01 00:00:00'), (3, 4, TIMESTAMP '2020-01-01 00:00:01') AS t(i, x, ts)",
]


def _check(spark, sql: str) -> None:
    got = fs.Session().sql(sql).toArrow()
    want = spark.sql(sql).toArrow()
    assert got.schema.names == want.schema.names
    assert [str(t) for t in got.schema.types] == [str(t) for t in want.schema.types]
    key = lambda r: repr(r)  # noqa: E731 - rows compared as multisets
    assert sorted(arrow_rows(got), key=key) == sorted(arrow_rows(want), key=key)


@pytest.mark.parametrize("sql", SQL_FORMS)
def test_counter_diff_in_sql_matches_pyspark(spark, sql):
    _check(spark, sql)


@pytest.mark.parametrize(
    ("sql", "error_class"),
    [
        (
            "SELECT counter_diff(x) OVER (ORDER BY i) FROM VALUES (1, -1), (2, 3) AS t(i, x)",
            "NEGATIVE_COUNTER_VALUE",
        ),
        (
            "SELECT counter_diff(x, ts) OVER (ORDER BY i) FROM VALUES (1, 1, TIMESTAMP '2020-01-01 00:00:01'), "
            "(2, 3, TIMESTAMP '2020-01-01 00:00:00') AS t(i, x, ts)",
            "START_TIME_DECREASED",
        ),
        ("SELECT counter_diff(x) OVER (PARTITION BY i) FROM VALUES (1, 1) AS t(i, x)", "FRAME_NOT_ORDERED"),
        ("SELECT counter_diff(x) FROM VALUES (1, 1) AS t(i, x)", "WITHOUT_OVER_CLAUSE"),
        ("SELECT lag(x) FROM VALUES (1, 1) AS t(i, x)", "WITHOUT_OVER_CLAUSE"),
        ("SELECT counter_diff('x') OVER (ORDER BY i) FROM VALUES (1, 1) AS t(i, x)", "UNEXPECTED_INPUT_TYPE"),
        (
            "SELECT counter_diff(x, i) OVER (ORDER BY i) FROM VALUES (1, 1) AS t(i, x)",
            "UNEXPECTED_INPUT_TYPE",
        ),
        ("SELECT counter_diff(x, i, i) OVER (ORDER BY i) FROM VALUES (1, 1) AS t(i, x)", "WRONG_NUM_ARGS"),
        (
            "SELECT counter_diff(DISTINCT x) OVER (ORDER BY i) FROM VALUES (1, 1) AS t(i, x)",
            "FUNCTION_WITH_UNSUPPORTED_SYNTAX",
        ),
        (
            "SELECT counter_diff(x) OVER (ORDER BY i ROWS 1 PRECEDING) FROM VALUES (1, 1) AS t(i, x)",
            "must match the required frame",
        ),
        (
            "SELECT rank() OVER (ORDER BY i RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) "
            "FROM VALUES (1, 1) AS t(i, x)",
            "must match the required frame",
        ),
    ],
)
def test_counter_diff_refusals_are_sparks(spark, sql, error_class):
    assert_both_refuse(spark, sql, error_class)


def test_counter_diff_in_the_dataframe_api_matches_pyspark(spark):
    """``F.counter_diff(value[, startTime]).over(w)``: Spark's generated names (the frame it
    runs over written out) and values."""
    import pyspark.sql.functions as P
    from pyspark.sql import Window as SW

    rows = [
        ("http", dt.datetime(2026, 1, 1, 0, 0), 100, dt.datetime(2026, 1, 1)),
        ("http", dt.datetime(2026, 1, 1, 0, 1), 200, dt.datetime(2026, 1, 1)),
        ("http", dt.datetime(2026, 1, 1, 0, 2), 400, dt.datetime(2026, 1, 1)),
        ("http", dt.datetime(2026, 1, 1, 0, 3), 500, dt.datetime(2026, 1, 1, 0, 2, 15)),
        ("http", dt.datetime(2026, 1, 1, 0, 4), 50, dt.datetime(2026, 1, 1, 0, 2, 15)),
        ("dns", dt.datetime(2026, 1, 1, 0, 0), None, None),
        ("dns", dt.datetime(2026, 1, 1, 0, 1), 7, None),
    ]
    schema = "m STRING, t TIMESTAMP_NTZ, c INT, s TIMESTAMP_NTZ"
    sdf = spark.createDataFrame(rows, schema)
    fdf = fs.Session().createDataFrame(rows, schema)

    def build(df, F, W):  # noqa: N803 - the module's name in either engine
        w = W.partitionBy("m").orderBy("t")
        return df.select("m", "t", F.counter_diff("c").over(w), F.counter_diff("c", "s").over(w).alias("d"))

    got = build(fdf, F, fs.Window).toArrow()
    want = build(sdf, P, SW).toArrow()
    assert got.schema.names == want.schema.names
    assert sorted(arrow_rows(got), key=repr) == sorted(arrow_rows(want), key=repr)
