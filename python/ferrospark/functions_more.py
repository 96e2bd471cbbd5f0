"""Hashes, hyperbolic functions, string edits, URL coding, ``try_`` arithmetic and time-zone
functions of ``pyspark.sql.functions``, with PySpark's signatures, re-exported by
:mod:`ferrospark.functions`."""

from __future__ import annotations

from typing import Any

from ._function_args import ColumnOrName, _c, _call, _call_mixed, _l
from .column import Column, lit


def _unary(name: str, doc: str):  # type: ignore[no-untyped-def]
    def f(col: ColumnOrName) -> Column:
        return _call(name, col)

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = doc
    return f


sinh = _unary("sinh", "Hyperbolic sine.")
cosh = _unary("cosh", "Hyperbolic cosine.")
tanh = _unary("tanh", "Hyperbolic tangent.")
asinh = _unary("asinh", "Inverse hyperbolic sine.")
acosh = _unary("acosh", "Inverse hyperbolic cosine (NaN below 1).")
atanh = _unary("atanh", "Inverse hyperbolic tangent (NaN outside -1..1).")
factorial = _unary("factorial", "``n!`` as a BIGINT for 0 <= n <= 20, else NULL.")
md5 = _unary("md5", "The MD5 digest of the bytes (text as UTF-8) as 32 hex digits.")
sha1 = _unary("sha1", "The SHA-1 digest as 40 hex digits.")
sha = _unary("sha", "The SHA-1 digest as 40 hex digits (``sha1``).")
crc32 = _unary("crc32", "The CRC-32 of the bytes, a BIGINT.")
soundex = _unary("soundex", "The American Soundex code of the text.")
quote = _unary("quote", "The text in single quotes, quotes inside escaped with a backslash.")
dayname = _unary("dayname", "The day of the week's three-letter name (``Mon``).")
monthname = _unary("monthname", "The month's three-letter name (``Jan``).")


def hypot(col1: ColumnOrName | float, col2: ColumnOrName | float) -> Column:
    """``sqrt(col1² + col2²)`` without overflow in between."""
    return _call("hypot", col1, col2)


def sha2(col: ColumnOrName, numBits: int) -> Column:  # noqa: N803 - PySpark's name
    """The SHA-2 digest of ``numBits`` (224, 256, 384, 512; 0 is 256) as hex digits."""
    if numBits not in (0, 224, 256, 384, 512):
        from .errors import AnalysisError

        raise AnalysisError(
            f"[VALUE_NOT_ALLOWED] Value for `numBits` has to be amongst the following values: "
            f"[0, 224, 256, 384, 512], got {numBits!r}."
        )
    return _call_mixed("sha2", _c(col), lit(numBits))


def hash(*cols: ColumnOrName) -> Column:  # noqa: A001 - PySpark's name
    """Spark's Murmur3 hash of the columns (seed 42), an INT."""
    return _call("hash", *cols)


def xxhash64(*cols: ColumnOrName) -> Column:
    """Spark's XXH64 hash of the columns (seed 42), a BIGINT."""
    return _call("xxhash64", *cols)


def find_in_set(str: ColumnOrName, str_array: ColumnOrName) -> Column:  # noqa: A002
    """The 1-based position of ``str`` among the comma-separated items of ``str_array``
    (0 when absent or when ``str`` holds a comma)."""
    return _call("find_in_set", str, str_array)


def levenshtein(left: ColumnOrName, right: ColumnOrName, threshold: int | None = None) -> Column:
    """The edit distance in characters; -1 when over ``threshold``."""
    if threshold is None:
        return _call("levenshtein", left, right)
    return _call_mixed("levenshtein", _c(left), _c(right), lit(threshold))


def sentences(
    string: ColumnOrName, language: ColumnOrName | None = None, country: ColumnOrName | None = None
) -> Column:
    """The text's sentences, each an array of its words, as Java's ``BreakIterator`` cuts them
    (missing locale parts are empty strings, as PySpark passes them)."""
    return _call(
        "sentences",
        string,
        lit("") if language is None else language,
        lit("") if country is None else country,
    )


def substring_index(str: ColumnOrName, delim: str, count: int) -> Column:  # noqa: A002
    """The text before the ``count``-th ``delim`` (after the ``-count``-th from the end)."""
    return _call_mixed("substring_index", _c(str), _l(delim), lit(count))


def overlay(
    src: ColumnOrName,
    replace: ColumnOrName,
    pos: ColumnOrName | int,
    len: ColumnOrName | int = -1,  # noqa: A002 - PySpark's name
) -> Column:
    """``src`` with ``len`` characters (bytes) from ``pos`` replaced by ``replace``
    (``len`` -1: the length of ``replace``)."""
    return _call_mixed("overlay", _c(src), _c(replace), _c(pos), _c(len))


def mask(
    col: ColumnOrName,
    upperChar: ColumnOrName | None = None,  # noqa: N803 - PySpark's names
    lowerChar: ColumnOrName | None = None,  # noqa: N803
    digitChar: ColumnOrName | None = None,  # noqa: N803
    otherChar: ColumnOrName | None = None,  # noqa: N803
) -> Column:
    """Upper-case letters as ``X``, lower-case as ``x``, digits as ``n`` (or the characters
    given); other characters kept unless ``otherChar`` is given."""
    subs = [
        lit("X") if upperChar is None else _l(upperChar),
        lit("x") if lowerChar is None else _l(lowerChar),
        lit("n") if digitChar is None else _l(digitChar),
        lit(None) if otherChar is None else _l(otherChar),
    ]
    return _call_mixed("mask", _c(col), *subs)


def chr(n: ColumnOrName) -> Column:  # noqa: A001 - PySpark's name
    """The character of code ``n % 256`` (empty for a negative ``n``)."""
    return _call("chr", n)


def char(col: ColumnOrName) -> Column:
    """:func:`chr`."""
    return _call("char", col)


def url_encode(str: ColumnOrName) -> Column:  # noqa: A002
    """``application/x-www-form-urlencoded`` text, as Java's ``URLEncoder``."""
    return _call("url_encode", str)


def url_decode(str: ColumnOrName) -> Column:  # noqa: A002
    """The inverse of :func:`url_encode`; malformed text raises ``CANNOT_DECODE_URL``."""
    return _call("url_decode", str)


def try_url_decode(str: ColumnOrName) -> Column:  # noqa: A002
    """:func:`url_decode`, NULL for malformed text."""
    return _call("try_url_decode", str)


def try_add(left: ColumnOrName, right: ColumnOrName) -> Column:
    """``left + right`` (numbers, dates, timestamps, intervals), NULL on overflow."""
    return _call("try_add", left, right)


def try_subtract(left: ColumnOrName, right: ColumnOrName) -> Column:
    """``left - right``, NULL on overflow."""
    return _call("try_subtract", left, right)


def try_multiply(left: ColumnOrName, right: ColumnOrName) -> Column:
    """``left * right``, NULL on overflow."""
    return _call("try_multiply", left, right)


def try_mod(left: ColumnOrName, right: ColumnOrName) -> Column:
    """``left % right``, NULL for a zero divisor."""
    return _call("try_mod", left, right)


def try_to_timestamp(col: ColumnOrName, format: ColumnOrName | None = None) -> Column:  # noqa: A002
    """``to_timestamp``, NULL for text that does not parse."""
    if format is None:
        return _call("try_to_timestamp", col)
    return _call("try_to_timestamp", col, format)


def try_to_date(col: ColumnOrName, format: str | None = None) -> Column:  # noqa: A002
    """``to_date``, NULL for text that does not parse."""
    if format is None:
        return _call("try_to_date", col)
    return _call_mixed("try_to_date", _c(col), _l(format))


def try_make_timestamp(
    years: ColumnOrName | None = None,
    months: ColumnOrName | None = None,
    days: ColumnOrName | None = None,
    hours: ColumnOrName | None = None,
    mins: ColumnOrName | None = None,
    secs: ColumnOrName | None = None,
    timezone: ColumnOrName | None = None,
    date: ColumnOrName | None = None,
    time: ColumnOrName | None = None,
) -> Column:
    """``make_timestamp``, NULL for fields that make no timestamp. The ``date`` / ``time``
    form needs Spark's TIME type, which ferrospark does not have."""
    if date is not None or time is not None:
        from .errors import AnalysisError

        raise AnalysisError(
            "[UNSUPPORTED_FEATURE] try_make_timestamp(date, time): the TIME type is not supported"
        )
    fields = [years, months, days, hours, mins, secs]
    args = [lit(0) if a is None else _c(a) for a in fields]
    if timezone is not None:
        args.append(_c(timezone))
    return _call_mixed("try_make_timestamp", *args)


def try_make_timestamp_ltz(
    years: ColumnOrName,
    months: ColumnOrName,
    days: ColumnOrName,
    hours: ColumnOrName,
    mins: ColumnOrName,
    secs: ColumnOrName,
    timezone: ColumnOrName | None = None,
) -> Column:
    """``make_timestamp_ltz``, NULL for fields that make no timestamp."""
    args = [years, months, days, hours, mins, secs] + ([] if timezone is None else [timezone])
    return _call("try_make_timestamp_ltz", *args)


def try_make_interval(
    years: ColumnOrName | None = None,
    months: ColumnOrName | None = None,
    weeks: ColumnOrName | None = None,
    days: ColumnOrName | None = None,
    hours: ColumnOrName | None = None,
    mins: ColumnOrName | None = None,
    secs: ColumnOrName | None = None,
) -> Column:
    """``make_interval``, NULL on overflow."""
    fields = (years, months, weeks, days, hours, mins, secs)
    return _call("try_make_interval", *[a if a is not None else lit(0) for a in fields])


def from_utc_timestamp(timestamp: ColumnOrName, tz: Column | str) -> Column:
    """The UTC wall-clock time of ``timestamp`` taken as a time in zone ``tz``."""
    return _call_mixed("from_utc_timestamp", _c(timestamp), _l(tz))


def to_utc_timestamp(timestamp: ColumnOrName, tz: Column | str) -> Column:
    """The wall-clock time of ``timestamp`` in zone ``tz`` taken as a UTC time."""
    return _call_mixed("to_utc_timestamp", _c(timestamp), _l(tz))


def convert_timezone(sourceTz: Column | None, targetTz: Column, sourceTs: ColumnOrName) -> Column:  # noqa: N803
    """A TIMESTAMP_NTZ: the wall-clock time ``sourceTs`` in ``sourceTz`` (the session zone
    when None) as the wall-clock time in ``targetTz``."""
    if sourceTz is None:
        return _call_mixed("convert_timezone", _l(targetTz), _c(sourceTs))
    return _call_mixed("convert_timezone", _l(sourceTz), _l(targetTz), _c(sourceTs))


array_distinct = _unary(
    "array_distinct", "The array's distinct elements, in first-seen order (one NULL at most)."
)
array_max = _unary("array_max", "The array's greatest non-NULL element (NaN above every number).")
array_min = _unary("array_min", "The array's least non-NULL element.")
flatten = _unary("flatten", "An array of arrays as one array; NULL if any inner array is NULL.")


def array_union(col1: ColumnOrName, col2: ColumnOrName) -> Column:
    """The distinct elements of both arrays, ``col1``'s first."""
    return _call("array_union", col1, col2)


def array_intersect(col1: ColumnOrName, col2: ColumnOrName) -> Column:
    """The distinct elements of ``col1`` that ``col2`` holds."""
    return _call("array_intersect", col1, col2)


def array_except(col1: ColumnOrName, col2: ColumnOrName) -> Column:
    """The distinct elements of ``col1`` that ``col2`` does not hold."""
    return _call("array_except", col1, col2)


def arrays_overlap(a1: ColumnOrName, a2: ColumnOrName) -> Column:
    """Whether the arrays share a non-NULL element (NULL when they do not but hold a NULL)."""
    return _call("arrays_overlap", a1, a2)


def array_position(col: ColumnOrName, value: Any) -> Column:
    """The 1-based position of ``value``'s first occurrence (0 when absent), a BIGINT."""
    return _call_mixed("array_position", _c(col), _l(value))


def array_remove(col: ColumnOrName, element: Any) -> Column:
    """The array without the elements equal to ``element``."""
    return _call_mixed("array_remove", _c(col), _l(element))


def array_join(col: ColumnOrName, delimiter: str, null_replacement: str | None = None) -> Column:
    """The elements as text joined by ``delimiter``; NULLs skipped, or written as
    ``null_replacement``."""
    args = [_c(col), _l(delimiter)] + ([] if null_replacement is None else [_l(null_replacement)])
    return _call_mixed("array_join", *args)


def slice(x: ColumnOrName, start: ColumnOrName | int, length: ColumnOrName | int) -> Column:  # noqa: A001
    """``length`` elements from the 1-based ``start`` (negative: from the end)."""
    return _call_mixed("slice", _c(x), _c(start), _c(length))


def array_repeat(col: ColumnOrName, count: ColumnOrName | int) -> Column:
    """An array of ``count`` copies of ``col``."""
    return _call_mixed("array_repeat", _c(col), _c(count))


def _constant(name: str, doc: str):  # type: ignore[no-untyped-def]
    def f() -> Column:
        return _call_mixed(name)

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = doc
    return f


current_timezone = _constant("current_timezone", "The session time zone (``spark.sql.session.timeZone``).")
current_catalog = _constant("current_catalog", "The current catalog: ``spark_catalog``.")
current_user = _constant("current_user", "The user running the session (``SPARK_USER``, else the login).")
user = _constant("user", ":func:`current_user`.")
session_user = _constant("session_user", ":func:`current_user`.")


def _timestamp_fields(name: str, fields: list, date: object, time: object) -> Column:
    if date is not None or time is not None:
        from .errors import AnalysisError

        raise AnalysisError(f"[UNSUPPORTED_FEATURE] {name}(date, time): the TIME type is not supported")
    return _call_mixed(name, *[lit(0) if a is None else _c(a) for a in fields])


def make_timestamp_ntz(
    years: ColumnOrName | None = None,
    months: ColumnOrName | None = None,
    days: ColumnOrName | None = None,
    hours: ColumnOrName | None = None,
    mins: ColumnOrName | None = None,
    secs: ColumnOrName | None = None,
    date: ColumnOrName | None = None,
    time: ColumnOrName | None = None,
) -> Column:
    """A TIMESTAMP_NTZ from its fields (seconds with a fraction)."""
    return _timestamp_fields("make_timestamp_ntz", [years, months, days, hours, mins, secs], date, time)


def try_make_timestamp_ntz(
    years: ColumnOrName | None = None,
    months: ColumnOrName | None = None,
    days: ColumnOrName | None = None,
    hours: ColumnOrName | None = None,
    mins: ColumnOrName | None = None,
    secs: ColumnOrName | None = None,
    date: ColumnOrName | None = None,
    time: ColumnOrName | None = None,
) -> Column:
    """:func:`make_timestamp_ntz`, NULL for fields that make no timestamp."""
    return _timestamp_fields("try_make_timestamp_ntz", [years, months, days, hours, mins, secs], date, time)


def uuid(seed: Column | int | None = None) -> Column:
    """A random version-4 UUID per row. A seed (Spark's reproducible sequence) is not
    supported."""
    if seed is not None:
        from .errors import UnsupportedError

        raise UnsupportedError("uuid(seed): Spark's seeded sequence is not reproduced; call uuid()")
    return _call_mixed("uuid")


def _seed(seed: int | None) -> Column:
    """A seed as Spark's analyzer fixes it: one drawn now when none is given, so every use of
    the column draws the same values (and its name shows the seed, as Spark's does)."""
    import random as _random

    chosen = _random.getrandbits(63) - (1 << 62) if seed is None else int(seed)
    return lit(chosen)


def rand(seed: int | None = None) -> Column:
    """Uniform values in [0, 1), Spark's seeded sequence (``rand(0)`` gives Spark's values on one
    partition)."""
    return _call_mixed("rand", _seed(seed))


def random(seed: int | None = None) -> Column:
    """``rand``: uniform values in [0, 1)."""
    return _call_mixed("rand", _seed(seed))


def randn(seed: int | None = None) -> Column:
    """Standard normal values, Spark's seeded sequence."""
    return _call_mixed("randn", _seed(seed))


def monotonically_increasing_id() -> Column:
    """Increasing 64-bit ids: Spark's ``partition << 33 | row``, every row in partition 0
    here (rows numbered as they are drawn)."""
    return _call_mixed("monotonically_increasing_id")


def spark_partition_id() -> Column:
    """The partition a row is in: 0, since one query's rows form one partition here."""
    return _call_mixed("spark_partition_id")
