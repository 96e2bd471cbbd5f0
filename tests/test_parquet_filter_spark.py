"""Filters compared against PySpark: `fs.read_parquet(p, filter=f)` must return exactly the rows
of `spark.read.parquet(p).filter(f)`, for the same rows laid out four different ways on disk
(unsorted; sorted by i32 / f64 / s with page indexes, INT96 timestamps, decimals as integers,
no dictionaries, v2 pages), so that every pruning path is exercised against the same answer.

Also `ferrospark.spark.read_parquet` (fss) against Spark's own read.

Note: the Spark session of conftest.py runs with spark.sql.parquet.filterPushdown=false, because
parquet-mr's own statistics pruning drops NaN rows (see conftest.spark); Spark's row-level
filter semantics are the oracle.
"""

from __future__ import annotations

import pytest

import ferrospark as fs
from helpers import FILTER_LAYOUTS, arrow_rows, assert_same_rows, diff_rows, spark_rows

pytestmark = pytest.mark.spark

FILTERS = [
    # integers
    "i32 > 5",
    "i32 = 3",
    "i32 != 3",
    "i32 <= -1",
    "i32 >= 0 AND i32 < 4",
    "I32 < 0",
    "i32 = '3'",
    "i8 > 100",
    "i8 <= -128",
    "i16 = 32767 OR i16 = -32768",
    "i64 > 4000000000",
    "i64 < 0",
    "u32 > 3000000000",
    "u32 = 4294967295",
    "i32 > 1000",
    # doubles / floats: NaN is greater than everything and equal to itself, -0.0 = 0.0
    "f64 > 0",
    "f64 >= 1.5",
    "f64 < 0",
    "f64 = CAST('NaN' AS DOUBLE)",
    "f64 != CAST('NaN' AS DOUBLE)",
    "f64 < CAST('NaN' AS DOUBLE)",
    "f64 >= CAST('NaN' AS DOUBLE)",
    "f64 > CAST('Infinity' AS DOUBLE)",
    "f64 = CAST('-Infinity' AS DOUBLE)",
    "f64 = -0.0",
    "f64 = 0",
    "f64 < 0.0",
    "f64 <=> CAST('NaN' AS DOUBLE)",
    "f64 IN (1.5, CAST('NaN' AS DOUBLE), -0.0)",
    "f64 NOT IN (1.5, -1.5)",
    "f64 BETWEEN -1 AND 1",
    "f64 != f64",
    "f32 > 1.5",
    "f32 = CAST('NaN' AS FLOAT)",
    "f32 <= 0",
    "f32 < f64",
    "f32 = f64",
    # IN / BETWEEN / NULL handling
    "i32 IN (1, 2, NULL)",
    "i32 NOT IN (1, 2)",
    "i32 NOT IN (1, NULL)",
    "i32 BETWEEN 2 AND 4",
    "i32 NOT BETWEEN 2 AND 4",
    "i32 IS NULL",
    "s IS NOT NULL AND i32 IS NULL",
    "s <=> NULL",
    "i32 <=> 3",
    "NOT (i32 <=> NULL)",
    "NOT (i32 > 3)",
    # strings (byte order, unicode, LIKE)
    "s = 'apple'",
    "s > 'b'",
    "s < 'a'",
    "s >= 'ß'",
    "s = ''",
    "s = 'héllo'",
    "s = '😀'",
    "s IN ('apple', '日本', '')",
    "s NOT IN ('apple', 'banana')",
    "substring(s, 1, 2) IN ('ap', '日本', '', 'hé', 'ba')",
    "substring(s, 1, 1) NOT IN ('a', 'b', '%')",
    "CAST(id AS STRING) IN ("
    + ", ".join(
        f"'{i}'" for i in [0, 1, 7, 13, 42, 99, 100, 101, 150, 222, 256, 300, 333, 399, 400, 1000, 12, 77]
    )
    + ")",
    "id IN (1, 5, 17, 399, 1000)",
    "s LIKE 'a%'",
    "s LIKE '_p%'",
    r"s LIKE '%\\%%'",
    r"s LIKE 'a\\_b'",
    "s LIKE 'a_b'",
    "s LIKE '%é%'",
    "s NOT LIKE '%a%'",
    r"s = 'x\\y'",
    r"s = 'it\'s'",
    "s BETWEEN 'a' AND 'b'",
    "cat = 'b'",
    "cat IN ('a', 'd') AND s IS NOT NULL",
    # booleans
    "b",
    "NOT b",
    "b = false",
    "b IS NULL",
    "b OR i32 > 15",
    # arithmetic
    "i32 + 1 > 5",
    "i32 * 2 - 1 = 5",
    "id % 7 = 0",
    "i32 / 2 > 1.2",
    "-i32 > 2",
    "i64 + i32 > 0",
    "f64 * 2 > 3",
    # combinations across columns
    "i32 > 5 OR s = 'apple'",
    "(i32 > 5 OR f64 IS NULL) AND s IS NOT NULL",
    "i32 > 5 OR f64 > 1 AND s LIKE 'a%'",
    "NOT (i32 > 5 AND f64 > 0) OR b",
    # decimals
    "dec > 1.50",
    "dec = 12.34",
    "dec BETWEEN -1 AND 1",
    "dec IN (0, -0.01, 15)",
    "dec38 < -1",
    "dec38 >= 12345678901234567890.123",
    "dec38 = 0",
    "dec * 2 > dec38",
    # dates and timestamps
    "d = DATE '2024-02-29'",
    "d BETWEEN DATE '2024-01-01' AND DATE '2024-03-31'",
    "d < DATE '2000-01-01'",
    "d >= '2024-05-01'",
    "ts > TIMESTAMP '2024-06-01 00:00:00'",
    "ts = TIMESTAMP '2024-01-01 12:00:00'",
    "ts BETWEEN TIMESTAMP '2023-12-01 00:00:00' AND TIMESTAMP '2024-01-31 23:59:59.999999'",
    "ts_ntz < TIMESTAMP '2024-03-01 00:00:00'",
    "ts_ntz = TIMESTAMP '2024-01-01 12:00:00'",
    "CAST(ts AS DATE) = DATE '2024-01-01'",
    # nested
    "st.a > 2",
    "st.b = 'x'",
    "st.a IS NULL",
    "st IS NULL",
    "st.a = i32",
    # CAST
    "CAST(i32 AS STRING) = '3'",
    "CAST(dec AS DOUBLE) > 1.5",
    "CAST(i8 AS DOUBLE) / 3 > 10",
    "CAST(u32 AS STRING) LIKE '3%'",
    # constants
    "true",
    "false",
    "1 = 1",
]

# Filters whose evaluation raises under ANSI mode (Spark's default): ferrospark must raise
# fs.SparkArithmeticError (division by zero, overflow, invalid cast), never return rows.
ANSI_ERROR_FILTERS = [
    "i32 / 0 > 1",
    "i64 * 10000000000 > 0",
    "CAST(f64 AS INT) > 0",
    "CAST(s AS INT) > 0",
]


@pytest.fixture(scope="module")
def spark_answer(spark, filter_files):
    """filter -> (column names, normalised rows) from Spark on the unsorted layout (cached)."""
    cache: dict[str, tuple[list[str], list[tuple]]] = {}

    def fill() -> None:
        # One Spark job for all of FILTERS instead of one each: every row with each filter's
        # verdict, one character per filter (`coalesce(f, false)` keeps exactly the rows WHERE
        # keeps).
        from pyspark.sql import functions as PF

        df = spark.read.parquet(filter_files["plain"])
        n = len(df.columns)
        verdicts = PF.concat(*[PF.expr(f"IF(coalesce(({f}), false), '1', '0')") for f in FILTERS])
        rows = spark_rows(df.select("*", verdicts.alias("_verdicts")))
        for i, f in enumerate(FILTERS):
            cache.setdefault(f, (df.columns, [r[:n] for r in rows if r[n][i] == "1"]))

    def get(flt: str):
        if flt not in cache and flt in FILTERS:
            fill()
        if flt not in cache:
            df = spark.read.parquet(filter_files["plain"]).filter(flt)
            cache[flt] = (df.columns, spark_rows(df))
        return cache[flt]

    return get


def test_spark_oracle_sanity(spark, spark_answer, filter_data):
    """The oracle itself: Spark sees every row, and a few answers have the expected shape."""
    cols, rows = spark_answer("true")
    assert cols == filter_data.column_names
    assert len(rows) == filter_data.num_rows
    assert_same_rows(arrow_rows(filter_data), rows, "Spark reads the same table pyarrow wrote")
    # NaN rows are returned for `f64 > 0` (NaN is greater than everything)
    _, gt0 = spark_answer("f64 > 0")
    nan_rows = [r for r in rows if repr(r[cols.index("f64")]) == "NaN"]
    assert nan_rows and all(r in gt0 for r in nan_rows)
    # every filter selects something and not everything, for most of the list
    sizes = {f: len(spark_answer(f)[1]) for f in FILTERS}
    trivial = [f for f, n in sizes.items() if n in (0, len(rows))]
    assert len(trivial) <= 12, f"too many filters select nothing or everything: {trivial}"


@pytest.mark.parametrize("layout", list(FILTER_LAYOUTS))
@pytest.mark.parametrize("flt", FILTERS)
def test_filter_matches_spark(spark_answer, filter_files, flt, layout):
    cols, expected = spark_answer(flt)
    got = fs.read_parquet(filter_files[layout], filter=flt).read_all()
    assert got.column_names == cols
    assert_same_rows(expected, arrow_rows(got), f"[{layout}] filter {flt!r}")


_NO_PUSHDOWN = {"spark.sql.parquet.filterPushdown": "false"}


@pytest.mark.parametrize("codes", ["true", "false"])
@pytest.mark.parametrize("flt", FILTERS)
def test_dictionary_codes_match_spark(spark_answer, filter_files, flt, codes):
    """Without pushdown no page is pruned, so every dictionary-encoded first filter column is
    decided on its codes (or not, with the switch off): both must be Spark's answer."""
    cols, expected = spark_answer(flt)
    session = fs.Session({**_NO_PUSHDOWN, "ferrospark.scan.dictionaryCodeFilter": codes})
    scan = fs.scan_parquet(filter_files["plain"], filter=flt, session=session)
    got = scan.read_all()
    assert got.column_names == cols
    assert_same_rows(expected, arrow_rows(got), f"[codes={codes}] filter {flt!r}")
    if codes == "false":
        assert scan.metrics()["row_groups_filtered_by_codes"] == 0


def test_dictionary_codes_decide_many_filters(filter_files):
    session = fs.Session(_NO_PUSHDOWN)
    used = []
    for f in FILTERS:
        scan = fs.scan_parquet(filter_files["plain"], filter=f, session=session)
        scan.read_all()
        if scan.metrics()["row_groups_filtered_by_codes"] > 0:
            used.append(f)
    assert len(used) >= 20, used


@pytest.mark.parametrize(
    "flt",
    [
        "i32 > 5",
        "f64 >= CAST('NaN' AS DOUBLE)",
        "s LIKE 'a%' AND d < DATE '2024-03-01'",
        "st.a IS NULL OR dec38 < 0",
    ],
)
def test_filter_with_projection_matches_spark(spark, filter_files, flt):
    cols = ["s", "id", "f64"]
    expected = spark_rows(spark.read.parquet(filter_files["plain"]).filter(flt).select(*cols))
    for layout in FILTER_LAYOUTS:
        got = fs.read_parquet(filter_files[layout], columns=cols, filter=flt).read_all()
        assert got.column_names == cols
        assert_same_rows(expected, arrow_rows(got), f"[{layout}] filter {flt!r} columns {cols}")


@pytest.mark.parametrize("flt", ANSI_ERROR_FILTERS)
def test_ansi_errors_like_spark(spark, filter_files, flt):
    df = spark.read.parquet(filter_files["plain"]).filter(flt)
    with pytest.raises(Exception) as spark_err:
        df.collect()
    assert any(
        k in str(spark_err.value)
        for k in ("DIVIDE_BY_ZERO", "ARITHMETIC_OVERFLOW", "CAST_OVERFLOW", "CAST_INVALID_INPUT")
    ), spark_err.value
    with pytest.raises(fs.SparkArithmeticError):
        fs.read_parquet(filter_files["plain"], filter=flt).read_all()


# ------------------------------------------------------------------------------------------
# ferrospark on Spark
# ------------------------------------------------------------------------------------------

FSS_FILTERS = [
    None,
    "i32 > 5",
    "f64 > 0",
    "s LIKE 'a%' OR cat = 'b'",
    "st.a > 2 AND d >= DATE '2024-03-01'",
    "ts > TIMESTAMP '2024-06-01 00:00:00' OR ts_ntz IS NULL",
    "i32 NOT IN (1, NULL)",
]


def _fss():
    from ferrospark import spark as fss

    return fss


def _field_types(df):
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def test_fss_schema_is_sparks(spark, filter_files):
    fss = _fss()
    ours = fss.read_parquet(spark, filter_files["plain"])
    theirs = spark.read.parquet(filter_files["plain"])
    assert _field_types(ours) == _field_types(theirs)


@pytest.mark.parametrize("flt", FSS_FILTERS, ids=str)
def test_fss_matches_spark(spark, spark_answer, filter_files, flt):
    fss = _fss()
    ours = fss.read_parquet(spark, filter_files["plain"], filter=flt)
    # Spark's rows of the plain layout, shared with the tests above (no filter: "true", every
    # row, as test_spark_oracle_sanity checks).
    columns, expected = spark_answer("true" if flt is None else flt)
    assert ours.columns == columns
    assert_same_rows(expected, spark_rows(ours), f"fss filter {flt!r}")


def test_fss_every_layout_same_rows(spark, filter_files):
    fss = _fss()
    flt = "f64 > 1 OR s LIKE '%a%' OR d < DATE '2024-01-01'"
    expected = spark_rows(
        spark.read.parquet(filter_files["plain"]).filter(flt).select("id", "f64", "s", "d", "st")
    )
    for layout, path in filter_files.items():
        got = spark_rows(fss.read_parquet(spark, path, filter=flt).select("id", "f64", "s", "d", "st"))
        assert_same_rows(expected, got, f"fss [{layout}]")


def test_fss_with_columns_and_column_filter(spark, filter_files):
    fss = _fss()
    ours = fss.read_parquet(
        spark,
        filter_files["sorted_i32"],
        columns=["s", "id"],
        filter=(fs.col("i32") > 3) & fs.col("s").is_not_null(),
    )
    theirs = spark.read.parquet(filter_files["plain"]).filter("i32 > 3 AND s IS NOT NULL").select("s", "id")
    assert ours.columns == ["s", "id"]
    assert_same_rows(spark_rows(theirs), spark_rows(ours), "fss columns+Column filter")


def test_fss_list_of_files(spark, filter_files):
    fss = _fss()
    paths = [filter_files["plain"], filter_files["sorted_s"]]
    ours = fss.read_parquet(spark, paths, filter="i32 = 3").select("id", "s", "f64")
    theirs = spark.read.parquet(filter_files["plain"]).filter("i32 = 3").select("id", "s", "f64")
    expected = spark_rows(theirs) * 2
    assert_same_rows(expected, spark_rows(ours), "fss list of files")


def test_fss_composes_with_spark(spark, filter_files):
    fss = _fss()
    ours = fss.read_parquet(spark, filter_files["plain"], filter="i32 IS NOT NULL")
    theirs = spark.read.parquet(filter_files["plain"]).filter("i32 IS NOT NULL")
    agg = "cat, count(*) AS n, sum(i32) AS s, max(f64) AS mx"
    assert_same_rows(
        spark_rows(theirs.groupBy("cat").agg({"*": "count", "i32": "sum", "f64": "max"})),
        spark_rows(ours.groupBy("cat").agg({"*": "count", "i32": "sum", "f64": "max"})),
        agg,
    )


@pytest.mark.parametrize(
    "flt", [None, "year = 2023", "region = 'eu' AND amount > 5", "year = 2022 OR tag IS NULL"], ids=str
)
def test_fss_hive_partitioned(spark, hive_dir, flt):
    fss = _fss()
    root, _ = hive_dir
    ours = fss.read_parquet(spark, root, filter=flt)
    theirs = spark.read.parquet(root)
    if flt is not None:
        theirs = theirs.filter(flt)
    assert _field_types(ours) == _field_types(theirs)
    assert_same_rows(spark_rows(theirs), spark_rows(ours), f"fss hive {flt!r}")


def test_fs_hive_partitioned_matches_spark(spark, hive_dir):
    root, _ = hive_dir
    for flt in [
        "year = 2023",
        "region > 'eu'",
        "year = 2022 AND tag = 't1'",
        "CAST(year AS STRING) = '2022'",
    ]:
        theirs = spark.read.parquet(root).filter(flt)
        got = fs.read_parquet(root, filter=flt).read_all()
        assert got.column_names == theirs.columns
        d = diff_rows(spark_rows(theirs), arrow_rows(got))
        assert d is None, f"hive filter {flt!r}: {d}"
