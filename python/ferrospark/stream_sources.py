"""Streaming file sources (Parquet, CSV, JSON) whose micro-batches fss's tasks read themselves.

``foreachBatch`` hands a batch's rows over in the JVM, and moving them into Python tasks
costs Spark about a microsecond a row (a 1M-row batch of three columns: 1.1 s on a core;
Spark's whole session window query on it: 3.1 s). When each streaming input of an fss
operator is a bare file source (``spark.readStream.schema(s).parquet(dir)``, ``.csv``,
``.json``, nothing applied to it, only options that choose files or that ferrospark's
reader applies as Spark does), the files of each batch are in the query's checkpoint, written
before the batch runs: ``offsets/<batch>`` holds each source's log offset, and the source's
log ``sources/<i>/<offset>`` the files that offset added (a source with no new files in the
batch keeps its offset and adds none). So:

1. each source's rows are read with ferrospark's reader of its format and split by key as Spark's
   ``repartition(n, keys)`` splits them (Spark's Murmur3, ``_native.spark_hash_split``); a
   join's two sides are then packed into the columns Spark's exchange would carry them in
   (``SidePacking``), their keys being the packed key columns' values;
2. with ``n`` at most twice the cores, each state partition's task reads the batch and
   keeps its own piece (``OwnRows``): two reads a core cost less than a stage and a shuffle;
3. with more, a task per group of the batch's files reads them once and sends each piece
   as Arrow IPC blocks through Spark's shuffle, tagged so that the blocks land in their
   partition (``spark_stages._routing``), and each partition's task decodes its blocks.

No row crosses into the JVM, only blocks (or nothing). The routing being Spark's own, a batch
that cannot take this path (another format, options that change how rows are read, a file
whose columns are not the stream's) takes Spark's exchange, and every key still meets its
state partition. Each source's scan node is credited with its rows (a Parquet file's known
from its footer, a text file's counted by the tasks), so the query's progress counts them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from . import _native
from .parquet import native_batches
from .spark_stages import (
    BLOCKS_SCHEMA,
    _DictParam,
    _ipc_blobs,
    _routing,
    _spark_settings,
    _spark_struct,
    arrow_schema,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Whether fss reads a bare file source's files in its own tasks (default true).
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

#: Options of a CSV / JSON source that ferrospark's readers apply as Spark does (besides
#: those that choose files); a source with another option keeps Spark's rows. From the
#: readers' option parsers (``ferrospark-scan``'s ``csv/options.rs``, ``json/options.rs``,
#: ``text/datetime.rs``), leaving out those only schema inference reads.
_TEXT_OPTIONS = frozenset(
    {
        "mode",
        "columnnameofcorruptrecord",
        "multiline",
        "linesep",
        "encoding",
        "charset",
        "dateformat",
        "timestampformat",
        "timestampntzformat",
    }
)
_READ_OPTIONS = {
    "csv": _TEXT_OPTIONS
    | {
        "sep",
        "delimiter",
        "quote",
        "escape",
        "comment",
        "header",
        "nullvalue",
        "emptyvalue",
        "nanvalue",
        "positiveinf",
        "negativeinf",
        "ignoreleadingwhitespace",
        "ignoretrailingwhitespace",
    },
    "json": _TEXT_OPTIONS
    | {
        "allowcomments",
        "allowunquotedfieldnames",
        "allowsinglequotes",
        "allownumericleadingzeros",
        "allownonnumericnumbers",
        "allowbackslashescapinganycharacter",
        "allowunquotedcontrolchars",
    },
    "parquet": frozenset(),
}

#: Suffixes of text files Spark (Hadoop's codecs) and ferrospark's readers decode differently:
#: ferrospark reads `.gz`, `.bz2` and `.zst` as Hadoop does, and not these.
_CODECS_NOT_READ = frozenset({".deflate", ".snappy", ".lz4", ".gzip", ".zstd", ".br", ".lzo", ".xz"})

#: Session settings with which Spark parses text its own way (their defaults only).
_TEXT_SETTINGS = {
    "spark.sql.legacy.timeParserPolicy": "CORRECTED",
    "spark.sql.columnNameOfCorruptRecord": "_corrupt_record",
}

#: How a side's rows (its routed piece) become the rows the operator's task takes: a join's
#: sides packed into shared columns; ``None``: the side's own columns.
Pack = Callable[[int, pa.Table], pa.Table]


@dataclass
class BareSource:
    """A streaming file source with nothing applied to it: its format, directory and the
    options its reader applies."""

    format: str
    root: Path
    options: dict[str, str]


def bare_file_source(df: DataFrame) -> BareSource | None:
    """``df``'s source when ``df`` is a bare file source ferrospark reads as Spark does (a
    ``StreamingRelation`` of format parquet, csv or json, no partition columns, options
    that choose files or that the reader applies), else ``None``."""
    try:
        plan = df._jdf.queryExecution().analyzed()
        if plan.getClass().getSimpleName() != "StreamingRelation":
            return None
        ds = plan.dataSource()
        fmt = str(ds.className()).lower()
        options = {str(k): str(v) for k, v in _scala_map(ds.options()).items()}
        known = _READ_OPTIONS.get(fmt)
        if (
            known is None
            or ds.partitionColumns().length()
            or ({k.lower() for k in options} - _SELECTING - known)
            or "path" not in options
        ):
            return None
        path = options["path"]
    except Exception:  # noqa: BLE001 - a plan this check cannot read goes Spark's way
        return None
    uri = urlparse(path)
    if uri.scheme not in ("", "file") or any(c in path for c in "*?[{"):
        return None
    # Absolute as Spark qualifies it (symbolic links kept: the log names files by that path).
    root = Path(os.path.abspath(unquote(uri.path) if uri.scheme else path))
    read = {k: v for k, v in options.items() if k.lower() in known}
    return BareSource(fmt, root, read)


def _scala_map(m: Any) -> dict[Any, Any]:
    out = {}
    it = m.iterator()
    while it.hasNext():
        kv = it.next()
        out[kv._1()] = kv._2()
    return out


class FileSourceLog:
    """Which files each micro-batch of a query's file source ``index`` read: the batch's and
    the previous batch's offsets (``<checkpoint>/offsets``) bound the source's log offsets
    the batch took, whose files the source's log (``<checkpoint>/sources/<index>``) names.
    Every file must lie under ``root``, the source's directory (else the log is not this
    source's, and the batch takes Spark's rows)."""

    def __init__(self, checkpoint: Path, index: int, root: Path) -> None:
        self.checkpoint, self.index, self.root = checkpoint, index, root

    def log_offset(self, batch_id: int) -> int | None:
        """The source's log offset after ``batch_id`` (-1 before its first file); ``None``
        when the offsets are not there or not a file source's."""
        if batch_id < 0:
            return -1
        try:
            lines = (self.checkpoint / "offsets" / str(batch_id)).read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        if len(lines) < 3 + self.index or lines[0] != "v1":
            return None
        text = lines[2 + self.index].strip()
        if text == "-":
            return -1
        try:
            value = json.loads(text).get("logOffset")
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, int) else None

    def files(self, batch_id: int) -> list[str] | None:
        """The local paths of the files batch ``batch_id`` read from this source (``None``
        when the checkpoint does not say, or names a file outside the source's directory)."""
        now, before = self.log_offset(batch_id), self.log_offset(batch_id - 1)
        if now is None or before is None:
            return None
        out: list[str] = []
        for offset in range(before + 1, now + 1):
            got = self.logged(offset)
            if got is None:
                return None
            out.extend(got)
        return out

    def logged(self, offset: int) -> list[str] | None:
        """The files of the source's log offset ``offset`` (its own file, or the compacted
        file it ends)."""
        log = self.checkpoint / "sources" / str(self.index)
        for name in (str(offset), f"{offset}.compact"):
            try:
                text = (log / name).read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
            except OSError:
                return None
            out = []
            for line in text.splitlines()[1:]:
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    if entry.get("batchId") != offset:
                        continue
                    uri = urlparse(entry["path"])
                except (ValueError, KeyError, AttributeError, TypeError):
                    return None  # a log this reading does not understand: Spark's rows
                if uri.scheme not in ("", "file"):
                    return None
                path = Path(unquote(uri.path))
                if not path.is_relative_to(self.root):
                    return None
                # A `key=value` directory: Spark adds a partition column from the path that
                # the files do not hold (a stream's partition columns are found at its start,
                # not named in its plan).
                if any("=" in part for part in path.relative_to(self.root).parts[:-1]):
                    return None
                out.append(str(path))
            return out
        return None


@dataclass
class _Side:
    """One input of the operator read from its files: its columns, its partitioning keys, its
    format and reader options, and its source's log."""

    schema: pa.Schema
    keys: list[str]
    format: str
    options: dict[str, str]
    log: FileSourceLog


class NativeBatch:
    """A batch fss reads itself: the frame whose ``mapInArrow`` tasks are its partitions,
    what gives a task its rows, and the rows to credit to the query's progress once its
    tasks ran (a Parquet side's known from its footers, a text side's counted by the tasks)."""

    def __init__(self, frame: Any, rows_of: RowsOf, known: list[int], counted: Any, spark: Any) -> None:
        self.frame, self.rows_of = frame, rows_of
        self.known, self.counted, self.spark = known, counted, spark

    def credit(self) -> None:
        """Credits each source's scan with its rows (call once the batch's tasks ran)."""
        rows = list(self.known)
        for (side, *_), n in self.counted.value.items():
            rows[side] += n
        credit_rows(self.spark, rows)


class NativeFileSource:
    """The files of each micro-batch of an fss operator's bare streaming file sources (one,
    or a join's two), read in fss's tasks."""

    def __init__(
        self, sides: list[_Side], conf: Mapping[str, str], spark: Any, pack: Pack | None = None
    ) -> None:
        self.sides = sides
        # Spark's settings the readers follow (the session's time zone for text timestamps).
        self.conf = {**_spark_settings(spark), **dict(conf)}
        self.spark = spark  # the query's own session, whose progress counts the rows
        self.pack = pack

    @classmethod
    def of(
        cls, df: DataFrame, checkpoint: str, settings: Mapping[str, str], keys: list[str]
    ) -> NativeFileSource | None:
        """The source of ``df`` when it is a bare file source whose batches fss can read
        itself (the query's only source) and route by ``keys``, else ``None``."""
        side = _side(df, Path(checkpoint), 0, settings, keys)
        return None if side is None else cls([side], settings, df.sparkSession)

    @classmethod
    def of_join(
        cls,
        inputs: Sequence[DataFrame],
        checkpoint: str,
        settings: Mapping[str, str],
        keys: Sequence[list[str]],
        pack: Pack,
    ) -> NativeFileSource | None:
        """A join's two sources (the query's sources 0 and 1, in that order) when each is a
        bare file source of its own directory, routed by its join keys and packed by
        ``pack``, else ``None``."""
        sides = [_side(df, Path(checkpoint), i, settings, k) for i, (df, k) in enumerate(zip(inputs, keys))]
        if any(s is None for s in sides):
            return None
        a, b = sides[0].log.root, sides[1].log.root  # type: ignore[union-attr]
        # One directory inside the other: a file's log could not tell its side.
        if a.is_relative_to(b) or b.is_relative_to(a):
            return None
        return cls(sides, settings, inputs[0].sparkSession, pack)  # type: ignore[arg-type]

    def files(self, batch_id: int) -> list[list[str]] | None:
        """Each side's files in batch ``batch_id`` (``None``: the checkpoint does not say)."""
        out = [s.log.files(batch_id) for s in self.sides]
        return None if any(f is None for f in out) else out  # type: ignore[return-value]

    def readable(self, side: int, files: list[str]) -> int | None:
        """The rows of side ``side``'s ``files`` known before reading them (a Parquet file's
        from its footer; 0 for a text file, whose rows the tasks count) when ferrospark's
        reader gives them exactly the stream's columns and types (a text file compressed by a
        codec it does not decode as Spark does is not), else ``None``."""
        if self.sides[side].format != "parquet" and any(
            Path(f).suffix.lower() in _CODECS_NOT_READ for f in files
        ):
            return None
        if not files:
            return 0
        s = self.sides[side]
        try:
            scan = _plan(s, files, self.conf)
            got = scan.schema()
        except Exception:  # noqa: BLE001 - a file ferrospark cannot read goes Spark's way
            return None
        if [f.name for f in got] != s.schema.names or not all(
            _same_type(f.type, want.type) for f, want in zip(got, s.schema, strict=True)
        ):
            return None
        return int(scan.metrics()["rows_total"]) if s.format == "parquet" else 0

    def rows(self, spark: Any, batch_id: int, n: int) -> NativeBatch | None:
        """Batch ``batch_id``'s rows for ``n`` partitions (``None`` when the batch must take
        Spark's exchange)."""
        files = self.files(batch_id)
        if files is None:
            return None
        known = [self.readable(i, f) for i, f in enumerate(files)]
        if any(c is None for c in known):
            return None
        counted = spark.sparkContext.accumulator({}, _DictParam())
        reader = _Reader(self.sides, n, self.conf, self.pack, counted)
        cores = spark.sparkContext.defaultParallelism
        if n <= 2 * cores:
            # Each partition reads the batch and keeps its own rows: at most two reads a core,
            # cheaper than a stage of its own and Spark's shuffle.
            frame, rows_of = spark.range(0, n, 1, n), OwnRows(reader, files)
        else:
            tagged = [(i, f) for i, side in enumerate(files) for f in side]
            tasks = max(1, min(len(tagged), cores))
            groups = [tagged[i::tasks] for i in range(tasks)]
            read = spark.range(0, tasks, 1, tasks).mapInArrow(
                _read_task(reader, groups), _spark_struct(BLOCKS_SCHEMA)
            )
            frame, rows_of = read.repartition(n, "_pid"), unblock
        return NativeBatch(frame, rows_of, known, counted, self.spark)  # type: ignore[arg-type]


def _side(
    df: DataFrame, checkpoint: Path, index: int, settings: Mapping[str, str], keys: list[str]
) -> _Side | None:
    if str(settings.get(NATIVE_SCAN, "true")).strip().lower() == "false":
        return None
    bare = bare_file_source(df)
    if bare is None:
        return None
    if bare.format != "parquet":
        conf = df.sparkSession.conf
        if any(str(conf.get(k, v)).upper() != v.upper() for k, v in _TEXT_SETTINGS.items()):
            return None
    schema = arrow_schema(df)
    # Keys of a type whose Spark hash ferrospark does not compute are Spark's to route.
    if _native.spark_hash_split(schema.empty_table(), keys, 1) is None:
        return None
    return _Side(schema, list(keys), bare.format, bare.options, FileSourceLog(checkpoint, index, bare.root))


def _same_type(got: pa.DataType, want: pa.DataType) -> bool:
    """Whether the reader's ``got`` is the stream's ``want``: equal, or instants labelled
    with another zone (Parquet's are UTC; the stream's the session's zone)."""
    if got == want:
        return True
    return (
        pa.types.is_timestamp(got)
        and pa.types.is_timestamp(want)
        and got.unit == want.unit
        and got.tz is not None
        and want.tz is not None
    )


def _plan(side: _Side, files: list[str], conf: Mapping[str, str]) -> Any:
    """ferrospark's scan of a side's ``files`` (planned: nothing read yet)."""
    if side.format == "parquet":
        return _native.scan_parquet(files, columns=side.schema.names, conf=dict(conf), spark_types=True)
    return _native.scan_format(
        side.format,
        files,
        schema=side.schema,
        columns=None,
        filter=None,
        options=side.options,
        conf=dict(conf),
    )


#: How a partition's task gets its rows: from its input and its partition number.
RowsOf = Callable[[Iterator[pa.RecordBatch], int], Iterator[pa.RecordBatch]]


class _Reader:
    """Reads sides' files and splits their rows as Spark's exchange splits them; a text
    side's rows counted into ``counted`` (by the tag a task gives them)."""

    def __init__(
        self, sides: list[_Side], n: int, conf: Mapping[str, str], pack: Pack | None, counted: Any
    ) -> None:
        self.sides, self.n, self.conf, self.pack, self.counted = sides, n, dict(conf), pack, counted

    def split(
        self, side: int, files: list[str], tag: tuple[str, int], only: int | None = None
    ) -> list[pa.Table]:
        """Side ``side``'s rows of ``files`` split into the ``n`` partitions (with ``only``,
        that partition's piece alone), packed for the operator."""
        s = self.sides[side]
        scan = _plan(s, files, self.conf)
        table = pa.Table.from_batches(list(native_batches(scan)), schema=scan.schema())
        parts = _native.spark_hash_split(table.cast(s.schema), s.keys, self.n, only)
        if parts is None:
            raise RuntimeError(f"fss: a key of {s.keys} has a type Spark's hash is not computed for here")
        if s.format != "parquet":
            # The rows this task takes (a task run again counts them once).
            rows = table.num_rows if only is None else parts[only].num_rows
            self.counted.add({(side, *tag): rows})
        if self.pack is None:
            return parts
        return [self.pack(side, p) if p.num_rows else p for p in parts]


class OwnRows:
    """A partition's rows read by its own task: the batch's files, its pieces kept."""

    def __init__(self, reader: _Reader, files: list[list[str]]) -> None:
        self.reader, self.files = reader, files

    def __call__(self, batches: Iterator[pa.RecordBatch], partition: int) -> Iterator[pa.RecordBatch]:
        for _ in batches:  # the partition's one number
            pass
        for side, files in enumerate(self.files):
            if files:
                piece = self.reader.split(side, files, ("partition", partition), partition)[partition]
                yield from piece.to_batches()


def _read_task(
    reader: _Reader, groups: list[list[tuple[int, str]]]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A task reading group ``i`` of the batch's (side, file) pairs and sending each
    partition's piece as IPC blocks routed to it."""
    route = _routing(reader.n)

    def run(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for ids in it:
            for task in ids.column(0).to_pylist():
                for side in range(len(reader.sides)):
                    files = [f for s, f in groups[task] if s == side]
                    if not files:
                        continue
                    for p, part in enumerate(reader.split(side, files, ("group", task))):
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


def credit_rows(spark: Any, rows: list[int]) -> None:
    """Adds ``rows[i]`` to the row count of the running batch's source scan ``i`` (Spark
    counts a source's input rows from its plan leaf, and the batch's own scans did not run).
    ``spark``: the query's own session (``foreachBatch``'s is a clone whose query manager is
    empty)."""
    try:
        qid = spark.sparkContext.getLocalProperty("sql.streaming.queryId")
        query = spark.streams.get(qid) if qid else None
        if query is None:
            raise LookupError(f"no running query {qid!r} in the query's session")
        plan = query._jsq.streamingQuery().lastExecution().executedPlan()
        # The plan's leaves are its sources' in order (a source with no new files a batch
        # is an empty local scan in its place).
        leaves = plan.collectLeaves().iterator()
        for count in rows:
            leaf = leaves.next()
            metric = leaf.metrics().get("numOutputRows")
            if count and metric.isDefined():
                metric.get().add(count)
    except Exception as e:  # noqa: BLE001 - progress only: the batch's answer does not depend on it
        print(
            f"ferrospark: the batch's input rows are not counted in the query's progress: {e}",
            file=sys.stderr,
        )
