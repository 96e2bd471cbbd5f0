"""Pruning is proven by metrics and must never change the answer.

Row groups by statistics, pages by the page index, row groups by bloom filters (pyarrow- and
Spark-written) and by dictionaries; `spark.sql.parquet.filterPushdown=false` turns it all off.
NaN (absent from Parquet min/max statistics) and -0.0 must never be pruned wrongly.
"""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from helpers import (
    arrow_rows,
    assert_tables_equal,
    check_metrics_consistent,
    row_groups_pruned,
    spark_eq,
    spark_gt,
)

NAN = float("nan")


def scan(path, flt=None, session=None, **kw):
    """Run a scan to completion; return (table, metrics)."""
    s = (session or fs).scan_parquet(path, filter=flt, **kw)
    t = s.read_all()
    m = s.metrics()
    check_metrics_consistent(m, t)
    return t, m


def _sort(t: pa.Table, key="key") -> pa.Table:
    return t.sort_by(key)


# ------------------------------------------------------------------------------------------
# statistics and page index on sorted data
# ------------------------------------------------------------------------------------------


def test_sorted_file_layout(sorted_paged_file):
    """Guard for the fixture: 20 row groups, a page index, many pages per row group."""
    path, _ = sorted_paged_file
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 20
    col = md.row_group(0).column(0)
    assert col.has_offset_index and col.has_column_index


@pytest.mark.parametrize(
    "flt, lo, hi",
    [
        ("key BETWEEN 5050 AND 5120", 5050, 5120),
        ("key >= 19950", 19950, 19999),
        ("key < 30", 0, 29),
        ("key = 12345", 12345, 12345),
        ("key > 7000 AND key <= 7001", 7001, 7001),
    ],
)
def test_statistics_and_page_pruning(sorted_paged_file, flt, lo, hi):
    path, t = sorted_paged_file
    got, m = scan(path, flt)
    exp = t.filter(pc.and_(pc.greater_equal(t["key"], lo), pc.less_equal(t["key"], hi)))
    assert_tables_equal(_sort(got), exp, context=flt)
    assert m["row_groups_total"] == 20
    assert m["row_groups_pruned_statistics"] == 19, m  # the answer lies in a single row group
    assert m["row_groups_read"] == 1, m
    assert m["pages_total"] > 0 and m["pages_pruned"] > 0, m
    assert m["rows_read"] < 1000, f"page index should have cut rows inside the row group: {m}"


def test_statistics_pruning_on_second_column(sorted_paged_file):
    path, t = sorted_paged_file
    got, m = scan(path, "grp IN (3, 17) AND v > 0")
    exp = t.filter(pc.and_(pc.is_in(t["grp"], pa.array([3, 17], pa.int32())), pc.greater(t["v"], 0)))
    assert_tables_equal(_sort(got), exp)
    assert m["row_groups_pruned_statistics"] == 18, m


def test_string_prefix_pruning(sorted_paged_file):
    path, t = sorted_paged_file
    for flt in ("name LIKE 'name-0123%'", "name >= 'name-012300' AND name < 'name-012400'"):
        got, m = scan(path, flt)
        exp = t.filter(pc.starts_with(t["name"], "name-0123"))
        assert_tables_equal(_sort(got), exp, context=flt)
        assert m["row_groups_pruned_statistics"] == 19, (flt, m)


def test_startswith_column_prunes(sorted_paged_file):
    path, t = sorted_paged_file
    got, m = scan(path, fs.col("name").startswith("name-0199"))
    exp = t.filter(pc.starts_with(t["name"], "name-0199"))
    assert_tables_equal(_sort(got), exp)
    assert m["row_groups_pruned_statistics"] == 19, m


def test_no_pruning_when_nothing_can_be_skipped(sorted_paged_file):
    path, t = sorted_paged_file
    got, m = scan(path, "v > -2000")  # every row matches
    assert_tables_equal(_sort(got), t)
    assert row_groups_pruned(m) == 0 and m["pages_pruned"] == 0, m


def test_everything_pruned(sorted_paged_file):
    path, t = sorted_paged_file
    got, m = scan(path, "key > 1000000 OR key < -5")
    assert got.num_rows == 0
    assert m["row_groups_pruned_statistics"] == 20 and m["row_groups_read"] == 0, m
    assert got.schema.names == t.schema.names


def test_filter_pushdown_disabled(sorted_paged_file):
    path, t = sorted_paged_file
    flt = "key BETWEEN 5050 AND 5120"
    off = fs.Session(conf={"spark.sql.parquet.filterPushdown": "false"})
    got_off, m_off = scan(path, flt, session=off)
    got_on, m_on = scan(path, flt)
    assert_tables_equal(_sort(got_off), _sort(got_on))
    assert got_off.num_rows == 71
    assert row_groups_pruned(m_off) == 0 and m_off["pages_pruned"] == 0, m_off
    assert m_off["row_groups_read"] == 20 and m_off["rows_read"] == 20_000, m_off
    assert m_on["row_groups_pruned_statistics"] > 0


def test_plan_metrics_before_draining(sorted_paged_file):
    path, _ = sorted_paged_file
    s = fs.scan_parquet(path, filter="key < 1500")
    m = s.metrics()  # plan counts are available right after creation
    assert m["files_total"] == 1
    t = s.read_all()
    m = s.metrics()
    assert t.num_rows == 1500 and m["row_groups_pruned_statistics"] == 18, m


def test_null_count_pruning(tmp_path):
    # rg0: no nulls, rg1: all null, rg2: some nulls
    vals = list(range(100)) + [None] * 100 + [None if i % 2 else i for i in range(100)]
    t = pa.table({"x": pa.array(vals, pa.int64()), "i": pa.array(range(300), pa.int64())})
    p = tmp_path / "nulls.parquet"
    pq.write_table(t, p, row_group_size=100)
    got, m = scan(str(p), "x IS NULL")
    assert sorted(got["i"].to_pylist()) == list(range(100, 200)) + list(range(201, 300, 2))
    assert m["row_groups_pruned_statistics"] == 1, m  # rg0 has null_count 0
    got, m = scan(str(p), "x IS NOT NULL")
    assert sorted(got["i"].to_pylist()) == list(range(100)) + list(range(200, 300, 2))
    assert m["row_groups_pruned_statistics"] == 1, m  # rg1 is all null
    got, m = scan(str(p), "x > 50")  # rg1 (all null) can never satisfy a comparison
    assert sorted(got["i"].to_pylist()) == list(range(51, 100)) + [200 + i for i in range(52, 100, 2)]
    assert m["row_groups_pruned_statistics"] == 1, m


# ------------------------------------------------------------------------------------------
# NaN and -0.0: statistics exclude NaN, so min/max alone must never prune a NaN row
# ------------------------------------------------------------------------------------------

NAN_GROUPS = [
    [1.0, 2.0, NAN, 3.0],  # NaN hidden behind max = 3
    [NAN, NAN, NAN, NAN],  # all NaN: no usable min/max
    [4.0, 5.0, 6.0, 5.5],
    [-1.0, NAN, 0.0, None],
    [None, None, None, None],
    [-0.0, -0.0, -0.0, -0.0],  # only negative zeros
    [0.0, 0.0, 0.0, 0.0],  # only positive zeros
    [-5.0, -0.0, -3.0, -4.0],  # max is -0.0
]


@pytest.fixture(scope="module", params=["float64", "float32"])
def nan_file(request, tmp_path_factory):
    typ = getattr(pa, request.param)()
    vals = [v for g in NAN_GROUPS for v in g]
    t = pa.table({"x": pa.array(vals, typ), "i": pa.array(range(len(vals)), pa.int64())})
    p = tmp_path_factory.mktemp("nan") / f"nan_{request.param}.parquet"
    pq.write_table(t, p, row_group_size=4, write_page_index=True, max_rows_per_page=2)
    assert pq.ParquetFile(p).metadata.num_row_groups == len(NAN_GROUPS)
    return str(p), vals


NAN_CASES = [
    ("x > 5", lambda v: spark_gt(v, 5.0)),
    ("x >= 6", lambda v: spark_gt(v, 6.0) or spark_eq(v, 6.0)),
    ("x > 3", lambda v: spark_gt(v, 3.0)),
    ("x = CAST('NaN' AS DOUBLE)", lambda v: spark_eq(v, NAN)),
    ("x >= CAST('NaN' AS DOUBLE)", lambda v: spark_eq(v, NAN)),
    ("x < CAST('NaN' AS DOUBLE)", lambda v: None if v is None else not math.isnan(v)),
    ("x != 3", lambda v: None if v is None else not spark_eq(v, 3.0)),
    ("NOT (x <= 5)", lambda v: spark_gt(v, 5.0)),
    ("x IN (CAST('NaN' AS DOUBLE), 5)", lambda v: spark_eq(v, NAN) or spark_eq(v, 5.0)),
    ("x <=> CAST('NaN' AS DOUBLE)", lambda v: v is not None and math.isnan(v)),
    ("x = 0", lambda v: spark_eq(v, 0.0)),
    ("x = -0.0", lambda v: spark_eq(v, 0.0)),
    ("x >= 0", lambda v: spark_gt(v, 0.0) or spark_eq(v, 0.0)),
    ("x < 0", lambda v: spark_gt(0.0, v)),
    ("x > -0.5 AND x < 0.5", lambda v: spark_gt(v, -0.5) and spark_gt(0.5, v)),
    ("x BETWEEN -0.0 AND 0.0", lambda v: spark_eq(v, 0.0)),
]


@pytest.mark.parametrize("flt, pred", NAN_CASES, ids=[c[0] for c in NAN_CASES])
def test_nan_and_negative_zero_never_wrongly_pruned(nan_file, flt, pred):
    path, vals = nan_file
    expected = sorted(i for i, v in enumerate(vals) if pred(v))
    for session in (None, fs.Session(conf={"spark.sql.parquet.filterPushdown": "false"})):
        got, _ = scan(path, flt, session=session)
        assert sorted(got["i"].to_pylist()) == expected, (flt, "pushdown off" if session else "pushdown on")


def test_nan_cases_agree_with_spark(spark, nan_file):
    """The hand-written Spark semantics of NAN_CASES, checked against PySpark itself."""
    path, vals = nan_file
    df = spark.read.parquet(path)
    wrong = {}
    for flt, pred in NAN_CASES:
        expected = sorted(i for i, v in enumerate(vals) if pred(v))
        got = sorted(r["i"] for r in df.filter(flt).select("i").collect())
        if got != expected:
            wrong[flt] = (expected, got)
    assert not wrong, wrong


def test_nan_rows_survive_statistics_pruning_on_real_data(tmp_path):
    rng = random.Random(2)
    vals = []
    for g in range(30):
        block = [rng.uniform(-10, 4) for _ in range(100)]
        if g % 3 == 0:
            block[rng.randrange(100)] = NAN
        vals.extend(block)
    t = pa.table({"x": pa.array(vals), "i": pa.array(range(len(vals)))})
    p = tmp_path / "nan_real.parquet"
    pq.write_table(t, p, row_group_size=100)
    got, m = scan(str(p), "x > 5")
    assert sorted(got["i"].to_pylist()) == [i for i, v in enumerate(vals) if math.isnan(v)]
    # min/max exclude NaN and NaN > 5, so min/max alone cannot rule out any row group here; at
    # least the 10 groups that do hold a NaN must have been read
    assert m["row_groups_read"] >= 10, m
    # NaN is not < -20 and not equal to 100 or 50: these are decided by min/max in every group
    for flt in ("x < -20", "x = 100", "x <= -10.5 OR x = 100", "x IN (50, 60)"):
        got, m = scan(str(p), flt)
        assert got.num_rows == 0, flt
        assert m["row_groups_pruned_statistics"] == 30, (flt, m)


# ------------------------------------------------------------------------------------------
# bloom filters
# ------------------------------------------------------------------------------------------


def _present_absent(t: pa.Table):
    present = set(t["k"].to_pylist())
    return present, [v for v in range(1, 2 * t.num_rows, 2)][:50]


def test_bloom_filter_pruning_pyarrow(bloom_file_pyarrow):
    path, t = bloom_file_pyarrow
    n_rg = pq.ParquetFile(path).metadata.num_row_groups
    present, absent = _present_absent(t)
    assert 7777 not in present and 0 <= 7777 <= 2 * (t.num_rows - 1)
    got, m = scan(path, "k = 7777")
    assert got.num_rows == 0
    assert m["row_groups_pruned_statistics"] == 0, f"min/max cover the probe: {m}"
    assert m["row_groups_pruned_bloom_filter"] > 0, m
    # over many absent probes, nearly every row group is excluded (fpp = 1 %)
    pruned = total = 0
    for v in absent[:20]:
        got, m = scan(path, f"k = {v}")
        assert got.num_rows == 0
        pruned += m["row_groups_pruned_bloom_filter"]
        total += n_rg
    assert pruned >= 0.8 * total, (pruned, total)


def test_bloom_filter_in_list(bloom_file_pyarrow):
    path, t = bloom_file_pyarrow
    got, m = scan(path, "k IN (7777, 9999, 12345)")
    assert got.num_rows == 0
    assert m["row_groups_pruned_bloom_filter"] > 0, m


def test_bloom_filter_strings(bloom_file_pyarrow):
    path, t = bloom_file_pyarrow
    got, m = scan(path, "ks = 'key007777'")
    assert got.num_rows == 0
    assert m["row_groups_pruned_bloom_filter"] > 0, m


def test_bloom_filter_never_drops_present_values(bloom_file_pyarrow):
    path, t = bloom_file_pyarrow
    rng = random.Random(8)
    rows = t.to_pylist()
    for r in rng.sample(rows, 25):
        got, m = scan(path, f"k = {r['k']}")
        assert sorted(got["payload"].to_pylist()) == sorted(x["payload"] for x in rows if x["k"] == r["k"])
        got, m = scan(path, f"ks = '{r['ks']}'")
        assert sorted(got["payload"].to_pylist()) == sorted(x["payload"] for x in rows if x["ks"] == r["ks"])
    vals = [r["k"] for r in rng.sample(rows, 5)] + [7777]
    got, m = scan(path, f"k IN ({', '.join(map(str, vals))})")
    assert sorted(got["payload"].to_pylist()) == sorted(x["payload"] for x in rows if x["k"] in vals)


def test_bloom_filter_spark_written(spark, bloom_dir_spark):
    got, m = scan(bloom_dir_spark, "k = 40001")
    assert got.num_rows == 0
    assert m["files_total"] == 4 and m["row_groups_total"] >= 4
    assert m["row_groups_pruned_statistics"] == 0, m
    assert m["row_groups_pruned_bloom_filter"] > 0, m
    got, m = scan(bloom_dir_spark, "ks = 'key040001'")
    assert got.num_rows == 0 and m["row_groups_pruned_bloom_filter"] > 0, m
    got, m = scan(bloom_dir_spark, "k IN (40001, 40003)")
    assert got.num_rows == 0 and m["row_groups_pruned_bloom_filter"] > 0, m
    # present values are found, and the answers equal Spark's
    for flt in ("k = 40000", "ks = 'key012346'", "k IN (2, 3, 79998)", "k = 40001 OR g = 3"):
        got, _ = scan(bloom_dir_spark, flt)
        expected = sorted(tuple(r) for r in spark.read.parquet(bloom_dir_spark).filter(flt).collect())
        assert sorted(arrow_rows(got)) == expected, flt


# ------------------------------------------------------------------------------------------
# dictionaries
# ------------------------------------------------------------------------------------------


def test_dictionary_pruning(dictionary_file):
    path, t = dictionary_file
    got, m = scan(path, "c = 'banana'")
    exp = t.filter(pc.equal(t["c"], "banana"))
    assert exp.num_rows == 1000
    assert_tables_equal(got.sort_by("x"), exp.sort_by("x"))
    assert m["row_groups_pruned_statistics"] == 0, f"min/max ('apple'..'kiwi') cover 'banana': {m}"
    assert m["row_groups_pruned_dictionary"] > 0, m
    assert m["row_groups_read"] == 1 and m["row_groups_pruned_dictionary"] == 2, m


def test_dictionary_pruning_in_list_and_absent_everywhere(dictionary_file):
    path, t = dictionary_file
    got, m = scan(path, "c IN ('banana', 'date')")
    assert got.num_rows == 1000
    assert m["row_groups_pruned_dictionary"] == 2, m
    got, m = scan(path, "c = 'grape'")  # between apple and kiwi, in no dictionary
    assert got.num_rows == 0
    assert m["row_groups_pruned_dictionary"] == 3, m


def test_dictionary_pruning_disabled_with_pushdown_off(dictionary_file):
    path, t = dictionary_file
    off = fs.Session(conf={"spark.sql.parquet.filterPushdown": "false"})
    got, m = scan(path, "c = 'banana'", session=off)
    assert got.num_rows == 1000
    assert row_groups_pruned(m) == 0, m


def test_dictionary_not_trusted_when_pages_fall_back_to_plain(tmp_path):
    """A column whose dictionary overflowed mid-row-group (pyarrow falls back to PLAIN pages):
    the dictionary page does not list every value, so it must not be used to prune."""
    rng = random.Random(4)
    n = 20000
    vals = [f"v{rng.randrange(10**9):09d}" for _ in range(n)]
    vals[-1] = "needle-not-in-dictionary"  # written after the fallback, so only in a PLAIN page
    t = pa.table({"c": pa.array(vals), "i": pa.array(range(n))})
    p = tmp_path / "fallback.parquet"
    pq.write_table(t, p, dictionary_pagesize_limit=4096, row_group_size=n)
    col = pq.ParquetFile(p).metadata.row_group(0).column(0)
    # 20 000 distinct 10-byte strings cannot fit a 4 KiB dictionary: the writer fell back to
    # PLAIN pages after a small dictionary page
    dict_page_bytes = col.data_page_offset - col.dictionary_page_offset
    assert col.has_dictionary_page and dict_page_bytes < 16_384 < col.total_uncompressed_size, col.to_dict()
    got, m = scan(str(p), "c = 'needle-not-in-dictionary'")
    assert got["i"].to_pylist() == [n - 1]
    assert m["row_groups_pruned_dictionary"] == 0, m
