"""Window functions: ``fs.window(data, [fs.row_number().over(w).alias("rn"), ...])``.

``w = fs.Window.partition_by("k").order_by("ts")`` as PySpark's ``Window``; each function's
``.over(w)`` makes a window column. Rows are sorted by the partition keys then the order keys
(ASC NULLS FIRST and DESC NULLS LAST by default, ``fs.col("x").desc_nulls_first()`` etc. to
choose), and every function of one specification is computed in one native pass.

Built so far (issue 5, in progress): ``row_number``, ``rank``, ``dense_rank``,
``percent_rank``, ``cume_dist``, ``ntile``, ``lag``, ``lead``, and ``fs.count``, ``fs.sum``,
``fs.avg``, ``fs.min``, ``fs.max``, ``fs.first`` / ``fs.last``, ``nth_value``,
``first_value`` and ``last_value`` over any ROWS or RANGE frame (``rows_between`` /
``range_between``; without a frame, Spark's defaults). The other aggregates come next; asking for them now raises
:class:`ferrospark.UnsupportedError`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _native
from .column import Column, col
from .errors import AnalysisError, UnsupportedError

if TYPE_CHECKING:
    from .session import Session

ColumnOrName = Column | str

#: Frame bounds, as PySpark's ``Window`` names them.
UNBOUNDED_PRECEDING = -(1 << 63)
UNBOUNDED_FOLLOWING = (1 << 63) - 1
CURRENT_ROW = 0


def _col(c: ColumnOrName) -> Column:
    return c if isinstance(c, Column) else col(c)


class WindowSpec:
    """``PARTITION BY ... ORDER BY ...`` and an optional frame."""

    def __init__(
        self,
        partition: tuple[Column, ...] = (),
        order: tuple[Column, ...] = (),
        frame: tuple[str, int, int] | None = None,
    ) -> None:
        self._partition = partition
        self._order = order
        self._frame = frame

    def partition_by(self, *cols: ColumnOrName | Sequence[ColumnOrName]) -> WindowSpec:
        return WindowSpec(tuple(_col(c) for c in _flat(cols)), self._order, self._frame)

    def order_by(self, *cols: ColumnOrName | Sequence[ColumnOrName]) -> WindowSpec:
        return WindowSpec(self._partition, tuple(_col(c) for c in _flat(cols)), self._frame)

    def rows_between(self, start: int, end: int) -> WindowSpec:
        return WindowSpec(self._partition, self._order, ("rows", start, end))

    def range_between(self, start: int, end: int) -> WindowSpec:
        return WindowSpec(self._partition, self._order, ("range", start, end))

    # PySpark's spellings.
    partitionBy = partition_by  # noqa: N815
    orderBy = order_by  # noqa: N815
    rowsBetween = rows_between  # noqa: N815
    rangeBetween = range_between  # noqa: N815

    def _key(self) -> tuple[str, ...]:
        """What tells two specifications apart (the frame does not: each function has its own)."""
        return (
            tuple(str(c._expr) for c in self._partition) + ("|",) + tuple(str(c._expr) for c in self._order)
        )


def _flat(cols: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    for c in cols:
        if isinstance(c, list | tuple):
            out.extend(c)
        else:
            out.append(c)
    return out


class Window:
    """Builds window specifications, as PySpark's ``Window``."""

    unbounded_preceding = UNBOUNDED_PRECEDING
    unbounded_following = UNBOUNDED_FOLLOWING
    current_row = CURRENT_ROW
    unboundedPreceding = UNBOUNDED_PRECEDING  # noqa: N815
    unboundedFollowing = UNBOUNDED_FOLLOWING  # noqa: N815
    currentRow = CURRENT_ROW  # noqa: N815

    @staticmethod
    def partition_by(*cols: ColumnOrName | Sequence[ColumnOrName]) -> WindowSpec:
        return WindowSpec().partition_by(*cols)

    @staticmethod
    def order_by(*cols: ColumnOrName | Sequence[ColumnOrName]) -> WindowSpec:
        return WindowSpec().order_by(*cols)

    @staticmethod
    def rows_between(start: int, end: int) -> WindowSpec:
        return WindowSpec().rows_between(start, end)

    @staticmethod
    def range_between(start: int, end: int) -> WindowSpec:
        return WindowSpec().range_between(start, end)

    partitionBy = partition_by  # noqa: N815
    orderBy = order_by  # noqa: N815
    rowsBetween = rows_between  # noqa: N815
    rangeBetween = range_between  # noqa: N815


#: The frame each ranking and offset function requires (Spark refuses any other).
_REQUIRED_FRAME = {
    "row_number": ("rows", UNBOUNDED_PRECEDING, CURRENT_ROW),
    "rank": ("rows", UNBOUNDED_PRECEDING, CURRENT_ROW),
    "dense_rank": ("rows", UNBOUNDED_PRECEDING, CURRENT_ROW),
    "percent_rank": ("rows", UNBOUNDED_PRECEDING, CURRENT_ROW),
    "ntile": ("rows", UNBOUNDED_PRECEDING, CURRENT_ROW),
    "counter_diff": ("rows", UNBOUNDED_PRECEDING, CURRENT_ROW),
    "cume_dist": ("range", UNBOUNDED_PRECEDING, CURRENT_ROW),
}


#: Functions evaluated over each row's frame.
_FRAME_FUNCTIONS = {
    "count",
    "sum",
    "avg",
    "mean",
    "min",
    "max",
    "stddev",
    "std",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
    "bool_and",
    "every",
    "bool_or",
    "some",
    "any",
    "collect_list",
    "array_agg",
    "collect_set",
    "percentile",
    "approx_count_distinct",
    "first",
    "last",
    "first_value",
    "last_value",
    "nth_value",
}


class WindowFunction:
    """A window function before ``.over(w)``."""

    def __init__(
        self,
        name: str,
        args: Sequence[Column] = (),
        n: int | None = None,
        ignore_nulls: bool = False,
        aggregate: bool = False,
    ):
        self._name = name
        self._args = list(args)
        self._n = n
        self._ignore_nulls = ignore_nulls
        self._aggregate = aggregate

    def over(self, spec: WindowSpec) -> WindowColumn:
        return WindowColumn(self, spec)


class WindowColumn:
    """A window function over a specification, optionally named."""

    def __init__(self, fn: WindowFunction, spec: WindowSpec, alias: str | None = None) -> None:
        self._fn = fn
        self._spec = spec
        self._alias = alias

    def alias(self, name: str) -> WindowColumn:
        return WindowColumn(self._fn, self._spec, name)

    def _call(self) -> tuple[str, list[Any], int | None, bool, str | None, tuple[str, str, str] | None]:
        fn = self._fn
        frame = None
        if fn._aggregate and self._spec._frame is not None:
            kind, lo, hi = self._spec._frame
            frame = (kind, _bound_text(lo), _bound_text(hi))
        name = f"agg:{fn._name}" if fn._aggregate else fn._name
        return (name, [a._expr for a in fn._args], fn._n, fn._ignore_nulls, self._alias, frame)

    def _window_expr(self) -> _native.Expr:
        """The call as one expression (``f(...) OVER (...)``) for DataFrame methods."""
        self._check()
        fn, spec = self._fn, self._spec
        args = [a._expr for a in fn._args]
        if fn._name == "ntile":
            args = [_native.Expr.lit_int(fn._n or 0)]
        elif fn._name in ("lag", "lead"):
            default = args[1:] or [_native.Expr.lit_null()]
            args = [args[0], _native.Expr.lit_int(fn._n if fn._n is not None else 1), *default]
        elif fn._name == "nth_value":
            args = [args[0], _native.Expr.lit_int(fn._n or 1)]
        if fn._aggregate or fn._ignore_nulls:
            func = _native.Expr.aggregate(fn._name, args, False, fn._ignore_nulls)
        else:
            func = _native.Expr.function(fn._name, args)
        frame = None
        if fn._aggregate and spec._frame is not None:
            kind, lo, hi = spec._frame
            frame = (kind == "rows", _bound_text(lo), _bound_text(hi))
        order = [c._expr if _is_sort_key(c) else c.asc()._expr for c in spec._order]
        e = _native.Expr.window(func, [c._expr for c in spec._partition], order, frame)
        return e.alias(self._alias) if self._alias else e

    def _check(self) -> None:
        fn, spec = self._fn, self._spec
        if fn._aggregate:
            if fn._name not in _FRAME_FUNCTIONS:
                raise UnsupportedError(
                    f"{fn._name}() over a window is not built yet; {', '.join(sorted(_FRAME_FUNCTIONS))} are"
                )
            return
        if fn._name in _REQUIRED_FRAME and not spec._order:
            raise AnalysisError(
                f"{fn._name}() needs an ordered window: add .order_by(...) to the window specification"
            )
        if fn._name in ("lag", "lead") and not spec._order:
            raise AnalysisError(f"{fn._name}() needs an ordered window: add .order_by(...)")
        required = _REQUIRED_FRAME.get(fn._name)
        if spec._frame is not None and fn._name in ("lag", "lead"):
            raise AnalysisError(f"{fn._name}() takes no frame; it reads a fixed offset from the current row")
        if spec._frame is not None and required is not None and spec._frame != required:
            kind, lo, hi = required
            raise AnalysisError(
                f"{fn._name}() runs over {kind.upper()} BETWEEN {_bound(lo)} AND {_bound(hi)} "
                "only; drop the frame from its window specification"
            )


#: Offsets this far from zero mean unbounded (PySpark's ``Window`` does the same).
_UNBOUNDED_THRESHOLD = sys.maxsize


def _is_sort_key(c: Column) -> bool:
    text = str(c)
    return text.endswith(" NULLS FIRST") or text.endswith(" NULLS LAST")


def _bound_text(v: float) -> str:
    """A frame bound for the native side: unbounded, or a signed offset (0: current row)."""
    if v <= -_UNBOUNDED_THRESHOLD:
        return "unbounded_preceding"
    if v >= _UNBOUNDED_THRESHOLD:
        return "unbounded_following"
    return repr(v)


def _bound(v: int) -> str:
    if v <= UNBOUNDED_PRECEDING:
        return "UNBOUNDED PRECEDING"
    if v >= UNBOUNDED_FOLLOWING:
        return "UNBOUNDED FOLLOWING"
    if v == 0:
        return "CURRENT ROW"
    return f"{-v} PRECEDING" if v < 0 else f"{v} FOLLOWING"


def row_number() -> WindowFunction:
    return WindowFunction("row_number")


def rank() -> WindowFunction:
    return WindowFunction("rank")


def dense_rank() -> WindowFunction:
    return WindowFunction("dense_rank")


def percent_rank() -> WindowFunction:
    return WindowFunction("percent_rank")


def cume_dist() -> WindowFunction:
    return WindowFunction("cume_dist")


def ntile(n: int) -> WindowFunction:
    return WindowFunction("ntile", n=int(n))


def counter_diff(value: ColumnOrName, startTime: ColumnOrName | None = None) -> WindowFunction:  # noqa: N803
    """A cumulative counter as deltas: each row's increase over the previous value in its
    ordered partition; NULL on the first row and where the counter reset (its value fell, or
    ``startTime`` advanced). Negative values and a decreasing ``startTime`` are errors."""
    args = [_col(value)] + ([] if startTime is None else [_col(startTime)])
    return WindowFunction("counter_diff", args)


def _offset(name: str, c: ColumnOrName, offset: int, default: Any, ignore_nulls: bool) -> WindowFunction:
    from .column import _literal

    args = [_col(c)]
    if default is not None:
        args.append(default if isinstance(default, Column) else Column(_literal(default)))
    return WindowFunction(name, args, n=int(offset), ignore_nulls=ignore_nulls)


def nth_value(c: ColumnOrName, n: int, ignore_nulls: bool = False) -> WindowFunction:
    """The value of the ``n``-th row (from 1) of each row's frame; NULL when the frame is
    shorter. With ``ignore_nulls``, the ``n``-th non-NULL value."""
    if int(n) <= 0:
        raise AnalysisError(f"nth_value(..., {n}): the row number must be a positive integer")
    return WindowFunction("nth_value", [_col(c)], n=int(n), ignore_nulls=ignore_nulls, aggregate=True)


def first_value(c: ColumnOrName, ignore_nulls: bool = False) -> WindowFunction:
    """The value of each row's frame's first row (its first non-NULL one with ``ignore_nulls``)."""
    return WindowFunction("first_value", [_col(c)], ignore_nulls=ignore_nulls, aggregate=True)


def last_value(c: ColumnOrName, ignore_nulls: bool = False) -> WindowFunction:
    """The value of each row's frame's last row (its last non-NULL one with ``ignore_nulls``)."""
    return WindowFunction("last_value", [_col(c)], ignore_nulls=ignore_nulls, aggregate=True)


def lag(c: ColumnOrName, offset: int = 1, default: Any = None, ignore_nulls: bool = False) -> WindowFunction:
    """The value ``offset`` rows before the row in its partition (``default`` when there is
    none); with ``ignore_nulls``, counting only rows where it is not NULL."""
    return _offset("lag", c, offset, default, ignore_nulls)


def lead(c: ColumnOrName, offset: int = 1, default: Any = None, ignore_nulls: bool = False) -> WindowFunction:
    """The value ``offset`` rows after the row in its partition; see :func:`lag`."""
    return _offset("lead", c, offset, default, ignore_nulls)


class WindowResult:
    """Metrics and plans of the last ``fs.window`` call."""

    last_metrics: list[dict[str, int]] = []
    last_plans: list[str] = []


def window(
    data: Any, exprs: WindowColumn | Sequence[WindowColumn], *, session: Session | None = None
) -> pa.Table:
    """The input's columns followed by one column per window expression: PySpark's
    ``df.select("*", *exprs)``, and a thin layer over the query plan that runs it.

    ``data`` becomes a relation of the session (a :func:`ferrospark.scan_parquet` scan a
    Parquet relation the optimizer prunes). Expressions over the same specification are
    computed in one ``Window`` pass, one pass per specification, as Spark's planner groups
    them. ``fs.last_window_metrics()`` and ``fs.last_window_plan()`` describe the passes."""
    from ._frames import frame_of, operators
    from .session import default_session

    s = session or default_session()
    items = [exprs] if isinstance(exprs, WindowColumn) else list(exprs)
    for item in items:
        if isinstance(item, WindowFunction):
            raise AnalysisError("a window function needs .over(window_spec)")
        if not isinstance(item, WindowColumn):
            raise AnalysisError(f"{item!r} is not a window expression: call .over(window_spec) on it")
        item._check()
    df = frame_of(data, s).select("*", *items)
    table = df.toArrow()
    record_window_passes(operators(df))
    return table


def record_window_passes(ran: list[tuple[str, str, dict[str, int]]]) -> None:
    """Keeps the ``Window`` operators of a run (``_frames.operators``) for
    :func:`last_window_metrics` and :func:`last_window_plan`."""
    passes = [(d, m) for name, d, m in ran if name == "Window"]
    WindowResult.last_metrics = [m for _, m in passes]
    WindowResult.last_plans = [f"Window {d}" for d, _ in passes]


def last_window_metrics() -> list[dict[str, int]]:
    """Metrics of each pass of the last :func:`window` call."""
    return [dict(m) for m in WindowResult.last_metrics]


def last_window_plan() -> list[str]:
    """What each pass of the last :func:`window` call computed."""
    return list(WindowResult.last_plans)


__all__ = [
    "Window",
    "WindowSpec",
    "counter_diff",
    "cume_dist",
    "dense_rank",
    "first_value",
    "lag",
    "last_value",
    "last_window_metrics",
    "last_window_plan",
    "lead",
    "nth_value",
    "ntile",
    "percent_rank",
    "rank",
    "row_number",
    "window",
]
