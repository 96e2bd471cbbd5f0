"""``ferrospark.functions``: the names of ``pyspark.sql.functions`` over ferrospark's columns.

``from ferrospark import functions as F`` then ``F.col``, ``F.sum``, ``F.when``, ... as in PySpark.
Scalar functions build expressions evaluated natively with Spark's semantics; aggregates and
window functions are those of :mod:`ferrospark.aggregate` and :mod:`ferrospark.window`.
"""

from __future__ import annotations

from typing import Any

from . import _native
from .aggregate import (
    AggColumn,
    approx_count_distinct,
    avg,
    bool_and,
    bool_or,
    collect_list,
    collect_set,
    count,
    count_distinct,
    first,
    last,
    max,
    mean,
    min,
    percentile,
    stddev,
    stddev_pop,
    stddev_samp,
    sum,
    sum_distinct,
    var_pop,
    var_samp,
    variance,
)
from .column import Column, col, column, expr, lit
from .window import (
    cume_dist,
    dense_rank,
    first_value,
    lag,
    last_value,
    lead,
    nth_value,
    ntile,
    percent_rank,
    rank,
    row_number,
)

ColumnOrName = Column | str


def _c(x: Any) -> Column:
    if isinstance(x, Column):
        return x
    if isinstance(x, str):
        return col(x)
    return lit(x)


def _call(name: str, *args: Any) -> Column:
    return Column(_native.Expr.function(name, [_c(a)._expr for a in args]))


def countDistinct(c: ColumnOrName, *cols: ColumnOrName) -> AggColumn:  # noqa: N802 - PySpark's name
    """``count(DISTINCT c)``."""
    return count_distinct(c, *cols)


def sumDistinct(c: ColumnOrName) -> AggColumn:  # noqa: N802 - PySpark's name
    """``sum(DISTINCT c)``."""
    return sum_distinct(c)


def asc(c: ColumnOrName) -> Column:
    """Ascending sort key (NULLs first)."""
    return _c(c).asc()


def desc(c: ColumnOrName) -> Column:
    """Descending sort key (NULLs last)."""
    return _c(c).desc()


def asc_nulls_first(c: ColumnOrName) -> Column:
    """Ascending, NULLs first."""
    return _c(c).asc_nulls_first()


def asc_nulls_last(c: ColumnOrName) -> Column:
    """Ascending, NULLs last."""
    return _c(c).asc_nulls_last()


def desc_nulls_first(c: ColumnOrName) -> Column:
    """Descending, NULLs first."""
    return _c(c).desc_nulls_first()


def desc_nulls_last(c: ColumnOrName) -> Column:
    """Descending, NULLs last."""
    return _c(c).desc_nulls_last()


class _When(Column):
    """``when(cond, value)[.when(...)][.otherwise(value)]``: CASE WHEN as SQL text."""

    __slots__ = ("_branches", "_else")

    def __init__(self, branches: list[tuple[Column, Column]], otherwise: Column | None) -> None:
        self._branches = branches
        self._else = otherwise
        parts = " ".join(f"WHEN {c} THEN {v}" for c, v in branches)
        tail = f" ELSE {otherwise}" if otherwise is not None else ""
        super().__init__(expr(f"CASE {parts}{tail} END")._expr)

    def when(self, condition: Column, value: Any) -> _When:
        """Another branch."""
        return _When([*self._branches, (condition, _lit_or_col(value))], self._else)

    def otherwise(self, value: Any) -> Column:
        """The value when no branch matches (NULL without it)."""
        return _When(self._branches, _lit_or_col(value))


def _lit_or_col(v: Any) -> Column:
    return v if isinstance(v, Column) else lit(v)


def when(condition: Column, value: Any) -> _When:
    """``CASE WHEN condition THEN value``; chain ``.when`` and ``.otherwise``."""
    return _When([(condition, _lit_or_col(value))], None)


def coalesce(*cols: ColumnOrName) -> Column:
    """The first non-NULL argument."""
    return _call("coalesce", *cols)


def isnull(c: ColumnOrName) -> Column:
    """``c IS NULL``."""
    return _c(c).is_null()


def isnan(c: ColumnOrName) -> Column:
    """True for NaN."""
    return _call("isnan", c)


def _scalar(name: str):  # type: ignore[no-untyped-def]
    def f(*args: Any) -> Column:
        return _call(name, *args)

    f.__name__ = name
    f.__doc__ = f"Spark's ``{name}``, evaluated natively."
    return f


abs = _scalar("abs")  # noqa: A001 - Spark's name
upper = _scalar("upper")
lower = _scalar("lower")
length = _scalar("length")
trim = _scalar("trim")
ltrim = _scalar("ltrim")
rtrim = _scalar("rtrim")
concat = _scalar("concat")
substring = _scalar("substring")
year = _scalar("year")
month = _scalar("month")
dayofmonth = _scalar("dayofmonth")
quarter = _scalar("quarter")
dayofweek = _scalar("dayofweek")
round = _scalar("round")  # noqa: A001 - Spark's name
bround = _scalar("bround")
floor = _scalar("floor")
ceil = _scalar("ceil")
sqrt = _scalar("sqrt")
exp = _scalar("exp")
pow = _scalar("pow")  # noqa: A001 - Spark's name
greatest = _scalar("greatest")
least = _scalar("least")
datediff = _scalar("datediff")
date_add = _scalar("date_add")
date_sub = _scalar("date_sub")
add_months = _scalar("add_months")
regexp_replace = _scalar("regexp_replace")
regexp_extract = _scalar("regexp_extract")
lpad = _scalar("lpad")
rpad = _scalar("rpad")


def concat_ws(sep: str, *cols: ColumnOrName) -> Column:
    """Joins the non-NULL arguments with ``sep``."""
    return Column(_native.Expr.function("concat_ws", [lit(sep)._expr] + [_c(c)._expr for c in cols]))


def count_if(c: ColumnOrName) -> AggColumn:
    """Rows where ``c`` is true."""
    return count(when(_c(c), lit(1)))


__all__ = [
    "AggColumn",
    "Column",
    "abs",
    "add_months",
    "approx_count_distinct",
    "asc",
    "asc_nulls_first",
    "asc_nulls_last",
    "avg",
    "bool_and",
    "bool_or",
    "bround",
    "ceil",
    "coalesce",
    "col",
    "collect_list",
    "collect_set",
    "column",
    "concat",
    "concat_ws",
    "count",
    "countDistinct",
    "count_distinct",
    "count_if",
    "cume_dist",
    "date_add",
    "date_sub",
    "datediff",
    "dayofmonth",
    "dayofweek",
    "dense_rank",
    "desc",
    "desc_nulls_first",
    "desc_nulls_last",
    "exp",
    "expr",
    "first",
    "first_value",
    "floor",
    "greatest",
    "isnan",
    "isnull",
    "lag",
    "last",
    "last_value",
    "lead",
    "least",
    "length",
    "lit",
    "lower",
    "lpad",
    "ltrim",
    "max",
    "mean",
    "min",
    "month",
    "nth_value",
    "ntile",
    "percent_rank",
    "percentile",
    "pow",
    "quarter",
    "rank",
    "regexp_extract",
    "regexp_replace",
    "round",
    "row_number",
    "rpad",
    "rtrim",
    "sqrt",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "substring",
    "sum",
    "sumDistinct",
    "sum_distinct",
    "trim",
    "upper",
    "var_pop",
    "var_samp",
    "variance",
    "when",
    "year",
]
