"""Whole queries, SQL and DataFrame, against PySpark on the same data.

Each query runs through ``Session.sql`` / the DataFrame API and through PySpark; rows are
compared (in order where the query orders them). The data has NULLs, NaN, -0.0, duplicates,
unicode, decimals, dates and timestamps. Plans are also run with each optimizer rule switched
off, at odd batch sizes, and under a memory limit small enough to spill.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from ferrospark import functions as F
from helpers import arrow_rows, assert_same_rows, check_rows, spark_rows

RULES = [
    "ComputeCurrentTime",
    "EliminateSubqueryAliases",
    "ConstantFolding",
    "BooleanSimplification",
    "PushDownPredicates",
    "PushExtraPredicateThroughJoin",
    "ReorderJoin",
    "InferFiltersFromConstraints",
    "EliminateOuterJoin",
    "LimitPushDown",
    "ColumnPruning",
]


def _facts(n: int = 600, seed: int = 11) -> pa.Table:
    rnd = random.Random(seed)
    keys = ["a", "b", "c", "é", "日本", None]
    xs = [1.5, -0.0, 0.0, float("nan"), None, 2.25, -3.0]
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": i,
                "k": rnd.choice(keys),
                "g": rnd.randint(0, 5) if rnd.random() > 0.05 else None,
                "x": rnd.choice(xs),
                "q": rnd.randint(-50, 50) if rnd.random() > 0.1 else None,
                "price": Decimal(rnd.randint(-99999, 99999)) / 100 if rnd.random() > 0.08 else None,
                "d": dt.date(1995, 1, 1) + dt.timedelta(days=rnd.randint(0, 1500)),
                "ts": dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
                + dt.timedelta(seconds=rnd.randint(0, 10**7)),
                "dim": rnd.randint(0, 12),
            }
        )
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("k", pa.string()),
            ("g", pa.int32()),
            ("x", pa.float64()),
            ("q", pa.int32()),
            ("price", pa.decimal128(12, 2)),
            ("d", pa.date32()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("dim", pa.int32()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _dims() -> pa.Table:
    return pa.table(
        {
            "dim": pa.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13], pa.int32()),
            "name": [
                "zero",
                "one",
                "two",
                "three",
                None,
                "five",
                "six",
                "seven",
                "eight",
                "nine",
                "ten",
                "ü",
                "x",
            ],
            "grp": pa.array([0, 0, 1, 1, 2, 2, None, 0, 1, 2, 0, 1, 2], pa.int32()),
        }
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("query")
    pq.write_table(_facts(), d / "facts.parquet", row_group_size=100)
    pq.write_table(_dims(), d / "dims.parquet")
    return d


def _session(data_dir, conf=None) -> fs.Session:
    s = fs.Session(conf=conf or {})
    s.read.parquet(str(data_dir / "facts.parquet")).createOrReplaceTempView("facts")
    s.read.parquet(str(data_dir / "dims.parquet")).createOrReplaceTempView("dims")
    return s


@pytest.fixture(scope="module")
def fss(data_dir) -> fs.Session:
    return _session(data_dir)


@pytest.fixture(scope="module")
def sp(spark, data_dir):
    spark.read.parquet(str(data_dir / "facts.parquet")).createOrReplaceTempView("facts")
    spark.read.parquet(str(data_dir / "dims.parquet")).createOrReplaceTempView("dims")
    return spark


@pytest.fixture(scope="module")
def spark_answer(sp):
    """Spark's rows for a query of QUERIES, computed once per module: the oracle does not change
    with ferrospark's rules or batch sizes."""
    return functools.cache(lambda name: spark_rows(sp.sql(QUERIES[name])))


QUERIES = {
    "filter_project": "SELECT id, k, q * 2 AS q2, price FROM facts WHERE q > 10 AND k IS NOT NULL",
    "group_by": "SELECT k, count(*) AS n, sum(q), avg(x), min(price), max(d), count(DISTINCT g) FROM facts GROUP BY k",
    "group_by_ordinal_having": "SELECT g, sum(price) AS s FROM facts GROUP BY 1 HAVING count(*) > 20 ORDER BY 1",
    "global_agg": "SELECT count(*), count(x), sum(price), avg(q) FROM facts WHERE id < 0",
    "join_on": "SELECT f.id, d.name FROM facts f JOIN dims d ON f.dim = d.dim WHERE f.q < 0",
    "comma_join": "SELECT d.grp, count(*) AS n FROM facts f, dims d WHERE f.dim = d.dim AND d.grp IS NOT NULL GROUP BY d.grp ORDER BY d.grp",
    "left_join": "SELECT f.id, d.name FROM facts f LEFT JOIN dims d ON f.dim = d.dim AND d.grp = 1",
    # TPC-H Q7's shape: each nation is filtered by what the disjunction implies of it alone.
    "disjunctive_join": """SELECT d1.name AS a, d2.name AS b, count(*) AS n, sum(f.q) AS s
        FROM facts f, dims d1, dims d2 WHERE f.dim = d1.dim AND f.g = d2.dim
        AND ((d1.name = 'one' AND d2.name = 'two') OR (d1.name = 'two' AND d2.name = 'one')
             OR (d1.name IS NULL AND f.q > 0 AND d2.grp = 0))
        GROUP BY d1.name, d2.name""",
    "disjunctive_left_join": """SELECT f.id, d.name FROM facts f LEFT JOIN dims d
        ON f.dim = d.dim AND ((f.q > 10 AND d.grp = 1) OR (f.k = 'é' AND d.grp = 2))""",
    # d meets d2 only through the facts' key (d.dim = f.dim = d2.dim): joined to d2 first.
    "implied_key": """SELECT d2.grp, count(*) AS n, sum(f.q) AS s FROM dims d2, facts f, dims d
        WHERE f.dim = d.dim AND d2.dim = f.dim AND d.name LIKE 't%' GROUP BY d2.grp""",
    # A filtered dimension of a dimension: joined to its dimension before the facts.
    "snowflake": """SELECT d.name, count(*) AS n, sum(f.q) AS s FROM facts f, dims d, dims e
        WHERE f.dim = d.dim AND d.grp = e.dim AND e.name IN ('one', 'two', 'ü') GROUP BY d.name""",
    "right_join": "SELECT f.id, d.name FROM facts f RIGHT JOIN dims d ON f.dim = d.dim AND f.q > 40",
    "full_join": "SELECT f.id, d.dim FROM (SELECT * FROM facts WHERE id < 50) f FULL JOIN dims d ON f.dim = d.dim",
    "using_join": "SELECT * FROM facts JOIN dims USING (dim) WHERE id < 30",
    "using_semi_join": "SELECT * FROM facts LEFT SEMI JOIN dims USING (dim)",
    "using_anti_join": "SELECT * FROM facts LEFT ANTI JOIN dims USING (dim)",
    "semi_exists": "SELECT id FROM facts f WHERE EXISTS (SELECT 1 FROM dims d WHERE d.dim = f.dim AND d.grp = 2)",
    "anti_not_exists": "SELECT id FROM facts f WHERE NOT EXISTS (SELECT 1 FROM dims d WHERE d.dim = f.dim)",
    "in_subquery": "SELECT id, g FROM facts WHERE g IN (SELECT grp FROM dims WHERE name LIKE 't%')",
    "not_in_subquery": "SELECT id FROM facts WHERE g NOT IN (SELECT grp FROM dims WHERE grp IS NOT NULL AND grp < 2)",
    "not_in_with_null": "SELECT id FROM facts WHERE g NOT IN (SELECT grp FROM dims)",
    "scalar_subquery": "SELECT id, q FROM facts WHERE q > (SELECT avg(q) FROM facts)",
    "correlated_scalar": "SELECT f.id FROM facts f WHERE f.q > (SELECT avg(q) FROM facts f2 WHERE f2.k = f.k)",
    "order_nulls": "SELECT id, x, k FROM facts ORDER BY x DESC NULLS FIRST, k ASC NULLS LAST, id",
    "order_limit": "SELECT id, price FROM facts ORDER BY price DESC, id LIMIT 17",
    "limit_offset": "SELECT id FROM facts ORDER BY id LIMIT 5 OFFSET 7",
    "distinct": "SELECT DISTINCT k, g FROM facts",
    "union_all": "SELECT k FROM facts WHERE id < 10 UNION ALL SELECT name FROM dims",
    "union": "SELECT g FROM facts UNION SELECT grp FROM dims",
    "intersect": "SELECT g FROM facts INTERSECT SELECT grp FROM dims",
    "except": "SELECT dim FROM dims EXCEPT SELECT dim FROM facts",
    "cte": "WITH big AS (SELECT k, sum(q) AS s FROM facts GROUP BY k) SELECT k, s FROM big WHERE s > 0",
    "values": "SELECT col1 + 1, col2 FROM VALUES (1, 'a'), (2, NULL), (3, 'c')",
    "self_join": "SELECT a.id, b.id FROM facts a JOIN facts b ON a.id = b.id + 1 WHERE a.id < 20",
    "group_by_alias_order_agg": "SELECT k AS key, sum(q) AS total FROM facts GROUP BY key ORDER BY sum(q) DESC, key",
    "derived_table": "SELECT t.k, t.m FROM (SELECT k, max(q) AS m FROM facts GROUP BY k) t WHERE t.m > 40",
    "float_keys": "SELECT x, count(*) FROM facts GROUP BY x",
    "date_filter": "SELECT count(*) FROM facts WHERE d BETWEEN DATE '1996-01-01' AND DATE '1996-12-31'",
    "left_join_null_rejecting": "SELECT f.id, d.name FROM facts f LEFT JOIN dims d ON f.dim = d.dim WHERE d.grp = 1",
    "left_join_is_null": "SELECT f.id FROM facts f LEFT JOIN dims d ON f.dim = d.dim WHERE d.name IS NULL",
    "full_join_one_side": "SELECT f.id, d.dim FROM facts f FULL JOIN dims d ON f.dim = d.dim WHERE f.q > 10",
    "limit_through_union": "SELECT count(*) FROM (SELECT k FROM facts UNION ALL SELECT name FROM dims LIMIT 5) t",
    "limit_into_left_join": """SELECT count(*), count(DISTINCT id) FROM
        (SELECT f.id, d.name FROM facts f LEFT JOIN dims d ON f.dim = d.dim LIMIT 7 OFFSET 2) t""",
    "limit_over_cross_join": "SELECT count(*) FROM (SELECT * FROM facts, dims LIMIT 11) t",
}

ORDERED = {
    "order_nulls",
    "order_limit",
    "limit_offset",
    "group_by_ordinal_having",
    "comma_join",
    "group_by_alias_order_agg",
}


def _rows(df) -> list[tuple]:
    return arrow_rows(df.toArrow())


def _check(name: str, got: list[tuple], expected: list[tuple]) -> None:
    check_rows(name, got, expected, ordered=name in ORDERED)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_sql_matches_spark(fss, spark_answer, name):
    _check(name, _rows(fss.sql(QUERIES[name])), spark_answer(name))


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_off_gives_same_rows(data_dir, spark_answer, rule):
    s = _session(data_dir, {"spark.sql.optimizer.excludedRules": rule})
    for name in [
        "comma_join",
        "disjunctive_join",
        "disjunctive_left_join",
        "snowflake",
        "implied_key",
        "semi_exists",
        "correlated_scalar",
        "left_join",
        "group_by",
        "union",
        "left_join_null_rejecting",
        "full_join_one_side",
        "limit_into_left_join",
    ]:
        _check(name, _rows(s.sql(QUERIES[name])), spark_answer(name))


@pytest.mark.parametrize("batch", [1, 7, 8192])
def test_batch_sizes(data_dir, spark_answer, batch):
    s = _session(data_dir, {"ferrospark.batch.size": str(batch)})
    for name in ["join_on", "order_limit", "group_by", "limit_offset"]:
        _check(name, _rows(s.sql(QUERIES[name])), spark_answer(name))


def test_dataframe_api_matches_pyspark(fss, sp):
    def build(s, F):
        facts = s.table("facts")
        dims = s.table("dims")
        return (
            facts.filter(F.col("q") > -20)
            .withColumn("v", F.col("q") * 2 + 1)
            .join(dims, "dim", "left")
            .groupBy("grp", "k")
            .agg(F.sum("v").alias("sv"), F.count("*").alias("n"), F.max("price").alias("mp"))
            .filter(F.col("n") > 1)
            .orderBy(F.desc("sv"), "grp", "k")
        )

    got = _rows(build(fss, F))
    from pyspark.sql import functions as PF

    expected = spark_rows(build(sp, PF))
    assert got == expected


def test_dataframe_methods(fss, sp):
    from pyspark.sql import functions as PF

    for build in [
        lambda s, F: s.table("facts").select("id", "k").distinct(),
        lambda s, F: s.table("facts").dropDuplicates(["k"]).select("k"),
        lambda s, F: s.table("dims").withColumnRenamed("name", "nm").drop("grp"),
        lambda s, F: s.table("dims").union(s.table("dims")).select("dim"),
        lambda s, F: s.table("dims").select("dim", "name").unionByName(s.table("dims").select("name", "dim")),
        lambda s, F: s.table("facts").select("g").intersect(s.table("dims").select("grp")),
        lambda s, F: s.table("dims").select("dim").subtract(s.table("facts").select("dim")),
        lambda s, F: s.table("facts").where("q IS NULL").selectExpr("id", "k"),
        lambda s, F: s.table("facts").agg(F.min("d"), F.max("ts"), F.count_distinct("k")),
        lambda s, F: (
            s.table("dims").crossJoin(s.table("dims").select(F.col("dim").alias("d2"))).filter("dim < 2")
        ),
        # One DataFrame on both sides: each side keeps its own columns (DeduplicateRelations).
        lambda s, F: (lambda d: d.join(d, "dim"))(s.table("dims")),
        lambda s, F: (lambda d: d.join(d.select("dim", F.col("name").alias("n2")), "dim", "left"))(
            s.table("dims").filter("dim < 9")
        ),
    ]:
        assert_same_rows(spark_rows(build(sp, PF)), _rows(build(fss, F)))
    assert fss.table("facts").count() == sp.table("facts").count()
    assert fss.table("facts").columns == sp.table("facts").columns
    row = fss.table("dims").orderBy("dim").first()
    assert row.dim == 0 and row["name"] == "zero"


def test_plans_of_two_sessions_join(data_dir, fss, sp):
    """A DataFrame of another session joins as a relation of its own (its ids were handed
    out apart, so they may repeat this session's)."""
    other = _session(data_dir)
    got = fss.table("facts").join(other.table("dims"), "dim").groupBy("grp").count()
    want = sp.table("facts").join(sp.table("dims"), "dim").groupBy("grp").count()
    assert_same_rows(spark_rows(want), _rows(got))


def test_bad_input_raises_analysis_errors_and_session_keeps_working(fss):
    with pytest.raises(fs.AnalysisError, match=r"UNRESOLVED_COLUMN.*`kk`.*`k`"):
        fss.sql("SELECT kk FROM facts")
    with pytest.raises(fs.AnalysisError, match="PARSE_SYNTAX_ERROR"):
        fss.sql("SELEC id FROM facts")
    with pytest.raises(fs.AnalysisError, match="TABLE_OR_VIEW_NOT_FOUND"):
        fss.sql("SELECT * FROM nope")
    with pytest.raises(fs.AnalysisError, match="AMBIGUOUS_REFERENCE"):
        fss.sql("SELECT dim FROM facts JOIN dims ON facts.dim = dims.dim")
    with pytest.raises(fs.AnalysisError, match="MISSING_AGGREGATION"):
        fss.sql("SELECT k, q FROM facts GROUP BY k")
    with pytest.raises(fs.AnalysisError):
        fss.sql("SELECT * FROM facts WHERE k + 1")
    with pytest.raises(fs.AnalysisError, match="UNRESOLVED_COLUMN"):
        fss.table("facts").select("nope")
    assert fss.sql("SELECT count(*) AS n FROM facts").collect()[0].n == 600


def test_explain_shows_pushdown_and_pruning(fss):
    df = fss.sql(
        "SELECT k, sum(q) FROM facts f JOIN dims d ON f.dim = d.dim WHERE f.q > 3 AND d.grp = 1 GROUP BY k"
    )
    text = df._plan.explain("extended")
    assert "== Physical Plan ==" in text and "== Optimized Logical Plan ==" in text
    assert "HashAggregate" in text
    assert "BroadcastHashJoin" in text
    # Both filters reached their scans, and each scan returns only the columns the query uses
    # (a column only the pushed filter reads is decoded for the filter, not returned).
    assert "PushedFilters: [q#" in text and "PushedFilters: [grp#" in text
    assert "ReadSchema: struct<k,q,dim>" in text
    assert "ReadSchema: struct<dim>" in text
    for rule in ["PushDownPredicates", "ColumnPruning"]:
        assert rule in text
    out = fss.sql("EXPLAIN SELECT id FROM facts WHERE id < 3").collect()[0].plan
    assert out.startswith("== Physical Plan ==")
    df.toArrow()
    assert "output_rows=" in df.executedPlan()


def test_memory_limit_spills_and_matches(spark):
    n = 60_000
    t = pa.table({"id": pa.array(range(n), pa.int64()), "k": [f"key-{i % 977}-é" for i in range(n)]})
    text = "SELECT id % 20011 AS b, k, count(*) AS n, max(id) AS m FROM big GROUP BY 1, 2"
    unlimited = fs.Session()
    unlimited.createDataFrame(t).createOrReplaceTempView("big")
    limited = fs.Session(conf={"ferrospark.memory.limit": "512k"})
    limited.createDataFrame(t).createOrReplaceTempView("big")
    df = limited.sql(text)
    got = _rows(df)
    assert "spill_count=" in df.executedPlan()
    assert_same_rows(_rows(unlimited.sql(text)), got)
    spark.createDataFrame(t.to_pandas()).createOrReplaceTempView("big")
    assert_same_rows(spark_rows(spark.sql(text)), got)


REUSED_VIEW = """WITH rev AS (SELECT k, sum(price) AS total, count(q) AS n FROM facts
                  WHERE d >= DATE '1996-01-01' GROUP BY k)
    SELECT r.k, r.total, r.n, m.top FROM rev r
    JOIN (SELECT max(total) AS top, min(n) AS low FROM rev) m ON r.total = m.top OR r.n = m.low"""


@pytest.mark.parametrize("reuse", [True, False])
def test_a_view_read_twice_is_computed_once(data_dir, sp, reuse):
    # TPC-H Q15's shape: the second read of the aggregated view reuses the first one's
    # result (Spark's ReusedExchange), unless spark.sql.exchange.reuse is off.
    s = _session(data_dir, {} if reuse else {"spark.sql.exchange.reuse": "false"})
    df = s.sql(REUSED_VIEW)
    _check("reused_view", _rows(df), spark_rows(sp.sql(REUSED_VIEW)))
    plan = df.executedPlan() or ""
    scans = [line for line in plan.splitlines() if "FileScan parquet" in line]
    if reuse:
        assert "ReusedExchange" in plan and "results_kept=1" in plan, plan
        assert len(scans) == 1, plan
    else:
        assert "ReusedExchange" not in plan and len(scans) == 2, plan


def test_streams_out_as_arrow(fss):
    df = fss.sql("SELECT id FROM facts WHERE id < 100")
    reader = pa.RecordBatchReader.from_stream(df)
    assert reader.read_all().num_rows == 100


def test_create_dataframe_from_rows(fss, spark):
    rows = [(1, "a", 2.5), (2, None, None), (3, "ü", -0.0)]
    got = fss.createDataFrame(rows, ["a", "b", "c"]).filter("a > 1")
    exp = spark.createDataFrame(rows, ["a", "b", "c"]).filter("a > 1")
    assert_same_rows(spark_rows(exp), _rows(got))
    assert [t for _, t in got.dtypes] == [t for _, t in exp.dtypes]
