"""Sessions: a configuration under Spark's key names, and every operator as a method."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from . import _native
from .aggregate import AggColumn, ColumnOrName, aggregate
from .column import Column
from .parquet import ParquetScan, Paths, read_parquet, scan_parquet


class Session:
    """Holds configuration (``spark.sql.*`` keys and ``ferrospark.*`` keys).

    >>> s = Session(conf={"ferrospark.batch.size": "4096"})
    >>> s.conf["ferrospark.batch.size"]
    '4096'
    """

    def __init__(self, conf: Mapping[str, object] | None = None) -> None:
        self._conf: dict[str, str] = {}
        for k, v in (conf or {}).items():
            self.set(k, v)

    def set(self, key: str, value: object) -> None:
        """Sets one key, validating it (bad values raise ``ConfigError``)."""
        text = str(value).lower() if isinstance(value, bool) else str(value)
        _native.validate_conf({key: text})
        self._conf[key] = text

    @property
    def conf(self) -> dict[str, str]:
        """A copy of the configuration."""
        return dict(self._conf)

    def read_parquet(
        self,
        path_or_paths: Paths,
        columns: Sequence[str] | None = None,
        filter: Column | str | None = None,
        batch_size: int | None = None,
    ) -> pa.RecordBatchReader:
        """:func:`ferrospark.read_parquet` with this session's configuration."""
        return read_parquet(path_or_paths, columns, filter, batch_size, session=self)

    def scan_parquet(
        self,
        path_or_paths: Paths,
        columns: Sequence[str] | None = None,
        filter: Column | str | None = None,
        batch_size: int | None = None,
    ) -> ParquetScan:
        """:func:`ferrospark.scan_parquet` with this session's configuration."""
        return scan_parquet(path_or_paths, columns, filter, batch_size, session=self)

    def aggregate(
        self,
        data: Any,
        by: ColumnOrName | Sequence[ColumnOrName] | None = None,
        aggs: AggColumn | Sequence[AggColumn] = (),
    ) -> pa.Table:
        """:func:`ferrospark.aggregate` with this session's configuration."""
        return aggregate(data, by, aggs, session=self)

    def window(self, data: Any, exprs: Any) -> pa.Table:
        """:func:`ferrospark.window` with this session's configuration."""
        from .window import window

        return window(data, exprs, session=self)

    def session_window(
        self, data: Any, time: Any, gap: str | Column, by: Any = (), aggs: Any = ()
    ) -> pa.Table:
        """:func:`ferrospark.session_window` with this session's configuration."""
        from .session_windows import session_window

        return session_window(data, time, gap, by, aggs, session=self)

    def join(
        self,
        left: Any,
        right: Any,
        on: Any = None,
        how: str = "inner",
        condition: Any = None,
        strategy: str = "auto",
    ) -> pa.Table:
        """:func:`ferrospark.join` with this session's configuration."""
        from .join import join

        return join(left, right, on, how, condition, strategy, session=self)

    def __repr__(self) -> str:
        return f"Session(conf={self._conf!r})"


_DEFAULT: Session | None = None


def default_session() -> Session:
    """The session module-level functions use."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Session()
    return _DEFAULT
