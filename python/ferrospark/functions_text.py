"""String functions of ``pyspark.sql.functions`` (lengths, substring tests, LIKE), re-exported
by :mod:`ferrospark.functions`."""

from __future__ import annotations

from typing import Any

from . import _native
from ._function_args import ColumnOrName, _c, _call
from .column import Column, lit
from .errors import AnalysisError


def bit_length(col: ColumnOrName) -> Column:
    """The length of the string or bytes in bits (a string's UTF-8 bytes times 8)."""
    return _call("bit_length", col)


def octet_length(col: ColumnOrName) -> Column:
    """The length of the string (its UTF-8 encoding) or of the bytes, in bytes."""
    return _call("octet_length", col)


def contains(left: ColumnOrName, right: ColumnOrName) -> Column:
    """Whether ``right`` occurs in ``left`` (strings or bytes; NULL if either is NULL).
    As in PySpark, a ``str`` is a column name: ``contains("s", lit("x"))``."""
    return Column(_c(left)._expr.string_match("contains", _c(right)._expr))


def startswith(str: ColumnOrName, prefix: ColumnOrName) -> Column:  # noqa: A002 - PySpark's name
    """Whether ``str`` starts with ``prefix`` (strings or bytes; NULL if either is NULL)."""
    return Column(_c(str)._expr.string_match("startswith", _c(prefix)._expr))


def endswith(str: ColumnOrName, suffix: ColumnOrName) -> Column:  # noqa: A002 - PySpark's name
    """Whether ``str`` ends with ``suffix`` (strings or bytes; NULL if either is NULL)."""
    return Column(_c(str)._expr.string_match("endswith", _c(suffix)._expr))


def _escape(escapeChar: Any) -> None:  # noqa: N803 - PySpark's name
    """Only the default escape, a backslash, is supported: ``ESCAPE`` is not parsed yet."""
    if escapeChar is None:
        return
    esc = lit(escapeChar) if isinstance(escapeChar, str) else escapeChar
    if isinstance(esc, Column) and str(esc) == str(lit("\\")):
        return
    raise AnalysisError(
        "[UNSUPPORTED_FEATURE] LIKE with an escape character other than '\\' is not supported "
        "yet; write the pattern with '\\' as its escape"
    )


def like(str: ColumnOrName, pattern: ColumnOrName, escapeChar: Column | None = None) -> Column:  # noqa: A002, N803
    """``str LIKE pattern``: ``_`` any character, ``%`` any run, ``\\`` escapes. ``pattern``
    is a column (a ``str`` names one, as in PySpark: ``like("s", lit("a%"))``)."""
    _escape(escapeChar)
    return Column(_c(str)._expr.like(_c(pattern)._expr, False, False))


def ilike(str: ColumnOrName, pattern: ColumnOrName, escapeChar: Column | None = None) -> Column:  # noqa: A002, N803
    """``str ILIKE pattern``: :func:`like` ignoring case."""
    _escape(escapeChar)
    return Column(_c(str)._expr.like(_c(pattern)._expr, False, True))


def to_number(col: ColumnOrName, format: ColumnOrName) -> Column:  # noqa: A002 - PySpark's name
    """Text read as a DECIMAL by a Spark number format (``'S$999,999.99MI'``: ``0``/``9``
    digits, ``.``/``D``, ``,``/``G``, ``$``, ``S``, ``MI``, ``PR``); text that does not match
    raises ``INVALID_FORMAT.MISMATCH_INPUT``. As in PySpark, a ``str`` format is a column name:
    pass ``lit('999')``."""
    return _call("to_number", col, format)


def try_to_number(col: ColumnOrName, format: ColumnOrName) -> Column:  # noqa: A002 - PySpark's name
    """:func:`to_number`, NULL for text that does not match the format."""
    return _call("try_to_number", col, format)


def format_string(format: str, *cols: ColumnOrName) -> Column:  # noqa: A002 - PySpark's name
    """Java's ``String.format`` over the columns (``%s %d %x %f %e %g %c %b %%``, with
    argument indexes, flags, widths and precisions)."""
    return Column(_native.Expr.function("format_string", [lit(format)._expr] + [_c(c)._expr for c in cols]))


def printf(format: ColumnOrName, *cols: ColumnOrName) -> Column:  # noqa: A002 - PySpark's name
    """:func:`format_string` with the format a column (a ``str`` is a column name)."""
    return _call("printf", format, *cols)


def parse_url(
    url: ColumnOrName,
    partToExtract: ColumnOrName,  # noqa: N803 - PySpark's name
    key: ColumnOrName | None = None,
) -> Column:
    """A part of the URL (``HOST``, ``PATH``, ``QUERY``, ``REF``, ``PROTOCOL``, ``FILE``,
    ``AUTHORITY``, ``USERINFO``; ``QUERY`` with ``key``: that key's value) as
    ``java.net.URI`` reads it; an invalid URL fails (``INVALID_URL``)."""
    args = [url, partToExtract] + ([] if key is None else [key])
    return _call("parse_url", *args)


def try_parse_url(
    url: ColumnOrName,
    partToExtract: ColumnOrName,  # noqa: N803 - PySpark's name
    key: ColumnOrName | None = None,
) -> Column:
    """:func:`parse_url`, NULL for an invalid URL."""
    args = [url, partToExtract] + ([] if key is None else [key])
    return _call("try_parse_url", *args)


def to_base32(col: ColumnOrName) -> Column:
    """The bytes (text as UTF-8) in RFC 4648 base32, padded."""
    return _call("to_base32", col)


def from_base32(col: ColumnOrName) -> Column:
    """The bytes of base32 text (either case)."""
    return _call("from_base32", col)


def json_array_length(col: ColumnOrName) -> Column:
    """The number of elements of the outermost JSON array; NULL for invalid JSON or another
    value."""
    return _call("json_array_length", col)


def json_object_keys(col: ColumnOrName) -> Column:
    """The keys of the outermost JSON object, in order; NULL for invalid JSON or another
    value."""
    return _call("json_object_keys", col)


def hmac(key: ColumnOrName, message: ColumnOrName, algorithm: ColumnOrName | None = None) -> Column:
    """The HMAC of ``message`` under ``key`` (``SHA-256``; also ``SHA-512``, ``SHA-384``,
    ``SHA-224``, ``SHA-1``, ``MD5``), as bytes."""
    args = [key, message] + ([] if algorithm is None else [algorithm])
    return _call("hmac", *args)


def jaro_winkler_similarity(left: ColumnOrName, right: ColumnOrName) -> Column:
    """The Jaro-Winkler similarity of two strings, from 0 to 1."""
    return _call("jaro_winkler_similarity", left, right)


def format_number(col: ColumnOrName, d: int | str) -> Column:
    """The number with thousands separators and ``d`` decimal places (HALF_EVEN), or in a
    ``DecimalFormat`` pattern of ``#``, ``0``, ``,`` and ``.``; NULL for a negative ``d``."""
    return Column(_native.Expr.function("format_number", [_c(col)._expr, lit(d)._expr]))
