"""Aggregation compared against PySpark: `fs.aggregate(table, by, aggs)` must return exactly what
`spark.createDataFrame(table).groupBy(by).agg(...)` returns: the same column names, the same
types, the same rows (order-insensitive).

The data (seeded) has nulls everywhere, NaN (with several bit patterns), -0.0 and +-inf in the
doubles, one huge group (k_int = 0 holds ~40% of the rows) next to many tiny ones, groups whose
values are all NULL, unicode string keys (combining characters, NUL, emoji), decimal(10,2) and
decimal(38,4), dates and timestamps, booleans. ferrospark reads it as a stream of uneven batches
with empty batches in between.

Every aggregate function is compared for each grouping: int key, string key, double key (one NaN
group, 0.0 and -0.0 together), decimal key, date key, timestamp key, several keys, no keys.

Value comparison: exact for integers, decimals, counts, booleans, strings, dates, timestamps and
approx_count_distinct (Spark's HLL++, bit for bit); doubles whose value depends on summation order
(sum / avg / stddev / variance of doubles, avg of integers, percentile) within a relative 1e-9,
except that a zero's sign and NaN must match exactly; min / max of doubles treat -0.0 = 0.0
(Spark's own answer depends on row order there); collect_list / collect_set as sorted lists.
first / last run on Spark over a single partition (`coalesce(1)`, input order kept) and on
ferrospark over the same row order.

Also: the Parquet scan-fused path (`fs.scan_parquet` / unread `fs.read_parquet`) against
`spark.read.parquet`, empty input, expressions as arguments and keys, aliases, ANSI bigint and
decimal overflow (error) and legacy mode (wrap / NULL), decimal avg rounding (HALF_UP).
"""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from helpers import NAN, NEG_ZERO, arrow_rows, spark_rows

pytestmark = pytest.mark.spark

N_ROWS = 6_000
ALL_NULL_KEYS = (9001, 9002, 9003)  # k_int groups whose value columns are all NULL
REL_TOL = 1e-9

# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------

NAN_BITS = [0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000F00]
NAN_VARIANTS = [float(x) for x in np.array(NAN_BITS, dtype=np.uint64).view(np.float64)]

KEY_STRINGS = [
    "apple",
    "",
    "Apple",
    "héllo",
    "he\u0301llo",  # same glyphs as above, different bytes: a different key
    "ß",
    "日本",
    "😀",
    "a\x00b",
    "zeta",
    "Äpfel",
    " apple",
    "apple ",
] + [f"ключ{i}" for i in range(40)]


def _float_array(values: list) -> pa.Array:
    """float64 array that keeps NaN payloads bit-exact (pa.array(list) may canonicalise)."""
    mask = np.array([v is None for v in values])
    data = np.array([0.0 if v is None else v for v in values], dtype=np.float64)
    return pa.array(data, mask=mask, type=pa.float64())


def make_agg_table(n: int = N_ROWS, seed: int = 20240611) -> pa.Table:
    rng = random.Random(seed)

    def maybe(v, p=0.08):
        return None if rng.random() < p else v

    dates = [dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(-400, 400)) for _ in range(60)]
    dates += [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(1900, 3, 1), dt.date(2024, 2, 29)]
    tss = [
        dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
        + dt.timedelta(seconds=rng.randint(-(10**8), 10**8), microseconds=rng.randint(0, 999_999))
        for _ in range(60)
    ]
    tss += [
        dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=dt.timezone.utc),
    ]
    key_doubles = [-0.0, 0.0, math.inf, -math.inf, 1.5, -1.5, 1e300, -5e-324] + [
        round(rng.uniform(-50, 50), 1) for _ in range(30)
    ]
    key_decimals = [Decimal("0.00"), Decimal("-0.01"), Decimal("99999999.99"), Decimal("-99999999.99")] + [
        Decimal(rng.randint(-(10**6), 10**6)).scaleb(-2) for _ in range(40)
    ]

    cols: dict[str, list] = {
        k: []
        for k in (
            "id k_int k_small k_str k_dbl k_dec k_date k_ts k_bool "
            "i8 i32 i64 f32 f64 f64n dec dec38 b s d ts ts_ntz"
        ).split()
    }
    for i in range(n):
        r = rng.random()
        k_int = 0 if r < 0.4 else (None if r < 0.43 else rng.randint(1, 300))
        cols["id"].append(i)
        cols["k_int"].append(k_int)
        cols["k_small"].append(maybe(rng.randint(0, 15), 0.05))
        cols["k_str"].append(maybe("apple" if rng.random() < 0.3 else rng.choice(KEY_STRINGS), 0.03))
        kd = rng.choice(NAN_VARIANTS) if rng.random() < 0.08 else rng.choice(key_doubles)
        cols["k_dbl"].append(maybe(kd, 0.03))
        cols["k_dec"].append(maybe(rng.choice(key_decimals), 0.03))
        cols["k_date"].append(maybe(rng.choice(dates), 0.03))
        cols["k_ts"].append(maybe(rng.choice(tss), 0.03))
        cols["k_bool"].append(maybe(rng.random() < 0.5, 0.1))

        cols["i8"].append(maybe(rng.randint(-128, 127)))
        cols["i32"].append(
            maybe(rng.choice([2**31 - 1, -(2**31)]) if rng.random() < 0.01 else rng.randint(-1000, 1000))
        )
        cols["i64"].append(maybe(rng.randint(-(10**13), 10**13)))
        cols["f32"].append(
            maybe(rng.choice([NAN_VARIANTS[0], -0.0]) if rng.random() < 0.03 else rng.randint(-400, 400) / 8)
        )
        f = rng.random()
        if f < 0.05:
            f64 = rng.choice(NAN_VARIANTS + [-0.0, -0.0, 0.0, math.inf, -math.inf])
        else:
            f64 = round(rng.uniform(-1000, 1000), 3)
        cols["f64"].append(maybe(f64))
        cols["f64n"].append(maybe(-0.0 if rng.random() < 0.01 else rng.uniform(-1e6, 1e6)))
        cols["dec"].append(
            maybe(
                Decimal("99999999.99")
                if rng.random() < 0.01
                else Decimal(rng.randint(-(10**9) + 1, 10**9 - 1)).scaleb(-2)
            )
        )
        cols["dec38"].append(maybe(Decimal(rng.randint(-(10**30), 10**30)).scaleb(-4)))
        cols["b"].append(maybe(rng.random() < 0.7, 0.15))
        cols["s"].append(maybe(rng.choice(KEY_STRINGS[:13] + ["x", "y", "zz", "€uro"])))
        cols["d"].append(maybe(rng.choice(dates)))
        t = maybe(rng.choice(tss))
        cols["ts"].append(t)
        cols["ts_ntz"].append(None if t is None else t.replace(tzinfo=None))

    # groups whose every value is NULL (count(x) = 0, sum NULL, collect_list [] ...)
    value_cols = [c for c in cols if c != "id" and not c.startswith("k_")]
    for j, key in enumerate(ALL_NULL_KEYS):
        for _ in range(j + 1):
            cols["id"].append(len(cols["id"]))
            cols["k_int"].append(key)
            for c in ("k_small", "k_str", "k_dbl", "k_dec", "k_date", "k_ts", "k_bool"):
                cols[c].append(None)
            for c in value_cols:
                cols[c].append(None)
    # one group with only -0.0 (sum must be 0.0 like Spark's, which starts from 0.0)
    for _ in range(3):
        cols["id"].append(len(cols["id"]))
        cols["k_int"].append(9100)
        for c in ("k_small", "k_str", "k_dbl", "k_dec", "k_date", "k_ts", "k_bool"):
            cols[c].append(None)
        for c in value_cols:
            cols[c].append(-0.0 if c in ("f64", "f64n", "f32") else None)

    return pa.table(
        {
            "id": pa.array(cols["id"], pa.int64()),
            "k_int": pa.array(cols["k_int"], pa.int32()),
            "k_small": pa.array(cols["k_small"], pa.int16()),
            "k_str": pa.array(cols["k_str"], pa.string()),
            "k_dbl": _float_array(cols["k_dbl"]),
            "k_dec": pa.array(cols["k_dec"], pa.decimal128(10, 2)),
            "k_date": pa.array(cols["k_date"], pa.date32()),
            "k_ts": pa.array(cols["k_ts"], pa.timestamp("us", tz="UTC")),
            "k_bool": pa.array(cols["k_bool"], pa.bool_()),
            "i8": pa.array(cols["i8"], pa.int8()),
            "i32": pa.array(cols["i32"], pa.int32()),
            "i64": pa.array(cols["i64"], pa.int64()),
            "f32": pa.array(cols["f32"], pa.float32()),
            "f64": _float_array(cols["f64"]),
            "f64n": _float_array(cols["f64n"]),
            "dec": pa.array(cols["dec"], pa.decimal128(10, 2)),
            "dec38": pa.array(cols["dec38"], pa.decimal128(38, 4)),
            "b": pa.array(cols["b"], pa.bool_()),
            "s": pa.array(cols["s"], pa.string()),
            "d": pa.array(cols["d"], pa.date32()),
            "ts": pa.array(cols["ts"], pa.timestamp("us", tz="UTC")),
            "ts_ntz": pa.array(cols["ts_ntz"], pa.timestamp("us")),
        }
    )


def uneven_reader(table: pa.Table, seed: int = 5) -> pa.RecordBatchReader:
    """The table's rows in order, as batches of uneven sizes with empty batches in between."""
    rng = random.Random(seed)
    batches, pos = [], 0
    while pos < table.num_rows:
        size = rng.choice([0, 1, 17, 500, 1024, 3000])
        batches.extend(table.slice(pos, size).to_batches() or [])
        if size == 0:
            batches.append(pa.RecordBatch.from_pylist([], schema=table.schema))
        pos += size
    batches.append(pa.RecordBatch.from_pylist([], schema=table.schema))
    return pa.RecordBatchReader.from_batches(table.schema, batches)


@pytest.fixture(scope="module")
def agg_table() -> pa.Table:
    t = make_agg_table()
    # the fixture must be what it claims
    nan_bits = set(np.asarray(t.column("k_dbl").fill_null(0.0)).view(np.uint64).tolist())
    assert {b for b in NAN_BITS} <= nan_bits, "every NaN bit pattern is present in k_dbl"
    k = t.column("k_int").to_pylist()
    assert k.count(0) > 0.35 * len(k)
    return t


def spark_frame(spark, table: pa.Table):
    """spark.createDataFrame(table), with zone-less Arrow timestamps as TIMESTAMP_NTZ (Spark's
    Arrow conversion reads them as TIMESTAMP; in UTC the cast keeps the wall clock)."""
    from pyspark.sql import functions as F  # noqa: N812

    df = spark.createDataFrame(table)
    for f in table.schema:
        if pa.types.is_timestamp(f.type) and f.type.tz is None:
            df = df.withColumn(f.name, F.col(f.name).cast("timestamp_ntz"))
    return df


@pytest.fixture(scope="module")
def sdf(spark, agg_table):
    df = spark_frame(spark, agg_table).cache()
    assert df.count() == agg_table.num_rows
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        arrow_type_as_spark(f.type) for f in agg_table.schema
    ]
    return df


@pytest.fixture(scope="module")
def sdf1(sdf):
    """The same rows on one Spark partition, in table order (first / last / collect_list order).

    first / last of non-fixed-width types (strings...) run as SortAggregate; tests using this
    frame for them switch Spark's radix sort off (`stable_sort`) so that sorting by the keys
    keeps the input order of equal keys (TimSort is stable, the radix sort is not)."""
    return sdf.coalesce(1)


@pytest.fixture
def stable_sort(spark):
    key = "spark.sql.sort.enableRadixSort"
    old = spark.conf.get(key, "true")
    spark.conf.set(key, "false")
    try:
        yield
    finally:
        spark.conf.set(key, old)


# --------------------------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------------------------


def arrow_type_as_spark(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return arrow_type_as_spark(t.value_type)
    simple = {
        pa.int8(): "tinyint",
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.string(): "string",
        pa.large_string(): "string",
        pa.binary(): "binary",
        pa.date32(): "date",
    }
    for k, v in simple.items():
        if t.equals(k):
            return v
    if hasattr(pa, "string_view") and t.equals(pa.string_view()):
        return "string"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{arrow_type_as_spark(t.value_type)}>"
    return f"<arrow {t}>"


def _float_eq(e, g) -> bool:
    if e is None or g is None or e is NAN or g is NAN or e is NEG_ZERO or g is NEG_ZERO:
        return e is g if (e is None or e is NAN or e is NEG_ZERO) else (g is not None and e == g)
    if isinstance(e, float) and isinstance(g, float):
        if e == 0.0 or g == 0.0:
            return e == g
        return math.isclose(e, g, rel_tol=REL_TOL, abs_tol=0.0)
    return e == g


def _zero(v):
    return 0.0 if v is NEG_ZERO else v


def values_equal(kind: str, e, g) -> bool:
    if kind == "exact":
        return e == g and type(e) is type(g) or (e is g)
    if kind == "float":
        return _float_eq(e, g)
    if kind == "minmax":  # -0.0 = 0.0 (Spark's own answer depends on the order of equal values)
        return _zero(e) == _zero(g) and (e is not None) == (g is not None)
    if kind == "pct":  # Spark's percentile keeps -0.0 and 0.0 as separate, equal-sorting values
        return _float_eq(_zero(e), _zero(g))
    if kind == "floatlist":
        if e is None or g is None:
            return e is g
        return len(e) == len(g) and all(_float_eq(_zero(a), _zero(b)) for a, b in zip(e, g))
    if kind == "sorted":
        if e is None or g is None:
            return e is g
        return sorted(e, key=repr) == sorted(g, key=repr)
    raise ValueError(kind)


def compare(got: pa.Table, df, kinds: list[str], nkeys: int, context: str = "", seen=None) -> list:
    """ferrospark's table vs Spark's DataFrame: names, types and rows (matched by key)."""
    problems: list[str] = []
    exp_names = df.columns
    if got.column_names != exp_names:
        diff = [(g, e) for g, e in zip(got.column_names, exp_names) if g != e]
        problems.append(
            f"column names differ (ferrospark vs Spark): {diff}"
            if len(got.column_names) == len(exp_names)
            else f"column names: got {got.column_names}, Spark {exp_names}"
        )
    exp_types = [f.dataType.simpleString() for f in df.schema.fields]
    got_types = [arrow_type_as_spark(f.type) for f in got.schema]
    for i, (gt, et) in enumerate(zip(got_types, exp_types)):
        if gt != et:
            problems.append(f"type of column {i} ({exp_names[i]}): got {gt}, Spark {et}")
    if len(got_types) != len(exp_types):
        problems.append(f"got {len(got_types)} columns, Spark {len(exp_types)}")

    exp_rows, got_rows = spark_rows(df), arrow_rows(got)
    if seen is not None:
        seen.extend(exp_rows)
    exp_by_key, got_by_key = {}, {}
    for rows, by_key, who in ((exp_rows, exp_by_key, "Spark"), (got_rows, got_by_key, "ferrospark")):
        for r in rows:
            k = r[:nkeys]
            if k in by_key:
                problems.append(f"{who} returned key {k!r} twice")
            by_key[k] = r
    missing = [k for k in exp_by_key if k not in got_by_key]
    extra = [k for k in got_by_key if k not in exp_by_key]
    if missing:
        problems.append(
            f"{len(missing)} groups missing from ferrospark, e.g. {sorted(missing, key=repr)[:5]}"
        )
    if extra:
        problems.append(f"{len(extra)} groups only in ferrospark, e.g. {sorted(extra, key=repr)[:5]}")
    bad_cols: dict[str, list] = {}
    for k, er in exp_by_key.items():
        gr = got_by_key.get(k)
        if gr is None or len(gr) != len(er):
            continue
        for i, kind in enumerate(kinds):
            j = nkeys + i
            if not values_equal(kind, er[j], gr[j]):
                bad_cols.setdefault(exp_names[j], []).append((k, gr[j], er[j]))
    for name, bad in bad_cols.items():
        shown = "; ".join(f"key={k!r}: ferrospark={g!r} Spark={e!r}" for k, g, e in bad[:3])
        problems.append(f"{name}: {len(bad)} of {len(exp_by_key)} groups differ, e.g. {shown}")
    assert not problems, (context + ":\n  " if context else "\n  ") + "\n  ".join(problems)
    return exp_rows


def run_both(table, df, by, spec, context="", reader=None, session=None, seen=None):
    """spec: list of (ferrospark AggColumn, pyspark Column, kind)."""
    from pyspark.sql import functions as F  # noqa: N812

    fs_aggs = [a for a, _, _ in spec]
    sp_aggs = [c for _, c, _ in spec]
    kinds = [k for _, _, k in spec]
    data = reader if reader is not None else uneven_reader(table)
    got = (session or fs).aggregate(data, by=by, aggs=fs_aggs)
    sp_by = [F.expr(b) if isinstance(b, str) and not b.isidentifier() else b for b in by]
    expected = df.groupBy(*sp_by).agg(*sp_aggs) if by else df.agg(*sp_aggs)
    compare(got, expected, kinds, len(by), context, seen)
    return got


# --------------------------------------------------------------------------------------------
# aggregate sets
# --------------------------------------------------------------------------------------------


def spec_basic():
    from pyspark.sql import functions as F  # noqa: N812

    return spec_moments() + [
        (fs.count(), F.count("*"), "exact"),
        (fs.count("i32"), F.count("i32"), "exact"),
        (fs.count("f64"), F.count("f64"), "exact"),
        (fs.count("s"), F.count("s"), "exact"),
        (fs.sum("i8"), F.sum("i8"), "exact"),
        (fs.sum("i32"), F.sum("i32"), "exact"),
        (fs.sum("i64"), F.sum("i64"), "exact"),
        (fs.sum("f32"), F.sum("f32"), "float"),
        (fs.sum("f64"), F.sum("f64"), "float"),
        (fs.sum("f64n"), F.sum("f64n"), "float"),
        (fs.sum("dec"), F.sum("dec"), "exact"),
        (fs.sum("dec38"), F.sum("dec38"), "exact"),
        (fs.avg("i32"), F.avg("i32"), "float"),
        (fs.avg("i64"), F.avg("i64"), "float"),
        (fs.avg("f64n"), F.avg("f64n"), "float"),
        (fs.mean("f64"), F.mean("f64"), "float"),
        (fs.avg("dec"), F.avg("dec"), "exact"),
        (fs.avg("dec38"), F.avg("dec38"), "exact"),
        (fs.min("i32"), F.min("i32"), "exact"),
        (fs.max("i64"), F.max("i64"), "exact"),
        (fs.min("f64"), F.min("f64"), "minmax"),
        (fs.max("f64"), F.max("f64"), "minmax"),
        (fs.min("f32"), F.min("f32"), "minmax"),
        (fs.max("f32"), F.max("f32"), "minmax"),
        (fs.min("s"), F.min("s"), "exact"),
        (fs.max("s"), F.max("s"), "exact"),
        (fs.min("dec"), F.min("dec"), "exact"),
        (fs.max("dec38"), F.max("dec38"), "exact"),
        (fs.min("d"), F.min("d"), "exact"),
        (fs.max("d"), F.max("d"), "exact"),
        (fs.min("ts"), F.min("ts"), "exact"),
        (fs.max("ts"), F.max("ts"), "exact"),
        (fs.max("ts_ntz"), F.max("ts_ntz"), "exact"),
        (fs.min("b"), F.min("b"), "exact"),
        (fs.max("b"), F.max("b"), "exact"),
        (fs.bool_and("b"), F.bool_and("b"), "exact"),
        (fs.bool_or("b"), F.bool_or("b"), "exact"),
    ]


def spec_moments():
    from pyspark.sql import functions as F  # noqa: N812

    return [
        (fs.stddev("f64n"), F.stddev("f64n"), "float"),
        (fs.stddev_samp("f64n"), F.stddev_samp("f64n"), "float"),
        (fs.stddev_pop("f64n"), F.stddev_pop("f64n"), "float"),
        (fs.variance("f64n"), F.variance("f64n"), "float"),
        (fs.var_samp("f64n"), F.var_samp("f64n"), "float"),
        (fs.var_pop("f64n"), F.var_pop("f64n"), "float"),
        (fs.stddev("i32"), F.stddev("i32"), "float"),
        (fs.var_pop("i64"), F.var_pop("i64"), "float"),
        (fs.stddev_pop("f64"), F.stddev_pop("f64"), "float"),
        (fs.var_samp("dec"), F.var_samp("dec"), "float"),
        (fs.stddev("f32"), F.stddev("f32"), "float"),
    ]


def spec_object():
    from pyspark.sql import functions as F  # noqa: N812

    ps = [0.0, 0.25, 0.5, 0.9, 1.0]
    return [
        (fs.collect_list("i32"), F.collect_list("i32"), "sorted"),
        (fs.collect_list("s"), F.collect_list("s"), "sorted"),
        (fs.collect_set("s"), F.collect_set("s"), "sorted"),
        (fs.collect_set("f64"), F.collect_set("f64"), "sorted"),
        (fs.collect_set("dec"), F.collect_set("dec"), "sorted"),
        (fs.collect_set("d"), F.collect_set("d"), "sorted"),
        (fs.percentile("i32", 0.5), F.percentile("i32", 0.5), "pct"),
        (fs.percentile("f64n", ps), F.percentile("f64n", ps), "floatlist"),
        (fs.percentile("i64", 0.1), F.percentile("i64", 0.1), "pct"),
        (fs.percentile("f64", 0.75), F.percentile("f64", 0.75), "pct"),
        (fs.approx_count_distinct("i32"), F.approx_count_distinct("i32"), "exact"),
        (fs.approx_count_distinct("i64"), F.approx_count_distinct("i64"), "exact"),
        (fs.approx_count_distinct("f64"), F.approx_count_distinct("f64"), "exact"),
        (fs.approx_count_distinct("s"), F.approx_count_distinct("s"), "exact"),
        (fs.approx_count_distinct("dec"), F.approx_count_distinct("dec"), "exact"),
        (fs.approx_count_distinct("dec38"), F.approx_count_distinct("dec38"), "exact"),
        (fs.approx_count_distinct("d"), F.approx_count_distinct("d"), "exact"),
        (fs.approx_count_distinct("ts"), F.approx_count_distinct("ts"), "exact"),
        (fs.approx_count_distinct("b"), F.approx_count_distinct("b"), "exact"),
    ]


def spec_distinct_one():
    """One DISTINCT argument mixed with ordinary aggregates."""
    from pyspark.sql import functions as F  # noqa: N812

    return [
        (fs.count_distinct("f64"), F.count_distinct("f64"), "exact"),
        (fs.count(), F.count("*"), "exact"),
        (fs.sum("i64"), F.sum("i64"), "exact"),
        (fs.max("s"), F.max("s"), "exact"),
        (fs.avg("dec"), F.avg("dec"), "exact"),
    ]


def spec_distinct():
    """DISTINCT over several different arguments in one aggregation (Spark plans an Expand)."""
    from pyspark.sql import functions as F  # noqa: N812

    return [
        (fs.count_distinct("i32"), F.count_distinct("i32"), "exact"),
        (fs.count_distinct("f64"), F.count_distinct("f64"), "exact"),
        (fs.count_distinct("s"), F.count_distinct("s"), "exact"),
        (fs.count_distinct("i32", "s"), F.count_distinct("i32", "s"), "exact"),
        (fs.count_distinct("dec38"), F.count_distinct("dec38"), "exact"),
        (fs.sum_distinct("i8"), F.sum_distinct("i8"), "exact"),
        (fs.sum_distinct("dec"), F.sum_distinct("dec"), "exact"),
        (fs.sum_distinct("f64n"), F.sum_distinct("f64n"), "float"),
        (fs.count(), F.count("*"), "exact"),
        (fs.sum("i64"), F.sum("i64"), "exact"),
        (fs.max("s"), F.max("s"), "exact"),
    ]


def spec_first_last():
    from pyspark.sql import functions as F  # noqa: N812

    return [
        (fs.first("id"), F.first("id"), "exact"),
        (fs.last("id"), F.last("id"), "exact"),
        (fs.first("i32"), F.first("i32"), "exact"),
        (fs.first("i32", ignore_nulls=True), F.first("i32", ignorenulls=True), "exact"),
        (fs.last("s"), F.last("s"), "exact"),
        (fs.last("s", ignore_nulls=True), F.last("s", ignorenulls=True), "exact"),
        (fs.first("f64"), F.first("f64"), "exact"),
        (fs.last("f64", ignore_nulls=True), F.last("f64", ignorenulls=True), "exact"),
        (fs.last("dec38", ignore_nulls=True), F.last("dec38", ignorenulls=True), "exact"),
        (fs.first("ts"), F.first("ts"), "exact"),
        (fs.last("b"), F.last("b"), "exact"),
        (fs.first("d", ignore_nulls=True), F.first("d", ignorenulls=True), "exact"),
    ]


SPECS = {
    "basic": spec_basic,
    "object": spec_object,
    "distinct_one": spec_distinct_one,
    "distinct": spec_distinct,
    "first_last": spec_first_last,
}

KEYSETS = {
    "int": ["k_int"],
    "string": ["k_str"],
    "double": ["k_dbl"],
    "decimal": ["k_dec"],
    "date": ["k_date"],
    "timestamp": ["k_ts"],
    "several": ["k_bool", "k_small", "k_str"],
    "global": [],
}


# --------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------


def test_spark_oracle_sanity(sdf, sdf1, agg_table):
    """Spark sees the table as it is: NaN keys in one group, -0.0 with 0.0, the all-NULL groups;
    and the coalesced frame keeps table order (first(id) is each group's smallest id)."""
    from pyspark.sql import functions as F  # noqa: N812

    assert spark_rows(sdf.agg(F.sum("id"))) == [(sum(range(agg_table.num_rows)),)]
    rows = spark_rows(sdf.groupBy("k_dbl").agg(F.count("*")))
    keys = [r[0] for r in rows]
    assert keys.count(NAN) == 1 and 0.0 in keys and NEG_ZERO not in keys
    nan_rows = sum(1 for v in agg_table.column("k_dbl").to_pylist() if v is not None and v != v)
    assert dict(rows)[NAN] == nan_rows
    firsts = dict(spark_rows(sdf1.groupBy("k_int").agg(F.first("id"))))
    expected: dict = {}
    for k, i in zip(agg_table.column("k_int").to_pylist(), agg_table.column("id").to_pylist()):
        expected.setdefault(k, i)
    assert firsts == expected
    empty = spark_rows(sdf.filter(F.col("k_int") == ALL_NULL_KEYS[2]).agg(F.count("i32"), F.sum("i32")))
    assert empty == [(0, None)]


@pytest.mark.parametrize("spec", list(SPECS))
@pytest.mark.parametrize("keys", list(KEYSETS))
def test_aggregate_matches_spark(request, agg_table, sdf, sdf1, keys, spec):
    by = KEYSETS[keys]
    if spec != "first_last":
        run_both(agg_table, sdf, by, SPECS[spec](), f"group by {by} [{spec}]")
        return
    request.getfixturevalue("stable_sort")
    spark_rows_seen: list = []
    try:
        run_both(agg_table, sdf1, by, SPECS[spec](), f"group by {by} [{spec}]", seen=spark_rows_seen)
    finally:
        # the oracle keeps table order: Spark's first(id) / last(id) (the first two aggregates)
        # are each group's first / last id
        expected: dict = {}
        key_cols = [arrow_rows(agg_table.select([k])) for k in by]
        for i in range(agg_table.num_rows):
            k = tuple(0.0 if c[i][0] is NEG_ZERO else c[i][0] for c in key_cols)  # NaN: one token
            expected.setdefault(k, [i, i])[1] = i
        if spark_rows_seen:
            oracle = {r[: len(by)]: list(r[len(by) : len(by) + 2]) for r in spark_rows_seen}
            assert oracle == expected, "Spark's first/last on one partition does not follow table order"


DISTINCT_ONE = {
    "count_distinct(i32)": lambda F: (fs.count_distinct("i32"), F.count_distinct("i32"), "exact"),
    "count_distinct(s)": lambda F: (fs.count_distinct("s"), F.count_distinct("s"), "exact"),
    "count_distinct(dec38)": lambda F: (fs.count_distinct("dec38"), F.count_distinct("dec38"), "exact"),
    "count_distinct(d)": lambda F: (fs.count_distinct("d"), F.count_distinct("d"), "exact"),
    "count_distinct(i32, s)": lambda F: (
        fs.count_distinct("i32", "s"),
        F.count_distinct("i32", "s"),
        "exact",
    ),
    "sum_distinct(i8)": lambda F: (fs.sum_distinct("i8"), F.sum_distinct("i8"), "exact"),
    "sum_distinct(dec)": lambda F: (fs.sum_distinct("dec"), F.sum_distinct("dec"), "exact"),
    "sum_distinct(f64n)": lambda F: (fs.sum_distinct("f64n"), F.sum_distinct("f64n"), "float"),
}


@pytest.mark.parametrize("agg", list(DISTINCT_ONE))
def test_single_distinct_with_other_aggregates(agg_table, sdf, agg):
    """Each distinct aggregate alone (one DISTINCT argument), next to count(1) and sum(i64)."""
    from pyspark.sql import functions as F  # noqa: N812

    spec = [
        DISTINCT_ONE[agg](F),
        (fs.count(), F.count("*"), "exact"),
        (fs.sum("i64"), F.sum("i64"), "exact"),
    ]
    run_both(agg_table, sdf, ["k_int"], spec, f"{agg} with count(1), sum(i64)")


def test_approx_count_distinct_with_rsd(agg_table, sdf):
    """approx_count_distinct(x, rsd): a finer sketch, still bit-identical to Spark's; Spark
    names the column `approx_count_distinct(x)` (the rsd is not part of the name)."""
    from pyspark.sql import functions as F  # noqa: N812

    spec = [
        (fs.approx_count_distinct("i64", 0.01), F.approx_count_distinct("i64", 0.01), "exact"),
        (fs.approx_count_distinct("s", 0.2), F.approx_count_distinct("s", 0.2), "exact"),
    ]
    run_both(agg_table, sdf, ["k_int"], spec, "approx_count_distinct with rsd")


def test_collect_list_order_single_partition(agg_table, sdf1):
    """With one partition and fewer than 128 groups, Spark's collect_list keeps input order."""
    from pyspark.sql import functions as F  # noqa: N812

    spec = [
        (fs.collect_list("i32"), F.collect_list("i32"), "exact"),
        (fs.collect_list("s"), F.collect_list("s"), "exact"),
        (fs.collect_list("f64"), F.collect_list("f64"), "exact"),
    ]
    run_both(agg_table, sdf1, ["k_small"], spec, "collect_list order")


def test_double_key_normalisation(spark):
    """NaN (every bit pattern) is one group, -0.0 groups with 0.0 and comes out as 0.0."""
    from pyspark.sql import functions as F  # noqa: N812

    t = pa.table(
        {
            "k": _float_array(NAN_VARIANTS + [-0.0, 0.0, -0.0, None, 1.0, math.inf]),
            "f": pa.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], pa.float32()),
            "v": pa.array(range(10), pa.int64()),
        }
    )
    df = spark.createDataFrame(t)
    spec = [
        (fs.count(), F.count("*"), "exact"),
        (fs.sum("v"), F.sum("v"), "exact"),
        (fs.count_distinct("k"), F.count_distinct("k"), "exact"),
        (fs.approx_count_distinct("k"), F.approx_count_distinct("k"), "exact"),
    ]
    got = run_both(t, df, ["k"], spec, "double key")
    keys = arrow_rows(got.select(["k"]))
    assert NEG_ZERO not in [k[0] for k in keys]
    # a float key too, and the global distinct count over a double column
    run_both(t, df, ["f"], spec[:2], "float key")
    run_both(t, df, [], [(fs.count_distinct("k"), F.count_distinct("k"), "exact")], "distinct doubles")


@pytest.fixture(scope="module")
def empty_sdf(spark, agg_table):
    return spark_frame(spark, agg_table.slice(0, 0))


def test_percentile_with_infinities(spark):
    """Interpolating between an infinity and a finite value: Spark's formula gives NaN where
    lower + (higher - lower) * frac overflows, and the infinity where the weights are 0."""
    from pyspark.sql import functions as F  # noqa: N812

    inf = math.inf
    groups = {
        1: [601.668, -inf],
        2: [inf, 1.0],
        3: [-inf, inf],
        4: [-inf, -inf, 2.0],
        5: [1.0, 2.0, inf],
        6: [-inf],
        7: [0.5, 0.25],
    }
    ks = [k for k, vs in groups.items() for _ in vs]
    xs = [x for vs in groups.values() for x in vs]
    t = pa.table({"k": pa.array(ks, pa.int32()), "x": pa.array(xs, pa.float64())})
    df = spark.createDataFrame(t)
    ps = [0.0, 0.25, 0.5, 0.75, 1.0]
    spec = [
        (fs.percentile("x", ps), F.percentile("x", ps), "floatlist"),
        (fs.percentile("x", 0.75), F.percentile("x", 0.75), "pct"),
    ]
    run_both(t, df, ["k"], spec, "percentile with infinities")


@pytest.mark.parametrize("spec", list(SPECS))
def test_global_aggregate_over_empty_table(empty_sdf, agg_table, spec):
    """No rows, no keys: one row; count = 0, sums NULL, collect_list = [], approx = 0 ..."""
    run_both(agg_table.slice(0, 0), empty_sdf, [], SPECS[spec](), f"empty table, no keys [{spec}]")


def test_grouped_aggregate_over_empty_table(empty_sdf, agg_table):
    spec = spec_basic() + spec_object()[:8] + spec_distinct_one()
    got = run_both(agg_table.slice(0, 0), empty_sdf, ["k_int", "k_str"], spec, "empty table, grouped")
    assert got.num_rows == 0


def test_aliases_and_expressions(agg_table, sdf):
    """Aliases; expressions as aggregate arguments and as grouping keys (Spark's names)."""
    from pyspark.sql import functions as F  # noqa: N812

    spec = [
        (fs.sum("i32").alias("total"), F.sum("i32").alias("total"), "exact"),
        (fs.count().alias("n"), F.count("*").alias("n"), "exact"),
        (fs.sum(fs.col("i32") * (1 - fs.col("f64n"))), F.sum(F.col("i32") * (1 - F.col("f64n"))), "float"),
        (fs.sum(fs.expr("i64 + 1")), F.sum(F.expr("i64 + 1")), "exact"),
        (fs.sum(fs.expr("CAST(i32 AS BIGINT) * 3")), F.sum(F.expr("CAST(i32 AS BIGINT) * 3")), "exact"),
        (fs.max(fs.expr("i64 % 1000")), F.max(F.expr("i64 % 1000")), "exact"),
        (fs.avg(fs.col("dec") * 2), F.avg(F.col("dec") * 2), "exact"),
        (fs.count_distinct(fs.expr("i32 % 10")), F.count_distinct(F.expr("i32 % 10")), "exact"),
    ]
    run_both(agg_table, sdf, ["k_int"], spec, "expressions as arguments")
    got = fs.aggregate(uneven_reader(agg_table), by=[fs.expr("k_int % 7")], aggs=[fs.count()])
    expected = sdf.groupBy(F.expr("k_int % 7")).agg(F.count("*"))
    compare(got, expected, ["exact"], 1, "expression as grouping key")


def test_output_names_with_odd_identifiers_match_spark(spark):
    """Spark prints column references in default names without quotes, whatever the name:
    `sum((x + 1))`, `max((order * 2))`, `sum(my col)`; grouping expressions are named
    `(x + 1)`."""
    from pyspark.sql import functions as F  # noqa: N812

    t = pa.table(
        {
            "k": pa.array([1, 1, 2], pa.int64()),
            "x": pa.array([1, 2, 3], pa.int64()),
            "order": pa.array([3, 4, 5], pa.int64()),
            "my col": pa.array([5, 6, 7], pa.int64()),
            "Ünï": pa.array([7, 8, 9], pa.int64()),
        }
    )
    df = spark.createDataFrame(t)
    spec = [
        (fs.sum("x"), F.sum("x"), "exact"),
        (fs.sum(fs.col("x") + 1), F.sum(F.col("x") + 1), "exact"),
        (fs.sum(fs.expr("x * 2")), F.sum(F.expr("x * 2")), "exact"),
        (fs.sum("order"), F.sum("order"), "exact"),
        (fs.max(fs.col("order") * 2), F.max(F.col("order") * 2), "exact"),
        (fs.sum("my col"), F.sum("my col"), "exact"),
        (fs.avg(fs.col("my col") + fs.col("Ünï")), F.avg(F.col("my col") + F.col("Ünï")), "float"),
        (fs.count_distinct("x"), F.count_distinct("x"), "exact"),
    ]
    run_both(t, df, ["k"], spec, "odd identifiers")
    got = fs.aggregate(t, by=[fs.col("x") + 1], aggs=[fs.count()])
    compare(got, df.groupBy(F.col("x") + 1).agg(F.count("*")), ["exact"], 1, "grouping expression name")


def test_ansi_overflow_inside_aggregate_argument(agg_table, sdf):
    """i32 holds 2147483647: `i32 + 1` overflows int under ANSI, in Spark and in ferrospark."""
    from pyspark.errors import ArithmeticException
    from pyspark.sql import functions as F  # noqa: N812

    with pytest.raises(ArithmeticException):
        sdf.groupBy("k_int").agg(F.sum(F.expr("i32 + 1"))).collect()
    with pytest.raises(fs.SparkArithmeticError):
        fs.aggregate(agg_table, "k_int", [fs.sum(fs.expr("i32 + 1"))])


def test_implicit_casts_like_spark(spark):
    """Spark 4 (ANSI) implicitly casts a string argument of sum / avg / stddev / percentile to
    double and of bool_and / bool_or to boolean (the values here all cast), and a timestamp
    argument of sum / avg to double (seconds since the epoch)."""
    from pyspark.sql import functions as F  # noqa: N812

    t = pa.table(
        {
            "k": pa.array([1, 1, 2, 2, 3], pa.int32()),
            "sn": ["1.5", " 2 ", "-3e2", None, "0.25"],
            "sb": ["true", "false", "TRUE", None, "false"],
            "ts": pa.array(
                [
                    dt.datetime(2024, 1, 1),
                    dt.datetime(2024, 1, 2, 0, 0, 0, 500),
                    None,
                    dt.datetime(1969, 12, 31),
                    dt.datetime(2000, 2, 29),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )
    df = spark.createDataFrame(t)
    spec = [
        (fs.sum("sn"), F.sum("sn"), "float"),
        (fs.avg("sn"), F.avg("sn"), "float"),
        (fs.stddev("sn"), F.stddev("sn"), "float"),
        (fs.percentile("sn", 0.5), F.percentile("sn", 0.5), "pct"),
        (fs.bool_and("sb"), F.bool_and("sb"), "exact"),
        (fs.bool_or("sb"), F.bool_or("sb"), "exact"),
        (fs.min("sn"), F.min("sn"), "exact"),
        (fs.sum("ts"), F.sum("ts"), "float"),
        (fs.avg("ts"), F.avg("ts"), "float"),
    ]
    run_both(t, df, ["k"], spec, "implicit casts")


def test_string_argument_that_does_not_cast_raises(agg_table, sdf):
    """sum over non-numeric strings: Spark fails (CAST_INVALID_INPUT); so must ferrospark."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F  # noqa: N812

    with pytest.raises(PySparkException, match="CAST_INVALID_INPUT"):
        sdf.groupBy("k_int").agg(F.sum("s")).collect()
    with pytest.raises((fs.AnalysisError, fs.SparkArithmeticError)):
        fs.aggregate(agg_table, "k_int", [fs.sum("s")])


ANALYSIS_ERRORS = {
    "sum(boolean)": ("sum", "b"),
    "sum(date)": ("sum", "d"),
    "stddev(timestamp)": ("stddev", "ts"),
    "bool_and(int)": ("bool_and", "i32"),
    "max(unknown column)": ("max", "no_such_column"),
    "percentile -0.1": ("percentile", ("i32", -0.1)),
    "percentile [0.5, 2.0]": ("percentile", ("i32", [0.5, 2.0])),
    "approx_count_distinct rsd 0.5": ("approx_count_distinct", ("i32", 0.5)),
}


@pytest.mark.parametrize("case", list(ANALYSIS_ERRORS))
def test_analysis_errors_match_spark(agg_table, sdf, case):
    """What Spark rejects at analysis time, ferrospark rejects with fs.AnalysisError."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F  # noqa: N812

    fn, arg = ANALYSIS_ERRORS[case]
    args = arg if isinstance(arg, tuple) else (arg,)
    with pytest.raises(AnalysisException):
        sdf.groupBy("k_int").agg(getattr(F, fn)(*args)).collect()
    with pytest.raises(fs.AnalysisError) as err:
        fs.aggregate(agg_table, "k_int", [getattr(fs, fn)(*args)])
    if case == "max(unknown column)":
        assert "no_such_column" in str(err.value)


@pytest.mark.parametrize(
    "values,scale",
    [
        ([Decimal(5 * 10**37), Decimal(4 * 10**37), Decimal(2**64 + 1), Decimal(-(2**100))], 0),
        ([Decimal("99999999999999999999999999999999999999")] * 3, 0),
        ([Decimal("9999999999999999999999999999999999.9999")] * 2, 4),
    ],
    ids=["near-limit", "decimal38-overflow", "decimal38_4-overflow"],
)
def test_decimal_sum_overflow(spark, values, scale):
    """sum(decimal(38,0)) past 38 digits: ANSI raises in both; legacy gives NULL in both."""
    from pyspark.errors import ArithmeticException
    from pyspark.sql import functions as F  # noqa: N812

    t = pa.table(
        {"k": [1] * len(values) + [2], "v": pa.array(values + [Decimal(5)], pa.decimal128(38, scale))}
    )
    df = spark.createDataFrame(t)
    overflows = abs(sum(values)) >= 10 ** (38 - scale)
    if overflows:
        with pytest.raises(ArithmeticException):
            df.groupBy("k").agg(F.sum("v")).collect()
        with pytest.raises(fs.SparkArithmeticError):
            fs.aggregate(t, "k", [fs.sum("v")])
    else:
        run_both(t, df, ["k"], [(fs.sum("v"), F.sum("v"), "exact")], "no overflow")
    old = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        legacy = fs.Session(conf={"spark.sql.ansi.enabled": "false"})
        spec = [(fs.sum("v"), F.sum("v"), "exact"), (fs.count(), F.count("*"), "exact")]
        run_both(t, df, ["k"], spec, "legacy decimal sum", session=legacy)
        run_both(t, df, [], spec, "legacy decimal sum, no keys", session=legacy)
    finally:
        spark.conf.set("spark.sql.ansi.enabled", old)


def test_bigint_sum_overflow_ansi_raises(spark):
    from pyspark.errors import ArithmeticException
    from pyspark.sql import functions as F  # noqa: N812

    t = pa.table(
        {
            "k": pa.array([1, 1, 1, 2, 2], pa.int32()),
            "v": pa.array([2**62, 2**62, 2**62, 5, 7], pa.int64()),
        }
    )
    df = spark.createDataFrame(t)
    with pytest.raises(ArithmeticException):
        df.groupBy("k").agg(F.sum("v")).collect()
    with pytest.raises(ArithmeticException):
        df.agg(F.sum("v")).collect()
    with pytest.raises(fs.SparkArithmeticError):
        fs.aggregate(t, "k", [fs.sum("v")])
    with pytest.raises(fs.SparkArithmeticError):
        fs.aggregate(t, [], [fs.sum("v")])
    with pytest.raises(fs.SparkArithmeticError):
        fs.Session(conf={"spark.sql.ansi.enabled": "true"}).aggregate(t, "k", [fs.sum("v")])


def test_bigint_sum_overflow_legacy_wraps(spark):
    from pyspark.sql import functions as F  # noqa: N812

    t = pa.table(
        {
            "k": pa.array([1, 1, 1, 2, 2, 3, 3], pa.int32()),
            "v": pa.array([2**62, 2**62, 2**62, 5, 7, -(2**63), -1], pa.int64()),
        }
    )
    df = spark.createDataFrame(t)
    old = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        legacy = fs.Session(conf={"spark.sql.ansi.enabled": "false"})
        spec = [(fs.sum("v"), F.sum("v"), "exact"), (fs.avg("v"), F.avg("v"), "float")]
        got = run_both(t, df, ["k"], spec, "legacy wrap", session=legacy)
        # the oracle wraps as two's complement (independent check of the expected values)
        assert dict(arrow_rows(got.select(["k", "sum(v)"])))[1] == 3 * 2**62 - 2**64
        run_both(t, df, [], spec, "legacy wrap, no keys", session=legacy)
    finally:
        spark.conf.set("spark.sql.ansi.enabled", old)


def test_decimal_avg_rounding_half_up(spark):
    """avg(decimal(10,2)) -> decimal(14,6) and avg(decimal(38,4)) -> decimal(38,8), HALF_UP."""
    from pyspark.sql import functions as F  # noqa: N812

    groups = {
        1: ["0.01"] + ["0"] * 31,  # 0.0003125 -> 0.000313 (HALF_EVEN would give 0.000312)
        2: ["-0.01"] + ["0"] * 31,  # -0.0003125 -> -0.000313
        3: ["0.03"] + ["0"] * 31,  # 0.0009375 -> 0.000938
        4: ["0.05"] + ["0"] * 63,  # 0.00078125 -> 0.000781
        5: ["0.01"] + ["0"] * 159,  # 0.0000625 -> 0.000063
        6: ["0.02", "0", "0"],  # 0.00666.. -> 0.006667
        7: ["-0.02", "0", "0"],
        8: ["0.01"] + ["0"] * 6,  # 1/7
        9: ["99999999.99"] * 7 + ["-0.01"],
        10: ["-99999999.99"] * 3,
        11: ["12.34"],
    }
    ks, vs = [], []
    for k, vals in groups.items():
        ks += [k] * len(vals)
        vs += [Decimal(v) for v in vals]
    t = pa.table(
        {
            "k": pa.array(ks, pa.int32()),
            "v": pa.array(vs, pa.decimal128(10, 2)),
            "w": pa.array([v.scaleb(-2) for v in vs], pa.decimal128(38, 4)),
            "x": pa.array([v * 10**20 for v in vs], pa.decimal128(38, 4)),
        }
    )
    df = spark.createDataFrame(t)
    spec = [
        (fs.avg("v"), F.avg("v"), "exact"),
        (fs.avg("w"), F.avg("w"), "exact"),
        (fs.avg("x"), F.avg("x"), "exact"),
        (fs.sum("x"), F.sum("x"), "exact"),
    ]
    got = run_both(t, df, ["k"], spec, "decimal avg rounding")
    # Spark's documented rounding of the oracle itself: HALF_UP, away from zero
    avg_v = dict(arrow_rows(got.select(["k", "avg(v)"])))
    assert avg_v[1] == Decimal("0.000313") and avg_v[2] == Decimal("-0.000313")
    assert avg_v[5] == Decimal("0.000063")


def test_types_match_spark(agg_table, sdf):
    """Result types of the common cases, spelled out (also covered by every comparison)."""
    from pyspark.sql import functions as F  # noqa: N812

    got = fs.aggregate(
        agg_table,
        by=["k_int"],
        aggs=[
            fs.sum("i32"),
            fs.sum("dec"),
            fs.avg("dec"),
            fs.avg("i32"),
            fs.count(),
            fs.sum("dec38"),
            fs.avg("dec38"),
        ],
    )
    assert [arrow_type_as_spark(f.type) for f in got.schema] == [
        "int",
        "bigint",
        "decimal(20,2)",
        "decimal(14,6)",
        "double",
        "bigint",
        "decimal(38,4)",
        "decimal(38,8)",
    ]
    sp = sdf.groupBy("k_int").agg(
        F.sum("i32"), F.sum("dec"), F.avg("dec"), F.avg("i32"), F.count("*"), F.sum("dec38"), F.avg("dec38")
    )
    assert [f.dataType.simpleString() for f in sp.schema.fields] == [
        arrow_type_as_spark(f.type) for f in got.schema
    ]
    assert got.column_names == sp.columns


# --------------------------------------------------------------------------------------------
# Parquet (scan-fused parallel path)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def agg_parquet(agg_table, tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("agg_parquet") / "agg.parquet"
    pq.write_table(agg_table, p, row_group_size=500)
    assert pq.ParquetFile(p).metadata.num_row_groups > 10
    return str(p)


PARQUET_SPEC = ["basic", "object"]


@pytest.mark.parametrize("keys", ["int", "string", "double", "several", "global"])
def test_scan_parquet_matches_spark(spark, agg_parquet, keys):
    df = spark.read.parquet(agg_parquet)
    spec = [x for name in PARQUET_SPEC for x in SPECS[name]()]
    run_both(
        None,
        df,
        KEYSETS[keys],
        spec,
        f"scan_parquet, group by {KEYSETS[keys]}",
        reader=fs.scan_parquet(agg_parquet),
    )


def _columns_as_dictionary() -> int:
    """The scan's ``columns_as_dictionary`` in the last ``fs.aggregate``'s executed plan (a
    metric left out there is 0)."""
    import re

    from ferrospark.aggregate import AggregateResult

    found = re.findall(r"columns_as_dictionary=(\d+)", AggregateResult.last_plan)
    return sum(int(n) for n in found)


@pytest.mark.parametrize("dictionary", [True, False])
def test_scan_string_keys_grouped_on_dictionary_codes_match_spark(spark, agg_table, tmp_path, dictionary):
    """String keys read straight from a scan are grouped on Parquet's dictionary codes; the
    answers must not change when pages are plain, when a key is also an argument, or when the
    filter reads the key (those read the strings themselves)."""
    from pyspark.sql import functions as F  # noqa: N812

    p = str(tmp_path / "keys.parquet")
    pq.write_table(agg_table, p, row_group_size=700, use_dictionary=dictionary)
    df = spark.read.parquet(p)
    small = [
        (fs.count(), F.count("*"), "exact"),
        (fs.sum("i64"), F.sum("i64"), "exact"),
        (fs.sum("dec"), F.sum("dec"), "exact"),
    ]
    scan = fs.scan_parquet(p)
    run_both(None, df, ["k_str"], spec_basic(), "string key on codes", reader=scan)
    assert _columns_as_dictionary() >= 1
    # two string keys, one of many values: the dense tuple table gives way to hashing
    run_both(None, df, ["k_str", "s"], small, "two string keys", reader=fs.scan_parquet(p))
    run_both(None, df, ["k_small", "k_str", "k_bool"], small, "three keys", reader=fs.scan_parquet(p))
    also_argument = small + [(fs.count("k_str"), F.count("k_str"), "exact")]
    scan = fs.scan_parquet(p)
    run_both(None, df, ["k_str"], also_argument, "key also an argument", reader=scan)
    assert _columns_as_dictionary() == 0
    flt = "k_str <> 'apple'"
    scan = fs.scan_parquet(p, filter=flt)
    run_both(None, df.filter(flt), ["k_str"], small, "filter on the key", reader=scan)
    assert _columns_as_dictionary() == 0
    flt = "i32 > 0"
    run_both(
        None,
        df.filter(flt),
        ["k_str"],
        small,
        "filter on another column",
        reader=fs.scan_parquet(p, filter=flt),
    )


def test_read_parquet_unread_reader_and_filter_match_spark(spark, agg_parquet):
    df = spark.read.parquet(agg_parquet)
    run_both(
        None, df, ["k_str"], spec_distinct_one(), "unread read_parquet", reader=fs.read_parquet(agg_parquet)
    )
    flt = "i32 > 0 AND k_dbl IS NOT NULL"
    run_both(
        None,
        df.filter(flt),
        ["k_dbl"],
        spec_basic(),
        "scan_parquet with filter",
        reader=fs.scan_parquet(agg_parquet, filter=flt),
    )
    # a small batch size: many tiny batches per scan thread
    run_both(
        None,
        df,
        ["k_int"],
        spec_object(),
        "scan_parquet batch_size=64",
        reader=fs.scan_parquet(agg_parquet, batch_size=64),
    )
