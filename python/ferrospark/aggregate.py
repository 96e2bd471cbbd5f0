"""Aggregation: ``fs.aggregate`` and the aggregate functions (``fs.sum``, ``fs.count``, ...).

An aggregate function returns an :class:`AggColumn`; ``fs.aggregate(data, by, aggs)`` groups
``data`` by ``by`` and computes them with Spark's hash / object-hash / sort aggregation,
natively. Output columns are the keys, then one column per aggregate, named as Spark names
them (``sum(x)``, ``count(1)``, ``count(DISTINCT x)``) unless aliased.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from . import _native
from .column import Column, _literal, col

if TYPE_CHECKING:
    from .session import Session

ColumnOrName: TypeAlias = "Column | str"


def _to_expr(c: ColumnOrName) -> _native.Expr:
    if isinstance(c, Column):
        return c._expr
    if isinstance(c, str):
        return col(c)._expr
    raise TypeError(f"expected a column name or a Column, got {type(c).__name__!r}")


class AggColumn:
    """An aggregate function call: ``fs.sum("x").alias("total")``."""

    __slots__ = ("_alias", "_args", "_distinct", "_ignore_nulls", "_name")

    def __init__(
        self,
        name: str,
        args: Sequence[_native.Expr],
        *,
        distinct: bool = False,
        ignore_nulls: bool = False,
        alias: str | None = None,
    ) -> None:
        self._name = name
        self._args = list(args)
        self._distinct = distinct
        self._ignore_nulls = ignore_nulls
        self._alias = alias

    def alias(self, name: str) -> AggColumn:
        """The same aggregate under another output name."""
        return AggColumn(
            self._name, self._args, distinct=self._distinct, ignore_nulls=self._ignore_nulls, alias=name
        )

    def over(self, spec: Any) -> Any:
        """This aggregate over each row's frame of a window (``fs.Window...``); see
        :func:`ferrospark.window`."""
        from .window import WindowColumn, WindowFunction

        if self._distinct:
            from .errors import AnalysisError

            raise AnalysisError(
                f"{self._sql()}: DISTINCT aggregates are not window functions (Spark refuses them too)"
            )
        fn = WindowFunction(
            self._name, [Column(a) for a in self._args], ignore_nulls=self._ignore_nulls, aggregate=True
        )
        return WindowColumn(fn, spec, self._alias)

    def _spec(self) -> tuple[str, list[_native.Expr], bool, bool, str | None]:
        return (self._name, self._args, self._distinct, self._ignore_nulls, self._alias)

    def _sql(self) -> str:
        args = ", ".join(str(a) for a in self._args) or ("1" if self._name == "count" else "")
        return f"{self._name}({'DISTINCT ' if self._distinct else ''}{args})"

    @property
    def name(self) -> str:
        """The output column name."""
        return _native.aggregate_name(self._spec())

    def __str__(self) -> str:
        text = self._sql()
        return f"{text} AS {self._alias}" if self._alias else text

    def __repr__(self) -> str:
        return f"AggColumn<'{self}'>"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (
            _agg_from_sql,
            (self._name, [str(a) for a in self._args], self._distinct, self._ignore_nulls, self._alias),
        )


def _agg_from_sql(
    name: str, args: list[str], distinct: bool, ignore_nulls: bool, alias: str | None
) -> AggColumn:
    return AggColumn(
        name,
        [_native.Expr.parse(a) for a in args],
        distinct=distinct,
        ignore_nulls=ignore_nulls,
        alias=alias,
    )


def _fn(name: str, c: ColumnOrName, **kw: Any) -> AggColumn:
    return AggColumn(name, [_to_expr(c)], **kw)


def count(c: ColumnOrName | None = None) -> AggColumn:
    """``count(*)`` (no argument, or ``"*"``) or ``count(c)``: rows where ``c`` is not NULL."""
    if c is None or (isinstance(c, str) and c == "*"):
        return AggColumn("count", [])
    return _fn("count", c)


def count_distinct(c: ColumnOrName, *cols: ColumnOrName) -> AggColumn:
    """``count(DISTINCT c, ...)``: distinct non-NULL tuples."""
    return AggColumn("count", [_to_expr(x) for x in (c, *cols)], distinct=True)


countDistinct = count_distinct  # noqa: N816 - PySpark spelling


def sum(c: ColumnOrName) -> AggColumn:  # noqa: A001 - Spark's name
    """``sum(c)``: bigint for integers (ANSI overflow error), double, or decimal(p+10, s)."""
    return _fn("sum", c)


def sum_distinct(c: ColumnOrName) -> AggColumn:
    """``sum(DISTINCT c)``."""
    return _fn("sum", c, distinct=True)


def avg(c: ColumnOrName) -> AggColumn:
    """``avg(c)``: double, or decimal(p+4, s+4) for decimals."""
    return _fn("avg", c)


def mean(c: ColumnOrName) -> AggColumn:
    """``mean(c)`` (Spark names the column ``avg(c)``)."""
    return _fn("avg", c)


def min(c: ColumnOrName) -> AggColumn:  # noqa: A001 - Spark's name
    """``min(c)`` in Spark's ordering (NaN is the largest value)."""
    return _fn("min", c)


def max(c: ColumnOrName) -> AggColumn:  # noqa: A001 - Spark's name
    """``max(c)`` in Spark's ordering (NaN is the largest value)."""
    return _fn("max", c)


def first(c: ColumnOrName, ignore_nulls: bool = False) -> AggColumn:
    """``first(c)``: the first value in input order (NULL included unless ``ignore_nulls``)."""
    return _fn("first", c, ignore_nulls=ignore_nulls)


def last(c: ColumnOrName, ignore_nulls: bool = False) -> AggColumn:
    """``last(c)``: the last value in input order (NULL included unless ``ignore_nulls``)."""
    return _fn("last", c, ignore_nulls=ignore_nulls)


def stddev(c: ColumnOrName) -> AggColumn:
    """``stddev(c)``: sample standard deviation (NULL for one value)."""
    return _fn("stddev", c)


def stddev_samp(c: ColumnOrName) -> AggColumn:
    """``stddev_samp(c)``."""
    return _fn("stddev_samp", c)


def stddev_pop(c: ColumnOrName) -> AggColumn:
    """``stddev_pop(c)``: population standard deviation."""
    return _fn("stddev_pop", c)


def variance(c: ColumnOrName) -> AggColumn:
    """``variance(c)``: sample variance (NULL for one value)."""
    return _fn("variance", c)


def var_samp(c: ColumnOrName) -> AggColumn:
    """``var_samp(c)``."""
    return _fn("var_samp", c)


def var_pop(c: ColumnOrName) -> AggColumn:
    """``var_pop(c)``: population variance."""
    return _fn("var_pop", c)


def corr(col1: ColumnOrName, col2: ColumnOrName) -> AggColumn:
    """``corr(col1, col2)``: Pearson's correlation of the pairs without a NULL."""
    return AggColumn("corr", [_to_expr(col1), _to_expr(col2)])


def covar_pop(col1: ColumnOrName, col2: ColumnOrName) -> AggColumn:
    """``covar_pop(col1, col2)``: population covariance of the pairs without a NULL."""
    return AggColumn("covar_pop", [_to_expr(col1), _to_expr(col2)])


def covar_samp(col1: ColumnOrName, col2: ColumnOrName) -> AggColumn:
    """``covar_samp(col1, col2)``: sample covariance (NULL for one pair)."""
    return AggColumn("covar_samp", [_to_expr(col1), _to_expr(col2)])


def regr_sxx(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_sxx(y, x)``: the sum of squares of ``x`` over the pairs without a NULL."""
    return AggColumn("regr_sxx", [_to_expr(y), _to_expr(x)])


def regr_syy(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_syy(y, x)``: the sum of squares of ``y`` over the pairs without a NULL."""
    return AggColumn("regr_syy", [_to_expr(y), _to_expr(x)])


def regr_slope(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_slope(y, x)``: the least-squares slope (NULL when ``x`` does not vary)."""
    return AggColumn("regr_slope", [_to_expr(y), _to_expr(x)])


def _counted(condition: _native.Expr, name: str) -> AggColumn:
    """``count`` of the rows where ``condition`` holds, named ``name``."""
    when = _native.Expr.parse(f"CASE WHEN {condition} THEN 1 END")
    return AggColumn("count", [when], alias=name)


def count_if(col: ColumnOrName) -> AggColumn:
    """``count_if(col)``: the rows where ``col`` is true."""
    c = _to_expr(col)
    return _counted(c, f"count_if({c.output_name()})")


def regr_count(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_count(y, x)``: the pairs without a NULL."""
    ye, xe = _to_expr(y), _to_expr(x)
    both = _native.Expr.parse(f"({ye}) IS NOT NULL AND ({xe}) IS NOT NULL")
    return _counted(both, f"regr_count({ye.output_name()}, {xe.output_name()})")


def bool_and(c: ColumnOrName) -> AggColumn:
    """``bool_and(c)``: true when every non-NULL value is true."""
    return _fn("bool_and", c)


def bool_or(c: ColumnOrName) -> AggColumn:
    """``bool_or(c)``: true when some value is true."""
    return _fn("bool_or", c)


def collect_list(c: ColumnOrName) -> AggColumn:
    """``collect_list(c)``: the non-NULL values of each group, in input order."""
    return _fn("collect_list", c)


def collect_set(c: ColumnOrName) -> AggColumn:
    """``collect_set(c)``: the distinct non-NULL values of each group (order not defined)."""
    return _fn("collect_set", c)


def percentile(c: ColumnOrName, percentage: float | Sequence[float]) -> AggColumn:
    """``percentile(c, p)``: the exact percentile, interpolated like Spark; a list of
    percentages gives an array."""
    if isinstance(percentage, (list, tuple)):
        p = _native.Expr.function("array", [_literal(float(x)) for x in percentage])
    else:
        p = _literal(float(percentage))
    return AggColumn("percentile", [_to_expr(c), p])


def median(c: ColumnOrName) -> AggColumn:
    """``median(c)``: the exact median (``percentile(c, 0.5)``), as a double."""
    return _fn("median", c)


def approx_count_distinct(c: ColumnOrName, rsd: float | None = None) -> AggColumn:
    """``approx_count_distinct(c, rsd=0.05)``: Spark's HyperLogLog++ estimate, bit for bit."""
    args = [_to_expr(c)]
    if rsd is not None:
        args.append(_literal(float(rsd)))
    return AggColumn("approx_count_distinct", args)


def _key_list(by: ColumnOrName | Sequence[ColumnOrName] | None) -> list[ColumnOrName]:
    """``by`` as a list of grouping columns."""
    if by is None:
        return []
    return [by] if isinstance(by, (str, Column)) else list(by)


def _keys(by: ColumnOrName | Sequence[ColumnOrName] | None) -> list[_native.Expr]:
    return [_to_expr(b) for b in _key_list(by)]


def _aggs(aggs: AggColumn | Sequence[AggColumn]) -> list[AggColumn]:
    if isinstance(aggs, (Column, str)):
        raise TypeError(
            f"aggs must be aggregate functions such as fs.sum('x') or fs.count(), got {aggs!r}; "
            "group by a column with `by=` instead"
        )
    items = [aggs] if isinstance(aggs, AggColumn) else list(aggs)
    for a in items:
        if not isinstance(a, AggColumn):
            raise TypeError(f"aggs must be aggregate functions such as fs.sum('x'), got {type(a).__name__!r}")
    return items


class AggregateResult:
    """Metrics of the last ``fs.aggregate`` call, for inspection and tests."""

    last_metrics: list[dict[str, int]] = []
    last_plan: str = ""


def aggregate(
    data: Any,
    by: ColumnOrName | Sequence[ColumnOrName] | None = None,
    aggs: AggColumn | Sequence[AggColumn] = (),
    *,
    session: Session | None = None,
) -> pa.Table:
    """Groups ``data`` by ``by`` and computes ``aggs``, as Spark's ``groupBy(by).agg(aggs)``.

    A thin layer over the query plan: ``data`` becomes a relation of the session and the
    query runs as ``Session.sql`` runs. A scan from :func:`ferrospark.scan_parquet` (or an
    unread reader from :func:`ferrospark.read_parquet`) is a Parquet relation: the optimizer
    prunes its columns, and every scan thread runs its own partial aggregation.
    ``fs.last_aggregate_metrics()`` returns the aggregation's metrics (rows, groups, spills...).
    """
    from ._frames import frame_of, operators
    from .session import default_session

    s = session or default_session()
    items = _aggs(aggs)
    df = frame_of(data, s).groupBy(*_key_list(by)).agg(*items)
    table = df.toArrow()
    record_aggregation(df, operators(df))
    return table


def record_aggregation(df: Any, ran: list[tuple[str, str, dict[str, int]]]) -> None:
    """Keeps the ``HashAggregate`` operators of ``df``'s run for
    :func:`last_aggregate_metrics`, and its executed plan."""
    AggregateResult.last_metrics = [m for name, _, m in ran if name == "HashAggregate"]
    AggregateResult.last_plan = df.executedPlan() or ""


def last_aggregate_metrics() -> list[dict[str, int]]:
    """Metrics of each step of the last :func:`aggregate` call in this process."""
    return list(AggregateResult.last_metrics)


__all__ = [
    "AggColumn",
    "aggregate",
    "approx_count_distinct",
    "avg",
    "median",
    "bool_and",
    "bool_or",
    "collect_list",
    "collect_set",
    "count",
    "countDistinct",
    "count_distinct",
    "first",
    "last",
    "last_aggregate_metrics",
    "max",
    "mean",
    "min",
    "percentile",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "sum",
    "sum_distinct",
    "var_pop",
    "var_samp",
    "variance",
]


def regr_intercept(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_intercept(y, x)``: the least-squares intercept (NULL when ``x`` does not vary)."""
    return AggColumn("regr_intercept", [_to_expr(y), _to_expr(x)])


def regr_sxy(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_sxy(y, x)``: the sum of the products of the deviations, over the pairs
    without a NULL."""
    return AggColumn("regr_sxy", [_to_expr(y), _to_expr(x)])


def regr_r2(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_r2(y, x)``: the coefficient of determination (NULL when ``y`` does not vary,
    1 when ``x`` does not)."""
    return AggColumn("regr_r2", [_to_expr(y), _to_expr(x)])


def _avg_of_pairs(y: ColumnOrName, x: ColumnOrName, name: str, take_x: bool) -> AggColumn:
    ye, xe = _to_expr(y), _to_expr(x)
    value = xe if take_x else ye
    when = _native.Expr.parse(f"CASE WHEN ({ye}) IS NOT NULL AND ({xe}) IS NOT NULL THEN ({value}) END")
    return AggColumn("avg", [when], alias=f"{name}({ye.output_name()}, {xe.output_name()})")


def regr_avgx(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_avgx(y, x)``: the average of ``x`` over the pairs without a NULL."""
    return _avg_of_pairs(y, x, "regr_avgx", True)


def regr_avgy(y: ColumnOrName, x: ColumnOrName) -> AggColumn:
    """``regr_avgy(y, x)``: the average of ``y`` over the pairs without a NULL."""
    return _avg_of_pairs(y, x, "regr_avgy", False)


def _no_k(name: str, k: int | None) -> None:
    if k is not None:
        from .errors import UnsupportedError

        raise UnsupportedError(f"{name}(col, ord, k): the top-k form is not supported yet; call it without k")


def max_by(col: ColumnOrName, ord: ColumnOrName, k: int | None = None) -> AggColumn:  # noqa: A002
    """``max_by(col, ord)``: ``col`` of the row with the greatest ``ord`` (of equal ones, the
    last seen, as Spark; rows whose ``ord`` is NULL are skipped)."""
    _no_k("max_by", k)
    return AggColumn("max_by", [_to_expr(col), _to_expr(ord)])


def min_by(col: ColumnOrName, ord: ColumnOrName, k: int | None = None) -> AggColumn:  # noqa: A002
    """``min_by(col, ord)``: ``col`` of the row with the least ``ord``."""
    _no_k("min_by", k)
    return AggColumn("min_by", [_to_expr(col), _to_expr(ord)])


def product(col: ColumnOrName) -> AggColumn:
    """``product(col)``: the product of the non-NULL values, a DOUBLE."""
    return _fn("product", col)
