"""A streaming Parquet file source whose micro-batches fss's tasks read themselves.

``foreachBatch`` hands a batch's rows over in the JVM, and moving them into Python tasks
costs Spark about a microsecond a row (a 1M-row batch of three columns: 1.1 s on a core;
Spark's whole session window query on it: 3.1 s). When the streaming DataFrame is a bare
Parquet file source (``spark.readStream.schema(s).parquet(dir)``, nothing applied to it),
the files of each batch are in the query's source log (``<checkpoint>/sources/<i>/<batch>``,
written before the batch runs), so:

1. the rows are read with ferrospark's Parquet reader and split by key as Spark's
   ``repartition(n, keys)`` splits them (Spark's Murmur3, ``_native.spark_hash_split``);
2. with ``n`` at most twice the cores, each state partition's task reads the batch and
   keeps its own piece (``OwnRows``): two reads a core cost less than a stage and a shuffle;
3. with more, a task per group of the batch's files reads them once and sends each piece
   as Arrow IPC blocks through Spark's shuffle, tagged so that the blocks land in their
   partition (``spark_stages._routing``), and each partition's task decodes its blocks.

No row crosses into the JVM, only blocks (or nothing). The routing being Spark's own, a batch that cannot take
this path (another format, options that change how rows are read, a file whose columns are
not the stream's) takes Spark's exchange, and every key still meets its state partition.
The source's scan node is credited with the rows, so the query's progress counts them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from . import _native
from .spark_stages import BLOCKS_SCHEMA, _ipc_blobs, _routing, _spark_struct, arrow_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Whether fss reads a bare Parquet source's files in its own tasks (default true).
NATIVE_SCAN = "ferrospark.streaming.nativeScan"

#: Source options that only choose which files make a batch (already chosen in the log).
_SELECTING = frozenset(
    {
        "path",
        "maxfilespertrigger",
        "maxbytespertrigger",
        "maxcachedfiles",
        "discardcachedinputratio",
        "latestfirst",
        "filenameonly",
        "maxfileage",
        "pathglobfilter",
        "modifiedbefore",
        "modifiedafter",
        "recursivefilelookup",
    }
)


class ParquetStreamSource:
    """The files of each micro-batch of a bare streaming Parquet source, read in fss's tasks."""

    def __init__(self, schema: pa.Schema, source_log: Path, conf: Mapping[str, str], spark: Any) -> None:
        self.schema = schema
        self.source_log = source_log
        self.conf = dict(conf)
        self.spark = spark  # the query's own session, whose progress counts the rows

    @classmethod
    def of(
        cls, df: DataFrame, checkpoint: str, settings: Mapping[str, str], keys: list[str]
    ) -> ParquetStreamSource | None:
        """The source of ``df`` when it is a bare Parquet file source whose batches fss can
        read itself (the query's only source) and route by ``keys``, else ``None``."""
        if str(settings.get(NATIVE_SCAN, "true")).strip().lower() == "false":
            return None
        try:
            plan = df._jdf.queryExecution().analyzed()
            if plan.getClass().getSimpleName() != "StreamingRelation":
                return None
            ds = plan.dataSource()
            options = {k.lower() for k in str(ds.options().keys().mkString("\u0001")).split("\u0001") if k}
            if (
                str(ds.className()).lower() != "parquet"
                or ds.partitionColumns().length()
                or (options - _SELECTING)
            ):
                return None
        except Exception:  # noqa: BLE001 - a plan this check cannot read goes Spark's way
            return None
        schema = arrow_schema(df)
        # Keys of a type whose Spark hash ferrospark does not compute are Spark's to route.
        if _native.spark_hash_split(schema.empty_table(), keys, 1) is None:
            return None
        return cls(schema, Path(checkpoint) / "sources" / "0", settings, df.sparkSession)

    def files(self, batch_id: int) -> list[str] | None:
        """The local paths of batch ``batch_id``'s files, from the source log (``None`` when
        the log is not there or names a file outside the local file system)."""
        for name in (str(batch_id), f"{batch_id}.compact"):
            try:
                text = (self.source_log / name).read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
            except OSError:
                return None
            out = []
            for line in text.splitlines()[1:]:
                if not line.strip():
                    continue
                entry = json.loads(line)
                if entry.get("batchId") != batch_id:
                    continue
                uri = urlparse(entry["path"])
                if uri.scheme not in ("", "file"):
                    return None
                out.append(unquote(uri.path))
            return out
        return None

    def readable(self, files: list[str]) -> int | None:
        """The rows of ``files`` when ferrospark's reader gives them exactly the stream's
        columns and types (their footers read once), else ``None``."""
        try:
            scan = _native.scan_parquet(files, columns=self.schema.names, conf=self.conf, spark_types=True)
            got = scan.schema()
        except Exception:  # noqa: BLE001 - a file ferrospark cannot read goes Spark's way
            return None
        if [(f.name, f.type) for f in got] != [(f.name, f.type) for f in self.schema]:
            return None
        return int(scan.metrics()["rows_total"])

    def rows(self, spark: Any, batch_id: int, keys: list[str], n: int) -> tuple[Any, RowsOf] | None:
        """Batch ``batch_id``'s rows for ``n`` partitions routed by ``keys``: the frame whose
        ``mapInArrow`` tasks are the partitions, and what gives a task its rows from its input
        (the batch's rows credited to the query's progress). ``None`` when the batch must take
        Spark's exchange."""
        files = self.files(batch_id)
        rows = self.readable(files) if files else None
        if rows is None:
            return None
        credit_rows(self.spark, rows)
        cores = spark.sparkContext.defaultParallelism
        if n <= 2 * cores:
            # Each partition reads the batch and keeps its own rows: at most two reads a core,
            # cheaper than a stage of its own and Spark's shuffle.
            return spark.range(0, n, 1, n), OwnRows(files, self.schema, keys, n, self.conf)
        tasks = max(1, min(len(files), cores))
        groups = [files[i::tasks] for i in range(tasks)]
        read = _read_task(groups, self.schema, keys, n, self.conf)
        frame = spark.range(0, tasks, 1, tasks).mapInArrow(read, _spark_struct(BLOCKS_SCHEMA))
        return frame.repartition(n, "_pid"), unblock


#: How a partition's task gets its rows: from its input and its partition number.
RowsOf = Callable[[Iterator[pa.RecordBatch], int], Iterator[pa.RecordBatch]]


def _read_split(
    files: list[str],
    schema: pa.Schema,
    keys: list[str],
    n: int,
    conf: Mapping[str, str],
    only: int | None = None,
) -> list[pa.Table]:
    """``files``' rows (ferrospark's Parquet reader) split as Spark's exchange splits them
    (with ``only``, that partition's piece alone)."""
    scan = _native.scan_parquet(files, columns=schema.names, conf=dict(conf), spark_types=True)
    parts = _native.spark_hash_split(pa.table(scan).cast(schema), keys, n, only)
    if parts is None:
        raise RuntimeError(f"fss: a key of {keys} has a type Spark's hash is not computed for here")
    return parts


class OwnRows:
    """A partition's rows read by its own task: the batch's files, its pieces kept."""

    def __init__(
        self, files: list[str], schema: pa.Schema, keys: list[str], n: int, conf: Mapping[str, str]
    ) -> None:
        self.files, self.schema, self.keys, self.n, self.conf = files, schema, keys, n, dict(conf)

    def __call__(self, batches: Iterator[pa.RecordBatch], partition: int) -> Iterator[pa.RecordBatch]:
        for _ in batches:  # the partition's one number
            pass
        parts = _read_split(self.files, self.schema, self.keys, self.n, self.conf, partition)
        yield from parts[partition].to_batches()


def _read_task(
    groups: list[list[str]], schema: pa.Schema, keys: list[str], n: int, conf: Mapping[str, str]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A task reading group ``i`` of the batch's files and sending each partition's piece as
    IPC blocks routed to it."""
    route = _routing(n)

    def run(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in it:
            for task in ids.column(0).to_pylist():
                for p, part in enumerate(_read_split(groups[task], schema, keys, n, conf)):
                    blobs = list(_ipc_blobs(part))
                    if blobs:
                        yield pa.record_batch(
                            [
                                pa.array([route[p]] * len(blobs), pa.int32()),
                                pa.array([0] * len(blobs), pa.int8()),
                                pa.array(blobs, pa.binary()),
                            ],
                            schema=BLOCKS_SCHEMA,
                        )

    return run


def unblock(batches: Iterator[pa.RecordBatch], _partition: int = 0) -> Iterator[pa.RecordBatch]:
    """The rows of a partition's IPC blocks."""
    for b in batches:
        for blob in b.column("_blob"):
            yield from pa.ipc.open_stream(blob.as_buffer())


def credit_rows(spark: Any, rows: int) -> None:
    """Adds ``rows`` to the row count of the running batch's source scan (Spark counts a
    batch's input rows from it, and the batch's own scan did not run). ``spark``: the
    query's own session (``foreachBatch``'s is a clone whose query manager is empty)."""
    try:
        qid = spark.sparkContext.getLocalProperty("sql.streaming.queryId")
        query = spark.streams.get(qid) if qid else None
        if query is None:
            raise LookupError(f"no running query {qid!r} in the query's session")
        plan = query._jsq.streamingQuery().lastExecution().executedPlan()
        leaves = plan.collectLeaves().iterator()
        while leaves.hasNext():
            metric = leaves.next().metrics().get("numOutputRows")
            if metric.isDefined():
                metric.get().add(rows)
                return
    except Exception as e:  # noqa: BLE001 - progress only: the batch's answer does not depend on it
        print(
            f"ferrospark: the batch's input rows are not counted in the query's progress: {e}",
            file=sys.stderr,
        )
