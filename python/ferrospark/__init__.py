"""ferrospark: Spark SQL's physical execution layer, native in Rust over Arrow.

>>> import ferrospark as fs
>>> reader = fs.read_parquet("lineitem/", columns=["l_extendedprice"],
...                          filter="l_shipdate >= DATE '1995-01-01' AND l_quantity < 24")  # doctest: +SKIP
"""

from __future__ import annotations

import os as _os
import warnings as _warnings

# The native allocator (mimalloc) keeps the pages it frees instead of returning them to the
# OS, as DuckDB's buffer pool keeps its memory: on virtual machines a freshly faulted-in page
# costs so much that an operator run again (the next query, the next Spark task in this
# worker) took 2-3x longer when its memory had been handed back in between (measured with
# benches/compare.py, window workload: 2.1 s vs 0.68 s). The process keeps its peak memory,
# which ferrospark.memory.limit bounds; set MIMALLOC_PURGE_DELAY=1000 (milliseconds) before
# importing ferrospark to return freed memory after a second instead. Must be set before the
# extension loads; an explicit setting wins.
_os.environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")
# mimalloc commits its 1 GiB arenas up front by default, and this kernel's transparent huge
# pages (madvise mode) then back whatever an operator touches in 2 MiB pages: the process
# held 230 MiB at TPC-H Q12's peak against 152 MiB when arenas commit as used, for the same
# speed (Q1-Q22 within run-to-run noise; the hash-join workload 0.22 vs 0.23 s).
_os.environ.setdefault("MIMALLOC_ARENA_EAGER_COMMIT", "0")

from . import (
    _native,  # noqa: E402
    functions,  # noqa: E402 - PySpark's module of functions
)
from . import aggregate as _aggregate
from .aggregate import *  # noqa: F403 - the aggregate functions (fs.sum, fs.count, ...)
from .column import Column, col, column, expr, lit
from .dataframe import DataFrame, GroupedData, Row
from .errors import (
    AnalysisError,
    ConfigError,
    FerroError,
    FerroIOError,
    InternalError,
    MalformedRecordError,
    MemoryLimitError,
    MetastoreError,
    ParquetError,
    PathNotFoundError,
    PythonException,
    SchemaError,
    SparkArithmeticError,
    StateStoreError,
    UnsupportedError,
)
from .file_formats import CsvScan, FileScan, read_avro, read_csv, read_json, scan_avro, scan_csv, scan_json
from .join import join, last_join_metrics, last_join_plan
from .parquet import ParquetScan, read_parquet, scan_metrics, scan_parquet
from .session import Session, default_session
from .session_windows import session_window
from .window import (
    Window,
    WindowSpec,
    counter_diff,
    cume_dist,
    dense_rank,
    first_value,
    lag,
    last_value,
    last_window_metrics,
    last_window_plan,
    lead,
    nth_value,
    ntile,
    percent_rank,
    rank,
    row_number,
    window,
)

__version__: str = _native.__version__

if not _native.is_release_build():
    _warnings.warn(
        "ferrospark's native extension was built without optimisations and will be slow; "
        "rebuild with `maturin develop --release` (or `make build`).",
        RuntimeWarning,
        stacklevel=2,
    )

__all__ = [
    *_aggregate.__all__,
    "AnalysisError",
    "Column",
    "DataFrame",
    "GroupedData",
    "Row",
    "functions",
    "ConfigError",
    "FerroError",
    "FerroIOError",
    "InternalError",
    "MalformedRecordError",
    "MemoryLimitError",
    "MetastoreError",
    "StateStoreError",
    "ParquetError",
    "PythonException",
    "ParquetScan",
    "CsvScan",
    "FileScan",
    "read_avro",
    "read_csv",
    "read_json",
    "scan_avro",
    "scan_csv",
    "scan_json",
    "PathNotFoundError",
    "SchemaError",
    "Session",
    "join",
    "last_join_metrics",
    "last_join_plan",
    "SparkArithmeticError",
    "UnsupportedError",
    "Window",
    "WindowSpec",
    "__version__",
    "col",
    "column",
    "cume_dist",
    "dense_rank",
    "first_value",
    "last_value",
    "nth_value",
    "default_session",
    "expr",
    "lag",
    "last_window_metrics",
    "last_window_plan",
    "lead",
    "counter_diff",
    "lit",
    "ntile",
    "percent_rank",
    "rank",
    "read_parquet",
    "row_number",
    "scan_metrics",
    "scan_parquet",
    "session_window",
    "window",
]
