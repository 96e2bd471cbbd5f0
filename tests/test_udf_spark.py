"""Python UDFs against PySpark: ``F.udf`` (row at a time, and ``useArrow=True``),
``F.pandas_udf`` (scalar, iterator, grouped aggregate) and ``spark.udf.register`` for SQL.

The same Python functions run in both engines over one Parquet file (NULLs, NaN, -0.0,
unicode, decimals, dates, timestamps, binary, arrays, maps, structs): what each function is
handed, what becomes of what it returns under each declared type, the generated column
names, and the errors. Expected values all come from Spark at test time.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from ferrospark import functions as F
from helpers import arrow_rows, assert_same_rows, spark_rows

UTC = dt.timezone.utc


def _pickle_this_module_by_value() -> None:
    """Spark's Python workers cannot import this test module: its functions travel whole."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


_pickle_this_module_by_value()


def _table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
            "k": pa.array([1, 1, 2, 2, None, 3], pa.int32()),
            "big": pa.array([10**12, -5, None, 0, 7, 2**40], pa.int64()),
            "x": pa.array([1.5, float("nan"), -0.0, None, 2.5, 1e10], pa.float64()),
            "s": ["ann", "bö", "日本😀", None, "", "ann"],
            "amt": pa.array(
                [Decimal("1.50"), None, Decimal("-2.25"), Decimal("0.00"), Decimal("9.99"), Decimal("1.50")],
                pa.decimal128(6, 2),
            ),
            "d": pa.array(
                [
                    dt.date(2020, 2, 29),
                    dt.date(1969, 12, 31),
                    None,
                    dt.date(2024, 1, 1),
                    dt.date(2000, 1, 1),
                    dt.date(1999, 12, 31),
                ],
                pa.date32(),
            ),
            "ts": pa.array(
                [
                    dt.datetime(2020, 2, 29, 23, 59, 59, 123456, tzinfo=UTC),
                    None,
                    dt.datetime(1969, 12, 31, 0, 0, tzinfo=UTC),
                    dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC),
                    dt.datetime(2000, 1, 1, tzinfo=UTC),
                    dt.datetime(2021, 6, 1, 1, 2, 3, tzinfo=UTC),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "bin": pa.array([b"\x00\xff", None, b"", b"abc", b"z", b"\x01"], pa.binary()),
            "arr": pa.array([[1, 2], [], None, [3, None], [5], [1, 2]], pa.list_(pa.int32())),
            "m": pa.array(
                [[("a", 1)], [], None, [("b", None)], [("c", 3)], [("a", 1)]],
                pa.map_(pa.string(), pa.int32()),
            ),
            "st": pa.array(
                [
                    {"a": 1, "b": "x"},
                    {"a": None, "b": "y"},
                    None,
                    {"a": 4, "b": None},
                    {"a": 5, "b": "ü"},
                    {"a": 6, "b": "z"},
                ],
                pa.struct([("a", pa.int32()), ("b", pa.string())]),
            ),
        }
    )


@pytest.fixture(scope="module")
def frames(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("udf") / "t.parquet")
    pq.write_table(_table(), path)
    s = fs.Session()
    ours, theirs = s.read.parquet(path), spark.read.parquet(path)
    ours.createOrReplaceTempView("t")
    theirs.createOrReplaceTempView("t")
    return s, ours, theirs


def _same(ours, theirs, context=""):
    assert ours.columns == theirs.columns, context
    assert_same_rows(spark_rows(theirs), arrow_rows(ours.toArrow()), context)


def _both(fn, *args, **kwargs):
    """The same function as ferrospark's and PySpark's UDF."""
    from pyspark.sql import functions as SF

    return F.udf(fn, *args, **kwargs), SF.udf(fn, *args, **kwargs)


COLUMNS = ["id", "big", "x", "s", "amt", "d", "ts", "bin", "arr", "m", "st"]


def _shown(v):
    """What a Python function was handed, as text both engines print alike."""
    if v is None:
        return "None"
    if isinstance(v, dict):
        return "dict" + repr(sorted(v.items()))
    if isinstance(v, float) and math.isnan(v):
        return "float:nan"
    if type(v).__name__ == "Row":
        return "Row" + repr(list(zip(v.__fields__, v)))
    return f"{type(v).__name__}:{v!r}"


def test_row_udf_sees_the_values_pyspark_passes(frames):
    _, ours, theirs = frames
    ours_f, theirs_f = _both(_shown)
    _same(
        ours.select("id", *[ours_f(c).alias(c) for c in COLUMNS[1:]]),
        theirs.select("id", *[theirs_f(c).alias(c) for c in COLUMNS[1:]]),
    )


RESULTS = {
    "int": 1,
    "big_int": 2**40,
    "huge_int": 2**70,
    "float": 1.5,
    "bool": True,
    "str": "x",
    "decimal": Decimal("1.255"),
    "list": [1, None, 2],
    "dict": {"a": 1},
    "date": dt.date(2021, 3, 4),
    "datetime": dt.datetime(2021, 3, 4, 5, 6, 7, 8),
    "none": None,
}

TYPES = [
    "tinyint",
    "int",
    "bigint",
    "double",
    "float",
    "boolean",
    "string",
    "decimal(10,2)",
    "array<int>",
    "map<string,int>",
    "binary",
]


#: (type, result) pairs PySpark 4.3 refuses when converting an Arrow-optimized function's
#: result (it converts them all when pickled). Measured from Spark; each run checks that
#: ferrospark refuses every one, that Spark still converts every pair not listed (one query),
#: and re-asks Spark about the first listed pair of each type.
ARROW_REFUSES = {
    "tinyint": {"big_int", "huge_int", "bool", "str", "list", "dict", "date", "datetime"},
    "int": {"big_int", "huge_int", "bool", "str", "list", "dict", "datetime"},
    "bigint": {"huge_int", "bool", "str", "list", "dict", "date"},
    "double": {"huge_int", "str", "list", "dict", "date", "datetime"},
    "float": {"big_int", "huge_int", "str", "list", "dict", "date", "datetime"},
    "boolean": {"huge_int", "str", "decimal", "list", "dict", "date", "datetime"},
    "decimal(10,2)": {
        "int",
        "big_int",
        "huge_int",
        "float",
        "bool",
        "str",
        "list",
        "dict",
        "date",
        "datetime",
    },
    "array<int>": {
        "int",
        "big_int",
        "huge_int",
        "float",
        "bool",
        "str",
        "decimal",
        "dict",
        "date",
        "datetime",
    },
    "map<string,int>": {
        "int",
        "big_int",
        "huge_int",
        "float",
        "bool",
        "str",
        "decimal",
        "list",
        "date",
        "datetime",
    },
    "binary": {
        "int",
        "big_int",
        "huge_int",
        "float",
        "bool",
        "str",
        "decimal",
        "list",
        "dict",
        "date",
        "datetime",
    },
    "string": set(),
}


def _giving(mod, rtype, label, use_arrow):
    def give(_x, value=RESULTS[label]):
        return value

    return mod.udf(give, rtype, useArrow=use_arrow)


def _norm(v):
    return sorted(v.items()) if isinstance(v, dict) else v


@pytest.mark.parametrize("use_arrow", [None, False], ids=["arrow", "pickled"])
def test_row_udf_results_convert_as_in_pyspark(frames, use_arrow):
    """Each kind of Python result under each declared type, converted the Arrow-optimized
    way (Spark 4's default) or the pickled way: the value, NULL where Spark gives NULL, text
    for string, or a failed query where Spark fails."""
    _, ours, theirs = frames
    from pyspark.sql import functions as SF

    refused = ARROW_REFUSES if use_arrow is None else {t: set() for t in TYPES}
    pairs = [
        (t, label)
        for t in TYPES
        for label, value in RESULTS.items()
        if label not in refused[t]
        and not (t == "string" and use_arrow is False and isinstance(value, dt.date))  # Java's Calendar text
    ]

    def select(frame, mod):
        cols = [_giving(mod, t, label, use_arrow)("id").alias(f"{t}|{label}") for t, label in pairs]
        return frame.filter("id = 1").select(*cols).collect()[0]

    got, expected = select(ours, F), select(theirs, SF)
    for i, (t, label) in enumerate(pairs):
        assert _norm(got[i]) == _norm(expected[i]), f"{label} as {t}: {got[i]!r} vs Spark's {expected[i]!r}"
    for t, labels in refused.items():
        for j, label in enumerate(sorted(labels)):
            with pytest.raises(fs.FerroError):
                ours.filter("id = 1").select(_giving(F, t, label, use_arrow)("id")).collect()
            if j == 0:
                with pytest.raises(Exception, match="Python worker"):
                    theirs.filter("id = 1").select(_giving(SF, t, label, use_arrow)("id")).collect()


def test_dates_timestamps_and_structs_come_back(frames):
    _, ours, theirs = frames
    cases = [
        (lambda d: d, "date", "d"),
        (lambda ts: ts, "timestamp", "ts"),
        (lambda d: None if d is None else dt.datetime(d.year, d.month, d.day, 6), "timestamp", "d"),
        (lambda st: st, "struct<a:int,b:string>", "st"),
        (lambda a: None if a is None else (a, str(a)), "struct<a:int,b:string>", "id"),
        (lambda a: None if a is None else {"b": "k", "a": a}, "struct<a:int,b:string>", "id"),
        (lambda m: m, "map<string,int>", "m"),
        (lambda arr: None if arr is None else [x for x in arr if x is not None][::-1], "array<int>", "arr"),
        (lambda b: b, "binary", "bin"),
        (lambda a: a, "decimal(6,2)", "amt"),
    ]
    ours_cols, theirs_cols = [], []
    for i, (fn, rtype, c) in enumerate(cases):
        o, t = _both(fn, rtype)
        ours_cols.append(o(c).alias(f"c{i}"))
        theirs_cols.append(t(c).alias(f"c{i}"))
    _same(ours.select("id", *ours_cols), theirs.select("id", *theirs_cols))


def test_generated_names_and_decorators(frames):
    _, ours, theirs = frames
    from pyspark.sql import functions as SF

    def plus_one(v):
        return None if v is None else v + 1

    def decorated(mod):
        @mod.udf("int")
        def twice(v):
            return None if v is None else 2 * v

        return twice

    o, t = _both(plus_one, "int")
    lo, lt = _both(lambda a, b: f"{a}-{b}")
    ours_df = ours.select(o("id"), decorated(F)(ours.id), lo("s", F.col("id")), o(F.col("id") + 1))
    theirs_df = theirs.select(t("id"), decorated(SF)(theirs.id), lt("s", SF.col("id")), t(SF.col("id") + 1))
    assert ours_df.columns[:3] == ["plus_one(id)", "twice(id)", "<lambda>(s, id)"]
    _same(ours_df, theirs_df)


def test_udfs_in_filters_keys_and_with_column(frames):
    _, ours, theirs = frames
    o, t = _both(lambda s: None if s is None else len(s), "int")
    from pyspark.sql import functions as SF

    _same(ours.filter(o("s") > 2).select("id"), theirs.filter(t("s") > 2).select("id"))
    _same(
        ours.groupBy(o("s").alias("n")).agg(F.count("*").alias("c")),
        theirs.groupBy(t("s").alias("n")).agg(SF.count("*").alias("c")),
    )
    _same(ours.withColumn("n", o("s")).select("id", "n"), theirs.withColumn("n", t("s")).select("id", "n"))


def test_arrow_optimized_udf(frames):
    _, ours, theirs = frames
    cases = [
        (lambda v: None if v is None else v * 2, "double", "id"),
        (lambda v: None if v is None else v + 0.5, "double", "x"),
        (lambda s: None if s is None else s.upper(), "string", "s"),
        (lambda arr: None if arr is None else len(arr), "bigint", "arr"),
    ]
    ours_cols, theirs_cols = [], []
    for i, (fn, rtype, c) in enumerate(cases):
        o, t = _both(fn, rtype, useArrow=True)
        ours_cols.append(o(c).alias(f"c{i}"))
        theirs_cols.append(t(c).alias(f"c{i}"))
    _same(ours.select("id", *ours_cols), theirs.select("id", *theirs_cols))


def test_pandas_scalar_and_iterator_udfs(frames):
    _, ours, theirs = frames
    from pyspark.sql import functions as SF

    def add(a: pd.Series, b: pd.Series) -> pd.Series:
        return a + b

    def lengths(s: pd.Series) -> pd.Series:
        return s.str.len()

    def hour(ts: pd.Series) -> pd.Series:
        return ts.dt.hour

    def shift(ts: pd.Series) -> pd.Series:
        return ts + pd.Timedelta(hours=1)

    def split(st: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"b": st["b"], "a": st["a"] * 10})

    def plus_iter(it: Iterator[pd.Series]) -> Iterator[pd.Series]:
        for s in it:
            yield s + 1

    def pair_iter(it: Iterator[tuple[pd.Series, pd.Series]]) -> Iterator[pd.Series]:
        for a, b in it:
            yield a * b

    specs = [
        (add, "double", ("x", "id")),
        (lengths, "double", ("s",)),
        (hour, "int", ("ts",)),
        (shift, "timestamp", ("ts",)),
        (split, "struct<a:int,b:string>", ("st",)),
        (plus_iter, "bigint", ("big",)),
        (pair_iter, "double", ("x", "id")),
    ]
    ours_cols = [F.pandas_udf(f, r)(*cs) for f, r, cs in specs]
    theirs_cols = [SF.pandas_udf(f, r)(*cs) for f, r, cs in specs]
    _same(ours.select("id", *ours_cols), theirs.select("id", *theirs_cols))


def test_grouped_aggregate_pandas_udf(frames):
    _, ours, theirs = frames
    from pyspark.sql import functions as SF

    def mean(v: pd.Series) -> float:
        return v.mean()

    def weighted(v: pd.Series, w: pd.Series) -> float:
        return float((v * w).sum())

    def count_all(v: pd.Series) -> int:
        return len(v)

    specs = [(mean, "double", ("x",)), (weighted, "double", ("id", "big")), (count_all, "bigint", ("s",))]
    for keys in (["k"], []):
        ours_cols = [F.pandas_udf(f, r)(*cs) for f, r, cs in specs]
        theirs_cols = [SF.pandas_udf(f, r)(*cs) for f, r, cs in specs]
        _same(
            ours.groupBy(*keys).agg(*ours_cols), theirs.groupBy(*keys).agg(*theirs_cols), f"group by {keys}"
        )
    # Spark refuses a grouped-aggregate pandas_udf beside other aggregates; so do we
    with pytest.raises(fs.AnalysisError, match="INVALID_PANDAS_UDF_PLACEMENT"):
        ours.groupBy("k").agg(F.pandas_udf(mean, "double")("x"), F.max("id"))
    # no input rows: one call over empty Series for the global aggregate
    o, t = F.pandas_udf(count_all, "bigint"), SF.pandas_udf(count_all, "bigint")
    _same(ours.filter("id > 100").agg(o("id")), theirs.filter("id > 100").agg(t("id")))


def test_two_lambdas_of_one_name_stay_apart(frames):
    _, ours, theirs = frames
    o1, t1 = _both(lambda v: v, "int")
    o2, t2 = _both(lambda v: None if v is None else -v, "int")
    a = ours.filter(o1("id") > 3).select("id")
    b = ours.filter(o2("id") > -3).select("id")
    ta = theirs.filter(t1("id") > 3).select("id")
    tb = theirs.filter(t2("id") > -3).select("id")
    _same(a.union(b), ta.union(tb))


def test_registered_functions_in_sql(frames):
    s, _, _ = frames
    spark = frames[2].sparkSession
    for engine in (s, spark):
        engine.udf.register("plus_one", lambda v: None if v is None else v + 1, "int")
        from pyspark.sql import functions as SF

        mod = F if engine is s else SF
        engine.udf.register("as_upper", mod.udf(lambda v: None if v is None else v.upper()))

        def mean(v: pd.Series) -> float:
            return v.mean()

        engine.udf.register("pd_mean", mod.pandas_udf(mean, "double"))
    q = "SELECT k, plus_one(max(id)), as_upper(max(s)) AS u FROM t GROUP BY k"
    _same(s.sql(q), spark.sql(q))
    q = "SELECT k, pd_mean(x) FROM t GROUP BY k"
    _same(s.sql(q), spark.sql(q))
    q = "SELECT id, plus_one(id) + 1, as_upper(s) FROM t WHERE plus_one(id) > 2"
    _same(s.sql(q), spark.sql(q))
    # called by name from the DataFrame API
    theirs_t = spark.table("t")
    ours_t = s.table("t")
    _same(
        ours_t.select(F.call_udf("plus_one", "id"), F.expr("as_upper(s)")),
        theirs_t.select(SF.call_udf("plus_one", "id"), SF.expr("as_upper(s)")),
    )
    # the registered function is also a column function
    f = s.udf.register("times_ten", lambda v: None if v is None else v * 10, "bigint")
    assert s.table("t").select(f("id")).columns == ["times_ten(id)"]
    assert s.catalog.functionExists("times_ten")
    s.sql("DROP TEMPORARY FUNCTION times_ten")
    with pytest.raises(fs.AnalysisError):
        s.sql("SELECT times_ten(id) FROM t").collect()


def test_a_raising_udf_names_itself_and_the_session_goes_on(frames):
    s, ours, _ = frames

    def reciprocal(v):
        return 1 / (v - 3)

    f = F.udf(reciprocal, "double")
    with pytest.raises(fs.PythonException, match=r"reciprocal[\s\S]*ZeroDivisionError"):
        ours.select(f("id")).collect()

    def wrong_length(v: pd.Series) -> pd.Series:
        return v.head(1)

    with pytest.raises(fs.PythonException, match="wrong_length"):
        ours.select(F.pandas_udf(wrong_length, "int")("id")).collect()
    assert ours.count() == 6
    assert s.sql("SELECT count(*) FROM t").collect()[0][0] == 6


def test_udfs_run_with_the_rows_not_while_planning(frames):
    _, ours, _ = frames
    calls = []

    def tally(v):
        calls.append(v)
        return v

    f = F.udf(tally, "int")
    df = ours.select(f(F.lit(7)).alias("seven"), f("id").alias("same"))
    df.explain()
    assert calls == []
    rows = df.collect()
    assert [r.seven for r in rows] == [7] * 6
    assert sorted(calls) == sorted([7] * 6 + list(range(1, 7)))

    calls.clear()
    nd = F.udf(tally, "int").asNondeterministic()
    ours.select(nd("id").alias("a"), nd("id").alias("b")).collect()
    assert len(calls) == 12  # each occurrence of a nondeterministic call is its own call


def _batch_size_queries(mod, frame) -> list:
    """The queries of ``test_batch_sizes_do_not_change_results`` over ``frame``, with the UDFs
    of ``mod`` (ferrospark's or PySpark's functions)."""

    def mean(v: pd.Series) -> float:
        return v.mean()

    def lengths(v: pd.Series) -> pd.Series:
        return v.str.len()

    return [
        frame.groupBy("k").agg(mod.pandas_udf(mean, "double")("x")),
        frame.groupBy("k").agg(mod.max(mod.udf(_shown)("s"))),
        frame.select("id", mod.pandas_udf(lengths, "int")("s")),
    ]


@pytest.fixture(scope="module")
def batch_size_answers(frames):
    """Spark's columns and rows for each of ``_batch_size_queries``, computed once for every
    batch size: Spark's answer does not depend on ferrospark's."""
    from pyspark.sql import functions as SF

    return [(df.columns, spark_rows(df)) for df in _batch_size_queries(SF, frames[2])]


@pytest.mark.parametrize("batch_size", [1, 2, 7, 8192])
def test_batch_sizes_do_not_change_results(batch_size_answers, batch_size, tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(_table(), path)
    s = fs.Session(conf={"ferrospark.batch.size": str(batch_size)})
    ours = s.read.parquet(path)
    for got, (columns, rows) in zip(_batch_size_queries(F, ours), batch_size_answers, strict=True):
        assert got.columns == columns
        assert_same_rows(rows, arrow_rows(got.toArrow()))
