"""The names of ``pyspark.sql.functions`` that ``ferrospark.functions`` provides, against PySpark.

Each family of wrappers (strings, math and bits, predicates and calls by name, dates and times,
aggregates) is evaluated over one small table (NULLs, NaN, -0.0, infinities, unicode and emoji,
empty strings and bytes, pre-1970 dates and timestamps, microseconds) in one query per engine.
Every result column must have Spark's generated name, Spark's Arrow type (as PySpark's
``toArrow`` gives it) and Spark's values. What still differs is listed in ``KNOWN_GAPS`` with
its reason; a gap that gets fixed fails the run until it leaves the list.

The clock functions cannot compare values: their names, types and properties are checked.
``test_every_pyspark_name_is_provided`` keeps the list of names not provided yet honest: it
fails when a listed name appears, and when a name outside the lists goes missing.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import warnings
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import ferrospark as fs
from ferrospark import functions as F
from ferrospark.errors import AnalysisError
from helpers import arrow_rows, assert_both_refuse, type_diff

# --------------------------------------------------------------------------------------------
# which names: excluded families, names still missing
# --------------------------------------------------------------------------------------------

#: Families of ``pyspark.sql.functions`` that ferrospark does not provide, by the project's
#: decision (docs/queries.md, "Functions not provided"): glob pattern -> reason.
EXCLUDED_FAMILIES: dict[str, str] = {
    "*variant*": "VARIANT: Spark's semi-structured binary type has no Arrow form here",
    "parse_json": "VARIANT: parses JSON into a VARIANT",
    "try_parse_json": "VARIANT: parses JSON into a VARIANT",
    "to_variant_object": "VARIANT",
    "*xml*": "XML: Spark's XML expressions and data source are not part of the engine",
    "xpath*": "XML: XPath over XML text",
    "st_*": "geospatial: Spark's GEOMETRY / GEOGRAPHY types are not supported",
    "hll_*": "sketches: the DataSketches binary formats are not reproduced",
    "kll_*": "sketches: the DataSketches binary formats are not reproduced",
    "theta_*": "sketches: the DataSketches binary formats are not reproduced",
    "tuple_*": "sketches: the DataSketches binary formats are not reproduced",
    "bitmap_*": "sketches: Spark's bitmap aggregates over its own binary format",
    "count_min_sketch": "sketches: Spark's serialized CountMinSketch",
    "reflect": "JVM reflection: calls Java methods, there is no JVM here",
    "try_reflect": "JVM reflection: calls Java methods, there is no JVM here",
    "java_method": "JVM reflection: calls Java methods, there is no JVM here",
    "vector_*": "vectors: Spark's ML vector functions",
    "collate": "collations: strings compare by their UTF-8 bytes only",
    "collation": "collations: strings compare by their UTF-8 bytes only",
}

#: Names ferrospark's SQL does not evaluate yet, so ``ferrospark.functions`` has no wrapper.
#: This list may only shrink: the test fails when one of them appears in ferrospark.functions.
MISSING: frozenset[str] = frozenset(
    # Python table functions
    "udtf arrow_udtf".split()
    # dates, times and timestamps
    + "timestamp_nanos unix_nanos".split()
    # the TIME type
    + "current_time make_time time_bucket time_diff time_from_micros time_from_millis".split()
    + "time_from_seconds time_to_micros time_to_millis time_to_seconds time_trunc".split()
    + "to_time try_to_time".split()
    # input files
    + "input_file_name input_file_block_length input_file_block_start".split()
    # other
    + "unwrap_udt".split()
)


def _excluded(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in EXCLUDED_FAMILIES)


def _pyspark_names() -> set[str]:
    import pyspark.sql.functions as P

    return {
        n
        for n in dir(P)
        if not n.startswith("_")
        and callable(getattr(P, n))
        and getattr(getattr(P, n), "__module__", "").startswith("pyspark.sql.functions")
    }


def test_every_pyspark_name_is_provided():
    """Every function of ``pyspark.sql.functions`` outside the excluded families is in
    ``ferrospark.functions``, except those of ``MISSING`` (which must really be missing)."""
    pyspark_names = _pyspark_names()
    ours = {n for n in dir(F) if not n.startswith("_")}
    wanted = {n for n in pyspark_names if not _excluded(n)}
    now_provided = sorted(MISSING & ours)
    assert not now_provided, f"provided now, remove them from MISSING: {now_provided}"
    not_pyspark = sorted(MISSING - pyspark_names)
    assert not not_pyspark, f"MISSING lists names PySpark does not have: {not_pyspark}"
    absent = sorted(wanted - ours - MISSING)
    assert not absent, f"pyspark.sql.functions names missing from ferrospark.functions: {absent}"
    assert not (MISSING & {n for n in pyspark_names if _excluded(n)}), "a name both excluded and missing"


def test_new_wrappers_keep_pysparks_signatures():
    """Argument names, order and defaults as PySpark's (so keyword calls work the same)."""
    import inspect

    import pyspark.sql.functions as P

    for name in sorted(NEW_NAMES):
        ours = inspect.signature(getattr(F, name))
        theirs = inspect.signature(getattr(P, name))
        got = [(p.name, p.kind, p.default) for p in ours.parameters.values()]
        want = [(p.name, p.kind, p.default) for p in theirs.parameters.values()]
        assert got == want, f"{name}: {ours} vs PySpark's {theirs}"


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------

UTC = dt.timezone.utc
NAN = float("nan")
INF = float("inf")


def _ts(*a: int) -> dt.datetime:
    return dt.datetime(*a, tzinfo=UTC)


# name, Arrow type, Spark DDL type, values (row k has id k)
# fmt: off
COLUMNS: list[tuple[str, pa.DataType, str, list]] = [
    ("id", pa.int64(), "bigint", list(range(10))),
    ("k", pa.int32(), "int", [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]),
    ("s", pa.string(), "string",
     [None, "", "abc", "Ünïcödé", "日本語テキスト", "emoji 😀 here", "A_c%", "hello world", "ABC", "a%b"]),
    ("t", pa.string(), "string", [None, "", "ab", "ö", "語", "😀", "A_", "world", "", "%b"]),
    ("p", pa.string(), "string",
     ["a%", "%", "a%", "%Ö%", "日本%", "%😀%", "A\\_c\\%", "h_llo%", "abc", "%\\%%"]),
    ("bn", pa.binary(), "binary",
     [None, b"", b"abc", b"\x00\xff", "日本".encode(), b"a", b"\x80", b"hello", b"ABC", b"a%b"]),
    ("x", pa.float64(), "double", [None, 0.0, -0.0, NAN, 1.5, -2.5, INF, -INF, 180.0, 1e-5]),
    ("y", pa.float64(), "double", [None, -0.0, 0.0, NAN, 1.5, None, INF, 3.0, 180.0, 2e-5]),
    ("q", pa.int32(), "int", [None, 0, 1, -1, 7, 31, 2147483647, -2147483647, 100, 5]),
    ("l", pa.int64(), "bigint", [None, 0, 1, -1, 2**40, -(2**40), 2**63 - 1, -(2**63), 12345, 5]),
    ("b", pa.bool_(), "boolean", [None, True, None, None, False, True, True, True, False, False]),
    ("cst", pa.int32(), "int", [7, 7, None, None, -1, -1, 0, 0, 9, 9]),
    ("av", pa.int32(), "int", [None, 5, None, None, 3, None, None, 8, 2, 2]),
    ("days", pa.int32(), "int", [None, 0, -1, 19782, -719162, 2932896, 365, -365, 11016, 1]),
    ("d", pa.date32(), "date",
     [None, dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1969, 12, 31), dt.date(1900, 3, 1),
      dt.date(2038, 1, 19), dt.date(1600, 2, 29), dt.date(2023, 12, 31), dt.date(2000, 1, 1), dt.date(2024, 1, 1)]),
    ("d2", pa.date32(), "date",
     [dt.date(2024, 1, 1), None, dt.date(2024, 3, 1), dt.date(1970, 1, 1), dt.date(2000, 2, 29),
      dt.date(1970, 1, 1), dt.date(1600, 3, 1), dt.date(2023, 1, 1), dt.date(2000, 1, 1), dt.date(1999, 12, 31)]),
    ("ts", pa.timestamp("us", tz="UTC"), "timestamp",
     [None, _ts(1970, 1, 1), _ts(2024, 2, 29, 23, 59, 59, 999999), _ts(1969, 12, 31, 23, 59, 59, 500000),
      _ts(1900, 1, 1, 0, 0, 0, 1), _ts(2038, 1, 19, 3, 14, 8), _ts(2023, 1, 31, 12, 34, 56, 123456),
      _ts(1969, 12, 31, 23, 59, 59, 999999), _ts(2000, 2, 29, 6, 7, 8), _ts(2024, 12, 31, 23, 0, 0)]),
    ("ts2", pa.timestamp("us", tz="UTC"), "timestamp",
     [_ts(2024, 1, 1), None, _ts(2024, 3, 1), _ts(1970, 1, 1), _ts(1901, 1, 1), _ts(2038, 1, 19, 3, 14, 7),
      _ts(2023, 3, 31, 12, 34, 56, 123455), _ts(1970, 1, 1), _ts(2000, 2, 29, 6, 7, 8), _ts(2020, 12, 31)]),
    ("secs", pa.int64(), "bigint",
     [None, 0, -1, 1709251199, 86400, 2147483648, -3155760000, 1000000000, -86401, 59]),
    ("fsecs", pa.float64(), "double", [None, 0.0, -0.0, 1.5, -0.5, 1e9 + 0.123456, 1.0000005, 59.999999, -1e-6, 2.5]),
    ("tss", pa.string(), "string",
     [None, "2024-02-29 12:34:56", "1969-12-31 23:59:59", "1970-01-01 00:00:00", "2038-01-19 03:14:08",
      "1900-01-01 00:00:00", "2000-02-29 06:07:08", "2023-12-31 23:59:59", "1999-12-31 00:00:00", "2024-01-01 00:00:01"]),
    ("ds", pa.string(), "string",
     [None, "2024-02-29", "1969-12-31", "1970-01-01", "2038-01-19", "1900-01-01", "2000-02-29", "2023-12-31",
      "1999-12-31", "2024-01-01"]),
]
# fmt: on

SPARK_DDL = ", ".join(f"{name} {ddl}" for name, _, ddl, _ in COLUMNS)
N_ROWS = 10


def make_table() -> pa.Table:
    return pa.table({name: pa.array(vals, typ) for name, typ, _, vals in COLUMNS})


# --------------------------------------------------------------------------------------------
# the families: label -> build(F) returning one column; the same code runs on both engines
# --------------------------------------------------------------------------------------------

Build = Callable[[Any], Any]

TEXT: dict[str, Build] = {
    "bit_length(s)": lambda F: F.bit_length("s"),
    "octet_length(s)": lambda F: F.octet_length("s"),
    "bit_length(bn)": lambda F: F.bit_length(F.col("bn")),
    "octet_length(bn)": lambda F: F.octet_length("bn"),
    "contains(s, t)": lambda F: F.contains("s", "t"),
    "contains(s, lit)": lambda F: F.contains(F.col("s"), F.lit("c")),
    "contains(bn, bn)": lambda F: F.contains("bn", F.lit(b"b")),
    "startswith(s, t)": lambda F: F.startswith("s", "t"),
    "startswith(s, lit)": lambda F: F.startswith("s", F.lit("")),
    "endswith(s, t)": lambda F: F.endswith("s", "t"),
    "endswith(bn, lit)": lambda F: F.endswith("bn", F.lit(b"c")),
    "like(s, p)": lambda F: F.like("s", "p"),
    "like(s, lit)": lambda F: F.like("s", F.lit("%c%")),
    "like(s, p, escape)": lambda F: F.like("s", "p", F.lit("\\")),
    "ilike(s, p)": lambda F: F.ilike("s", "p"),
    "ilike(s, lit)": lambda F: F.ilike("s", F.lit("a%")),
    "try_to_binary(s, base64)": lambda F: F.try_to_binary("s", F.lit("base64")),
    "try_to_binary(s)": lambda F: F.try_to_binary(F.col("s")),
    "to_number(q, S9)": lambda F: F.to_number(F.col("q").cast("string"), F.lit("S9999999999")),
    "to_number(lit, PR)": lambda F: F.to_number(F.lit("<12,454.8>"), F.lit("99,999.9PR")),
    "try_to_number(s, 9,999)": lambda F: F.try_to_number("s", F.lit("9,999")),
    "try_to_number(l, $)": lambda F: F.try_to_number(
        F.concat(F.lit("$"), F.col("l")), F.lit("$9999999999999D99")
    ),
    "format_string(s, q, x, l)": lambda F: F.format_string("%s|%5d|%.2f|%x|%-4s|", "s", "q", "x", "l", "b"),
    "format_string(index)": lambda F: F.format_string("%2$s %1$s %<s %3$,d", "s", "t", "l"),
    "printf(lit, t, b, k)": lambda F: F.printf(F.lit("%S-%b-%c-%08.3e"), "t", "b", F.col("k") + 65, "y"),
}

MATH: dict[str, Build] = {
    "negate(x)": lambda F: F.negate("x"),
    "negate(q)": lambda F: F.negate(F.col("q")),
    "negate(l + 1)": lambda F: F.negate(F.col("k") + 1),
    "toDegrees(x)": lambda F: F.toDegrees("x"),
    "toRadians(x)": lambda F: F.toRadians("x"),
    "shiftLeft(q, 3)": lambda F: F.shiftLeft("q", 3),
    "shiftLeft(l, 65)": lambda F: F.shiftLeft("l", 65),
    "shiftRight(q, 1)": lambda F: F.shiftRight("q", 1),
    "shiftRight(l, 40)": lambda F: F.shiftRight(F.col("l"), 40),
    "shiftRightUnsigned(q, 1)": lambda F: F.shiftRightUnsigned("q", 1),
    "shiftRightUnsigned(l, 60)": lambda F: F.shiftRightUnsigned("l", 60),
    "bitwiseNOT(q)": lambda F: F.bitwiseNOT("q"),
    "bitwiseNOT(l)": lambda F: F.bitwiseNOT(F.col("l")),
}

MISC: dict[str, Build] = {
    "equal_null(x, y)": lambda F: F.equal_null("x", "y"),
    "equal_null(s, t)": lambda F: F.equal_null("s", F.col("t")),
    "equal_null(q, lit)": lambda F: F.equal_null("q", F.lit(1)),
    "equal_null(d, d2)": lambda F: F.equal_null(F.col("d"), "d2"),
    "call_function(upper)": lambda F: F.call_function("upper", "s"),
    "call_function(concat_ws)": lambda F: F.call_function("concat_ws", F.lit("-"), "s", F.col("t")),
    "call_function(abs)": lambda F: F.call_function("abs", "x"),
    "call_function(coalesce)": lambda F: F.call_function("coalesce", "q", F.lit(0)),
}

DATETIME: dict[str, Build] = {
    "date_from_unix_date(days)": lambda F: F.date_from_unix_date("days"),
    "date_part(YEAR, d)": lambda F: F.date_part(F.lit("YEAR"), "d"),
    "date_part(DOW, ts)": lambda F: F.date_part(F.lit("DOW"), "ts"),
    "date_part(SECOND, ts)": lambda F: F.date_part(F.lit("SECOND"), F.col("ts")),
    "date_part(doy, d)": lambda F: F.date_part(F.lit("doy"), "d"),
    "datepart(month, d)": lambda F: F.datepart(F.lit("month"), "d"),
    "date_diff(d, d2)": lambda F: F.date_diff("d", "d2"),
    "timestamp_seconds(secs)": lambda F: F.timestamp_seconds("secs"),
    "timestamp_seconds(fsecs)": lambda F: F.timestamp_seconds("fsecs"),
    "unix_seconds(ts)": lambda F: F.unix_seconds("ts"),
    "unix_millis(ts)": lambda F: F.unix_millis("ts"),
    "unix_micros(ts)": lambda F: F.unix_micros(F.col("ts")),
    "to_unix_timestamp(tss)": lambda F: F.to_unix_timestamp("tss"),
    "to_unix_timestamp(ds, fmt)": lambda F: F.to_unix_timestamp("ds", F.lit("yyyy-MM-dd")),
    "to_unix_timestamp(ts)": lambda F: F.to_unix_timestamp("ts"),
    "to_unix_timestamp(d)": lambda F: F.to_unix_timestamp("d"),
    "to_char(d)": lambda F: F.to_char("d", F.lit("yyyy-MM-dd EEE")),
    "to_varchar(ts)": lambda F: F.to_varchar("ts", F.lit("HH:mm:ss.SSSSSS")),
    "timestamp_add(HOUR)": lambda F: F.timestamp_add("HOUR", "q", "ts"),
    "timestamp_add(MONTH)": lambda F: F.timestamp_add("MONTH", F.col("k"), "ts"),
    "timestamp_add(day)": lambda F: F.timestamp_add("day", F.lit(-1), F.col("ts")),
    "timestamp_diff(DAY)": lambda F: F.timestamp_diff("DAY", "ts2", "ts"),
    "timestamp_diff(HOUR)": lambda F: F.timestamp_diff("HOUR", "ts", F.col("ts2")),
    "timestamp_diff(second)": lambda F: F.timestamp_diff("second", "ts2", "ts"),
    "make_timestamp_ltz": lambda F: F.make_timestamp_ltz(
        F.lit(2024), F.col("k") + 1, F.col("k") + 1, "k", F.lit(30), F.col("k") * 1.5
    ),
    "make_timestamp_ltz(tz)": lambda F: F.make_timestamp_ltz(
        F.lit(2024), F.lit(2), F.lit(29), "k", F.lit(0), F.lit(1), F.lit("Asia/Tokyo")
    ),
}

HYPERBOLIC: dict[str, Build] = {
    "sinh(x)": lambda F: F.sinh("x"),
    "cosh(x)": lambda F: F.cosh(F.col("x")),
    "tanh(x)": lambda F: F.tanh("x"),
    "asinh(x)": lambda F: F.asinh("x"),
    "acosh(x)": lambda F: F.acosh("x"),
    "atanh(x / 200)": lambda F: F.atanh(F.col("x") / 200),
    "asinh(q)": lambda F: F.asinh("q"),
    "hypot(x, y)": lambda F: F.hypot("x", "y"),
    "hypot(q, 2.5)": lambda F: F.hypot("q", 2.5),
    "factorial(q)": lambda F: F.factorial("q"),
    "factorial(k * 5)": lambda F: F.factorial(F.col("k") * 5),
}

HASHES: dict[str, Build] = {
    "hash(s)": lambda F: F.hash("s"),
    "hash(q, l, s)": lambda F: F.hash("q", "l", F.col("s")),
    "hash(x)": lambda F: F.hash("x"),
    "hash(bn, b)": lambda F: F.hash("bn", "b"),
    "hash(d, ts)": lambda F: F.hash("d", "ts"),
    "hash(array)": lambda F: F.hash(F.array("q", "k")),
    "hash(struct)": lambda F: F.hash(F.struct("s", "q", "x")),
    "hash(decimal)": lambda F: F.hash(F.col("l").cast("decimal(38,2)"), F.col("q").cast("decimal(12,1)")),
    "xxhash64(s)": lambda F: F.xxhash64("s"),
    "xxhash64(q, l, x)": lambda F: F.xxhash64("q", "l", "x"),
    "xxhash64(bn, d, ts, b)": lambda F: F.xxhash64("bn", "d", "ts", "b"),
    "xxhash64(array)": lambda F: F.xxhash64(F.array("s", "t")),
    "md5(s)": lambda F: F.md5("s"),
    "md5(bn)": lambda F: F.md5(F.col("bn")),
    "sha1(s)": lambda F: F.sha1("s"),
    "sha(bn)": lambda F: F.sha("bn"),
    "sha2(s, 256)": lambda F: F.sha2("s", 256),
    "sha2(s, 224)": lambda F: F.sha2("s", 224),
    "sha2(bn, 384)": lambda F: F.sha2("bn", 384),
    "sha2(s, 512)": lambda F: F.sha2("s", 512),
    "sha2(s, 0)": lambda F: F.sha2("s", 0),
    "crc32(s)": lambda F: F.crc32("s"),
    "crc32(bn)": lambda F: F.crc32("bn"),
}

EDITS: dict[str, Build] = {
    "find_in_set(t, list)": lambda F: F.find_in_set("t", F.lit("ab,ö,,world,%b")),
    "find_in_set(s, p)": lambda F: F.find_in_set("s", "p"),
    "levenshtein(s, t)": lambda F: F.levenshtein("s", "t"),
    "levenshtein(s, t, 3)": lambda F: F.levenshtein("s", F.col("t"), 3),
    "soundex(s)": lambda F: F.soundex("s"),
    "soundex(names)": lambda F: F.soundex(F.concat(F.lit("Rob"), F.col("t"), F.lit("ert Tymczak"))),
    "substring_index(s, ' ', 1)": lambda F: F.substring_index("s", " ", 1),
    "substring_index(p, '%', -1)": lambda F: F.substring_index("p", "%", -1),
    "substring_index(s, 'l', 2)": lambda F: F.substring_index("s", "l", 2),
    "overlay(s, t, 2)": lambda F: F.overlay("s", "t", 2),
    "overlay(s, lit, 3, 0)": lambda F: F.overlay("s", F.lit("_"), 3, 0),
    "overlay(s, t, -2, q)": lambda F: F.overlay("s", "t", F.lit(-2), F.col("k")),
    "overlay(bn, bn, 2, 1)": lambda F: F.overlay("bn", F.lit(b"XY"), 2, 1),
    "quote(p)": lambda F: F.quote("p"),
    "quote(s)": lambda F: F.quote(F.concat(F.col("s"), F.lit("'s"))),
    "mask(s)": lambda F: F.mask("s"),
    "mask(s, Y, y, 9, *)": lambda F: F.mask("s", F.lit("Y"), F.lit("y"), F.lit("9"), F.lit("*")),
    "mask(p, None, lower)": lambda F: F.mask("p", None, F.lit("-")),
    "chr(q)": lambda F: F.chr("q"),
    "char(l)": lambda F: F.char(F.col("l")),
    "chr(k + 65)": lambda F: F.chr(F.col("k") + 65),
    "url_encode(s)": lambda F: F.url_encode("s"),
    "url_decode(url_encode(p))": lambda F: F.url_decode(F.url_encode("p")),
    "url_decode(lit)": lambda F: F.url_decode(F.lit("a+b%20c%2B%C3%BC")),
    "try_url_decode(p)": lambda F: F.try_url_decode("p"),
}

TRY_FORMS: dict[str, Build] = {
    "try_add(q, 1)": lambda F: F.try_add("q", F.lit(1)),
    "try_add(l, l)": lambda F: F.try_add("l", "l"),
    "try_add(d, k)": lambda F: F.try_add("d", "k"),
    "try_subtract(l, 1)": lambda F: F.try_subtract("l", F.lit(1)),
    "try_subtract(q, l)": lambda F: F.try_subtract("q", "l"),
    "try_multiply(q, q)": lambda F: F.try_multiply("q", "q"),
    "try_multiply(l, x)": lambda F: F.try_multiply("l", "x"),
    "try_mod(q, cst)": lambda F: F.try_mod("q", "cst"),
    "try_mod(l, av)": lambda F: F.try_mod("l", F.col("av")),
    "try_to_timestamp(s)": lambda F: F.try_to_timestamp("s"),
    "try_to_timestamp(tss)": lambda F: F.try_to_timestamp("tss"),
    "try_to_timestamp(ds, fmt)": lambda F: F.try_to_timestamp("ds", F.lit("yyyy-MM-dd")),
    "try_to_date(ds)": lambda F: F.try_to_date("ds"),
    "try_to_date(s)": lambda F: F.try_to_date("s"),
    "try_to_date(tss, fmt)": lambda F: F.try_to_date("tss", "yyyy-MM-dd HH:mm:ss"),
    "try_make_timestamp": lambda F: F.try_make_timestamp(
        F.lit(2024), F.col("k") + 1, F.col("q"), F.lit(1), F.lit(2), F.lit(3.5)
    ),
    "try_make_timestamp(tz)": lambda F: F.try_make_timestamp(
        F.lit(2024), F.lit(2), F.col("k") + 27, F.lit(1), F.lit(2), F.lit(3), F.lit("Asia/Tokyo")
    ),
    "try_make_timestamp_ltz": lambda F: F.try_make_timestamp_ltz(
        F.lit(2023), F.lit(2), F.col("k") + 27, F.lit(1), F.lit(2), F.lit(3)
    ),
}

ZONES: dict[str, Build] = {
    "from_utc_timestamp(ts, Tokyo)": lambda F: F.from_utc_timestamp("ts", "Asia/Tokyo"),
    "from_utc_timestamp(ts, offset)": lambda F: F.from_utc_timestamp("ts", "+05:30"),
    "to_utc_timestamp(ts, LA)": lambda F: F.to_utc_timestamp("ts", "America/Los_Angeles"),
    "to_utc_timestamp(ts2, Paris)": lambda F: F.to_utc_timestamp(F.col("ts2"), F.lit("Europe/Paris")),
    "from_utc_timestamp(tss, LA)": lambda F: F.from_utc_timestamp("tss", "America/Los_Angeles"),
    "convert_timezone(LA, UTC, ts)": lambda F: F.convert_timezone(
        F.lit("America/Los_Angeles"), F.lit("UTC"), "ts"
    ),
    "convert_timezone(None, Tokyo, ts2)": lambda F: F.convert_timezone(None, F.lit("Asia/Tokyo"), "ts2"),
    "dayname(d)": lambda F: F.dayname("d"),
    "current_timezone()": lambda F: F.current_timezone(),
    "current_catalog()": lambda F: F.current_catalog(),
    "current_user()": lambda F: F.current_user(),
    "user()": lambda F: F.user(),
    "session_user()": lambda F: F.session_user(),
    "make_timestamp_ntz": lambda F: F.make_timestamp_ntz(
        F.lit(2024), F.col("k") + 1, F.col("k") + 27, F.lit(1), F.lit(2), F.lit(3.25)
    ),
    "try_make_timestamp_ntz": lambda F: F.try_make_timestamp_ntz(
        F.lit(2023), F.lit(2), F.col("k") + 26, "k", F.lit(59), F.lit(59.5)
    ),
    "dayname(ts)": lambda F: F.dayname("ts"),
    "monthname(d2)": lambda F: F.monthname("d2"),
}

ARRAY_SETS: dict[str, Build] = {
    "array_distinct(arr)": lambda F: F.array_distinct(F.array("q", "k", "cst", "av")),
    "array_distinct(x, y)": lambda F: F.array_distinct(F.array("x", "y", "x")),
    "array_distinct(s, t)": lambda F: F.array_distinct(F.array("s", "t", F.lit(""))),
    "array_union": lambda F: F.array_union(F.array("q", "k"), F.array("cst", "av", "k")),
    "array_union(strings)": lambda F: F.array_union(F.array("s"), F.array("t", "s")),
    "array_intersect": lambda F: F.array_intersect(F.array("q", "k", "cst"), F.array("av", "k", "cst")),
    "array_except": lambda F: F.array_except(F.array("q", "k", "cst", "k"), F.array("av", "cst")),
    "array_except(x)": lambda F: F.array_except(F.array("x", "y"), F.array("y")),
    "arrays_overlap": lambda F: F.arrays_overlap(F.array("q", "k"), F.array("cst", "av")),
    "arrays_overlap(s)": lambda F: F.arrays_overlap(F.array("s"), F.array("t", F.lit("abc"))),
    "array_position(arr, 1)": lambda F: F.array_position(F.array("q", "k", "cst"), 1),
    "array_position(arr, col)": lambda F: F.array_position(F.array("q", "k", "cst"), F.col("av")),
    "array_position(x, NaN)": lambda F: F.array_position(F.array("x", "y"), float("nan")),
    "array_remove(arr, 0)": lambda F: F.array_remove(F.array("q", "k", "cst", "av"), 0),
    "array_remove(s, col)": lambda F: F.array_remove(F.array("s", "t", F.lit("")), F.col("t")),
    "array_max(arr)": lambda F: F.array_max(F.array("q", "k", "cst", "av")),
    "array_max(x)": lambda F: F.array_max(F.array("x", "y")),
    "array_min(x)": lambda F: F.array_min(F.array("x", "y")),
    "array_min(s)": lambda F: F.array_min(F.array("s", "t")),
    "array_join(s)": lambda F: F.array_join(F.array("s", "t"), "|"),
    "array_join(s, null)": lambda F: F.array_join(F.array("s", "t", "s"), ", ", "?"),
    "array_join(q)": lambda F: F.array_join(F.array("q", "k"), "-"),
    "slice(arr, 2, 2)": lambda F: F.slice(F.array("q", "k", "cst", "av"), 2, 2),
    "slice(arr, -3, k)": lambda F: F.slice(F.array("q", "k", "cst", "av"), -3, F.col("k")),
    "slice(arr, 9, 1)": lambda F: F.slice(F.array("s", "t"), 9, 1),
    "flatten": lambda F: F.flatten(F.array(F.array("q", "k"), F.array("cst"))),
    "flatten(null inner)": lambda F: F.flatten(F.array(F.array("q"), F.when(F.col("k") > 2, F.array("cst")))),
    "array_repeat(s, 2)": lambda F: F.array_repeat("s", 2),
    "array_repeat(q, k)": lambda F: F.array_repeat("q", F.col("k") - 1),
}

AGGREGATES: dict[str, Build] = {
    "any_value(cst)": lambda F: F.any_value("cst"),
    "any_value(av, True)": lambda F: F.any_value("av", True),
    "any_value(av, lit(True))": lambda F: F.any_value(F.col("av"), F.lit(True)),
    "array_agg(q)": lambda F: F.array_agg("q"),
    "array_agg(s)": lambda F: F.array_agg(F.col("s")),
    "approxCountDistinct(q)": lambda F: F.approxCountDistinct("q"),
    "approxCountDistinct(s, 0.1)": lambda F: F.approxCountDistinct("s", 0.1),
    "every(b)": lambda F: F.every("b"),
    "some(b)": lambda F: F.some(F.col("b")),
    "std(x)": lambda F: F.std("x"),
    "std(q)": lambda F: F.std("q"),
    "skewness(q)": lambda F: F.skewness("q"),
    "skewness(x)": lambda F: F.skewness(F.col("x")),
    "kurtosis(q)": lambda F: F.kurtosis("q"),
    "histogram_numeric(q, 3)": lambda F: F.histogram_numeric("q", F.lit(3)),
    "bit_and(l)": lambda F: F.bit_and("l"),
    "bit_or(q)": lambda F: F.bit_or(F.col("q")),
    "bit_xor(cst)": lambda F: F.bit_xor("cst"),
    "regr_avgx(x, q)": lambda F: F.regr_avgx("x", "q"),
    "regr_avgy(q, av)": lambda F: F.regr_avgy("q", F.col("av")),
    "regr_intercept(q, cst)": lambda F: F.regr_intercept("q", "cst"),
    "regr_intercept(id, l)": lambda F: F.regr_intercept("id", F.col("l").cast("double") / 1e9),
    "regr_sxy(q, id)": lambda F: F.regr_sxy("q", "id"),
    "regr_r2(id, q)": lambda F: F.regr_r2("id", "q"),
    "regr_r2(q, cst)": lambda F: F.regr_r2("q", "cst"),
    "regr_r2(cst, q)": lambda F: F.regr_r2("cst", "q"),
    "max_by(s, q)": lambda F: F.max_by("s", "q"),
    "max_by(id, x * 0)": lambda F: F.max_by("id", F.col("x") * 0),
    "min_by(id, x * 0)": lambda F: F.min_by("id", F.col("x") * 0),
    "max_by(av, cst)": lambda F: F.max_by("av", F.col("cst")),
    "min_by(ts, x)": lambda F: F.min_by("ts", "x"),
    "min_by(q, s)": lambda F: F.min_by(F.col("q"), "s"),
    "product(q)": lambda F: F.product("q"),
    "product(x)": lambda F: F.product("x"),
    "try_sum(q)": lambda F: F.try_sum("q"),
    "try_sum(overflow)": lambda F: F.try_sum(F.col("l") * 0 + F.lit(2**62)),
    "try_sum(x)": lambda F: F.try_sum("x"),
    "try_sum(decimal)": lambda F: F.try_sum(F.col("q").cast("decimal(12,2)")),
    "try_avg(q)": lambda F: F.try_avg("q"),
    "try_avg(decimal)": lambda F: F.try_avg(F.col("l").cast("decimal(20,1)")),
    "mode(cst)": lambda F: F.mode("cst"),
    "mode(s, True)": lambda F: F.mode("s", True),
    "mode(x, True)": lambda F: F.mode(F.col("x"), deterministic=True),
    "listagg(s)": lambda F: F.listagg("s"),
    "listagg(s, sep)": lambda F: F.listagg("s", ", "),
    "string_agg(t, lit)": lambda F: F.string_agg("t", F.lit("|")),
    "string_agg(bn, bytes)": lambda F: F.string_agg("bn", b"\x00"),
    "listagg(q)": lambda F: F.listagg(F.col("q").cast("string"), "+"),
    "string_agg_distinct(k)": lambda F: F.string_agg_distinct(F.col("k").cast("string")),
    "percentile_approx(q, 0.5)": lambda F: F.percentile_approx("q", 0.5),
    "percentile_approx(x, list, 100)": lambda F: F.percentile_approx("x", [0.1, 0.9], 100),
    "approx_percentile(d, 0.5)": lambda F: F.approx_percentile("d", 0.5),
    "percentile_approx(ts, 0.25)": lambda F: F.percentile_approx("ts", 0.25),
    # Spark's order is its hash set's: compared sorted.
    "collect_union": lambda F: F.sort_array(F.collect_union(F.array("q", "cst"))),
    "collect_union(null arrays)": lambda F: F.sort_array(
        F.collect_union(F.when(F.col("k") > 1, F.array("k", "av")))
    ),
    "percentile_approx(decimal)": lambda F: F.percentile_approx(
        F.col("l").cast("decimal(20,1)"), F.lit(0.75)
    ),
}

MAPS: dict[str, Build] = {
    "map_from_arrays": lambda F: F.map_from_arrays(F.array("k", F.col("k") + 10), F.array("s", "t")),
    "map_from_arrays(null)": lambda F: F.map_from_arrays(
        F.array("k"), F.when(F.col("k") > 1, F.array("x")).otherwise(F.lit(None))
    ),
    "map_from_entries": lambda F: F.map_from_entries(
        F.array(
            F.struct(F.col("k").alias("a"), F.col("s").alias("b")),
            F.struct((F.col("k") + 100).alias("a"), F.col("t").alias("b")),
        )
    ),
    "map_from_entries(null entry)": lambda F: F.map_from_entries(
        F.array(
            F.struct(F.col("k").alias("a"), F.col("x").alias("b")),
            F.when(F.col("k") > 2, F.struct((F.col("k") + 1).alias("a"), F.col("y").alias("b"))),
        )
    ),
    "map_entries": lambda F: F.map_entries(F.create_map("k", "s")),
    "map_entries(x)": lambda F: F.map_entries(F.create_map(F.col("id"), F.col("x"), F.col("id") + 100, "y")),
    "map_concat": lambda F: F.map_concat(F.create_map("k", "s"), F.create_map(F.col("k") + 10, "t")),
    "map_concat(list)": lambda F: F.map_concat(
        [F.create_map("id", "d"), F.create_map(F.col("id") + 20, "d2")]
    ),
    "map_concat(null)": lambda F: F.map_concat(
        F.create_map("k", "s"), F.when(F.col("k") > 1, F.create_map(F.col("k") + 10, "t"))
    ),
    "map_concat(widen)": lambda F: F.map_concat(
        F.create_map("k", "q"), F.create_map(F.col("id") * 1000 + 1000, F.col("id"))
    ),
    "str_to_map(tss)": lambda F: F.str_to_map("tss", F.lit(" "), F.lit("-")),
    "str_to_map(ds)": lambda F: F.str_to_map("ds"),
    "str_to_map(s)": lambda F: F.str_to_map(F.concat(F.lit("k:"), "s", F.lit(",v:1"))),
    "str_to_map(regex)": lambda F: F.str_to_map(F.lit("a1b22c"), F.lit("[0-9]+"), F.lit("x")),
    "sequence(k, cst)": lambda F: F.sequence("k", "cst"),
    "sequence(k, cst, 2)": lambda F: F.sequence(F.col("k") * 2, F.col("k") * 2 + 5, F.lit(2)),
    "sequence(tinyint)": lambda F: F.sequence(F.col("k").cast("tinyint"), F.lit(2).cast("smallint")),
    "sequence(l, l)": lambda F: F.sequence("l", "l"),
    "sequence(d, d + k)": lambda F: F.sequence("d", F.date_add("d", F.col("k"))),
    "sequence(d + k, d)": lambda F: F.sequence(F.date_add("d", F.col("k")), "d"),
    "sequence(d, months)": lambda F: F.sequence(
        "d", F.add_months("d", F.col("k")), F.expr("interval 1 month")
    ),
    "sequence(d, 3 days)": lambda F: F.sequence("d", F.date_add("d", 9), F.expr("interval 3 days")),
    "sequence(ts, 30 minutes)": lambda F: F.sequence(
        "ts", F.col("ts") + F.expr("make_dt_interval(0, k)"), F.expr("interval 30 minutes")
    ),
    "sequence(ts2, 1 day)": lambda F: F.sequence("ts2", F.col("ts2") + F.expr("interval 2 days")),
    "array_sort(x)": lambda F: F.array_sort(F.array("x", "y", F.lit(-1.0))),
    "array_sort(s)": lambda F: F.array_sort(F.array("s", "t", "p")),
    "array_sort(desc)": lambda F: F.array_sort(
        F.array("q", "k", "cst", "av"),
        lambda a, b: F.when(a.isNull(), 1).when(b.isNull(), -1).when(a < b, 1).when(a > b, -1).otherwise(0),
    ),
    "array_sort(by length)": lambda F: F.array_sort(
        F.array("s", "t", F.lit("xy")),
        lambda a, b: F.coalesce(F.length(a), F.lit(-1)) - F.coalesce(F.length(b), F.lit(-1)),
    ),
    "array_sort(outer column)": lambda F: F.array_sort(
        F.array("q", "k", "cst"),
        lambda a, b: F.coalesce(
            F.when(a < b, -F.col("k")).when(a > b, F.col("k")).otherwise(F.lit(0)), F.lit(0)
        ),
    ),
    "map_zip_with": lambda F: F.map_zip_with(
        F.create_map("k", "s"),
        F.create_map(F.col("k") + F.col("id") % 2, "t"),
        lambda k, v1, v2: F.concat(F.coalesce(v1, F.lit("-")), F.coalesce(v2, F.lit("-"))),
    ),
    "map_zip_with(widen)": lambda F: F.map_zip_with(
        F.create_map("k", "x"),
        F.create_map(F.coalesce("l", F.lit(0)), "q"),
        lambda k, a, b: F.coalesce(a, b * 1.0),
    ),
}

CODINGS: dict[str, Build] = {
    "try_parse_url(s, PATH)": lambda F: F.try_parse_url(F.concat(F.lit("http://h.com/"), "s"), F.lit("PATH")),
    "try_parse_url(s, HOST)": lambda F: F.try_parse_url(
        F.concat(F.lit("http://"), "s", F.lit("/x")), F.lit("HOST")
    ),
    "try_parse_url(s, AUTHORITY)": lambda F: F.try_parse_url(
        F.concat(F.lit("ftp://"), "t", F.lit("@"), "s", F.lit(":21/")), F.lit("AUTHORITY")
    ),
    "parse_url(QUERY, k)": lambda F: F.parse_url(
        F.concat(F.lit("http://h.com/p?k="), "k", F.lit("&x=2")), F.lit("QUERY"), F.lit("k")
    ),
    "parse_url(parts)": lambda F: F.parse_url(
        F.lit("https://user:pw@spark.apache.org:8080/a/b%20c?q=1&r=%41#frag"),
        F.element_at(
            F.array(*[F.lit(p) for p in ["HOST", "PATH", "QUERY", "REF", "PROTOCOL"]]), F.col("k") + 1
        ),
    ),
    "parse_url(more parts)": lambda F: F.parse_url(
        F.lit("https://user:pw@spark.apache.org:8080/a/b%20c?q=1&r=%41#frag"),
        F.element_at(
            F.array(*[F.lit(p) for p in ["FILE", "AUTHORITY", "USERINFO", "XX", "host"]]), F.col("k") + 1
        ),
    ),
    "parse_url(no query)": lambda F: F.parse_url(F.lit("http://a.com"), F.lit("QUERY")),
    "parse_url(relative)": lambda F: F.parse_url(F.lit("a/b?c=1"), F.lit("PATH")),
    "to_base32(s)": lambda F: F.to_base32("s"),
    "to_base32(bn)": lambda F: F.to_base32("bn"),
    "from_base32(to_base32(s))": lambda F: F.from_base32(F.to_base32("s")),
    "from_base32(lower)": lambda F: F.from_base32(F.lower(F.to_base32("t"))),
    "hmac(s, t)": lambda F: F.hmac(F.concat(F.lit("k"), "s"), "t"),
    "hmac(bn, s, SHA-512)": lambda F: F.hmac(F.concat(F.lit(b"k"), "bn"), "s", F.lit("SHA-512")),
    "hmac(s, t, MD5)": lambda F: F.hmac(F.concat("s", F.lit("-")), "t", F.lit("MD5")),
    "hmac(t, s, SHA-1)": lambda F: F.hmac(F.concat("t", F.lit("-")), "s", F.lit("SHA-1")),
    "hmac(long key)": lambda F: F.hmac(F.repeat(F.concat(F.lit("k"), "s"), 40), "t", F.lit("SHA-384")),
    "jaro_winkler_similarity(s, t)": lambda F: F.jaro_winkler_similarity("s", "t"),
    "jaro_winkler_similarity(s, p)": lambda F: F.jaro_winkler_similarity("s", "p"),
    "jaro_winkler_similarity(tss, ds)": lambda F: F.jaro_winkler_similarity("tss", "ds"),
    "format_number(x, 2)": lambda F: F.format_number("x", 2),
    "format_number(q, 0)": lambda F: F.format_number("q", 0),
    "format_number(l, 3)": lambda F: F.format_number("l", 3),
    "format_number(fsecs, 4)": lambda F: F.format_number("fsecs", 4),
    "format_number(fsecs, 0)": lambda F: F.format_number("fsecs", 0),
    "format_number(decimal, 3)": lambda F: F.format_number(F.col("q").cast("decimal(12,2)") / 7, 3),
    "format_number(x, -1)": lambda F: F.format_number("x", -1),
    "json_array_length(docs)": lambda F: F.json_array_length(_json_doc(F)),
    "json_object_keys(docs)": lambda F: F.json_object_keys(_json_doc(F)),
    "json_array_length(s)": lambda F: F.json_array_length("s"),
    "json_object_keys(concat)": lambda F: F.json_object_keys(F.concat(F.lit('{"'), "s", F.lit('": 1}'))),
    "current_database()": lambda F: F.current_database(),
    "current_schema()": lambda F: F.current_schema(),
    "current_path()": lambda F: F.current_path(),
    "aes_encrypt(s, ECB)": lambda F: F.aes_encrypt("s", F.lit("0000111122223333"), F.lit("ECB")),
    "aes_encrypt(bn, CBC, iv)": lambda F: F.aes_encrypt(
        "bn",
        F.lit("abcdefghijklmnop12345678ABCDEFGH"),
        F.lit("cbc"),
        F.lit("PKCS"),
        F.unhex(F.lit("00" * 16)),
    ),
    "aes_encrypt(s, GCM, iv, aad)": lambda F: F.aes_encrypt(
        "s", F.lit("000011112222333344445555"), F.lit("GCM"), F.lit("DEFAULT"), F.unhex(F.lit("0A" * 12)), "t"
    ),
    "aes_decrypt(aes_encrypt(s))": lambda F: F.aes_decrypt(
        F.aes_encrypt("s", F.lit("0000111122223333")), F.lit("0000111122223333")
    ),
    "aes_decrypt(aes_encrypt(bn, CBC))": lambda F: F.aes_decrypt(
        F.aes_encrypt("bn", F.lit("abcdefghijklmnop12345678ABCDEFGH"), F.lit("CBC")),
        F.lit("abcdefghijklmnop12345678ABCDEFGH"),
        F.lit("CBC"),
    ),
    "aes_decrypt(GCM, aad)": lambda F: F.aes_decrypt(
        F.aes_encrypt("s", F.lit("0000111122223333"), F.lit("GCM"), F.lit("DEFAULT"), F.lit(""), "t"),
        F.lit("0000111122223333"),
        F.lit("GCM"),
        F.lit("DEFAULT"),
        "t",
    ),
    "try_aes_decrypt(bn)": lambda F: F.try_aes_decrypt("bn", F.lit("0000111122223333")),
    "try_aes_decrypt(short key)": lambda F: F.try_aes_decrypt(
        F.aes_encrypt("s", F.lit("0000111122223333")), F.lit("0000")
    ),
    "try_aes_decrypt(wrong aad)": lambda F: F.try_aes_decrypt(
        F.aes_encrypt("s", F.lit("0000111122223333"), F.lit("GCM"), F.lit("DEFAULT"), F.lit(""), F.lit("x")),
        F.lit("0000111122223333"),
    ),
}

#: JSON texts for the JSON functions, one per row (by id): arrays and objects nested, empty,
#: with duplicate keys, escapes, NaN; and texts Jackson refuses part way.
JSON_DOCS = [
    '[1, 2, "three", [4, 5], {"six": 6}]',
    ' {"a": 1, "b": {"c": [1, 2]}, "a": "dup", "\\u00e9t\\u00e9": null} trailing',
    "[]",
    "{}",
    "[-0, 1.5e3, true, null, 'single', NaN]",
    "[1, 2,]",
    '{"unterminated": "x}',
    "[01]",
    '"just a string"',
    '{"emoji \\ud83d\\ude00": [], "日本": {}}',
]


def _json_doc(F):
    return F.element_at(F.array(*[F.lit(d) for d in JSON_DOCS]), F.col("id").cast("int") + 1)


#: Records for ``from_json``: fields that convert and fields that do not, text that is not
#: JSON, an array where an object is expected, empty text, JSON null, big and negative-zero
#: numbers, unicode, duplicate keys, a case-different key, text after the value.
JSON_RECORDS = [
    '{"a": 1, "b": "x", "c": [1, 2], "d": {"e": 1.5}, "t": "2024-02-29 12:34:56", "dt": "2024-02-29"}',
    '{"a": "not an int", "b": 2, "c": [1, "x"], "d": {"e": "NaN"}, "dec": "12.5"}',
    "not json",
    '[{"a": 1}, {"a": 2}]',
    "",
    '{"a": 2147483648, "b": null, "c": null, "d": null, "dec": 12.345}',
    '{"b": "\u00dcn\u00efc\u00f6d\u00e9 日本 😀", "a": -0, "dec": 1e2, "t": "1969-12-31T23:59:59.5Z"}',
    '{"a": 1, "a": 2, "B": "case", "c": []}',
    "null",
    '{"a": 7, "d": {"e": -1e-7}} trailing text',
]

_RECORD_DDL = "a INT, b STRING, c ARRAY<INT>, d STRUCT<e: DOUBLE>, t TIMESTAMP, dt DATE, dec DECIMAL(10,2)"


def _record(F):
    return F.element_at(F.array(*[F.lit(d) for d in JSON_RECORDS]), F.col("id").cast("int") + 1)


def _spark_schema():
    from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

    return StructType([StructField("a", LongType()), StructField("c", ArrayType(StringType()))])


JSON_VALUES: dict[str, Build] = {
    "from_json(records, ddl)": lambda F: F.from_json(_record(F), _RECORD_DDL),
    "from_json(records, corrupt)": lambda F: F.from_json(
        _record(F), "a INT, b STRING, _corrupt_record STRING"
    ),
    "from_json(records, own corrupt)": lambda F: F.from_json(
        _record(F), "a INT, bad STRING", {"columnNameOfCorruptRecord": "bad"}
    ),
    "from_json(records, array)": lambda F: F.from_json(_record(F), "array<struct<a:int, b:string>>"),
    "from_json(docs, array<string>)": lambda F: F.from_json(_json_doc(F), "array<string>"),
    "from_json(docs, struct)": lambda F: F.from_json(_json_doc(F), "a STRING, b STRUCT<c: ARRAY<INT>>"),
    "from_json(records, DataType)": lambda F: F.from_json(_record(F), _spark_schema()),
    "from_json(to_json(map))": lambda F: F.from_json(
        F.to_json(F.create_map(F.lit("k"), "q", F.lit("j"), "av")), "map<string,int>"
    ),
    "from_json(dateFormat)": lambda F: F.from_json(
        F.concat(F.lit('{"dt": "'), F.date_format("d", "dd/MM/yyyy"), F.lit('"}')),
        "dt DATE",
        {"dateFormat": "dd/MM/yyyy"},
    ),
    "to_json(struct)": lambda F: F.to_json(F.struct("id", "s", "x", "d", "ts", "bn", "l", "b")),
    "to_json(array)": lambda F: F.to_json(F.array("q", "av")),
    "to_json(map)": lambda F: F.to_json(F.create_map(F.lit("k"), "x")),
    "to_json(ignoreNullFields)": lambda F: F.to_json(F.struct("q", "s"), {"ignoreNullFields": False}),
    "to_json(nested)": lambda F: F.to_json(
        F.struct(F.array(F.struct("q")).alias("arr"), F.create_map(F.lit("m"), F.struct("y")).alias("mp"))
    ),
    "to_json(timestampFormat)": lambda F: F.to_json(
        F.struct("ts", "d"), {"timestampFormat": "yyyy/MM/dd HH:mm"}
    ),
    "schema_of_json(lit)": lambda F: F.schema_of_json('{"a": [1, 2.5], "b": {"c": null}, "y z": "s"}'),
    "schema_of_json(prefersDecimal)": lambda F: F.schema_of_json(
        F.lit('{"a": 1.5}'), {"prefersDecimal": "true"}
    ),
    "get_json_object(docs, $)": lambda F: F.get_json_object(_json_doc(F), "$"),
    "get_json_object(docs, $[0])": lambda F: F.get_json_object(_json_doc(F), "$[0]"),
    "get_json_object(docs, $[*])": lambda F: F.get_json_object(_json_doc(F), "$[*]"),
    "get_json_object(docs, $.a)": lambda F: F.get_json_object(_json_doc(F), "$.a"),
    "get_json_object(docs, $.b.c[1])": lambda F: F.get_json_object(_json_doc(F), "$.b.c[1]"),
    "get_json_object(docs, $[3][*])": lambda F: F.get_json_object(_json_doc(F), "$[3][*]"),
    "get_json_object(records, $.d.e)": lambda F: F.get_json_object(_record(F), "$.d.e"),
    "get_json_object(records, $.c[*])": lambda F: F.get_json_object(_record(F), "$.c[*]"),
    "get_json_object(records, $['b'])": lambda F: F.get_json_object(_record(F), "$['b']"),
    "get_json_object(records, $[*].a)": lambda F: F.get_json_object(_record(F), "$[*].a"),
    "from_csv(concat_ws)": lambda F: F.from_csv(
        F.concat_ws(",", F.col("q").cast("string"), "s", F.col("x").cast("string"), "ds"),
        "a INT, b STRING, c DOUBLE, d DATE",
    ),
    "from_csv(corrupt)": lambda F: F.from_csv(
        F.concat_ws(",", "s", "q"), "a INT, b INT, _corrupt_record STRING"
    ),
    "from_csv(sep)": lambda F: F.from_csv(
        F.concat_ws(";", "q", "l", "tss"), "a INT, b BIGINT, c TIMESTAMP", {"sep": ";"}
    ),
    "to_csv(struct)": lambda F: F.to_csv(F.struct("id", "s", "x", "d", "ts", "l", "b")),
    "to_csv(sep, nullValue)": lambda F: F.to_csv(F.struct("q", "s", "t"), {"sep": "|", "nullValue": "NA"}),
    "schema_of_csv(lit)": lambda F: F.schema_of_csv("1,abc,2.5,2020-01-01"),
    "schema_of_csv(sep)": lambda F: F.schema_of_csv(F.lit("1|x"), {"sep": "|"}),
}


FAMILIES: dict[str, dict[str, Build]] = {
    "text": TEXT,
    "math": MATH,
    "misc": MISC,
    "datetime": DATETIME,
    "aggregates": AGGREGATES,
    "hyperbolic": HYPERBOLIC,
    "hashes": HASHES,
    "edits": EDITS,
    "try_forms": TRY_FORMS,
    "zones": ZONES,
    "array_sets": ARRAY_SETS,
    "maps": MAPS,
    "codings": CODINGS,
    "json_csv": JSON_VALUES,
}

#: The names this file's families test (with the clock functions tested below).
NEW_NAMES = frozenset(
    {label.split("(")[0].split(" ")[0] for family in FAMILIES.values() for label in family}
    | {"curdate", "now", "localtimestamp"}
)

#: What ferrospark does not do like Spark yet: label -> (what differs, why). Each is checked
#: strictly: the listed aspect must differ (else the gap is fixed: remove it), and the other
#: aspects must match.
_REWRITTEN = "the parser rewrites timestampadd / timestampdiff into arithmetic, and names the column after it"
_EQUAL_NULL = "equal_null keeps its name on the SQL path only; a Column is named `(a <=> b)`"
_BYTES = "bytes that are not UTF-8 are measured as text, after U+FFFD replaced them"
_ILIKE = "the native printer names ILIKE `s ilike p`; Spark's name is `ilike(s, p)`"
_LTZ = "make_timestamp_ltz is bound as make_timestamp, and named after it"

_INTERVAL_EXPR = "F.expr('interval 1 month') is named as a calendar interval ('0 years 1 mons') and `ts + i` in parentheses; Spark's names are INTERVAL '1' MONTH and `ts + i`"

KNOWN_GAPS: dict[str, tuple[str, str]] = {
    "sequence(d, months)": ("name", _INTERVAL_EXPR),
    "sequence(d, 3 days)": ("name", _INTERVAL_EXPR),
    "sequence(ts, 30 minutes)": ("name", _INTERVAL_EXPR),
    "sequence(ts2, 1 day)": ("name", _INTERVAL_EXPR),
    "ilike(s, p)": ("name", _ILIKE),
    "ilike(s, lit)": ("name", _ILIKE),
    "toDegrees(x)": ("name", "Spark names degrees `DEGREES(x)`; the native name is lower case"),
    "toRadians(x)": ("name", "Spark names radians `RADIANS(x)`; the native name is lower case"),
    "datepart(month, d)": ("name", "Spark names datepart `datepart(month FROM d)`"),
    "date_diff(d, d2)": ("name", "date_diff is bound as datediff, and named `datediff(d, d2)`"),
    "timestamp_add(HOUR)": ("name", _REWRITTEN),
    "timestamp_add(MONTH)": ("name", _REWRITTEN),
    "timestamp_add(day)": ("name", _REWRITTEN),
    "make_timestamp_ltz": ("name", _LTZ),
    "make_timestamp_ltz(tz)": ("name", _LTZ),
    "bit_length(bn)": ("values", _BYTES),
    "octet_length(bn)": ("values", _BYTES),
    "equal_null(x, y)": ("name", _EQUAL_NULL),
    "equal_null(s, t)": ("name", _EQUAL_NULL),
    "equal_null(q, lit)": ("name", _EQUAL_NULL),
    "equal_null(d, d2)": ("name", _EQUAL_NULL),
}


# --------------------------------------------------------------------------------------------
# running and comparing
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return make_table()


@pytest.fixture(scope="module")
def fdf(table):
    return fs.Session().createDataFrame(table)


@pytest.fixture(scope="module")
def sdf(spark):
    rows = [tuple(vals[k] for _, _, _, vals in COLUMNS) for k in range(N_ROWS)]
    df = spark.createDataFrame(rows, schema=SPARK_DDL)
    want = [(name, ddl) for name, _, ddl, _ in COLUMNS]
    assert df.dtypes == want, f"Spark's column types {df.dtypes} are not the intended {want}"
    # One partition: aggregates see the rows in id order in both engines (any_value, array_agg).
    return df.coalesce(1)


def _query(F, df, family: str, builds: dict[str, Build], empty: bool = False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the deprecated names warn (tested below)
        cols = [build(F) for build in builds.values()]
    if family == "aggregates":
        if empty:
            return df.filter(F.col("id") < 0).agg(*cols)
        return df.groupBy("k").agg(*cols).orderBy("k")
    return df.select("id", *cols).orderBy("id")


def _strip_large(t: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_large_list(t):
        return pa.list_(_strip_large(t.value_type))
    if pa.types.is_list(t):
        return pa.list_(_strip_large(t.value_type))
    return t


def _values(table: pa.Table, k: int) -> list:
    """Column ``k``'s values, normalised (NaN and -0.0 as tokens); timestamps as microseconds,
    as they may lie beyond Python's datetime (year 9999)."""
    column = table.column(k)
    if pa.types.is_timestamp(column.type):
        return column.cast(pa.int64()).to_pylist()
    return [r[0] for r in arrow_rows(table.select([k]))]


def _compare(family: str, builds: dict[str, Build], got: pa.Table, want: pa.Table, keys: int) -> None:
    assert got.num_columns == want.num_columns == keys + len(builds), (got.schema, want.schema)
    assert arrow_rows(got.select(range(keys))) == arrow_rows(want.select(range(keys))), "key columns differ"
    problems, fixed = [], []
    for k, label in enumerate(builds, start=keys):
        name_g, name_w = got.schema.field(k).name, want.schema.field(k).name
        type_g, type_w = _strip_large(got.schema.field(k).type), _strip_large(want.schema.field(k).type)
        diffs = {}
        if name_g != name_w:
            diffs["name"] = f"name {name_g!r}, Spark's {name_w!r}"
        d = type_diff(type_g, type_w)
        if d:
            diffs["type"] = f"type {type_g}, Spark's {type_w} ({d})"
        else:
            rows_g, rows_w = _values(got, k), _values(want, k)
            bad = [(i, g, w) for i, (g, w) in enumerate(zip(rows_g, rows_w)) if g != w]
            if bad:
                diffs["values"] = f"values differ (row, got, Spark's): {bad[:6]}"
        gap = KNOWN_GAPS.get(label)
        if gap is not None:
            aspect, _reason = gap
            if aspect not in diffs:
                fixed.append(label)
            diffs.pop(aspect, None)
        problems += [f"{label}: {msg}" for msg in diffs.values()]
    assert not problems, f"{family}: differs from Spark:\n  " + "\n  ".join(problems)
    assert not fixed, f"{family}: known gaps that no longer differ, remove them from KNOWN_GAPS: {fixed}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_matches_pyspark(fdf, sdf, family):
    import pyspark.sql.functions as P

    builds = FAMILIES[family]
    want = _query(P, sdf, family, builds).toArrow()
    got = _query(F, fdf, family, builds).toArrow()
    _compare(family, builds, got, want, keys=1)


def test_aggregates_over_no_rows_match_pyspark(fdf, sdf):
    """A global aggregation of no rows: one row of NULLs, empty arrays and zero counts."""
    import pyspark.sql.functions as P

    want = _query(P, sdf, "aggregates", AGGREGATES, empty=True).toArrow()
    got = _query(F, fdf, "aggregates", AGGREGATES, empty=True).toArrow()
    _compare("aggregates over no rows", AGGREGATES, got, want, keys=0)


def test_aggregates_over_windows(fdf):
    """The new aggregates are aggregates everywhere: over a window too."""
    from ferrospark import Window

    w = Window.partitionBy("k")
    out = fdf.select("id", F.every("b").over(w).alias("e"), F.std("x").over(w).alias("sd")).orderBy("id")
    grouped = {r["k"]: r for r in fdf.groupBy("k").agg(F.every("b").alias("e")).collect()}
    ks = make_table().column("k").to_pylist()
    assert [r["e"] for r in out.collect()] == [grouped[k]["e"] for k in ks]


def test_clock_functions(fdf, sdf):
    """``curdate``, ``now``, ``localtimestamp``: Spark's names and types, one value per query,
    and the clock of this machine."""
    import pyspark.sql.functions as P

    def q(F, df):
        return df.select("id", F.curdate(), F.now(), F.localtimestamp(), F.current_date()).orderBy("id")

    want = q(P, sdf).limit(0).toArrow().schema
    got = q(F, fdf).toArrow()
    assert got.schema.names == want.names
    types = [
        (n, str(_strip_large(g)), str(_strip_large(w)))
        for n, g, w in zip(want.names, got.schema.types, want.types)
    ]
    differ = [t for t in types if t[1] != t[2]]
    # Known gap: Spark's localtimestamp() is a TIMESTAMP_NTZ (the wall clock of the session time
    # zone); ferrospark's is a TIMESTAMP of the same instant.
    assert differ == [("localtimestamp()", "timestamp[us, tz=UTC]", "timestamp[us]")], differ
    for k in range(1, got.num_columns):
        assert len(set(got.column(k).to_pylist())) == 1, f"{got.schema.names[k]}: one value per query"
    today, before = got.column(1)[0].as_py(), dt.datetime.now(UTC)
    assert today == got.column(4)[0].as_py()
    assert abs(today - before.date()) <= dt.timedelta(days=1)
    stamp = got.column(2)[0].as_py()
    assert abs(stamp - before) < dt.timedelta(minutes=5), (stamp, before)


def test_deprecated_names_warn_as_pyspark(spark):
    """The names PySpark deprecates warn with PySpark's own FutureWarning message."""
    import pyspark.sql.functions as P

    calls = {
        "toDegrees": ("x",),
        "toRadians": ("x",),
        "shiftLeft": ("q", 1),
        "shiftRight": ("q", 1),
        "shiftRightUnsigned": ("q", 1),
        "bitwiseNOT": ("q",),
        "approxCountDistinct": ("q",),
        "years": ("ts",),
        "months": ("ts",),
        "days": ("ts",),
        "hours": ("ts",),
        "bucket": (4, "id"),
    }
    for name, args in calls.items():
        messages = []
        for module in (P, F):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                getattr(module, name)(*args)
            messages.append([str(w.message) for w in caught if issubclass(w.category, FutureWarning)])
        assert messages[0] and messages[0] == messages[1], (name, messages)


def test_like_with_another_escape_is_refused(fdf):
    """``ESCAPE`` other than the default backslash is refused rather than ignored."""
    with pytest.raises(AnalysisError, match="escape"):
        F.like("s", "p", F.lit("!"))
    with pytest.raises(AnalysisError, match="escape"):
        F.ilike("s", F.lit("a!%"), F.lit("!"))


def test_uuid_is_random_and_well_formed(fdf):
    import re as _re

    rows = fdf.select(F.uuid().alias("u")).collect()
    values = [r["u"] for r in rows]
    assert len(set(values)) == len(values)
    assert all(
        _re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", v)
        for v in values
    )


def test_sha2_lengths_are_checked_as_pysparks():
    with pytest.raises(AnalysisError, match="VALUE_NOT_ALLOWED"):
        F.sha2("s", 100)


def test_timestamp_units_are_checked():
    with pytest.raises(AnalysisError, match="DATETIME_UNIT"):
        F.timestamp_add("HOUR); DROP", "q", "ts")
    with pytest.raises(AnalysisError, match="DATETIME_UNIT"):
        F.timestamp_diff("", "ts", "ts")


def test_seeded_random_values_are_sparks_on_one_partition(fdf, sdf, spark):
    """``rand`` / ``random`` / ``randn`` / ``uniform`` / ``randstr`` with a seed draw Spark's own
    sequence (its XORShiftRandom, bit for bit), ``shuffle`` Spark's permutations (its
    MersenneTwister), and ``monotonically_increasing_id`` / ``spark_partition_id``
    number one partition's rows as Spark does; names and types too."""
    import pyspark.sql.functions as P

    def build(m, df):
        return df.orderBy("id").select(
            "id",
            m.rand(42),
            m.random(-7),
            m.randn(0),
            m.randn(2**40).alias("big_seed"),
            m.monotonically_increasing_id(),
            m.spark_partition_id(),
            m.shuffle(m.array("q", "k", "cst", "av", "id"), 7),
            m.uniform(0, 100, 3),
            m.uniform(m.lit(1.5), m.lit(2.0).cast("decimal(3,1)"), 5),
            m.uniform(-1.0, 1.0, 9),
            m.randstr(6, 11),
        )

    want = build(P, sdf).toArrow()
    got = build(F, fdf).toArrow()
    assert got.schema.names == want.schema.names
    assert [str(t) for t in got.schema.types] == [str(t) for t in want.schema.types]
    assert arrow_rows(got) == arrow_rows(want)
    sql = (
        "SELECT id, rand(0) AS r, randn(123L) AS n, random(NULL) AS z, shuffle(sequence(0, id % 9), 3) AS p, "
        "uniform(10, 20L, 0) AS u, randstr(3, 1) AS t FROM range(0, 40, 1, 1)"
    )
    fs_rows = arrow_rows(fs.Session().sql(sql).toArrow())
    assert fs_rows == arrow_rows(spark.sql(sql).toArrow())


def test_unseeded_random_picks_one_seed_per_call(fdf):
    """Without a seed, a seed is chosen once per call (Spark's analyzer does so): values in
    [0, 1), the name shows the seed, and two calls differ."""
    out = fdf.select(F.rand().alias("a"), F.rand().alias("b")).collect()
    a, b = [r["a"] for r in out], [r["b"] for r in out]
    assert all(0.0 <= x < 1.0 for x in a + b)
    assert a != b
    name = fdf.select(F.rand()).columns[0]
    assert name.startswith("rand(") and name[5:-1].lstrip("-").isdigit()
    # Spark keeps an unwritten seed out of these names.
    assert fdf.select(F.shuffle(F.array("k")), F.uniform(1, 2), F.randstr(3)).columns == [
        "shuffle(array(k))",
        "uniform(1, 2)",
        "randstr(3)",
    ]
    named = fs.Session().sql("SELECT shuffle(array(1)), uniform(1, 2), randstr(3), rand() IS NOT NULL")
    assert named.columns[:3] == ["shuffle(array(1))", "uniform(1, 2)", "randstr(3)"]
    assert len(named.collect()) == 1
    s = fs.Session()
    twice = s.sql(
        "WITH q AS (SELECT random() AS r FROM range(4)) SELECT count(*) AS n FROM (SELECT * FROM q UNION SELECT * FROM q)"
    )
    assert twice.collect()[0]["n"] == 4


@pytest.mark.parametrize(
    ("sql", "error_class"),
    [
        ("SELECT rand(id) FROM range(3)", "SEED_EXPRESSION_IS_UNFOLDABLE"),
        ("SELECT rand(1.5)", "UNEXPECTED_INPUT_TYPE"),
        (
            "SELECT count(id) FILTER (WHERE rand(1) > 0.5) FROM range(3)",
            "INVALID_AGGREGATE_FILTER.NON_DETERMINISTIC",
        ),
    ],
)
def test_random_refusals_carry_sparks_error_class(spark, sql, error_class):
    with pytest.raises(AnalysisError, match=error_class):
        fs.Session().sql(sql).collect()
    with pytest.raises(Exception, match=error_class):
        spark.sql(sql).collect()


@pytest.mark.parametrize(
    ("sql", "error_class"),
    [
        ("SELECT map_from_arrays(array(1, NULL), array('a', 'b'))", "NULL_MAP_KEY"),
        ("SELECT map_from_arrays(array(1, 1), array('a', 'b'))", "DUPLICATED_MAP_KEY"),
        ("SELECT map_concat(map(1, 'a'), map(1, 'b'))", "DUPLICATED_MAP_KEY"),
        ("SELECT map_from_entries(array(struct(NULL, 'a')))", "NULL_MAP_KEY"),
        ("SELECT str_to_map('a:1,a:2')", "DUPLICATED_MAP_KEY"),
        ("SELECT map_concat(map(1, 'a'), NULL)", "MAP_CONCAT_DIFF_TYPES"),
        ("SELECT hmac('', 'x')", "HMAC_CRYPTO_ERROR"),
        ("SELECT parse_url('inva lid://spark.apache.org/path?query=1', 'QUERY')", "INVALID_URL"),
        ("SELECT sequence(1, 5, 0)", "Illegal sequence boundaries: 1 to 5 by 0"),
        ("SELECT sequence(5, 1, 1)", "Illegal sequence boundaries: 5 to 1 by 1"),
        ("SELECT sequence(1, 'a')", "CAST_INVALID_INPUT"),
        ("SELECT sequence(1, DATE'2024-01-01')", "SEQUENCE_WRONG_INPUT_TYPES"),
        ("SELECT map_from_arrays(array(1, 2), array('a'))", "must have the same length"),
    ],
)
def test_map_and_sequence_refusals_are_sparks(spark, sql, error_class):
    """The refusals of the map builders, ``sequence`` and ``parse_url``, with Spark's error
    class (or Spark's message where its error has no class)."""
    with pytest.raises(Exception, match=error_class):
        spark.sql(sql).collect()
    with pytest.raises(fs.FerroError, match=error_class):
        fs.Session().sql(sql).collect()


def test_map_builders_and_sequences_in_sql_match_pyspark(spark):
    """The SQL forms: empty ``map_concat()``, an empty sequence of one element, timestamps
    with a DATE start, leap-day month steps, and NULLs."""
    sql = (
        "SELECT map_concat() AS e, typeof(map_concat()) AS te, sequence(5, 5) AS one, "
        "sequence(DATE'2024-01-31', DATE'2024-05-01', INTERVAL 1 MONTH) AS months, "
        "sequence(DATE'2024-01-01', TIMESTAMP'2024-01-02 00:00:00', INTERVAL 12 HOUR) AS mixed, "
        "sequence(1, NULL) AS n, shuffle(CAST(NULL AS ARRAY<INT>), 1) AS sn, "
        "map_entries(map_from_entries(array(struct(1, 'x')))) AS round_trip, "
        "str_to_map('') AS empty_text, str_to_map(NULL) AS null_text, "
        "format_number(CAST(-0.0 AS DOUBLE), 1) AS negzero, format_number(1e20D, 1) AS big, "
        "format_number(CAST('NaN' AS DOUBLE), 2) AS nan, format_number(0.125D, 2) AS tie, "
        "format_number(1234.5D, '#,###.00') AS pattern, format_number(7L, '0000.00') AS padded, "
        "format_number(-1234567.891D, '') AS plain"
    )
    got = fs.Session().sql(sql).toArrow()
    want = spark.sql(sql).toArrow()
    assert got.schema.names == want.schema.names
    assert arrow_rows(got) == arrow_rows(want)


def test_json_text_functions_in_sql_match_pyspark(spark):
    """The SQL forms over NULL, whitespace, deep nesting and numbers Jackson refuses."""
    sql = (
        "SELECT json_array_length(NULL) AS n, json_object_keys(NULL) AS nk, "
        'json_array_length(\'  [ [[[]]], {"a": [1, {"b": 2}]} ] \') AS deep, '
        "json_array_length('[1.]') AS bad_point, json_array_length('[-]') AS bad_minus, "
        "json_array_length('[1e]') AS bad_exp, json_array_length('[tru]') AS bad_word, "
        "json_array_length('') AS empty, json_object_keys('{\"a\" 1}') AS no_colon, "
        'json_object_keys(\'{"x": [1, 2], "y": "\\\\n"}\') AS keys, '
        "json_array_length('[\"tab\there\"]') AS raw_tab, "
        r"""json_array_length("['a', 'b\\'c']") AS apos, json_object_keys("{'single': 1}") AS sk, """
        "json_array_length('[-Infinity]') AS inf"
    )
    got = fs.Session().sql(sql).toArrow()
    want = spark.sql(sql).toArrow()
    assert got.schema.names == want.schema.names
    assert got.schema.types == want.schema.types
    assert arrow_rows(got) == arrow_rows(want)


def test_version_names_sparks_release():
    """``version()``: the Spark release whose answers ferrospark gives, then ferrospark's own
    build where Spark puts its revision."""
    v = fs.Session().sql("SELECT version()").collect()[0][0]
    assert v.startswith("4.3.0 ferrospark-"), v


def test_ordered_and_collected_aggregates_in_sql_match_pyspark(spark):
    """``listagg`` / ``string_agg`` with WITHIN GROUP (each direction and NULL order), DISTINCT,
    FILTER and over a window; ``mode`` with its WITHIN GROUP forms (Spark names them with the
    opposite direction); ``try_sum`` / ``try_avg`` overflowing; ``percentile_approx`` of dates,
    timestamps and intervals, and a coarse accuracy."""
    queries = [
        "SELECT listagg(x, ',') WITHIN GROUP (ORDER BY y), listagg(x) WITHIN GROUP (ORDER BY y DESC NULLS FIRST), "
        "listagg(x, ';') WITHIN GROUP (ORDER BY y) FILTER (WHERE y > 0), "
        "string_agg(x, '-') WITHIN GROUP (ORDER BY y NULLS LAST), listagg(DISTINCT x, '|') WITHIN GROUP (ORDER BY x) "
        "FROM VALUES ('a', 2), ('b', 1), ('c', NULL), (NULL, 3), ('a', 0) t(x, y)",
        "SELECT listagg(x) FILTER (WHERE x > 'a'), listagg(x, 5), listagg(y) FROM VALUES ('a', 1), ('b', 2), ('c', 3) t(x, y)",
        "SELECT k, listagg(x, ',') WITHIN GROUP (ORDER BY x) OVER (PARTITION BY k) AS w FROM VALUES (1, 'b'), (1, 'a'), (2, 'c') t(k, x) ORDER BY k, w",
        "SELECT mode(x), mode(x, false), mode(x, true), mode() WITHIN GROUP (ORDER BY x), "
        "mode() WITHIN GROUP (ORDER BY x DESC) FROM VALUES (1), (2), (2), (1), (3), (NULL) t(x)",
        "SELECT g, mode(s), mode(d) FROM VALUES (1, 'b', 1.5), (1, 'a', 1.5), (1, 'b', 2.5), (2, NULL, NULL) t(g, s, d) GROUP BY g ORDER BY g",
        "SELECT try_sum(x), try_avg(x) FROM VALUES (9223372036854775807L), (1L) t(x)",
        "SELECT try_sum(x), try_avg(x) FROM VALUES (CAST(99999999999999999999999999999999999999 AS DECIMAL(38,0))), "
        "(CAST(99999999999999999999999999999999999999 AS DECIMAL(38,0))) t(x)",
        "SELECT percentile_approx(d, 0.5), percentile_approx(t, array(0.0, 1.0)), percentile_approx(x, 0.5) FROM VALUES "
        "(DATE'2024-01-01', TIMESTAMP'2024-01-01 00:00:00', INTERVAL 3 DAY), (DATE'2024-01-03', TIMESTAMP'2024-01-02 00:00:00', INTERVAL 1 DAY) t(d, t, x)",
        "SELECT percentile_approx(id, 0.5), percentile_approx(id, array(0.1, 0.25, 0.9), 100), approx_percentile(id * 1.5, 0.33, 50) "
        "FROM range(1, 1001, 1, 1)",
        "SELECT percentile_approx(x, 0.5) FROM VALUES (CAST(NULL AS INT)) t(x)",
    ]
    session = fs.Session()
    for sql in queries:
        got = session.sql(sql).toArrow()
        want = spark.sql(sql).toArrow()
        assert got.schema.names == want.schema.names, sql
        assert [str(t) for t in got.schema.types] == [str(t) for t in want.schema.types], sql
        assert arrow_rows(got) == arrow_rows(want), sql


@pytest.mark.parametrize(
    ("sql", "error_class"),
    [
        ("SELECT listagg(x, y) FROM VALUES ('a', ',') t(x, y)", "NON_FOLDABLE_INPUT"),
        (
            "SELECT listagg(DISTINCT x) WITHIN GROUP (ORDER BY y) FROM VALUES ('b', 1) t(x, y)",
            "MISMATCH_WITH_DISTINCT_INPUT",
        ),
        ("SELECT percentile_approx(x, 0.5, 0) FROM VALUES (1) t(x)", "VALUE_OUT_OF_RANGE"),
    ],
)
def test_collected_aggregate_refusals_are_sparks(spark, sql, error_class):
    assert_both_refuse(spark, sql, error_class)


def test_unary_minus_is_named_negative_as_pyspark(spark):
    """``-col`` is PySpark's ``negative(col)``: its name, and its values over numbers, decimals
    and day-time intervals."""
    import pyspark.sql.functions as P

    table = pa.table(
        {
            "i": pa.array([3, None, -2], pa.int32()),
            "x": pa.array([1.5, -0.0, None], pa.float64()),
            "d": pa.array(
                [dt.timedelta(days=1, seconds=5), None, dt.timedelta(microseconds=-7)], pa.duration("us")
            ),
        }
    )

    def build(m, df):
        return df.select(
            -m.col("i"), -m.col("x"), -m.col("d"), -(m.col("i") * 2), -m.col("i").cast("decimal(5,1)")
        )

    got = build(F, fs.Session().createDataFrame(table)).toArrow()
    want = build(
        P, spark.createDataFrame(table.to_pandas(), schema="i int, x double, d interval day to second")
    ).toArrow()
    assert got.schema.names == want.schema.names
    assert arrow_rows(got) == arrow_rows(want)
