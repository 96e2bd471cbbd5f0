"""Join runtime filters against PySpark: a join's build keys filter the scan of its probe side.

Each query runs in ferrospark with runtime filters on (the default) and off, and in PySpark; the
rows must agree. Where a filter applies, the executed plan must show it on the scan and the scan
must output fewer rows than it read; where dropping probe rows would change the answer (the
kept side of an outer or anti join, NOT IN, below a top-K) no filter may be planned. Keys cover
integers with NULLs and duplicates, unicode strings and dates; the fact table has many row
groups so the keys' range prunes some of them.
"""

from __future__ import annotations

import datetime as dt
import random
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from helpers import arrow_rows, check_rows, plan_metric, register_parquet_views, scan_lines, spark_rows

RF = "spark.sql.optimizer.runtime.bloomFilter.enabled"
WORDS = ["a", "b", "é", "日本", "zz", "mañana", None]


def _fact(n: int = 3000, seed: int = 5) -> pa.Table:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append(
            {
                # Sorted-ish keys so row groups have narrow ranges the filter's range prunes.
                "pk": (i // 3) if rnd.random() > 0.05 else None,
                "word": rnd.choice(WORDS),
                "day": dt.date(2000, 1, 1) + dt.timedelta(days=rnd.randint(0, 60)),
                "qty": rnd.randint(-5, 50) if rnd.random() > 0.1 else None,
                "x": rnd.choice([1.5, -0.0, 0.0, float("nan"), None, 2.0]),
            }
        )
    return pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [
                ("pk", pa.int64()),
                ("word", pa.string()),
                ("day", pa.date32()),
                ("qty", pa.int32()),
                ("x", pa.float64()),
            ]
        ),
    )


def _dim() -> pa.Table:
    keys = list(range(0, 1000, 7)) + [None, 14, 21]  # duplicates and a NULL key
    return pa.table(
        {
            "pk": pa.array(keys, pa.int64()),
            "brand": [f"B{(k or 0) % 5}" for k in keys],
            "word": [WORDS[(k or 0) % len(WORDS)] for k in keys],
            "day": [dt.date(2000, 1, 1) + dt.timedelta(days=(k or 0) % 90) for k in keys],
        }
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("runtime_filter")
    pq.write_table(_fact(), d / "fact.parquet", row_group_size=250)
    pq.write_table(_dim(), d / "dim.parquet")
    return d


def _session(data_dir, conf=None) -> fs.Session:
    return register_parquet_views(fs.Session(conf=conf or {}), data_dir, ["fact", "dim"])


@pytest.fixture(scope="module")
def sp(spark, data_dir):
    return register_parquet_views(spark, data_dir, ["fact", "dim"])


# name -> (query, whether a runtime filter must reach the fact scan)
QUERIES = {
    "int_key": (
        "SELECT f.pk, f.qty, d.brand FROM fact f JOIN dim d ON f.pk = d.pk WHERE d.brand = 'B1'",
        True,
    ),
    "string_key": (
        "SELECT f.word, count(*) FROM fact f JOIN dim d ON f.word = d.word WHERE d.pk < 30 GROUP BY f.word",
        True,
    ),
    "date_key": (
        "SELECT f.day, f.pk FROM fact f JOIN dim d ON f.day = d.day WHERE d.brand = 'B3' AND d.pk < 200",
        True,
    ),
    "semi_in": ("SELECT pk, x FROM fact WHERE pk IN (SELECT pk FROM dim WHERE brand = 'B2')", True),
    "semi_exists": (
        "SELECT count(*) FROM fact f WHERE EXISTS (SELECT 1 FROM dim d WHERE d.pk = f.pk AND d.brand = 'B4')",
        True,
    ),
    "through_aggregate": (
        """SELECT sum(f.qty) FROM fact f JOIN dim d ON f.pk = d.pk
           WHERE d.brand = 'B0' AND f.qty > (SELECT 0.5 * avg(qty) FROM fact f2 WHERE f2.pk = d.pk)""",
        True,
    ),
    "through_outer_join_below": (
        """SELECT g.pk, g.name FROM (SELECT f.pk, d2.brand AS name FROM fact f
                 LEFT JOIN dim d2 ON f.pk = d2.pk + 1) g
           JOIN dim d ON g.pk = d.pk WHERE d.brand = 'B1'""",
        True,
    ),
    "empty_build": (
        "SELECT f.pk FROM fact f JOIN dim d ON f.pk = d.pk WHERE d.brand = 'nope'",
        True,
    ),
    "semi_small_left": (
        "SELECT d.pk, d.word FROM dim d WHERE d.brand = 'B1' AND EXISTS (SELECT 1 FROM fact f WHERE f.pk = d.pk)",
        True,
    ),
    "anti_small_left": (
        """SELECT d.pk, d.day FROM dim d
           WHERE d.brand <> 'B1' AND NOT EXISTS (SELECT 1 FROM fact f WHERE f.pk = d.pk AND f.qty > 10)""",
        True,
    ),
    "left_join_keeps_fact": (
        "SELECT f.pk, d.brand FROM fact f LEFT JOIN dim d ON f.pk = d.pk AND d.brand = 'B1'",
        False,
    ),
    "anti_keeps_fact": (
        "SELECT count(*) FROM fact f WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.pk = f.pk AND d.brand = 'B1')",
        False,
    ),
    "not_in": ("SELECT count(*) FROM fact WHERE pk NOT IN (SELECT pk FROM dim WHERE brand = 'B1')", False),
    "top_k_below": (
        """SELECT t.pk FROM (SELECT pk FROM fact ORDER BY qty DESC NULLS LAST, pk LIMIT 40) t
           JOIN dim d ON t.pk = d.pk WHERE d.brand = 'B1'""",
        False,
    ),
    "null_safe_key": (
        "SELECT count(*) FROM fact f JOIN dim d ON f.pk <=> d.pk WHERE d.brand = 'B0'",
        False,
    ),
    "unfiltered_build": ("SELECT count(*) FROM fact f JOIN dim d ON f.pk = d.pk", False),
}


def _fact_scan_line(plan: str) -> str:
    return scan_lines(plan, "fact.parquet")[0]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_runtime_filters_match_spark(data_dir, sp, name):
    text, filtered = QUERIES[name]
    expected = spark_rows(sp.sql(text))
    on = _session(data_dir).sql(text)
    check_rows(name, arrow_rows(on.toArrow()), expected, ordered=False)
    off = _session(data_dir, {RF: "false"}).sql(text)
    check_rows(name + " (off)", arrow_rows(off.toArrow()), expected, ordered=False)
    assert "RuntimeFilters" not in (off.executedPlan() or "")
    plan = on.executedPlan() or ""
    scans = scan_lines(plan, "fact.parquet")
    took = [line for line in scans if "RuntimeFilters:" in line]
    if not filtered:
        assert not took, plan
        return
    assert took, plan
    line = took[0]
    assert plan_metric(line, "rows_output") < plan_metric(line, "rows_total"), line
    assert "runtime_filters=1" in plan


@pytest.mark.parametrize("name", ["semi_small_left", "anti_small_left"])
def test_small_left_side_of_semi_and_anti_joins_is_built(data_dir, name):
    # Spark broadcasts the fact side of these; in one process the small dim side is built and
    # the fact side streams through it once, marking the dim rows it matches.
    df = _session(data_dir).sql(QUERIES[name][0])
    df.toArrow()
    plan = df.executedPlan() or ""
    join = next(line for line in plan.splitlines() if "Join" in line)
    assert "ShuffledHashJoin" in join and "BuildLeft" in join, plan


def test_key_range_prunes_row_groups(data_dir):
    # Keys 0..139 only: the filter's range skips the row groups of larger keys unread.
    s = _session(data_dir)
    df = s.sql("SELECT f.pk FROM fact f JOIN dim d ON f.pk = d.pk WHERE d.pk < 140 AND d.brand = 'B0'")
    df.toArrow()
    line = _fact_scan_line(df.executedPlan() or "")
    assert plan_metric(line, "row_groups_read") < plan_metric(line, "row_groups_total"), line


@pytest.mark.parametrize("batch", [1, 7])
def test_odd_batch_sizes(data_dir, sp, batch):
    s = _session(data_dir, {"ferrospark.batch.size": str(batch)})
    for name in ["int_key", "semi_in", "through_aggregate"]:
        text = QUERIES[name][0]
        check_rows(name, arrow_rows(s.sql(text).toArrow()), spark_rows(sp.sql(text)), ordered=False)


def test_explain_names_the_build_key(data_dir):
    text = _session(data_dir).sql(QUERIES["int_key"][0])
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        text.explain()
    assert re.search(r"RuntimeFilters: \[pk#\d+ IN keys\(pk#\d+\)\]", out.getvalue()), out.getvalue()


def test_bad_setting_is_a_config_error(data_dir):
    with pytest.raises(fs.ConfigError):
        _session(data_dir, {"spark.sql.optimizer.runtime.bloomFilter.maxNumItems": "-3"}).sql(
            QUERIES["int_key"][0]
        ).toArrow()


def test_too_many_build_rows_skips_the_filter(data_dir, sp):
    s = _session(data_dir, {"spark.sql.optimizer.runtime.bloomFilter.maxNumItems": "5"})
    text = QUERIES["int_key"][0]
    df = s.sql(text)
    check_rows("int_key", arrow_rows(df.toArrow()), spark_rows(sp.sql(text)), ordered=False)
    off = _session(data_dir, {RF: "false"}).sql(text)
    off.toArrow()
    rows = plan_metric(_fact_scan_line(df.executedPlan() or ""), "rows_output")
    assert rows == plan_metric(_fact_scan_line(off.executedPlan() or ""), "rows_output")


def test_a_correlated_aggregate_and_its_outer_side_are_both_filtered(data_dir, sp):
    # TPC-H Q2's shape: `d.pk BETWEEN 100 AND 130` keeps 3% of dim (by the footers' range of
    # pk), the aggregate makes at most 1,000 groups (pk's range). The few rows of the
    # aggregate joined to dim are built, not the fact side they probe (Spark's estimate of a
    # join is the product of its sides; in process the finer estimate picks the side), so
    # both scans of fact are filtered: the aggregate's by dim's keys, the outer by the build.
    text = """SELECT f.pk, f.qty FROM fact f JOIN dim d ON f.pk = d.pk
              WHERE d.pk BETWEEN 100 AND 130
                AND f.qty = (SELECT min(f2.qty) FROM fact f2 WHERE f2.pk = f.pk)"""
    df = _session(data_dir).sql(text)
    check_rows("q2_shape", arrow_rows(df.toArrow()), spark_rows(sp.sql(text)), ordered=False)
    plan = df.executedPlan() or ""
    scans = [line for line in plan.splitlines() if "/fact.parquet[" in line]
    assert len(scans) == 2 and all("RuntimeFilters:" in line for line in scans), plan
    for line in scans:
        assert plan_metric(line, "rows_output") < plan_metric(line, "rows_total") / 4, line


def test_a_probe_side_run_in_the_scan_threads_counts_its_rows(data_dir):
    # The join's probe side runs inside the fact scan's threads (a fork of the built join per
    # thread); its counters still reach the plan.
    df = _session(data_dir).sql(QUERIES["int_key"][0])
    df.toArrow()
    plan = df.executedPlan() or ""
    join = next(line for line in plan.splitlines() if "HashJoin" in line)
    scanned = plan_metric(_fact_scan_line(plan), "rows_output")
    assert scanned > 0 and plan_metric(join, "probe_rows") == scanned, plan
    assert plan_metric(join, "probe_batches") > 0, join
