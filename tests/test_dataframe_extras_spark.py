"""PySpark's remaining DataFrame surface against PySpark: ``na``, ``stat``, ``describe`` /
``summary``, reshaping (``unpivot``, ``pivot``, ``toDF``), Python over the rows
(``mapInPandas``, ``mapInArrow``, ``applyInPandas``) and the actions, on data with NULLs,
NaN, -0.0, duplicates, unicode and decimals. Also: every method name of PySpark's
``DataFrame``, ``Column``, ``GroupedData`` and ``Window`` exists on ferrospark's."""

from __future__ import annotations

import math
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from ferrospark import functions as F
from helpers import arrow_rows, assert_same_rows, spark_rows


def _people() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3, 4, 5, 6, 7], pa.int32()),
            "name": ["ann", "bö", "日本", None, "ann", "cy", None],
            "dept": pa.array([10, 10, 20, None, 20, 30, 10], pa.int32()),
            "x": pa.array([1.5, float("nan"), -0.0, None, 2.5, 4.0, 1.5], pa.float64()),
            "amt": pa.array(
                [
                    Decimal("1.50"),
                    None,
                    Decimal("-2.25"),
                    Decimal("0.00"),
                    None,
                    Decimal("3.10"),
                    Decimal("1.50"),
                ],
                pa.decimal128(6, 2),
            ),
        }
    )


@pytest.fixture(scope="module")
def frames(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("extras") / "people.parquet")
    pq.write_table(_people(), path)
    s = fs.Session()
    return s.read.parquet(path), spark.read.parquet(path)


def _same(ours, theirs, context=""):
    assert_same_rows(spark_rows(theirs), arrow_rows(ours.toArrow()), context)


def test_every_pyspark_method_name_exists():
    import pyspark.sql as ps
    from pyspark.sql.group import GroupedData as SparkGrouped
    from pyspark.sql.window import Window as SparkWindow

    from ferrospark.column import Column
    from ferrospark.dataframe import DataFrame, GroupedData

    for ours, theirs in [
        (DataFrame, ps.DataFrame),
        (Column, ps.Column),
        (fs.Window, SparkWindow),
    ]:
        missing = [m for m in dir(theirs) if not m.startswith("_") and not hasattr(ours, m)]
        assert not missing, f"{ours.__name__} lacks {missing}"
    grouped_missing = [
        m
        for m in dir(SparkGrouped)
        if not m.startswith("_")
        and not hasattr(GroupedData, m)
        # Stateful streaming operators need Spark's streaming engine.
        and m not in ("applyInPandasWithState", "transformWithState", "transformWithStateInPandas")
    ]
    assert not grouped_missing, grouped_missing


@pytest.mark.parametrize(
    "call",
    [
        lambda df: df.na.fill(0),
        lambda df: df.na.fill("?"),
        lambda df: df.na.fill({"name": "none", "x": -1.0, "dept": 99}),
        lambda df: df.fillna(7, subset=["dept"]),
        lambda df: df.na.drop(),
        lambda df: df.na.drop(how="all", subset=["name", "x"]),
        lambda df: df.dropna(thresh=4),
        lambda df: df.na.replace("ann", "anne"),
        lambda df: df.replace({10: 11, 20: 21}, subset=["dept"]),
        lambda df: df.replace(["ann", "cy"], ["A", "C"]),
    ],
)
def test_na_matches_spark(frames, call):
    ours, theirs = frames
    _same(call(ours), call(theirs))


def test_describe_and_summary_match_spark(frames):
    ours, theirs = frames
    for call in (
        lambda df: df.describe(),
        lambda df: df.describe("dept", "name"),
        lambda df: df.select("id", "dept", "amt").summary(),
        lambda df: df.select("id", "dept").summary("count", "min", "50%", "max"),
    ):
        _same(call(ours), call(theirs))


def test_stat_matches_spark(frames):
    ours, theirs = frames
    o = ours.filter("x < 100")
    t = theirs.filter("x < 100")
    assert math.isclose(o.corr("id", "x"), t.corr("id", "x"), rel_tol=1e-12)
    assert math.isclose(o.cov("id", "dept"), t.cov("id", "dept"), rel_tol=1e-12)
    assert o.stat.approxQuantile("id", [0.0, 0.25, 0.5, 1.0], 0.0) == t.stat.approxQuantile(
        "id", [0.0, 0.25, 0.5, 1.0], 0.0
    )
    ct_ours = {tuple(r) for r in ours.crosstab("name", "dept").collect()}
    ct_theirs = spark_rows(theirs.crosstab("name", "dept"))
    # Spark orders the value columns as it meets them: compare each row's cells by name.
    names_o = ours.crosstab("name", "dept").columns
    names_t = theirs.crosstab("name", "dept").columns
    assert sorted(names_o) == sorted(names_t)
    as_dicts = lambda rows, names: sorted(tuple(sorted(zip(names, r))) for r in rows)  # noqa: E731
    assert as_dicts(ct_ours, names_o) == as_dicts(ct_theirs, names_t)


def test_reshaping_matches_spark(frames):
    from pyspark.sql import functions as SF

    ours, theirs = frames
    for call in (
        lambda df, f: df.selectExpr("id", "CAST(dept AS DOUBLE) AS dept", "x").unpivot(
            "id", ["dept", "x"], "col", "val"
        ),
        lambda df, f: df.select("id", "name").toDF("a", "b"),
        lambda df, f: df.transform(lambda d: d.filter("id > 2")).select("id"),
        lambda df, f: df.groupBy("name").pivot("dept", [10, 20, 30]).count(),
        lambda df, f: df.groupBy("name").pivot("dept", [10, 20]).agg(f.sum("id"), f.max("x")),
        lambda df, f: df.groupBy("name").pivot("dept").agg(f.min("id")),
    ):
        _same(call(ours, F), call(theirs, SF))
    assert ours.select("id", "name").toDF("a", "b").columns == ["a", "b"]
    assert (
        ours.groupBy("name").pivot("dept").agg(F.min("id")).columns
        == theirs.groupBy("name").pivot("dept").agg(SF.min("id")).columns
    )


def test_python_over_rows_matches_spark(frames):
    ours, theirs = frames

    def double_ids(batches):
        for b in batches:
            yield b.assign(id=b["id"] * 2)[["id", "name"]]

    def top(pdf):
        return pdf.sort_values("id").head(1)[["dept", "id"]]

    def arrow_twice(batches):
        for b in batches:
            yield pa.RecordBatch.from_arrays(
                [pa.compute.multiply(b.column("id"), 2).cast(pa.int32())], names=["id"]
            )

    _same(
        ours.mapInPandas(double_ids, "id int, name string"),
        theirs.mapInPandas(double_ids, "id int, name string"),
    )
    _same(ours.mapInArrow(arrow_twice, "id int"), theirs.mapInArrow(arrow_twice, "id int"))
    _same(
        ours.groupBy("dept").applyInPandas(top, "dept int, id int"),
        theirs.groupBy("dept").applyInPandas(top, "dept int, id int"),
    )


def test_a_failing_python_function_names_itself(frames):
    ours, _ = frames

    def broken(batches):
        for _ in batches:
            raise ValueError("boom")
        yield from ()

    with pytest.raises(fs.FerroError, match="broken raised ValueError: boom"):
        ours.mapInPandas(broken, "id int")
    assert ours.count() == 7


def test_actions_match_spark(frames):
    ours, theirs = frames
    assert ours.filter("id > 100").isEmpty() and not ours.isEmpty()
    assert [tuple(r) for r in ours.orderBy("id").tail(2)] == [tuple(r) for r in theirs.orderBy("id").tail(2)]
    assert sorted(ours.select("id", "name").toJSON().collect()) == sorted(
        theirs.select("id", "name").toJSON().collect()
    )
    ordered = ours.select("id", "name").orderBy("id")
    assert [tuple(r) for r in ordered.toLocalIterator()] == [tuple(r) for r in ordered.collect()]
    assert ours.coalesce(1).repartition(8, "id").sortWithinPartitions("id").count() == 7
    seen = []
    ours.foreach(lambda r: seen.append(r.id))
    assert sorted(seen) == list(range(1, 8))


def test_sample_is_repeatable_and_split_covers_every_row(frames):
    ours, _ = frames
    a = arrow_rows(ours.sample(0.5, seed=3).toArrow())
    assert a == arrow_rows(ours.sample(0.5, seed=3).toArrow())
    parts = ours.randomSplit([1.0, 2.0], seed=5)
    assert sum(p.count() for p in parts) == 7
    assert sorted(r for p in parts for r in arrow_rows(p.select("id").toArrow())) == [
        (i,) for i in range(1, 8)
    ]


@pytest.mark.parametrize(
    "build",
    [
        # alias-qualified columns through a full outer join (a self join)
        lambda F, df: (
            df.alias("p")
            .join(df.alias("q"), F.col("p.dept") == F.col("q.id"), "full_outer")
            .select(F.col("p.id"), F.col("p.dept"), F.col("q.name"), (F.col("q.x") + 1).alias("qx"))
        ),
        # struct fields by a dotted name, nested, in a filter, and a backquoted part
        lambda F, df: (
            df.select("id", F.struct("name", F.struct("dept", "amt").alias("inner")).alias("s"))
            .filter(F.col("s.inner.dept") > 10)
            .select(
                "id", F.col("s.name"), F.col("s.inner.amt"), F.col("`s`.inner"), F.col("s.inner.dept") * 2
            )
        ),
        # a qualifier and a struct field at once
        lambda F, df: (
            df.select("id", F.struct("name", "x").alias("s"))
            .alias("t")
            .select(F.col("t.s.name"), F.col("t.id"))
        ),
    ],
)
def test_dotted_column_names_resolve_as_pysparks(frames, build):
    """``F.col("p.dept")`` after ``df.alias("p")`` (in a full outer join too), struct fields by
    a dotted name (nested, backquoted), and both at once: values and names as PySpark's."""
    from pyspark.sql import functions as SF

    ours, theirs = frames
    got = build(F, ours)
    want = build(SF, theirs)
    assert got.columns == want.columns
    _same(got, want)
