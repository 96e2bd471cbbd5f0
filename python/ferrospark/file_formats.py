"""Reading CSV, JSON and Avro: ``fs.read_csv`` / ``fs.read_json`` / ``fs.read_avro`` (a
streaming ``pyarrow.RecordBatchReader``) and ``fs.scan_csv`` / ``fs.scan_json`` /
``fs.scan_avro`` (the planned scan, with ``metrics()``), with Spark's options and modes.

>>> reader = fs.read_csv("data/items.csv", schema="id INT, price DOUBLE", filter="price > 10")  # doctest: +SKIP
>>> fs.scan_metrics(reader)["rows_skipped_early"]                                          # doctest: +SKIP
>>> fs.read_json("data/events.json", filter="kind = 'click'").read_all()                  # doctest: +SKIP
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


class FileScan:
    """A planned CSV, JSON or Avro scan: files listed, the schema given, read from a CSV
    header or an Avro file, or inferred. Nothing is converted until it is read."""

    def __init__(self, native: _native.FileScan) -> None:
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


def _scan(
    format: str,
    path: Paths,
    schema: pa.Schema | str | None,
    filter: Column | str | None,
    columns: Sequence[str] | None,
    session: Session | None,
    options: dict[str, Any],
) -> FileScan:
    from .session import _ddl_schema, default_session

    s = session or default_session()
    if isinstance(schema, str):
        schema = _ddl_schema(schema)
    native = _native.scan_format(
        format,
        _paths(path),
        schema=schema,
        columns=list(columns) if columns is not None else None,
        filter=to_filter(filter),
        options={k: _option_text(v) for k, v in options.items()},
        conf=s.conf,
    )
    return FileScan(native)


def scan_csv(
    path: Paths,
    schema: pa.Schema | str | None = None,
    filter: Column | str | None = None,
    header: bool = True,
    *,
    columns: Sequence[str] | None = None,
    session: Session | None = None,
    **options: Any,
) -> FileScan:
    """Plans a CSV scan (see :func:`read_csv`)."""
    return _scan("csv", path, schema, filter, columns, session, {**options, "header": header})


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


def scan_json(
    path: Paths,
    schema: pa.Schema | str | None = None,
    filter: Column | str | None = None,
    *,
    columns: Sequence[str] | None = None,
    session: Session | None = None,
    **options: Any,
) -> FileScan:
    """Plans a JSON scan (see :func:`read_json`)."""
    return _scan("json", path, schema, filter, columns, session, options)


def read_json(
    path: Paths,
    schema: pa.Schema | str | None = None,
    filter: Column | str | None = None,
    *,
    columns: Sequence[str] | None = None,
    session: Session | None = None,
    **options: Any,
) -> pa.RecordBatchReader:
    """Reads JSON files as ``spark.read.json`` does, as a streaming ``pyarrow.RecordBatchReader``.

    A file holds a JSON value per line (one value per file with ``multiLine=True``); an object
    is a row and an array of objects a row per object; anything else is a malformed record.
    ``path`` is a file, a directory (hive partitions too) or a list; ``.gz``, ``.bz2`` and
    ``.zst`` files are decompressed. ``schema`` is a ``pyarrow.Schema`` or DDL text; without
    it the schema is inferred as Spark infers it (fields sorted by name, types merged across
    records, ``_corrupt_record`` added when a record is malformed). Spark's options by
    Spark's names: ``mode``, ``columnNameOfCorruptRecord``, ``primitivesAsString``,
    ``prefersDecimal``, ``allowComments``, ``allowUnquotedFieldNames``, ``allowSingleQuotes``,
    ``allowNumericLeadingZeros``, ``allowNonNumericNumbers``,
    ``allowBackslashEscapingAnyCharacter``, ``allowUnquotedControlChars``, ``multiLine``,
    ``samplingRatio``, ``dropFieldIfAllNull``, ``encoding``. ``filter`` keeps the rows Spark's
    ``.filter(cond)`` keeps; its fields convert first and a record failing a conjunct
    converts no more fields (``spark.sql.json.filterPushdown.enabled``).
    """
    return scan_json(path, schema, filter, columns=columns, session=session, **options).to_reader()


def scan_avro(
    path: Paths,
    columns: Sequence[str] | None = None,
    filter: Column | str | None = None,
    *,
    schema: pa.Schema | str | None = None,
    session: Session | None = None,
    **options: Any,
) -> FileScan:
    """Plans an Avro scan (see :func:`read_avro`)."""
    return _scan("avro", path, schema, filter, columns, session, options)


def read_avro(
    path: Paths,
    columns: Sequence[str] | None = None,
    filter: Column | str | None = None,
    *,
    schema: pa.Schema | str | None = None,
    session: Session | None = None,
    **options: Any,
) -> pa.RecordBatchReader:
    """Reads Avro object container files as ``spark.read.format("avro")`` does, as a streaming
    ``pyarrow.RecordBatchReader``.

    Every codec Avro files use is read (null, deflate, snappy, zstandard, bzip2, xz). The
    columns are the first file's, in Spark's types (enums as strings, fixed as binary,
    ``date``, ``timestamp-millis`` / ``-micros`` as timestamps, ``local-timestamp-*`` as
    ``timestamp_ntz``, ``decimal`` as decimals); ``avroSchema`` (Avro JSON) or
    ``avroSchemaUrl`` gives a reader schema the records are resolved to (fields added with
    their defaults, dropped, reordered, types promoted). Only the ``columns`` asked for (and
    the filter's) are decoded; ``filter`` keeps the rows Spark's ``.filter(cond)`` keeps and
    is applied to each decoded block. ``ignoreExtension=False`` reads ``*.avro`` files only.
    """
    return scan_avro(path, columns, filter, schema=schema, session=session, **options).to_reader()


CsvScan = FileScan
"""The planned scan :func:`scan_csv` returns (a :class:`FileScan`)."""

__all__ = ["CsvScan", "FileScan", "read_avro", "read_csv", "read_json", "scan_avro", "scan_csv", "scan_json"]
