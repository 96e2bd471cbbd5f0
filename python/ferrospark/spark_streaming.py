"""ferrospark's stateful streaming operators inside Spark Structured Streaming
(``fss.stream_join``, ``fss.session_window_stream``).

A query keeps Spark's sources, triggers, checkpoint and exactly-once bookkeeping; its stateful
step is ferrospark's. Each micro-batch (``foreachBatch``):

1. the driver starts the batch's watermarks (``<checkpoint>/watermarks``), computed from every
   partition's event times, as Spark's driver computes its own;
2. the rows are exchanged by key into ``spark.sql.shuffle.partitions`` partitions (Spark's
   shuffle), each a task that runs the operator of its state partition under
   ``<checkpoint>/state/0/<partition>``, as Spark lays out its own state. The operator runs
   in the executor's state host (``ferrospark.state_host``), which keeps it loaded between
   batches whichever Python worker runs the partition's next task, as Spark keeps its state
   store providers loaded in the executor (``ferrospark.streaming.stateHost=false``: in the
   task's own worker). Bare file sources' batches (Parquet, CSV, JSON) are not taken from
   Spark: the tasks read their files themselves, routed as Spark's exchange routes them
   (``stream_sources``);
3. the tasks' output is cached once and handed to ``on_batch(df, batch_id)``; the largest
   event time each task saw moves the watermark for the next batch. A task that
   ``on_batch`` did not run (it read only some partitions, or none) is run after it, so
   every partition's state moves to the batch's version; when ``on_batch`` ran them all
   (a write, a count), the batch costs one Spark job.

A batch is committed as state version ``batch_id + 1``: a batch Spark runs again after a
failure returns the same rows and changes nothing.

The checkpoint is a local path every executor reaches (one machine, or a shared POSIX
mount such as NFS): the operators write their state with plain file I/O, so ``hdfs://``
or ``s3a://`` checkpoints are refused. The query runs on classic Spark (``foreachBatch``
with accumulators), not Spark Connect. Spark runs a batch only when a source
has new files or rows (its own stateful operators also get "no-data" batches that only move
the watermark on); here an outer join's unmatched rows and final sessions come out with the
next batch that has data.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from . import _native
from .spark_stages import _as_spark_schema, _ListParam, _SetParam, arrow_schema
from .stream_sources import NATIVE_SCAN, NativeFileSource, RowsOf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import DataStreamWriter

    from .aggregate import AggColumn

OnBatch = Callable[["DataFrame", int], None]

HOST = "ferrospark.streaming.stateHost"
HOST_IDLE = "ferrospark.streaming.stateHost.idleTimeout"

# The operators a Python worker has open, by (query, partition), when the executor's state
# host (``state_host``) is off or cannot be started: Spark reuses its Python workers, so a
# partition's next batch often lands where its state is already loaded. An operator whose
# loaded version is older than the batch's applies the deltas committed since (or reads the
# version from its files), so a partition that moved between workers is still right.
_OPEN: dict[tuple[str, int], Any] = {}


def _operator(query: str, partition: int, make: Callable[[], Any]) -> Any:
    key = (query, partition)
    op = _OPEN.get(key)
    if op is None:
        op = _OPEN[key] = make()
    return op


def _host_setting(settings: Mapping[str, str]) -> tuple[bool, float]:
    """Whether the tasks run their operators in the executor's state host
    (``ferrospark.streaming.stateHost``, default true) and how long it keeps one unused
    (``ferrospark.streaming.stateHost.idleTimeout``, seconds, default 600)."""
    from .errors import ConfigError

    on = (settings.get(HOST) or "true").strip().lower()
    if on not in ("true", "false"):
        raise ConfigError(f"{HOST} must be true or false, not {on!r}")
    idle = settings.get(HOST_IDLE) or "600"
    try:
        idle_s = float(idle)
    except ValueError:
        idle_s = -1.0
    if not idle_s > 0:
        raise ConfigError(f"{HOST_IDLE} must be a positive number of seconds, not {idle!r}")
    return on == "true", idle_s


class _QueryLease:
    """A file under the checkpoint (``running/<query>``) that exists while the query runs: the
    executors' state hosts drop the query's operators once it is gone, as Spark unloads the
    state store providers of a stopped query. Made by the driver before the first batch's
    tasks, removed by a listener on the query's session when the query terminates."""

    def __init__(self, spark: Any, checkpoint: str, query: str) -> None:
        from pyspark.sql.streaming import StreamingQueryListener

        self.path = Path(checkpoint) / "running" / query
        self.query_id: str | None = None
        lease = self

        class StopListener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                pass

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                if lease.query_id is not None and str(event.id) == lease.query_id:
                    lease.path.unlink(missing_ok=True)
                    lease.query_id = None
                    spark.streams.removeListener(self)

        # The query's own session: foreachBatch's is a clone whose listeners hear nothing.
        spark.streams.addListener(StopListener())

    def begin(self, batch_spark: Any) -> None:
        """Called by the driver before each batch: the first makes the file (classic Spark
        names the running query in a local property; without it the hosts keep the
        operators until they idle out)."""
        if self.query_id is not None:
            return
        query_id = batch_spark.sparkContext.getLocalProperty("sql.streaming.queryId")
        if query_id:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch()
            self.query_id = query_id

    def name(self) -> str | None:
        return str(self.path) if self.query_id is not None else None


def _task(
    query: str,
    make: Callable[[int], Any],
    step: Callable[[Any, list[pa.RecordBatch]], tuple[pa.Table, list[tuple[int, int]]]],
    seen: Any,
    ran: Any,
    host: tuple[bool, float],
    lease: str | None,
    rows_of: RowsOf | None = None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A batch's task: ``step`` run on its partition's operator, in the executor's state host
    or, with none, in this worker; the event-time maxima ``step`` returns go to ``seen``.
    ``rows_of``: how the task gets the rows fss reads itself (``stream_sources``) from its
    input; ``None``: its input is Spark's rows."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import functools

        from pyspark import TaskContext

        from . import state_host

        partition = TaskContext.get().partitionId()
        if rows_of is not None:
            batches = rows_of(batches, partition)
        out: Iterator[pa.RecordBatch] | None = None
        if host[0]:
            try:
                out, maxima = state_host.run(
                    (query, partition),
                    functools.partial(make, partition),
                    step,
                    batches,
                    idle_s=host[1],
                    lease=lease,
                )
            except state_host.HostUnavailable as e:
                print(f"ferrospark: partition {partition} runs in its Python worker: {e}", file=sys.stderr)
        if out is None:
            table, maxima = step(_operator(query, partition, lambda: make(partition)), list(batches))
            out = iter(table.to_batches())
        if maxima:
            seen.add(list(maxima))
        ran.add({partition})
        yield from out

    return run


def _settings(spark: Any, conf: Mapping[str, object] | None) -> dict[str, str]:
    keys = (
        "spark.sql.streaming.multipleWatermarkPolicy",
        "spark.sql.streaming.stateStore.providerClass",
        HOST,
        HOST_IDLE,
        NATIVE_SCAN,
    )
    out = {k: v for k in keys if (v := spark.conf.get(k, None))}
    out.update({k: str(v) for k, v in (conf or {}).items()})
    return out


def _local_checkpoint(checkpoint: str) -> str:
    """The checkpoint as a local path (a ``file:`` URI's path); another scheme is refused."""
    from urllib.parse import urlparse

    text = str(checkpoint)
    parsed = urlparse(text)
    if parsed.scheme == "file":
        return parsed.path
    if "://" in text:
        raise ValueError(
            f"the checkpoint {text!r} is not a local path: ferrospark's state is written with "
            "plain file I/O, so give a directory every executor reaches (a local disk, or a "
            "shared mount such as NFS)"
        )
    return text


def _partitions(spark: Any) -> int:
    return int(spark.conf.get("spark.sql.shuffle.partitions", "200"))


def _max_micros(table: pa.Table, column: str) -> int | None:
    if table.num_rows == 0:
        return None
    m = pc.max(table.column(column).cast(pa.timestamp("us")).cast(pa.int64())).as_py()
    return None if m is None else int(m)


class SidePacking:
    """How a join's two inputs travel as one DataFrame through Spark's exchange: a row of
    either side in shared columns (``__side``, then slots ``__c0``, ``__c1``, ...), a left
    and a right column of the same Spark type sharing a slot, the key pairs first. A row
    carries only as many columns as the wider side (plus any key pair whose types differ),
    not both sides' columns: Spark shuffles the rows and converts them to Arrow for the
    tasks column by column, so a narrower row costs less of both (a third less time moving
    a join batch's rows than both sides' columns packed in a struct each)."""

    def __init__(self, left: DataFrame, right: DataFrame, lkeys: Sequence[str], rkeys: Sequence[str]) -> None:
        lt = {f.name: f.dataType for f in left.schema.fields}
        rt = {f.name: f.dataType for f in right.schema.fields}
        self.types: list[Any] = []  # each slot's Spark type
        self.left: dict[str, int] = {}  # each left column's slot
        self.right: dict[str, int] = {}
        taken_by_right: set[int] = set()

        def new(dtype: Any) -> int:
            self.types.append(dtype)
            return len(self.types) - 1

        for lk, rk in zip(lkeys, rkeys, strict=True):
            if lk not in self.left:
                self.left[lk] = new(lt[lk])
            slot = self.left[lk]
            if rk not in self.right and lt[lk] == rt[rk] and slot not in taken_by_right:
                self.right[rk] = slot
                taken_by_right.add(slot)
        for c in left.columns:
            if c not in self.left:
                self.left[c] = new(lt[c])
        for c in right.columns:
            if c in self.right:
                continue
            free = [i for i, t in enumerate(self.types) if t == rt[c] and i not in taken_by_right]
            self.right[c] = free[0] if free else new(rt[c])
            taken_by_right.add(self.right[c])
        # Each key pair's partitioning column: its shared slot, or (types differing) the right
        # key cast to the left's type beside the slots.
        self.keys: list[str] = []
        self.extra_keys: list[tuple[int, str, str]] = []
        for i, (lk, rk) in enumerate(zip(lkeys, rkeys, strict=True)):
            if self.left[lk] == self.right[rk]:
                self.keys.append(f"__c{self.left[lk]}")
            else:
                self.keys.append(f"__k{i}")
                self.extra_keys.append((i, lk, rk))
        self.left_types = lt
        #: The packed frame's Arrow schema (the columns a task's rows come in).
        self.schema = arrow_schema(self.packed(left, right))

    def packed(self, left: DataFrame, right: DataFrame) -> DataFrame:
        """Both inputs' rows in the shared columns."""
        from pyspark.sql import functions as F

        def side(df: DataFrame, index: int, slots: dict[str, int]) -> DataFrame:
            by_slot = {slot: c for c, slot in slots.items()}
            cols = [F.lit(index).alias("__side")]
            for i, dtype in enumerate(self.types):
                c = by_slot.get(i)
                cols.append((F.col(f"`{c}`") if c is not None else F.lit(None).cast(dtype)).alias(f"__c{i}"))
            for i, lk, rk in self.extra_keys:
                cols.append(F.col(f"`{(lk, rk)[index]}`").cast(self.left_types[lk]).alias(f"__k{i}"))
            return df.select(*cols)

        return side(left, 0, self.left).unionByName(side(right, 1, self.right))

    def pack(self, side: int, table: pa.Table) -> pa.Table:
        """Side ``side``'s rows (its own columns, as Arrow) in the shared columns, as
        :meth:`packed` puts them (``schema``: the packed frame's Arrow schema)."""
        slots = self.left if side == 0 else self.right
        by_slot = {slot: c for c, slot in slots.items()}
        n = table.num_rows
        cols = [pa.repeat(pa.scalar(side, self.schema.field("__side").type), n)]
        for i in range(len(self.types)):
            want = self.schema.field(f"__c{i}").type
            c = by_slot.get(i)
            cols.append(pa.nulls(n, want) if c is None else table.column(c).cast(want))
        return pa.Table.from_arrays(cols, schema=self.schema)

    def unpack(self, got: list[pa.RecordBatch], ls: pa.Schema, rs: pa.Schema) -> tuple[pa.Table, pa.Table]:
        """A task's rows back as the two inputs' tables."""
        sides: tuple[list[pa.RecordBatch], list[pa.RecordBatch]] = ([], [])
        for b in got:
            if b.num_rows == 0:
                continue
            side = b.column(0)
            bounds = pc.min_max(side)
            lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
            if lo == hi:
                # One side's rows (as fss's own reads pack them): no filter to copy through.
                sides[lo].append(b)
            else:
                is_left = pc.equal(side, 0)
                sides[0].append(b.filter(is_left))
                sides[1].append(b.filter(pc.invert(is_left)))
        out = []
        for rows, slots, schema in ((sides[0], self.left, ls), (sides[1], self.right, rs)):
            if not rows:
                out.append(schema.empty_table())
                continue
            table = pa.Table.from_batches(rows)
            cols = [table.column(f"__c{slots[f.name]}") for f in schema]
            out.append(pa.Table.from_arrays(cols, names=schema.names).cast(schema))
        return out[0], out[1]


def _run_batch(
    batch_df: Any,
    batch_id: int,
    keys: list[str],
    task: Callable[
        [int, tuple[int, int] | None, Any, Any, RowsOf | None],
        Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    ],
    out_schema: pa.Schema,
    watermarks: Any,
    on_batch: OnBatch,
    source: NativeFileSource | None = None,
) -> None:
    spark = batch_df.sparkSession
    marks = watermarks.begin(batch_id)
    sc = spark.sparkContext
    seen = sc.accumulator([], _ListParam())
    ran = sc.accumulator(set(), _SetParam())
    tz = spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
    st, _ = _as_spark_schema(out_schema, tz)
    n = _partitions(spark) if keys else 1
    ours = source.rows(spark, batch_id, n) if source is not None else None
    if ours is not None:
        out = ours.frame.mapInArrow(task(batch_id, marks, seen, ran, ours.rows_of), st).persist()
    else:
        out = batch_df.repartition(n, *keys).mapInArrow(task(batch_id, marks, seen, ran, None), st).persist()
    try:
        on_batch(out, batch_id)
        # The partitions on_batch left alone run now (the cache keeps those it ran whole;
        # one it ran in part runs again, its batch re-run: the same rows, no change).
        if len(ran.value) < n:
            out.count()
        if ours is not None:
            ours.credit()
        for input_index, micros in seen.value:
            watermarks.observe(input_index, micros)
    finally:
        out.unpersist()
    watermarks.end(batch_id)


def stream_join(
    left: DataFrame,
    right: DataFrame,
    on: Sequence[str] | str,
    how: str = "inner",
    *,
    condition: str | None = None,
    left_watermark: tuple[str, str] | None = None,
    right_watermark: tuple[str, str] | None = None,
    checkpoint: str,
    on_batch: OnBatch,
    conf: Mapping[str, object] | None = None,
) -> DataStreamWriter:
    """A stream-stream join of two streaming DataFrames run by ferrospark inside Spark's
    Structured Streaming (see the module doc): the same join as
    :class:`ferrospark.streaming.StreamStreamJoin`, whose arguments these are; its state is
    partitioned by key across Spark's tasks. ``on_batch(df, batch_id)`` receives each
    batch's output. Returns the query's ``DataStreamWriter`` (its checkpoint set): choose a
    trigger and ``start()`` it.

    >>> q = fss.stream_join(clicks, views, on=["ad"], how="left",                # doctest: +SKIP
    ...         condition="ct BETWEEN vt AND vt + INTERVAL 10 MINUTES",
    ...         left_watermark=("ct", "10 minutes"), right_watermark=("vt", "10 minutes"),
    ...         checkpoint="ckpt/j", on_batch=lambda df, b: df.write.mode("append").parquet("out"))
    >>> q.trigger(availableNow=True).start().awaitTermination()                   # doctest: +SKIP
    """
    import tempfile

    from .streaming import StreamStreamJoin

    if not (left.isStreaming and right.isStreaming):
        raise ValueError("fss.stream_join joins two streaming DataFrames (spark.readStream...)")
    checkpoint = _local_checkpoint(checkpoint)
    spark = left.sparkSession
    settings = _settings(spark, conf)
    host = _host_setting(settings)
    ls, rs = arrow_schema(left), arrow_schema(right)
    args: dict[str, Any] = {
        "on": on,
        "how": how,
        "condition": condition,
        "left_watermark": left_watermark,
        "right_watermark": right_watermark,
        "conf": settings,
    }
    # The join checked and its output schema found on the driver, before any batch runs.
    with tempfile.TemporaryDirectory() as probe:
        j = StreamStreamJoin(checkpoint=probe, **args)
        lkeys, rkeys = j.keys(ls, rs)
        out_schema = j.process(0, ls.empty_table(), rs.empty_table()).schema
    packing = SidePacking(left, right, lkeys, rkeys)
    packed = packing.packed(left, right)
    state = str(checkpoint)  # the operators lay out <checkpoint>/state/0/<partition>
    query = f"{uuid.uuid4()}"
    lease = _QueryLease(spark, checkpoint, query) if host[0] else None
    times = [
        (0, left_watermark[0]) if left_watermark else None,
        (1, right_watermark[0]) if right_watermark else None,
    ]
    watermarked = [t for t in times if t is not None]
    marks_dir = str(Path(checkpoint) / "watermarks" / "0")
    watermarks = _native.Watermarks(
        marks_dir, [w[1] for w in (left_watermark, right_watermark) if w], settings
    )

    def make(partition: int) -> Any:
        from .streaming import StreamStreamJoin

        return StreamStreamJoin(checkpoint=state, partition_id=partition, **args)

    def task(
        batch_id: int, marks: tuple[int, int] | None, seen: Any, ran: Any, rows_of: RowsOf | None
    ) -> Any:
        def step(j: Any, got: list[pa.RecordBatch]) -> tuple[pa.Table, list[tuple[int, int]]]:
            lt, rt = packing.unpack(got, ls, rs)
            out = j._process(batch_id, lt, rt, marks, True)
            maxima = [
                (index, _max_micros(lt if which == 0 else rt, column))
                for index, (which, column) in enumerate(watermarked)
            ]
            return out, [(i, m) for i, m in maxima if m is not None]

        return _task(query, make, step, seen, ran, host, lease.name() if lease else None, rows_of)

    # Two bare file sources' batches are read by fss's own tasks (``stream_sources``),
    # each side routed by its keys: a key pair of one type, hashed as its packed column is.
    source = (
        NativeFileSource.of_join(
            [left, right], checkpoint, settings, [list(lkeys), list(rkeys)], packing.pack
        )
        if not packing.extra_keys
        else None
    )

    def each(batch_df: Any, batch_id: int) -> None:
        if lease is not None:
            lease.begin(batch_df.sparkSession)
        _run_batch(batch_df, batch_id, packing.keys, task, out_schema, watermarks, on_batch, source)

    return packed.writeStream.option("checkpointLocation", str(checkpoint)).foreachBatch(each)


def session_window_stream(
    df: DataFrame,
    time: str,
    gap: str,
    by: str | Sequence[str] = (),
    aggs: AggColumn | Sequence[AggColumn] = (),
    *,
    watermark: tuple[str, str] | None = None,
    output_mode: str = "append",
    checkpoint: str,
    on_batch: OnBatch,
    conf: Mapping[str, object] | None = None,
) -> DataStreamWriter:
    """Spark's streaming ``groupBy(session_window(time, gap), *by).agg(*aggs)`` run by
    ferrospark inside Structured Streaming (see the module doc): the same aggregation as
    :class:`ferrospark.streaming.SessionWindowAggregation`, its sessions partitioned by
    ``by`` across Spark's tasks. ``on_batch(df, batch_id)`` receives each batch's output.
    Returns the query's ``DataStreamWriter``: choose a trigger and ``start()`` it."""
    import tempfile

    from .streaming import SessionWindowAggregation

    if not df.isStreaming:
        raise ValueError("fss.session_window_stream aggregates a streaming DataFrame (spark.readStream...)")
    checkpoint = _local_checkpoint(checkpoint)
    spark = df.sparkSession
    settings = _settings(spark, conf)
    host = _host_setting(settings)
    schema = arrow_schema(df)
    keys = [by] if isinstance(by, str) else list(by)
    args: dict[str, Any] = {
        "time": time,
        "gap": gap,
        "by": keys,
        "aggs": aggs,
        "watermark": watermark,
        "output_mode": output_mode,
        "conf": settings,
    }
    with tempfile.TemporaryDirectory() as probe:
        out_schema = (
            SessionWindowAggregation(checkpoint=probe, **args).process(0, schema.empty_table()).schema
        )
    state = str(checkpoint)  # the operators lay out <checkpoint>/state/0/<partition>
    query = f"{uuid.uuid4()}"
    lease = _QueryLease(spark, checkpoint, query) if host[0] else None
    watermarks = _native.Watermarks(
        str(Path(checkpoint) / "watermarks" / "0"), [watermark[1]] if watermark else [], settings
    )

    def make(partition: int) -> Any:
        from .streaming import SessionWindowAggregation

        return SessionWindowAggregation(checkpoint=state, partition_id=partition, **args)

    def task(
        batch_id: int, marks: tuple[int, int] | None, seen: Any, ran: Any, rows_of: RowsOf | None
    ) -> Any:
        def step(sw: Any, got: list[pa.RecordBatch]) -> tuple[pa.Table, list[tuple[int, int]]]:
            table = pa.Table.from_batches(got).cast(schema) if got else schema.empty_table()
            out = sw._process(batch_id, table, marks, True)
            m = _max_micros(table, time) if watermark else None
            return out, [] if m is None else [(0, m)]

        return _task(query, make, step, seen, ran, host, lease.name() if lease else None, rows_of)

    # A bare file source's batches are read by fss's own tasks (``stream_sources``).
    source = NativeFileSource.of(df, checkpoint, settings, keys)

    def each(batch_df: Any, batch_id: int) -> None:
        if lease is not None:
            lease.begin(batch_df.sparkSession)
        _run_batch(
            batch_df,
            batch_id,
            [f"`{k}`" for k in keys],
            task,
            out_schema,
            watermarks,
            on_batch,
            source,
        )

    return df.writeStream.option("checkpointLocation", str(checkpoint)).foreachBatch(each)


__all__ = ["session_window_stream", "stream_join"]
