"""ferrospark: Spark SQL's physical execution layer, native in Rust over Arrow.

>>> import ferrospark as fs
>>> reader = fs.read_parquet("lineitem/", columns=["l_extendedprice"],
...                          filter="l_shipdate >= DATE '1995-01-01' AND l_quantity < 24")  # doctest: +SKIP
"""

from __future__ import annotations

import os as _os
import warnings as _warnings

# The native allocator (mimalloc) keeps freed pages for a second before returning them to the
# OS, so back-to-back operators reuse memory instead of page-faulting it in again (15-20% of
# a large aggregation's time). Must be set before the extension loads; an explicit setting wins.
_os.environ.setdefault("MIMALLOC_PURGE_DELAY", "1000")

from . import _native  # noqa: E402
from . import aggregate as _aggregate
from .aggregate import *  # noqa: F403 - the aggregate functions (fs.sum, fs.count, ...)
from .column import Column, col, column, expr, lit
from .errors import (
    AnalysisError,
    ConfigError,
    FerroError,
    FerroIOError,
    MemoryLimitError,
    ParquetError,
    PathNotFoundError,
    SchemaError,
    SparkArithmeticError,
    UnsupportedError,
)
from .join import join, last_join_metrics, last_join_plan
from .parquet import ParquetScan, read_parquet, scan_metrics, scan_parquet
from .session import Session, default_session
from .session_windows import session_window
from .window import (
    Window,
    WindowSpec,
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
    "ConfigError",
    "FerroError",
    "FerroIOError",
    "MemoryLimitError",
    "ParquetError",
    "ParquetScan",
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
