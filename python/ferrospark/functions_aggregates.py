"""Aggregate functions of ``pyspark.sql.functions`` under further names (``any_value``,
``array_agg``, ``every`` / ``some``, ``std``, ``approxCountDistinct``), re-exported by
:mod:`ferrospark.functions`."""

from __future__ import annotations

import warnings

from . import _native
from ._function_args import _c, _call, _call_mixed, _l
from .aggregate import AggColumn, _to_expr, approx_count_distinct
from .column import Column, _literal, lit
from .errors import AnalysisError

ColumnOrName = Column | str


def any_value(col: ColumnOrName, ignoreNulls: bool | Column | None = None) -> AggColumn:  # noqa: N803
    """Some value of the group (the first one read); with ``ignoreNulls`` a non-NULL one
    when the group has any."""
    if ignoreNulls is None:
        return AggColumn("any_value", [_to_expr(col)])
    flag = ignoreNulls if isinstance(ignoreNulls, bool) else None
    if isinstance(ignoreNulls, Column):
        text = str(ignoreNulls).lower()
        flag = {str(lit(True)).lower(): True, str(lit(False)).lower(): False}.get(text)
    if flag is None:
        raise AnalysisError(f"any_value: ignoreNulls must be a boolean literal, got {ignoreNulls!r}")
    return AggColumn("any_value", [_to_expr(col)], ignore_nulls=flag)


def histogram_numeric(col: ColumnOrName, nBins: int | Column) -> AggColumn:  # noqa: N803
    """An approximate histogram of ``nBins`` bins (at least 2) over a numeric, date,
    timestamp or interval column: an array of ``struct<x, y>``, ``x`` a bin's centre in the
    column's type and ``y`` its count; NULL for a group without values."""
    if isinstance(nBins, Column):
        return AggColumn("histogram_numeric", [_to_expr(col), _to_expr(nBins)])
    if not isinstance(nBins, int) or isinstance(nBins, bool):
        raise AnalysisError(f"histogram_numeric: nBins must be an integer, got {nBins!r}")
    return AggColumn("histogram_numeric", [_to_expr(col), _literal(nBins)])


def bit_and(col: ColumnOrName) -> AggColumn:
    """The bitwise AND of the group's non-NULL integers (NULL without values)."""
    return AggColumn("bit_and", [_to_expr(col)])


def bit_or(col: ColumnOrName) -> AggColumn:
    """The bitwise OR of the group's non-NULL integers (NULL without values)."""
    return AggColumn("bit_or", [_to_expr(col)])


def bit_xor(col: ColumnOrName) -> AggColumn:
    """The bitwise XOR of the group's non-NULL integers (NULL without values)."""
    return AggColumn("bit_xor", [_to_expr(col)])


def skewness(col: ColumnOrName) -> AggColumn:
    """The skewness of the group's values (Spark's central moments; NaN when they are all
    equal, NULL without values)."""
    return AggColumn("skewness", [_to_expr(col)])


def kurtosis(col: ColumnOrName) -> AggColumn:
    """The excess kurtosis of the group's values (``n * m4 / m2² - 3``; NaN when they are
    all equal, NULL without values)."""
    return AggColumn("kurtosis", [_to_expr(col)])


def array_agg(col: ColumnOrName) -> AggColumn:
    """The non-NULL values of each group as an array, in input order (``collect_list``)."""
    return AggColumn("collect_list", [_to_expr(col)])


def approxCountDistinct(col: ColumnOrName, rsd: float | None = None) -> AggColumn:  # noqa: N802
    """``approx_count_distinct``; deprecated in PySpark 2.1."""
    warnings.warn("Deprecated in 2.1, use approx_count_distinct instead.", FutureWarning, stacklevel=2)
    return approx_count_distinct(col, rsd)


def every(col: ColumnOrName) -> AggColumn:
    """True when every non-NULL value of the group is true (``bool_and``)."""
    return AggColumn("every", [_to_expr(col)])


def some(col: ColumnOrName) -> AggColumn:
    """True when some value of the group is true (``bool_or``)."""
    return AggColumn("some", [_to_expr(col)])


def std(col: ColumnOrName) -> AggColumn:
    """The sample standard deviation of the group (``stddev``; NULL for one value)."""
    return AggColumn("std", [_to_expr(col)])


def try_sum(col: ColumnOrName) -> Column:
    """``sum``, NULL where it overflows (a BIGINT or DECIMAL sum) instead of failing."""
    return _call("try_sum", col)


def try_avg(col: ColumnOrName) -> Column:
    """``avg``, NULL where a DECIMAL sum overflows instead of failing."""
    return _call("try_avg", col)


def mode(col: ColumnOrName, deterministic: bool = False) -> Column:
    """The most frequent non-NULL value of the group (among equally frequent ones, the
    smallest); NULL without values."""
    if deterministic:
        return _call_mixed("mode", _c(col), lit(True))
    return _call("mode", col)


def _listagg(name: str, col: ColumnOrName, delimiter: Column | str | bytes | None) -> Column:
    if delimiter is None:
        return _call(name, col)
    return _call_mixed(name, _c(col), _l(delimiter))


def listagg(col: ColumnOrName, delimiter: Column | str | bytes | None = None) -> Column:
    """The group's non-NULL strings (or bytes) joined with ``delimiter``, in input order;
    NULL without values."""
    return _listagg("listagg", col, delimiter)


def listagg_distinct(col: ColumnOrName, delimiter: Column | str | bytes | None = None) -> Column:
    """:func:`listagg` of the distinct values, each where it first appears."""
    return _listagg("listagg_distinct", col, delimiter)


def string_agg(col: ColumnOrName, delimiter: Column | str | bytes | None = None) -> Column:
    """:func:`listagg` under its other name."""
    return _listagg("string_agg", col, delimiter)


def string_agg_distinct(col: ColumnOrName, delimiter: Column | str | bytes | None = None) -> Column:
    """:func:`listagg_distinct` under its other name."""
    return _listagg("string_agg_distinct", col, delimiter)


def _percentage(percentage: Column | float | list[float] | tuple[float, ...]) -> Column:
    if isinstance(percentage, Column):
        return percentage
    if isinstance(percentage, (list, tuple)):
        return Column(_native.Expr.function("array", [lit(float(p))._expr for p in percentage]))
    return lit(float(percentage))


def percentile_approx(
    col: ColumnOrName,
    percentage: Column | float | list[float] | tuple[float, ...],
    accuracy: Column | int = 10000,
) -> Column:
    """The approximate percentile(s) of a numeric, date, timestamp or interval column, a value
    of the column (Spark's Greenwald-Khanna summary, relative error ``1 / accuracy``)."""
    return _call_mixed("percentile_approx", _c(col), _percentage(percentage), _l(accuracy))


def approx_percentile(
    col: ColumnOrName,
    percentage: Column | float | list[float] | tuple[float, ...],
    accuracy: Column | int = 10000,
) -> Column:
    """:func:`percentile_approx` under its other name."""
    return _call_mixed("approx_percentile", _c(col), _percentage(percentage), _l(accuracy))


def collect_union(col: ColumnOrName) -> Column:
    """The distinct non-NULL elements of the group's arrays (NULL arrays skipped); Spark's
    order is its hash set's, this one the order of first appearance."""
    return _call("collect_union", col)
