"""``df.write``: PySpark's ``DataFrameWriter`` for tables and files (Parquet, JSON, CSV,
text)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _native

if TYPE_CHECKING:
    from .dataframe import DataFrame


class DataFrameWriter:
    """Writes a DataFrame's rows: ``saveAsTable``, ``insertInto``, ``parquet``, ``json``,
    ``csv``, ``text``, ``save``.

    Rows are written (snappy Parquet, or JSON Lines / CSV / text as Spark writes them) into
    a hidden staging directory and renamed into place once all are written, then the catalog
    changes in one transaction: a write that fails (or is killed) leaves what readers see
    unchanged.
    """

    def __init__(self, df: DataFrame) -> None:
        self._df = df
        self._mode = "errorifexists"
        self._format: str | None = None
        self._partition_by: list[str] = []
        self._options: dict[str, str] = {}

    def mode(self, saveMode: str | None) -> DataFrameWriter:
        """``error`` / ``errorifexists`` (the default), ``append``, ``overwrite`` or ``ignore``."""
        if saveMode is not None:
            self._mode = saveMode
        return self

    def format(self, source: str) -> DataFrameWriter:
        """The table's format (``parquet``)."""
        self._format = source
        return self

    def option(self, key: str, value: Any) -> DataFrameWriter:
        """One option, kept with the table."""
        self._options[key] = str(value).lower() if isinstance(value, bool) else str(value)
        return self

    def options(self, **options: Any) -> DataFrameWriter:
        """Several options."""
        for k, v in options.items():
            self.option(k, v)
        return self

    def partitionBy(self, *cols: str | list[str]) -> DataFrameWriter:
        """Partition columns: a directory ``col=value`` per value."""
        flat: list[str] = []
        for c in cols:
            flat.extend(c if isinstance(c, (list, tuple)) else [c])
        self._partition_by = flat
        return self

    def saveAsTable(
        self,
        name: str,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        **options: Any,
    ) -> None:
        """Writes the rows as table ``name``: created if missing; if it exists, per the
        mode: an error, appended (columns by name), replaced, or left alone."""
        self.mode(mode)
        if format is not None:
            self._format = format
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        self.options(**options)
        _native.save_as_table(
            self._df._plan, name, self._mode, self._format, self._partition_by, self._options
        )

    def insertInto(self, tableName: str, overwrite: bool | None = None) -> None:
        """Inserts the rows into an existing table, columns by position (``INSERT INTO``);
        with ``overwrite`` (or mode ``overwrite``) they replace its rows."""
        ow = self._mode == "overwrite" if overwrite is None else overwrite
        _native.insert_into(self._df._plan, tableName, ow)

    def _write_path(self, path: str, fmt: str, mode: str | None, **options: Any) -> None:
        self.mode(mode)
        self.options(**{k: v for k, v in options.items() if v is not None})
        _native.write_path(self._df._plan, str(path), self._mode, fmt, self._partition_by, self._options)

    def parquet(
        self,
        path: str,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        compression: str | None = None,
    ) -> None:
        """Writes Parquet files under ``path`` (snappy), outside any catalog."""
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        if compression not in (None, "snappy"):
            from .errors import UnsupportedError

            raise UnsupportedError(f"compression {compression!r}: ferrospark writes snappy Parquet")
        self._write_path(path, "parquet", mode)

    def json(
        self,
        path: str,
        mode: str | None = None,
        compression: str | None = None,
        dateFormat: str | None = None,  # noqa: N803 - PySpark's names
        timestampFormat: str | None = None,  # noqa: N803
        lineSep: str | None = None,  # noqa: N803
        encoding: str | None = None,
        ignoreNullFields: bool | str | None = None,  # noqa: N803
    ) -> None:
        """Writes JSON Lines files under ``path``, one object per row, as Spark writes them
        (NULL fields left out unless ``ignoreNullFields=False``)."""
        _utf8(encoding)
        self._write_path(
            path,
            "json",
            mode,
            compression=compression,
            dateFormat=dateFormat,
            timestampFormat=timestampFormat,
            lineSep=lineSep,
            ignoreNullFields=ignoreNullFields,
        )

    def csv(
        self,
        path: str,
        mode: str | None = None,
        compression: str | None = None,
        sep: str | None = None,
        quote: str | None = None,
        escape: str | None = None,
        header: bool | str | None = None,
        nullValue: str | None = None,  # noqa: N803 - PySpark's names
        escapeQuotes: bool | str | None = None,  # noqa: N803
        quoteAll: bool | str | None = None,  # noqa: N803
        dateFormat: str | None = None,  # noqa: N803
        timestampFormat: str | None = None,  # noqa: N803
        ignoreLeadingWhiteSpace: bool | str | None = None,  # noqa: N803
        ignoreTrailingWhiteSpace: bool | str | None = None,  # noqa: N803
        charToEscapeQuoteEscaping: str | None = None,  # noqa: N803
        encoding: str | None = None,
        emptyValue: str | None = None,  # noqa: N803
        lineSep: str | None = None,  # noqa: N803
    ) -> None:
        """Writes CSV files under ``path`` with Spark's options (no header by default, values
        trimmed, quoted when they hold the separator, a quote or a line break)."""
        _utf8(encoding)
        if charToEscapeQuoteEscaping is not None:
            from .errors import UnsupportedError

            raise UnsupportedError("the CSV option charToEscapeQuoteEscaping is not supported")
        self._write_path(
            path,
            "csv",
            mode,
            compression=compression,
            sep=sep,
            quote=quote,
            escape=escape,
            header=header,
            nullValue=nullValue,
            escapeQuotes=escapeQuotes,
            quoteAll=quoteAll,
            dateFormat=dateFormat,
            timestampFormat=timestampFormat,
            ignoreLeadingWhiteSpace=ignoreLeadingWhiteSpace,
            ignoreTrailingWhiteSpace=ignoreTrailingWhiteSpace,
            emptyValue=emptyValue,
            lineSep=lineSep,
        )

    def text(self, path: str, compression: str | None = None, lineSep: str | None = None) -> None:  # noqa: N803
        """Writes the one string column as lines of text files under ``path``."""
        self._write_path(path, "text", None, compression=compression, lineSep=lineSep)

    def save(
        self,
        path: str | None = None,
        format: str | None = None,  # noqa: A002 - PySpark's name
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,  # noqa: N803
        **options: Any,
    ) -> None:
        """Writes files of the format (``parquet`` by default; ``json``, ``csv``, ``text``)
        under ``path``."""
        fmt = (format or self._format or "parquet").lower()
        if path is None:
            from .errors import UnsupportedError

            raise UnsupportedError(
                "save() without a path: ferrospark writes files to a path or tables by name"
            )
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        self._write_path(path, fmt, mode, **options)


def _utf8(encoding: str | None) -> None:
    if encoding is not None and encoding.replace("-", "").lower() != "utf8":
        from .errors import UnsupportedError

        raise UnsupportedError(f"encoding {encoding!r}: ferrospark writes UTF-8")


class DataFrameWriterV2:
    """``df.writeTo(table)``: Spark's v2 writer over the same table writes as ``df.write``."""

    def __init__(self, df: DataFrame, table: str) -> None:
        self._writer = DataFrameWriter(df)
        self._df = df
        self._table = table

    def using(self, provider: str) -> DataFrameWriterV2:
        """The table's format (``parquet``)."""
        self._writer.format(provider)
        return self

    def option(self, key: str, value: Any) -> DataFrameWriterV2:
        """One option, kept with the table."""
        self._writer.option(key, value)
        return self

    def options(self, **options: Any) -> DataFrameWriterV2:
        """Several options."""
        self._writer.options(**options)
        return self

    def tableProperty(self, property: str, value: str) -> DataFrameWriterV2:  # noqa: A002 - PySpark's name
        """A table property, kept with the table's options."""
        self._writer.option(property, value)
        return self

    def partitionedBy(self, col: Any, *cols: Any) -> DataFrameWriterV2:
        """Partition columns (names or columns) and transforms, as Spark's session catalog
        takes them: ``bucket(n, col)`` is accepted (the rows are written as they are; buckets
        lay out files for a cluster's joins), ``years`` / ``months`` / ``days`` / ``hours``
        are refused with Spark's ``UNSUPPORTED_PARTITION_TRANSFORM``."""
        from .functions_partitioning import PartitionTransform

        names = []
        for c in (col, *cols):
            if isinstance(c, PartitionTransform):
                if c.transform != "bucket":
                    from .errors import UnsupportedError

                    raise UnsupportedError(
                        f"[UNSUPPORTED_PARTITION_TRANSFORM] Unsupported partition transform: `{c}`. The "
                        "supported transforms are `identity`, `bucket`, and `clusterBy`. Ensure your "
                        "transform expression uses one of these. SQLSTATE: 0A000"
                    )
                continue
            names.append(c if isinstance(c, str) else str(c))
        if names:
            self._writer.partitionBy(*names)
        return self

    def create(self) -> None:
        """Creates the table from the rows (an error if it exists)."""
        self._writer.mode("errorifexists").saveAsTable(self._table)

    def createOrReplace(self) -> None:
        """Creates the table, or replaces one of that name."""
        self._writer.mode("overwrite").saveAsTable(self._table)

    def replace(self) -> None:
        """Replaces an existing table (an error if there is none)."""
        self._df._session.table(self._table)  # raises TABLE_OR_VIEW_NOT_FOUND when absent
        self._writer.mode("overwrite").saveAsTable(self._table)

    def append(self) -> None:
        """Appends the rows to an existing table, columns by name."""
        self._df._session.table(self._table)
        self._writer.mode("append").saveAsTable(self._table)

    def overwritePartitions(self) -> None:
        """Replaces the table's rows with these (every partition they touch)."""
        self._writer.insertInto(self._table, overwrite=True)
