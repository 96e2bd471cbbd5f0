"""Time windows against PySpark: ``window(time, duration[, slide[, start]])`` as a grouping key
(tumbling and sliding, with a start offset), ``window.start`` / ``window.end`` in SQL, and
``window_time``, over times with NULLs, times before 1970, on window bounds and a microsecond
either side, in the SQL and DataFrame forms."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import ferrospark as fs
from ferrospark import functions as F
from ferrospark.errors import AnalysisError
from helpers import arrow_rows

UTC = dt.timezone.utc


def _ts(*a: int) -> dt.datetime:
    return dt.datetime(*a, tzinfo=UTC)


TIMES = [
    _ts(2024, 3, 1, 10, 0, 0),
    _ts(2024, 3, 1, 10, 4, 59, 999999),
    _ts(2024, 3, 1, 10, 5, 0),
    _ts(2024, 3, 1, 10, 12, 30),
    None,
    _ts(1969, 12, 31, 23, 58, 0),
    _ts(1969, 12, 31, 23, 59, 59, 999999),
    _ts(1970, 1, 1, 0, 0, 0),
    _ts(2024, 3, 1, 10, 5, 0),
    _ts(2024, 2, 29, 23, 59, 0),
]
KEYS = ["a", "b", "a", "a", "b", "a", "b", "a", "b", None]
VALUES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return pa.table(
        {
            "ts": pa.array(TIMES, pa.timestamp("us", tz="UTC")),
            "k": pa.array(KEYS, pa.string()),
            "v": pa.array(VALUES, pa.int64()),
        }
    )


@pytest.fixture(scope="module")
def both(spark, table):
    session = fs.Session()
    session.createDataFrame(table).createOrReplaceTempView("events")
    spark.createDataFrame(
        table.to_pandas(), schema="ts timestamp, k string, v bigint"
    ).createOrReplaceTempView("events")
    return session, spark


QUERIES = [
    "SELECT window, count(*) AS n, sum(v) AS s FROM events GROUP BY window(ts, '5 minutes') ORDER BY window.start",
    "SELECT window.start, window.end, k, count(*) AS n FROM events GROUP BY window(ts, '10 minutes', '5 minutes'), k "
    "ORDER BY window.start, k",
    "SELECT window, sum(v) FROM events GROUP BY window(ts, '1 hour', '20 minutes', '7 minutes') ORDER BY window.start",
    "SELECT window(ts, '1 day'), count(*) FROM events GROUP BY window(ts, '1 day') ORDER BY 1",
    "SELECT window_time(window) AS t, n FROM (SELECT window, count(*) AS n FROM events "
    "GROUP BY window(ts, '90 seconds')) ORDER BY t",
    "SELECT window.end, count(*) FROM events GROUP BY window(ts, 600000000L, 120000000) ORDER BY 1",
    "SELECT w.start, count(*) FROM (SELECT window AS w FROM events GROUP BY window(ts, '3 minutes', '1 minute')) "
    "GROUP BY w.start ORDER BY 1",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_sql_time_windows_match_pyspark(both, sql):
    session, spark = both
    got = session.sql(sql).toArrow()
    want = spark.sql(sql).toArrow()
    assert got.schema.names == want.schema.names
    assert [str(t) for t in got.schema.types] == [str(t) for t in want.schema.types]
    assert arrow_rows(got) == arrow_rows(want)


def test_dataframe_time_windows_match_pyspark(spark, table):
    import pyspark.sql.functions as P

    sdf = spark.createDataFrame(table.to_pandas(), schema="ts timestamp, k string, v bigint")
    fdf = fs.Session().createDataFrame(table)

    def run(m, df):
        return [
            df.groupBy(m.window("ts", "5 minutes")).agg(m.sum("v").alias("s")).orderBy("window"),
            df.groupBy(m.window(m.col("ts"), "10 minutes", "2 minutes"), "k").count().orderBy("window", "k"),
            df.groupBy(m.window("ts", "30 minutes", startTime="10 minutes"))
            .agg(m.max("v"))
            .select("window", m.window_time("window").alias("t"), "max(v)")
            .orderBy("window"),
        ]

    for got, want in zip(run(F, fdf), run(P, sdf)):
        g, w = got.toArrow(), want.toArrow()
        assert g.schema.names == w.schema.names
        assert arrow_rows(g) == arrow_rows(w)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM events GROUP BY window(ts, '5 minutes', '10 minutes')",
        "SELECT count(*) FROM events GROUP BY window(ts, '1 month')",
        "SELECT count(*) FROM events GROUP BY window(ts, '0 seconds')",
        "SELECT count(*) FROM events GROUP BY window(v, '5 minutes')",
        "SELECT count(*) FROM events GROUP BY window(ts, INTERVAL 90 SECONDS)",
    ],
)
def test_bad_windows_are_refused(both, sql):
    from pyspark.errors import PySparkException

    session, spark = both
    with pytest.raises(PySparkException):
        spark.sql(sql).collect()
    with pytest.raises(AnalysisError):
        session.sql(sql).collect()
