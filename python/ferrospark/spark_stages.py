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
#: What a result or broadcast stage hands the driver: its rows as Arrow IPC streams.
ROWS_SCHEMA = pa.schema([pa.field("_blob", pa.binary(), False)])

#: Spark settings that decide a plan on Spark (the Spark session's values win).
_FROM_SPARK = (
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.shuffle.partitions",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.ansi.enabled",
    "spark.sql.session.timeZone",
)

#: Decoded broadcast rows of this Python worker, by broadcast key; only the newest few kept.
_BROADCAST_ROWS: dict[str, Any] = {}
_BROADCAST_KEEP = 8
#: Stages parsed in this Python worker, by token.
_STAGES: dict[str, Any] = {}
_STAGES_KEEP = 16
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


def _routing(n: int) -> list[int]:
    from .spark import _routing as routing

    return routing(n)


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
    for start in range(0, max(table.num_rows, 1), _ROWS_PER_BLOB):
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
):
    """The function every task of a stage runs in ``mapInArrow``."""
    layout, sink = info["layout"], info["sink"]
    route = _routing(info["partitions"]) if sink == "exchange" else []
    tag = info["tag"]

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
            else:
                blocks.extend(zip(b.column("_tag").to_pylist(), b.column("_blob").to_pylist()))
        task = _stage_of(token, stage_json, conf)
        handles = {sid: _broadcast_rows(key, h) for sid, (key, h) in broadcasts.items()}
        kind, out, _plan = task.run(task_no, blocks, rows, handles, out_schema)
        del blocks, rows
        if kind == "blocks":
            pids, blobs = [], []
            for p, blob in out:
                pids.append(route[p])
                blobs.append(blob)
            if pids:
                yield pa.RecordBatch.from_arrays(
                    [pa.array(pids, pa.int32()), pa.array([tag] * len(pids), pa.int8()), pa.array(blobs, pa.binary())],
                    schema=BLOCKS_SCHEMA,
                )
            return
        table: pa.Table = out
        if spark_out is not None:
            table = table.rename_columns(spark_out.names).cast(spark_out)
            yield from table.to_batches()
            return
        yield pa.RecordBatch.from_arrays([pa.array(list(_ipc_blobs(table)), pa.binary())], schema=ROWS_SCHEMA)

    return run


def _as_spark_schema(schema: pa.Schema) -> tuple[Any, pa.Schema]:
    """The Spark schema of a result and the Arrow schema ``mapInArrow`` must yield for it."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from .spark import spark_schema

    st = spark_schema(schema)
    try:
        arrow = to_arrow_schema(st, prefers_large_types=False)
    except TypeError:
        arrow = to_arrow_schema(st)
    return st, arrow


def _collect_blobs(frame: SparkDataFrame) -> list[bytes]:
    table = frame.toArrow() if hasattr(frame, "toArrow") else frame._collect_as_arrow()  # type: ignore[attr-defined]
    if isinstance(table, list):
        table = pa.Table.from_batches(table, schema=ROWS_SCHEMA)
    return [b for b in table.column("_blob").to_pylist() if b]


class SparkRun:
    """One action of a DataFrame of a session on Spark: its stages as Spark DataFrames."""

    def __init__(self, df: DataFrame) -> None:
        session = df._session
        spark = session._spark
        if spark is None:
            raise ValueError("this DataFrame's session does not run on Spark: use fs.Session(spark=spark)")
        self.session = session
        self.spark = spark
        self.df = df
        self.stages = df._plan.spark_stages(_parallelism(spark), _spark_settings(spark))
        self.conf = _task_conf(session, spark)
        self.broadcast_jobs = 0

    def explain(self) -> str:
        return self.stages.explain()

    def _input_frame(self, info: dict[str, Any], outputs: dict[int, SparkDataFrame]) -> SparkDataFrame:
        spark = self.spark
        if info["layout"] == "splits":
            n = info["tasks"]
            return spark.range(0, n, 1, n)
        if info["layout"] == "spark":
            return self.session._spark_inputs[info["external"]]
        shuffled = [outputs[sid] for sid, is_broadcast in info["inputs"] if not is_broadcast]
        if not shuffled:
            return spark.range(0, 1, 1, 1)
        frame = shuffled[0]
        for other in shuffled[1:]:
            frame = frame.union(other)
        return frame.repartition(info["tasks"], "_pid")

    def frame(self, to_spark: bool = False) -> SparkDataFrame:
        """The Spark DataFrame of the result stage (broadcast stages run now)."""
        sc = self.spark.sparkContext
        outputs: dict[int, SparkDataFrame] = {}
        handles: dict[int, Any] = {}
        last = self.stages.num_stages() - 1
        schema = self.df.schema
        spark_types = _as_spark_schema(schema) if to_spark else None
        for i in range(last + 1):
            info = self.stages.stage_info(i)
            token = uuid.uuid4().hex
            inputs = {sid: handles[sid] for sid, b in info["inputs"] if b}
            is_result = i == last
            task = _stage_task(
                token,
                self.stages.stage_json(i),
                self.conf,
                info,
                inputs,
                schema if is_result else None,
                spark_types[1] if (is_result and spark_types) else None,
            )
            source = self._input_frame(info, outputs)
            if info["sink"] == "exchange":
                outputs[i] = source.mapInArrow(task, _spark_struct(BLOCKS_SCHEMA))
            elif info["sink"] == "broadcast":
                blobs = _collect_blobs(source.mapInArrow(task, _spark_struct(ROWS_SCHEMA)))
                self.broadcast_jobs += 1
                handles[i] = (uuid.uuid4().hex, sc.broadcast(blobs))
            elif spark_types is not None:
                return source.mapInArrow(task, spark_types[0])
            else:
                return source.mapInArrow(task, _spark_struct(ROWS_SCHEMA))
        raise RuntimeError("a stage plan without a result stage")

    def collect(self) -> pa.Table:
        """Runs the query on Spark: the result as a ``pyarrow.Table``."""
        schema = self.df.schema
        tables = []
        for blob in _collect_blobs(self.frame()):
            t = pa.ipc.open_stream(blob).read_all()
            if t.num_rows:
                tables.append(t.rename_columns(schema.names).cast(schema))
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(tables)


def _spark_struct(schema: pa.Schema) -> Any:
    from .spark import spark_schema

    return spark_schema(schema)


def spark_input(session: Session, frame: SparkDataFrame) -> Any:
    """A plan leaf over the rows of a PySpark DataFrame, for a session on Spark."""
    from .spark import _size_of, arrow_schema

    name = f"spark_input_{uuid.uuid4().hex[:8]}"
    session._spark_inputs[name] = frame
    return session._query_engine.from_spark(arrow_schema(frame), _size_of(frame, None), name)
