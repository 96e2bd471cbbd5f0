"""Spark's SQL surface against PySpark: typed literals, inline tables, ``range()``,
``INTERSECT ALL`` / ``EXCEPT ALL``, ``SET`` / ``RESET``, cast aliases, and the answers Spark
fixed that ferrospark once got wrong (``FILTER (WHERE ...)``, the correlated ``COUNT``
subquery over no rows, one clock per query).

Each query runs in ferrospark and in PySpark over the same views; rows are compared as
multisets (in order where the query orders them). The data has NULLs, NaN, -0.0,
duplicates, unicode, decimals and timestamps.
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


def _emp() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3, 4, 5, 6, 7, 8], pa.int32()),
            "name": ["ann", "bö", "日本", None, "ann", "cy", "dee", "eve"],
            "dept": pa.array([10, 10, 20, 20, None, 30, 10, 40], pa.int32()),
            "salary": pa.array([100.0, 200.0, float("nan"), -0.0, None, 50.0, 200.0, 0.0], pa.float64()),
            "bonus": pa.array(
                [Decimal("1.50"), None, Decimal("-2.25"), Decimal("0.00"), None, None, Decimal("9.99"), None],
                pa.decimal128(6, 2),
            ),
            "hired": pa.array(
                [
                    dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=37 * i)
                    for i in range(8)
                ],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )


def _dept() -> pa.Table:
    return pa.table(
        {
            "dept_id": pa.array([10, 20, 30, 50, None], pa.int32()),
            "dname": ["eng", "ops", "ops", "日本", "none"],
        }
    )


def _dups() -> tuple[pa.Table, pa.Table]:
    left = pa.table(
        {
            "a": pa.array([1, 1, 1, 2, 2, None, None, 3], pa.int32()),
            "b": ["x", "x", "x", "y", "y", None, None, "é"],
        }
    )
    right = pa.table(
        {
            "a": pa.array([1, 2, 2, 2, None, 4], pa.int32()),
            "b": ["x", "y", "y", "y", None, "z"],
        }
    )
    return left, right


@pytest.fixture(scope="module")
def views(spark, tmp_path_factory):
    # Both engines read the same Parquet files (a pandas hop would turn Spark's NaN into NULL).
    s = fs.Session()
    left, right = _dups()
    tables = {"emp": _emp(), "depts": _dept(), "l": left, "r": right}
    root = tmp_path_factory.mktemp("surface")
    for name, t in tables.items():
        path = str(root / f"{name}.parquet")
        pq.write_table(t, path)
        s.read.parquet(path).createOrReplaceTempView(name)
        spark.read.parquet(path).createOrReplaceTempView(name)
    return s, spark


QUERIES = {
    "typed_literals": "SELECT 1L AS a, 6S AS b, 25Y AS c, 100.00D AS d, 1.5BD AS e, 1E2BD AS f, 2.5F AS g, -7L AS h",
    "typed_literal_arith": "SELECT id + 1L AS a, id * 2S AS b, salary + 1D AS c, bonus * 2BD AS d FROM emp",
    "values_alias": "SELECT * FROM VALUES (1, 'a'), (2, NULL), (NULL, 'é') AS t(k, v)",
    "values_bare_rows": "SELECT id * 10 AS x FROM VALUES 0, 1, 2 AS t(id)",
    "values_top_level": "SELECT k FROM (VALUES (1), (2) AS t(k)) ORDER BY k",
    "cast_aliases": "SELECT int('12') AS a, double(id) AS b, string(dept) AS c, date('2020-02-29') AS d, bigint(salary) AS e FROM emp WHERE salary < 1000",
    "range_one": "SELECT id FROM range(5)",
    "range_step": "SELECT id FROM range(10, -3, -4)",
    "range_joined": "SELECT r.id, e.name FROM range(1, 4) r JOIN emp e ON r.id = e.id",
    "except_all": "SELECT * FROM l EXCEPT ALL SELECT * FROM r",
    "intersect_all": "SELECT * FROM l INTERSECT ALL SELECT * FROM r",
    "except_all_reversed": "SELECT * FROM r EXCEPT ALL SELECT * FROM l",
    "except_all_empty": "SELECT * FROM l EXCEPT ALL SELECT * FROM r WHERE a > 100",
    "filter_count": "SELECT count(*) FILTER (WHERE salary > 60) AS a, count(name) FILTER (WHERE dept = 10) AS b, count(*) AS c FROM emp",
    "filter_grouped": "SELECT dept, sum(salary) FILTER (WHERE id > 2) AS s, avg(id) FILTER (WHERE name IS NOT NULL) AS a, max(bonus) FILTER (WHERE bonus < 5) AS m FROM emp GROUP BY dept",
    "filter_distinct": "SELECT count(DISTINCT name) FILTER (WHERE dept IS NOT NULL) AS n FROM emp",
    "count_bug": "SELECT dept_id, (SELECT count(*) FROM emp WHERE emp.dept = depts.dept_id) AS n FROM depts",
    "count_bug_expr": "SELECT dept_id, (SELECT count(id) + 1 FROM emp WHERE emp.dept = depts.dept_id) AS n FROM depts",
    "count_bug_sum_stays_null": "SELECT dept_id, (SELECT sum(salary) FROM emp WHERE emp.dept = depts.dept_id) AS s FROM depts",
    "exists_in_inner_join_on": "SELECT e.name, d.dname FROM emp e JOIN depts d ON e.dept = d.dept_id AND EXISTS (SELECT 1 FROM l WHERE l.a = e.id)",
    "in_in_inner_join_on": "SELECT e.id, d.dname FROM emp e JOIN depts d ON e.dept = d.dept_id AND e.id IN (SELECT a FROM r)",
    "in_correlated": "SELECT name FROM emp WHERE dept IN (SELECT dept_id FROM depts WHERE depts.dname <> emp.name)",
    "qualified_star_in_except": "SELECT x.* FROM l x, r WHERE x.a = r.a EXCEPT SELECT x.* FROM l x, r WHERE x.a = r.a AND x.a > 1",
    "trig_reciprocals": "SELECT id, sec(salary) AS a, csc(salary) AS b, cot(salary) AS c FROM emp",
    "array_make_and_index": "SELECT id, array(id, dept, NULL) AS a, array(id, dept)[0] AS b, element_at(array(name, 'x'), -1) AS c, get(array(id), 3) AS d, size(array(salary, salary)) AS e, array(bonus, 1.5BD) AS f, array(hired) AS g, array() AS h FROM emp",
    "array_nested_index": "SELECT id, array(array(id, dept), array(7))[0][1] AS x, element_at(array(array(name)), 1) AS y FROM emp",
    "array_contains_nulls": "SELECT id, array_contains(array(10, 20, NULL), dept) AS a, array_contains(array(10, 20), dept) AS b, array_contains(array(name, 'ann'), 'ann') AS c, array_contains(array(salary), salary) AS d FROM emp",
    "sort_array_nan_null": "SELECT id, sort_array(array(salary, 1.5, NULL, 300.0)) AS a, sort_array(array(name, 'b', NULL), false) AS b, sort_array(array(dept, 15, id)) AS c FROM emp WHERE salary IS NULL OR salary <> 0",
    "array_append_compact": "SELECT id, array_append(array(id, NULL), dept) AS a, array_prepend(array(name), 'z') AS b, array_compact(array(dept, NULL, id, NULL)) AS c FROM emp",
    "maps": "SELECT id, map(id, name) AS m, map(id, name)[id] AS v, map(id, name)[id + 1] AS miss, element_at(map('a', salary), 'a') AS w, map_keys(map(id, dept, 100, 1)) AS k, map_values(map(1, name, 2, 'x')) AS vs, size(map(1, 2, 3, 4)) AS s FROM emp",
    "count_bug_in_where": "SELECT dname FROM depts WHERE (SELECT count(*) FROM emp WHERE emp.dept = depts.dept_id) = 0",
    "like_all_any": "SELECT name, name LIKE ALL ('%n%', 'a%') AS a, name NOT LIKE ALL ('%n%', 'b%') AS b, name LIKE ANY ('%e%', NULL) AS c, name NOT LIKE ANY ('a%', '%') AS d FROM emp",
    "using_join_qualified": "SELECT k, l.a, r.a, l.b FROM l LEFT JOIN r USING (a) CROSS JOIN (SELECT 1 AS k)",
    "using_join_stars": "SELECT l.*, r.* FROM l FULL OUTER JOIN r USING (a, b)",
    "natural_join_right_key": "SELECT a, b, l.a AS la FROM l NATURAL RIGHT JOIN r",
    "percentile_cont_disc": "SELECT dept, percentile_cont(0.25) WITHIN GROUP (ORDER BY bonus) AS a, percentile_disc(0.25) WITHIN GROUP (ORDER BY bonus DESC) AS b, percentile_disc(0.5) WITHIN GROUP (ORDER BY id) AS c, median(id) AS m FROM emp GROUP BY dept",
    "percentile_over_window": "SELECT id, percentile_disc(0.6) WITHIN GROUP (ORDER BY id) OVER (PARTITION BY dept) AS p, median(bonus) OVER (PARTITION BY dept) AS m FROM emp",
    "exists_under_union": "SELECT dname FROM depts WHERE EXISTS (SELECT id FROM emp WHERE emp.dept = depts.dept_id AND id > 2 UNION SELECT a FROM l WHERE l.a = depts.dept_id)",
    "not_exists_under_intersect": "SELECT dname FROM depts WHERE NOT EXISTS (SELECT name FROM emp WHERE emp.dept = depts.dept_id INTERSECT SELECT name FROM emp WHERE id < 3)",
    "scalar_under_union": "SELECT dept_id, (SELECT sum(x) FROM (SELECT id AS x FROM emp WHERE emp.dept = depts.dept_id UNION ALL SELECT a FROM l WHERE l.a > depts.dept_id / 10)) AS s FROM depts",
    "in_with_limit_per_row": "SELECT name FROM emp WHERE id IN (SELECT id FROM emp e2 WHERE e2.dept = emp.dept ORDER BY id LIMIT 1)",
    "exists_in_or": "SELECT id FROM emp WHERE id = 1 OR EXISTS (SELECT 1 FROM depts WHERE dept_id = emp.dept AND dname = 'ops')",
    "in_and_exists_as_values": "SELECT id, dept IN (SELECT dept_id FROM depts) AS a, dept NOT IN (SELECT dept_id FROM depts WHERE dept_id IS NOT NULL) AS b, EXISTS (SELECT 1 FROM l WHERE l.a = emp.id) AS c, id IN (SELECT a FROM l WHERE l.b = emp.name) AS d FROM emp",
    "exists_in_left_join_on": "SELECT e.id, d.dname FROM emp e LEFT JOIN depts d ON e.dept = d.dept_id AND EXISTS (SELECT 1 FROM l WHERE l.a = e.id)",
    "in_in_anti_join_on": "SELECT e.id FROM emp e LEFT ANTI JOIN depts d ON e.dept = d.dept_id AND d.dname IN (SELECT b FROM r)",
    "timestamp_literal_zones": "SELECT TIMESTAMP '2018-11-17 13:33:33.123Z' AS a, TIMESTAMP '2020-01-01 01:33:33UTC+080000' AS b, TIMESTAMP '1970-01-01 00:00:00 Europe/Paris' AS c, TIMESTAMP '2020-06-01 00:00:00-07:00' AS d",
    "subqueries_in_aggregate_filters": "SELECT dept, sum(salary) FILTER (WHERE EXISTS (SELECT 1 FROM depts WHERE dept_id = emp.dept AND dname = 'eng')) AS a, count(*) FILTER (WHERE id IN (SELECT a FROM l)) AS b, avg(id) FILTER (WHERE id > (SELECT min(a) FROM r)) AS c FROM emp GROUP BY dept",
    "limit_expression": "SELECT id FROM range(10) ORDER BY id DESC LIMIT 2 + 1 OFFSET 1 * 2",
    "grouping_id_virtual_column": "SELECT dept, grouping__id, count(*) AS n FROM emp GROUP BY CUBE(dept) ORDER BY grouping__id, dept",
    "exists_in_or_of_inner_join_on": "SELECT e.id, d.dname FROM emp e JOIN depts d ON e.dept = d.dept_id OR EXISTS (SELECT 1 FROM l WHERE l.a = e.id)",
    "in_or_in_then_grouped": "SELECT dept, count(*) AS n FROM emp WHERE dept IN (SELECT dept_id FROM depts WHERE dname <> emp.name) OR id IN (SELECT a FROM l WHERE l.a = emp.id) GROUP BY dept",
    "to_char_of_timestamps": "SELECT id, to_char(hired, 'yyyy-MM-dd HH:mm') AS a, to_varchar(hired, 'MMM d') AS b FROM emp",
    "interval_day_time_arithmetic": "SELECT id, hired - TIMESTAMP '2020-01-01 00:00:00' AS a, (hired - TIMESTAMP '2020-01-01 00:00:00') / 3 AS b, INTERVAL '1 2:3:4.5' DAY TO SECOND * id AS c, hired + INTERVAL '36' HOUR AS d, -INTERVAL '1' DAY + INTERVAL '2' HOUR AS e, DATE '2020-03-01' - date(hired) AS f, date(hired) + INTERVAL '3' DAY AS g, INTERVAL 2 weeks 3 microseconds * 1.5 AS h FROM emp",
    "interval_year_month_as_text": "SELECT id, CAST(INTERVAL '1-2' YEAR TO MONTH * id AS STRING) AS a, CAST(make_ym_interval(id, dept) AS STRING) AS b, hired + make_ym_interval(0, id) AS c, date(hired) - INTERVAL '1-1' YEAR TO MONTH AS d, CAST(INTERVAL '-178956970-8' YEAR TO MONTH / (id + 1) AS STRING) AS e FROM emp",
    "interval_literal_spellings": "SELECT INTERVAL 2 weeks 3 microseconds AS a, INTERVAL '-100' DAY '40' HOUR '80' MINUTE '299.889987299' SECOND AS b, INTERVAL -'1 2:3:4.001' DAY TO SECOND AS c, INTERVAL 'interval 1 day 2 hours' AS d, CAST(INTERVAL 2 years 4 months AS STRING) AS e, INTERVAL 13.123456789 seconds AS f, INTERVAL '20 15:40:32.99899999' DAY TO SECOND AS g, INTERVAL 30 day day",
    "interval_compare_and_functions": "SELECT id, INTERVAL '1' DAY > make_dt_interval(0, id * 5) AS a, abs(INTERVAL -'1 02:03:04.123' DAY TO SECOND * id) AS b, signum(make_dt_interval(id - 4)) AS c, div(make_dt_interval(id, 6), INTERVAL '1' HOUR) AS d, coalesce(NULL, INTERVAL '1' DAY, INTERVAL '01:01' HOUR TO MINUTE) AS e, make_dt_interval(1, 0, 0, bonus) AS f FROM emp",
    "split_part_and_luhn": "SELECT id, split_part(concat(name, '.x.', dept), '.', 2) AS a, split_part(concat(name, '.x.', dept), '.', -1) AS b, split_part(name, '', 1) AS c, split_part('a.b', '.', id) AS d, luhn_check(concat('401288888888188', id)) AS e, luhn_check(name) AS f, luhn_check(id * 6011111111111117) AS g FROM emp",
    "decode_as_case": "SELECT id, decode(dept, 10, 'ten', 20, 'twenty', NULL, 'none', 'other') AS a, decode(name, 'ann', 1) AS b, decode(dept, 30, salary) AS c FROM emp",
    "bytes_as_text": "SELECT id, hex(lpad(unhex(hex(id)), 4)) AS a, hex(rpad(unhex(hex(id)), 3, unhex('1f2e'))) AS b, lpad(name, 5, x'57') AS c, btrim(encode(concat(' ', name, ' '), 'utf-8')) AS d, contains(encode(name, 'utf-8'), x'61') AS e, startswith(id, '1') AS f, endswith(true, 'ue') AS g, is_valid_utf8(name) AS h, make_valid_utf8(x'80') AS i, try_validate_utf8(x'80') AS j FROM emp",
    "typeof_and_timestampadd": "SELECT id, typeof(id) AS a, typeof(bonus) AS b, typeof(array(name)) AS c, typeof(INTERVAL '1' DAY) AS d, timestampadd(HOUR, id, hired) AS e, dateadd(MONTH, id, date(hired)) AS f, timestampadd(MICROSECOND, 1001, hired) AS g FROM emp",
    "regexp_all_count_substr_instr": "SELECT id, regexp_extract_all(concat(name, ' 12 x3'), '(\\\\d+)', 1) AS a, regexp_extract_all('1a 2b 14m', '(\\\\d+)?', 1) AS b, regexp_count(concat(name, name), 'n') AS c, regexp_substr(name, '[aeiou]+') AS d, regexp_instr(name, 'e') AS e FROM emp",
    "width_bucket_numbers_and_intervals": "SELECT id, width_bucket(salary, 0, 250, 5) AS a, width_bucket(id, 8, 0, 4) AS b, width_bucket(bonus, -3, 10, id) AS c, width_bucket(make_dt_interval(id), INTERVAL '0' DAY, INTERVAL '10' DAY, 3) AS d, width_bucket(make_ym_interval(0, id), INTERVAL '0-0' YEAR TO MONTH, INTERVAL '0-9' YEAR TO MONTH, 3) AS e FROM emp",
    "array_insert_zip_map_key": "SELECT id, array_insert(array(1, 2, 3), id - 9, dept) AS a, array_insert(array(1, 2, 3), id, dept) AS a2, array_insert(array(name), 3, 'z') AS b, size(arrays_zip(array(id, id), array(name), array())) AS c, arrays_zip(array(id), array(name)) AS d, map_contains_key(map(10, 'a', 20, 'b'), dept) AS e, map_contains_key(map(1.5, id), 1.5) AS f FROM emp",
    "conv_bin_make_timestamp": "SELECT id, conv(CAST(id * 37 AS STRING), 10, 16) AS a, conv(name, 36, 10) AS b, conv(-id, 10, -10) AS c, bin(id * 5 - 20) AS d, make_timestamp(2021, id, 11, 6, 30, 45.678) AS e, make_timestamp(2020, 1, id, 0, 0, 60, 'CET') AS f FROM emp",
    "pivot_sum_avg": "SELECT * FROM (SELECT dept, name, salary FROM emp WHERE salary = salary) PIVOT (sum(salary) AS s, count(name) AS n FOR dept IN (10 AS ten, 20, 40))",
    "pivot_strings": "SELECT * FROM (SELECT id % 2 AS odd, name, id FROM emp) PIVOT (max(id) FOR name IN ('ann', 'bö', '日本'))",
    "calendar_intervals_as_text": "SELECT id, CAST(make_interval(1, 2, 3, 4, 5, 6, 7.008009) AS STRING) AS a, CAST(CAST(concat(id, ' month ', dept, ' days') AS INTERVAL) AS STRING) AS b, CAST(CAST('- -1 second' AS INTERVAL) AS STRING) AS c, CAST(make_interval(0, id, 0, 0, 0, 0, bonus) AS STRING) AS d FROM emp",
    "lambdas_transform_filter": "SELECT id, transform(array(id, dept, NULL), x -> x * 2 + id) AS a, transform(array(salary, 1.5), (x, i) -> x + i) AS b, filter(array(name, 'x', NULL), s -> s > 'b') AS c, filter(array(1, 2, 3, 4), (x, i) -> i % 2 = 0) AS d, transform(array(array(id), array(dept, 1)), a -> filter(a, e -> e > 5)) AS e, transform(array(1, 2), x -> aggregate(array(x, id), 0, (acc, y) -> acc + y)) AS f, transform(array(id), 0) AS g FROM emp",
    "lambdas_exists_forall_aggregate": "SELECT id, exists(array(dept, NULL), x -> x > 15) AS a, forall(array(dept, id), x -> x > 5) AS b, aggregate(array(id, dept, 3), 0, (acc, x) -> acc + coalesce(x, 100)) AS c, aggregate(array(salary, 2.0D), CAST(0 AS DOUBLE), (acc, x) -> acc + x, acc -> acc / 2) AS d, reduce(array(name, 'z'), '', (acc, x) -> concat(acc, x)) AS e, aggregate(array(1, 2, id), named_struct('s', 0, 'n', 0), (acc, x) -> named_struct('s', acc.s + x, 'n', acc.n + 1), acc -> acc.s / acc.n) AS f, exists(CAST(NULL AS ARRAY<INT>), x -> x > 1) AS g FROM emp",
    "lambdas_inside_aggregates": "SELECT dept, sum(aggregate(array(id, dept), 0, (acc, x) -> acc + coalesce(x, 0))) AS a, max(exists(array(salary), x -> x > 60)) AS b, sum(size(filter(array(id, dept), x -> x > 5))) AS c FROM emp GROUP BY dept",
    "lambdas_zip_and_maps": "SELECT id, zip_with(array(id, dept), array(name), (x, y) -> concat(y, x)) AS a, transform_values(map(id, salary), (k, v) -> v * k) AS b, transform_keys(map(id, name), (k, v) -> k + 100) AS c, map_filter(map(1, id, 2, dept), (k, v) -> v > 5) AS d, zip_with(array(bonus), array(1.5BD, 2BD), (x, y) -> x * y) AS e FROM emp",
    "count_if_and_equal_null": "SELECT dept, count_if(salary > 60) AS a, count_if(name IS NULL) AS b, max(equal_null(bonus, 1.5)) AS c FROM emp GROUP BY dept",
    "co_moments_grouped": "SELECT dept, corr(id, salary) AS a, covar_pop(id, bonus) AS b, covar_samp(id, salary) AS c, regr_sxx(salary, id) AS d, regr_syy(salary, id) AS e, regr_slope(salary, id) AS f, regr_count(salary, bonus) AS g FROM emp GROUP BY dept",
    "co_moments_whole_table": "SELECT corr(id, dept) AS a, covar_pop(id * 1.5, dept) AS b, covar_samp(dept, id) AS c, regr_slope(dept, id) AS d, regr_sxx(dept, id) AS e, corr(id, id) AS f FROM emp",
    "explode_in_select": "SELECT id, explode(array(id, dept, NULL)) AS x FROM emp",
    "explode_outer_and_positions": "SELECT id, posexplode_outer(CASE WHEN id > 4 THEN array(name, 'q') END) FROM emp",
    "explode_map": "SELECT id, explode(map(id, name, 100, 'x')) FROM emp",
    "lateral_view_outer": "SELECT id, t.x FROM emp LATERAL VIEW OUTER explode(CASE WHEN id > 4 THEN array(id, id * 2) END) t AS x",
    "lateral_views_chained": "SELECT id, p, v, w FROM emp LATERAL VIEW posexplode(array(name, 'q')) tt AS p, v LATERAL VIEW explode(array(p, dept)) uu AS w WHERE v IS NOT NULL",
    "generators_in_from": "SELECT * FROM explode(array(1, NULL, 3)) UNION ALL SELECT a FROM inline(array(named_struct('a', 7, 'b', 'x'), named_struct('a', 8, 'b', CAST(NULL AS STRING))))",
    "stack_rows": "SELECT id, stack(2, id, name, dept, 'q') FROM emp",
    "explode_then_aggregate": "SELECT x, count(*) AS n FROM (SELECT explode(array(dept, dept, id)) AS x FROM emp) GROUP BY x",
    "explode_an_aggregate": "SELECT dept, explode(collect_list(id)) AS x FROM emp GROUP BY dept",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_sql_matches_spark(views, name):
    s, spark = views
    q = QUERIES[name]
    got = arrow_rows(s.sql(q).toArrow())
    expected = spark_rows(spark.sql(q))
    # Only a top-level ORDER BY (not one inside WITHIN GROUP or OVER) orders the rows.
    check_rows(name, got, expected, ordered=re.search(r"ORDER BY [^)]*$", q) is not None)


def test_column_names_of_typed_literals_match_spark(views):
    s, spark = views
    q = "SELECT 1L, 6S, 25Y, 2.5F, 1.5BD, 'x'"
    assert s.sql(q).columns == spark.sql(q).columns


def test_current_time_is_read_once_per_query(views):
    s, _ = views
    # Enough rows and calls that two clock reads would differ somewhere.
    q = (
        "SELECT count(*) AS n FROM range(200000) "
        "WHERE current_timestamp() = now() AND now() = current_timestamp() AND localtimestamp() = localtimestamp()"
    )
    assert s.sql(q).toArrow().column("n").to_pylist() == [200000]
    assert s.sql("SELECT current_date() = current_date() AS same").toArrow().column("same").to_pylist() == [
        True
    ]


def test_set_and_reset_match_spark(views):
    s, spark = views
    for q in ("SET spark.sql.ferrospark.test.key=abc", "SET spark.sql.ferrospark.test.key"):
        assert arrow_rows(s.sql(q).toArrow()) == spark_rows(spark.sql(q))
    assert s.conf["spark.sql.ferrospark.test.key"] == "abc"
    s.sql("RESET spark.sql.ferrospark.test.key")
    spark.sql("RESET spark.sql.ferrospark.test.key")
    q = "SET spark.sql.ferrospark.test.key"
    assert arrow_rows(s.sql(q).toArrow()) == spark_rows(spark.sql(q))
    # A SET the session cannot take is refused, and the session keeps its value.
    with pytest.raises(fs.ConfigError):
        s.sql("SET spark.sql.ansi.enabled=maybe")
    assert s.sql("SELECT 1 AS one").toArrow().column("one").to_pylist() == [1]


def test_legacy_coding_replaces_what_a_charset_cannot_hold(views):
    s, spark = views
    q = "SELECT encode('é日x', 'US-ASCII') AS a, decode(X'E58A9D41', 'US-ASCII') AS b, decode(X'FF41', 'UTF-8') AS c"
    with pytest.raises(fs.FerroError, match="MALFORMED_CHARACTER_CODING"):
        s.sql(q).toArrow()
    try:
        for session in (s, spark):
            session.sql("SET spark.sql.legacy.codingErrorAction=true")
        assert arrow_rows(s.sql(q).toArrow()) == spark_rows(spark.sql(q))
    finally:
        for session in (s, spark):
            session.sql("RESET spark.sql.legacy.codingErrorAction")


def test_set_ansi_off_changes_the_next_query():
    s = fs.Session()
    with pytest.raises(fs.SparkArithmeticError):
        s.sql("SELECT 1 / 0 AS x").toArrow()
    s.sql("SET spark.sql.ansi.enabled=false")
    assert s.sql("SELECT 1 / 0 AS x").toArrow().column("x").to_pylist() == [None]
    s.sql("RESET")
    with pytest.raises(fs.SparkArithmeticError):
        s.sql("SELECT 1 / 0 AS x").toArrow()


@pytest.mark.parametrize(
    ("sql", "error_class"),
    [
        ("SELECT 128Y", "INVALID_NUMERIC_LITERAL_RANGE"),
        ("SELECT CAST(123 AS binary)", "DATATYPE_MISMATCH.CAST_WITH_CONF_SUGGESTION"),
        ("SELECT CAST('123.45' AS decimal(4, 2))", "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"),
        ("SELECT id FROM range(3) LIMIT -1", "INVALID_LIMIT_LIKE_EXPRESSION.IS_NEGATIVE"),
        ("SELECT id FROM range(3) LIMIT CAST(NULL AS INT)", "INVALID_LIMIT_LIKE_EXPRESSION.IS_NULL"),
        ("SELECT id FROM range(3) LIMIT id > 1", "INVALID_LIMIT_LIKE_EXPRESSION.IS_UNFOLDABLE"),
        ("SELECT id FROM range(3) LIMIT 'a'", "INVALID_LIMIT_LIKE_EXPRESSION.DATA_TYPE"),
        (
            "SELECT name FROM VALUES ('a') AS t(name) WHERE name LIKE ALL ()",
            "INVALID_SQL_SYNTAX.EMPTY_QUANTIFIED_PATTERN",
        ),
        ("SELECT percentile_cont(0.5) FROM range(3)", "INVALID_WITHIN_GROUP_EXPRESSION.WITHIN_GROUP_MISSING"),
        (
            "SELECT percentile_cont(DISTINCT 0.5) WITHIN GROUP (ORDER BY id) FROM range(3)",
            "INVALID_WITHIN_GROUP_EXPRESSION.DISTINCT_UNSUPPORTED",
        ),
        (
            "SELECT round(id, 0) WITHIN GROUP (ORDER BY id) FROM range(3)",
            "INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX",
        ),
        (
            "SELECT median(id) OVER (PARTITION BY id % 2 ORDER BY id) FROM range(3)",
            "INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC",
        ),
        ("SELECT 40000S", "INVALID_NUMERIC_LITERAL_RANGE"),
        ("SELECT 9223372036854775808L", "INVALID_NUMERIC_LITERAL_RANGE"),
        ("SELECT * FROM nope(3)", "UNRESOLVABLE_TABLE_VALUED_FUNCTION"),
        ("SELECT element_at(array(1, 2, 3), 5)", "INVALID_ARRAY_INDEX_IN_ELEMENT_AT"),
        ("SELECT element_at(array(1, 2, 3), 0)", "INVALID_INDEX_OF_ZERO"),
        ("SELECT array(1, 2, 3)[3]", "INVALID_ARRAY_INDEX"),
        ("SELECT map(1, 'a', 1, 'b')", "DUPLICATED_MAP_KEY"),
        ("SELECT map(NULL, 'a')", "NULL_MAP_KEY"),
        ("SELECT size(1)", "DATATYPE_MISMATCH"),
        ("SELECT encode('日本', 'US-ASCII')", "MALFORMED_CHARACTER_CODING"),
        ("SELECT INTERVAL 1 MONTH 2 DAYS", "Cannot mix year-month and day-time fields"),
        ("SELECT split_part('a.b', '.', 0)", "INVALID_INDEX_OF_ZERO"),
        ("SELECT validate_utf8(x'80')", "INVALID_UTF8_STRING"),
        ("SELECT decode(1)", "WRONG_NUM_ARGS"),
        ("SELECT raise_error('boom')", "USER_RAISED_EXCEPTION"),
        ("SELECT assert_true(1 > 2)", "USER_RAISED_EXCEPTION"),
        ("SELECT array_insert(array(1, 2), 0, 3)", "INVALID_INDEX_OF_ZERO"),
        ("SELECT array_insert(array(1, 2), 1, 'x')", "ARRAY_FUNCTION_DIFF_TYPES"),
        ("SELECT map_contains_key(map('1', 'a'), 1)", "MAP_FUNCTION_DIFF_TYPES"),
        ("SELECT conv('92233720368547758070', 10, 16)", "ARITHMETIC_OVERFLOW"),
        ("SELECT make_timestamp(2021, 7, 11, 6, 30, 60.007)", "INVALID_FRACTION_OF_SECOND"),
        ("SELECT make_timestamp(2021, 13, 11, 6, 30, 1)", "DATETIME_FIELD_OUT_OF_BOUNDS"),
        ("SELECT regexp_extract_all('1a', '\\\\d+', 1)", "REGEX_GROUP_INDEX"),
        ("SELECT INTERVAL '2' YEAR / 0", "INTERVAL_DIVIDED_BY_ZERO"),
        ("SELECT make_ym_interval(178956970, 8)", "INTERVAL_ARITHMETIC_OVERFLOW"),
        ("SELECT INTERVAL 1 MONTH > INTERVAL 20 DAYS", "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES"),
        ("SELECT INTERVAL '20 15:40:32.99899999' DAY TO HOUR", "UNMATCHED_FORMAT_STRING_WITH_NOTICE"),
        ("SELECT INTERVAL '1.2'", "INVALID_TYPED_LITERAL"),
        ("SELECT INTERVAL '1' YEAR TO SECOND", "UNSUPPORTED_FROM_TO_EXPRESSION"),
        ("SELECT -(a) FROM VALUES (INTERVAL '-2147483648 months') AS t(a)", "INTERVAL_ARITHMETIC_OVERFLOW"),
    ],
)
def test_refusals_name_spark_error_class(views, sql, error_class):
    _, spark = views
    with pytest.raises(Exception, match=error_class):
        spark.sql(sql).collect()
    s = fs.Session()
    with pytest.raises(fs.FerroError, match=error_class):
        s.sql(sql).toArrow()
    assert s.sql("SELECT 2 AS two").toArrow().column("two").to_pylist() == [2]


def test_first_with_filter_is_refused_not_answered_wrong():
    s = fs.Session()
    s.createDataFrame(pa.table({"x": [None, 1, 2], "c": [False, True, True]})).createOrReplaceTempView("t")
    with pytest.raises(fs.FerroError, match="FILTER"):
        s.sql("SELECT first(x) FILTER (WHERE c) FROM t").toArrow()
    got = s.sql("SELECT first(x, true) FILTER (WHERE c) AS f FROM t").toArrow()
    assert got.column("f").to_pylist() == [1]


def test_a_hostile_expression_is_refused_before_it_is_planned():
    s = fs.Session()
    # 50,000 terms: refused after one walk of the parsed text that stops at the limit.
    with pytest.raises(fs.AnalysisError, match="FAILED_TO_PARSE_TOO_COMPLEX"):
        s.sql("SELECT " + " + ".join(["1"] * 50_000)).toArrow()
    # Just under the limit still runs, and the session keeps working.
    got = s.sql("SELECT " + " + ".join(["1"] * 900) + " AS n").toArrow()
    assert got.column("n").to_pylist() == [900]


def test_cast_text_to_timestamp_reads_the_session_zone(views):
    _, spark = views
    q = (
        "SELECT unix_seconds(CAST('2020-01-01 00:00:00' AS TIMESTAMP)) AS a, "
        "unix_seconds(CAST('2020-07-01 12:30:00' AS TIMESTAMP)) AS b, "
        "unix_seconds(CAST('2020-07-01 12:30:00Z' AS TIMESTAMP)) AS c"
    )
    s = fs.Session(conf={"spark.sql.session.timeZone": "America/Los_Angeles"})
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        expected = spark_rows(spark.sql(q))
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
    assert arrow_rows(s.sql(q).toArrow()) == expected
    # The zone is read when the query runs: SET changes the answer.
    s.sql("SET spark.sql.session.timeZone=UTC")
    assert arrow_rows(s.sql(q).toArrow())[0][0] == 1577836800


def test_conf_is_a_runtime_config_as_pysparks():
    s = fs.Session()
    s.conf.set("spark.sql.ansi.enabled", False)
    assert s.conf.get("spark.sql.ansi.enabled") == "false"
    assert s.conf["spark.sql.ansi.enabled"] == "false"
    assert s.sql("SELECT 1 / 0 AS x").toArrow().column("x").to_pylist() == [None]
    assert s.conf.isModifiable("spark.sql.ansi.enabled")
    s.conf.unset("spark.sql.ansi.enabled")
    assert "spark.sql.ansi.enabled" not in s.conf
    assert s.conf.get("spark.sql.ansi.enabled", "true") == "true"
    with pytest.raises(fs.SparkArithmeticError):
        s.sql("SELECT 1 / 0 AS x").toArrow()
    with pytest.raises(fs.ConfigError):
        s.conf.set("spark.sql.ansi.enabled", "sometimes")
    assert s.conf.getAll == {}


BYTES_QUERIES = [
    "SELECT id, hex(id) AS a, hex(-id) AS b, hex(name) AS c, unhex(hex(name)) AS d, unhex('zz') AS e, unhex('F') AS f FROM emp",
    "SELECT id, to_binary(hex(name)) AS a, to_binary(name, 'utf-8') AS b, to_binary(base64(name), 'base64') AS c, base64(name) AS d FROM emp",
    "SELECT id, encode(name, 'UTF-8') AS a, decode(encode(name, 'UTF-8'), 'UTF-8') AS b FROM emp",
    "SELECT id, encode(name, 'US-ASCII') AS a, decode(encode(name, 'ISO-8859-1'), 'ISO-8859-1') AS b FROM emp WHERE id IN (1, 5, 6, 7)",
    "SELECT id, elt(2, name, 'x', NULL) AS a, elt(3, name, 'x', NULL) AS b, elt(CAST(NULL AS INT), 'p') AS c FROM emp",
    "SELECT id, nullifzero(dept - 10) AS a, zeroifnull(dept) AS b, bit_count(id) AS c, getbit(id, 1) AS d, id << 2 AS e, -id >>> 28 AS f, ~id AS g, id & 3 AS h FROM emp",
]


@pytest.mark.parametrize("q", BYTES_QUERIES)
def test_bytes_and_bits_match_spark(views, q):
    s, spark = views
    check_rows(q, arrow_rows(s.sql(q).toArrow()), spark_rows(spark.sql(q)), ordered=False)


def test_intervals_leave_in_forms_pyarrow_and_pandas_read(views):
    """Year-month intervals (which PySpark cannot collect) arrive as month_day_nano intervals
    named by their Spark type; day intervals and day-time ones as durations, as PySpark's."""
    s, spark = views
    q = "SELECT INTERVAL '1-2' YEAR TO MONTH AS ym, INTERVAL '3' DAY AS d, INTERVAL '1 2:3:4.5' DAY TO SECOND AS dt, make_interval(1, 0, 0, 2) AS c"
    df = s.sql(q)
    t = df.toArrow()
    assert t.column("ym").to_pylist() == [pa.scalar((14, 0, 0), pa.month_day_nano_interval()).as_py()]
    assert t.column("d").to_pylist() == [dt.timedelta(days=3)]
    assert t.column("dt").to_pylist() == [dt.timedelta(days=1, hours=2, minutes=3, seconds=4.5)]
    assert df.dtypes == [
        ("ym", "interval year to month"),
        ("d", "interval day"),
        ("dt", "interval day to second"),
        ("c", "interval"),
    ]
    assert list(df.toPandas().columns) == ["ym", "d", "dt", "c"]
    row = spark.sql("SELECT INTERVAL '3' DAY AS d, INTERVAL '1 2:3:4.5' DAY TO SECOND AS dt").collect()[0]
    assert (row.d, row.dt) == (t.column("d")[0].as_py(), t.column("dt")[0].as_py())


def test_new_functions_from_the_dataframe_api_match_spark(views):
    """The functions added for the SQL surface, called as ``pyspark.sql.functions`` calls
    them, give what PySpark gives on the same rows."""
    from pyspark.sql import functions as spark_f

    import ferrospark.functions as fs_f

    s, spark = views

    def columns(m):
        return [
            m.col("id"),
            m.split_part(m.col("name"), m.lit("n"), m.lit(1)).alias("a"),
            m.expr("luhn_check(concat('401288888888188', id))").alias("b"),
            m.regexp_count(m.col("name"), m.lit("[aeiou]")).alias("c"),
            m.regexp_extract_all(m.col("name"), m.lit("([a-z])"), 1).alias("d"),
            m.array_insert(m.array(m.col("id")), 2, m.col("dept")).alias("e"),
            m.map_contains_key(m.create_map(m.col("id"), m.col("name")), 3).alias("f"),
            m.width_bucket(m.col("salary"), m.lit(0), m.lit(250), m.lit(5)).alias("g"),
            m.conv(m.col("id").cast("string"), 10, 2).alias("h"),
            m.typeof(m.col("bonus")).alias("i"),
            m.make_dt_interval(m.col("id"), m.lit(2)).alias("j"),
            m.bin(m.col("id")).alias("k"),
        ]

    got = arrow_rows(s.table("emp").select(*columns(fs_f)).toArrow())
    expected = spark_rows(spark.table("emp").select(*columns(spark_f)))
    check_rows("dataframe functions", got, expected, ordered=False)


def test_show_prints_intervals_as_spark_does(views):
    s, spark = views
    q = (
        "SELECT id, INTERVAL '1-2' YEAR TO MONTH * id AS ym, make_dt_interval(id, 2, 3, 4.5) AS dt, "
        "-make_dt_interval(0, 0, 0, id) AS neg, DATE '2020-03-01' - date(hired) AS d, "
        "make_interval(0, id, 0, 2, 0, 0, 1.25) AS c FROM emp ORDER BY id"
    )
    assert s.sql(q)._show_string(20, False) == spark.sql(q)._jdf.showString(20, 0, False)


def test_generated_column_names_match_spark(views):
    """Unaliased select items are named as Spark names them: the FILTER clause, interval
    literals with their fields, casts as written, the defaults Spark's analyzer fills in,
    lambdas."""
    s, spark = views
    for q in [
        "SELECT +id, - -10, -10, CAST(NULL AS INT), CAST(id AS long), float(2.0), id != 1, "
        "if(id != 1, 1, 2), 5 div 2, ceil(salary), trim(BOTH 'x' FROM name), substr(name, 2), "
        "split(name, ','), sort_array(array(id)), X'2379ACFE', 1E10, "
        "TIMESTAMP '2016-03-11 20:54:00.000', DATE '2019-01-01', positive(id), nullifzero(id) FROM emp",
        "SELECT INTERVAL 2 second, INTERVAL '1 2:3:4.001' DAY TO SECOND, INTERVAL '-11' MONTH, "
        "INTERVAL '20 15:40' DAY TO MINUTE, INTERVAL 2 years, INTERVAL '1-2' YEAR TO MONTH, "
        "INTERVAL 13.123456 seconds, CAST(id AS INTERVAL DAY), make_interval(1, 2) FROM emp",
        "SELECT count(id) FILTER (WHERE id > 2), sum(DISTINCT salary) FILTER (WHERE dept = 10), "
        "count(*) FILTER (WHERE name IS NULL) FROM emp",
        "SELECT transform(array(id), x -> x + 1), aggregate(array(id), 0, (a, x) -> a + x), "
        "filter(array(id), (x, i) -> i > 0) FROM emp",
        "SELECT timestampadd(HOUR, id, hired), timestampdiff(SECOND, hired, hired) FROM emp",
    ]:
        assert s.sql(q).columns == spark.sql(q).columns, q


def test_higher_order_functions_from_the_dataframe_api_match_spark(views):
    """``transform``, ``filter``, ``exists``, ``forall``, ``aggregate``, ``zip_with`` and the
    map ones, called with Python lambdas as PySpark calls them."""
    from pyspark.sql import functions as spark_f

    import ferrospark.functions as fs_f

    s, spark = views

    def columns(m):
        arr = m.array(m.col("id"), m.col("dept"), m.lit(None).cast("int"))
        mp = m.create_map(m.col("id"), m.col("salary"))
        return [
            m.col("id"),
            m.transform(arr, lambda x: x * 2 + m.col("id")).alias("a"),
            m.transform(arr, lambda x, i: x + i).alias("b"),
            m.filter(arr, lambda x: x > 5).alias("c"),
            m.exists(arr, lambda x: x > 15).alias("d"),
            m.forall(arr, lambda x: x.isNotNull()).alias("e"),
            m.aggregate(arr, m.lit(0), lambda acc, x: acc + m.coalesce(x, m.lit(1))).alias("f"),
            m.aggregate(
                arr, m.lit(0), lambda acc, x: acc + m.coalesce(x, m.lit(1)), lambda acc: acc * 10
            ).alias("g"),
            m.zip_with(arr, m.array(m.col("name")), lambda x, y: m.concat(y, x.cast("string"))).alias("h"),
            m.transform_values(mp, lambda k, v: v * k).alias("i"),
            m.transform_keys(mp, lambda k, v: k + 1).alias("j"),
            m.map_filter(mp, lambda k, v: v > 60).alias("k"),
            m.transform(m.array(arr), lambda a: m.transform(a, lambda x: x + m.size(a))).alias("l"),
        ]

    got = arrow_rows(s.table("emp").select(*columns(fs_f)).toArrow())
    expected = spark_rows(spark.table("emp").select(*columns(spark_f)))
    check_rows("higher-order functions", got, expected, ordered=False)


def test_generators_from_the_dataframe_api_match_spark(views):
    """``explode``, ``posexplode``, ``explode_outer`` and ``inline`` in ``select`` and
    ``withColumn``, as PySpark calls them."""
    from pyspark.sql import functions as spark_f

    import ferrospark.functions as fs_f

    s, spark = views

    def frames(m, t):
        arr = m.array(m.col("id"), m.col("dept"))
        yield t.select("id", m.explode(arr).alias("x"))
        yield t.withColumn("x", m.explode_outer(m.when(m.col("id") > 3, arr))).select("id", "x")
        yield t.select(m.posexplode(m.create_map(m.col("id"), m.col("name"))), "dept")
        yield t.select(
            "id",
            m.inline(m.array(m.struct(m.col("id").alias("a"), m.col("name").alias("b")))),
        )

    for got_df, exp_df in zip(frames(fs_f, s.table("emp")), frames(spark_f, spark.table("emp"))):
        assert got_df.columns == exp_df.columns
        check_rows("generators", arrow_rows(got_df.toArrow()), spark_rows(exp_df), ordered=False)


def test_statistics_of_pairs_from_the_dataframe_api_match_spark(views):
    """``corr``, ``covar_*``, ``regr_*`` and ``count_if`` as PySpark calls them, names too."""
    from pyspark.sql import functions as spark_f

    import ferrospark.functions as fs_f

    s, spark = views

    def aggs(m):
        return [
            m.corr("id", "dept"),
            m.covar_pop("id", "bonus"),
            m.covar_samp(m.col("id"), m.col("dept")),
            m.regr_slope("dept", "id"),
            m.regr_sxx("dept", "id"),
            m.regr_syy("dept", "id"),
            m.regr_count("dept", "bonus"),
            m.count_if(m.col("id") > 3),
        ]

    got = s.table("emp").groupBy("dept").agg(*aggs(fs_f))
    expected = spark.table("emp").groupBy("dept").agg(*aggs(spark_f))
    assert got.columns == expected.columns
    check_rows("pair statistics", arrow_rows(got.toArrow()), spark_rows(expected), ordered=False)
