"""Predicates and calls by name of ``pyspark.sql.functions`` (``equal_null``,
``call_function``), re-exported by :mod:`ferrospark.functions`."""

from __future__ import annotations

from ._function_args import ColumnOrName, _c, _call
from .column import Column


def equal_null(col1: ColumnOrName, col2: ColumnOrName) -> Column:
    """``col1 <=> col2``: true when both are NULL, false when one is, else ``=``."""
    return Column(_c(col1)._expr.binary("<=>", _c(col2)._expr))


def call_function(funcName: str, *cols: ColumnOrName) -> Column:  # noqa: N803 - PySpark's name
    """The SQL function ``funcName`` over ``cols`` (``str``: column names), as
    ``expr("funcName(...)")`` would call it: ``call_function("upper", "s")``."""
    return _call(funcName, *cols)
