"""Session windows: Spark's ``groupBy(session_window(time, gap), *keys).agg(...)``.

Built as Spark builds it (``AggUtils`` with ``MergingSessionsExec``):

1. each row gets its own span ``[time, time + gap)`` (rows with a NULL time, a NULL gap or a
   span that ends at or before it starts are dropped);
2. the rows of each key, sorted by span start, are merged into sessions: a span that starts
   at most at the open session's end joins it, and the session ends at the latest end seen;
3. the aggregates are computed per (session, keys).

On one machine the three steps run once (:func:`session_window`). On Spark
(:func:`ferrospark.spark.session_window`) steps 1-3 run in every input partition with partial
aggregates, Spark's shuffle brings each key's partial sessions together, and steps 2-3 run
again over the partial sessions with the final aggregates: merging partial sessions gives the
same sessions as merging their rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from . import _native
from .column import Column, col
from .errors import AnalysisError, UnsupportedError

if TYPE_CHECKING:
    from .aggregate import ColumnOrName
    from .session import Session

#: The columns holding each row's span, then its session's bounds.
START = "__session_start"
END = "__session_end"

#: Microseconds per interval unit (singular, as ``"10 minutes"`` names them).
_INTERVAL_UNITS = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
    "week": 7 * 86_400_000_000,
}
_CALENDAR_UNITS = ("month", "year")


def interval_micros(text: str) -> int:
    """``"10 minutes"``, ``"1 hour 30 minutes"`` or ``"INTERVAL 10 SECONDS"`` in microseconds.

    Raises :class:`AnalysisError` for text that is not an interval and
    :class:`UnsupportedError` for months and years (their length depends on the date)."""
    words = text.lower().replace("interval", " ").replace("'", " ").split()
    if not words or len(words) % 2:
        raise AnalysisError(f"{text!r} is not an interval; write it as '10 minutes' or '1 hour 30 minutes'")
    total = 0
    for amount, unit in zip(words[::2], words[1::2], strict=True):
        unit = unit[:-1] if unit.endswith("s") else unit
        if unit in _CALENDAR_UNITS:
            raise UnsupportedError(
                f"{text!r}: session gaps in {unit}s are not supported (their length depends on the "
                "date); give the gap in days, hours, minutes or seconds"
            )
        if unit not in _INTERVAL_UNITS:
            raise AnalysisError(f"{text!r}: unknown interval unit {unit!r}; use {', '.join(_INTERVAL_UNITS)}")
        try:
            total += int(float(amount) * _INTERVAL_UNITS[unit])
        except ValueError:
            raise AnalysisError(f"{text!r}: {amount!r} is not a number") from None
    return total


def _gap_of_text(text: str) -> int | None:
    """A per-row gap string in microseconds; ``None`` where Spark's cast to an interval gives
    NULL (text that is not an interval), so the row is dropped."""
    try:
        return interval_micros(text)
    except AnalysisError:
        return None


def _values(table: pa.Table, c: ColumnOrName, what: str, conf: dict[str, str]) -> tuple[pa.ChunkedArray, str]:
    """A column named by `c`, or the values of the expression `c` over `table` (evaluated
    natively, e.g. ``fs.col("day").cast("timestamp")``), and its text for messages."""
    expr = col(c) if isinstance(c, str) else c
    if not isinstance(expr, Column):
        raise TypeError(f"{what} must be a column name or an expression such as fs.col(...), got {c!r}")
    text = str(expr._expr).strip("`")
    if text in table.column_names:
        return table[text], text
    missing = [r for r in expr._expr.column_refs() if r not in table.column_names]
    if missing:
        raise AnalysisError(f"{what} `{text}` names no column {missing}; columns are {table.column_names}")
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    out = _native.project(reader, [expr._expr], conf=conf)
    values = out.column(0)
    return (values if values.num_chunks else pa.chunked_array([], values.type)), text


def _time_micros(t: pa.ChunkedArray, text: str, tz: str) -> pa.ChunkedArray:
    """Times as microsecond timestamps; a date is its midnight in the session time zone, as
    Spark casts it."""
    if pa.types.is_date(t.type):
        local = pc.cast(pc.cast(t, pa.date32()), pa.timestamp("us"))
        return (
            pc.assume_timezone(local, tz)
            if tz.upper() not in ("UTC", "Z")
            else pc.cast(local, pa.timestamp("us", tz))
        )
    if not pa.types.is_timestamp(t.type):
        raise AnalysisError(
            f"a session window's time `{text}` must be a timestamp or a date, got {t.type}; cast it"
        )
    return t if t.type.unit == "us" else pc.cast(t, pa.timestamp("us", t.type.tz))


def _gap_micros(g: pa.ChunkedArray, text: str) -> pa.ChunkedArray:
    """Per-row gaps in microseconds: interval strings as Spark casts them, durations."""
    if pa.types.is_string(g.type) or pa.types.is_large_string(g.type) or pa.types.is_string_view(g.type):
        # Few distinct gaps in practice: each distinct text is parsed once.
        codes = pc.dictionary_encode(pc.cast(g, pa.string())).combine_chunks()
        micros = pa.array([_gap_of_text(v) for v in codes.dictionary.to_pylist()], pa.int64())
        return pa.chunked_array([pc.take(micros, codes.indices)])
    if pa.types.is_duration(g.type):
        return pc.cast(pc.cast(g, pa.duration("us")), pa.int64())
    raise AnalysisError(
        f"a session window's gap `{text}` must be interval strings ('10 minutes') or durations, got {g.type}"
    )


def spans(
    table: pa.Table,
    time: ColumnOrName,
    gap: str | Column | None,
    tz: str,
    end_column: str | None = None,
    conf: dict[str, str] | None = None,
) -> pa.Table:
    """``table`` with each row's span (``START``, ``END``) appended, and the rows Spark drops
    (NULL time, NULL gap, a span ending at or before its start) dropped. ``time`` and a
    per-row ``gap`` are columns or expressions. With ``end_column`` (spans Spark computed
    itself), that column is each row's end and is dropped."""
    conf = {**(conf or {}), "spark.sql.session.timeZone": tz}
    t, ttext = _values(table, time, "a session window's time", conf)
    start = _time_micros(t, ttext, tz)
    start_us = pc.cast(start, pa.int64())
    if end_column is not None:
        end_us = pc.cast(_time_micros(table[end_column], end_column, tz), pa.int64())
        table = table.drop_columns([end_column])
    elif isinstance(gap, str):
        end_us = pc.add_checked(start_us, pa.scalar(interval_micros(gap), pa.int64()))
    elif isinstance(gap, Column):
        g, gtext = _values(table, gap, "a session window's gap", conf)
        end_us = pc.add_checked(start_us, _gap_micros(g, gtext))
    else:
        raise TypeError(
            f"a session window's gap must be a string such as '10 minutes' or fs.col(...), got {gap!r}"
        )
    end = pc.cast(end_us, start.type)
    out = table.append_column(START, start).append_column(END, end)
    keep = pc.and_(pc.is_valid(end_us), pc.greater(end_us, start_us))
    return out.filter(pc.fill_null(keep, False))


def merge(table: pa.Table, keys: Sequence[str], conf: dict[str, str]) -> pa.Table:
    """Rows or partial sessions with spans merged into sessions per key: ``START``/``END``
    replaced by their session's bounds (``keys`` are expression texts over ``table``)."""
    parse = _native.Expr.parse
    span = [parse(f"`{START}`"), parse(f"`{END}`")]
    merged, metrics, plan = _native.window(
        pa.RecordBatchReader.from_batches(table.schema, table.to_batches()),
        [parse(k) for k in keys],
        [parse(f"`{START}`").sort(True, True)],
        [
            ("session_start", span, None, False, "__merged_start", None),
            ("session_end", span, None, False, "__merged_end", None),
        ],
        conf=conf,
    )
    from .window import WindowResult

    WindowResult.last_metrics, WindowResult.last_plans = [dict(metrics)], [plan]
    at_start, at_end = table.schema.get_field_index(START), table.schema.get_field_index(END)
    merged = merged.set_column(at_start, START, merged["__merged_start"])
    merged = merged.set_column(at_end, END, merged["__merged_end"])
    return merged.drop_columns(["__merged_start", "__merged_end"])


def with_struct(table: pa.Table) -> pa.Table:
    """An aggregation's output grouped by (``START``, ``END``, keys...) with the two bounds
    turned into Spark's ``session_window`` struct."""
    bounds = pa.StructArray.from_arrays(
        [table[START].combine_chunks(), table[END].combine_chunks()], names=["start", "end"]
    )
    rest = table.column_names[2:]
    return pa.table([bounds, *(table[c] for c in rest)], names=["session_window", *rest])


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


__all__ = ["interval_micros", "merge", "session_window", "spans", "with_struct"]
