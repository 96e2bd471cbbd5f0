"""Predicates and calls by name of ``pyspark.sql.functions`` (``equal_null``,
``call_function``), re-exported by :mod:`ferrospark.functions`."""

from __future__ import annotations

from typing import Any

from ._function_args import ColumnOrName, _c, _call, _call_mixed, _l
from .column import Column


def equal_null(col1: ColumnOrName, col2: ColumnOrName) -> Column:
    """``col1 <=> col2``: true when both are NULL, false when one is, else ``=``."""
    return Column(_c(col1)._expr.binary("<=>", _c(col2)._expr))


def call_function(funcName: str, *cols: ColumnOrName) -> Column:  # noqa: N803 - PySpark's name
    """The SQL function ``funcName`` over ``cols`` (``str``: column names), as
    ``expr("funcName(...)")`` would call it: ``call_function("upper", "s")``."""
    return _call(funcName, *cols)


def current_database() -> Column:
    """The session's current database (``USE db``), as Spark names it: ``current_schema()``."""
    return _call("current_database")


def current_schema() -> Column:
    """:func:`current_database`."""
    return _call("current_schema")


def current_path() -> Column:
    """The function resolution path: the built-in and session functions, then the current
    database's."""
    return _call("current_path")


def version() -> Column:
    """The Spark version whose answers ferrospark gives, then ferrospark's own version."""
    return _call("version")


def uniform(min: Any, max: Any, seed: Any = None) -> Column:  # noqa: A002 - PySpark's names
    """A value drawn uniformly from [min, max), of the bounds' type, Spark's seeded sequence."""
    args = [_l(min), _l(max)] + ([] if seed is None else [_l(seed)])
    return _call_mixed("uniform", *args)


def randstr(length: Any, seed: Any = None) -> Column:
    """A string of ``length`` random characters of ``0-9a-zA-Z``, Spark's seeded sequence."""
    args = [_l(length)] + ([] if seed is None else [_l(seed)])
    return _call_mixed("randstr", *args)
