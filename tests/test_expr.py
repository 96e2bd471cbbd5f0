"""Expressions: fs.col / fs.lit / operators / fs.expr (Spark SQL text).

Every case has hand-computed expected row ids (Spark semantics: three-valued logic, NaN = NaN
and greater than everything, -0.0 = 0.0). The `spark`-marked tests check those expectations
against PySpark itself, and check that `str(column)` is SQL text Spark accepts with the same
meaning.
"""

from __future__ import annotations

import datetime as dt
import pickle
import re
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs

NAN = float("nan")
INF = float("inf")
UTC = dt.timezone.utc

# id | a    | x     | s         | b     | d          | st                 | dec
# 0  | 1    | 1.5   | 'apple'   | True  | 2024-01-01 | {a:1, b:'x'}       | 1.00
# 1  | 2    | NaN   | 'banana'  | False | 2024-01-02 | {a:2, b:'y'}       | 2.50
# 2  | 3    | -0.0  | ''        | None  | 2024-01-03 | None               | -3.75
# 3  | None | 0.0   | None      | True  | None       | {a:None, b:'x'}    | None
# 4  | 5    | None  | 'cherry'  | False | 2024-01-05 | {a:5, b:None}      | 0.00
# 5  | -1   | 3.0   | 'apricot' | True  | 2024-02-29 | {a:-1, b:'z'}      | 12.34
# 6  | 0    | -2.5  | 'a_c'     | None  | 2024-03-01 | {a:0, b:'x'}       | 99.99
# 7  | 7    | NaN   | 'a%c'     | False | 2023-12-31 | {a:7, b:'y'}       | -0.01
# 8  | None | 100.0 | 'Äpfel'   | True  | 2024-06-15 | None               | 5.00
# 9  | 10   | 2.0   | "it's"    | False | 2025-01-01 | {a:10, b:'w'}      | 1.25
# 10 | 4    | -inf  | '日本'    | True  | 2024-01-10 | {a:4, b:'x'}       | 100.00
# 11 | 4    | inf   | 'abc'     | None  | 2024-01-11 | {a:None, b:None}   | 0.50
# ts = 2024-01-01 00:00 UTC + id hours (NULL for id 3); `weird col` = 10 * id
_D = dt.date
EXPR_ROWS = dict(
    id=list(range(12)),
    a=[1, 2, 3, None, 5, -1, 0, 7, None, 10, 4, 4],
    x=[1.5, NAN, -0.0, 0.0, None, 3.0, -2.5, NAN, 100.0, 2.0, -INF, INF],
    s=["apple", "banana", "", None, "cherry", "apricot", "a_c", "a%c", "Äpfel", "it's", "日本", "abc"],
    b=[True, False, None, True, False, True, None, False, True, False, True, None],
    d=[
        _D(2024, 1, 1),
        _D(2024, 1, 2),
        _D(2024, 1, 3),
        None,
        _D(2024, 1, 5),
        _D(2024, 2, 29),
        _D(2024, 3, 1),
        _D(2023, 12, 31),
        _D(2024, 6, 15),
        _D(2025, 1, 1),
        _D(2024, 1, 10),
        _D(2024, 1, 11),
    ],
    ts=[None if i == 3 else dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i) for i in range(12)],
    st=[
        {"a": 1, "b": "x"},
        {"a": 2, "b": "y"},
        None,
        {"a": None, "b": "x"},
        {"a": 5, "b": None},
        {"a": -1, "b": "z"},
        {"a": 0, "b": "x"},
        {"a": 7, "b": "y"},
        None,
        {"a": 10, "b": "w"},
        {"a": 4, "b": "x"},
        {"a": None, "b": None},
    ],
    dec=[
        Decimal(v) if v is not None else None
        for v in [
            "1.00",
            "2.50",
            "-3.75",
            None,
            "0.00",
            "12.34",
            "99.99",
            "-0.01",
            "5.00",
            "1.25",
            "100.00",
            "0.50",
        ]
    ],
)


def _expr_table() -> pa.Table:
    r = EXPR_ROWS
    return pa.table(
        {
            "id": pa.array(r["id"], pa.int64()),
            "a": pa.array(r["a"], pa.int64()),
            "x": pa.array(r["x"], pa.float64()),
            "s": pa.array(r["s"], pa.string()),
            "b": pa.array(r["b"], pa.bool_()),
            "d": pa.array(r["d"], pa.date32()),
            "ts": pa.array(r["ts"], pa.timestamp("us", tz="UTC")),
            "st": pa.array(r["st"], pa.struct([("a", pa.int64()), ("b", pa.string())])),
            "dec": pa.array(r["dec"], pa.decimal128(10, 2)),
            "weird col": pa.array([10 * i for i in r["id"]], pa.int64()),
        }
    )


@pytest.fixture(scope="module")
def expr_file(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("expr") / "expr.parquet"
    pq.write_table(_expr_table(), p, row_group_size=5)
    return str(p)


ALL = list(range(12))

# (Spark SQL filter text, ids of the rows Spark returns)
SQL_CASES = [
    ("a > 2", [2, 4, 7, 9, 10, 11]),
    ("a = 4", [10, 11]),
    ("a == 2", [1]),
    ("a != 4", [0, 1, 2, 4, 5, 6, 7, 9]),
    ("a <> 4", [0, 1, 2, 4, 5, 6, 7, 9]),
    ("a >= 5", [4, 7, 9]),
    ("a <= 0", [5, 6]),
    ("a < 1", [5, 6]),
    ("A > 2", [2, 4, 7, 9, 10, 11]),  # identifiers are case-insensitive in Spark
    ("a > '2'", [2, 4, 7, 9, 10, 11]),  # string literal implicitly cast to bigint
    ("a = 2 + 1", [2]),
    ("a = 1.0", [0]),
    ("a > 2 AND a < 7", [2, 4, 10, 11]),
    ("a > 2 and s is not null", [2, 4, 7, 9, 10, 11]),
    ("a < 1 OR a > 6", [5, 6, 7, 9]),
    ("NOT a > 2", [0, 1, 5, 6]),
    ("NOT (a > 2) OR a IS NULL", [0, 1, 3, 5, 6, 8]),
    ("a > 2 OR a < 0 AND s = 'apple'", [2, 4, 7, 9, 10, 11]),
    ("a IN (1, 4, 7)", [0, 7, 10, 11]),
    ("a NOT IN (1, 4, 7)", [1, 2, 4, 5, 6, 9]),
    ("a IN (1, NULL)", [0]),
    ("a NOT IN (1, NULL)", []),
    ("a IS NULL", [3, 8]),
    ("a IS NOT NULL", [0, 1, 2, 4, 5, 6, 7, 9, 10, 11]),
    ("a BETWEEN 2 AND 5", [1, 2, 4, 10, 11]),
    ("a NOT BETWEEN 2 AND 5", [0, 5, 6, 7, 9]),
    ("a <=> NULL", [3, 8]),
    ("a <=> 4", [10, 11]),
    ("NOT (a <=> 4)", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
    ("a + 1 > 5", [4, 7, 9]),
    ("a * 2 - 1 = 7", [10, 11]),
    ("a % 3 = 1", [0, 7, 9, 10, 11]),
    ("a / 2 > 1.5", [4, 7, 9, 10, 11]),
    ("-a > 0", [5]),
    ("a + 2 * 3 > 10", [4, 7, 9]),
    ("(a + 2) * 3 > 10", [1, 2, 4, 7, 9, 10, 11]),
    ("x > 2", [1, 5, 7, 8, 11]),
    ("x = 0", [2, 3]),
    ("x = -0.0", [2, 3]),
    ("x < 0", [6, 10]),
    ("x BETWEEN -1 AND 1.5", [0, 2, 3]),
    ("x = CAST('NaN' AS DOUBLE)", [1, 7]),
    ("x > CAST('Infinity' AS DOUBLE)", [1, 7]),
    ("x <=> CAST('NaN' AS DOUBLE)", [1, 7]),
    ("x IN (1.5, CAST('NaN' AS DOUBLE))", [0, 1, 7]),
    ("x != x", []),
    ("x = x", [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11]),
    ("s = 'apple'", [0]),
    ("s = 'it''s'", [9]),
    (r"s = 'it\'s'", [9]),
    ('s = "it\'s"', [9]),
    ("s IN ('apple', '日本', '')", [0, 2, 10]),
    ("s > 'b'", [1, 4, 8, 9, 10]),
    ("s < 'a'", [2]),
    ("s LIKE 'a%'", [0, 5, 6, 7, 11]),
    ("s LIKE 'a_c'", [6, 7, 11]),
    (r"s LIKE 'a\\_c'", [6]),
    (r"s LIKE 'a\\%c'", [7]),
    ("s LIKE '%an%'", [1]),
    ("s LIKE ''", [2]),
    ("s LIKE '%'", [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11]),
    ("s NOT LIKE 'a%'", [1, 2, 4, 8, 9, 10]),
    ("b", [0, 3, 5, 8, 10]),
    ("NOT b", [1, 4, 7, 9]),
    ("b = false", [1, 4, 7, 9]),
    ("b IS NULL", [2, 6, 11]),
    ("b AND a > 2", [10]),
    ("b OR a > 6", [0, 3, 5, 7, 8, 9, 10]),
    ("CAST(a AS STRING) = '10'", [9]),
    ("CAST(a AS DOUBLE) > 4.5", [4, 7, 9]),
    ("CAST(dec AS INT) = 12", [5]),
    ("d = DATE '2024-02-29'", [5]),
    ("d > DATE '2024-01-05'", [5, 6, 8, 9, 10, 11]),
    ("d BETWEEN DATE '2024-01-01' AND DATE '2024-01-10'", [0, 1, 2, 4, 10]),
    ("d < '2024-01-02'", [0, 7]),
    ("ts >= TIMESTAMP '2024-01-01 05:00:00'", [5, 6, 7, 8, 9, 10, 11]),
    ("ts = TIMESTAMP '2024-01-01 02:00:00'", [2]),
    ("st.a > 2", [4, 7, 9, 10]),
    ("st.b = 'x'", [0, 3, 6, 10]),
    ("st.a IS NULL", [2, 3, 8, 11]),
    ("st IS NULL", [2, 8]),
    ("dec > 1.5", [1, 5, 6, 8, 10]),
    ("dec = 12.34", [5]),
    ("dec < 0", [2, 7]),
    ("dec BETWEEN 0 AND 1.25", [0, 4, 9, 11]),
    ("dec + 1 > 2", [1, 5, 6, 8, 9, 10]),
    ("`weird col` > 50", [6, 7, 8, 9, 10, 11]),
    ("true", ALL),
    ("false", []),
    ("1 = 1", ALL),
]


# (id, builder(fs) -> Column, expected ids); the id names the test case
BUILDER_CASES = [
    ("gt", lambda: fs.col("a") > 2, [2, 4, 7, 9, 10, 11]),
    ("ge_lit", lambda: fs.col("a") >= fs.lit(5), [4, 7, 9]),
    ("eq", lambda: fs.col("a") == 4, [10, 11]),
    ("ne", lambda: fs.col("a") != 4, [0, 1, 2, 4, 5, 6, 7, 9]),
    ("lt_le", lambda: (fs.col("a") < 1) | (fs.col("a") <= -1), [5, 6]),
    ("reflected_cmp", lambda: 5 < fs.col("a"), [7, 9]),
    ("and", lambda: (fs.col("a") > 2) & (fs.col("a") < 7), [2, 4, 10, 11]),
    ("or", lambda: (fs.col("a") < 1) | (fs.col("a") > 6), [5, 6, 7, 9]),
    ("not", lambda: ~(fs.col("a") > 2), [0, 1, 5, 6]),
    ("add", lambda: fs.col("a") + 1 > 5, [4, 7, 9]),
    ("sub_mul", lambda: fs.col("a") * 2 - 1 == 7, [10, 11]),
    ("mod", lambda: fs.col("a") % 3 == 1, [0, 7, 9, 10, 11]),
    ("div", lambda: fs.col("a") / 2 > 1.5, [4, 7, 9, 10, 11]),
    ("neg", lambda: -fs.col("a") > 0, [5]),
    ("col_vs_col", lambda: fs.col("a") > fs.col("dec"), [2, 4, 7, 9, 11]),
    ("isin", lambda: fs.col("a").isin([1, 4, 7]), [0, 7, 10, 11]),
    ("isin_str", lambda: fs.col("s").isin(["apple", "日本", ""]), [0, 2, 10]),
    ("is_null", lambda: fs.col("a").is_null(), [3, 8]),
    ("is_not_null", lambda: fs.col("a").is_not_null(), [0, 1, 2, 4, 5, 6, 7, 9, 10, 11]),
    ("eq_null_safe_none", lambda: fs.col("a").eq_null_safe(None), [3, 8]),
    ("eq_null_safe_4", lambda: fs.col("a").eq_null_safe(4), [10, 11]),
    ("startswith", lambda: fs.col("s").startswith("a"), [0, 5, 6, 7, 11]),
    ("startswith_meta", lambda: fs.col("s").startswith("a%"), [7]),  # literal, not a pattern
    ("endswith", lambda: fs.col("s").endswith("c"), [6, 7, 11]),
    ("contains", lambda: fs.col("s").contains("an"), [1]),
    ("contains_meta", lambda: fs.col("s").contains("_"), [6]),
    ("like", lambda: fs.col("s").like("a_c"), [6, 7, 11]),
    ("between", lambda: fs.col("a").between(2, 5), [1, 2, 4, 10, 11]),
    ("cast", lambda: fs.col("a").cast("double") > 4.5, [4, 7, 9]),
    ("cast_string", lambda: fs.col("a").cast("string") == "10", [9]),
    ("str_quote", lambda: fs.col("s") == "it's", [9]),
    ("str_unicode", lambda: fs.col("s") == "日本", [10]),
    ("nan_lit", lambda: fs.col("x") == fs.lit(NAN), [1, 7]),
    ("nan_gt", lambda: fs.col("x") > 2.0, [1, 5, 7, 8, 11]),
    ("neg_zero", lambda: fs.col("x") == -0.0, [2, 3]),
    ("date_lit", lambda: fs.col("d") == dt.date(2024, 2, 29), [5]),
    ("ts_lit", lambda: fs.col("ts") >= dt.datetime(2024, 1, 1, 5, tzinfo=UTC), [5, 6, 7, 8, 9, 10, 11]),
    ("decimal_lit", lambda: fs.col("dec") > Decimal("1.5"), [1, 5, 6, 8, 10]),
    ("bool_col", lambda: fs.col("b"), [0, 3, 5, 8, 10]),
    ("bool_and", lambda: fs.col("b") & (fs.col("a") > 2), [10]),
    ("nested_field", lambda: fs.col("st.a") > 2, [4, 7, 9, 10]),
    ("weird_name", lambda: fs.col("weird col") > 50, [6, 7, 8, 9, 10, 11]),
    ("expr_mixed", lambda: fs.expr("a > 2") & fs.col("s").startswith("c"), [4]),
]


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def fs_ids(path, flt) -> list[int]:
    return ids_of(fs.read_parquet(path, filter=flt).read_all())


# ------------------------------------------------------------------------------------------
# building and printing
# ------------------------------------------------------------------------------------------


def test_col_is_column():
    c = fs.col("a")
    assert isinstance(c, fs.Column)
    assert isinstance(c + 1, fs.Column)
    assert isinstance(fs.lit(3), fs.Column)
    assert isinstance(fs.expr("a > 1"), fs.Column)


ROUND_TRIP_BUILDS = [
    ("add", lambda: fs.col("a") + 1),
    ("add_mul", lambda: (fs.col("a") + 1) * 2),
    ("col_ge_col", lambda: fs.col("a") >= fs.col("b")),
    ("not_and", lambda: ~((fs.col("a") > 5) & fs.col("s").is_not_null())),
    ("or_isin", lambda: (fs.col("a") < 0) | fs.col("s").isin(["x", "it's"])),
    (
        "string_fns",
        lambda: fs.col("s").startswith("ab") & fs.col("s").endswith("z") & fs.col("s").contains("m"),
    ),
    ("eq_null_safe", lambda: fs.col("a").eq_null_safe(None)),
    ("between", lambda: fs.col("a").between(1, 10)),
    ("like_escape", lambda: fs.col("s").like("a\\_%")),
    ("cast_arith", lambda: fs.col("a").cast("double") / 3 - fs.col("a") % 2),
    ("neg", lambda: -fs.col("a")),
    ("nested", lambda: fs.col("st.a") == fs.lit("q")),
    ("weird_name", lambda: fs.col("weird col") > 1),
    ("nan", lambda: fs.col("x") == fs.lit(NAN)),
    ("date", lambda: fs.col("d") == dt.date(2024, 2, 29)),
    ("decimal", lambda: fs.col("dec") > Decimal("-1.25")),
]


@pytest.mark.parametrize("build", [b for _, b in ROUND_TRIP_BUILDS], ids=[n for n, _ in ROUND_TRIP_BUILDS])
def test_str_round_trips_through_expr(build):
    c = build()
    text = str(c)
    assert isinstance(text, str) and text
    again = fs.expr(text)
    assert str(again) == text, f"{text!r} re-parsed prints as {str(again)!r}"


def test_str_of_simple_expression_is_sql():
    text = str(fs.col("a") + 1)
    # Spark SQL text of `a + 1`, maybe parenthesised, nothing else (e.g. no "Column<...>")
    assert re.fullmatch(r"\(?`?a`?\s*\+\s*1\)?", text), text


@pytest.mark.parametrize(
    "value",
    [
        0,
        1,
        -5,
        2**40,
        1.5,
        -0.25,
        "x",
        "it's",
        "日本",
        "",
        True,
        False,
        None,
        dt.date(2024, 2, 29),
        Decimal("12.345"),
        dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=UTC),
    ],
    ids=repr,
)
def test_lit_round_trips(value):
    text = str(fs.lit(value))
    assert str(fs.expr(text)) == text


@pytest.mark.parametrize(
    "build",
    [
        lambda: fs.col("a") + 1,
        lambda: (fs.col("a") > 2) & ~fs.col("s").isin(["x", "it's"]),
        lambda: fs.expr("d BETWEEN DATE '2024-01-01' AND DATE '2024-01-10' OR st.a <=> NULL"),
        lambda: fs.col("x") == fs.lit(NAN),
        lambda: fs.col("s").like("a\\_%").alias("m"),
        lambda: fs.col("ts").desc_nulls_first(),
    ],
)
def test_pickle_round_trip(build):
    c = build()
    c2 = pickle.loads(pickle.dumps(c))
    assert isinstance(c2, fs.Column)
    assert str(c2) == str(c)


def test_pickled_filter_gives_same_rows(expr_file):
    c = (fs.col("a") > 2) & fs.col("s").startswith("c") | fs.col("x").eq_null_safe(NAN)
    c2 = pickle.loads(pickle.dumps(c, protocol=pickle.HIGHEST_PROTOCOL))
    assert fs_ids(expr_file, c2) == fs_ids(expr_file, c) == [1, 4, 7]


def test_alias_text():
    text = str(fs.col("a").alias("renamed"))
    assert re.search(r"\bAS\b", text, re.IGNORECASE) and "renamed" in text, text


@pytest.mark.parametrize(
    "method, pattern",
    [
        ("asc", r"\bASC NULLS FIRST\b"),
        ("desc", r"\bDESC NULLS LAST\b"),
        ("asc_nulls_last", r"\bASC NULLS LAST\b"),
        ("desc_nulls_first", r"\bDESC NULLS FIRST\b"),
    ],
)
def test_sort_order_text(method, pattern):
    text = str(getattr(fs.col("a"), method)())
    assert re.search(pattern, text.upper()), f"{method}: {text!r}"


# ------------------------------------------------------------------------------------------
# fs.expr parsing: evaluated as filters
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sql, expected", SQL_CASES, ids=[c[0] for c in SQL_CASES])
def test_expr_filter(expr_file, sql, expected):
    c = fs.expr(sql)
    assert isinstance(c, fs.Column)
    assert fs_ids(expr_file, c) == expected, sql
    # the same text passed directly as filter string
    assert fs_ids(expr_file, sql) == expected, sql
    # and its printed form means the same
    assert fs_ids(expr_file, str(c)) == expected, f"{sql} printed as {str(c)!r}"


@pytest.mark.parametrize("name, build, expected", BUILDER_CASES, ids=[c[0] for c in BUILDER_CASES])
def test_builder_filter(expr_file, name, build, expected):
    c = build()
    assert fs_ids(expr_file, c) == expected, str(c)
    assert fs_ids(expr_file, fs.expr(str(c))) == expected, f"str() = {str(c)!r}"


def test_radd_and_friends(expr_file):
    # `1 + col`, `10 - col`, `2 * col` must work as in PySpark
    assert fs_ids(expr_file, 1 + fs.col("a") > 5) == [4, 7, 9]
    assert fs_ids(expr_file, 10 - fs.col("a") < 4) == [7, 9]
    assert fs_ids(expr_file, 2 * fs.col("a") == 8) == [10, 11]


# Syntax errors: fs.expr itself must reject them.
BAD_SQL = [
    "a >",
    "a = = 1",
    "(a > 1",
    "a > 1)",
    "a LIKE",
    "CAST(a AS)",
    "a BETWEEN 1",
    "1 +",
    "",
    "   ",
    "'unterminated",
    "a IN ()",
    "a IS NOT",
    "a NOT NULL",
    "AND a > 1",
    "a > 1 b < 2",
]

# Well-formed text with an invalid literal or type name. Spark's parser rejects these too;
# ferrospark may do so in fs.expr or when the expression is bound to a schema, but it must be an
# AnalysisError before any row is returned.
BAD_LITERALS = [
    "DATE 'not-a-date'",
    "TIMESTAMP '2024-13-45 99:00:00'",
    "CAST(a AS nosuchtype) > 1",
    "DATE '2023-02-29' < d",
]


@pytest.mark.parametrize("sql", BAD_SQL)
def test_bad_sql_raises_analysis_error(sql):
    with pytest.raises(fs.AnalysisError):
        fs.expr(sql)


@pytest.mark.parametrize("sql", BAD_LITERALS)
def test_bad_literal_raises_analysis_error(expr_file, sql):
    with pytest.raises(fs.AnalysisError):
        fs.read_parquet(expr_file, filter=fs.expr(sql)).read_all()
    with pytest.raises(fs.AnalysisError):
        fs.read_parquet(expr_file, filter=sql).read_all()


def test_bad_sql_is_a_ferro_error():
    with pytest.raises(fs.FerroError):
        fs.expr("a >")


def test_bad_filter_string_in_read(expr_file):
    with pytest.raises(fs.AnalysisError):
        fs.read_parquet(expr_file, filter="a > > 1").read_all()


# ------------------------------------------------------------------------------------------
# the oracle: PySpark
# ------------------------------------------------------------------------------------------


def _spark_ids(spark, path, sql):
    return sorted(r["id"] for r in spark.read.parquet(path).filter(sql).select("id").collect())


@pytest.mark.spark
def test_expected_ids_agree_with_spark(spark, expr_file):
    """Checks this file's hand-computed expectations against PySpark (no ferrospark needed)."""
    wrong = {}
    for sql, expected in SQL_CASES:
        got = _spark_ids(spark, expr_file, sql)
        if got != expected:
            wrong[sql] = (expected, got)
    assert not wrong, f"hand-computed expectation differs from Spark (expected, spark): {wrong}"


@pytest.mark.spark
def test_bad_sql_is_rejected_by_spark_too(spark):
    """Every string test_bad_sql_raises_analysis_error uses is rejected by Spark's parser."""
    from pyspark.errors import AnalysisException, ParseException

    df = spark.createDataFrame([(1, "x", None)], "a INT, s STRING, d DATE")
    accepted = []
    for sql in BAD_SQL + BAD_LITERALS:
        if not sql.strip():
            continue  # Spark's filter("") is an error of a different kind; ferrospark rejects it too
        try:
            df.filter(sql).collect()
            accepted.append(sql)
        except (ParseException, AnalysisException):
            pass
    assert not accepted, f"Spark accepted: {accepted}"


@pytest.mark.spark
@pytest.mark.parametrize("name, build, expected", BUILDER_CASES, ids=[c[0] for c in BUILDER_CASES])
def test_str_is_spark_sql(spark, expr_file, name, build, expected):
    """str(column) must be Spark SQL text that Spark evaluates to the same rows."""
    text = str(build())
    assert _spark_ids(spark, expr_file, text) == expected, text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("134217728b", 134217728), ("128MB", 128 << 20), ("1.5g", 3 << 29), ("64k", 64 << 10), ("512", 512)],
)
def test_spark_sizes_parse_like_spark(text, expected):
    from ferrospark import _native

    assert _native.parse_byte_size(text) == expected


def test_bad_size_is_a_config_error():
    from ferrospark import _native

    with pytest.raises(fs.ConfigError):
        _native.parse_byte_size("ten parsecs")
