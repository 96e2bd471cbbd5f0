"""Argument helpers shared by :mod:`ferrospark.functions` and its family modules.

PySpark's rule for a function's arguments: a ``str`` is a column name and a ``Column`` is
itself; ferrospark also takes other Python values as literals. Where PySpark's ``str``
argument is a value (a pattern, a format, pad text), :func:`_l` makes it a literal.
"""

from __future__ import annotations

from typing import Any

from . import _native
from .column import Column, col, lit

ColumnOrName = Column | str


def _c(x: Any) -> Column:
    """A column: itself, a column of that name, or a literal of any other value."""
    if isinstance(x, Column):
        return x
    if isinstance(x, str):
        return col(x)
    return lit(x)


def _call(name: str, *args: Any) -> Column:
    """The SQL function ``name`` over the arguments, each read by :func:`_c`."""
    return Column(_native.Expr.function(name, [_c(a)._expr for a in args]))


def _l(x: Any) -> Column:
    """A literal unless already a column: PySpark's ``str`` arguments that are values
    (patterns, formats, pad text), not column names."""
    return x if isinstance(x, Column) else lit(x)


def _call_mixed(name: str, *args: Any) -> Column:
    """The SQL function ``name`` over arguments that are already columns."""
    return Column(_native.Expr.function(name, [a._expr for a in args]))
