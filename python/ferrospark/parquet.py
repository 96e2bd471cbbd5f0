"""Reading Parquet: ``fs.read_parquet`` (a streaming ``pyarrow.RecordBatchReader``) and
``fs.scan_parquet`` (the planned scan, with ``metrics()`` and ``explain()``)."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeAlias

import pyarrow as pa

from . import _native
from .column import Column, to_filter
from .errors import ConfigError

if TYPE_CHECKING:
    from .session import Session

PathLike: TypeAlias = "str | os.PathLike[str]"
Paths: TypeAlias = "PathLike | Sequence[PathLike]"

_READER_SCANS: weakref.WeakKeyDictionary[pa.RecordBatchReader, ParquetScan] = weakref.WeakKeyDictionary()
_READER_STATES: weakref.WeakKeyDictionary[pa.RecordBatchReader, dict[str, bool]] = weakref.WeakKeyDictionary()
#: The metrics of readers of other formats (CSV), by reader.
_READER_METRICS: weakref.WeakKeyDictionary[pa.RecordBatchReader, Callable[[], dict[str, int]]] = (
    weakref.WeakKeyDictionary()
)


def _paths(path_or_paths: Paths) -> list[str]:
    if isinstance(path_or_paths, (str, os.PathLike)):
        return [os.fspath(path_or_paths)]
    paths = [os.fspath(p) for p in path_or_paths]
    if not paths:
        raise ValueError("read_parquet needs at least one path")
    return paths


def native_batches(native: _native.ParquetScan | _native.FileScan) -> Iterator[pa.RecordBatch]:
    """The batches of a planned native scan, its reader stopped when they stop being read."""
    stream = native.stream()
    try:
        while (batch := stream.next_batch()) is not None:
            yield batch
    finally:
        stream.close()


class ParquetScan:
    """A planned Parquet scan: files listed, footers read, row groups and pages pruned.

    Nothing is decoded until it is read (``to_reader()``, ``read_all()``, or any consumer of
    the Arrow C stream interface such as ``pyarrow.table(scan)`` or ``polars.from_arrow``).
    """

    def __init__(
        self,
        native: _native.ParquetScan,
        source: tuple[list[str], list[str] | None, Column | None],
    ) -> None:
        self._native = native
        # What was asked (paths, columns, filter): the query operators plan the same read.
        self._source = source

    @property
    def schema(self) -> pa.Schema:
        """The output schema."""
        return self._native.schema()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        return native_batches(self._native)

    def to_reader(self) -> pa.RecordBatchReader:
        """A streaming reader; batches are decoded as they are pulled."""
        state = {"started": False}

        def batches() -> Iterator[pa.RecordBatch]:
            state["started"] = True
            yield from self._batches()

        reader = pa.RecordBatchReader.from_batches(self.schema, batches())
        _READER_SCANS[reader] = self
        _READER_STATES[reader] = state
        return reader

    def read_all(self) -> pa.Table:
        """Reads everything into a table."""
        return pa.Table.from_batches(list(self._batches()), schema=self.schema)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self._native.__arrow_c_stream__(requested_schema)

    def metrics(self) -> dict[str, int]:
        """Files, row groups and pages read vs pruned, rows, bytes and times (ns)."""
        return dict(self._native.metrics())

    def explain(self) -> str:
        """A readable plan summary."""
        return self._native.explain()

    def __repr__(self) -> str:
        return self.explain()


def scan_parquet(
    path_or_paths: Paths,
    columns: Sequence[str] | None = None,
    filter: Column | str | None = None,
    batch_size: int | None = None,
    *,
    session: Session | None = None,
) -> ParquetScan:
    """Plans a Parquet scan (see :func:`read_parquet` for the arguments)."""
    from .session import default_session

    s = session or default_session()
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0
    ):
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
    paths = _paths(path_or_paths)
    picked = list(columns) if columns is not None else None
    condition = to_filter(filter)
    native = _native.scan_parquet(paths, columns=picked, filter=condition, conf=s.conf, batch_size=batch_size)
    return ParquetScan(native, (paths, picked, Column(condition) if condition is not None else None))


def read_parquet(
    path_or_paths: Paths,
    columns: Sequence[str] | None = None,
    filter: Column | str | None = None,
    batch_size: int | None = None,
    *,
    session: Session | None = None,
) -> pa.RecordBatchReader:
    """Reads Parquet files as a streaming ``pyarrow.RecordBatchReader``.

    ``path_or_paths`` is a file, a directory (hive ``key=value`` sub-directories become typed
    partition columns) or a list of files. ``columns`` picks and orders the output columns.
    ``filter`` (a Column or Spark SQL text) keeps exactly the rows Spark's
    ``spark.read.parquet(p).filter(cond)`` keeps, pruning files, row groups and pages on the
    way. ``fs.scan_metrics(reader)`` tells what was read and what was skipped.
    """
    return scan_parquet(path_or_paths, columns, filter, batch_size, session=session).to_reader()


def unread_scan_of(data: object) -> ParquetScan | None:
    """The scan behind ``data`` when operators may read it themselves, fused and in parallel:
    a :class:`ParquetScan`, or a reader from :func:`read_parquet` nothing was pulled from yet
    (it is then marked as read)."""
    if isinstance(data, ParquetScan):
        return data
    if isinstance(data, pa.RecordBatchReader):
        scan = _READER_SCANS.get(data)
        state = _READER_STATES.get(data)
        if scan is not None and state is not None and not state["started"]:
            state["started"] = True
            return scan
    return None


def scan_metrics(reader: pa.RecordBatchReader) -> dict[str, int]:
    """The metrics of a reader returned by :func:`read_parquet`, :func:`read_csv` or
    :func:`read_json`."""
    scan = _READER_SCANS.get(reader)
    if scan is not None:
        return scan.metrics()
    other = _READER_METRICS.get(reader)
    if other is None:
        raise ValueError("this reader was not created by ferrospark.read_parquet, read_csv or read_json")
    return other()


def metadata_cache_stats() -> dict[str, int]:
    """The process-wide cache of parsed Parquet footers: ``entries``, ``bytes``, ``hits``, ``misses``.

    A footer is reused only while its file keeps the size, mtime, inode and change time it was
    parsed from; files changed in the last two seconds are not cached. The budget is the
    session's ``ferrospark.parquet.metadataCache.size`` (default 64m, 0 turns it off).
    """
    return dict(_native.parquet_metadata_cache_stats())


def clear_metadata_cache() -> None:
    """Forgets every cached Parquet footer (the next read parses them again)."""
    _native.clear_parquet_metadata_cache()
