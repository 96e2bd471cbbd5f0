"""Comparison helpers: turn Arrow tables and Spark rows into comparable Python tuples.

Normalisation rules (the same on both sides, driven by each side's schema):
* NULL -> None
* float NaN -> ``NAN`` token, -0.0 -> ``NEG_ZERO`` token (so the sign of zero is checked and
  NaN compares equal to NaN); other floats stay floats (float32 values widen exactly).
* decimals -> ``decimal.Decimal`` (numerically equal decimals compare and hash equal, so
  Spark's decimal(20,0) for uint64 equals pyarrow's int).
* timestamps -> naive ``datetime`` in UTC, or ``("ns", int)`` when sub-microsecond digits exist.
  Zone-aware values are converted to UTC; naive (NTZ) values are kept as they are. The test
  process runs with TZ=UTC, which is also the zone Spark's collect() uses for TimestampType.
* binary -> ``bytes``; struct -> tuple of its fields; list -> tuple; map -> tuple of (k, v)
  pairs sorted by ``repr``; dictionary arrays -> their decoded values.
"""

from __future__ import annotations

import collections
import datetime as dt
import math
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

EPOCH = dt.datetime(1970, 1, 1)

# Several physical layouts of the same rows: the answer must not depend on the layout, and each
# layout gives the pruning code different statistics / page indexes / encodings to get wrong.
FILTER_LAYOUTS = {
    # unsorted, a few row groups, pyarrow defaults
    "plain": dict(sort=None, kwargs=dict(row_group_size=100)),
    # sorted by i32, small row groups, page index, decimals stored as INT32/INT64
    "sorted_i32": dict(
        sort="i32",
        kwargs=dict(
            row_group_size=64, write_page_index=True, max_rows_per_page=16, store_decimal_as_integer=True
        ),
    ),
    # sorted by f64 (NaN last, -0.0 next to 0.0), page index, INT96 timestamps
    "sorted_f64": dict(
        sort="f64",
        kwargs=dict(
            row_group_size=64,
            write_page_index=True,
            max_rows_per_page=16,
            use_deprecated_int96_timestamps=True,
        ),
    ),
    # sorted by s, page index, no dictionary encoding at all, data page v2
    "sorted_s": dict(
        sort="s",
        kwargs=dict(
            row_group_size=64,
            write_page_index=True,
            max_rows_per_page=16,
            use_dictionary=False,
            data_page_version="2.0",
        ),
    ),
}


class _Token:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


NAN = _Token("NaN")
NEG_ZERO = _Token("-0.0")


def norm_float(v):
    if v is None:
        return None
    v = float(v)
    if math.isnan(v):
        return NAN
    if v == 0.0 and math.copysign(1.0, v) < 0:
        return NEG_ZERO
    return v


def norm_float_any(v):
    """``norm_float`` for floats, anything else as it is."""
    return norm_float(v) if isinstance(v, float) else v


_UNIT_TO_US = {"s": 1_000_000, "ms": 1_000, "us": 1}


def ts_from_int(v: int, unit: str):
    if unit == "ns":
        if v % 1000:
            return ("ns", v)
        micros = v // 1000
    else:
        micros = v * _UNIT_TO_US[unit]
    return EPOCH + dt.timedelta(microseconds=micros)


def norm_datetime(v):
    """A datetime-like python value (datetime or pandas.Timestamp) -> naive UTC datetime."""
    if v is None:
        return None
    if type(v).__name__ == "Timestamp" and hasattr(v, "value"):  # pandas.Timestamp
        ns = int(v.value)  # always UTC-based nanoseconds
        return ts_from_int(ns, "ns")
    if v.tzinfo is not None:
        v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return v


# ------------------------------------------------------------------------------------------
# Arrow side
# ------------------------------------------------------------------------------------------


def norm_arrow_value(typ: pa.DataType, v: Any):
    if v is None:
        return None
    if pa.types.is_dictionary(typ):
        return norm_arrow_value(typ.value_type, v)
    if pa.types.is_floating(typ):
        return norm_float(v)
    if pa.types.is_decimal(typ):
        return Decimal(v)
    if pa.types.is_timestamp(typ):
        return norm_datetime(v)
    if (
        pa.types.is_binary(typ)
        or pa.types.is_large_binary(typ)
        or pa.types.is_fixed_size_binary(typ)
        or getattr(pa.types, "is_binary_view", lambda t: False)(typ)
    ):
        return bytes(v)
    if pa.types.is_struct(typ):
        return tuple(
            norm_arrow_value(typ.field(i).type, v.get(typ.field(i).name)) for i in range(typ.num_fields)
        )
    if pa.types.is_map(typ):
        kt, it = typ.key_type, typ.item_type
        return tuple(sorted(((norm_arrow_value(kt, k), norm_arrow_value(it, x)) for k, x in v), key=repr))
    if (
        pa.types.is_list(typ)
        or pa.types.is_large_list(typ)
        or pa.types.is_fixed_size_list(typ)
        or getattr(pa.types, "is_list_view", lambda t: False)(typ)
        or getattr(pa.types, "is_large_list_view", lambda t: False)(typ)
    ):
        return tuple(norm_arrow_value(typ.value_type, x) for x in v)
    return v


def arrow_column_values(col: pa.ChunkedArray | pa.Array) -> list:
    typ = col.type
    if pa.types.is_timestamp(typ):
        # go through int64 so that nanosecond values are never rounded
        return [None if x is None else ts_from_int(x, typ.unit) for x in col.cast(pa.int64()).to_pylist()]
    return [norm_arrow_value(typ, x) for x in col.to_pylist()]


def arrow_rows(table: pa.Table | pa.RecordBatch) -> list[tuple]:
    cols = [arrow_column_values(table.column(i)) for i in range(table.num_columns)]
    return list(zip(*cols)) if cols else [() for _ in range(table.num_rows)]


# ------------------------------------------------------------------------------------------
# Spark side
# ------------------------------------------------------------------------------------------


def norm_spark_value(dtype, v):
    from pyspark.sql import types as T

    if v is None:
        return None
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return norm_float(v)
    if isinstance(dtype, T.DecimalType):
        return Decimal(v)
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return norm_datetime(v)
    if isinstance(dtype, T.BinaryType):
        return bytes(v)
    if isinstance(dtype, T.StructType):
        return tuple(norm_spark_value(f.dataType, v[i]) for i, f in enumerate(dtype.fields))
    if isinstance(dtype, T.ArrayType):
        return tuple(norm_spark_value(dtype.elementType, x) for x in v)
    if isinstance(dtype, T.MapType):
        return tuple(
            sorted(
                (
                    (norm_spark_value(dtype.keyType, k), norm_spark_value(dtype.valueType, x))
                    for k, x in v.items()
                ),
                key=repr,
            )
        )
    return v


def spark_rows(df) -> list[tuple]:
    """Collect a PySpark DataFrame into normalised tuples (column order of df)."""
    schema = df.schema
    return [
        tuple(norm_spark_value(f.dataType, r[i]) for i, f in enumerate(schema.fields)) for r in df.collect()
    ]


# ------------------------------------------------------------------------------------------
# comparison
# ------------------------------------------------------------------------------------------


def _fmt(rows: Iterable, limit: int = 8) -> str:
    rows = list(rows)
    shown = "\n      ".join(repr(r) for r in sorted(rows, key=repr)[:limit])
    more = f"\n      ... and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"\n      {shown}{more}" if rows else " (none)"


def diff_rows(expected: Sequence[tuple], actual: Sequence[tuple]) -> str | None:
    """None if the two multisets of rows are equal, else a readable description."""
    ce, ca = collections.Counter(expected), collections.Counter(actual)
    if ce == ca:
        return None
    missing = list((ce - ca).elements())
    extra = list((ca - ce).elements())
    return (
        f"expected {len(expected)} rows, got {len(actual)};"
        f"\n    missing (expected but not returned):{_fmt(missing)}"
        f"\n    unexpected (returned but not expected):{_fmt(extra)}"
    )


def assert_same_rows(expected: Sequence[tuple], actual: Sequence[tuple], context: str = "") -> None:
    d = diff_rows(expected, actual)
    assert d is None, f"{context}: {d}" if context else d


def assert_both_refuse(spark, sql: str, error_class: str) -> None:
    """PySpark and a fresh ferrospark session both refuse ``sql``, each error matching
    ``error_class`` (a regular expression, as ``pytest.raises(match=...)`` reads it)."""
    import pytest

    import ferrospark as fs

    with pytest.raises(Exception, match=error_class):
        spark.sql(sql).collect()
    with pytest.raises(fs.FerroError, match=error_class):
        fs.Session().sql(sql).collect()


def check_rows(context: str, got: Sequence[tuple], expected: Sequence[tuple], ordered: bool) -> None:
    """Rows equal in order (a query with ORDER BY) or as multisets."""
    if ordered:
        assert list(got) == list(expected), f"{context}: got {list(got)[:10]} expected {list(expected)[:10]}"
    else:
        assert_same_rows(expected, got, context)


def facts_session(path: str, conf: dict | None = None):
    """A ferrospark session with the Parquet file `path` as the temp view ``facts``."""
    import ferrospark as fs

    s = fs.Session(conf=conf or {})
    s.read.parquet(path).createOrReplaceTempView("facts")
    return s


def project(rows: Sequence[tuple], names: Sequence[str], wanted: Sequence[str]) -> list[tuple]:
    idx = [list(names).index(w) for w in wanted]
    return [tuple(r[i] for i in idx) for r in rows]


# ------------------------------------------------------------------------------------------
# Spark-semantics helpers for hand-computed expectations
# ------------------------------------------------------------------------------------------


def spark_gt(a, b):
    """Spark's `a > b` for doubles (NaN greatest, NaN = NaN, -0.0 = 0.0); None for NULL."""
    if a is None or b is None:
        return None
    an, bn = math.isnan(a), math.isnan(b)
    if an and bn:
        return False
    if an:
        return True
    if bn:
        return False
    return a > b


def spark_eq(a, b):
    if a is None or b is None:
        return None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b


METRIC_KEYS = (
    "files_total",
    "files_pruned",
    "row_groups_total",
    "row_groups_pruned_statistics",
    "row_groups_pruned_bloom_filter",
    "row_groups_pruned_dictionary",
    "row_groups_read",
    "pages_total",
    "pages_pruned",
    "rows_total",
    "rows_read",
    "rows_output",
    "batches_output",
    "bytes_read",
    "decode_time_ns",
    "plan_time_ns",
)


def row_groups_pruned(m: dict) -> int:
    return (
        m["row_groups_pruned_statistics"]
        + m["row_groups_pruned_bloom_filter"]
        + m["row_groups_pruned_dictionary"]
    )


def check_metrics_consistent(m: dict, table: pa.Table | None = None) -> None:
    """Invariants every drained scan's metrics must satisfy."""
    missing = [k for k in METRIC_KEYS if k not in m]
    assert not missing, f"metrics lack keys {missing}: {m}"
    bad = {k: m[k] for k in METRIC_KEYS if not isinstance(m[k], int) or isinstance(m[k], bool) or m[k] < 0}
    assert not bad, f"metrics must be non-negative ints: {bad}"
    assert m["files_pruned"] <= m["files_total"], m
    if m["files_pruned"] == 0:
        assert m["row_groups_read"] + row_groups_pruned(m) == m["row_groups_total"], (
            f"every row group is either read or pruned for one reason: {m}"
        )
    else:  # row groups of files pruned by partition values may or may not be counted
        assert m["row_groups_read"] + row_groups_pruned(m) <= m["row_groups_total"], m
    assert m["pages_pruned"] <= m["pages_total"], m
    assert m["rows_output"] <= m["rows_read"] <= m["rows_total"], m
    if table is not None:
        assert m["rows_output"] == table.num_rows, (
            f"rows_output={m['rows_output']} but {table.num_rows} rows came out"
        )


# ------------------------------------------------------------------------------------------
# Arrow type / table comparison
# ------------------------------------------------------------------------------------------


def type_diff(a: pa.DataType, b: pa.DataType, path: str = "") -> str | None:
    """None if the types are the same logical Arrow type, else where they differ.

    Struct field names count; the names Arrow gives list items and map entries ("item" vs
    "element", "entries" vs "key_value") and nullability flags do not; a dictionary's index
    type does not either (its value type does).
    """
    where = path or "<top>"
    if pa.types.is_dictionary(a) or pa.types.is_dictionary(b):
        if not (pa.types.is_dictionary(a) and pa.types.is_dictionary(b)):
            return f"{where}: {a} vs {b}"
        return type_diff(a.value_type, b.value_type, path)
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        na = [a.field(i).name for i in range(a.num_fields)]
        nb = [b.field(i).name for i in range(b.num_fields)]
        if na != nb:
            return f"{where}: struct fields {na} vs {nb}"
        for i in range(a.num_fields):
            d = type_diff(a.field(i).type, b.field(i).type, f"{path}.{na[i]}")
            if d:
                return d
        return None
    if pa.types.is_map(a) and pa.types.is_map(b):
        return type_diff(a.key_type, b.key_type, path + "{key}") or type_diff(
            a.item_type, b.item_type, path + "{value}"
        )
    for pred in (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list):
        if pred(a) and pred(b):
            if pa.types.is_fixed_size_list(a) and a.list_size != b.list_size:
                return f"{where}: {a} vs {b}"
            return type_diff(a.value_type, b.value_type, path + "[]")
    return None if a.equals(b) else f"{where}: {a} vs {b}"


def schema_diff(got: pa.Schema, expected: pa.Schema) -> str | None:
    if got.names != expected.names:
        return f"column names {got.names} != expected {expected.names}"
    for f_got, f_exp in zip(got, expected):
        d = type_diff(f_got.type, f_exp.type, f_got.name)
        if d:
            return f"type of {d} (got vs expected)"
    return None


def assert_tables_equal(got: pa.Table, expected: pa.Table, ordered: bool = True, context: str = "") -> None:
    """Same column names, same logical types, same values (NaN = NaN, -0.0 distinct from 0.0)."""
    prefix = f"{context}: " if context else ""
    d = schema_diff(got.schema, expected.schema)
    assert d is None, prefix + d
    g, e = arrow_rows(got), arrow_rows(expected)
    if ordered:
        if g != e:
            first = next((i for i, (x, y) in enumerate(zip(g, e)) if x != y), min(len(g), len(e)))
            detail = diff_rows(e, g)
            raise AssertionError(
                f"{prefix}rows differ (got {len(g)}, expected {len(e)}); first difference at row {first}:\n"
                f"    got      {g[first] if first < len(g) else '<end>'}\n"
                f"    expected {e[first] if first < len(e) else '<end>'}\n"
                f"    as multisets: {detail or 'equal (only the order differs)'}"
            )
    else:
        assert_same_rows(e, g, prefix.rstrip(": "))


def register_parquet_views(session: Any, directory: Any, names: list[str]) -> Any:
    """Registers ``directory/<name>.parquet`` as temp view ``name`` on a ferrospark or a
    PySpark session (both read Parquet the same way); returns the session."""
    for name in names:
        session.read.parquet(str(directory / f"{name}.parquet")).createOrReplaceTempView(name)
    return session


def plan_metric(line: str, name: str) -> int:
    """The value of metric ``name`` on one line of an executed plan (0 when absent)."""
    m = re.search(rf"\b{name}=(\d+)", line)
    return int(m.group(1)) if m else 0


def scan_lines(plan: str, file_name: str) -> list[str]:
    """The lines of a plan's scans of the Parquet file ``file_name``."""
    return [line for line in plan.splitlines() if "FileScan parquet" in line and f"/{file_name}[" in line]


#: JVM options of every Spark the tests start. The test JVMs live minutes and run small
#: queries, where the C2 compiler's work never pays back: C1 alone (and one GC thread) cut
#: the CPU a Spark streaming test uses by about a third on a two-core machine.
SPARK_TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def run_spark_script(script, *args: str, timeout: int = 900) -> tuple[dict, Any]:
    """Runs ``script`` (a PySpark program holding its own SparkContext) in a process of its
    own with this Python as Spark's: the JSON object it printed last, and the process."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, TZ="UTC")
    proc = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, (
        f"no result; exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    )
    return json.loads(lines[-1]), proc
