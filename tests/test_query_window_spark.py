"""Window functions inside queries: SQL ``OVER`` (and named ``WINDOW``s) and DataFrame
``f.over(w)`` in ``select`` / ``withColumn``, against PySpark on the same data.

The data has NULL keys, NaN, -0.0, duplicated order keys (ties), unicode and decimals; the
windows run over raw columns, over aggregates (after GROUP BY), with frames of every kind,
and under a memory limit small enough to spill.
"""

from __future__ import annotations

import pytest
from test_query_spark import _facts

import ferrospark as fs
from ferrospark import Window
from ferrospark import functions as F
from helpers import arrow_rows, assert_same_rows, check_rows, facts_session, spark_rows


@pytest.fixture(scope="module")
def facts_path(tmp_path_factory):
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("qwin")
    pq.write_table(_facts(400, seed=5), d / "facts.parquet", row_group_size=64)
    return str(d / "facts.parquet")


_session = facts_session


@pytest.fixture(scope="module")
def fss(facts_path):
    return _session(facts_path)


@pytest.fixture(scope="module")
def sp(spark, facts_path):
    spark.read.parquet(facts_path).createOrReplaceTempView("facts")
    return spark


QUERIES = {
    "ranking": """SELECT id, k, q,
        row_number() OVER (PARTITION BY k ORDER BY q, id) AS rn,
        rank() OVER (PARTITION BY k ORDER BY q) AS r,
        dense_rank() OVER (PARTITION BY k ORDER BY q DESC NULLS LAST) AS dr,
        percent_rank() OVER (PARTITION BY g ORDER BY q) AS pr,
        cume_dist() OVER (PARTITION BY g ORDER BY x) AS cd,
        ntile(4) OVER (PARTITION BY k ORDER BY id) AS nt
        FROM facts""",
    "offsets": """SELECT id, lag(q) OVER (PARTITION BY k ORDER BY id) AS l1,
        lag(q, 2, -1) OVER (PARTITION BY k ORDER BY id) AS l2,
        lead(price, 1) OVER (PARTITION BY g ORDER BY id) AS ld
        FROM facts""",
    "running_and_frames": """SELECT id,
        sum(q) OVER (PARTITION BY k ORDER BY id) AS running,
        avg(price) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS avg4,
        min(x) OVER (PARTITION BY g ORDER BY q RANGE BETWEEN 5 PRECEDING AND CURRENT ROW) AS mn,
        max(q) OVER (PARTITION BY g) AS mx,
        count(*) OVER () AS total,
        first_value(q) OVER (PARTITION BY k ORDER BY id) AS fv,
        last_value(q) IGNORE NULLS OVER (PARTITION BY k ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS lv
        FROM facts""",
    "named_window": """SELECT id, sum(q) OVER w AS s, row_number() OVER w AS rn
        FROM facts WINDOW w AS (PARTITION BY k ORDER BY id)""",
    "over_aggregates": """SELECT k, sum(q) AS total,
        rank() OVER (ORDER BY sum(q) DESC NULLS LAST) AS rk,
        sum(sum(q)) OVER () AS grand
        FROM facts GROUP BY k""",
    "window_then_filter": """SELECT * FROM (
        SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY price DESC NULLS LAST, id) AS rn
        FROM facts) t WHERE rn <= 2""",
    "expression_over_window": """SELECT id, q - avg(q) OVER (PARTITION BY k) AS delta,
        CASE WHEN row_number() OVER (PARTITION BY g ORDER BY id) = 1 THEN 'first' ELSE 'rest' END AS pos
        FROM facts WHERE id < 200""",
    "ordered_output": """SELECT id, dense_rank() OVER (ORDER BY d) AS dr FROM facts ORDER BY id LIMIT 50""",
}


def _check(name, got, expected):
    check_rows(name, got, expected, ordered="ORDER BY id LIMIT" in QUERIES.get(name, ""))


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_sql_windows_match_spark(fss, sp, name):
    text = QUERIES[name]
    _check(name, arrow_rows(fss.sql(text).toArrow()), spark_rows(sp.sql(text)))


def test_windows_under_a_memory_limit_spill_and_agree(spark, tmp_path):
    import pyarrow.parquet as pq

    path = str(tmp_path / "big.parquet")
    pq.write_table(_facts(100_000, seed=9), path, row_group_size=8192)
    text = """SELECT id, sum(q) OVER (PARTITION BY k, g ORDER BY id) AS s,
        row_number() OVER (PARTITION BY k, g ORDER BY price, id) AS rn,
        lag(x) OVER (PARTITION BY k, g ORDER BY id) AS px FROM big"""
    s = fs.Session(conf={"ferrospark.memory.limit": "3MB", "ferrospark.batch.size": "1000"})
    s.read.parquet(path).createOrReplaceTempView("big")
    df = s.sql(text)
    got = arrow_rows(df.toArrow())
    plan = df.executedPlan() or ""
    assert "Window" in plan and "spill_count=" in plan, plan
    unlimited = fs.Session()
    unlimited.read.parquet(path).createOrReplaceTempView("big")
    assert_same_rows(arrow_rows(unlimited.sql(text).toArrow()), got, "spilling windows")
    spark.read.parquet(path).createOrReplaceTempView("big")
    assert_same_rows(spark_rows(spark.sql(text)), got, "spilling windows vs Spark")


def test_dataframe_windows_match_pyspark(fss, sp):
    from pyspark.sql import Window as PW
    from pyspark.sql import functions as PF

    def build(s, F, W):
        w = W.partitionBy("k").orderBy("id")
        frame = W.partitionBy("g").orderBy("q").rowsBetween(-1, 1)
        return (
            s.table("facts")
            .withColumn("rn", F.row_number().over(w))
            .withColumn("prev", F.lag("q", 1, 0).over(w))
            .select(
                "id",
                "k",
                "rn",
                "prev",
                F.sum("q").over(frame).alias("s3"),
                F.rank().over(W.orderBy(F.desc("price"))).alias("rk"),
            )
            .filter(F.col("rn") <= 3)
        )

    got = arrow_rows(build(fss, F, Window).toArrow())
    expected = spark_rows(build(sp, PF, PW))
    assert_same_rows(expected, got, "dataframe windows")


def test_star_beside_window_columns_is_the_input_columns(fss, sp):
    """``select("*", w.alias(...))``: the star is the input's columns, each window column comes
    out once, under its alias, as in PySpark."""
    from pyspark.sql import Window as PW
    from pyspark.sql import functions as PF

    def build(s, F, W):
        w = W.partitionBy("k").orderBy("id")
        return s.table("facts").select("*", F.rank().over(w).alias("rk"), F.lag("q", 1).over(w).alias("prev"))

    got, expected = build(fss, F, Window), build(sp, PF, PW)
    assert got.columns == expected.columns
    assert_same_rows(spark_rows(expected), arrow_rows(got.toArrow()), "star beside windows")


def test_unnamed_window_columns_carry_sparks_names(fss, sp):
    """Without an alias a window column is named as Spark names it after resolving the frame:
    every sort key's direction and the frame spelled out, ``RANK()`` in capitals, lag's
    offset and default shown; a DataFrame frame's offsets signed (``-1 FOLLOWING``), a SQL
    frame's as written (``1 PRECEDING``)."""
    from pyspark.sql import Window as PW
    from pyspark.sql import functions as PF

    def build(s, F, W):
        w = W.partitionBy("k").orderBy("id")
        return s.table("facts").select(
            "id",
            F.row_number().over(w),
            F.rank().over(W.orderBy(F.desc("price"))),
            F.dense_rank().over(w),
            F.lag("q", 2).over(w),
            F.lead("q").over(w),
            F.ntile(3).over(w),
            F.cume_dist().over(w),
            F.sum("q").over(w),
            F.max("q").over(W.partitionBy("g")),
            F.avg("price").over(w.rowsBetween(-2, 1)),
            F.min("x").over(w.rangeBetween(W.unboundedPreceding, 0)),
        )

    got, expected = build(fss, F, Window), build(sp, PF, PW)
    assert got.columns == expected.columns
    assert_same_rows(spark_rows(expected), arrow_rows(got.toArrow()), "unnamed window columns")
    sql = """SELECT id, rank() OVER (PARTITION BY k ORDER BY q DESC),
        lag(q) OVER (PARTITION BY k ORDER BY id),
        sum(q) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING),
        count(*) OVER (PARTITION BY g) FROM facts"""
    assert fss.sql(sql).columns == sp.sql(sql).columns


def test_window_explain_and_errors(fss):
    df = fss.sql("SELECT id, row_number() OVER (PARTITION BY k ORDER BY id) AS rn FROM facts")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain()
    assert "Window [row_number()" in out.getvalue(), out.getvalue()
    with pytest.raises(fs.AnalysisError, match="MISSING_WINDOW_SPECIFICATION"):
        fss.sql("SELECT sum(q) OVER nope FROM facts").toArrow()
    with pytest.raises(fs.AnalysisError, match="DISTINCT"):
        fss.sql("SELECT count(DISTINCT q) OVER (PARTITION BY k) FROM facts").toArrow()
    with pytest.raises(fs.AnalysisError):
        fss.sql("SELECT id FROM facts WHERE row_number() OVER (ORDER BY id) = 1").toArrow()
    assert fss.sql("SELECT count(*) FROM facts").toArrow().num_rows == 1
