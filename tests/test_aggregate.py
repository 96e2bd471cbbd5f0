"""Aggregation without Spark: hash vs sort-based vs spilling execution, input flavours, errors,
pickling.

* The same input through every execution path (in-memory hash aggregation, spills forced by a
  256k memory limit, the object-hash -> sort-based fall-back forced by
  `spark.sql.objectHashAggregate.sortBased.fallbackThreshold=1`, both together with a tiny output
  batch size), fed as batches of 1, 7 and 8192 rows, must give the answer a plain-Python
  reference computes, and the same answer as the unlimited run; the metrics must show that the
  path was taken (spill_count > 0, sort_fallbacks > 0, or neither for the plain hash path).
* 10 million groups under `ferrospark.memory.limit=64m` (spilling) equal the unlimited result
  and the analytically known answer.
* Every Arrow flavour (Table, chunked Table, RecordBatch, RecordBatchReader, any object with
  __arrow_c_stream__, polars, pandas with Arrow dtypes, large_string, dictionary (also with a
  different dictionary per batch), string_view) gives the same answer.
* Errors: unknown columns, non-numeric arguments, percentages outside [0, 1], bad config values,
  non-aggregates in aggs.
* AggColumn: pickling round-trips; `.name` is the output column's name.
"""

from __future__ import annotations

import math
import pickle
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import ferrospark as fs
from helpers import NAN, arrow_rows

LIMIT = "ferrospark.memory.limit"
THRESHOLD = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"
BATCH = "ferrospark.batch.size"

# --------------------------------------------------------------------------------------------
# data and a plain-Python reference
# --------------------------------------------------------------------------------------------

S_POOL = ["a", "b", "", "é", "日本", "😀", "zz", "a\x00", "Z", "ß"]


def make_table(n: int = 30_000, seed: int = 11, groups: int = 6000) -> pa.Table:
    """~`groups` groups (k), one huge group (k = 0, 30% of the rows), NULLs everywhere.

    f holds multiples of 0.25 below 2^10, so its sums are exact in any order."""
    rng = random.Random(seed)

    def maybe(v, p=0.1):
        return None if rng.random() < p else v

    k, ks, k_small, x, f, d, s, b = [], [], [], [], [], [], [], []
    for _ in range(n):
        key = 0 if rng.random() < 0.3 else rng.randint(1, groups)
        k.append(key)
        ks.append(f"κ-{key:05d}-{S_POOL[key % len(S_POOL)]}")
        k_small.append(maybe(rng.randint(0, 99), 0.02))
        x.append(maybe(rng.randint(-(10**6), 10**6)))
        f.append(maybe(rng.randint(-4000, 4000) / 4))
        d.append(maybe(Decimal(rng.randint(-(10**9), 10**9)).scaleb(-2)))
        s.append(maybe(rng.choice(S_POOL)))
        b.append(maybe(rng.random() < 0.8, 0.2))
    return pa.table(
        {
            "k": pa.array(k, pa.int64()),
            "ks": pa.array(ks, pa.string()),
            "k_small": pa.array(k_small, pa.int32()),
            "x": pa.array(x, pa.int64()),
            "f": pa.array(f, pa.float64()),
            "d": pa.array(d, pa.decimal128(12, 2)),
            "s": pa.array(s, pa.string()),
            "b": pa.array(b, pa.bool_()),
        }
    )


def spark_percentile(values: list, p: float):
    """Spark's exact percentile: position p * (n - 1), linear interpolation."""
    if not values:
        return None
    v = sorted(float(x) for x in values)
    pos = p * (len(v) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if lo == hi:
        return v[lo]
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def reference(table: pa.Table, by: list[str]) -> dict:
    """key tuple -> {output column name: value}, computed in Python."""
    cols = {c: table.column(c).to_pylist() for c in table.column_names}
    groups: dict = {}
    for i in range(table.num_rows):
        groups.setdefault(tuple(cols[c][i] for c in by), []).append(i)
    out = {}
    for key, idx in groups.items():
        xs = [cols["x"][i] for i in idx if cols["x"][i] is not None]
        fv = [cols["f"][i] for i in idx if cols["f"][i] is not None]
        ds = [cols["d"][i] for i in idx if cols["d"][i] is not None]
        ss = [cols["s"][i] for i in idx if cols["s"][i] is not None]
        bs = [cols["b"][i] for i in idx if cols["b"][i] is not None]
        out[key] = {
            "count(1)": len(idx),
            "count(x)": len(xs),
            "sum(x)": sum(xs) if xs else None,
            "min(x)": min(xs) if xs else None,
            "max(x)": max(xs) if xs else None,
            "sum(d)": sum(ds) if ds else None,
            "avg(f)": sum(fv) / len(fv) if fv else None,
            "min(s)": min(ss, key=lambda v: v.encode()) if ss else None,
            "max(s)": max(ss, key=lambda v: v.encode()) if ss else None,
            "bool_and(b)": all(bs) if bs else None,
            "bool_or(b)": any(bs) if bs else None,
            "collect_set(s)": tuple(sorted(set(ss), key=repr)),  # sorted like canon() sorts
            "collect_list(x)": tuple(sorted(xs, key=repr)),
            "percentile(x, 0.5, 1)": spark_percentile(xs, 0.5),
            "percentile(f, array(0.1, 0.9), 1)": None
            if not fv
            else (spark_percentile(fv, 0.1), spark_percentile(fv, 0.9)),
            "count(DISTINCT x)": len(set(xs)),
            "sum(DISTINCT x)": sum(set(xs)) if xs else None,
            "count(DISTINCT s)": len(set(ss)),
        }
    return out


@pytest.fixture(scope="module")
def tables() -> dict[str, pa.Table]:
    # the object (collect / percentile / approx) paths run on the smaller table: with a tiny
    # memory limit and tiny batches they are the slow ones; one-row batches (a call each) of
    # the big table's sets run on a third of its rows
    return {
        "big": make_table(),
        "small": make_table(n=3000, seed=12, groups=800),
        "big_one_row": make_table(n=10_000, seed=13, groups=2000),
    }


@pytest.fixture(scope="module")
def table(tables) -> pa.Table:
    return tables["big"]


@pytest.fixture(scope="module")
def ref_cache(tables):
    cache: dict = {}

    def get(which: str, by: tuple[str, ...]):
        if (which, by) not in cache:
            cache[which, by] = reference(tables[which], list(by))
        return cache[which, by]

    return get


# --------------------------------------------------------------------------------------------
# comparison helpers
# --------------------------------------------------------------------------------------------

UNORDERED = ("collect_set(", "collect_list(")
APPROX = ("stddev", "var_pop", "variance", "percentile")


def canon(tbl: pa.Table, nkeys: int) -> dict:
    """key tuple -> {column: normalised value}; list results of collect_* sorted."""
    names = tbl.column_names
    out = {}
    for r in arrow_rows(tbl):
        row = {}
        for name, v in zip(names[nkeys:], r[nkeys:]):
            if name.startswith(UNORDERED) and v is not None:
                v = tuple(sorted(v, key=repr))
            row[name] = v
        assert r[:nkeys] not in out, f"key {r[:nkeys]!r} returned twice"
        out[r[:nkeys]] = row
    return out


def close(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def diff_results(got: dict, expected: dict, columns=None) -> list[str]:
    problems = []
    if set(got) != set(expected):
        miss = sorted(set(expected) - set(got), key=repr)[:5]
        extra = sorted(set(got) - set(expected), key=repr)[:5]
        problems.append(f"groups differ: missing {miss}, unexpected {extra}")
    for key in sorted(set(got) & set(expected), key=repr):
        for col, ev in expected[key].items():
            if columns is not None and col not in columns:
                continue
            gv = got[key].get(col, "<no such column>")
            same = (
                close(gv, ev) if col.startswith(APPROX) else (gv == ev and type(gv) is type(ev)) or gv is ev
            )
            if not same:
                problems.append(f"key={key!r} {col}: got {gv!r}, expected {ev!r}")
                if len(problems) > 8:
                    return problems
    return problems


def rebatch(tbl: pa.Table, size: int) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(tbl.schema, tbl.to_batches(max_chunksize=size))


# --------------------------------------------------------------------------------------------
# hash vs sort-based vs spilling
# --------------------------------------------------------------------------------------------


def aggs_fixed():
    return [
        fs.count(),
        fs.count("x"),
        fs.sum("x"),
        fs.min("x"),
        fs.max("x"),
        fs.sum("d"),
        fs.avg("f"),
        fs.min("s"),
        fs.max("s"),
        fs.bool_and("b"),
        fs.bool_or("b"),
        fs.stddev("f"),
        fs.var_pop("x"),
    ]


def aggs_object():
    return [
        fs.collect_set("s"),
        fs.collect_list("x"),
        fs.percentile("x", 0.5),
        fs.percentile("f", [0.1, 0.9]),
        fs.approx_count_distinct("x"),
        fs.count(),
        fs.sum("x"),
    ]


def aggs_distinct():
    return [fs.count_distinct("x"), fs.sum_distinct("x"), fs.count(), fs.sum("x"), fs.min("s")]


AGGSETS = {
    # name: (table, keys, aggregates)
    "fixed": ("big", ("k",), aggs_fixed),
    "fixed_str_keys": ("big", ("ks", "b"), aggs_fixed),
    "object_few_keys": ("small", ("k_small",), aggs_object),  # <= 128 keys: no fall-back
    "object": ("small", ("ks",), aggs_object),  # ~800 keys: falls back to sort-based by default
    "distinct": ("big", ("k",), aggs_distinct),
}

MODES = {
    "hash": {},
    "spill": {LIMIT: "256k"},
    "sort_fallback": {THRESHOLD: "1"},
    "spill_fallback_batch7": {LIMIT: "256k", THRESHOLD: "1", BATCH: "7"},
}


@pytest.fixture(scope="module")
def unlimited(tables):
    """The plain run (default session, one 8192-row batch size) of every aggregate set."""
    out = {}
    for name, (which, by, aggs) in AGGSETS.items():
        out[name] = fs.aggregate(rebatch(tables[which], 8192), by=list(by), aggs=aggs())
    return out


@pytest.mark.parametrize("batch_size", [1, 7, 8192])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("aggset", list(AGGSETS))
def test_execution_paths_agree(tables, ref_cache, unlimited, aggset, mode, batch_size):
    which, by, aggs = AGGSETS[aggset]
    plain = unlimited[aggset]
    if batch_size == 1 and which == "big":
        which = "big_one_row"
        plain = fs.aggregate(rebatch(tables[which], 8192), by=list(by), aggs=aggs())
    table = tables[which]
    session = fs.Session(conf=MODES[mode])
    got = fs.aggregate(rebatch(table, batch_size), by=list(by), aggs=aggs(), session=session)
    metrics = fs.last_aggregate_metrics()

    assert got.column_names == plain.column_names
    assert got.schema.types == plain.schema.types, f"{got.schema} vs {plain.schema}"
    got_c = canon(got, len(by))
    ref = ref_cache(which, by)
    checked = set(got.column_names) & set(next(iter(ref.values())))
    assert len(checked) >= 4, checked
    problems = diff_results(got_c, ref, columns=checked)
    assert not problems, f"[{aggset} / {mode} / batch {batch_size}] vs Python reference:\n  " + "\n  ".join(
        problems
    )
    base = canon(plain, len(by))
    problems = diff_results(got_c, base)
    assert not problems, f"[{aggset} / {mode} / batch {batch_size}] vs unlimited run:\n  " + "\n  ".join(
        problems
    )

    # the metrics show the path that was taken
    assert metrics, "no metrics recorded"
    assert metrics[0]["input_rows"] == table.num_rows, metrics
    assert metrics[-1]["output_rows"] == got.num_rows, metrics
    spills = sum(m["spill_count"] for m in metrics)
    fallbacks = sum(m["sort_fallbacks"] for m in metrics)
    if LIMIT in MODES[mode] and not aggset.startswith("object"):
        assert spills > 0, f"256k should force spills: {metrics}"
        assert sum(m["spilled_rows"] for m in metrics) > 0 and sum(m["spilled_bytes"] for m in metrics) > 0
    if THRESHOLD in MODES[mode] and aggset.startswith("object"):
        assert fallbacks > 0, f"fallbackThreshold=1 should force the sort-based path: {metrics}"
    if mode == "hash":
        assert spills == 0, metrics
        if aggset == "object_few_keys" or not aggset.startswith("object"):
            assert fallbacks == 0, f"hash path expected: {metrics}"
        else:  # more than 128 keys: Spark's default threshold
            assert fallbacks > 0, f"> 128 keys should fall back to sort-based: {metrics}"


def test_approx_count_distinct_is_close_to_exact(unlimited, ref_cache):
    """Sanity of the estimate itself (bit-exactness against Spark is in the Spark suite)."""
    got = canon(unlimited["object"], 1)
    ref = ref_cache("small", ("ks",))
    for key, row in got.items():
        exact = ref[key]["count(DISTINCT x)"]
        est = row["approx_count_distinct(x)"]
        assert abs(est - exact) <= max(2, 0.2 * exact), (key, est, exact)


def test_ten_million_groups_under_64mb():
    """10M distinct keys, each seen twice far apart, aggregated under a 64 MB limit."""
    g = 10_000_000
    rng = np.random.default_rng(7)
    keys = np.concatenate([rng.permutation(g), rng.permutation(g)]).astype(np.int64)
    x = np.concatenate([keys[:g], np.ones(g, dtype=np.int64)])
    t = pa.table({"k": keys, "x": x})
    aggs = [fs.sum("x"), fs.count(), fs.min("x")]
    limited = fs.Session(conf={LIMIT: "64m"}).aggregate(t, "k", aggs)
    metrics = fs.last_aggregate_metrics()
    assert sum(m["spill_count"] for m in metrics) > 0, f"10M groups must not fit in 64 MB: {metrics}"
    assert all(m["peak_memory"] <= 64 * 2**20 for m in metrics), metrics
    limited = limited.sort_by("k")
    # the answer, known analytically: every key k has rows x = k and x = 1
    ar = np.arange(g, dtype=np.int64)
    assert np.array_equal(limited.column("k").to_numpy(), ar)
    assert np.array_equal(limited.column("sum(x)").to_numpy(), ar + 1)
    assert np.array_equal(limited.column("count(1)").to_numpy(), np.full(g, 2))
    assert np.array_equal(limited.column("min(x)").to_numpy(), np.minimum(ar, 1))
    full = fs.aggregate(t, "k", aggs).sort_by("k")
    assert full.equals(limited)


def test_spill_with_one_row_batches_and_object_aggregates():
    """5000 one-row batches under a 256k limit on the sort-based (object) path, with the common
    default of 1024 open files per process: must not run out of file handles (Spark spills
    when memory runs out, not every few rows, and merges its spill files)."""
    resource = pytest.importorskip("resource")
    t = make_table(n=5000, seed=3, groups=1200)
    ref = reference(t, ["ks"])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, soft), hard))
    try:
        got = fs.Session(conf={LIMIT: "256k"}).aggregate(
            rebatch(t, 1), by="ks", aggs=[fs.collect_set("s"), fs.percentile("x", 0.5)]
        )
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    problems = diff_results(canon(got, 1), ref, columns={"collect_set(s)", "percentile(x, 0.5, 1)"})
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------
# input flavours
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flavour_base() -> pa.Table:
    rng = random.Random(5)
    n = 2000
    # Keys and values past 12 bytes too: string views keep those out of line.
    longer = ["grüße", "ключ", "a grouping key longer than twelve bytes"]
    g = [None if rng.random() < 0.05 else rng.choice(S_POOL + longer) for _ in range(n)]
    return pa.table(
        {
            "g": pa.array(g, pa.string()),
            "x": pa.array(
                [None if rng.random() < 0.1 else rng.randint(-50, 50) for _ in range(n)], pa.int64()
            ),
            "s": pa.array(
                [
                    None if rng.random() < 0.1 else rng.choice(S_POOL + ["exactly 13 by", "twelve bytes"])
                    for _ in range(n)
                ],
                pa.string(),
            ),
        }
    )


FLAVOUR_AGGS = [
    "count(1)",
    "sum(x)",
    "min(s)",
    "max(s)",
    "count(DISTINCT s)",
    "collect_set(s)",
]


def _flavour_aggs():
    return [fs.count(), fs.sum("x"), fs.min("s"), fs.max("s"), fs.count_distinct("s"), fs.collect_set("s")]


class _StreamOnly:
    """An object that only speaks the Arrow PyCapsule stream protocol."""

    def __init__(self, t: pa.Table):
        self._t = t

    def __arrow_c_stream__(self, requested_schema=None):
        return self._t.__arrow_c_stream__(requested_schema)


def _cast_strings(t: pa.Table, typ: pa.DataType) -> pa.Table:
    return t.cast(
        pa.schema([pa.field(f.name, typ if pa.types.is_string(f.type) else f.type) for f in t.schema])
    )


def _dict_encoded(t: pa.Table) -> pa.Table:
    return pa.table({c: t.column(c).dictionary_encode() if c != "x" else t.column(c) for c in t.column_names})


def _dict_per_batch(t: pa.Table) -> pa.Table:
    """Dictionary columns whose dictionary differs from chunk to chunk."""
    cols = {}
    for c in t.column_names:
        if c == "x":
            cols[c] = t.column(c)
            continue
        chunks = []
        for start in range(0, t.num_rows, 300):
            chunks.append(t.column(c).slice(start, 300).combine_chunks().dictionary_encode())
        cols[c] = pa.chunked_array(chunks)
    return pa.table(cols)


FLAVOURS = {
    "table": lambda t: t,
    "chunked_table": lambda t: pa.Table.from_batches(t.to_batches(max_chunksize=37)),
    "record_batch": lambda t: t.combine_chunks().to_batches()[0],
    "reader": lambda t: rebatch(t, 100),
    "c_stream_object": lambda t: _StreamOnly(t),
    "large_string": lambda t: _cast_strings(t, pa.large_string()),
    "string_view": lambda t: _cast_strings(t, pa.string_view()),
    "string_view_slices": lambda t: rebatch(_cast_strings(t, pa.string_view()), 37),
    "dictionary": _dict_encoded,
    "dictionary_per_batch": _dict_per_batch,
    "polars": lambda t: pytest.importorskip("polars").from_arrow(t),
    "pandas_arrow_dtypes": lambda t: t.to_pandas(types_mapper=pytest.importorskip("pandas").ArrowDtype),
}


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_every_arrow_flavour_gives_the_same_answer(flavour_base, flavour):
    data = FLAVOURS[flavour](flavour_base)
    got = fs.aggregate(data, by="g", aggs=_flavour_aggs())
    assert got.column_names == ["g"] + FLAVOUR_AGGS
    for name in ("g", "min(s)", "max(s)"):
        typ = got.schema.field(name).type
        if pa.types.is_dictionary(typ):
            typ = typ.value_type
        assert typ in (pa.string(), pa.large_string(), pa.string_view()), f"{name}: {typ}"
    problems = diff_results(canon(got, 1), reference_flavour(flavour_base))
    assert not problems, f"[{flavour}]\n  " + "\n  ".join(problems)


def reference_flavour(t: pa.Table) -> dict:
    g, x, s = (t.column(c).to_pylist() for c in ("g", "x", "s"))
    groups: dict = {}
    for gi, xi, si in zip(g, x, s):
        groups.setdefault((gi,), []).append((xi, si))
    out = {}
    for key, rows in groups.items():
        xs = [a for a, _ in rows if a is not None]
        ss = [b for _, b in rows if b is not None]
        out[key] = {
            "count(1)": len(rows),
            "sum(x)": sum(xs) if xs else None,
            "min(s)": min(ss, key=lambda v: v.encode()) if ss else None,
            "max(s)": max(ss, key=lambda v: v.encode()) if ss else None,
            "count(DISTINCT s)": len(set(ss)),
            "collect_set(s)": tuple(sorted(set(ss), key=repr)),
        }
    return out


def test_empty_batches_and_empty_reader(flavour_base):
    """Empty batches between data batches change nothing; an empty stream gives no groups (and
    one row without keys)."""
    schema = flavour_base.schema
    empty = pa.RecordBatch.from_pylist([], schema=schema)
    batches = []
    for b in flavour_base.to_batches(max_chunksize=111):
        batches += [empty, b, empty]
    got = fs.aggregate(pa.RecordBatchReader.from_batches(schema, batches), "g", _flavour_aggs())
    assert not diff_results(canon(got, 1), reference_flavour(flavour_base))

    none = fs.aggregate(pa.RecordBatchReader.from_batches(schema, [empty, empty]), "g", _flavour_aggs())
    assert none.num_rows == 0 and none.column_names == ["g"] + FLAVOUR_AGGS
    glob = fs.aggregate(pa.RecordBatchReader.from_batches(schema, []), [], _flavour_aggs())
    assert arrow_rows(glob) == [(0, None, None, None, 0, ())]


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


NAN_F = float("nan")


@pytest.fixture(scope="module")
def small() -> pa.Table:
    return pa.table(
        {
            "k": pa.array([1, 1, 2], pa.int64()),
            "x": pa.array([1.0, 2.0, NAN_F], pa.float64()),
            "s": ["a", "b", "c"],
            "b": [True, False, None],
        }
    )


@pytest.mark.parametrize(
    "by,aggs",
    [
        (["no_such_col"], lambda: [fs.count()]),
        (["k"], lambda: [fs.sum("no_such_col")]),
        (["k"], lambda: [fs.sum(fs.col("no_such_col") + 1)]),
        (["k"], lambda: [fs.max(fs.expr("no_such_col * 2"))]),
        ([fs.col("no_such_col")], lambda: [fs.count()]),
        (["k"], lambda: [fs.count_distinct("x", "no_such_col")]),
        (["k"], lambda: [fs.percentile("no_such_col", 0.5)]),
    ],
    ids=["by", "sum", "expr-arg", "sql-arg", "by-column", "count_distinct-2nd", "percentile"],
)
def test_unknown_column_is_an_analysis_error_naming_it(small, by, aggs):
    with pytest.raises(fs.AnalysisError, match="no_such_col"):
        fs.aggregate(small, by, aggs())


def test_sum_of_non_numeric_string_raises(small):
    """Spark casts the string to double and fails on 'a' (CAST_INVALID_INPUT)."""
    with pytest.raises((fs.AnalysisError, fs.SparkArithmeticError)):
        fs.aggregate(small, "k", [fs.sum("s")])


@pytest.mark.parametrize(
    "agg",
    [
        lambda: fs.sum("b"),
        lambda: fs.avg("b"),
        lambda: fs.bool_and("x"),
        lambda: fs.stddev("b"),
    ],
    ids=["sum(boolean)", "avg(boolean)", "bool_and(double)", "stddev(boolean)"],
)
def test_wrong_argument_type_is_an_analysis_error(small, agg):
    with pytest.raises(fs.AnalysisError):
        fs.aggregate(small, "k", [agg()])


@pytest.mark.parametrize("p", [1.5, -0.1, [0.5, 2.0], [-1.0]])
def test_percentage_outside_unit_interval_raises(small, p):
    with pytest.raises((fs.AnalysisError, ValueError)) as err:
        fs.aggregate(small, "k", [fs.percentile("x", p)])
    assert "percent" in str(err.value).lower()


@pytest.mark.parametrize(
    "key,value",
    [
        (LIMIT, "lots"),
        (LIMIT, "-5m"),
        (LIMIT, "12 parsecs"),
        (BATCH, "0"),
        (BATCH, "abc"),
        (BATCH, "-3"),
        (THRESHOLD, "x"),
        (THRESHOLD, "-1"),
        ("spark.sql.ansi.enabled", "maybe"),
    ],
)
def test_bad_config_value_is_a_config_error(small, key, value):
    with pytest.raises(fs.ConfigError, match=key.replace(".", r"\.")):
        fs.Session(conf={key: value}).aggregate(small, "k", [fs.count()])


@pytest.mark.parametrize(
    "aggs",
    [
        lambda: [fs.col("x")],
        lambda: ["x"],
        lambda: [fs.sum("x"), 3],
        lambda: [None],
        lambda: "x",
        lambda: fs.expr("sum(x)"),
    ],
    ids=["column", "string", "int", "none", "bare-string", "bare-expr"],
)
def test_non_aggregate_in_aggs_is_a_type_error(small, aggs):
    with pytest.raises(TypeError):
        fs.aggregate(small, "k", aggs())


def test_bare_column_as_aggs_error_says_what_is_wrong(small):
    with pytest.raises(TypeError, match="aggregate"):
        fs.aggregate(small, "k", fs.col("x"))


def test_non_arrow_data_is_a_type_error():
    with pytest.raises(TypeError):
        fs.aggregate([{"k": 1}], "k", [fs.count()])


# --------------------------------------------------------------------------------------------
# AggColumn
# --------------------------------------------------------------------------------------------


def agg_columns():
    return [
        fs.sum("x").alias("s"),
        fs.count(),
        fs.count("x"),
        fs.first("x", ignore_nulls=True),
        fs.last("x"),
        fs.count_distinct("x", "s"),
        fs.sum_distinct("x"),
        fs.percentile("x", 0.5),
        fs.percentile("x", [0.1, 0.5]),
        fs.approx_count_distinct("x", 0.02),
        fs.sum(fs.col("x") * (1 - fs.col("f"))),
        fs.avg(fs.expr("x + 1")).alias("a"),
        fs.collect_list("s"),
        fs.stddev("f"),
        fs.mean("f"),
        fs.bool_or(fs.col("x") > 0),
    ]


@pytest.fixture(scope="module")
def pickle_table() -> pa.Table:
    # first/last see NULLs at the start of group 1 and at the end of group 2
    return pa.table(
        {
            "k": pa.array([1, 1, 1, 2, 2, 2], pa.int64()),
            "x": pa.array([None, 3, 4, 5, 6, None], pa.int64()),
            "f": pa.array([0.5, 0.25, None, 1.0, 0.0, 2.0], pa.float64()),
            "s": ["a", None, "b", "c", "c", "d"],
        }
    )


@pytest.mark.parametrize("i", range(len(agg_columns())))
def test_agg_column_pickle_round_trip(pickle_table, i):
    a = agg_columns()[i]
    r = pickle.loads(pickle.dumps(a))
    assert isinstance(r, fs.AggColumn)
    assert str(r) == str(a) and repr(r) == repr(a) and r.name == a.name
    want = fs.aggregate(pickle_table, "k", [a])
    got = fs.aggregate(pickle_table, "k", [r])
    assert got.equals(want), f"{got.to_pylist()} != {want.to_pylist()}"


def test_first_ignore_nulls_survives_pickling(pickle_table):
    r = pickle.loads(pickle.dumps(fs.first("x", ignore_nulls=True)))
    got = fs.aggregate(pickle_table, "k", [r, fs.first("x").alias("plain")]).sort_by("k")
    assert got.column("first(x)").to_pylist() == [3, 5]
    assert got.column("plain").to_pylist() == [None, 5]


NAMED_AGGS = [
    (lambda: fs.sum("x"), "sum(x)"),
    (lambda: fs.count(), "count(1)"),
    (lambda: fs.count("*"), "count(1)"),
    (lambda: fs.count_distinct("x"), "count(DISTINCT x)"),
    (lambda: fs.count_distinct("x", "s"), "count(DISTINCT x, s)"),
    (lambda: fs.sum_distinct("x"), "sum(DISTINCT x)"),
    (lambda: fs.mean("x"), "avg(x)"),
    (lambda: fs.first("x", ignore_nulls=True), "first(x)"),
    (lambda: fs.stddev("f"), "stddev(f)"),
    (lambda: fs.percentile("x", 0.5), "percentile(x, 0.5, 1)"),
    (lambda: fs.percentile("x", [0.1, 0.5]), "percentile(x, array(0.1, 0.5), 1)"),
    (lambda: fs.approx_count_distinct("x", 0.02), "approx_count_distinct(x)"),
    (lambda: fs.sum(fs.col("x") + 1), "sum((x + 1))"),
    (lambda: fs.sum(fs.expr("x + 1")), "sum((x + 1))"),
    (lambda: fs.sum("x").alias("total"), "total"),
]
NAMED_IDS = [f"{i}:{name}" for i, (_, name) in enumerate(NAMED_AGGS)]


@pytest.mark.parametrize("agg,name", NAMED_AGGS, ids=NAMED_IDS)
def test_output_column_names_are_sparks(pickle_table, agg, name):
    """Spark's default names (each checked against Spark 4.x's `df.columns`)."""
    got = fs.aggregate(pickle_table, "k", [agg()])
    assert got.column_names == ["k", name]


@pytest.mark.parametrize("agg,name", NAMED_AGGS, ids=NAMED_IDS)
def test_agg_column_name_is_the_output_column_name(pickle_table, agg, name):
    """`AggColumn.name` is documented as "the output column name"."""
    a = agg()
    got = fs.aggregate(pickle_table, "k", [a])
    assert a.name == got.column_names[1]


def test_session_method_equals_session_keyword(table):
    s = fs.Session(conf={BATCH: "100"})
    a = s.aggregate(table, ["k_small"], aggs_fixed())
    b = fs.aggregate(table, ["k_small"], aggs_fixed(), session=s)
    assert a.sort_by("k_small").equals(b.sort_by("k_small"))


def test_nan_and_negative_zero_keys_group_together():
    """One NaN group (every bit pattern) and -0.0 with 0.0, output as 0.0."""
    bits = np.array([0x7FF8000000000000, 0xFFF8000000000001, 0x8000000000000000, 0, 0x7FF8000000000000])
    k = pa.array(bits.astype(np.uint64).view(np.float64))
    got = fs.aggregate(pa.table({"k": k, "v": [1, 2, 3, 4, 5]}), "k", [fs.sum("v")])
    rows = sorted(arrow_rows(got), key=repr)
    assert rows == sorted([(NAN, 8), (0.0, 7)], key=repr)
