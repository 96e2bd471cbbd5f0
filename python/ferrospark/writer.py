"""``df.write``: PySpark's ``DataFrameWriter`` for Parquet tables and files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _native

if TYPE_CHECKING:
    from .dataframe import DataFrame


class DataFrameWriter:
    """Writes a DataFrame's rows: ``saveAsTable``, ``insertInto``, ``parquet``, ``save``.

    Rows are written as snappy Parquet into a hidden staging directory and renamed into
    place once all are written, then the catalog changes in one transaction: a write that
    fails (or is killed) leaves what readers see unchanged.
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

    def parquet(
        self,
        path: str,
        mode: str | None = None,
        partitionBy: str | list[str] | None = None,
        compression: str | None = None,
    ) -> None:
        """Writes Parquet files under ``path`` (snappy), outside any catalog."""
        self.mode(mode)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        if compression not in (None, "snappy"):
            from .errors import UnsupportedError

            raise UnsupportedError(f"compression {compression!r}: ferrospark writes snappy Parquet")
        _native.write_parquet(self._df._plan, str(path), self._mode, self._partition_by)

    def save(
        self, path: str | None = None, format: str | None = None, mode: str | None = None, **options: Any
    ) -> None:
        """Writes Parquet files under ``path``."""
        fmt = (format or self._format or "parquet").lower()
        if fmt != "parquet" or path is None:
            from .errors import UnsupportedError

            raise UnsupportedError(f"save to format {fmt!r}: ferrospark writes Parquet files to a path")
        self.parquet(path, mode=mode)


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
        """Partition columns (names)."""
        self._writer.partitionBy(*[c if isinstance(c, str) else str(c) for c in (col, *cols)])
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
