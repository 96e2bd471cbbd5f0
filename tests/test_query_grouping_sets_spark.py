"""GROUPING SETS, ROLLUP and CUBE (SQL and DataFrame) against PySpark on the same data.

The facts table has NULL grouping keys (so a NULL from the data and a NULL from a rolled-up
column must stay apart, through ``grouping()``), NaN, -0.0, duplicates, unicode and decimals.
Plans run with each optimizer rule off, at odd batch sizes and under a spilling memory limit.
"""

from __future__ import annotations

import functools

import pytest
from test_query_spark import _facts

import ferrospark as fs
from ferrospark import functions as F
from helpers import arrow_rows, assert_same_rows, check_rows, facts_session, spark_rows


@pytest.fixture(scope="module")
def facts_path(tmp_path_factory):
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("qgs")
    pq.write_table(_facts(500, seed=23), d / "facts.parquet", row_group_size=77)
    return str(d / "facts.parquet")


_session = facts_session


@pytest.fixture(scope="module")
def fss(facts_path):
    return _session(facts_path)


@pytest.fixture(scope="module")
def sp(spark, facts_path):
    spark.read.parquet(facts_path).createOrReplaceTempView("facts")
    return spark


@pytest.fixture(scope="module")
def spark_answer(sp):
    """Spark's rows for a query of QUERIES, computed once per module: the oracle does not change
    with ferrospark's rules or batch sizes."""
    return functools.cache(lambda name: spark_rows(sp.sql(QUERIES[name])))


QUERIES = {
    "rollup": "SELECT k, g, sum(q), count(*), avg(price) FROM facts GROUP BY ROLLUP(k, g)",
    "cube": "SELECT k, g, count(*), max(q), sum(x), sum(price) FROM facts GROUP BY CUBE(k, g)",
    "grouping_sets": "SELECT k, g, dim, sum(q) FROM facts GROUP BY GROUPING SETS ((k, g), (dim), ())",
    "grouping_functions": """SELECT k, g, grouping(k) AS gk, grouping(g) AS gg, grouping_id() AS gid,
        grouping_id(k, g) AS gid2, count(*) FROM facts GROUP BY ROLLUP(k, g)""",
    "with_rollup": "SELECT k, g, sum(q) FROM facts GROUP BY k, g WITH ROLLUP",
    "with_cube": "SELECT g, dim, count(*) FROM facts GROUP BY g, dim WITH CUBE",
    "mixed_plain_and_rollup": "SELECT k, g, dim, count(*) FROM facts GROUP BY k, ROLLUP(g, dim)",
    "rollup_of_tuples": "SELECT k, g, dim, count(*) FROM facts GROUP BY ROLLUP((k, g), dim)",
    "repeated_sets": "SELECT k, count(*) FROM facts GROUP BY GROUPING SETS ((k), (k), ())",
    "empty_set_only": "SELECT count(*), sum(q) FROM facts GROUP BY GROUPING SETS (())",
    "aggregate_reads_rolled_up_column": "SELECT g, sum(g), count(g), min(k) FROM facts GROUP BY ROLLUP(g)",
    "having_grouping": """SELECT k, g, sum(q) AS s FROM facts GROUP BY CUBE(k, g)
        HAVING grouping(g) = 1 AND sum(q) IS NOT NULL""",
    "ordered_by_grouping": """SELECT k, g, count(*) AS n FROM facts GROUP BY ROLLUP(k, g)
        ORDER BY grouping(k), grouping(g), k NULLS FIRST, g NULLS FIRST""",
    "expression_keys": "SELECT g % 2 AS parity, year(d) AS y, count(*) FROM facts GROUP BY ROLLUP(g % 2, year(d))",
    "alias_and_ordinal": "SELECT k AS key, g, count(*) FROM facts GROUP BY CUBE(key, 2)",
    "filtered_input": "SELECT k, dim, sum(price) FROM facts WHERE q > 0 GROUP BY CUBE(k, dim)",
    "distinct_aggregate": "SELECT k, g, count(DISTINCT dim) FROM facts GROUP BY ROLLUP(k, g)",
    "window_over_rollup": """SELECT k, g, sum(q) AS s, rank() OVER (PARTITION BY grouping_id() ORDER BY sum(q) DESC NULLS LAST, k, g) AS r
        FROM facts GROUP BY ROLLUP(k, g)""",
    "subquery_over_cube": """SELECT * FROM (SELECT k, g, count(*) AS n FROM facts GROUP BY CUBE(k, g)) t
        WHERE t.k IS NULL""",
}

ORDERED = {"ordered_by_grouping"}


def _check(name: str, got, expected) -> None:
    check_rows(name, got, expected, ordered=name in ORDERED)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_sql_matches_spark(fss, sp, spark_answer, name):
    text = QUERIES[name]
    got = fss.sql(text)
    assert got.columns == sp.sql(text).columns, name  # analysis only: no Spark job
    _check(name, arrow_rows(got.toArrow()), spark_answer(name))


def test_output_types_match_spark(fss, sp):
    text = QUERIES["grouping_functions"]
    ours = {f.name: str(f.type) for f in fss.sql(text).toArrow().schema}
    theirs = dict(sp.sql(text).dtypes)
    assert ours["gk"] == "int8" and theirs["gk"] == "tinyint"
    assert ours["gid"] == "int64" and theirs["gid"] == "bigint"


def test_dataframe_rollup_cube_grouping_sets(fss, sp):
    from pyspark.sql import functions as S

    def both(build):
        return build(fss.table("facts"), F), build(sp.table("facts"), S)

    cases = {
        "rollup": lambda df, f: df.rollup("k", "g").agg(f.sum("q"), f.count("*"), f.grouping("k")),
        "cube": lambda df, f: df.cube("g", "x").agg(f.max("q"), f.grouping_id()),
        "grouping_sets": lambda df, f: df.groupingSets([["k", "g"], ["g"], []], "k", "g").agg(f.avg("price")),
        "cube_count": lambda df, f: df.cube(f.col("k")).count(),
    }
    for name, build in cases.items():
        ours, theirs = both(build)
        assert ours.columns == theirs.columns, name
        assert_same_rows(spark_rows(theirs), arrow_rows(ours.toArrow()), name)


def test_explain_shows_expand(fss):
    text = fss.sql("SELECT k, g, sum(q) FROM facts GROUP BY ROLLUP(k, g)")._plan.explain("extended")
    assert "Expand [[" in text and "spark_grouping_id" in text
    assert "HashAggregate" in text


def test_grouping_outside_grouping_sets_is_an_analysis_error(fss):
    with pytest.raises(fs.AnalysisError, match="UNSUPPORTED_GROUPING_EXPRESSION"):
        fss.sql("SELECT k, grouping(k) FROM facts GROUP BY k").collect()
    with pytest.raises(fs.AnalysisError, match="GROUPING_ID_COLUMN_MISMATCH"):
        fss.sql("SELECT k, grouping_id(g) FROM facts GROUP BY ROLLUP(k, g)").collect()
    with pytest.raises(fs.AnalysisError, match="MISSING_AGGREGATION"):
        fss.sql("SELECT k, q FROM facts GROUP BY ROLLUP(k)").collect()
    assert fss.sql("SELECT count(*) FROM facts GROUP BY ROLLUP(k)").count() == 7


@pytest.mark.parametrize("rule", ["PushDownPredicates", "ColumnPruning", "ConstantFolding"])
def test_each_rule_off_gives_same_rows(facts_path, spark_answer, rule):
    s = _session(facts_path, {"spark.sql.optimizer.excludedRules": rule})
    for name in ["rollup", "grouping_sets", "having_grouping", "subquery_over_cube"]:
        _check(name, arrow_rows(s.sql(QUERIES[name]).toArrow()), spark_answer(name))


@pytest.mark.parametrize("conf", [{"ferrospark.batch.size": "1"}, {"ferrospark.batch.size": "7"}])
def test_batch_sizes(facts_path, spark_answer, conf):
    s = _session(facts_path, conf)
    for name in ["cube", "repeated_sets"]:
        _check(name, arrow_rows(s.sql(QUERIES[name]).toArrow()), spark_answer(name))


def test_memory_limit_spills_and_matches(tmp_path, spark):
    import pyarrow.parquet as pq

    path = str(tmp_path / "big.parquet")
    pq.write_table(_facts(20000, seed=3), path, row_group_size=2000)
    text = "SELECT id % 3000 AS b, k, sum(q), count(*) FROM facts GROUP BY CUBE(id % 3000, k)"
    small = _session(path, {"ferrospark.memory.limit": "256k"})
    df = small.sql(text)
    got = arrow_rows(df.toArrow())
    assert "spill_count=" in df.executedPlan()
    spark.read.parquet(path).createOrReplaceTempView("facts_big")
    assert_same_rows(spark_rows(spark.sql(text.replace("facts", "facts_big"))), got, "spill")
