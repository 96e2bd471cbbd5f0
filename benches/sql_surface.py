"""Spark SQL surface beyond TPC-H, timed in ferrospark, DuckDB and PySpark on TPC-H's files.

    python benches/sql_surface.py --scale 1                  # ferrospark, DuckDB, PySpark
    python benches/sql_surface.py --engines ferrospark,duckdb --reps 5

The shapes Spark's golden tests exercise and TPC-H does not: EXISTS inside OR, a correlated
subquery under UNION ALL (decorrelated through a domain join), IN as a value in a select list,
percentile_cont / percentile_disc WITHIN GROUP, LIKE ANY, a USING join read through its
hidden key, interval arithmetic (date and timestamp differences, year-month and day intervals),
PIVOT, the regular expression and split_part functions, skewness / kurtosis / bit aggregates,
histogram_numeric, RANGE frames moved by an interval, (a, b) IN (SELECT ...), hashes and
digests, array set functions and string edits (levenshtein, soundex, substring_index),
percentile_approx, listagg WITHIN GROUP with mode, sliding time windows, map builders with
sequence and a comparator array_sort, and JSON texts read by json_array_length and
json_object_keys. Each engine runs each query once to warm up, then ``--reps`` times (the median is
printed), in one process per engine; results are checked against PySpark's when it runs.
Polars' SQL has no correlated subqueries, so it is not among the engines.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from ferrospark.tpch import ensure_tpch  # noqa: E402

# name -> (Spark SQL, DuckDB's spelling when it differs)
QUERIES: dict[str, tuple[str, str | None]] = {
    "exists_in_or": (
        "SELECT count(*) AS n FROM orders o WHERE o_orderpriority = '1-URGENT' "
        "OR EXISTS (SELECT 1 FROM lineitem l WHERE l.l_orderkey = o.o_orderkey AND l_quantity > 49)",
        None,
    ),
    "correlated_under_union": (
        "SELECT count(*) AS n FROM customer c WHERE EXISTS ("
        "SELECT o_orderkey FROM orders WHERE o_custkey = c.c_custkey AND o_totalprice > 400000 "
        "UNION ALL SELECT o_orderkey FROM orders WHERE o_custkey = c.c_custkey "
        "AND o_orderstatus = 'P' AND o_totalprice > 300000)",
        None,
    ),
    "in_as_value": (
        "SELECT o_orderstatus, sum(CASE WHEN o_custkey IN (SELECT c_custkey FROM customer "
        "WHERE c_mktsegment = 'BUILDING') THEN 1 ELSE 0 END) AS n FROM orders GROUP BY o_orderstatus",
        None,
    ),
    "percentile_within_group": (
        "SELECT l_returnflag, percentile_cont(0.5) WITHIN GROUP (ORDER BY l_extendedprice) AS p50, "
        "percentile_disc(0.9) WITHIN GROUP (ORDER BY l_quantity DESC) AS p90 FROM lineitem GROUP BY l_returnflag",
        "SELECT l_returnflag, quantile_cont(l_extendedprice, 0.5) AS p50, "
        "quantile_disc(l_quantity, 0.1) AS p90 FROM lineitem GROUP BY l_returnflag",
    ),
    "like_any": (
        "SELECT count(*) AS n FROM part WHERE p_name LIKE ANY ('%green%', '%blue%', 'forest%')",
        "SELECT count(*) AS n FROM part WHERE p_name LIKE '%green%' OR p_name LIKE '%blue%' "
        "OR p_name LIKE 'forest%'",
    ),
    "interval_arithmetic": (
        "SELECT l_shipmode, max(l_receiptdate - l_shipdate) AS longest, "
        "count(*) AS n FROM lineitem WHERE l_shipdate + INTERVAL '1-2' YEAR TO MONTH > DATE '1998-01-01' "
        "AND CAST(l_commitdate AS TIMESTAMP) - CAST(l_shipdate AS TIMESTAMP) > INTERVAL '20' DAY "
        "GROUP BY l_shipmode",
        "SELECT l_shipmode, max(l_receiptdate - l_shipdate) * INTERVAL 1 DAY AS longest, "
        "count(*) AS n FROM lineitem WHERE l_shipdate + INTERVAL '14' MONTH > DATE '1998-01-01' "
        "AND CAST(l_commitdate AS TIMESTAMP) - CAST(l_shipdate AS TIMESTAMP) > INTERVAL '20' DAY "
        "GROUP BY l_shipmode",
    ),
    "pivot_by_priority": (
        "SELECT * FROM (SELECT o_orderstatus, o_orderpriority, o_totalprice FROM orders) "
        "PIVOT (sum(o_totalprice) AS s FOR o_orderpriority IN ('1-URGENT' AS urgent, '2-HIGH' AS high, '5-LOW' AS low))",
        "SELECT o_orderstatus, sum(o_totalprice) FILTER (WHERE o_orderpriority = '1-URGENT') AS urgent, "
        "sum(o_totalprice) FILTER (WHERE o_orderpriority = '2-HIGH') AS high, "
        "sum(o_totalprice) FILTER (WHERE o_orderpriority = '5-LOW') AS low FROM orders GROUP BY o_orderstatus",
    ),
    "regexp_and_split_part": (
        "SELECT count(*) AS n, sum(regexp_count(o_comment, 'ly')) AS c, "
        "max(split_part(o_clerk, '#', 2)) AS k FROM orders WHERE regexp_instr(o_comment, 'fur') > 0",
        "SELECT count(*) AS n, sum(length(o_comment) - length(replace(o_comment, 'ly', ''))) // 2 AS c, "
        "max(split_part(o_clerk, '#', 2)) AS k FROM orders WHERE strpos(o_comment, 'fur') > 0",
    ),
    "lambdas_over_arrays": (
        "SELECT o_orderstatus, sum(aggregate(transform(array(o_totalprice, o_custkey, o_shippriority), "
        "x -> x * 2), 0D, (acc, x) -> acc + x)) AS s, "
        "sum(size(filter(array(o_totalprice, o_custkey), x -> x > 100000))) AS n "
        "FROM orders GROUP BY o_orderstatus",
        "SELECT o_orderstatus, sum(list_sum(list_transform([o_totalprice, o_custkey, o_shippriority], "
        "lambda x: x * 2))) AS s, sum(len(list_filter([o_totalprice, o_custkey], lambda x: x > 100000))) AS n "
        "FROM orders GROUP BY o_orderstatus",
    ),
    "explode_and_count": (
        "SELECT x, count(*) AS n FROM (SELECT explode(array(l_shipmode, l_shipinstruct)) AS x "
        "FROM lineitem) GROUP BY x",
        "SELECT x, count(*) AS n FROM (SELECT unnest([l_shipmode, l_shipinstruct]) AS x "
        "FROM lineitem) GROUP BY x",
    ),
    "using_join_hidden_key": (
        "SELECT count(*) AS n, count(o.o_custkey) AS m FROM customer c "
        "LEFT JOIN (SELECT o_custkey AS c_custkey, o_custkey FROM orders WHERE o_totalprice > 450000) o "
        "USING (c_custkey)",
        None,
    ),
    "moments_and_bit_aggregates": (
        "SELECT l_returnflag, skewness(l_extendedprice) AS sk, kurtosis(l_discount) AS ku, "
        "bit_xor(l_partkey) AS bx, bit_and(l_suppkey) AS ba, bit_or(l_linenumber) AS bo "
        "FROM lineitem GROUP BY l_returnflag",
        "SELECT l_returnflag, skewness(l_extendedprice) AS sk, kurtosis_pop(l_discount) AS ku, "
        "bit_xor(l_partkey) AS bx, bit_and(l_suppkey) AS ba, bit_or(l_linenumber) AS bo "
        "FROM lineitem GROUP BY l_returnflag",
    ),
    # DuckDB has no streaming histogram; its exact histogram of the same column stands in.
    "histogram_numeric": (
        "SELECT l_returnflag, size(histogram_numeric(l_quantity, 10)) AS bins FROM lineitem GROUP BY l_returnflag",
        "SELECT l_returnflag, cardinality(histogram(l_quantity)) AS bins FROM lineitem GROUP BY l_returnflag",
    ),
    "range_window_by_interval": (
        "SELECT count(*) AS n FROM (SELECT sum(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY o_orderdate "
        "RANGE BETWEEN INTERVAL '3' MONTH PRECEDING AND CURRENT ROW) AS s FROM orders) WHERE s > 400000",
        "SELECT count(*) AS n FROM (SELECT sum(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY o_orderdate "
        "RANGE BETWEEN INTERVAL 3 MONTH PRECEDING AND CURRENT ROW) AS s FROM orders) WHERE s > 400000",
    ),
    "tuple_in_subquery": (
        "SELECT count(*) AS n FROM orders WHERE (o_custkey, o_orderstatus) IN "
        "(SELECT c_custkey, 'F' FROM customer WHERE c_acctbal > 5000)",
        None,
    ),
    # A correlated aggregate per customer through LATERAL (the domain join), a count-bug
    # subquery under HAVING, and NOT over an IN subquery (a null-aware anti join).
    "lateral_per_customer": (
        "SELECT count(*) AS n, sum(s.total) AS t FROM customer c, LATERAL "
        "(SELECT count(*) AS k, sum(o_totalprice) AS total FROM orders o WHERE o.o_custkey = c.c_custkey) s "
        "WHERE s.k > 10",
        None,
    ),
    "not_over_in_subquery": (
        "SELECT count(*) AS n FROM orders WHERE NOT (o_totalprice > 400000 OR o_custkey IN "
        "(SELECT c_custkey FROM customer WHERE c_mktsegment = 'BUILDING'))",
        None,
    ),
    # DuckDB's hash() is its own; md5 of the same text is the common ground.
    "hashes_and_digests": (
        "SELECT sum(hash(o_orderkey, o_comment) % 1000) AS h, sum(xxhash64(o_custkey) % 1000) AS x, "
        "count(DISTINCT substring(md5(o_comment), 1, 2)) AS m FROM orders",
        "SELECT sum(hash(o_orderkey, o_comment) % 1000) AS h, sum(hash(o_custkey) % 1000) AS x, "
        "count(DISTINCT substring(md5(o_comment), 1, 2)) AS m FROM orders",
    ),
    "array_sets": (
        "SELECT sum(size(array_union(array(l_partkey % 7, l_suppkey % 7, l_linenumber), "
        "array(l_linenumber, 3)))) AS u, sum(size(array_distinct(array(l_partkey % 5, l_suppkey % 5, "
        "l_linenumber % 5)))) AS d FROM lineitem",
        "SELECT sum(len(list_distinct(list_concat([l_partkey % 7, l_suppkey % 7, l_linenumber], "
        "[l_linenumber, 3])))) AS u, sum(len(list_distinct([l_partkey % 5, l_suppkey % 5, "
        "l_linenumber % 5]))) AS d FROM lineitem",
    ),
    # DuckDB has no soundex or substring_index: an equality and split_part stand in.
    "string_edits": (
        "SELECT count(*) AS n FROM customer WHERE levenshtein(c_name, 'Customer#000012345') < 3 "
        "OR soundex(c_mktsegment) = 'B200' OR substring_index(c_address, ' ', 1) = 'IVhzIApeRb'",
        "SELECT count(*) AS n FROM customer WHERE levenshtein(c_name, 'Customer#000012345') < 3 "
        "OR c_mktsegment = 'BUILDING' OR split_part(c_address, ' ', 1) = 'IVhzIApeRb'",
    ),
    # percentile_approx's answer is one of the values (Spark's GK summary); DuckDB's
    # approx_quantile is a t-digest, so its answers differ slightly.
    "percentile_approx": (
        "SELECT l_returnflag, percentile_approx(l_extendedprice, 0.5) AS p50, "
        "percentile_approx(l_quantity, array(0.1, 0.9), 100) AS p FROM lineitem GROUP BY l_returnflag",
        "SELECT l_returnflag, approx_quantile(l_extendedprice, 0.5) AS p50, "
        "approx_quantile(l_quantity, [0.1, 0.9]) AS p FROM lineitem GROUP BY l_returnflag",
    ),
    "listagg_and_mode": (
        "SELECT o_orderpriority, length(listagg(o_orderstatus, ',') WITHIN GROUP (ORDER BY o_orderkey)) AS l, "
        "mode(o_custkey % 100) AS m FROM orders GROUP BY o_orderpriority",
        "SELECT o_orderpriority, length(string_agg(o_orderstatus, ',' ORDER BY o_orderkey)) AS l, "
        "mode(o_custkey % 100) AS m FROM orders GROUP BY o_orderpriority",
    ),
    "time_windows": (
        "SELECT window.start AS s, count(*) AS n, sum(o_totalprice) AS t FROM orders "
        "GROUP BY window(CAST(o_orderdate AS TIMESTAMP), '30 days', '10 days')",
        "SELECT w AS s, count(*) AS n, sum(o_totalprice) AS t FROM (SELECT o_totalprice, "
        "unnest(generate_series(time_bucket(INTERVAL 10 DAY, CAST(o_orderdate AS TIMESTAMP), TIMESTAMP '1970-01-01') "
        "- INTERVAL 20 DAY, time_bucket(INTERVAL 10 DAY, CAST(o_orderdate AS TIMESTAMP), TIMESTAMP '1970-01-01'), "
        "INTERVAL 10 DAY)) AS w FROM orders) GROUP BY w",
    ),
    "maps_and_sequences": (
        "SELECT sum(size(map_concat(map_from_arrays(sequence(1, l_linenumber), sequence(1, l_linenumber)), "
        "map(100, l_quantity)))) AS n, sum(size(array_sort(array(l_partkey, l_suppkey, l_linenumber), "
        "(a, b) -> CASE WHEN a < b THEN 1 WHEN a > b THEN -1 ELSE 0 END))) AS s FROM lineitem",
        "SELECT sum(cardinality(map_concat(map_from_entries(list_transform(range(1, l_linenumber + 1), "
        "lambda x: {'k': x, 'v': x})), MAP {100::BIGINT: CAST(l_quantity AS BIGINT)}))) AS n, "
        "sum(len(list_sort([l_partkey, l_suppkey, "
        "l_linenumber], 'DESC'))) AS s FROM lineitem",
    ),
    "json_text": (
        "SELECT sum(json_array_length(concat('[', l_orderkey, ', \"', l_shipmode, '\", [', l_linenumber, "
        "', 2.5e1]]'))) AS a, sum(size(json_object_keys(concat('{\"k\": ', l_partkey, ', \"mode\": \"', "
        'l_shipmode, \'", "q": {"x": \', l_quantity, \'}}\')))) AS b FROM lineitem',
        "SELECT sum(json_array_length(concat('[', l_orderkey, ', \"', l_shipmode, '\", [', l_linenumber, "
        "', 2.5e1]]'))) AS a, sum(len(json_keys(concat('{\"k\": ', l_partkey, ', \"mode\": \"', "
        'l_shipmode, \'", "q": {"x": \', l_quantity, \'}}\')))) AS b FROM lineitem',
    ),
    # JSON values both ways and a path: to_json / from_json / get_json_object (DuckDB's
    # to_json / json_extract / json_extract_string).
    "json_convert": (
        "SELECT sum(from_json(to_json(named_struct('k', l_orderkey, 'q', l_quantity, 'm', l_shipmode)), "
        "'k BIGINT, q DECIMAL(15,2), m STRING').k) AS a, sum(length(get_json_object(concat('{\"a\": {\"b\": [', "
        "l_linenumber, ', \"', l_shipmode, '\"]}}'), '$.a.b[1]'))) AS b FROM lineitem",
        "SELECT sum(CAST(json_extract(to_json({'k': l_orderkey, 'q': l_quantity, 'm': l_shipmode}), '$.k') AS BIGINT)) AS a, "
        "sum(length(json_extract_string(concat('{\"a\": {\"b\": [', l_linenumber, ', \"', l_shipmode, '\"]}}'), "
        "'$.a.b[1]'))) AS b FROM lineitem",
    ),
    # A CSV record both ways: to_csv / from_csv (DuckDB: the record split by hand).
    "csv_convert": (
        "SELECT sum(from_csv(to_csv(named_struct('k', l_orderkey, 'm', l_shipmode, 'd', l_shipdate)), "
        "'k BIGINT, m STRING, d DATE').k) AS a FROM lineitem",
        "SELECT sum(CAST(split_part(concat(l_orderkey, ',', l_shipmode, ',', l_shipdate), ',', 1) AS BIGINT)) AS a "
        "FROM lineitem",
    ),
    # A cumulative counter per part turned into deltas (DuckDB: the same with lag, which agrees
    # here: lineitem has no NULLs and no negative values).
    "counter_diff": (
        "SELECT sum(d), count(d) FROM (SELECT counter_diff(l_quantity) OVER "
        "(PARTITION BY l_partkey ORDER BY l_orderkey, l_linenumber) AS d FROM lineitem)",
        "SELECT sum(d), count(d) FROM (SELECT CASE WHEN l_quantity >= p THEN l_quantity - p END AS d FROM "
        "(SELECT l_quantity, lag(l_quantity) OVER (PARTITION BY l_partkey ORDER BY l_orderkey, l_linenumber) AS p "
        "FROM lineitem))",
    ),
    # Every comment cut into sentences of words (DuckDB has no sentence breaking: its words
    # split at spaces).
    "sentences": (
        "SELECT sum(size(flatten(sentences(l_comment)))) AS words FROM lineitem",
        "SELECT sum(len(string_split(trim(l_comment), ' '))) AS words FROM lineitem",
    ),
}


def rows(table) -> list[tuple]:
    cols = [c.to_pylist() for c in table.columns]
    out = []
    for r in zip(*cols):
        out.append(tuple(f"{float(v):.9g}" if isinstance(v, (int, float)) else str(v) for v in r))
    return sorted(out)


TABLES = ["orders", "lineitem", "customer", "part"]


def run_engine(engine: str, dirs: dict[str, str], reps: int) -> dict[str, tuple[float, list[tuple]]]:
    tables = TABLES
    data = {t: Path(dirs[t]) for t in tables}
    if engine == "ferrospark":
        import ferrospark as fs

        s = fs.Session()
        for t in tables:
            s.read.parquet(str(data[t])).createOrReplaceTempView(t)

        def run(q: str):
            return s.sql(q).toArrow()
    elif engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        for t in tables:
            con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{data[t]}/*.parquet')")

        def run(q: str):
            return con.execute(q).to_arrow_table()
    else:
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        for t in tables:
            spark.read.parquet(str(data[t])).createOrReplaceTempView(t)

        def run(q: str):
            return spark.sql(q).toArrow()

    out = {}
    for name, (spark_sql, duck_sql) in QUERIES.items():
        q = duck_sql if engine == "duckdb" and duck_sql else spark_sql
        result = run(q)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            result = run(q)
            times.append(time.perf_counter() - t0)
        out[name] = (statistics.median(times), rows(result))
        print(f"  {engine:<11} {name:<26} {out[name][0]:8.3f} s", file=sys.stderr, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--engines", default="ferrospark,duckdb,pyspark")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated query names (default: all)")
    args = ap.parse_args()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - set(QUERIES)
        if unknown:
            ap.error(f"unknown queries: {sorted(unknown)}")
        for name in list(QUERIES):
            if name not in wanted:
                del QUERIES[name]
    dirs = ensure_tpch(args.scale, ROOT / "data" / f"tpch-sf{args.scale:g}", tables=TABLES)
    engines = args.engines.split(",")
    results = {e: run_engine(e, dirs, args.reps) for e in engines}
    head = f"{'query':<26}" + "".join(f"{e:>12}" for e in engines)
    if "ferrospark" in engines:
        head += "".join(f"{'fs/' + e:>14}" for e in engines if e != "ferrospark")
    print(head)
    for name in QUERIES:
        line = f"{name:<26}" + "".join(f"{results[e][name][0]:>11.3f}s" for e in engines)
        if "ferrospark" in engines:
            mine = results["ferrospark"][name][0]
            line += "".join(f"{mine / results[e][name][0]:>13.2f}x" for e in engines if e != "ferrospark")
        if "pyspark" in engines and "ferrospark" in engines:
            same = results["ferrospark"][name][1] == results["pyspark"][name][1]
            line += "   same as Spark" if same else "   DIFFERS from Spark"
        print(line)
    totals = {e: sum(r[0] for r in results[e].values()) for e in engines}
    print(f"{'total':<26}" + "".join(f"{totals[e]:>11.3f}s" for e in engines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
