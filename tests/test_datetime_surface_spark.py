"""Date and timestamp SQL surface against PySpark, in a zone with daylight saving time.

Both engines run with ANSI on and the session time zone ``America/Los_Angeles`` (the setting
of Spark's own golden SQL tests), so differences across a daylight-saving change show. Covered:
``TIMESTAMP_LTZ`` / ``TIMESTAMP_NTZ`` typed literals; date and timestamp arithmetic with a
string or NULL on the other side (Spark reads the string as the other side's type) and
timestamp differences on the local clock; ``timestampdiff`` and its other names in every unit,
months, quarters and years included; ``timestamp_seconds`` of fractional numbers,
``timestamp_millis``, ``timestamp_micros``; ``to_timestamp`` of a number and of zone names;
and the errors Spark raises for each (error classes compared).

Every expected value comes from Spark at test time.
"""

from __future__ import annotations

import re

import pytest

import ferrospark as fs
from ferrospark import functions as F
from helpers import arrow_rows, spark_rows

ZONE = "America/Los_Angeles"

#: One-row expressions whose value (and NULL-ness) must equal Spark's.
VALUES = [
    # typed literals
    "timestamp_ltz'2011-11-11 12:12:12'",
    'timestamp_ltz"2015-07-23 12:12:12"',
    "timestamp_ntz'2011-11-11 12:12:12'",
    "dayofweek(timestamp_ltz'1582-10-15 13:10:15')",
    "year(timestamp_ntz'1582-10-15 13:10:15')",
    "date_add(timestamp_ltz'2011-11-11 12:12:12', 1)",
    "next_day(timestamp_ltz\"2015-07-23 12:12:12\", 'Mon')",
    "date'2015-1-1'",
    # a string or NULL beside a date or timestamp
    "date '2001-10-01' - '2001-09-28'",
    "'2001-10-01' - date '2001-09-28'",
    "date '2001-09-28' - null",
    "null - date '2019-10-06'",
    "date'2011-11-11' + null",
    "null + date'2011-11-11'",
    "date'2011-11-11' + 1Y",
    "2S + date'2011-11-11'",
    "timestamp'2011-11-11 11:11:11' - '2011-11-11 11:11:10'",
    "'2011-11-11 11:11:11' - timestamp'2011-11-11 11:11:10'",
    "timestamp'2011-11-11 11:11:11' - null",
    "null - timestamp'2011-11-11 11:11:11'",
    # to_timestamp_ntz / to_timestamp_ltz: a cast without a pattern, a parse with one
    "to_timestamp_ntz('2016-12-31 00:12:00')",
    "to_timestamp_ntz('2016-12-31', 'yyyy-MM-dd')",
    "to_timestamp_ntz(timestamp'2019-11-03 01:30:00')",
    "to_timestamp_ntz(NULL)",
    "to_timestamp_ltz('2016-12-31 00:12:00')",
    "to_timestamp_ltz('31/12/2016 10', 'dd/MM/yyyy HH')",
    "to_timestamp_ltz(timestamp_ntz'2019-03-10 12:00:00')",
    # Java's text, quarter, week and zone letters, before and after a daylight-saving change
    # and in local mean time (Los Angeles before 1883: -07:52:58)
    "date_format(timestamp'1996-03-31 07:03:33.123', 'G GG GGG GGGG Q QQ QQQ QQQQ F')",
    "date_format(timestamp'2019-07-31 09:33:33', 'z zz zzz zzzz O OOOO')",
    "date_format(timestamp'1582-05-31 19:40:35.123', 'z zzzz O OOOO Z ZZZZ ZZZZZ')",
    "date_format(timestamp'1582-05-31 19:40:35.123', 'x xx xxx xxxx xxxxx X XXXX XXXXX')",
    "date_format(timestamp'2019-12-31 09:33:33', 'qqqq qqq F X XX XXXX XXXXX ZZZZ')",
    "to_char(date'2100-01-01', 'F QQQQ GGGG')",
    # Spark 4.3: a NULL timestamp (Spark's golden files, from an older Spark, show an error)
    "timestamp'2011-11-11 11:11:11' + null",
    "null + timestamp'2011-11-11 11:11:11'",
    "timestamp_ntz'2011-11-11 11:11:11' + null",
    # differences of timestamps read on the local clock (daylight saving ends 2019-11-03)
    "date'2020-01-01' - timestamp'2019-10-06 10:11:12.345678'",
    "timestamp'2019-10-06 10:11:12.345678' - date'2020-01-01'",
    "timestamp'2019-11-03 12:00:00' - timestamp'2019-11-02 12:00:00'",
    "timestamp'2019-03-10 12:00:00' - date'2019-03-10'",
    "timestamp_ntz'2019-11-03 12:00:00' - timestamp_ntz'2019-11-02 12:00:00'",
    "timestamp_ntz'2019-11-03 12:00:00' - date'2019-11-02'",
    # timestampdiff and its other names, by unit
    "timestampdiff(MONTH, timestamp'2022-02-14 01:02:03', timestamp'2022-01-14 01:02:03')",
    "timestampdiff(MONTH, timestamp'2022-01-31 10:00:00', timestamp'2022-02-28 09:59:59')",
    "timestampdiff(MONTH, timestamp'2022-01-31 10:00:00', timestamp'2022-03-31 10:00:00')",
    "timestampdiff(MONTH, timestamp'2022-03-31 10:00:00', timestamp'2022-01-31 10:00:01')",
    "timestampdiff(YEAR, date'2022-02-15', date'2023-02-15')",
    "timestampdiff(YEAR, date'2020-02-29', date'2021-02-28')",
    "timestampdiff(YEAR, date'2023-02-15', date'2020-02-16')",
    "date_diff(MONTH, timestamp'2022-02-25 01:02:03', timestamp'2022-01-25 01:02:03')",
    "datediff(QUARTER, date'2022-02-25', date'2023-05-25')",
    "date_diff(YEAR, date'2022-02-25', date'2023-02-25')",
    "timediff(QUARTER, timestamp'2023-08-10 01:02:03', timestamp'2022-01-14 01:02:03')",
    "timediff(HOUR, timestamp'2022-02-14 01:02:03', timestamp'2022-02-14 12:00:03')",
    "timediff(DAY, date'2022-02-15', date'2023-02-15')",
    "timediff(SECOND, date'2022-02-15', timestamp'2022-02-14 23:59:59')",
    "timestampdiff(HOUR, timestamp'2019-11-02 12:00:00', timestamp'2019-11-03 12:00:00')",
    "timestampdiff(DAY, timestamp'2019-11-02 12:00:00', timestamp'2019-11-03 11:59:59')",
    "timestampdiff(WEEK, date'2022-01-01', date'2022-03-01')",
    "timestampdiff(MILLISECOND, timestamp'2022-02-25 01:02:03.456', timestamp'2022-02-25 01:02:03.455')",
    "timestampdiff(MICROSECOND, timestamp'2022-02-25 01:02:03.456', timestamp'2022-02-25 01:02:04')",
    "timestampdiff(minute, timestamp_ntz'2022-02-14 01:02:03', timestamp'2022-02-14 02:00:03')",
    "timestampdiff(MONTH, null, timestamp'2022-01-14 01:02:03')",
    "timestampdiff(YEAR, '2020-01-01', '2024-12-31 23:59:59')",
    # timestamps from counts since the epoch
    "timestamp_seconds(1.23)",
    "timestamp_seconds(1.23d)",
    "timestamp_seconds(float(1.23))",
    "timestamp_seconds(-1.5d)",
    "timestamp_seconds(0.1234567d)",
    "timestamp_seconds(float(0.1234567))",
    "timestamp_seconds(cast(null as double))",
    "timestamp_seconds(cast('NaN' as double))",
    "timestamp_seconds(1230219000)",
    "timestamp_seconds(-12.5BD)",
    "timestamp_millis(1230219000123)",
    "timestamp_millis(-1230219000123)",
    "timestamp_millis(null)",
    "timestamp_micros(1230219000123123)",
    "timestamp_micros(-1230219000123123)",
    "timestamp_micros(7Y)",
    # to_timestamp of a number, and of zone names
    "to_timestamp(1)",
    "to_timestamp(1.5)",
    "to_timestamp('2019-10-06 10:11:12.123UTC', 'yyyy-MM-dd HH:mm:ss.SSSSSS[zzz]')",
    "to_timestamp('2019-10-06 10:11:12.12345CST', 'yyyy-MM-dd HH:mm:ss.SSSSSS[zzz]')",
    "to_timestamp('2019-10-06 10:11:12.123456PST', 'yyyy-MM-dd HH:mm:ss.SSSSSS[zzz]')",
    "to_timestamp('2019-12-06 10:11:12EST', 'yyyy-MM-dd HH:mm:ss[zzz]')",
    "to_timestamp('2019-10-06 10:11:12', 'yyyy-MM-dd HH:mm:ss[zzz]')",
    # a calendar interval (make_interval) added to a date or a timestamp: months, then days in
    # the local time (across a DST change), then the time part
    "timestamp'2020-01-31 10:00:00' + make_interval(0, 1, 0, 2, 3, 4, 5.5)",
    "timestamp'2020-03-07 12:00:00' + make_interval(0, 0, 0, 1)",
    "timestamp'2020-03-08 12:00:00' - make_interval(0, 0, 0, 0, 24)",
    "make_interval(1, 1) + timestamp'2024-02-29 00:00:00'",
    "timestamp_ntz'2020-03-07 12:00:00' + make_interval(0, 0, 0, 1, 1)",
    "date'2020-01-31' + make_interval(0, 1, 0, 1)",
    "date'2020-03-31' - make_interval(0, 1)",
]

#: Expressions Spark refuses, with the error class it names (None: an error without a class,
#: such as Java's ArithmeticException; any refusal matches).
ERRORS = [
    ("date'015'", "INVALID_TYPED_LITERAL"),
    ("date_add('2011-11-11', 1L)", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("date_sub('2011-11-11', 1.5)", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("date '2011-11-11' + 1E1", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("date '2011-11-11' + 1L", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("date'2011-11-11' + '1'", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("'1' + date'2011-11-11'", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
    ("timestamp'2011-11-11 11:11:11' + '1'", "DATATYPE_MISMATCH.BINARY_OP_WRONG_TYPE"),
    ("'1' + timestamp'2011-11-11 11:11:11'", "DATATYPE_MISMATCH.BINARY_OP_WRONG_TYPE"),
    ("timestamp'2011-11-11 11:11:11' + true", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES"),
    ("CAST(NULL AS INT) + timestamp'2011-11-11 11:11:11'", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES"),
    (
        "timestampdiff('MINUTE', timestamp'2022-02-14 01:02:03', timestamp'2022-02-14 02:00:03')",
        "INVALID_PARAMETER_VALUE.DATETIME_UNIT",
    ),
    ("timediff('YEAR', date'2020-02-15', date'2023-02-15')", "INVALID_PARAMETER_VALUE.DATETIME_UNIT"),
    ("datediff('YEAR', date'2022-02-25', date'2023-02-25')", "INVALID_PARAMETER_VALUE.DATETIME_UNIT"),
    ("date_add('QUARTER', 5, date'2022-02-25')", "INVALID_PARAMETER_VALUE.DATETIME_UNIT"),
    (
        "dateadd('MICROSECOND', 1001, timestamp'2022-02-25 01:02:03.123')",
        "INVALID_PARAMETER_VALUE.DATETIME_UNIT",
    ),
    ("timestampadd('SECOND', -1, date'2022-02-15')", "INVALID_PARAMETER_VALUE.DATETIME_UNIT"),
    ("timestampdiff(DAYOFYEAR, date'2022-01-01', date'2022-03-01')", "INVALID_PARAMETER_VALUE.DATETIME_UNIT"),
    (
        "to_timestamp('22 05 2020 Friday', 'dd MM yyyy EEEEE')",
        "INCONSISTENT_BEHAVIOR_CROSS_VERSION.DATETIME_PATTERN_RECOGNITION",
    ),
    (
        "to_timestamp('22 05 2020 Friday', 'dd MM yyyy EEEEEE')",
        "INCONSISTENT_BEHAVIOR_CROSS_VERSION.DATETIME_PATTERN_RECOGNITION",
    ),
    (
        "to_date('26/October/2015', 'dd/MMMMM/yyyy')",
        "INCONSISTENT_BEHAVIOR_CROSS_VERSION.DATETIME_PATTERN_RECOGNITION",
    ),
    (
        "to_timestamp('2019-10-06 A', 'yyyy-MM-dd GGGGG')",
        "INCONSISTENT_BEHAVIOR_CROSS_VERSION.DATETIME_PATTERN_RECOGNITION",
    ),
    ("timestamp_seconds(1230219000123123)", None),
    ("timestamp_seconds(-1230219000123123)", None),
    ("timestamp_seconds(0.1234567)", None),
    ("timestamp_millis(92233720368547758)", None),
    ("timestamp_millis(1.5)", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"),
]


@pytest.fixture(scope="module")
def engines(spark):
    """(ferrospark session, PySpark session), both in ``ZONE`` with ANSI on."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    spark.conf.set("spark.sql.ansi.enabled", "true")
    s = fs.Session()
    s.set("spark.sql.session.timeZone", ZONE)
    s.set("spark.sql.ansi.enabled", "true")
    yield s, spark
    spark.conf.set("spark.sql.session.timeZone", before)


@pytest.fixture(scope="module")
def spark_values(engines):
    """Spark's value of every expression of ``VALUES``, in one query."""
    _, spark = engines
    items = ", ".join(f"{e} AS c{i}" for i, e in enumerate(VALUES))
    (row,) = spark_rows(spark.sql(f"SELECT {items}"))
    return row


@pytest.mark.parametrize("i", range(len(VALUES)), ids=VALUES)
def test_value_matches_spark(engines, spark_values, i):
    s, _ = engines
    (row,) = arrow_rows(s.sql(f"SELECT {VALUES[i]} AS r").toArrow())
    assert row[0] == spark_values[i], f"{VALUES[i]}: ferrospark {row[0]!r}, Spark {spark_values[i]!r}"


def _error_class(message: str) -> str | None:
    m = re.search(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]", message)
    return m.group(1) if m else None


@pytest.mark.parametrize(("sql", "error"), ERRORS, ids=[e for e, _ in ERRORS])
def test_error_matches_spark(engines, sql, error):
    s, spark = engines
    with pytest.raises(Exception) as spark_error:  # noqa: PT011 - any of PySpark's errors
        spark.sql(f"SELECT {sql}").collect()
    with pytest.raises(Exception) as ours:  # noqa: PT011 - the class is compared below
        s.sql(f"SELECT {sql}").toArrow()
    if error is not None:
        assert _error_class(str(spark_error.value)) == error, str(spark_error.value)
        assert _error_class(str(ours.value)) == error, str(ours.value)


def test_to_timestamp_ntz_and_ltz_functions_match_spark(engines):
    """``F.to_timestamp_ntz`` / ``F.to_timestamp_ltz`` over a column with NULLs, the pattern a
    column (PySpark reads a ``str`` format as a column name)."""
    s, spark = engines
    from pyspark.sql import functions as SF

    rows = [("2016-12-31 00:12:00", "2016-12-31", "yyyy-MM-dd"), (None, "2019-11-03", "yyyy-MM-dd")]
    schema = "t string, d string, f string"
    outs = []
    for mod, session in ((F, s), (SF, spark)):
        df = session.createDataFrame(rows, schema)
        out = df.select(
            mod.to_timestamp_ntz("t").alias("a"),
            mod.to_timestamp_ntz("d", "f").alias("b"),
            mod.to_timestamp_ltz(mod.col("t")).alias("c"),
            mod.to_timestamp_ltz("d", mod.lit("yyyy-MM-dd")).alias("e"),
        )
        outs.append(out)
    got, expected = arrow_rows(outs[0].toArrow()), spark_rows(outs[1])
    assert sorted(got, key=repr) == sorted(expected, key=repr)


def test_dataframe_functions_match_spark(engines):
    """``F.timestamp_millis`` / ``F.timestamp_micros`` / ``F.timestamp_diff`` in months, over
    a column with NULLs."""
    s, spark = engines
    from pyspark.sql import functions as SF

    rows = [
        (1230219000123, "2022-01-31 10:00:00", "2022-02-28 09:59:59"),
        (None, None, "2022-03-01 00:00:00"),
    ]
    schema = "n bigint, a string, b string"
    ours = s.createDataFrame(rows, schema)
    theirs = spark.createDataFrame(rows, schema)

    def query(df, f):
        a, b = f.col("a").cast("timestamp"), f.col("b").cast("timestamp")
        return df.select(
            f.timestamp_millis("n").alias("ms"),
            f.timestamp_micros("n").alias("us"),
            f.timestamp_diff("MONTH", a, b).alias("months"),
            f.timestamp_diff("QUARTER", b, a).alias("quarters"),
        )

    assert arrow_rows(query(ours, F).toArrow()) == spark_rows(query(theirs, SF))
