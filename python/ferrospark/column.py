"""Column expressions: ``fs.col``, ``fs.lit``, ``fs.expr`` and their operators.

A :class:`Column` wraps a native expression; ``str(column)`` is Spark SQL text that
``fs.expr`` parses back to the same expression, which is also how columns are pickled
(so they travel to Spark workers).
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from collections.abc import Iterable
from typing import Any

from . import _native

_EPOCH = _dt.date(1970, 1, 1)


def _literal(value: Any) -> _native.Expr:
    if value is None:
        return _native.Expr.lit_null()
    if isinstance(value, bool):
        return _native.Expr.lit_bool(value)
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return _native.Expr.lit_int(value)
        return _native.Expr.lit_decimal(str(value))
    if isinstance(value, float):
        return _native.Expr.lit_float(value)
    if isinstance(value, str):
        return _native.Expr.lit_str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _native.Expr.lit_bytes(bytes(value))
    if isinstance(value, _decimal.Decimal):
        return _native.Expr.lit_decimal(format(value, "f"))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            # Like Spark, a naive datetime is a wall-clock time in the session time zone.
            return _native.Expr.typed_string("TIMESTAMP", value.isoformat(sep=" "))
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return _native.Expr.lit_timestamp(micros, "UTC")
    if isinstance(value, _dt.date):
        return _native.Expr.lit_date((value - _EPOCH).days)
    if isinstance(value, Column):
        return value._expr
    raise TypeError(
        f"cannot make a literal of {type(value).__name__!r}: use None, bool, int, float, str, "
        "bytes, decimal.Decimal, datetime.date or datetime.datetime"
    )


class Column:
    """An expression over the columns of a table, with Spark SQL semantics."""

    __slots__ = ("_expr",)

    def __init__(self, expr: _native.Expr) -> None:
        self._expr = expr

    # -- operators ---------------------------------------------------------------
    def _bin(self, op: str, other: Any) -> Column:
        return Column(self._expr.binary(op, _literal(other)))

    def _rbin(self, op: str, other: Any) -> Column:
        return Column(_literal(other).binary(op, self._expr))

    def __add__(self, o: Any) -> Column:
        return self._bin("+", o)

    def __radd__(self, o: Any) -> Column:
        return self._rbin("+", o)

    def __sub__(self, o: Any) -> Column:
        return self._bin("-", o)

    def __rsub__(self, o: Any) -> Column:
        return self._rbin("-", o)

    def __mul__(self, o: Any) -> Column:
        return self._bin("*", o)

    def __rmul__(self, o: Any) -> Column:
        return self._rbin("*", o)

    def __truediv__(self, o: Any) -> Column:
        return self._bin("/", o)

    def __rtruediv__(self, o: Any) -> Column:
        return self._rbin("/", o)

    def __mod__(self, o: Any) -> Column:
        return self._bin("%", o)

    def __rmod__(self, o: Any) -> Column:
        return self._rbin("%", o)

    def __eq__(self, o: Any) -> Column:  # type: ignore[override]
        return self._bin("=", o)

    def __ne__(self, o: Any) -> Column:  # type: ignore[override]
        return self._bin("!=", o)

    def __lt__(self, o: Any) -> Column:
        return self._bin("<", o)

    def __le__(self, o: Any) -> Column:
        return self._bin("<=", o)

    def __gt__(self, o: Any) -> Column:
        return self._bin(">", o)

    def __ge__(self, o: Any) -> Column:
        return self._bin(">=", o)

    def __and__(self, o: Any) -> Column:
        return self._bin("and", o)

    def __rand__(self, o: Any) -> Column:
        return self._rbin("and", o)

    def __or__(self, o: Any) -> Column:
        return self._bin("or", o)

    def __ror__(self, o: Any) -> Column:
        return self._rbin("or", o)

    def __invert__(self) -> Column:
        return Column(self._expr.not_())

    def __neg__(self) -> Column:
        # PySpark's `-col` calls `negative`, and Spark names it so (`negative(k)`).
        return Column(_native.Expr.function("negative", [self._expr]))

    def __bool__(self) -> bool:
        raise TypeError(
            "a Column has no truth value: use '&' for AND, '|' for OR, '~' for NOT, "
            "and parentheses around comparisons"
        )

    __hash__ = None  # type: ignore[assignment]

    # -- predicates --------------------------------------------------------------
    def eq_null_safe(self, other: Any) -> Column:
        """``self <=> other``: true when both are NULL."""
        return self._bin("<=>", other)

    def is_null(self) -> Column:
        return Column(self._expr.is_null())

    def is_not_null(self) -> Column:
        return Column(self._expr.is_not_null())

    isNull = is_null  # noqa: N815 - PySpark spelling
    isNotNull = is_not_null  # noqa: N815

    def isin(self, *values: Any) -> Column:
        """``self IN (values)``; accepts ``isin([1, 2])`` or ``isin(1, 2)``."""
        if len(values) == 1 and isinstance(values[0], Iterable) and not isinstance(values[0], (str, bytes)):
            values = tuple(values[0])
        return Column(self._expr.isin([_literal(v) for v in values]))

    def between(self, low: Any, high: Any) -> Column:
        return Column(self._expr.between(_literal(low), _literal(high)))

    def eqNullSafe(self, other: Any) -> Column:  # noqa: N802 - PySpark's name
        """``<=>``."""
        return self.eq_null_safe(other)

    def rlike(self, pattern: str) -> Column:
        """True where the regular expression matches anywhere."""
        return Column(_native.Expr.function("rlike", [self._expr, _literal(pattern)]))

    def substr(self, start: Any, length: Any) -> Column:
        """``substring(self, start, length)``."""
        return Column(_native.Expr.function("substring", [self._expr, _literal(start), _literal(length)]))

    def like(self, pattern: str) -> Column:
        return Column(self._expr.like(_literal(pattern)))

    def ilike(self, pattern: str) -> Column:
        return Column(self._expr.like(_literal(pattern), case_insensitive=True))

    def startswith(self, prefix: Any) -> Column:
        return Column(self._expr.string_match("startswith", _literal(prefix)))

    def endswith(self, suffix: Any) -> Column:
        return Column(self._expr.string_match("endswith", _literal(suffix)))

    def contains(self, text: Any) -> Column:
        return Column(self._expr.string_match("contains", _literal(text)))

    # -- conversion and naming ---------------------------------------------------
    def cast(self, data_type: str) -> Column:
        """ANSI cast to a Spark type name (``"double"``, ``"decimal(10,2)"``, ``"date"``...)."""
        return Column(self._expr.cast(data_type))

    astype = cast

    def alias(self, name: str) -> Column:
        return Column(self._expr.alias(name))

    def getField(self, name: str) -> Column:  # noqa: N802 - PySpark spelling
        return Column(self._expr.field(name))

    def __getitem__(self, name: str) -> Column:
        return self.getField(name)

    def getItem(self, key: Any) -> Column:  # noqa: N802 - PySpark's name
        """An array's element at 0-based ``key`` or a map's value of ``key`` (``c[key]``)."""
        return Column(_native.Expr.function("__subscript", [self._expr, _literal(key)]))

    def isNaN(self) -> Column:  # noqa: N802 - PySpark's name
        """True for NaN."""
        return Column(_native.Expr.function("isnan", [self._expr]))

    def try_cast(self, dataType: Any) -> Column:  # noqa: N803 - PySpark's name
        """``TRY_CAST``: NULL where the value does not convert."""
        from .functions import expr as _sql

        t = (
            dataType
            if isinstance(dataType, str)
            else getattr(dataType, "simpleString", lambda: str(dataType))()
        )
        return _sql(f"try_cast({self} AS {t})")

    def transform(self, func: Any) -> Column:
        """``func(self)``: chains column transformations."""
        return func(self)

    def over(self, window: Any) -> Column:
        """This aggregate or window function over ``window``."""
        raise TypeError(
            f"{self} is not an aggregate or window function; call over() on F.sum(...), F.row_number(), ..."
        )

    def when(self, condition: Column, value: Any) -> Column:
        """Only after ``F.when(...)``: a plain column has no CASE to extend."""
        raise TypeError("when() can only be applied on a Column previously generated by when() function")

    def otherwise(self, value: Any) -> Column:
        """Only after ``F.when(...)``: a plain column has no CASE to end."""
        raise TypeError("otherwise() can only be applied on a Column previously generated by when() function")

    def outer(self) -> Column:
        """Outer references of correlated DataFrame subqueries are not supported: write the
        correlated subquery in SQL."""
        from .errors import UnsupportedError

        raise UnsupportedError(
            "Column.outer(): correlated DataFrame subqueries; write the subquery in Session.sql"
        )

    def bitwiseAND(self, other: Any) -> Column:  # noqa: N802 - PySpark's name
        """``self & other`` on integers."""
        return Column(_native.Expr.function("&", [self._expr, _literal(other)]))

    def bitwiseOR(self, other: Any) -> Column:  # noqa: N802 - PySpark's name
        """``self | other`` on integers."""
        return Column(_native.Expr.function("|", [self._expr, _literal(other)]))

    def bitwiseXOR(self, other: Any) -> Column:  # noqa: N802 - PySpark's name
        """``self ^ other`` on integers."""
        return Column(_native.Expr.function("^", [self._expr, _literal(other)]))

    def withField(self, fieldName: str, col: Column) -> Column:  # noqa: N802, N803 - PySpark's name
        """Struct field updates are not supported yet: rebuild the struct with ``F.struct``."""
        from .errors import UnsupportedError

        raise UnsupportedError(
            "Column.withField: rebuild the struct with F.struct(...) or named_struct in SQL"
        )

    def dropFields(self, *fieldNames: str) -> Column:  # noqa: N802, N803 - PySpark's name
        """Struct field removal is not supported yet: rebuild the struct with ``F.struct``."""
        from .errors import UnsupportedError

        raise UnsupportedError(
            "Column.dropFields: rebuild the struct with F.struct(...) or named_struct in SQL"
        )

    def asc(self) -> Column:
        return Column(self._expr.sort(True, True))

    def desc(self) -> Column:
        return Column(self._expr.sort(False, False))

    def asc_nulls_first(self) -> Column:
        return Column(self._expr.sort(True, True))

    def asc_nulls_last(self) -> Column:
        return Column(self._expr.sort(True, False))

    def desc_nulls_first(self) -> Column:
        return Column(self._expr.sort(False, True))

    def desc_nulls_last(self) -> Column:
        return Column(self._expr.sort(False, False))

    # -- text form -----------------------------------------------------------------
    @property
    def name(self) -> str:
        """The output name Spark would give this column."""
        return self._expr.output_name()

    def __str__(self) -> str:
        return str(self._expr)

    def __repr__(self) -> str:
        return f"Column<'{self._expr}'>"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_from_sql, (str(self._expr),))


def _from_sql(text: str) -> Column:
    return Column(_native.Expr.parse(text))


def col(name: str) -> Column:
    """A column by name, as PySpark reads it: ``"p.dept"`` is column ``dept`` of the DataFrame
    aliased ``p`` (or field ``dept`` of struct column ``p``), backquotes quote a part
    (``"`a.b`"``); a column whose own name has the dots is found too."""
    return Column(_native.Expr.column(name))


column = col


def lit(value: Any) -> Column:
    """A constant, typed as Spark types Python values (int -> INT/BIGINT, float -> DOUBLE...)."""
    return Column(_literal(value))


def expr(text: str) -> Column:
    """Parses Spark SQL expression text: ``fs.expr("a < 5 AND b IS NOT NULL")``."""
    return Column(_native.Expr.parse(text))


def to_filter(filter: Column | str | None) -> _native.Expr | None:
    """Accepts a Column, SQL text or None where a filter is expected."""
    if filter is None:
        return None
    if isinstance(filter, Column):
        return filter._expr
    if isinstance(filter, str):
        return _native.Expr.parse(filter)
    raise TypeError(f"filter must be a Column or SQL text, got {type(filter).__name__!r}")
