"""Values in and out of Python UDFs, as PySpark 4 converts them: a batch of argument columns
becomes what each kind of function is handed, and what it returns becomes an Arrow array of
the declared type.

Three result conversions, each PySpark's:

- Arrow-optimized row functions (``F.udf``'s default in Spark 4, ``useArrow=True``): text for
  ``string`` (``True`` is ``"true"``), the value's own type checked for binary, decimal,
  timestamp, map and struct, then Arrow's conversion; what Arrow refuses is cast (a safe cast:
  ``"5"`` is ``5``, an overflow fails).
- Pickled row functions (``useArrow=False``): Spark's ``EvaluatePython``: NULL where the value
  does not fit (a float for ``int``, an int for ``double``), integers wrapped to the width,
  Java's ``toString`` of anything for ``string`` (``1.0E10``, ``[1, 2]``, ``{a=1}``).
- pandas functions: a Series (a DataFrame for a struct) converted by Arrow without overflow
  checks, as ``spark.sql.execution.pandas.convertToArrowArraySafely=false`` does.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import decimal
import math
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ._types import spark_type_name
from .errors import FerroError

Batch = Callable[[pa.RecordBatch], pa.Array]


def name_of(f: Any) -> str:
    """A function's name as Spark shows it (``<lambda>`` for a lambda)."""
    return getattr(f, "__name__", None) or type(f).__name__


# -- values in -----------------------------------------------------------------------------


def _reader(t: pa.DataType) -> Callable[[Any], Any] | None:
    """How a value of ``to_pylist()`` becomes what PySpark passes (None: unchanged)."""
    if pa.types.is_timestamp(t):
        if t.tz is None:
            return None
        # PySpark's TimestampType.fromInternal: a naive datetime in the process's zone.
        return lambda v: _dt.datetime.fromtimestamp(v.timestamp()).replace(microsecond=v.microsecond)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _reader(t.value_type)
        return None if inner is None else (lambda v: [None if x is None else inner(x) for x in v])
    if pa.types.is_map(t):
        key = _reader(t.key_type) or (lambda x: x)
        value = _reader(t.item_type) or (lambda x: x)
        return lambda m: {key(a): (None if b is None else value(b)) for a, b in m}
    if pa.types.is_struct(t):
        from .dataframe import Row

        names = [f.name for f in t]
        readers = [_reader(f.type) for f in t]

        def row(d: dict[str, Any]) -> Any:
            values = [d[n] if r is None or d[n] is None else r(d[n]) for n, r in zip(names, readers)]
            return Row(values, names)

        return row
    return None


def _rows_of(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    columns = []
    for column in batch.columns:
        values = column.to_pylist()
        read = _reader(column.type)
        if read is not None:
            values = [None if v is None else read(v) for v in values]
        columns.append(values)
    if not columns:
        return [()] * batch.num_rows
    return list(zip(*columns))


# -- pickled results (Spark's EvaluatePython) ----------------------------------------------


def java_double(v: float) -> str:
    """Java's ``Double.toString``: ``1.0``, ``0.001``, ``1.0E7``, ``1.0E-4``, ``NaN``."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0 or 1e-3 <= abs(v) < 1e7:
        text = repr(v)
        return text if "." in text else text + ".0"
    sign, digits, exp = decimal.Decimal(repr(v)).as_tuple()
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + int(exp) - 1
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{power}"


def _java_text(v: Any) -> str:
    """``toString()`` of the Java value a Python result unpickles to."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, (list, tuple)) and not hasattr(v, "__fields__"):
        return "[" + ", ".join("null" if x is None else _java_text(x) for x in v) + "]"
    if isinstance(v, dict):
        items = (f"{_java_text(k)}={'null' if x is None else _java_text(x)}" for k, x in v.items())
        return "{" + ", ".join(items) + "}"
    return str(v)


def _wrapped_int(bits: int) -> Callable[[Any], Any]:
    span = 1 << bits

    def wrap(v: Any) -> Any:
        # A Python int unpickles to a Java Integer or Long (a BigInteger past 64 bits, NULL);
        # Spark narrows it to the declared width as Java's casts do.
        if isinstance(v, bool) or not isinstance(v, int) or not -(1 << 63) <= v < 1 << 63:
            return None
        return (v + span // 2) % span - span // 2

    return wrap


def _legacy_timestamp(t: pa.DataType) -> Callable[[Any], Any]:
    def micros(v: Any) -> int:
        # PySpark's TimestampType.toInternal: a naive datetime is local time.
        if t.tz is None:
            seconds = calendar.timegm(v.timetuple())
        elif v.tzinfo is not None:
            seconds = calendar.timegm(v.utctimetuple())
        else:
            seconds = int(time.mktime(v.timetuple()))
        return seconds * 1_000_000 + v.microsecond

    return micros


def _legacy_writer(t: pa.DataType) -> Callable[[Any], Any]:
    """How a pickled function's result becomes a value of ``t`` (None where Spark gives NULL)."""
    if pa.types.is_boolean(t):
        return lambda v: v if isinstance(v, bool) else None
    if pa.types.is_integer(t):
        return _wrapped_int(t.bit_width)
    if pa.types.is_floating(t):
        return lambda v: v if isinstance(v, float) else None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return lambda v: v if isinstance(v, str) else _java_text(v)
    if pa.types.is_decimal(t):
        quantum = decimal.Decimal(1).scaleb(-t.scale)
        return lambda v: (
            v.quantize(quantum, decimal.ROUND_HALF_UP) if isinstance(v, decimal.Decimal) else None
        )
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return lambda v: (
            bytes(v) if isinstance(v, (bytes, bytearray)) else v.encode() if isinstance(v, str) else None
        )
    if pa.types.is_date32(t):
        # DateType.toInternal: any date (or datetime) by its ordinal; anything else raises.
        return lambda v: _dt.date.fromordinal(v.toordinal())
    if pa.types.is_timestamp(t):
        return _legacy_timestamp(t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _legacy_writer(t.value_type)
        return lambda v: (
            [None if x is None else inner(x) for x in v] if isinstance(v, (list, tuple)) else None
        )
    if pa.types.is_map(t):
        key, item = _legacy_writer(t.key_type), _legacy_writer(t.item_type)
        return lambda v: (
            [(key(a), None if b is None else item(b)) for a, b in v.items()] if isinstance(v, dict) else None
        )
    if pa.types.is_struct(t):
        return _struct_writer(t, _legacy_writer)
    return lambda v: v


def _struct_writer(
    t: pa.DataType, writer: Callable[[pa.DataType], Callable[[Any], Any]]
) -> Callable[[Any], Any]:
    names = [f.name for f in t]
    writers = [writer(f.type) for f in t]

    def struct(v: Any) -> Any:
        if isinstance(v, dict):
            values = [v.get(n) for n in names]
        elif isinstance(v, tuple):
            if len(v) != len(names):
                raise FerroError(
                    f"[AXIS_LENGTH_MISMATCH] a struct of {len(names)} fields got {len(v)} values"
                )
            values = list(v)
        else:
            values = [getattr(v, "__dict__", {}).get(n) for n in names]
        return {n: None if x is None else w(x) for n, w, x in zip(names, writers, values)}

    return struct


def _legacy_array(values: list[Any], t: pa.DataType) -> pa.Array:
    write = _legacy_writer(t)
    converted = [None if v is None else write(v) for v in values]
    if pa.types.is_timestamp(t):
        return pa.array(converted, pa.int64()).cast(t)
    return pa.array(converted, t)


# -- Arrow-optimized results -----------------------------------------------------------------


def _checked(
    kinds: type | tuple[type, ...], then: Callable[[Any], Any], t: pa.DataType
) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if not isinstance(v, kinds):
            raise FerroError(
                f"[UDF_ARROW_TYPE_CONVERSION_ERROR] a {type(v).__name__} cannot be a {spark_type_name(t)}"
            )
        return then(v)

    return check


def _arrow_writer(t: pa.DataType) -> Callable[[Any], Any] | None:
    """PySpark's conversion before Arrow's for an Arrow-optimized function (None: Arrow's own)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return lambda v: (
            v if isinstance(v, str) else ("true" if v else "false") if isinstance(v, bool) else str(v)
        )
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _checked((bytes, bytearray), bytes, t)
    if pa.types.is_decimal(t):
        quantum = decimal.Decimal(1).scaleb(-t.scale)
        return _checked(decimal.Decimal, lambda v: None if v.is_nan() else v.quantize(quantum), t)
    if pa.types.is_timestamp(t):
        if t.tz is None:
            return _checked(_dt.datetime, lambda v: v, t)
        return _checked(_dt.datetime, lambda v: v.astimezone(_dt.timezone.utc), t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = _arrow_writer(t.value_type)
        if inner is None:
            return None
        return _checked((list, tuple), lambda v: [None if x is None else inner(x) for x in v], t)
    if pa.types.is_map(t):
        key = _arrow_writer(t.key_type) or (lambda x: x)
        item = _arrow_writer(t.item_type) or (lambda x: x)
        return _checked(dict, lambda v: [(key(a), None if b is None else item(b)) for a, b in v.items()], t)
    if pa.types.is_struct(t):
        return _struct_writer(t, lambda f: _arrow_writer(f) or (lambda x: x))
    return None


def _arrow_array(values: list[Any], t: pa.DataType) -> pa.Array:
    write = _arrow_writer(t)
    converted = values if write is None else [None if v is None else write(v) for v in values]
    try:
        return pa.array(converted, type=t)
    except pa.ArrowInvalid:
        return pa.array(converted).cast(t, safe=True)


def rows_function(func: Callable[..., Any], t: pa.DataType, arrow: bool) -> Batch:
    """A row-at-a-time function over batches, its results converted the Arrow-optimized way
    (``arrow``) or the pickled way."""
    to_array = _arrow_array if arrow else _legacy_array

    def run(batch: pa.RecordBatch) -> pa.Array:
        return to_array([func(*row) for row in _rows_of(batch)], t)

    return run


# -- pandas --------------------------------------------------------------------------------


def _session_tz(batch: pa.RecordBatch) -> str:
    meta = batch.schema.metadata or {}
    return meta.get(b"session_tz", b"UTC").decode()


def _series(column: pa.Array, tz: str) -> Any:
    """A column as the pandas value PySpark passes: a Series (timestamps as wall-clock times
    in the session time zone), or a DataFrame for a struct."""
    if pa.types.is_struct(column.type):
        import pandas as pd

        return pd.DataFrame({f.name: _series(column.field(i), tz) for i, f in enumerate(column.type)})
    if pa.types.is_timestamp(column.type) and column.type.tz is not None:
        return column.to_pandas().dt.tz_convert(tz).dt.tz_localize(None)
    return column.to_pandas()


def _from_pandas(result: Any, t: pa.DataType, rows: int, name: str, tz: str) -> pa.Array:
    import pandas as pd

    if isinstance(result, pd.DataFrame):
        if not pa.types.is_struct(t):
            raise FerroError(
                f"[INVALID_RETURN_TYPE] the pandas_udf {name} returned a DataFrame for {spark_type_name(t)}"
            )
        arrays = [_from_pandas(result[f.name], f.type, rows, name, tz) for f in t]
        return pa.StructArray.from_arrays(arrays, fields=list(t))
    if not isinstance(result, pd.Series):
        raise FerroError(
            f"[UDF_RETURN_TYPE] the pandas_udf {name} must return a pandas.Series, got {type(result).__name__}"
        )
    if len(result) != rows:
        raise FerroError(
            f"[SCHEMA_MISMATCH_FOR_PANDAS_UDF] the pandas_udf {name} returned {len(result)} values for {rows} rows"
        )
    if (
        pa.types.is_timestamp(t)
        and t.tz is not None
        and pd.api.types.is_datetime64_any_dtype(result.dtype)
        and getattr(result.dtype, "tz", None) is None
    ):
        result = result.dt.tz_localize(tz)
    return pa.Array.from_pandas(result, type=t, safe=False)


def series_function(func: Callable[..., Any], t: pa.DataType) -> Batch:
    """A pandas function from Series to a Series over batches."""

    def run(batch: pa.RecordBatch) -> pa.Array:
        tz = _session_tz(batch)
        result = func(*[_series(c, tz) for c in batch.columns])
        return _from_pandas(result, t, batch.num_rows, name_of(func), tz)

    return run


def series_iterator_function(func: Callable[..., Any], t: pa.DataType) -> Batch:
    """A pandas function over an iterator of Series, handed one batch per call."""

    def run(batch: pa.RecordBatch) -> pa.Array:
        import pandas as pd

        tz = _session_tz(batch)
        series = [_series(c, tz) for c in batch.columns]
        parts = list(func(iter([series[0] if len(series) == 1 else tuple(series)])))
        result = pd.concat(parts, ignore_index=True) if parts else pd.Series([], dtype=object)
        return _from_pandas(result, t, batch.num_rows, name_of(func), tz)

    return run


def group_function(func: Callable[..., Any], t: pa.DataType) -> Batch:
    """A grouped-aggregate pandas function over batches of groups: each row holds one
    group's argument rows as a list of structs (fields ``a0``, ``a1``, ...)."""

    def run(batch: pa.RecordBatch) -> pa.Array:
        tz = _session_tz(batch)
        groups = batch.column(0)
        out = []
        for i in range(len(groups)):
            rows = groups[i].values if groups[i].is_valid else pa.array([], groups.type.value_type)
            out.append(func(*[_series(rows.field(j), tz) for j in range(rows.type.num_fields)]))
        plain = [v.item() if hasattr(v, "item") and not isinstance(v, (list, dict)) else v for v in out]
        try:
            return pa.array(plain, t, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise FerroError(
                f"[UDF_RETURN_TYPE] the grouped-aggregate pandas_udf {name_of(func)} returned values "
                f"that are not {spark_type_name(t)}: {e}"
            ) from e

    return run
