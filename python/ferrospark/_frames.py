"""Arrow data and unread Parquet scans as DataFrames of a session: the module-level operators
(``fs.aggregate``, ``fs.join``) build their query through it, so each is a thin
layer over the same plan, optimizer and executor as ``Session.sql``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from .dataframe import DataFrame
    from .session import Session


def arrow_stream(data: Any) -> Any:
    """Any Arrow-capable object as something exposing ``__arrow_c_stream__``."""
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if hasattr(data, "__arrow_c_stream__"):
        return data
    if hasattr(data, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(data)])
    raise TypeError(
        f"cannot read {type(data).__name__!r} as Arrow data: pass a pyarrow Table, RecordBatch, "
        "RecordBatchReader or any object with __arrow_c_stream__"
    )


def frame_of(data: Any, session: Session) -> DataFrame:
    """``data`` as a DataFrame of ``session``. A scan from ``fs.scan_parquet`` (or a reader of
    ``fs.read_parquet`` nothing was pulled from yet) becomes a Parquet relation with its filter
    and columns, so the optimizer prunes and pushes into it as into ``s.read.parquet``; other
    data is read once into an in-memory relation."""
    from .parquet import unread_scan_of

    scan = unread_scan_of(data)
    if scan is not None:
        paths, columns, condition = scan._source
        df = session.read.parquet(paths)
        if condition is not None:
            df = df.filter(condition)
        return df.select(*columns) if columns is not None else df
    return session.createDataFrame(arrow_stream(data))


def operators(df: DataFrame) -> list[tuple[str, str, dict[str, int]]]:
    """The operators of ``df``'s last run, ``(name, description, metrics)``, in the order
    they ran (children before parents)."""
    return list(reversed(df._plan.executed_operators()))


__all__ = ["arrow_stream", "frame_of", "operators"]
