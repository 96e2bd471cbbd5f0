"""ferrospark on Spark: Spark distributes, ferrospark does the per-partition work.

``read_parquet`` plans splits on the driver from the Parquet footers (files and row-group
ranges, already pruned by the filter), hands one split to each Spark task, and each task
reads its split natively inside ``mapInArrow``: decode, filter and project happen in Rust,
and only the surviving rows cross into the JVM.
"""

from __future__ import annotations

import json
import os
import re
import uuid
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _native
from .column import Column, to_filter
from .parquet import Paths, _paths

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


# Spark settings ferrospark honours when the session has them set (ferrospark.* keys too, so a
# Spark job can bound ferrospark's memory with `spark.conf.set("ferrospark.memory.limit", ...)`).
_FORWARDED = (
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.ansi.enabled",
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
    "ferrospark.memory.limit",
    "ferrospark.spill.dir",
    "ferrospark.batch.size",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.join.preferSortMergeJoin",
    "spark.sql.shuffle.partitions",
)


def _spark_conf(spark: SparkSession) -> dict[str, str]:
    """The Spark settings ferrospark honours, as the session has them."""
    conf = {
        "spark.sql.session.timeZone": spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC",
        "spark.sql.parquet.filterPushdown": spark.conf.get("spark.sql.parquet.filterPushdown", "true")
        or "true",
    }
    for key in _FORWARDED:
        value = spark.conf.get(key, None)
        if value:
            conf[key] = value
    return conf


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark ``StructType`` of an Arrow schema already converted to Spark's Arrow types."""
    from pyspark.sql.pandas.types import from_arrow_schema

    try:
        return from_arrow_schema(schema, prefer_timestamp_ntz=True)
    except TypeError:  # older signature without the keyword
        return from_arrow_schema(schema)


def arrow_schema(df: DataFrame) -> pa.Schema:
    """The Arrow schema of the batches ``mapInArrow`` hands a task of ``df`` (timestamps in
    the session time zone, as Spark converts them)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    tz = df.sparkSession.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
    return to_arrow_schema(df.schema, timezone=tz)


def _read_splits_task(source: _ParquetSource):
    """The function each Spark task runs: read the splits it is given, natively."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from _batches_of(source, batches)

    return run


def read_parquet(
    spark: SparkSession,
    path_or_paths: Paths,
    columns: Sequence[str] | None = None,
    filter: Column | str | None = None,
) -> DataFrame:
    """Reads Parquet into a PySpark DataFrame, natively, one split per Spark task.

    The result equals ``spark.read.parquet(path).filter(filter).select(columns)`` and composes
    with the rest of a Spark job like any DataFrame.
    """
    conf = _spark_conf(spark)
    native_filter = to_filter(filter)
    cols = list(columns) if columns is not None else None
    scan = _native.scan_parquet(
        _paths(path_or_paths), columns=cols, filter=native_filter, conf=conf, spark_types=True
    )
    schema = spark_schema(scan.schema())
    splits = scan.splits()
    # The files' whole schema, for Spark's size estimate of the projection (footers cached).
    full_schema = (
        _native.scan_parquet(_paths(path_or_paths), conf=conf, spark_types=True).schema()
        if cols is not None
        else scan.schema()
    )
    if not splits:
        return spark.createDataFrame([], schema)
    batch_size = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000") or 10000)
    source = _ParquetSource(
        splits=splits,
        columns=cols,
        filter_sql=str(native_filter) if native_filter is not None else None,
        conf=conf,
        partition_fields=scan.partition_fields(),
        batch_size=max(batch_size, 1),
        schema=scan.schema(),
        full_schema=full_schema,
        paths=[os.path.abspath(str(p)) for p in _paths(path_or_paths)],
    )
    task = _read_splits_task(source)
    df = source.splits_frame(spark).mapInArrow(task, schema)
    # Operators given this very DataFrame (not one derived from it) read the files themselves,
    # fused with their first step, instead of receiving rows from the JVM.
    _SOURCES[id(df)] = (weakref.ref(df), source)
    return df


class _ParquetSource:
    """What a task needs to read a planned scan's splits natively."""

    def __init__(
        self,
        splits: list[dict[str, Any]],
        columns: list[str] | None,
        filter_sql: str | None,
        conf: dict[str, str],
        partition_fields: list[tuple[str, str]],
        batch_size: int,
        schema: pa.Schema,
        full_schema: pa.Schema | None = None,
        paths: list[str] | None = None,
    ) -> None:
        self.paths = paths
        self.splits = splits
        self.columns = columns
        self.filter_sql = filter_sql
        self.conf = conf
        self.partition_fields = partition_fields
        self.batch_size = batch_size
        self.schema = schema
        self.full_schema = full_schema if full_schema is not None else schema

    def spark_size(self) -> int:
        """Spark's estimate of the scan's size: the files' bytes, scaled by the projected
        row's width over the whole row's (each by Spark's default size of its types)."""
        total = sum(int(s.get("bytes", 0)) for s in self.splits)
        return total * _row_width(self.schema) // max(_row_width(self.full_schema), 1)

    def splits_frame(self, spark: SparkSession) -> DataFrame:
        rows = [(i, json.dumps(s)) for i, s in enumerate(self.splits)]
        return spark.sparkContext.parallelize(rows, numSlices=len(rows)).toDF("id INT, split STRING")

    def scans(self, batches: Iterator[pa.RecordBatch]) -> Iterator[Any]:
        """The native scan of every split handed to this task."""
        filt = _native.Expr.parse(self.filter_sql) if self.filter_sql else None
        for batch in batches:
            for text in batch.column("split").to_pylist():
                split = json.loads(text)
                yield _native.scan_parquet_split(
                    split["path"],
                    split["row_groups"],
                    split["partition_values"],
                    self.partition_fields,
                    columns=self.columns,
                    filter=filt,
                    conf=self.conf,
                    batch_size=self.batch_size,
                    spark_types=True,
                )


_SOURCES: dict[int, tuple[weakref.ref[DataFrame], _ParquetSource]] = {}


def _remembered(registry: dict[int, tuple[weakref.ref[DataFrame], Any]], df: DataFrame) -> Any:
    """What `registry` remembers of this very DataFrame (not of another that reused its id)."""
    entry = registry.get(id(df))
    if entry is None:
        return None
    ref, value = entry
    if ref() is not df:
        del registry[id(df)]
        return None
    return value


def _source_of(df: DataFrame) -> _ParquetSource | None:
    return _remembered(_SOURCES, df)


def _native_plan(schema: pa.Schema, keys: list[str], specs: list[tuple], conf: dict[str, str]):
    """The aggregation plan, rebuilt identically on the driver and in every task."""
    by = [_native.Expr.parse(k) for k in keys]
    aggs = [(n, [_native.Expr.parse(a) for a in args], d, i, al) for n, args, d, i, al in specs]
    return _native.plan_aggregate(schema, by, aggs, conf)


def _grouping_text(by: Any, aggs: Any) -> tuple[list[str], list[tuple]]:
    """Grouping keys and aggregates as the text every task parses again (native expressions
    do not travel): `(keys, [(name, args, distinct, ignore_nulls, alias)])`."""
    from .aggregate import _aggs, _keys

    keys = [str(k) for k in _keys(by)]
    specs = [
        (a._name, [str(x) for x in a._args], a._distinct, a._ignore_nulls, a._alias) for a in _aggs(aggs)
    ]
    return keys, specs


#: What crosses Spark's shuffle between two aggregation steps: Arrow IPC blocks of states.
_BLOCKS_SCHEMA = pa.schema([pa.field("_pid", pa.int32(), False), pa.field("_blob", pa.binary(), False)])
#: Blocks per batch handed back to Spark.
_BLOCKS_PER_BATCH = 64


def _murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3_x86_32.hashInt`` (what its hash partitioning applies to an int)."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    k = (value & m) * 0xCC9E2D51 & m
    k = rotl(k, 15) * 0x1B873593 & m
    h = rotl(seed ^ k, 13)
    h = (h * 5 + 0xE6546B64) & m
    h ^= 4
    h ^= h >> 16
    h = h * 0x85EBCA6B & m
    h ^= h >> 13
    h = h * 0xC2B2AE35 & m
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def _routing(n: int) -> list[int]:
    """For each shuffle partition ``p < n``, an int that Spark's hash partitioning sends to
    ``p``: the blocks of partition ``p`` carry it, so they land exactly where they belong."""
    route: list[int | None] = [None] * n
    left, v = n, 0
    while left:
        p = _murmur3_int(v) % n  # Python's % is Spark's pmod for a positive n
        if route[p] is None:
            route[p] = v
            left -= 1
        v += 1
    return [r for r in route if r is not None]


def _shuffle_partitions(spark: SparkSession) -> int:
    """The number of partitions Spark gives ``repartition(col)``: what AQE starts from."""

    def conf(key: str, default: str) -> str:
        return str(spark.conf.get(key, default) or default)

    n = int(conf("spark.sql.shuffle.partitions", "200"))
    adaptive = conf("spark.sql.adaptive.enabled", "true").lower() == "true"
    coalesce = conf("spark.sql.adaptive.coalescePartitions.enabled", "true").lower() == "true"
    initial = spark.conf.get("spark.sql.adaptive.coalescePartitions.initialPartitionNum", None)
    if adaptive and coalesce and initial:
        n = int(initial)
    return max(n, 1)


#: The ferrospark DataFrame behind each PySpark DataFrame an fss function returned: the next
#: fss call continues that plan (its scan read by the tasks themselves) rather than reading
#: its rows back from the JVM.
_PLANS: dict[int, tuple[weakref.ref[DataFrame], Any]] = {}


def _session_for(spark: SparkSession) -> Any:
    """A ferrospark session on ``spark``, with the ``ferrospark.*`` settings Spark's has."""
    from .session import Session

    conf = {k: v for k, v in _spark_conf(spark).items() if k.startswith("ferrospark.")}
    return Session(conf=conf, spark=spark)


def _plan_of(df: DataFrame) -> Any:
    """``df`` as a ferrospark DataFrame of a session on Spark: the plan an fss function
    returned it from, a native scan for :func:`read_parquet`'s output, else a plan leaf over
    its rows."""
    plan = _remembered(_PLANS, df)
    if plan is not None:
        return plan
    session = _session_for(df.sparkSession)
    source = _source_of(df)
    if source is not None and source.paths is not None:
        frame = session.read.parquet(source.paths)
        if source.filter_sql:
            frame = frame.filter(source.filter_sql)
        if source.columns is not None:
            frame = frame.select(*source.columns)
        return frame
    return session.createDataFrame(df)


def _published(frame: Any) -> DataFrame:
    """The PySpark DataFrame of a ferrospark plan on Spark, remembered for the next fss call."""
    out = frame.to_spark()
    _PLANS[id(out)] = (weakref.ref(out), frame)
    return out


def aggregate(df: DataFrame, by: Any = None, aggs: Any = ()) -> DataFrame:
    """``df.groupBy(by).agg(aggs)`` planned by ferrospark and run as Spark stages.

    A thin layer over ``fs.Session(spark=...)``: the aggregation's partial steps run in the
    tasks of its input's stage, Spark's shuffle moves their states as Arrow IPC blocks, the
    final steps run in the next stage (Spark's four steps and two shuffles with DISTINCT
    aggregates). When ``df`` is what :func:`read_parquet` (or another fss function) returned,
    the plan continues from it, so the tasks read the files themselves and only partial states
    cross into the JVM; any other DataFrame is read through ``mapInArrow``.
    """
    from .aggregate import _aggs, _key_list

    frame = _plan_of(df).groupBy(*_key_list(by)).agg(*_aggs(aggs))
    return _published(frame)


#: What crosses Spark's shuffle between a side of a join and the join: that side's rows as
#: Arrow IPC blocks, tagged with the side (0 left, 1 right).
_SIDE_BLOCKS_SCHEMA = pa.schema(
    [
        pa.field("_pid", pa.int32(), False),
        pa.field("_side", pa.int8(), False),
        pa.field("_blob", pa.binary(), False),
    ]
)

#: Built broadcast sides of this Python worker, by join: built once, probed by every task of
#: the join that this worker runs. Only the newest few are kept.
_BUILT: dict[str, Any] = {}
_BUILT_KEEP = 4


class _JoinSpec:
    """What a task needs to plan a join exactly as the driver did (the native plan itself does
    not travel: each task rebuilds it from this)."""

    def __init__(
        self,
        left: pa.Schema,
        right: pa.Schema,
        kind: str,
        using: list[str] | None,
        condition_sql: str | None,
        strategy: str,
        conf: dict[str, str],
        sizes: tuple[int, int],
    ) -> None:
        self.left, self.right, self.kind, self.using = left, right, kind, using
        self.condition_sql, self.strategy, self.conf, self.sizes = condition_sql, strategy, conf, sizes
        self.token = uuid.uuid4().hex

    def plan(self) -> Any:
        cond = _native.Expr.parse(self.condition_sql) if self.condition_sql else None
        return _native.JoinPlan(
            self.left,
            self.right,
            self.kind,
            using=self.using,
            condition=cond,
            strategy=self.strategy,
            conf=self.conf,
            left_bytes=self.sizes[0],
            right_bytes=self.sizes[1],
        )

    def output(self, batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
        """A joined batch as the join's result columns (``USING`` keys once)."""

        if self.using:
            t = _using_columns(
                pa.Table.from_batches([batch]), len(self.left), self.using, self.kind, self.left, self.right
            )
            return pa.RecordBatch.from_arrays([c.combine_chunks() for c in t.columns], schema=schema)
        return pa.RecordBatch.from_arrays(batch.columns, schema=schema)


def _default_size(t: pa.DataType) -> int:
    """Spark's ``DataType.defaultSize`` of the Spark type of an Arrow type."""
    if pa.types.is_decimal(t):
        return 8 if t.precision <= 18 else 16
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return 20
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return 100
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_date32(t):
        return 4
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _default_size(t.value_type)
    if pa.types.is_struct(t):
        return sum(_default_size(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _default_size(t.key_type) + _default_size(t.item_type)
    try:
        return max(t.bit_width // 8, 1)
    except ValueError:
        return 8


def _row_width(schema: pa.Schema) -> int:
    """Spark's estimated row size: 8 bytes of row overhead plus each column's default size."""
    return 8 + sum(_default_size(f.type) for f in schema)


def _size_of(df: DataFrame, source: _ParquetSource | None) -> int:
    """The size Spark's join selection weighs a side by: for a native scan, Spark's estimate
    of the same scan (file bytes scaled to the projection), else Spark's own estimate of the
    plan (``sizeInBytes`` of its optimized plan)."""
    if source is not None:
        return source.spark_size()
    try:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # noqa: BLE001 - an estimate Spark cannot give means "too big to broadcast"
        return 2**63 - 1


def _batches_of(source: _ParquetSource | None, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task's input rows: read natively from its splits, or the rows Spark hands it."""
    if source is None:
        yield from batches
        return
    for scan in source.scans(batches):
        stream = scan.stream()
        try:
            while (out := stream.next_batch()) is not None:
                if out.num_rows:
                    yield out
        finally:
            stream.close()


def _collect_side(spark: SparkSession, df: DataFrame, source: _ParquetSource | None) -> pa.Table:
    """A side's rows on the driver: read natively when it is a native scan."""
    if source is None:
        return df.toArrow()
    frame = pa.record_batch([pa.array([json.dumps(s) for s in source.splits])], names=["split"])
    batches = list(_batches_of(source, iter([frame])))
    return pa.Table.from_batches(batches, schema=source.schema) if batches else source.schema.empty_table()


class _DistinctSet:
    """An accumulator parameter: the union of the sets the tasks add."""

    def zero(self, value: set) -> set:
        return set()

    def addInPlace(self, a: set, b: set) -> set:  # noqa: N802 - PySpark's name
        a |= b
        return a


def _broadcast_join_task(spec: _JoinSpec, build, probe_source, schema: pa.Schema, counters):
    """Each probe task: the broadcast side built once per Python worker, then this task's rows
    streamed through a fork of it. ``counters`` are accumulators of the builds, the tasks and
    the Python workers (host and process) that ran them."""
    builds, probes, workers = counters

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # The worker's own module, imported: a global named here would travel with the
        # pickled function as a copy, fresh in every task.
        from ferrospark.spark import _BUILT

        built = _BUILT.get(spec.token)
        if built is None:
            built = spec.plan().task()
            for b in pa.ipc.open_stream(build.value):
                built.push_build(b)
            built.finish_build()
            while len(_BUILT) >= _BUILT_KEEP:
                _BUILT.pop(next(iter(_BUILT)))
            _BUILT[spec.token] = built
            builds.add(1)
        probes.add(1)
        import os
        import socket

        workers.add({(socket.gethostname(), os.getpid())})
        prober = built.fork()
        for b in _batches_of(probe_source, batches):
            for out in prober.probe(b):
                yield spec.output(out, schema)
        for out in prober.finish():
            yield spec.output(out, schema)

    return run


def _side_blocks_task(spec: _JoinSpec, left: bool, source, route: list[int]):
    """Each task of one side: its rows hash-partitioned on the join keys into IPC blocks,
    tagged so Spark's shuffle brings each partition of both sides to one task."""
    tag = 0 if left else 1

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partitioner = spec.plan().partitioner(left, len(route))
        for pids, blobs in _partitioned_blocks(partitioner, _batches_of(source, batches), route):
            yield _side_blocks(pids, tag, blobs)

    return run


def _side_blocks(pids: list[int], tag: int, blobs: list[bytes]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(pids, pa.int32()), pa.array([tag] * len(pids), pa.int8()), pa.array(blobs, pa.binary())],
        schema=_SIDE_BLOCKS_SCHEMA,
    )


def _partition_join_task(spec: _JoinSpec, schema: pa.Schema):
    """Each task after the shuffle: the build side's blocks built, then the probe side's
    streamed through (held as the compact blocks until the build side is complete)."""
    import pyarrow.compute as pc

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan = spec.plan()
        task = plan.task()
        build_tag = 0 if plan.build_side() == "left" else 1
        probe_blocks = []
        for b in batches:
            if not b.num_rows:
                continue
            is_build = pc.equal(b.column("_side"), build_tag)
            task.push_build_blocks(b.column("_blob").filter(is_build))
            probe_blocks.append(b.column("_blob").filter(pc.invert(is_build)))
        task.finish_build()
        for blocks in probe_blocks:
            for out in task.probe_blocks(blocks):
                yield spec.output(out, schema)
        for out in task.finish():
            yield spec.output(out, schema)

    return run


def _using_columns(
    table: pa.Table, nleft: int, using: list[str], kind: str, ls: pa.Schema, rs: pa.Schema
) -> pa.Table:
    """Spark's ``USING`` output of a joined table (left columns, then right ones): each key
    once (the right one for a right join, the first non-NULL of both for a full join), then
    the other left columns, then the other right ones; a semi or anti join's keys first."""
    import pyarrow.compute as pc

    lkeys = [ls.get_field_index(k) for k in using]
    if kind in ("semi", "anti", "null_aware_anti"):
        rest = [i for i in range(nleft) if i not in lkeys]
        return table.select(lkeys + rest)
    rkeys = [nleft + rs.get_field_index(k) for k in using]
    columns, names = [], []
    for k, li, ri in zip(using, lkeys, rkeys, strict=True):
        if kind == "right":
            columns.append(table.column(ri))
        elif kind == "full":
            columns.append(pc.coalesce(table.column(li), table.column(ri)))
        else:
            columns.append(table.column(li))
        names.append(ls.field(li).name if kind != "right" else k)
    for i in range(table.num_columns):
        if i not in lkeys and i not in rkeys:
            columns.append(table.column(i))
            names.append(table.schema.field(i).name)
    return pa.table(columns, names=names)


def join(
    left: DataFrame,
    right: DataFrame,
    on: Any = None,
    how: str = "inner",
    strategy: str = "auto",
    condition: Any = None,
) -> DataFrame:
    """``left.join(right, on, how)`` with ferrospark's join operators inside Spark tasks.

    The operator is chosen as Spark's ``JoinSelection`` would (``strategy`` names one
    instead), from each side's size: the Parquet bytes of a :func:`read_parquet` scan, else
    Spark's own estimate. A broadcast join collects the build side once on the driver (read
    natively when it is a scan), ships it to the executors as Arrow IPC in a broadcast
    variable, builds it once per Python worker and streams each probe task through it; a
    probe side that is exactly what :func:`read_parquet` returned is probed inside the scan
    tasks. Shuffled hash and sort-merge joins have each side hash-partitioned on the join
    keys inside its own tasks and shuffled by Spark as Arrow IPC blocks, then join each
    partition natively. ``ferrospark.last_spark_join_plan()`` says what was chosen.
    """
    from pyspark.sql import functions as F

    from .join import _request

    spark = left.sparkSession
    conf = _spark_conf(spark)
    kind, using, cond = _request(on, how, condition, strategy)
    sources = (_source_of(left), _source_of(right))
    schemas = tuple(
        src.schema if src is not None else arrow_schema(df)
        for df, src in zip((left, right), sources, strict=True)
    )
    sizes = tuple(_size_of(df, src) for df, src in zip((left, right), sources, strict=True))
    spec = _JoinSpec(
        schemas[0],
        schemas[1],
        kind,
        using,
        str(cond._expr) if cond is not None else None,
        strategy,
        conf,
        (sizes[0], sizes[1]),
    )
    plan = spec.plan()
    joined = plan.output_schema()
    out_schema = (
        _using_columns(joined.empty_table(), len(schemas[0]), using, kind, schemas[0], schemas[1]).schema
        if using
        else joined
    )
    _LAST_PLAN[0] = plan.explain()
    # Spark's result may repeat a name (a column on both sides): rows cross into Spark under
    # positional names, and get their own names back there.
    named = out_schema
    out_schema = pa.schema([f.with_name(f"_c{i}") for i, f in enumerate(out_schema)])
    if plan.strategy() in ("broadcast_hash", "broadcast_nested_loop") and plan.shares_build():
        build_left = plan.build_side() == "left"
        b = 0 if build_left else 1
        table = _collect_side(spark, (left, right)[b], sources[b])
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        build = spark.sparkContext.broadcast(sink.getvalue().to_pybytes())
        sc = spark.sparkContext
        counters = (sc.accumulator(0), sc.accumulator(0), sc.accumulator(set(), _DistinctSet()))
        _LAST_BUILDS[0] = counters
        p = 1 - b
        probe_df, probe_src = (left, right)[p], sources[p]
        task = _broadcast_join_task(spec, build, probe_src, out_schema, counters)
        frame = probe_src.splits_frame(spark) if probe_src is not None else probe_df
        return _joined(frame, task, named, out_schema)
    _LAST_BUILDS[0] = None
    partitions = _shuffle_partitions(spark) if plan.num_keys() else 1
    route = _routing(partitions)
    sides = []
    for i, (df, src) in enumerate(zip((left, right), sources, strict=True)):
        frame = src.splits_frame(spark) if src is not None else df
        sides.append(
            frame.mapInArrow(_side_blocks_task(spec, i == 0, src, route), spark_schema(_SIDE_BLOCKS_SCHEMA))
        )
    both = sides[0].union(sides[1])
    both = both.repartition(F.col("_pid")) if partitions > 1 else both.repartition(1)
    return _joined(both, _partition_join_task(spec, out_schema), named, out_schema)


def _joined(frame: DataFrame, task, named: pa.Schema, positional: pa.Schema) -> DataFrame:
    """The join's result DataFrame, under the join's column names."""
    return frame.mapInArrow(task, spark_schema(positional)).toDF(*named.names)


_LAST_PLAN: list[str] = [""]
_LAST_BUILDS: list[Any] = [None]


def last_spark_join_plan() -> str:
    """The operator, build side and keys :func:`join` chose last (on this driver)."""
    return _LAST_PLAN[0]


def last_spark_join_builds() -> int | None:
    """How many times the last broadcast :func:`join` built its broadcast side (once per
    Python worker that ran a task of it), once the job has run; ``None`` after a shuffled one."""
    counters = _LAST_BUILDS[0]
    return None if counters is None else int(counters[0].value)


def last_spark_join_workers() -> int | None:
    """How many distinct Python workers ran probe tasks of the last broadcast :func:`join`:
    each builds the broadcast side once, so this equals :func:`last_spark_join_builds`;
    ``None`` after a shuffled one."""
    counters = _LAST_BUILDS[0]
    return None if counters is None else len(counters[2].value)


def last_spark_join_probes() -> int | None:
    """How many probe tasks the last broadcast :func:`join` ran (over every job that used its
    result); ``None`` after a shuffled one."""
    counters = _LAST_BUILDS[0]
    return None if counters is None else int(counters[1].value)


__all__ = [
    "aggregate",
    "join",
    "last_spark_join_builds",
    "last_spark_join_probes",
    "last_spark_join_workers",
    "last_spark_join_plan",
    "read_parquet",
    "spark_schema",
]


_ORDER_SUFFIX = re.compile(r"^(.*) (ASC|DESC) NULLS (FIRST|LAST)$", re.DOTALL)


def _routed_blocks(blocks: list[tuple[int, bytes]], route: list[int]) -> Iterator[pa.RecordBatch]:
    """`(partition, bytes)` blocks as batches for Spark, each tagged with its partition's
    routing value."""
    for at in range(0, len(blocks), _BLOCKS_PER_BATCH):
        chunk = blocks[at : at + _BLOCKS_PER_BATCH]
        yield _blocks_batch([route[p] for p, _ in chunk], [b for _, b in chunk])


def _blocks_batch(pids: list[int], blobs: list[bytes]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(pids, pa.int32()), pa.array(blobs, pa.binary())], schema=_BLOCKS_SCHEMA
    )


def _partitioned_blocks(
    partitioner, batches: Iterator[pa.RecordBatch], route: list[int]
) -> Iterator[tuple[list[int], list[bytes]]]:
    """A native partitioner's IPC blocks for `batches`, each tagged with its partition's
    routing value, handed on in chunks of `_BLOCKS_PER_BATCH` as they fill (a task never
    holds all of its blocks)."""
    pids: list[int] = []
    blobs: list[bytes] = []

    def take(blocks: list[tuple[int, bytes]]) -> None:
        for p, blob in blocks:
            pids.append(route[p])
            blobs.append(blob)

    for b in batches:
        if b.num_rows:
            take(partitioner.push(b))
        if len(blobs) >= _BLOCKS_PER_BATCH:
            yield pids, blobs
            pids, blobs = [], []
    take(partitioner.finish())
    for at in range(0, len(blobs), _BLOCKS_PER_BATCH):
        yield pids[at : at + _BLOCKS_PER_BATCH], blobs[at : at + _BLOCKS_PER_BATCH]


def window(df: DataFrame, exprs: Any) -> DataFrame:
    """``df.select("*", *exprs)`` for window expressions (``fs.row_number().over(w)``, ...),
    planned by ferrospark and run as Spark stages.

    A thin layer over ``fs.Session(spark=...)``: an exchange on each specification's partition
    keys (one partition without keys), then the window operator per partition in the next
    stage; rows cross the exchanges as Arrow IPC blocks. When ``df`` is what
    :func:`read_parquet` (or another fss function) returned, the plan continues from it, so the
    first tasks read the files themselves. Input columns, then the window columns in the order
    they were asked for, named as Spark names them.
    """
    from .window import WindowColumn, WindowFunction

    items = [exprs] if isinstance(exprs, WindowColumn) else list(exprs)
    for item in items:
        if isinstance(item, WindowFunction) or not isinstance(item, WindowColumn):
            from .errors import AnalysisError

            raise AnalysisError(f"{item!r} is not a window expression: call .over(window_spec) on it")
        item._check()
    return _published(_plan_of(df).select("*", *items))


def _read_blocks(batches: Iterator[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """The rows of the Arrow IPC blocks Spark's shuffle delivered to this task."""
    out: list[pa.RecordBatch] = []
    for batch in batches:
        for blob in batch.column("_blob").to_pylist():
            with pa.ipc.open_stream(blob) as reader:
                out.extend(b for b in reader if b.num_rows)
    return out


class _SessionSpec:
    """What every task of one session-window job needs, as plain text (native expressions do
    not travel): the span schema, where spans come from, the keys and the aggregates."""

    def __init__(
        self,
        spans_schema: pa.Schema,
        time: str,
        gap: str | None,
        end_column: str | None,
        keys: list[str],
        specs: list[tuple],
        conf: dict[str, str],
    ) -> None:
        self.spans_schema = spans_schema
        self.time, self.gap, self.end_column = time, gap, end_column
        self.keys, self.specs, self.conf = keys, specs, conf

    def plan(self):
        """The aggregation grouped by (keys, session start, session end)."""
        from . import session_windows as sw

        keys = [*self.keys, f"`{sw.START}`", f"`{sw.END}`"]
        return _native_plan(self.spans_schema, keys, self.specs, self.conf)

    def sessions(self, batches: list[pa.RecordBatch]) -> pa.Table:
        """Rows to spans, merged into the sessions these rows alone make."""
        from . import session_windows as sw

        tz = self.conf["spark.sql.session.timeZone"]
        spans = sw.spans(pa.Table.from_batches(batches), self.time, self.gap, tz, self.end_column)
        return sw.merge(spans, self.keys, self.conf)


def _session_partial_task(spec: _SessionSpec, route: list[int], source: _ParquetSource | None):
    """Each input partition (read natively when `source` is a native scan): rows to spans,
    spans merged into this partition's sessions, partial aggregates per (keys, session),
    written as IPC blocks hash-partitioned on the keys."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = [b for b in _batches_of(source, batches) if b.num_rows]
        if not batches:
            return
        runner = spec.plan().runner([0])
        for b in spec.sessions(batches).to_batches():
            runner.push(b)
        yield from _routed_blocks(runner.finish_blocks(len(route), len(spec.keys)), route)

    return run


def _session_final_task(spec: _SessionSpec, out_schema: pa.Schema):
    """Each shuffled partition: every partial session of its keys, merged again across the
    input partitions they came from, then the final aggregates per (keys, session)."""
    from . import session_windows as sw

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        states = _read_blocks(batches)
        if not states:
            return
        table = pa.Table.from_batches(states)
        names = table.column_names[: len(spec.keys)]
        table = sw.merge(table, [f"`{n}`" for n in names], spec.conf)
        runner = spec.plan().runner([1])
        for b in table.to_batches():
            runner.push(b)
        for out in runner.finish():
            yield pa.RecordBatch.from_arrays(out.columns, schema=out_schema)

    return run


def _session_complete_task(spec: _SessionSpec, out_schema: pa.Schema):
    """Each partition holding all rows of its keys: spans, sessions, and complete aggregates
    (the path for distinct aggregates, whose partial states do not merge across sessions)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = [b for b in batches if b.num_rows]
        if not batches:
            return
        table = spec.sessions(batches)
        result, _metrics = spec.plan().run(
            pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        )
        for out in result.to_batches():
            yield pa.RecordBatch.from_arrays(out.columns, schema=out_schema)

    return run


def session_window(df: DataFrame, time: Any, gap: Any, by: Any = (), aggs: Any = ()) -> DataFrame:
    """``df.groupBy(session_window(time, gap), *by).agg(*aggs)`` with ferrospark's operators
    inside Spark tasks, in Spark's plan shape: each input partition merges its rows into
    sessions and aggregates them partially; Spark's shuffle gathers each key's partial sessions
    (as Arrow IPC blocks); each shuffled partition merges them into the final sessions and
    finishes the aggregates. ``gap`` is a literal (``"10 minutes"``) or a column (a PySpark
    ``Column`` or ``fs.col``) of intervals: Spark computes each row's end itself.

    Output columns as Spark's: ``session_window`` (``struct<start, end>``), the keys, the
    aggregates.
    """
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import functions as F

    from . import session_windows as sw

    spark = df.sparkSession
    conf = _spark_conf(spark)
    keys, specs = _grouping_text(by, aggs)
    end_column: str | None = None
    literal: str | None = None
    if not isinstance(time, str):
        # A time expression: Spark evaluates it into a column the tasks read.
        expr = F.expr(str(time._expr)) if isinstance(time, Column) else time
        time_name = f"__session_time_{uuid.uuid4().hex[:8]}"
        df = df.withColumn(time_name, expr)
        time = time_name
    if isinstance(gap, str):
        sw.interval_micros(gap)  # a bad literal fails here, on the driver
        literal = gap
    else:
        gap_col = F.expr(str(gap._expr)) if isinstance(gap, Column) else gap
        if not isinstance(gap_col, SparkColumn):
            raise TypeError(f"a session window's gap must be a string or a column, got {gap!r}")
        # Spark's own span end per row (its interval casts and calendar arithmetic).
        end_column = f"__gap_end_{uuid.uuid4().hex[:8]}"
        df = df.withColumn(end_column, F.session_window(F.col(time), gap_col)["end"])
    # A literal gap over a native scan: the first tasks read the files themselves.
    source = _source_of(df) if end_column is None else None
    schema = source.schema if source is not None else arrow_schema(df)
    tz = conf["spark.sql.session.timeZone"]
    spans_schema = sw.spans(schema.empty_table(), time, literal, tz, end_column).schema
    spec = _SessionSpec(spans_schema, time, literal, end_column, keys, specs, conf)
    plan = spec.plan()
    out = plan.output_schema()
    positional = pa.schema([f.with_name(f"_c{j}") for j, f in enumerate(out)])
    if plan.num_stages() == 2:
        route = _routing(_shuffle_partitions(spark) if keys else 1)
        partial = _session_partial_task(spec, route, source)
        frame = source.splits_frame(spark) if source is not None else df
        blocks = frame.mapInArrow(partial, spark_schema(_BLOCKS_SCHEMA))
        shuffled = blocks.repartition(F.col("_pid")) if keys else blocks.repartition(1)
        final = _session_final_task(spec, positional)
        result = shuffled.mapInArrow(final, spark_schema(positional))
    else:
        rows = df.repartition(*[F.expr(k) for k in keys]) if keys else df.repartition(1)
        task = _session_complete_task(spec, positional)
        result = rows.mapInArrow(task, spark_schema(positional))
    result = result.toDF(*out.names)
    n = len(keys)
    window_struct = F.struct(F.col(f"`{sw.START}`").alias("start"), F.col(f"`{sw.END}`").alias("end"))
    rest = [F.col(f"`{c}`") for i, c in enumerate(out.names) if i < n or i >= n + 2]
    return result.select(window_struct.alias("session_window"), *rest)
