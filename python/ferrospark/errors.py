"""The ferrospark exception family. Every error ferrospark raises is a ``FerroError``."""

from __future__ import annotations


class FerroError(Exception):
    """Base class of every ferrospark error."""


class AnalysisError(FerroError):
    """The query cannot be analysed: unknown column, bad SQL text, type mismatch."""


class SchemaError(FerroError):
    """Schemas disagree: across files, or with what was asked for."""


class ParquetError(FerroError):
    """A Parquet file is corrupt, truncated or not Parquet at all."""


class MalformedRecordError(FerroError):
    """A record of a text file does not parse (mode FAILFAST); the message names the file
    and line, and says how to read past it."""


class PathNotFoundError(FerroError, FileNotFoundError):
    """A path given to ferrospark does not exist."""


class FerroIOError(FerroError, OSError):
    """An I/O failure other than a missing path."""


class ConfigError(FerroError, ValueError):
    """An invalid configuration value or option."""


class SparkArithmeticError(FerroError, ArithmeticError):
    """ANSI-mode runtime failure: overflow, division by zero, invalid cast."""


class UnsupportedError(FerroError, NotImplementedError):
    """A valid request ferrospark does not support."""


class MemoryLimitError(FerroError, MemoryError):
    """Memory could not be granted and spilling could not help."""


class MetastoreError(FerroError):
    """The metastore could not be read or changed: a file that is not a metastore, one
    written by a newer ferrospark, or one locked by other processes for too long. Nothing of
    the failed command was applied."""


class StateStoreError(FerroError):
    """A streaming state store's file or version cannot be used: a corrupt or truncated
    delta or snapshot file (named in the message), a missing version, or a version older
    than those kept. No state was changed; restore the checkpoint or start a new one."""


class InternalError(FerroError):
    """A bug in ferrospark: a broken invariant or a Rust panic inside a native call.

    The message names what went wrong (the panic's message and location) and asks to report
    it. The process and the session stay usable: the failed call is the only one affected.
    """


class PythonException(FerroError):
    """A Python function the query called (a ``F.udf``, ``pandas_udf`` or one registered with
    ``spark.udf.register``) raised. The message names the function and carries the Python
    exception and its traceback; the session stays usable."""


__all__ = [
    "AnalysisError",
    "ConfigError",
    "FerroError",
    "FerroIOError",
    "InternalError",
    "MalformedRecordError",
    "MemoryLimitError",
    "MetastoreError",
    "StateStoreError",
    "ParquetError",
    "PathNotFoundError",
    "PythonException",
    "SchemaError",
    "SparkArithmeticError",
    "UnsupportedError",
]
