"""Whole queries on Spark: a DataFrame's plan cut into stages, each a ``mapInArrow`` that runs
the stage's plan fragment natively in every task, Spark's shuffle between them.

``Session(spark=spark)`` routes every action here. The plan is cut in Rust
(``ferrospark_plan::distributed``) where Spark's own physical plan puts an ``Exchange``; this
module turns each stage into Spark DataFrames:

- a stage over files runs one task per split (``spark.range`` of the split count: no rows
  cross into the JVM but the task number); the task's scans read their splits themselves;
- a stage after a shuffle reads the union of the blocks its inputs wrote, repartitioned on
  ``_pid`` (each block tagged with an int that Spark's hash partitioning sends to the
  partition the block belongs to);
- a broadcast stage runs first as its own job; its rows (Arrow IPC) go out as a Spark
  broadcast variable, decoded once per Python worker;
- a stage reading a PySpark DataFrame runs ``mapInArrow`` over that DataFrame.

Nothing crosses into the JVM but compact IPC blocks, and the result's rows when the caller
asks for a PySpark DataFrame (``to_spark``).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _native

if TYPE_CHECKING:
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql import SparkSession

    from .dataframe import DataFrame
    from .session import Session

#: What crosses Spark's shuffle: Arrow IPC blocks, each with the int routing it to its
#: partition and the tag of the input of the consuming stage it belongs to.
BLOCKS_SCHEMA = pa.schema(
    [
        pa.field("_pid", pa.int32(), False),
        pa.field("_tag", pa.int8(), False),
        pa.field("_blob", pa.binary(), False),
    ]
)

#: Spark settings a plan on Spark honours (the Spark session's values win): those deciding
#: the plan, and ``ferrospark.*`` keys, so a Spark job can bound ferrospark's memory with
#: ``spark.conf.set("ferrospark.memory.limit", ...)``.
_FROM_SPARK = (
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.shuffle.partitions",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.ansi.enabled",
    "spark.sql.session.timeZone",
    "spark.sql.join.preferSortMergeJoin",
    "spark.sql.parquet.filterPushdown",
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
    "ferrospark.memory.limit",
    "ferrospark.spill.dir",
    "ferrospark.batch.size",
)

#: Decoded broadcast rows of this Python worker, by broadcast key; only the newest few kept.
_BROADCAST_ROWS: dict[str, Any] = {}
_BROADCAST_KEEP = 8
#: Stages parsed in this Python worker, by token.
_STAGES: dict[str, Any] = {}
_STAGES_KEEP = 16
#: Stages of this worker whose built broadcast sides are kept (the newest): a stage's tasks
#: probe the sides its first task here built; older stages' are freed.
_BUILDS_KEEP = 2
#: The IPC rows of a result stage are cut into streams of about this many rows.
_ROWS_PER_BLOB = 65536


def _spark_settings(spark: SparkSession) -> dict[str, str]:
    out = {}
    for key in _FROM_SPARK:
        value = spark.conf.get(key, None)
        if value:
            # Spark prints byte sizes with a unit suffix ferrospark reads ("10485760b").
            out[key] = str(value)
    return out


def _parallelism(spark: SparkSession) -> int:
    try:
        return max(int(spark.sparkContext.defaultParallelism), 1)
    except Exception:  # noqa: BLE001 - a remote session without a SparkContext
        return 2


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark ``StructType`` of an Arrow schema already converted to Spark's Arrow types."""
    from pyspark.sql.pandas.types import from_arrow_schema

    try:
        return from_arrow_schema(schema, prefer_timestamp_ntz=True)
    except TypeError:  # older signature without the keyword
        return from_arrow_schema(schema)


def arrow_schema(df: SparkDataFrame) -> pa.Schema:
    """The Arrow schema of the batches ``mapInArrow`` hands a task of ``df`` (timestamps in
    the session time zone, as Spark converts them)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    tz = df.sparkSession.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
    return to_arrow_schema(df.schema, timezone=tz)


def _spark_estimate(df: SparkDataFrame) -> int:
    """Spark's own size estimate of ``df`` (``sizeInBytes`` of its optimized plan), which
    Spark's join selection weighs it by."""
    try:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # noqa: BLE001 - an estimate Spark cannot give means "too big to broadcast"
        return 2**63 - 1


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


def _task_conf(session: Session, spark: SparkSession) -> dict[str, str]:
    """The configuration each task runs under: the session's, Spark's settings over it, and
    one scan thread per task core unless the session says otherwise."""
    conf = dict(session.conf)
    conf.update(_spark_settings(spark))
    if "ferrospark.scan.threads" not in session.conf:
        conf["ferrospark.scan.threads"] = str(spark.conf.get("spark.task.cpus", "1") or "1")
    return conf


def _stage_of(token: str, stage_json: str, conf: dict[str, str]) -> Any:
    from ferrospark import spark_stages as own

    task = own._STAGES.get(token)
    if task is None:
        task = _native.StageTask(stage_json, conf)
        while len(own._STAGES) >= _STAGES_KEEP:
            own._STAGES.pop(next(iter(own._STAGES)))
        older = list(own._STAGES.values())
        for old in older[: max(len(older) - (_BUILDS_KEEP - 1), 0)]:
            old.release_builds()
        own._STAGES[token] = task
    return task


def _broadcast_rows(key: str, handle: Any) -> Any:
    from ferrospark import spark_stages as own

    rows = own._BROADCAST_ROWS.get(key)
    if rows is None:
        rows = _native.BroadcastRows(list(handle.value))
        while len(own._BROADCAST_ROWS) >= _BROADCAST_KEEP:
            own._BROADCAST_ROWS.pop(next(iter(own._BROADCAST_ROWS)))
        own._BROADCAST_ROWS[key] = rows
    return rows


def _ipc_blobs(table: pa.Table) -> Iterator[bytes]:
    for start in range(0, table.num_rows, _ROWS_PER_BLOB):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table.slice(start, _ROWS_PER_BLOB))
        yield sink.getvalue().to_pybytes()


def _stage_task(
    token: str,
    stage_json: str,
    conf: dict[str, str],
    info: dict[str, Any],
    broadcasts: dict[int, Any],
    out_schema: pa.Schema | None,
    spark_out: pa.Schema | None,
    to_driver: bool,
    reports: Any = None,
    sizes: Any = None,
    builds: Any = None,
):
    """The function every task of a stage runs in ``mapInArrow``. Its output goes to the
    driver (``to_driver``: rows or blocks tagged with the stage's id) or through Spark's
    shuffle (blocks tagged with the int routing them to their partition). ``builds``
    (accumulators: sides built, tasks probing, Python workers probing) count the broadcast
    sides built once per worker."""
    layout, sink = info["layout"], info["sink"]
    route = _routing(info["partitions"]) if sink == "exchange" and not to_driver else []
    tag, stage_id = info["tag"], info["id"]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        task_no = ctx.partitionId() if ctx is not None else 0
        blocks: list[tuple[int, bytes]] = []
        rows: list[pa.RecordBatch] = []
        for b in batches:
            if layout == "splits":
                ids = b.column(0).to_pylist()
                if ids:
                    task_no = int(ids[0])
            elif layout == "spark":
                rows.append(b)
            elif b.schema.get_field_index("_tag") >= 0:
                # (A stage with no input from other stages runs over one placeholder row.)
                blocks.extend(zip(b.column("_tag").to_pylist(), b.column("_blob").to_pylist()))
        task = _stage_of(token, stage_json, conf)
        handles = {sid: _broadcast_rows(key, h) for sid, (key, h) in broadcasts.items()}
        started = time.perf_counter()
        built_before = task.build_counts()[0]
        kind, out, plan = task.run(task_no, blocks, rows, handles, out_schema)
        del blocks, rows
        if builds is not None and handles:
            import socket

            built, probes, workers = builds
            built.add(task.build_counts()[0] - built_before)
            probes.add(1)
            workers.add({(socket.gethostname(), os.getpid())})
        if reports is not None:
            took = (time.perf_counter() - started) * 1000
            reports.add([(stage_id, task_no, f"native run {took:.1f} ms\n{plan}")])
        if kind == "blocks":
            if sizes is not None:
                sizes.add(sum(len(blob) for _, blob in out))
            pids = [stage_id] * len(out) if to_driver else [route[p] for p, _ in out]
            # One batch per block: a task killed between two leaves Spark part of its output.
            for pid, (_, blob) in zip(pids, out):
                yield pa.RecordBatch.from_arrays(
                    [pa.array([pid], pa.int32()), pa.array([tag], pa.int8()), pa.array([blob], pa.binary())],
                    schema=BLOCKS_SCHEMA,
                )
                _maybe_die()
            return
        table: pa.Table = out
        if spark_out is not None:
            table = table.rename_columns(spark_out.names).cast(spark_out)
            yield from table.to_batches()
            return
        blobs = list(_ipc_blobs(table))
        if blobs:
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([stage_id] * len(blobs), pa.int32()),
                    pa.array([0] * len(blobs), pa.int8()),
                    pa.array(blobs, pa.binary()),
                ],
                schema=BLOCKS_SCHEMA,
            )

    return run


def _as_spark_schema(schema: pa.Schema, tz: str) -> tuple[Any, pa.Schema]:
    """The Spark schema of a result and the Arrow schema ``mapInArrow`` must yield for it
    (timestamps in the session time zone, as Spark converts them)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    st = spark_schema(schema)
    try:
        arrow = to_arrow_schema(st, timezone=tz, prefers_large_types=False)
    except TypeError:
        arrow = to_arrow_schema(st, timezone=tz)
    return st, arrow


class _ListParam:
    """An accumulator parameter: the concatenation of the lists the tasks add."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, a: list, b: list) -> list:  # noqa: N802 - PySpark's name
        a.extend(b)
        return a


class _SetParam:
    """An accumulator parameter: the union of the sets the tasks add."""

    def zero(self, value: set) -> set:
        return set()

    def addInPlace(self, a: set, b: set) -> set:  # noqa: N802 - PySpark's name
        a |= b
        return a


class _DictParam:
    """An accumulator parameter: the tasks' dicts merged (a key added again keeps its last
    value, so a task run twice counts once)."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 - PySpark's name
        a.update(b)
        return a


def _arrow_of(frame: SparkDataFrame) -> pa.Table:
    table = frame.toArrow() if hasattr(frame, "toArrow") else frame._collect_as_arrow()  # type: ignore[attr-defined]
    if isinstance(table, list):
        table = pa.Table.from_batches(table, schema=BLOCKS_SCHEMA)
    return table


def _collect_all(frame: SparkDataFrame) -> list[tuple[int, bytes]]:
    """Every ``(tag, blob)`` of a stage's output, on the driver."""
    table = _arrow_of(frame)
    return list(zip(table.column("_tag").to_pylist(), table.column("_blob").to_pylist()))


def _collect(frames: list[SparkDataFrame]) -> dict[int, list[tuple[int, bytes]]]:
    """One Spark job over the union of ``frames`` (each stage's output tagged with its id):
    the ``(tag, blob)`` pairs of each stage."""
    frame = frames[0]
    for f in frames[1:]:
        frame = frame.union(f)
    table = _arrow_of(frame)
    out: dict[int, list[tuple[int, bytes]]] = {}
    for sid, tag, blob in zip(*(table.column(c).to_pylist() for c in ("_pid", "_tag", "_blob"))):
        out.setdefault(sid, []).append((tag, blob))
    return out


#: Fault injection for the retry tests: when this environment variable names a file that
#: does not exist yet, the first task to see it creates it and kills its Python worker after
#: handing Spark part of its output, so that Spark must retry the task.
_KILL_ONCE = "FERROSPARK_TEST_KILL_TASK_ONCE"


def _maybe_die() -> None:
    marker = os.environ.get(_KILL_ONCE)
    if not marker:
        return
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(17)


class _Replan(Exception):
    """A join's side proved small enough to broadcast: the plan is cut again."""


#: A stage over files at most this many compressed bytes runs on the driver when its rows
#: are wanted there (a broadcast, the result): Spark's job and task costs exceed its work.
_DRIVER_SCAN_BYTES = 64 << 20


class SparkRun:
    """One action of a DataFrame of a session on Spark: its stages as Spark jobs.

    Stages whose output the driver needs anyway run on the driver when that saves Spark a job
    or a stage: the result stage when it is one task, broadcast stages of one task or over a
    few MB of files. Every other stage is a ``mapInArrow`` in Spark. Outputs the driver needs
    from Spark (broadcast rows, the blocks a driver stage reads) are collected in as few jobs
    as the dependencies allow, and identical stages (a subquery repeating a join) run once.
    """

    def __init__(self, df: DataFrame) -> None:
        session = df._session
        spark = session._spark
        if spark is None:
            raise ValueError("this DataFrame's session does not run on Spark: use fs.Session(spark=spark)")
        self.session = session
        self.spark = spark
        self.df = df
        # Joins whose side's real size is known: broadcast (True) or shuffled (False).
        self.decided: dict[int, bool] = {}
        self.stages = self._cut()
        self._joins: tuple[Any, list[tuple[str, str]]] | None = None
        # Rows of stages by their work (see _keys), kept when the plan is cut again: the
        # measured side of a join, broadcast in the new plan; broadcasts already collected.
        self.cache: dict[str, list[tuple[int, bytes]]] = {}
        # Spark outputs measured and kept (persisted), by their whole content.
        self.kept_frames: dict[str, Any] = {}
        self.replans = 0
        self.conf = _task_conf(session, spark)
        self.driver_conf = dict(session.conf) | _spark_settings(spark)
        self.jobs = 0
        self.driver_stages: list[int] = []
        # (stage, task, plan with metrics) of every task that succeeded, driver stages too.
        self.reports = spark.sparkContext.accumulator([], _ListParam())
        self._driver_reports: list[tuple[int, int, str]] = []
        # Broadcast sides built in Spark's tasks, tasks probing them, Python workers probing.
        sc = spark.sparkContext
        self.builds = (sc.accumulator(0), sc.accumulator(0), sc.accumulator(set(), _SetParam()))

    def _cut(self) -> Any:
        return self.df._plan.spark_stages(_parallelism(self.spark), _spark_settings(self.spark), self.decided)

    def _broadcast_limit(self) -> int:
        conf = self.spark.conf
        text = conf.get("spark.sql.adaptive.autoBroadcastJoinThreshold", None) or conf.get(
            "spark.sql.autoBroadcastJoinThreshold", "10MB"
        )
        text = str(text).strip()
        if text.startswith("-"):
            return -1  # broadcasts off
        return int(_native.parse_byte_size(text))

    def explain(self) -> str:
        return self.stages.explain()

    def run(self, to_spark: bool = False) -> SparkDataFrame | pa.Table:
        """Runs what must run before the result (broadcasts, driver stages); returns the
        result: a Spark DataFrame (``to_spark``) or a ``pyarrow.Table``. A side tried as a
        broadcast that proves large has its join shuffled and the plan cut again."""
        while True:
            try:
                out = self._run_once(to_spark)
                if os.environ.get("FERROSPARK_TRACE_SPARK"):
                    print(
                        f"[ferrospark on Spark] {self.stages.num_stages()} stages, {self.jobs} driver jobs, "
                        f"driver stages {self.driver_stages}, join sides measured {self.decided}",
                        file=sys.stderr,
                    )
                return out
            except _Replan:
                self.replans += 1
                self.stages = self._cut()

    def _keys(self) -> tuple[list[str], list[str]]:
        """Per stage: a key of its whole content (equal for stages doing the same work over
        the same inputs, with the same output), and a key of its work alone (the rows it
        produces, whatever its sink: a measured exchange and the broadcast standing for it
        in the plan cut again)."""
        import hashlib
        import json

        content: list[str] = []
        work: list[str] = []
        for i in range(self.stages.num_stages()):
            doc = json.loads(self.stages.stage_json(i))
            doc.pop("id", None)
            doc.pop("adaptive_join", None)
            sink = doc.pop("sink", None)
            text = json.dumps(doc, sort_keys=True)
            for inp in doc.get("inputs", []):
                text = text.replace(f"broadcast_{inp['from']}", f"broadcast_{content[inp['from']]}")
            text += "|" + ",".join(content[inp["from"]] for inp in doc.get("inputs", []))
            work.append(hashlib.sha1(text.encode()).hexdigest())
            content.append(hashlib.sha1((text + json.dumps(sink, sort_keys=True)).encode()).hexdigest())
        return content, work

    def _run_once(self, to_spark: bool) -> SparkDataFrame | pa.Table:
        sc = self.spark.sparkContext
        limit = self._broadcast_limit()
        n = self.stages.num_stages()
        infos = []
        for i in range(n):
            info = dict(self.stages.stage_info(i))
            info["id"] = i
            infos.append(info)
        last = n - 1
        keys, work = self._keys()
        first_of: dict[str, int] = {}
        same_as: dict[int, int] = {}
        for i, k in enumerate(keys):
            if k in first_of and infos[i]["sink"] != "result":
                same_as[i] = first_of[k]
            else:
                first_of.setdefault(k, i)
        schema = self.df.schema
        tz = self.spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
        # Rows cross into Spark under positional names (a result may repeat a name, as a join's
        # columns of both sides do, and Spark matches mapInArrow's columns by name); the
        # DataFrame gets the result's names back in Spark.
        positional = pa.schema([f.with_name(f"_c{i}") for i, f in enumerate(schema)])
        spark_types = _as_spark_schema(positional, tz) if to_spark else None

        def on_driver(i: int) -> bool:
            info = infos[i]
            if info["sink"] == "result":
                return not to_spark and info["layout"] == "partitions" and info["tasks"] == 1
            if info["sink"] != "broadcast":
                return False
            if info["layout"] == "partitions":
                return info["tasks"] == 1
            return info["layout"] == "splits" and info["scan_bytes"] <= _DRIVER_SCAN_BYTES

        driver = {i for i in range(n) if i not in same_as and on_driver(i)}
        consumers: dict[int, set[int]] = {}
        for i, info in enumerate(infos):
            for sid, _ in info["inputs"]:
                consumers.setdefault(same_as.get(sid, sid), set()).add(i)

        frames: dict[int, SparkDataFrame] = {}  # Spark outputs (blocks), built lazily
        pending: dict[int, SparkDataFrame] = {}  # outputs wanted on the driver, not collected yet
        held: dict[int, list[tuple[int, bytes]]] = {}  # outputs on the driver: (tag, blob)
        rows: dict[int, Any] = {}  # broadcast rows decoded on the driver
        handles: dict[int, Any] = {}  # broadcast variables

        def keep(sid: int, blobs: list[tuple[int, bytes]]) -> None:
            held[sid] = blobs
            if infos[sid]["sink"] == "broadcast":
                self.cache[work[sid]] = blobs

        def flush() -> None:
            if pending:
                got = _collect(list(pending.values()))
                self.jobs += 1
                for sid in pending:
                    keep(sid, got.get(sid, []))
                pending.clear()

        def blobs_of(sid: int) -> list[tuple[int, bytes]]:
            sid = same_as.get(sid, sid)
            if sid not in held:
                flush()
            return held[sid]

        def broadcast_rows(sid: int) -> Any:
            sid = same_as.get(sid, sid)
            if sid not in rows:
                rows[sid] = _native.BroadcastRows([b for _, b in blobs_of(sid)])
            return rows[sid]

        def handle(sid: int) -> Any:
            sid = same_as.get(sid, sid)
            if sid not in handles:
                handles[sid] = (uuid.uuid4().hex, sc.broadcast([b for _, b in blobs_of(sid)]))
            return handles[sid]

        for i in range(n):
            if i in same_as:
                continue
            info = infos[i]
            if info["sink"] == "broadcast" and work[i] in self.cache:
                held[i] = self.cache[work[i]]
                continue
            if info["sink"] == "exchange" and keys[i] in self.kept_frames:
                frames[i] = self.kept_frames[keys[i]]
                continue
            stage_json = self.stages.stage_json(i)
            if i in driver:
                blocks: list[tuple[int, bytes]] = []
                for sid, is_broadcast in info["inputs"]:
                    if not is_broadcast:
                        blocks.extend(blobs_of(sid))
                bc = {sid: broadcast_rows(sid) for sid, b in info["inputs"] if b}
                task = _native.StageTask(stage_json, self.driver_conf)
                kind, out, plan = task.run(None, blocks, [], bc, schema if i == last else None)
                self.driver_stages.append(i)
                self._driver_reports.append((i, -1, plan))
                if i == last:
                    return out.rename_columns(schema.names).cast(schema)
                keep(i, [(0, b) for b in _ipc_blobs(out)])
                continue
            bc = {sid: handle(sid) for sid, b in info["inputs"] if b}
            is_result = i == last
            users = consumers.get(i, set())
            wanted_here = is_result or info["sink"] == "broadcast" or any(c in driver for c in users)
            wanted_there = info["sink"] == "exchange" and any(c not in driver for c in users)
            source = self._input_frame(info, frames, same_as)
            out_types = spark_types[1] if (is_result and spark_types) else None

            def stage_frame(
                to_driver: bool,
                sizes: Any = None,
                info: dict[str, Any] = info,
                stage_json: str = stage_json,
                bc: dict[int, Any] = bc,
                source: SparkDataFrame = source,
                is_result: bool = is_result,
                out_types: pa.Schema | None = out_types,
            ) -> Any:
                task = _stage_task(
                    uuid.uuid4().hex,
                    stage_json,
                    self.conf,
                    info,
                    bc,
                    schema if is_result else None,
                    out_types,
                    to_driver,
                    self.reports,
                    sizes,
                    self.builds,
                )
                if out_types is not None and spark_types is not None:
                    return source.mapInArrow(task, spark_types[0]).toDF(*schema.names)
                return source.mapInArrow(task, _spark_struct(BLOCKS_SCHEMA))

            if is_result and spark_types is not None:
                return stage_frame(False)
            join = info["adaptive_join"]
            if join is not None and wanted_there and not wanted_here:
                # A join's side that may prove small: run its exchange now and measure it.
                sizes = sc.accumulator(0)
                measured = stage_frame(False, sizes).persist()
                measured.count()
                self.jobs += 1
                if sizes.value <= limit:
                    self.cache[work[i]] = _collect_all(measured)
                    measured.unpersist()
                    self.decided[join] = True
                    raise _Replan()
                self.decided[join] = False
                self.kept_frames[keys[i]] = measured
                frames[i] = measured
                continue
            if wanted_there:
                frames[i] = stage_frame(False)
            if wanted_here:
                pending[i] = stage_frame(True)
            if is_result:
                flush()
                tables = [pa.ipc.open_stream(b).read_all() for _, b in held[i]]
                tables = [t.rename_columns(schema.names).cast(schema) for t in tables if t.num_rows]
                return pa.concat_tables(tables) if tables else schema.empty_table()
        raise RuntimeError("a stage plan without a result stage")

    def _input_frame(
        self, info: dict[str, Any], frames: dict[int, SparkDataFrame], same_as: dict[int, int]
    ) -> SparkDataFrame:
        spark = self.spark
        if info["layout"] == "splits":
            n = info["tasks"]
            return spark.range(0, n, 1, n)
        if info["layout"] == "spark":
            return self.session._spark_inputs[info["external"]]
        shuffled = [frames[same_as.get(sid, sid)] for sid, is_broadcast in info["inputs"] if not is_broadcast]
        if not shuffled:
            return spark.range(0, 1, 1, 1)
        frame = shuffled[0]
        for other in shuffled[1:]:
            frame = frame.union(other)
        return frame.repartition(info["tasks"], "_pid")

    def joins(self) -> list[tuple[str, str]]:
        """Each join the tasks run: its strategy, then the operator with its keys, type and
        build side (each stage's fragment planned once per stage plan)."""
        if self._joins is None or self._joins[0] is not self.stages:
            self._joins = (self.stages, self.stages.joins())
        return self._joins[1]

    def broadcast_builds(self) -> tuple[int, int, int]:
        """Over the Spark jobs run so far: broadcast sides built in tasks (once per Python
        worker and stage), tasks probing broadcast sides, and Python workers that did."""
        built, probes, workers = self.builds
        return int(built.value), int(probes.value), len(workers.value)

    def task_reports(self) -> list[tuple[int, int, str]]:
        """``(stage, task, plan)`` of each task run so far (task -1: run on the driver), the
        plan with each operator's metrics (spills among them)."""
        return sorted(self._driver_reports + list(self.reports.value))

    def executed_plan(self) -> str:
        """The stage plan, then each stage's tasks with their operators' metrics."""
        out = [self.explain()]
        for stage, task, plan in self.task_reports():
            where = "on the driver" if task < 0 else f"task {task}"
            out.append(f"-- stage {stage}, {where}\n{plan}")
        return "\n".join(out)

    def frame(self) -> SparkDataFrame:
        """The result as a PySpark DataFrame (what must run first runs now)."""
        out = self.run(to_spark=True)
        assert not isinstance(out, pa.Table)
        return out

    def collect(self) -> pa.Table:
        """Runs the query on Spark: the result as a ``pyarrow.Table``."""
        out = self.run()
        assert isinstance(out, pa.Table)
        return out


def _spark_struct(schema: pa.Schema) -> Any:
    return spark_schema(schema)


def spark_input(session: Session, frame: SparkDataFrame) -> Any:
    """A plan leaf over the rows of a PySpark DataFrame, for a session on Spark."""
    name = f"spark_input_{uuid.uuid4().hex[:8]}"
    session._spark_inputs[name] = frame
    return session._query_engine.from_spark(arrow_schema(frame), _spark_estimate(frame), name)
