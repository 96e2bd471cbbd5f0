"""Joins: ``fs.join(left, right, on, how, condition, strategy)``.

``on`` names the keys (``"k"`` or ``["k1", "k2"]``: Spark's ``USING`` join, the keys come out
once) or is a condition over the columns of both sides (``fs.col("a") == fs.col("b")``;
equalities across the sides become join keys, the rest is checked on each joined row).
Output columns are the left ones then the right ones; semi and anti joins keep the left ones.

``strategy`` names Spark's operator (``broadcast_hash``, ``shuffle_hash``, ``sort_merge``,
``nested_loop``, ``cartesian``); an operator that cannot run the join type is an error saying
so. ``auto`` follows Spark's ``JoinSelection``: hints, then
``spark.sql.autoBroadcastJoinThreshold``, ``spark.sql.join.preferSortMergeJoin`` and the 3x
rule; ``fs.last_join_plan()`` says what it chose. Under ``ferrospark.memory.limit`` the
sort-merge join sorts each side in runs spilled to disk and merges them, and a shuffled hash
join whose build side does not fit becomes a sort-merge join (the plan says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _native
from .column import Column, to_filter
from .errors import ConfigError

if TYPE_CHECKING:
    from .session import Session

STRATEGIES = ("auto", "broadcast_hash", "shuffle_hash", "sort_merge", "nested_loop", "cartesian")


class JoinResult:
    """Metrics and plan of the last ``fs.join`` call, for inspection and tests."""

    last_metrics: dict[str, int] = {}
    last_plan: str = ""


def _how(how: str) -> str:
    """Spark's join type ``how`` in its short name (``left_outer`` -> ``left``)."""
    return _native.join_type_name(how)


def _request(
    on: str | Sequence[str] | Column | None, how: str, condition: Column | str | None, strategy: str
) -> tuple[str, list[str] | None, Column | None]:
    """The join type, ``USING`` names and condition that ``on``, ``how`` and ``condition``
    ask for, checked."""
    kind = _how(how)
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown join strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    using: list[str] | None = None
    cond: Column | None = None
    if isinstance(on, str):
        using = [on]
    elif isinstance(on, Column):
        cond = on
    elif on is not None:
        using = [str(k) for k in on]
    if condition is not None:
        extra = Column(to_filter(condition))
        cond = extra if cond is None else cond & extra
    if kind == "cross" and (using or cond is not None):
        raise ConfigError("a cross join takes no `on` keys; use how='inner' with a condition")
    return kind, using, cond


def join(
    left: Any,
    right: Any,
    on: str | Sequence[str] | Column | None = None,
    how: str = "inner",
    condition: Column | str | None = None,
    strategy: str = "auto",
    *,
    session: Session | None = None,
) -> pa.Table:
    """Joins ``left`` and ``right`` as Spark's ``left.join(right, on, how)`` does.

    A thin layer over the query plan: both sides become relations of the session (a scan
    from ``fs.scan_parquet`` a Parquet relation the optimizer prunes), ``strategy`` a join
    hint, and the query runs as ``Session.sql`` runs. ``fs.last_join_metrics()`` returns the
    join operator's metrics and ``fs.last_join_plan()`` the strategy and build side chosen.
    """
    from ._frames import frame_of, operators
    from .session import default_session

    s = session or default_session()
    kind, using, cond = _request(on, how, condition, strategy)
    ldf, rdf = frame_of(left, s), frame_of(right, s)
    plan = ldf._plan.join(
        rdf._plan,
        kind,
        on=using,
        condition=cond._expr if cond is not None else None,
        hint=None if strategy == "auto" else strategy,
    )
    df = ldf._new(plan)
    table = df.toArrow()
    joins = [(s, op) for op in operators(df) if (s := _native.join_strategy_of_operator(op[0]))]
    if joins:
        strategy, (name, described, metrics) = joins[-1]
        plan_text = f"{strategy}: {name} {described}"
        if metrics.get("fallback_to_sort_merge"):
            plan_text += " (the build side exceeded the memory limit: fell back to a sort-merge join)"
        JoinResult.last_metrics, JoinResult.last_plan = dict(metrics), plan_text
    return table


def last_join_metrics() -> dict[str, int]:
    """Metrics of the last :func:`join` call in this process."""
    return dict(JoinResult.last_metrics)


def last_join_plan() -> str:
    """The strategy, build side, keys and condition of the last :func:`join` call."""
    return JoinResult.last_plan


__all__ = ["join", "last_join_metrics", "last_join_plan"]
