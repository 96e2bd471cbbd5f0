"""Window frames, ``histogram_numeric`` and subquery forms Spark's golden tests exercise,
against PySpark on the same Parquet files.

* RANGE frames moved by intervals over DATE and TIMESTAMP keys (months across a DST change
  in the session zone, days, DAY TO SECOND), ascending and descending, with NULL keys;
* ``any_value`` over a window, BOOLEAN order keys under the default frame, ``avg`` of a
  timestamp and of NULL over a window, ``COUNT(*) OVER ()`` with every column pruned;
* Spark's error classes for the frames and window specifications it refuses;
* ``histogram_numeric`` over every type it takes (ties broken as Spark's seeded generator
  breaks them, NULLs, empty groups);
* ``(a, b) [NOT] IN (SELECT ...)`` with NULLs on either side, correlated or not; NOT IN as
  a value inside OR over the same table; ``struct(x AS name)``; a USING join's hidden
  column selected in a derived table.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from helpers import arrow_rows, check_rows, spark_rows

ZONE = "America/Los_Angeles"


def _events() -> pa.Table:
    utc = dt.timezone.utc
    # Around the 2021-03-14 and 2021-11-07 DST changes in Los Angeles, month ends, ties.
    stamps = [
        dt.datetime(2021, 1, 31, 10, 0, tzinfo=utc),
        dt.datetime(2021, 2, 28, 10, 0, tzinfo=utc),
        dt.datetime(2021, 3, 13, 18, 30, tzinfo=utc),
        dt.datetime(2021, 3, 14, 18, 30, tzinfo=utc),
        dt.datetime(2021, 3, 14, 18, 30, tzinfo=utc),
        None,
        dt.datetime(2021, 4, 14, 17, 30, tzinfo=utc),
        dt.datetime(2021, 11, 6, 8, 0, tzinfo=utc),
        dt.datetime(2021, 12, 6, 8, 0, tzinfo=utc),
        None,
        dt.datetime(2022, 1, 1, 0, 0, 0, 1, tzinfo=utc),
        dt.datetime(2020, 2, 29, 12, 0, tzinfo=utc),
    ]
    n = len(stamps)
    return pa.table(
        {
            "id": pa.array(range(n), pa.int32()),
            "k": ["a", "b", "a", "a", "b", "a", "b", "a", "b", None, "a", "b"],
            "ts": pa.array(stamps, pa.timestamp("us", tz="UTC")),
            "d": pa.array([None if s is None else s.date() for s in stamps], pa.date32()),
            "v": pa.array(
                [1.5, -0.0, float("nan"), 2.0, None, 3.25, 4.0, -1.0, 8.0, 0.5, 16.0, 32.0],
                pa.float64(),
            ),
            "flag": pa.array(
                [True, False, None, True, True, False, False, None, True, False, True, False],
                pa.bool_(),
            ),
            "name": ["ann", "bö", None, "日本", "ann", "cy", None, "dee", "eve", "é", "zed", "bo"],
        }
    )


def _pairs() -> tuple[pa.Table, pa.Table]:
    left = pa.table(
        {
            "a1": pa.array([1, 1, 2, None, 3, 4, 4], pa.int32()),
            "b1": ["x", "y", "x", "x", None, "z", "z"],
            "g": pa.array([10, 10, 20, 20, 30, 30, 40], pa.int32()),
        }
    )
    right = pa.table(
        {
            "a2": pa.array([1, 2, None, 3, 4], pa.int32()),
            "b2": ["x", "x", "x", "q", None],
            "g2": pa.array([10, 20, 20, 30, 40], pa.int32()),
        }
    )
    return left, right


def _histo() -> pa.Table:
    n = 40
    return pa.table(
        {
            "g": pa.array([i % 3 for i in range(n)], pa.int32()),
            "i": pa.array([None if i % 11 == 0 else (i * 7) % 23 for i in range(n)], pa.int32()),
            "l": pa.array([i * i - 300 for i in range(n)], pa.int64()),
            "f": pa.array([float(i % 5) / 4 for i in range(n)], pa.float32()),
            "x": pa.array([float("nan") if i == 7 else (i % 9) * 1.25 for i in range(n)], pa.float64()),
            "m": pa.array([Decimal(i % 13) / 4 for i in range(n)], pa.decimal128(6, 2)),
            "t": pa.array(
                [
                    dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=17 * i)
                    for i in range(n)
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array(
                [dt.date(2021, 1, 1) + dt.timedelta(days=(i * 5) % 31) for i in range(n)], pa.date32()
            ),
            "s": pa.array([i % 4 for i in range(n)], pa.int16()),
        }
    )


@pytest.fixture(scope="module")
def views(spark, tmp_path_factory):
    s = fs.Session()
    left, right = _pairs()
    tables = {"events": _events(), "lp": left, "rp": right, "h": _histo()}
    root = tmp_path_factory.mktemp("winsub")
    for name, t in tables.items():
        path = str(root / f"{name}.parquet")
        pq.write_table(t, path)
        s.read.parquet(path).createOrReplaceTempView(name)
        spark.read.parquet(path).createOrReplaceTempView(name)
    for sql in (
        "CREATE OR REPLACE TEMPORARY VIEW nt1 AS SELECT * FROM VALUES ('one', 1), ('two', 2), (NULL, 3) AS t(k, v1)",
        "CREATE OR REPLACE TEMPORARY VIEW nt2 AS SELECT * FROM VALUES ('one', 1), ('three', 3), (NULL, 4) AS t(k, v2)",
        "CREATE OR REPLACE TEMPORARY VIEW emp AS SELECT * FROM VALUES (100, 10), (200, 20), (300, NULL), (400, 10) AS t(id, dept_id)",
    ):
        s.sql(sql)
        spark.sql(sql)
    return s, spark


def _both(views, sql: str, zone: str = "UTC"):
    s, spark = views
    s.conf.set("spark.sql.session.timeZone", zone)
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        got = arrow_rows(s.sql(sql).toArrow())
        expected = spark_rows(spark.sql(sql))
    finally:
        s.conf.set("spark.sql.session.timeZone", "UTC")
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    return got, expected


WINDOWS = {
    "months_back_over_timestamps": "SELECT id, count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1' MONTH PRECEDING AND CURRENT ROW) AS c, sum(v) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1-1' YEAR TO MONTH PRECEDING AND INTERVAL '0-1' YEAR TO MONTH FOLLOWING) AS s FROM events",
    "day_time_ahead_descending": "SELECT id, count(v) OVER (PARTITION BY k ORDER BY ts DESC RANGE BETWEEN CURRENT ROW AND INTERVAL '1 12:00:00' DAY TO SECOND FOLLOWING) AS c, max(id) OVER (ORDER BY ts DESC RANGE BETWEEN INTERVAL '30 00:00:00' DAY TO SECOND PRECEDING AND INTERVAL '0 01:00:00' DAY TO SECOND PRECEDING) AS m FROM events",
    "dates_by_months_and_days": "SELECT id, count(*) OVER (ORDER BY d RANGE BETWEEN INTERVAL '1-1' YEAR TO MONTH PRECEDING AND INTERVAL '0-2' YEAR TO MONTH FOLLOWING) AS c, min(id) OVER (ORDER BY d DESC RANGE INTERVAL '10' DAY PRECEDING) AS m, count(*) OVER (ORDER BY d RANGE BETWEEN 2 PRECEDING AND 40 FOLLOWING) AS n FROM events",
    "timestamp_ntz_keys": "SELECT id, count(*) OVER (ORDER BY CAST(ts AS TIMESTAMP_NTZ) RANGE BETWEEN CURRENT ROW AND INTERVAL '1' MONTH FOLLOWING) AS c FROM events",
    "any_value_and_first": "SELECT id, any_value(name) OVER (PARTITION BY k ORDER BY id) AS a, any_value(name) IGNORE NULLS OVER (PARTITION BY k ORDER BY id DESC) AS b, any_value(name, true) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS c, first_value(name) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS f FROM events",
    "boolean_order_default_frame": "SELECT id, bool_and(flag) OVER (PARTITION BY k ORDER BY flag) AS a, count(*) OVER (ORDER BY flag DESC NULLS LAST) AS c, max(name) OVER (ORDER BY name) AS m FROM events",
    "count_star_over_nothing": "SELECT COUNT(*) OVER () AS c, COUNT(NULL) OVER () AS n FROM events",
    "avg_of_timestamp_and_null": "SELECT id, avg(ts) OVER (PARTITION BY k ORDER BY ts) AS a, avg(NULL) OVER (PARTITION BY k) AS n, sum(NULL) OVER () AS s FROM events",
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
@pytest.mark.parametrize("zone", ["UTC", ZONE])
def test_window_frames_match_spark(views, name, zone):
    got, expected = _both(views, WINDOWS[name], zone)
    check_rows(f"{name} in {zone}", got, expected, ordered=False)


ERRORS = [
    "SELECT id, count(id) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED FOLLOWING AND 1 FOLLOWING) FROM events",
    "SELECT id, count(id) OVER (PARTITION BY k RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM events",
    "SELECT id, count(id) OVER (ORDER BY id, k RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM events",
    "SELECT id, count(id) OVER (ORDER BY ts RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM events",
    "SELECT id, count(id) OVER (ORDER BY d RANGE BETWEEN CURRENT ROW AND INTERVAL '1 2:3:4' DAY TO SECOND FOLLOWING) FROM events",
    "SELECT id, count(id) OVER (ORDER BY id RANGE BETWEEN 1 FOLLOWING AND 1 PRECEDING) FROM events",
    "SELECT id, count(id) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 2147483648 FOLLOWING) FROM events",
    "SELECT id, row_number() OVER (PARTITION BY k) FROM events",
    "SELECT id, lag(id) OVER (PARTITION BY k) FROM events",
    "SELECT id, first_value(id) OVER w FROM events WINDOW w AS (ORDER BY id), w AS (ORDER BY k)",
    "SELECT histogram_numeric(name, 3) FROM events",
    "SELECT histogram_numeric(id, 1) FROM events",
    "SELECT 1 FROM lp WHERE (a1, b1) IN (SELECT (a2, b2) FROM rp)",
]


def _error_class(text: str) -> str | None:
    m = re.search(r"\[([A-Z_0-9]+(?:\.[A-Z_0-9]+)?)\]", text)
    return m.group(1) if m else None


def _refused_as_spark(views, sql):
    s, spark = views
    with pytest.raises(Exception) as spark_err:
        spark.sql(sql).collect()
    expected = _error_class(str(spark_err.value))
    with pytest.raises(fs.FerroError) as ours:
        s.sql(sql).collect()
    # Spark's parser states some refusals without a class; any refusal matches those.
    if expected is not None:
        assert _error_class(str(ours.value)) == expected, (
            f"{sql}\nspark: {spark_err.value}\nours: {ours.value}"
        )
    # The session keeps working.
    assert s.sql("SELECT 1 AS one").collect()[0][0] == 1


HISTOGRAMS = {
    "ints_with_ties_and_nulls": "SELECT g, histogram_numeric(i, 3) AS h FROM h GROUP BY g",
    "global_many_bins": "SELECT histogram_numeric(i, 30) AS a, histogram_numeric(l, 2) AS b, histogram_numeric(s, 5) AS c FROM h",
    "floats_decimals": "SELECT g, histogram_numeric(f, 2) AS a, histogram_numeric(m, 4) AS b FROM h GROUP BY g",
    "timestamps_dates": "SELECT g, histogram_numeric(t, 3) AS a, histogram_numeric(day, 2) AS b FROM h GROUP BY g",
    "empty_and_null_groups": "SELECT g, histogram_numeric(i, 2) AS a FROM h WHERE i IS NULL OR g = 1 GROUP BY g",
    "no_rows": "SELECT histogram_numeric(i, 4) AS a FROM h WHERE g > 5",
    # PySpark cannot collect YEAR-MONTH intervals: their centres come back as text.
    "intervals": "SELECT histogram_numeric(t - TIMESTAMP '2020-01-01 00:00:00', 3) AS a, CAST(histogram_numeric(make_ym_interval(0, s), 2)[0].x AS STRING) AS b, histogram_numeric(make_ym_interval(s, 1), 3)[1].y AS c FROM h",
    "numbers_in_strings": "SELECT histogram_numeric(CAST(i AS STRING), 3) AS a FROM h",
}


def test_histogram_numeric_of_nan_has_sparks_shape(views):
    # NaN compares unlike any number in the bins' search; both engines still count every row.
    s, _ = views
    rows = s.sql("SELECT histogram_numeric(x, 3) AS a FROM h").collect()
    assert sum(b["y"] for b in rows[0]["a"]) == 40


SUBQUERIES = {
    "tuple_in": "SELECT a1, b1, g FROM lp WHERE (a1, b1) IN (SELECT a2, b2 FROM rp)",
    "tuple_not_in": "SELECT a1, b1, g FROM lp WHERE (a1, b1) NOT IN (SELECT a2, b2 FROM rp WHERE a2 IS NOT NULL)",
    "tuple_not_in_with_nulls": "SELECT a1, b1, g FROM lp WHERE (a1, b1) NOT IN (SELECT a2, b2 FROM rp)",
    "tuple_in_correlated": "SELECT a1, b1 FROM lp WHERE (a1, b1) IN (SELECT a2, b2 FROM rp WHERE rp.g2 = lp.g)",
    "tuple_not_in_correlated": "SELECT a1, b1 FROM lp WHERE (a1, b1) NOT IN (SELECT a2, b2 FROM rp WHERE rp.g2 = lp.g) AND g < 40",
    "tuple_of_expressions": "SELECT a1 FROM lp WHERE (a1 + 1, upper(b1)) IN (SELECT a2 + 1, upper(b2) FROM rp)",
    "not_in_or_same_table": "SELECT id FROM emp WHERE id = 600 OR dept_id NOT IN (SELECT dept_id FROM emp WHERE dept_id IS NOT NULL)",
    "in_or_same_table_as_value": "SELECT id, dept_id NOT IN (SELECT dept_id FROM emp) AS a, id = 100 OR dept_id IN (SELECT dept_id FROM emp WHERE dept_id > 10) AS b FROM emp",
    "exists_over_correlated_global_aggregate": "SELECT a1, EXISTS (SELECT count(*) FROM rp WHERE rp.a2 = lp.a1) AS e, NOT EXISTS (SELECT max(a2) FROM rp WHERE lp.b1 IS NULL) AS n FROM lp",
    "in_over_correlated_count": "SELECT a1, g, g IN (SELECT count(*) + 9 FROM rp WHERE rp.a2 = lp.a1) AS i, a1 NOT IN (SELECT count(*) FROM rp WHERE rp.g2 = lp.g) AS n FROM lp",
    "where_exists_global_aggregate": "SELECT * FROM lp WHERE EXISTS (SELECT max(a2) FROM rp WHERE lp.g > 20 LIMIT 1)",
    "where_in_count_bug": "SELECT * FROM lp WHERE a1 IN (SELECT count(*) + 1 FROM rp WHERE rp.a2 = lp.a1) OR g IN (SELECT count(*) * 10 FROM rp WHERE rp.g2 = lp.g)",
    "where_not_in_count_bug": "SELECT * FROM lp WHERE a1 NOT IN (SELECT count(*) FROM rp WHERE rp.g2 = lp.g)",
    "named_struct_fields": "SELECT struct(a1 AS x, b1, a1 + 0.5 AS y) AS s FROM lp",
    "using_hidden_key_in_derived_table": "SELECT k FROM (SELECT nt2.k FROM nt1 JOIN nt2 USING (k))",
    "natural_hidden_key_outer": "SELECT * FROM (SELECT nt2.k, nt1.k AS k1 FROM nt1 NATURAL FULL OUTER JOIN nt2)",
    # Aggregates of the outer rows inside a HAVING subquery (Catalyst's UpdateOuterReferences).
    "having_exists_outer_aggregate": "SELECT g, count(*) FROM lp GROUP BY g HAVING EXISTS (SELECT 1 FROM rp WHERE rp.a2 < max(lp.a1))",
    "having_not_exists_two_outer_aggregates": "SELECT b1, sum(a1) FROM lp GROUP BY b1 HAVING NOT EXISTS (SELECT 1 FROM rp WHERE a2 > min(lp.a1) AND count(lp.g) > 1)",
    "having_scalar_outer_aggregate": "SELECT g, (SELECT 1) AS one FROM lp GROUP BY g HAVING max(lp.a1) >= (SELECT count(*) FROM rp WHERE rp.g2 <= max(lp.g))",
    "having_in_outer_aggregate_nested": "SELECT * FROM rp WHERE EXISTS (SELECT g, count(*) FROM lp GROUP BY g HAVING EXISTS (SELECT 1 FROM nt2 WHERE v2 > min(lp.a1)))",
}


def test_histogram_numeric_from_the_dataframe_api(views):
    from pyspark.sql import functions as SF

    from ferrospark import functions as F

    s, spark = views
    got = (
        s.sql("SELECT * FROM h")
        .groupBy("g")
        .agg(F.histogram_numeric("f", 3).alias("a"), F.histogram_numeric(F.col("m"), F.lit(2)).alias("b"))
    )
    expected = (
        spark.table("h")
        .groupBy("g")
        .agg(
            SF.histogram_numeric("f", SF.lit(3)).alias("a"),
            SF.histogram_numeric(SF.col("m"), SF.lit(2)).alias("b"),
        )
    )
    check_rows("dataframe histogram_numeric", arrow_rows(got.toArrow()), spark_rows(expected), ordered=False)


MORE = {
    "coalesce_and_nanvl_evaluate_lazily": "SELECT coalesce(a1, 1 / 0) AS c, coalesce(NULL, a1, g / 0) AS d, nanvl(CAST(g AS DOUBLE), 1 / 0) AS n FROM lp WHERE a1 IS NOT NULL",
    "bit_aggregates": "SELECT g, bit_and(a1) AS a, bit_or(a1) AS o, bit_xor(a1) AS x, bit_xor(CAST(g AS TINYINT)) AS t FROM lp GROUP BY g",
    "bit_aggregates_over_nothing": "SELECT bit_and(a1) AS a, bit_xor(g) AS x FROM lp WHERE g > 100",
    "skewness_kurtosis": "SELECT g, skewness(a1) AS s, kurtosis(a1) AS k FROM lp GROUP BY g",
    "skewness_kurtosis_global": "SELECT skewness(x) AS s, kurtosis(x) AS k, skewness(i) AS si, kurtosis(CAST(l AS DOUBLE)) AS kl FROM h",
    "group_by_maps_in_any_key_order": "SELECT count(*) AS n FROM VALUES (map(1, 2, 2, 3)), (map(2, 3, 1, 2)), (map(1, 3)), (NULL) AS t(m) GROUP BY m",
    "group_by_nested_maps": "SELECT count(*) AS n FROM VALUES (named_struct('b', map('x', 1.0D, 'y', -0.0D))), (named_struct('b', map('y', 0.0D, 'x', 1.0D))) AS t(a) GROUP BY a",
    "having_without_group_by": "SELECT 1 AS one FROM lp HAVING true",
    "having_aggregate_without_group_by": "SELECT count(*) AS n FROM lp HAVING max(g) > 10",
    "corr_distinct": "SELECT corr(DISTINCT a1, g) AS c, covar_pop(DISTINCT g, a1) AS v, count(DISTINCT a1, b1) AS n FROM lp",
    "div_of_decimals_and_nulls": "SELECT CAST(51 AS DECIMAL(10, 0)) div CAST(2 AS DECIMAL(2, 0)) AS a, 5 div NULL AS b, CAST(-7.5 AS DECIMAL(3, 1)) div 2 AS c, g div 3 AS d FROM lp",
    "strings_beside_decimals": "SELECT 1.5 = '1.51' AS a, '1.5' > 0.5 AS b, 0.5 <= '1.5' AS c",
    "string_escapes": r"SELECT 'no-pattern\%' AS a, 'pattern\\%' AS b, '\110\145\154\154\157\041' AS c, '\u0057\u006F' AS d, 'hello' ' ' 'world' AS e, 'a\_b' LIKE 'a\_b' AS f, 'it''s' AS g",
    "negative_typed_literal_bounds": "SELECT -128Y AS a, -32768S AS b, -9223372036854775808L AS c, -2147483648 AS d",
    "values_read_one_clock": "SELECT count(DISTINCT t) AS n FROM VALUES now(), now(), current_timestamp() AS v(t)",
    "percentiles_of_intervals": "SELECT g, CAST(percentile_cont(0.25) WITHIN GROUP (ORDER BY make_ym_interval(0, a1)) AS STRING) AS a, percentile_disc(0.5) WITHIN GROUP (ORDER BY make_dt_interval(0, 0, a1)) AS b, median(make_dt_interval(a1)) AS c FROM lp GROUP BY g",
    "values_without_alias_then_group_by": "SELECT col1, count(*) AS n FROM VALUES (0.0), (-0.0), (DOUBLE('NaN')), (DOUBLE('NaN')), (-DOUBLE('Infinity')) GROUP BY col1",
    "subquery_in_outer_join_on_with_or": "SELECT * FROM lp LEFT JOIN rp ON lp.a1 = rp.a2 OR EXISTS (SELECT 1 FROM emp WHERE emp.dept_id = lp.g)",
    "subquery_in_outer_join_on_reading_right": "SELECT * FROM lp LEFT JOIN rp ON lp.a1 = rp.a2 OR rp.g2 IN (SELECT dept_id FROM emp WHERE emp.id > rp.g2 * 10)",
}


#: NOT over subquery predicates, tuple IN as a value, the count bug below a HAVING or a
#: derived table, struct stars and comparisons of structs and arrays.
NESTED = {
    "not_over_or_with_in": "SELECT * FROM lp WHERE NOT (g > 20 OR a1 IN (SELECT a2 FROM rp))",
    "not_over_and_with_not_in": "SELECT * FROM lp WHERE NOT (g > 20 AND a1 NOT IN (SELECT a2 FROM rp))",
    "not_over_and_with_in": "SELECT * FROM lp WHERE NOT (g > 20 AND a1 IN (SELECT a2 FROM rp WHERE a2 IS NOT NULL))",
    "tuple_not_in_inside_or": "SELECT * FROM lp WHERE g = 10 OR (a1, b1) NOT IN (SELECT a2, b2 FROM rp)",
    "tuple_in_as_values": "SELECT a1, b1, (a1, b1) IN (SELECT a2, b2 FROM rp) AS i, (a1, b1) NOT IN (SELECT a2, b2 FROM rp WHERE g2 > 10) AS n FROM lp",
    "count_bug_under_having": "SELECT * FROM lp WHERE a1 IN (SELECT 1 FROM rp WHERE rp.g2 = lp.g HAVING count(*) = 0)",
    "count_bug_not_in_under_having": "SELECT * FROM lp WHERE a1 NOT IN (SELECT 1 FROM rp WHERE rp.g2 = lp.g HAVING count(*) = 0)",
    "count_bug_scalar_having": "SELECT g, (SELECT count(*) FROM rp WHERE rp.g2 = lp.g HAVING count(*) > -1) AS c FROM lp",
    "count_bug_nested": "SELECT g, (SELECT sum(cnt) FROM (SELECT count(*) cnt FROM rp WHERE rp.g2 = lp.g)) AS s, (SELECT count(*) FROM (SELECT count(*) cnt FROM rp WHERE rp.g2 = lp.g)) AS n FROM lp",
    "struct_star_and_field_names": "SELECT STRUCT(x.*) AS s, STRUCT(x.*, g AS h) AS t, STRUCT(x.p AS pp, x.q AS qq).qq AS q FROM (SELECT named_struct('p', a1, 'q', b1) AS x, g FROM lp)",
    "struct_and_array_comparisons": "SELECT a1, b1, (a1, b1) IN ((1, 'x'), (4, 'z')) AS i, named_struct('a', a1, 'b', b1) < named_struct('a', 2, 'b', 'y') AS lt, named_struct('a', a1, 'b', b1) <=> named_struct('a', CAST(NULL AS INT), 'b', 'x') AS ns, array(a1, g) = array(1, 10) AS ae, array(a1) < array(2) AS al, array(CAST(a1 AS DOUBLE)) = array(-0.0D) AS z FROM lp",
    "tuple_of_named_fields_in_subquery": "SELECT count(*) AS n FROM lp WHERE named_struct('a', a1, 'b', b1) IN (SELECT (a2 AS a, b2 AS b) FROM rp)",
    "lateral_after_comma": "SELECT lp.a1, lp.g, s.* FROM lp, LATERAL (SELECT count(*) AS n, max(g2) AS m FROM rp WHERE rp.a2 = lp.a1) s",
    "lateral_left_join_on": "SELECT lp.a1, lp.g, s.b2 FROM lp LEFT JOIN LATERAL (SELECT b2 FROM rp WHERE rp.g2 > lp.g) s ON lp.a1 IS NOT NULL",
    "lateral_selecting_outer_columns": "SELECT * FROM lp, LATERAL (SELECT lp.g * 2 AS gg, lp.b1) s(x, y)",
    "lateral_with_limit": "SELECT lp.a1, lp.g, s.a2 FROM lp JOIN LATERAL (SELECT a2 FROM rp WHERE rp.g2 >= lp.g ORDER BY a2 NULLS LAST LIMIT 1) s",
    "correlated_count_over_inner_expressions": "SELECT a1, g, (SELECT count(*) FROM rp WHERE a2 + g2 = lp.g + 1) AS n, (SELECT count(*) FROM rp WHERE lp.b1 = substring(rp.b2, 1, 1)) AS m FROM lp",
    "count_of_relation_star_and_distinct_star": "SELECT count(lp.*, rp.*) AS a, count(DISTINCT *) AS b, count(DISTINCT lp.*, rp.g2) AS c FROM lp JOIN rp ON lp.a1 = rp.a2",
    "count_distinct_null_beside_others": "SELECT count(DISTINCT 1) AS a, count(DISTINCT NULL) AS b, count(DISTINCT a1) AS c, count(DISTINCT (a1, b1)) AS d FROM lp",
    "cross_join_with_on": "SELECT * FROM lp CROSS JOIN rp ON (lp.a1 > rp.a2)",
    "group_by_exists": "SELECT count(*) AS n, sum(g) AS s FROM lp GROUP BY EXISTS (SELECT 1 FROM rp WHERE rp.a2 = lp.a1)",
    "dates_past_year_9999_as_text": "SELECT CAST(DATE '999999-03-18' AS STRING) AS a, CAST(DATE '-0001-1-28' AS STRING) AS b, CAST(make_date(-1, 1, 28) AS STRING) AS c, CAST(DATE '0015' AS STRING) AS d, CAST(make_date(999999, 12, 31) AS STRING) AS e",
}


#: Every query compared in the session zone UTC: the histograms, the subquery forms, the rest.
QUERIES = {**HISTOGRAMS, **SUBQUERIES, **MORE, **NESTED}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_queries_match_spark(views, name):
    got, expected = _both(views, QUERIES[name])
    check_rows(name, got, expected, ordered=False)


MORE_ERRORS = [
    "SELECT round(127Y, -1)",
    "SELECT bround(2147483647, -1)",
    "SELECT round(-9223372036854775808L, -1)",
    "SELECT +date '1999-01-01'",
    "SELECT +array(1, 2)",
    "SELECT 1E309",
    "SELECT 1234567890123456789012345678901234567890",
    "SELECT a1, count(b1) FROM lp",
    "SELECT a1 FROM lp HAVING a1 > 0",
    "SELECT every(1)",
    "SELECT bit_xor(1.5)",
    "SELECT 1 ! BETWEEN 0 AND 2",
    "SELECT a1 IS ! NULL FROM lp",
]


@pytest.mark.parametrize("sql", ERRORS + MORE_ERRORS)
def test_refusals_carry_sparks_error_class(views, sql):
    _refused_as_spark(views, sql)


@pytest.mark.parametrize("legacy", ["false", "true"])
def test_null_in_empty_subquery_under_the_legacy_setting(views, legacy):
    """``NULL [NOT] IN (SELECT ...)`` over no rows is false (true for NOT IN); under
    ``spark.sql.legacy.nullInEmptyListBehavior`` it is NULL, as before Spark 4."""
    s, spark = views
    key = "spark.sql.legacy.nullInEmptyListBehavior"
    sql = (
        "SELECT NULL IN (SELECT a2 FROM rp WHERE false) AS a, NULL NOT IN (SELECT a2 FROM rp WHERE false) AS b, "
        "NULL IN (SELECT a2 FROM rp WHERE a2 IS NOT NULL) AS c, 1 IN (SELECT a2 FROM rp WHERE false) AS d"
    )
    # A NULL column goes through Spark's existence join: never NULL, in either setting.
    columns = (
        "SELECT k, k IN (SELECT k FROM nt2 WHERE false) AS e, k IN (SELECT k FROM nt2) AS f, "
        "k NOT IN (SELECT k FROM nt2 WHERE false) AS g FROM nt1"
    )
    s.conf.set(key, legacy)
    spark.conf.set(key, legacy)
    try:
        for q in (sql, columns):
            check_rows(
                f"legacy={legacy}: {q}",
                arrow_rows(s.sql(q).toArrow()),
                spark_rows(spark.sql(q)),
                ordered=False,
            )
    finally:
        s.conf.unset(key)
        spark.conf.unset(key)


#: Scalar subqueries with at most one row per outer row whatever their form (grouped by the
#: correlation key, a LIMIT 1, a filter over a global aggregate), each through Spark's single
#: join check where their form does not prove it.
ONE_ROW_SUBQUERIES = {
    "grouped_by_the_correlation_key": "SELECT id, (SELECT count(*) FROM emp e WHERE e.dept_id = o.dept_id GROUP BY e.dept_id) AS c FROM emp o",
    "limit_one": "SELECT id, (SELECT e.id FROM emp e WHERE e.dept_id = o.dept_id AND e.id <> o.id ORDER BY e.id LIMIT 1) AS c FROM emp o",
    "one_row_uncorrelated": "SELECT id, (SELECT id FROM emp WHERE id = 300) AS c FROM emp",
    "no_rows_uncorrelated": "SELECT id, (SELECT id FROM emp WHERE id = 0) AS c FROM emp",
    "no_rows_correlated": "SELECT id, (SELECT e.id FROM emp e WHERE e.dept_id = o.dept_id AND e.id > 1000) AS c FROM emp o",
    "one_row_each_by_inequality": "SELECT id, (SELECT max(e.id) FROM emp e WHERE e.id < o.id GROUP BY e.dept_id HAVING e.dept_id = 20) AS c FROM emp o",
    "in_where": "SELECT id FROM emp o WHERE (SELECT e.id FROM emp e WHERE e.id = o.id + 100) > 200",
}


@pytest.mark.parametrize("name", sorted(ONE_ROW_SUBQUERIES))
def test_scalar_subqueries_of_one_row_match_spark(views, name):
    got, expected = _both(views, ONE_ROW_SUBQUERIES[name])
    check_rows(name, got, expected, ordered=False)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT (SELECT id FROM emp) AS c",
        "SELECT id, (SELECT e.id FROM emp e WHERE e.dept_id = o.dept_id) AS c FROM emp o",
        "SELECT id FROM emp o WHERE (SELECT count(*) FROM emp e WHERE e.id > o.id GROUP BY e.dept_id) = 1",
        "SELECT id, (SELECT e.id FROM emp e WHERE e.id > o.id) AS c FROM emp o",
    ],
)
def test_scalar_subquery_of_many_rows_is_refused_as_in_spark(views, sql):
    """More than one row for an outer row: SCALAR_SUBQUERY_TOO_MANY_ROWS, not duplicated
    outer rows."""
    _refused_as_spark(views, sql)


def test_parameterless_count_under_the_legacy_setting(views):
    """``count()`` is refused (``WRONG_NUM_ARGS``) unless
    ``spark.sql.legacy.allowParameterlessCount`` is set; then it counts nothing, as Spark."""
    s, spark = views
    sql = "SELECT count() AS n FROM lp"
    with pytest.raises(fs.AnalysisError, match="WRONG_NUM_ARGS"):
        s.sql(sql).collect()
    for engine in (s, spark):
        engine.conf.set("spark.sql.legacy.allowParameterlessCount", "true")
    try:
        got = arrow_rows(s.sql(sql).toArrow())
        expected = spark_rows(spark.sql(sql))
    finally:
        for engine in (s, spark):
            engine.conf.set("spark.sql.legacy.allowParameterlessCount", "false")
    check_rows("count()", got, expected, ordered=False)
