"""ferrospark on Spark: Spark distributes, ferrospark does the per-partition work.

``read_parquet`` plans splits on the driver from the Parquet footers (files and row-group
ranges, already pruned by the filter), hands one split to each Spark task, and each task
reads its split natively inside ``mapInArrow``: decode, filter and project happen in Rust,
and only the surviving rows cross into the JVM.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _native
from .column import Column, to_filter
from .parquet import Paths, _paths

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _spark_conf(spark: SparkSession) -> dict[str, str]:
    """The Spark settings ferrospark honours, as the session has them."""
    conf = {
        "spark.sql.session.timeZone": spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC",
        "spark.sql.parquet.filterPushdown": spark.conf.get("spark.sql.parquet.filterPushdown", "true")
        or "true",
    }
    max_bytes = spark.conf.get("spark.sql.files.maxPartitionBytes", None)
    if max_bytes:
        conf["spark.sql.files.maxPartitionBytes"] = max_bytes
    return conf


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark ``StructType`` of an Arrow schema already converted to Spark's Arrow types."""
    from pyspark.sql.pandas.types import from_arrow_schema

    try:
        return from_arrow_schema(schema, prefer_timestamp_ntz=True)
    except TypeError:  # older signature without the keyword
        return from_arrow_schema(schema)


def _read_splits_task(
    columns: list[str] | None,
    filter_sql: str | None,
    conf: dict[str, str],
    partition_fields: list[tuple[str, str]],
    batch_size: int,
):
    """The function each Spark task runs: read the splits it is given, natively."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        filt = _native.Expr.parse(filter_sql) if filter_sql else None
        for batch in batches:
            for text in batch.column("split").to_pylist():
                split = json.loads(text)
                scan = _native.scan_parquet_split(
                    split["path"],
                    split["row_groups"],
                    split["partition_values"],
                    partition_fields,
                    columns=columns,
                    filter=filt,
                    conf=conf,
                    batch_size=batch_size,
                    spark_types=True,
                )
                stream = scan.stream()
                try:
                    while (out := stream.next_batch()) is not None:
                        if out.num_rows:
                            yield out
                finally:
                    stream.close()

    return run


def read_parquet(
    spark: SparkSession,
    path_or_paths: Paths,
    columns: Sequence[str] | None = None,
    filter: Column | str | None = None,
) -> DataFrame:
    """Reads Parquet into a PySpark DataFrame, natively, one split per Spark task.

    The result equals ``spark.read.parquet(path).filter(filter).select(columns)`` and composes
    with the rest of a Spark job like any DataFrame.
    """
    conf = _spark_conf(spark)
    native_filter = to_filter(filter)
    cols = list(columns) if columns is not None else None
    scan = _native.scan_parquet(
        _paths(path_or_paths), columns=cols, filter=native_filter, conf=conf, spark_types=True
    )
    schema = spark_schema(scan.schema())
    splits = scan.splits()
    if not splits:
        return spark.createDataFrame([], schema)
    batch_size = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000") or 10000)
    task = _read_splits_task(
        cols,
        str(native_filter) if native_filter is not None else None,
        conf,
        scan.partition_fields(),
        max(batch_size, 1),
    )
    rows = [(i, json.dumps(s)) for i, s in enumerate(splits)]
    plan = spark.sparkContext.parallelize(rows, numSlices=len(rows)).toDF("id INT, split STRING")
    return plan.mapInArrow(task, schema)


__all__ = ["read_parquet", "spark_schema"]
