"""Reading CSV: ``fs.read_csv`` (a streaming ``pyarrow.RecordBatchReader``) and
``fs.scan_csv`` (the planned scan, with ``metrics()``), with Spark's options and modes.

>>> reader = fs.read_csv("data/items.csv", schema="id INT, price DOUBLE", filter="price > 10")  # doctest: +SKIP
>>> fs.scan_metrics(reader)["rows_skipped_early"]                                          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _native
from .column import Column, to_filter
from .parquet import _READER_METRICS, Paths, _paths, native_batches

if TYPE_CHECKING:
    from .session import Session


def _option_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


class CsvScan:
    """A planned CSV scan: files listed, the schema given, read from the header or inferred.
    Nothing is converted until it is read."""

    def __init__(self, native: _native.CsvScan) -> None:
        self._native = native

    @property
    def schema(self) -> pa.Schema:
        """The output schema."""
        return self._native.schema()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        return native_batches(self._native)

    def to_reader(self) -> pa.RecordBatchReader:
        """A streaming reader; records are converted as batches are pulled."""
        reader = pa.RecordBatchReader.from_batches(self.schema, self._batches())
        _READER_METRICS[reader] = self.metrics
        return reader

    def read_all(self) -> pa.Table:
        """Reads everything into a table."""
        return pa.Table.from_batches(list(self._batches()), schema=self.schema)

    def metrics(self) -> dict[str, int]:
        """Files, bytes, rows read, rows skipped by the pushed filter before all their fields
        converted, fields not converted, malformed rows, rows returned."""
        return dict(self._native.metrics())


def scan_csv(
    path: Paths,
    schema: pa.Schema | str | None = None,
    filter: Column | str | None = None,
    header: bool = True,
    *,
    columns: Sequence[str] | None = None,
    session: Session | None = None,
    **options: Any,
) -> CsvScan:
    """Plans a CSV scan (see :func:`read_csv`)."""
    from .session import _ddl_schema, default_session

    s = session or default_session()
    if isinstance(schema, str):
        schema = _ddl_schema(schema)
    opts = {k: _option_text(v) for k, v in options.items()}
    opts["header"] = _option_text(header)
    native = _native.scan_csv(
        _paths(path),
        schema=schema,
        columns=list(columns) if columns is not None else None,
        filter=to_filter(filter),
        options=opts,
        conf=s.conf,
    )
    return CsvScan(native)


def read_csv(
    path: Paths,
    schema: pa.Schema | str | None = None,
    filter: Column | str | None = None,
    header: bool = True,
    *,
    columns: Sequence[str] | None = None,
    session: Session | None = None,
    **options: Any,
) -> pa.RecordBatchReader:
    """Reads CSV files as ``spark.read.csv`` does, as a streaming ``pyarrow.RecordBatchReader``.

    ``path`` is a file, a directory (hive ``key=value`` sub-directories become partition
    columns) or a list; ``.gz``, ``.bz2`` and ``.zst`` files are decompressed. ``schema`` is a
    ``pyarrow.Schema`` or DDL text (``"id INT, name STRING"``); a string column named by
    ``columnNameOfCorruptRecord`` (``_corrupt_record``) receives the text of malformed
    records. Without a schema the columns are named by the header (``_c0``... without one)
    and are strings, or typed with ``inferSchema=True``. Spark's options by Spark's names:
    ``sep``, ``quote``, ``escape``, ``comment``, ``nullValue``, ``emptyValue``, ``nanValue``,
    ``positiveInf``, ``negativeInf``, ``mode`` (PERMISSIVE, DROPMALFORMED, FAILFAST),
    ``ignoreLeadingWhiteSpace``, ``ignoreTrailingWhiteSpace``, ``multiLine``, ``lineSep``,
    ``samplingRatio``, ``encoding``. ``filter`` keeps the rows Spark's
    ``.filter(cond)`` keeps; each of its conjuncts is checked as soon as the fields it reads
    are converted, and a failing record converts no more fields
    (``spark.sql.csv.filterPushdown.enabled``). ``fs.scan_metrics(reader)`` counts them.
    """
    return scan_csv(path, schema, filter, header, columns=columns, session=session, **options).to_reader()


__all__ = ["CsvScan", "read_csv", "scan_csv"]
