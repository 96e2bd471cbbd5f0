"""Session windows: Spark's ``groupBy(session_window(time, gap), *keys).agg(...)``.

Built as Spark builds it (``AggUtils`` with ``MergingSessionsExec``):

1. each row gets its own span ``[time, time + gap)`` (rows with a NULL time, a NULL gap or a
   span that ends at or before it starts are dropped);
2. the rows of each key, sorted by span start, are merged into sessions: a span that starts
   at most at the open session's end joins it, and the session ends at the latest end seen;
3. the aggregates are computed per (session, keys).

The query plan does it (``SessionWindowing`` in ``ferrospark-plan``): spans, a ``Window``
merging them per key, then the aggregation. On Spark (:func:`ferrospark.spark.session_window`)
the rows are exchanged on the keys and the same plan runs per partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .column import Column

if TYPE_CHECKING:
    from .aggregate import ColumnOrName
    from .session import Session


def session_window(
    data: Any,
    time: ColumnOrName,
    gap: str | Column,
    by: ColumnOrName | Sequence[ColumnOrName] = (),
    aggs: Any = (),
    *,
    session: Session | None = None,
) -> pa.Table:
    """Spark's ``groupBy(session_window(time, gap), *by).agg(*aggs)``: each row opens
    ``[time, time + gap)``; rows of one key whose windows touch or overlap (the next start at
    most the current end) form one session, ending at the latest end. Output:
    ``session_window`` (a struct of ``start`` and ``end``), the keys, then the aggregates.

    ``gap`` is a literal (``"10 minutes"``) or a per-row column of interval strings or
    durations. Rows with a NULL time, a NULL or unreadable gap, or a non-positive gap are
    dropped, as Spark drops them. A date ``time`` is its midnight in the session time zone.

    A thin layer over the query plan (its ``SessionWindowing``: spans, a ``Window`` merging
    them per key, then the aggregation); ``fs.last_window_metrics()`` describes the merge and
    ``fs.last_aggregate_metrics()`` the aggregation.
    """
    from ._frames import frame_of, operators
    from .aggregate import _aggs, record_aggregation
    from .functions import session_window as session_window_column
    from .session import default_session
    from .window import record_window_passes

    s = session or default_session()
    if not isinstance(gap, str | Column):
        raise TypeError(
            f"a session window's gap must be a string such as '10 minutes' or fs.col(...), got {gap!r}"
        )
    if not isinstance(time, str | Column):
        raise TypeError(f"a session window's time must be a column name or fs.col(...), got {time!r}")
    keys = [by] if isinstance(by, str | Column) else list(by)
    df = frame_of(data, s).groupBy(session_window_column(time, gap), *keys).agg(*_aggs(aggs))
    table = df.toArrow()
    ran = operators(df)
    record_window_passes(ran)
    record_aggregation(df, ran)
    return table


__all__ = ["session_window"]
