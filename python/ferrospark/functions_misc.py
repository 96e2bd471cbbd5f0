"""Predicates and calls by name of ``pyspark.sql.functions`` (``equal_null``,
``call_function``), re-exported by :mod:`ferrospark.functions`."""

from __future__ import annotations

import warnings
from typing import Any

from ._function_args import ColumnOrName, _c, _call, _call_mixed, _l
from .column import Column


def equal_null(col1: ColumnOrName, col2: ColumnOrName) -> Column:
    """``col1 <=> col2``: true when both are NULL, false when one is, else ``=``."""
    return Column(_c(col1)._expr.binary("<=>", _c(col2)._expr))


def call_function(funcName: str, *cols: ColumnOrName) -> Column:  # noqa: N803 - PySpark's name
    """The SQL function ``funcName`` over ``cols`` (``str``: column names), as
    ``expr("funcName(...)")`` would call it: ``call_function("upper", "s")``."""
    return _call(funcName, *cols)


def current_database() -> Column:
    """The session's current database (``USE db``), as Spark names it: ``current_schema()``."""
    return _call("current_database")


def current_schema() -> Column:
    """:func:`current_database`."""
    return _call("current_schema")


def current_path() -> Column:
    """The function resolution path: the built-in and session functions, then the current
    database's."""
    return _call("current_path")


def version() -> Column:
    """The Spark version whose answers ferrospark gives, then ferrospark's own version."""
    return _call("version")


def uniform(min: Any, max: Any, seed: Any = None) -> Column:  # noqa: A002 - PySpark's names
    """A value drawn uniformly from [min, max), of the bounds' type, Spark's seeded sequence."""
    args = [_l(min), _l(max)] + ([] if seed is None else [_l(seed)])
    return _call_mixed("uniform", *args)


def randstr(length: Any, seed: Any = None) -> Column:
    """A string of ``length`` random characters of ``0-9a-zA-Z``, Spark's seeded sequence."""
    args = [_l(length)] + ([] if seed is None else [_l(seed)])
    return _call_mixed("randstr", *args)


def _aes_args(input: ColumnOrName, key: ColumnOrName, *rest: tuple[Any, str]) -> list[Column]:  # noqa: A002
    # PySpark's defaults: mode GCM, padding DEFAULT, no IV, no AAD (as empty text).
    return [_c(input), _c(key)] + [_c(v) if v is not None else _l(default) for v, default in rest]


def aes_encrypt(
    input: ColumnOrName,  # noqa: A002 - PySpark's name
    key: ColumnOrName,
    mode: ColumnOrName | None = None,
    padding: ColumnOrName | None = None,
    iv: ColumnOrName | None = None,
    aad: ColumnOrName | None = None,
) -> Column:
    """``input`` encrypted with AES under ``key`` (16, 24 or 32 bytes): ``mode`` ``GCM``
    (default; IV ++ ciphertext ++ tag, ``aad`` authenticated), ``CBC`` (IV ++ ciphertext) or
    ``ECB``; an ``iv`` not given is drawn at random, as Spark draws it."""
    args = _aes_args(input, key, (mode, "GCM"), (padding, "DEFAULT"), (iv, ""), (aad, ""))
    return _call_mixed("aes_encrypt", *args)


def aes_decrypt(
    input: ColumnOrName,  # noqa: A002 - PySpark's name
    key: ColumnOrName,
    mode: ColumnOrName | None = None,
    padding: ColumnOrName | None = None,
    aad: ColumnOrName | None = None,
) -> Column:
    """The bytes :func:`aes_encrypt` encrypted (by Spark or here), decrypted; a wrong key or
    damaged input raises ``AES_CRYPTO_ERROR``."""
    args = _aes_args(input, key, (mode, "GCM"), (padding, "DEFAULT"), (aad, ""))
    return _call_mixed("aes_decrypt", *args)


def try_aes_decrypt(
    input: ColumnOrName,  # noqa: A002 - PySpark's name
    key: ColumnOrName,
    mode: ColumnOrName | None = None,
    padding: ColumnOrName | None = None,
    aad: ColumnOrName | None = None,
) -> Column:
    """:func:`aes_decrypt`, NULL where it would raise."""
    args = _aes_args(input, key, (mode, "GCM"), (padding, "DEFAULT"), (aad, ""))
    return _call_mixed("try_aes_decrypt", *args)


def years(col: ColumnOrName) -> Column:
    """Deprecated in PySpark 4.0 for ``partitioning.years``: partition by the year
    (``writeTo(...).partitionedBy``)."""
    from . import functions_partitioning

    warnings.warn("Deprecated in 4.0.0, use partitioning.years instead.", FutureWarning, stacklevel=2)
    return functions_partitioning.years(col)


def months(col: ColumnOrName) -> Column:
    """Deprecated in PySpark 4.0 for ``partitioning.months``."""
    from . import functions_partitioning

    warnings.warn("Deprecated in 4.0.0, use partitioning.months instead.", FutureWarning, stacklevel=2)
    return functions_partitioning.months(col)


def days(col: ColumnOrName) -> Column:
    """Deprecated in PySpark 4.0 for ``partitioning.days``."""
    from . import functions_partitioning

    warnings.warn("Deprecated in 4.0.0, use partitioning.days instead.", FutureWarning, stacklevel=2)
    return functions_partitioning.days(col)


def hours(col: ColumnOrName) -> Column:
    """Deprecated in PySpark 4.0 for ``partitioning.hours``."""
    from . import functions_partitioning

    warnings.warn("Deprecated in 4.0.0, use partitioning.hours instead.", FutureWarning, stacklevel=2)
    return functions_partitioning.hours(col)


def bucket(numBuckets: Column | int, col: ColumnOrName) -> Column:  # noqa: N803 - PySpark's name
    """Deprecated in PySpark 4.0 for ``partitioning.bucket``."""
    from . import functions_partitioning

    warnings.warn("Deprecated in 4.0.0, use partitioning.bucket instead.", FutureWarning, stacklevel=2)
    return functions_partitioning.bucket(numBuckets, col)
