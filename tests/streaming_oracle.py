"""Spark Structured Streaming as a batch-by-batch oracle for the native stateful operators.

The native engine re-implements Spark's stream-stream join and streaming session windows; to
check it *per micro-batch* (what each batch emits, which watermark it used, which late rows it
dropped) we need Spark to run over exactly the same micro-batches. Spark has no public API for
"here is batch 0, here is batch 1", so this module makes its file source do it:

* every micro-batch of every input is written as **one Parquet file** (a batch with no rows
  still gets a file carrying the schema), named and ``os.utime``-stamped in increasing order;
* the streams read those directories with ``maxFilesPerTrigger=1`` under
  ``trigger(availableNow=True)``: Spark's file source orders files by modification time and
  takes one per trigger, so batch ``i`` reads file ``i`` of each input (an input with fewer
  files simply contributes nothing to the later batches);
* ``foreachBatch`` collects what each batch emitted as an Arrow table, and the query's
  progress reports give the watermark each batch ran with and how many rows it read.

``availableNow`` also runs the trailing *no-data* batch Spark schedules when the last data
batch moved the watermark and an operator evicts by it (a join whose state the watermark can
clean, a session aggregation in append mode; not complete mode, not a key-only inner join,
not with ``spark.sql.streaming.noDataMicroBatches.enabled=false``). It emits the outer-join
rows and closed sessions that the final watermark releases and is part of the result, with no
input file behind it. Rows within the watermark delay of the newest event stay in state: to
flush them, end the inputs with a batch holding a far-future event (on both join sides).
See ``StreamRun`` for the result shape.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = [
    "JOIN_TYPES",
    "StreamRun",
    "run_session_window_stream",
    "run_stream_join",
    "spark_session_window_stream",
    "spark_stream_join",
    "write_batches",
]

#: ``how`` accepted by the join functions -> Spark's join type name.
JOIN_TYPES: dict[str, str] = {
    "inner": "inner",
    "left": "left_outer",
    "right": "right_outer",
    "full": "full_outer",
    "semi": "left_semi",
}

# File mtimes: a fixed, recent-enough base (Spark's ``maxFileAge`` is measured from the newest
# file, so only the spacing matters) and whole seconds between files (Spark keeps milliseconds,
# some file systems keep seconds).
_MTIME_BASE = 1_700_000_000
_QUERY_TIMEOUT_S = 900.0

# "10 minutes", "1 hour 30 minutes", "5 seconds": a duration string rather than a SQL expression.
_DURATION = re.compile(r"^\s*(?:interval\s+)?(?:\d+\s*[a-z]+\s*)+$", re.IGNORECASE)


@dataclass
class StreamRun:
    """What one streaming query did, one entry per micro-batch in batch-id order.

    ``outputs``: ``(batch_id, table)`` for every batch Spark ran, including batches that
    emitted nothing (a zero-row table with the output schema) and the trailing no-data batches
    Spark runs only to advance the watermark. Rows are sorted by all output columns (Spark's
    own order is partition-dependent); Spark's field metadata is dropped.

    ``watermarks``: the global event-time watermark the batch ran with (Spark's
    ``progress.eventTime.watermark``: computed at the end of the previous batch, the Unix
    epoch for batch 0), a UTC datetime; ``None`` when the query defines no watermark. It is
    the batch's *eviction* watermark; with Spark's default
    ``spark.sql.streaming.statefulOperator.allowMultiple=true`` the batch drops late input
    rows by the previous batch's value (``watermarks[i - 1]``, epoch for batch 0).

    ``input_rows``: rows read by the batch from all inputs; ``source_rows`` the same split by
    input name (``"left"``/``"right"`` for joins, ``"input"`` for session windows).

    ``progress``: Spark's raw progress reports (parsed JSON), for anything else (state
    operator metrics, ``numRowsDroppedByWatermark``, ...).
    """

    outputs: list[tuple[int, pa.Table]]
    watermarks: list[dt.datetime | None]
    input_rows: list[int]
    source_rows: list[dict[str, int]] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)

    @property
    def batch_ids(self) -> list[int]:
        return [b for b, _ in self.outputs]

    def dropped_by_watermark(self) -> list[int]:
        """Per batch, the rows the stateful operators dropped as late (sum over operators)."""
        return [
            sum(int(op.get("numRowsDroppedByWatermark", 0)) for op in p.get("stateOperators", []))
            for p in self.progress
        ]


# ------------------------------------------------------------------------------------------
# input files
# ------------------------------------------------------------------------------------------


def write_batches(directory: str | os.PathLike[str], batches: Sequence[pa.Table]) -> list[Path]:
    """Writes one Parquet file per batch into ``directory`` (created; must hold no files),
    with increasing names and modification times, so that Spark's file source with
    ``maxFilesPerTrigger=1`` reads them one per micro-batch, in order.

    Every batch must have the same schema; an empty batch still writes a file (Spark needs
    the file to exist to count a micro-batch for that input)."""
    if not batches:
        raise ValueError("at least one batch is needed (it carries the schema)")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    if any(d.iterdir()):
        raise FileExistsError(f"{d} is not empty; the oracle needs a fresh directory per run")
    schema = batches[0].schema
    paths = []
    for i, batch in enumerate(batches):
        if not batch.schema.equals(schema, check_metadata=False):
            raise ValueError(f"batch {i} has schema {batch.schema}, batch 0 has {schema}")
        path = d / f"batch-{i:05d}.parquet"
        pq.write_table(batch, path)
        os.utime(path, (_MTIME_BASE + i, _MTIME_BASE + i))
        paths.append(path)
    return paths


def _read_stream(spark: Any, directory: Path, watermark: tuple[str, str] | None) -> Any:
    # The schema is what Spark's batch reader makes of the first file, so that the stream
    # reads every file exactly as a batch read would.
    schema = spark.read.parquet(str(directory / "batch-00000.parquet")).schema
    df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(directory))
    if watermark is not None:
        df = df.withWatermark(watermark[0], watermark[1])
    return df


# ------------------------------------------------------------------------------------------
# running a query
# ------------------------------------------------------------------------------------------


@contextmanager
def _session_conf(spark: Any, conf: dict[str, str]) -> Iterator[None]:
    """Sets session confs for the duration of one query (they are read when it starts)."""
    saved = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _strip_field(f: pa.Field) -> pa.Field:
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_strip_field(t.field(i)) for i in range(t.num_fields)])
    return pa.field(f.name, t, f.nullable)


def _strip_metadata(table: pa.Table) -> pa.Table:
    """Drops Spark's field metadata (``SPARK::metadata::json`` holding the watermark delay of
    event-time columns): it says how Spark planned the query, not what it emitted."""
    schema = pa.schema([_strip_field(f) for f in table.schema])
    return table.cast(schema) if table.num_columns else table


def _sorted(table: pa.Table) -> pa.Table:
    """``table`` sorted by all its columns (struct columns by their fields), nulls last."""
    flat = table
    while any(pa.types.is_struct(f.type) for f in flat.schema):
        flat = flat.flatten()
    keys = [
        (name, "ascending")
        for name, f in zip(flat.column_names, flat.schema)
        if not (pa.types.is_nested(f.type) or pa.types.is_dictionary(f.type))
    ]
    if not keys or table.num_rows < 2:
        return table
    return table.take(pc.sort_indices(flat, sort_keys=keys))  # nulls last (the default)


def _parse_watermark(s: str | None) -> dt.datetime | None:
    if s is None:
        return None
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(dt.timezone.utc)


def _run(
    spark: Any,
    workdir: Path,
    df: Any,
    output_mode: str,
    source_names: dict[str, str],
    sort: bool,
    conf: dict[str, str] | None,
) -> StreamRun:
    """Runs ``df`` to completion under ``availableNow`` and collects each batch's output."""
    collected: list[tuple[int, pa.Table]] = []

    def sink(batch_df: Any, batch_id: int) -> None:
        # Exactly one action on the batch: a second one (or an orderBy, whose range
        # partitioner samples its input first) would run the stateful operators again and
        # double their metrics. Sorting happens in Arrow instead.
        table = _strip_metadata(batch_df.toArrow())
        collected.append((int(batch_id), _sorted(table) if sort else table))

    settings = {
        # Keep a progress report for every batch of even a long run.
        "spark.sql.streaming.numRecentProgressUpdates": "100000",
        **(conf or {}),
    }
    with _session_conf(spark, settings):
        query = (
            df.writeStream.outputMode(output_mode)
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .trigger(availableNow=True)
            .foreachBatch(sink)
            .start()
        )
        try:
            if not query.awaitTermination(_QUERY_TIMEOUT_S):
                raise TimeoutError(f"streaming query did not finish within {_QUERY_TIMEOUT_S} s")
            # A failed query re-raises here (awaitTermination raises too, but be explicit).
            err = query.exception()
            if err is not None:
                raise err
            progress = [json.loads(p.json) if hasattr(p, "json") else dict(p) for p in query.recentProgress]
        finally:
            if query.isActive:
                query.stop()

    by_batch = {int(p["batchId"]): p for p in progress}
    collected.sort(key=lambda bt: bt[0])
    run = StreamRun(outputs=collected, watermarks=[], input_rows=[])
    for batch_id, _ in collected:
        p = by_batch.get(batch_id, {})
        run.progress.append(p)
        run.watermarks.append(_parse_watermark(p.get("eventTime", {}).get("watermark")))
        run.input_rows.append(int(p.get("numInputRows", 0)))
        rows: dict[str, int] = {}
        for src in p.get("sources", []):
            desc = src.get("description", "")
            name = next((n for marker, n in source_names.items() if marker in desc), desc)
            rows[name] = rows.get(name, 0) + int(src.get("numInputRows", 0))
        run.source_rows.append(rows)
    return run


def _prepare_workdir(workdir: str | os.PathLike[str]) -> Path:
    w = Path(workdir)
    w.mkdir(parents=True, exist_ok=True)
    if (w / "checkpoint").exists():
        raise FileExistsError(f"{w / 'checkpoint'} exists; the oracle needs a fresh workdir per run")
    return w


# ------------------------------------------------------------------------------------------
# stream-stream join
# ------------------------------------------------------------------------------------------


def _join_frame(
    left: Any,
    right: Any,
    *,
    how: str,
    on: list[str] | None,
    condition: str | None,
) -> Any:
    from pyspark.sql import functions as F

    if how not in JOIN_TYPES:
        raise ValueError(f"how must be one of {sorted(JOIN_TYPES)}, not {how!r}")
    jt = JOIN_TYPES[how]
    if not on and condition is None:
        raise ValueError("give `on` (using-join keys), `condition` (a SQL join condition), or both")
    if on and condition is None:
        # A plain USING join: Spark's own resolution (keys once, coalesced for full outer).
        return left.join(right, on=on, how=jt)
    lq, rq = left.alias("L"), right.alias("R")
    if not on:
        return lq.join(rq, F.expr(condition), jt)
    # USING keys plus an extra condition. Spark's DataFrame API cannot say that in one call,
    # so build what its analyzer makes of a USING join: equality on the keys, the keys once
    # (left's for inner/left/semi, right's for right outer, coalesced for full outer) ahead of
    # the other columns of the left and then the right side.
    cond = F.expr(condition)
    for k in on:
        cond = cond & (F.col(f"L.`{k}`") == F.col(f"R.`{k}`"))
    joined = lq.join(rq, cond, jt)
    if jt == "left_semi":
        return joined
    if jt == "right_outer":
        keys = [F.col(f"R.`{k}`").alias(k) for k in on]
    elif jt == "full_outer":
        keys = [F.coalesce(F.col(f"L.`{k}`"), F.col(f"R.`{k}`")).alias(k) for k in on]
    else:
        keys = [F.col(f"L.`{k}`").alias(k) for k in on]
    rest = [F.col(f"L.`{c}`") for c in left.columns if c not in on]
    rest += [F.col(f"R.`{c}`") for c in right.columns if c not in on]
    return joined.select(*keys, *rest)


def run_stream_join(
    spark: Any,
    workdir: str | os.PathLike[str],
    left_batches: list[pa.Table],
    right_batches: list[pa.Table],
    *,
    how: str,
    on: list[str] | None = None,
    condition: str | None = None,
    left_watermark: tuple[str, str] | None = None,
    right_watermark: tuple[str, str] | None = None,
    sort: bool = True,
    conf: dict[str, str] | None = None,
) -> StreamRun:
    """Spark's stream-stream join over the given micro-batches; see ``spark_stream_join``.

    Returns the whole ``StreamRun`` (outputs, per-batch watermarks, input row counts,
    progress). ``conf``: session confs set for this query only (e.g.
    ``spark.sql.streaming.noDataMicroBatches.enabled``)."""
    w = _prepare_workdir(workdir)
    write_batches(w / "left", left_batches)
    write_batches(w / "right", right_batches)
    left = _read_stream(spark, w / "left", left_watermark)
    right = _read_stream(spark, w / "right", right_watermark)
    df = _join_frame(left, right, how=how, on=on, condition=condition)
    names = {str(w / "left"): "left", str(w / "right"): "right"}
    return _run(spark, w, df, "append", names, sort, conf)


def spark_stream_join(
    spark: Any,
    workdir: str | os.PathLike[str],
    left_batches: list[pa.Table],
    right_batches: list[pa.Table],
    *,
    how: str,
    on: list[str] | None = None,
    condition: str | None = None,
    left_watermark: tuple[str, str] | None = None,
    right_watermark: tuple[str, str] | None = None,
) -> list[tuple[int, pa.Table]]:
    """What Spark's stream-stream join emits per micro-batch when micro-batch ``i`` brings
    ``left_batches[i]`` and ``right_batches[i]`` (an input with fewer batches brings nothing
    to the later ones), as ``(batch_id, table)`` in batch order, trailing no-data batches
    included.

    ``how``: inner / left / right / full / semi (Spark's inner, left_outer, right_outer,
    full_outer, left_semi). ``on``: a USING join on columns both sides have (keys once in the
    output); ``condition``: a SQL join condition over both sides' columns (sides aliased ``L``
    and ``R`` for columns whose names clash); both together: USING keys AND the condition,
    with the output shaped as Spark shapes a USING join. Watermarks: ``(column, delay)`` put on
    that side with ``withWatermark``. ``workdir`` must be fresh (inputs and checkpoint go
    there). Output rows are sorted by all columns. For watermarks and row counts use
    ``run_stream_join``."""
    return run_stream_join(
        spark,
        workdir,
        left_batches,
        right_batches,
        how=how,
        on=on,
        condition=condition,
        left_watermark=left_watermark,
        right_watermark=right_watermark,
    ).outputs


# ------------------------------------------------------------------------------------------
# streaming session windows
# ------------------------------------------------------------------------------------------


def _gap_column(src: Any, gap: str) -> Any:
    """The gap argument of ``session_window``.

    A duration string ("5 minutes") goes as is. Anything else is a SQL expression giving each
    row's gap (``CASE ... END``, a column name, ...). Spark 4 parses ``INTERVAL 5 MINUTES`` as
    an ANSI day-time interval, which ``session_window`` rejects ("must be
    CalendarIntervalType"); such an expression is rebuilt as the equal calendar interval with
    ``make_interval`` so that the natural spelling works. String and calendar-interval
    expressions go as they are (Spark casts strings per row; unreadable ones drop the row)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DayTimeIntervalType

    if _DURATION.match(gap):
        return gap
    expr = F.expr(gap)
    if isinstance(src.select(expr.alias("g")).schema["g"].dataType, DayTimeIntervalType):
        g = f"CAST(({gap}) AS INTERVAL DAY TO SECOND)"
        expr = F.expr(
            f"make_interval(0, 0, 0, extract(DAY FROM {g}), extract(HOUR FROM {g}), "
            f"extract(MINUTE FROM {g}), extract(SECOND FROM {g}))"
        )
    return expr


def run_session_window_stream(
    spark: Any,
    workdir: str | os.PathLike[str],
    batches: list[pa.Table],
    *,
    time: str,
    gap: str,
    by: list[str],
    aggs: list[str],
    watermark: tuple[str, str] | None,
    output_mode: str = "append",
    sort: bool = True,
    conf: dict[str, str] | None = None,
) -> StreamRun:
    """Spark's streaming session-window aggregation over the given micro-batches; see
    ``spark_session_window_stream``. Returns the whole ``StreamRun``."""
    from pyspark.sql import functions as F

    if output_mode not in ("append", "update", "complete"):
        raise ValueError(f"output_mode must be append, update or complete, not {output_mode!r}")
    w = _prepare_workdir(workdir)
    write_batches(w / "input", batches)
    src = _read_stream(spark, w / "input", watermark)
    df = src.groupBy(F.session_window(F.col(time), _gap_column(src, gap)), *[F.col(c) for c in by]).agg(
        *[F.expr(a) for a in aggs]
    )
    return _run(spark, w, df, output_mode, {str(w / "input"): "input"}, sort, conf)


def spark_session_window_stream(
    spark: Any,
    workdir: str | os.PathLike[str],
    batches: list[pa.Table],
    *,
    time: str,
    gap: str,
    by: list[str],
    aggs: list[str],
    watermark: tuple[str, str] | None,
    output_mode: str = "append",
) -> list[tuple[int, pa.Table]]:
    """What Spark's ``groupBy(session_window(time, gap), *by).agg(*aggs)`` emits per micro-batch
    when micro-batch ``i`` brings ``batches[i]``, as ``(batch_id, table)`` in batch order,
    trailing no-data batches included.

    ``gap``: a duration ("5 minutes") or a SQL expression for per-row gaps (``CASE WHEN ...
    THEN INTERVAL 1 MINUTE ... END``). ``aggs``: SQL aggregate expressions with aliases
    ("count(*) AS n"). ``watermark``: ``(column, delay)``; append mode needs one. Spark 4 only
    allows append and complete mode for session windows: ``update`` is passed on and Spark
    raises ``STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION`` (kept so tests can check that).
    Complete mode re-emits every session each batch, never evicts, but still drops late rows
    when a watermark is set. Output
    columns: ``session_window`` (struct start/end), the ``by`` keys, the aggregates; rows
    sorted by all columns. For watermarks and row counts use ``run_session_window_stream``."""
    return run_session_window_stream(
        spark,
        workdir,
        batches,
        time=time,
        gap=gap,
        by=by,
        aggs=aggs,
        watermark=watermark,
        output_mode=output_mode,
    ).outputs
