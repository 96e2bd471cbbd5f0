"""Partition transforms of ``pyspark.sql.functions.partitioning`` (``years``, ``months``,
``days``, ``hours``, ``bucket``), also under their deprecated top-level names in
:mod:`ferrospark.functions`.

A transform means something only inside ``df.writeTo(table).partitionedBy(...)``, as in
Spark: anywhere else it raises ``PARTITION_TRANSFORM_EXPRESSION_NOT_IN_PARTITIONED_BY``. The
session catalog takes ``bucket`` (a layout for a cluster's joins: the rows are written as
they are) and refuses the time transforms with ``UNSUPPORTED_PARTITION_TRANSFORM``, as
Spark's session catalog does."""

from __future__ import annotations

from typing import Any

from ._function_args import ColumnOrName
from .column import Column
from .errors import AnalysisError


class PartitionTransform(Column):
    """A partition transform: ``name(column)``, or ``bucket(n, column)``."""

    def __init__(self, name: str, column: ColumnOrName, buckets: int | None = None) -> None:
        self.transform = name
        self.column_name = column if isinstance(column, str) else str(column)
        self.buckets = buckets

    def __str__(self) -> str:
        if self.transform == "bucket":
            return f"bucket({self.buckets}, {self.column_name})"
        return f"{self.transform}({self.column_name})"

    def __repr__(self) -> str:
        return f"Column<'{self}'>"

    @property
    def _expr(self) -> Any:  # type: ignore[override]
        raise AnalysisError(
            f'[PARTITION_TRANSFORM_EXPRESSION_NOT_IN_PARTITIONED_BY] The expression "{self}" must be '
            "inside 'partitionedBy'. SQLSTATE: 42S23"
        )


def years(col: ColumnOrName) -> Column:
    """Partition by the year of a date or timestamp (``writeTo(...).partitionedBy``)."""
    return PartitionTransform("years", col)


def months(col: ColumnOrName) -> Column:
    """Partition by the month of a date or timestamp (``writeTo(...).partitionedBy``)."""
    return PartitionTransform("months", col)


def days(col: ColumnOrName) -> Column:
    """Partition by the day of a date or timestamp (``writeTo(...).partitionedBy``)."""
    return PartitionTransform("days", col)


def hours(col: ColumnOrName) -> Column:
    """Partition by the hour of a timestamp (``writeTo(...).partitionedBy``)."""
    return PartitionTransform("hours", col)


def bucket(numBuckets: Column | int, col: ColumnOrName) -> Column:  # noqa: N803 - PySpark's name
    """Partition by a hash of the column into ``numBuckets`` buckets
    (``writeTo(...).partitionedBy``)."""
    if isinstance(numBuckets, Column) and str(numBuckets).isdigit():
        numBuckets = int(str(numBuckets))  # F.lit(4)
    if not isinstance(numBuckets, int):
        raise AnalysisError(f"[NOT_COLUMN_OR_INT] numBuckets must be a Column or an int, got {numBuckets!r}")
    return PartitionTransform("bucket", col, numBuckets)
