"""Shared fixtures for the ferrospark test-suite.

* ``spark``: a session-scoped local PySpark session, created only when a test asks for it
  (tests that do not use it never start a JVM). Tests using it are marked ``spark``
  automatically; run ``pytest -m "not spark"`` to skip them.
* Parquet files written with pyarrow (several row groups, sorted data + page index,
  dictionary-encoded columns, bloom filters) and, for Spark-written bloom filters, with Spark.

Comparison helpers live in ``helpers.py`` next to this file.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import random
import sys
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# Spark's collect() turns TimestampType values into naive datetimes in the *Python process'*
# local time zone. Pin everything (driver, JVM, Python workers) to UTC so both sides of every
# comparison speak the same wall clock.
os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()
# Spark's Python workers (mapInArrow in ferrospark.spark) must use this interpreter, where
# ferrospark is installed.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:  # make ``import helpers`` work under every import mode
    sys.path.insert(0, str(TESTS_DIR))

from helpers import FILTER_LAYOUTS, SPARK_TEST_JVM_OPTIONS  # noqa: E402  (after the sys.path set-up)

# --------------------------------------------------------------------------------------------
# markers
# --------------------------------------------------------------------------------------------


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "spark: test starts a local PySpark session (slow; deselect with -m 'not spark')"
    )


# The longest test files (minutes each on a 2-core machine, longest first as measured in one
# run under pytest-xdist) run first: `make test` hands whole files to two pytest-xdist workers
# in collection order (--no-loadscope-reorder), and a long file started last would leave one
# worker idle while the other finishes it. Only the order changes; every file still runs.
LONGEST_FILES = (
    "test_streaming_spark.py",
    "test_join_spark.py",
    "test_parquet_filter_spark.py",
    "test_spark_local_cluster.py",
    "test_aggregate.py",
    "test_functions_spark.py",
    "test_catalog_spark.py",
    "test_conformance.py",
    "test_join_fss.py",
    "test_query_spark.py",
    "test_stream_sources.py",
    "test_spark_stages.py",
    "test_aggregate_spark.py",
    "test_catalog.py",
    "test_window_spark.py",
    "test_expr.py",
)


def pytest_collection_modifyitems(config, items):
    # Any test that uses the `spark` fixture (directly or through another fixture) is a Spark test.
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.spark)
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay whole


# --------------------------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """A local[2] SparkSession in UTC, created lazily on first use.

    Its warehouse is a temporary directory, not ``./spark-warehouse``: under pytest-xdist
    each worker process has a session of its own, and they must not share table files.
    """
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("ferrospark-tests")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        # Whole-stage code generation compiles Java for every distinct query; over the tests'
        # small inputs that costs more than it saves (about 9% of Spark's CPU). Answers are
        # the same either way (Spark's own suites run both).
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Spark is the *semantic* oracle here, so its own Parquet pushdown is switched off:
        # parquet-mr prunes row groups by min/max statistics that (as the Parquet spec asks)
        # exclude NaN, so with pushdown on, Spark 4.x itself drops NaN rows for `x > 2` or
        # `x = CAST('NaN' AS DOUBLE)` on pyarrow-written files, contradicting its own NaN
        # semantics (NaN = NaN, NaN greater than everything). Row-level filtering is exact.
        .config("spark.sql.parquet.filterPushdown", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.executorEnv.TZ", "UTC")
        .config("spark.driver.extraJavaOptions", f"-Duser.timezone=UTC {SPARK_TEST_JVM_OPTIONS}")
        .config("spark.executor.extraJavaOptions", f"-Duser.timezone=UTC {SPARK_TEST_JVM_OPTIONS}")
        .getOrCreate()
    )
    # "OFF", not "ERROR": Spark 4 logs every AnalysisException at ERROR level with a full stack
    # trace, and several tests provoke them on purpose.
    session.sparkContext.setLogLevel("OFF")
    # PySpark 4 also logs every captured AnalysisException / runtime error (with the whole JVM
    # stack) through its own Python loggers; silence those too.
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
    yield session
    session.stop()


# --------------------------------------------------------------------------------------------
# TPC-H
# --------------------------------------------------------------------------------------------


def _run_temp_root(tmp_path_factory) -> Path:
    """The temporary directory of the whole run: under pytest-xdist, the parent of every
    worker's own (``.../pytest-N/popen-gw0``), so the workers can share files there."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def tpch_sf001(tmp_path_factory) -> dict[str, str]:
    """{table: directory} of the eight TPC-H tables at scale 0.01 (one file each), generated
    once per run and read by every test that needs them (no test writes there). xdist workers
    take a lock, so one generates and the others find the finished tables."""
    import fcntl

    from ferrospark.tpch import TABLES, ensure_tpch

    root = _run_temp_root(tmp_path_factory)
    with open(root / "tpch-sf0.01.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return ensure_tpch(0.01, root / "tpch-sf0.01", tables=list(TABLES), parts=1, progress=False)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------
# data generators (deterministic)
# --------------------------------------------------------------------------------------------

NAN = float("nan")
INF = float("inf")
UTC = dt.timezone.utc

STRING_POOL = [
    "apple",
    "banana",
    "cherry",
    "",
    "Apple",
    "apricot",
    "héllo",
    "ß",
    "日本",
    "😀",
    "a%b",
    "a_b",
    "x\\y",
    "it's",
    "zeta",
    "kiwi",
    "Äpfel",
    "ab",
    "b",
]


def filter_table(n: int = 400, seed: int = 7) -> pa.Table:
    """The table the Spark filter comparisons run on.

    Nulls in every column, NaN / -0.0 / +-inf in the floats, duplicates, unicode and LIKE
    metacharacters in strings, decimals of small and large precision, dates and timestamps
    (with and without zone), a struct, a list, a map, a dictionary-encoded column.
    """
    rng = random.Random(seed)

    def maybe(v, p_null=0.08):
        return None if rng.random() < p_null else v

    special_f = [NAN, -0.0, 0.0, INF, -INF, 1.5, -1.5]
    ids = list(range(n))
    i32 = [maybe(rng.randint(-5, 20)) for _ in ids]
    i8 = [maybe(rng.randint(-128, 127)) for _ in ids]
    i16 = [maybe(rng.choice([-32768, 32767, 0, rng.randint(-1000, 1000)])) for _ in ids]
    i64 = [maybe(rng.choice([2**40, -(2**40), 4_000_000_001, rng.randint(-(10**6), 10**6)])) for _ in ids]
    u32 = [maybe(rng.choice([0, 1, 2**32 - 1, 3_000_000_000, rng.randint(0, 10**6)])) for _ in ids]
    f64 = [
        maybe(rng.choice(special_f) if rng.random() < 0.35 else round(rng.uniform(-10, 10), 2)) for _ in ids
    ]
    f32 = [
        maybe(rng.choice(special_f) if rng.random() < 0.3 else float(rng.randint(-40, 40)) / 4) for _ in ids
    ]
    s = [maybe(rng.choice(STRING_POOL)) for _ in ids]
    cat = [maybe(rng.choice(["a", "b", "c", "d"])) for _ in ids]
    b = [maybe(rng.random() < 0.5, 0.15) for _ in ids]
    dec = [
        maybe(Decimal(rng.choice([150, 1234, -100, 0, -1, rng.randint(-99999, 99999)])).scaleb(-2))
        for _ in ids
    ]
    dec38 = [
        maybe(
            Decimal(
                rng.choice(
                    [
                        12345678901234567890123,
                        -(10**27) + 1,
                        0,
                        -10_000_000_000,
                        rng.randint(-(10**20), 10**20),
                    ]
                )
            ).scaleb(-3)
        )
        for _ in ids
    ]
    base_d = dt.date(2024, 1, 1)
    d = [
        maybe(
            rng.choice([dt.date(2024, 2, 29), dt.date(1999, 12, 31), dt.date(1970, 1, 1)])
            if rng.random() < 0.2
            else base_d + dt.timedelta(days=rng.randint(-40, 200))
        )
        for _ in ids
    ]
    base_ts = dt.datetime(2024, 1, 1, 12, 0, 0)
    ts_naive = [
        maybe(
            base_ts
            if rng.random() < 0.1
            else base_ts
            + dt.timedelta(hours=rng.randint(-2000, 6000), microseconds=rng.randint(0, 999) * 1000)
        )
        for _ in ids
    ]
    ts = [None if v is None else v.replace(tzinfo=UTC) for v in ts_naive]
    ts_ntz = [maybe(v) for v in ts_naive]
    st = [
        maybe({"a": maybe(rng.randint(-3, 9)), "b": maybe(rng.choice(["x", "y", "z", ""]))}, 0.1) for _ in ids
    ]
    lst = [maybe([maybe(rng.randint(0, 9)) for _ in range(rng.randint(0, 3))]) for _ in ids]
    mp = [
        maybe([(k, maybe(rng.randint(0, 99))) for k in rng.sample(["k1", "k2", "k3"], rng.randint(0, 3))])
        for _ in ids
    ]
    bin_ = [maybe(rng.choice([b"", b"\x00", b"\xff\x00", b"abc", bytes([rng.randint(0, 255)])])) for _ in ids]

    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "i32": pa.array(i32, pa.int32()),
            "i8": pa.array(i8, pa.int8()),
            "i16": pa.array(i16, pa.int16()),
            "i64": pa.array(i64, pa.int64()),
            "u32": pa.array(u32, pa.uint32()),
            "f64": pa.array(f64, pa.float64()),
            "f32": pa.array(f32, pa.float32()),
            "s": pa.array(s, pa.string()),
            "cat": pa.array(cat, pa.string()).dictionary_encode(),
            "b": pa.array(b, pa.bool_()),
            "dec": pa.array(dec, pa.decimal128(9, 2)),
            "dec38": pa.array(dec38, pa.decimal128(38, 3)),
            "d": pa.array(d, pa.date32()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "ts_ntz": pa.array(ts_ntz, pa.timestamp("us")),
            "st": pa.array(st, pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "l": pa.array(lst, pa.list_(pa.int32())),
            "m": pa.array(mp, pa.map_(pa.string(), pa.int32())),
            "bin": pa.array(bin_, pa.binary()),
        }
    )


def _sort_nulls_first(table: pa.Table, key: str) -> pa.Table:
    return table.sort_by([(key, "ascending", "at_start")])


@pytest.fixture(scope="session")
def filter_data() -> pa.Table:
    return filter_table()


@pytest.fixture(scope="session")
def filter_files(tmp_path_factory, filter_data) -> dict[str, str]:
    """layout name -> path of a Parquet file holding `filter_table()` in that layout."""
    out = tmp_path_factory.mktemp("filter_files")
    paths = {}
    for name, spec in FILTER_LAYOUTS.items():
        t = filter_data if spec["sort"] is None else _sort_nulls_first(filter_data, spec["sort"])
        p = out / f"{name}.parquet"
        pq.write_table(t, p, **spec["kwargs"])
        paths[name] = str(p)
    return paths


@pytest.fixture(scope="session")
def sorted_paged_file(tmp_path_factory) -> tuple[str, pa.Table]:
    """20 000 rows sorted by `key`, 20 row groups of 1000 rows, page index, ~100-row pages."""
    n = 20_000
    rng = random.Random(11)
    t = pa.table(
        {
            "key": pa.array(range(n), pa.int64()),
            "grp": pa.array([i // 1000 for i in range(n)], pa.int32()),
            "v": pa.array([rng.uniform(-1000, 1000) for _ in range(n)], pa.float64()),
            "name": pa.array([f"name-{i:06d}" for i in range(n)], pa.string()),
            "payload": pa.array([rng.choice(STRING_POOL) * rng.randint(1, 4) for _ in range(n)]),
        }
    )
    p = tmp_path_factory.mktemp("sorted") / "sorted.parquet"
    pq.write_table(
        t,
        p,
        row_group_size=1000,
        write_page_index=True,
        data_page_size=1024,
        max_rows_per_page=100,
        write_batch_size=100,
    )
    return str(p), t


@pytest.fixture(scope="session")
def bloom_file_pyarrow(tmp_path_factory) -> tuple[str, pa.Table]:
    """Bloom filters on `k` (int64) and `ks` (string), written by pyarrow, no dictionaries.

    Every row group's min/max spans (almost) the whole range, so only the bloom filter can
    exclude a value that is inside the range but absent (odd numbers are never present).
    """
    rng = random.Random(5)
    n = 8000
    vals = [2 * i for i in range(n)]
    rng.shuffle(vals)
    # pin the extremes into every row group so statistics never exclude an interior probe
    rows_per_rg = 2000
    for rg in range(n // rows_per_rg):
        vals[rg * rows_per_rg] = 0
        vals[rg * rows_per_rg + 1] = 2 * (n - 1)
    t = pa.table(
        {
            "k": pa.array(vals, pa.int64()),
            "ks": pa.array([f"key{v:06d}" for v in vals], pa.string()),
            "payload": pa.array(range(n), pa.int64()),
        }
    )
    p = tmp_path_factory.mktemp("bloom_pa") / "bloom.parquet"
    pq.write_table(
        t,
        p,
        row_group_size=rows_per_rg,
        use_dictionary=False,
        bloom_filter_options={"k": {"ndv": n, "fpp": 0.01}, "ks": {"ndv": n, "fpp": 0.01}},
    )
    md = pq.ParquetFile(p).metadata
    for rg in range(md.num_row_groups):  # the fixture itself must be what it claims
        for c in range(2):
            assert md.row_group(rg).column(c).bloom_filter_offset is not None
    return str(p), t


@pytest.fixture(scope="session")
def bloom_dir_spark(spark, tmp_path_factory) -> str:
    """A directory of 4 Spark-written files (one row group each) with bloom filters on k and ks.

    k holds the even numbers 0..79998 spread over the four files; dictionary encoding is off so
    that dictionary pruning cannot decide for the bloom filter.
    """
    out = tmp_path_factory.mktemp("bloom_spark") / "data"
    df = (
        spark.range(0, 40000)
        .selectExpr(
            "id * 2 AS k", "concat('key', lpad(CAST(id * 2 AS STRING), 6, '0')) AS ks", "id % 10 AS g"
        )
        .repartition(4)
    )
    (
        df.write.mode("overwrite")
        .option("parquet.bloom.filter.enabled#k", "true")
        .option("parquet.bloom.filter.expected.ndv#k", "20000")
        .option("parquet.bloom.filter.enabled#ks", "true")
        .option("parquet.bloom.filter.expected.ndv#ks", "20000")
        .option("parquet.enable.dictionary", "false")
        .parquet(str(out))
    )
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 4
    for f in files:
        md = pq.ParquetFile(f).metadata
        names = [md.schema.column(i).name for i in range(md.num_columns)]
        for rg in range(md.num_row_groups):
            for name in ("k", "ks"):
                col = md.row_group(rg).column(names.index(name))
                assert col.bloom_filter_offset is not None, f"Spark wrote no bloom filter for {name} in {f}"
    return str(out)


@pytest.fixture(scope="session")
def dictionary_file(tmp_path_factory) -> tuple[str, pa.Table]:
    """A low-cardinality string column, fully dictionary-encoded, 3 row groups.

    Row groups 0 and 2 hold {apple, cherry, kiwi}; row group 1 holds {apple, banana, kiwi}.
    min/max of every row group is apple..kiwi, so `c = 'banana'` can only be decided (for row
    groups 0 and 2) by looking into the dictionary.
    """
    rng = random.Random(3)
    rg_values = [["apple", "cherry", "kiwi"], ["apple", "banana", "kiwi"], ["cherry", "kiwi", "apple"]]
    rows = 3000
    c, x = [], []
    for vals in rg_values:
        block = [vals[i % 3] for i in range(rows)]
        rng.shuffle(block)
        c.extend(block)
        x.extend(rng.randint(0, 10**6) for _ in range(rows))
    t = pa.table({"c": pa.array(c, pa.string()), "x": pa.array(x, pa.int64())})
    p = tmp_path_factory.mktemp("dict") / "dict.parquet"
    pq.write_table(t, p, row_group_size=rows, use_dictionary=["c"])
    md = pq.ParquetFile(p).metadata
    for rg in range(md.num_row_groups):
        col = md.row_group(rg).column(0)
        assert col.has_dictionary_page
        st = col.statistics
        assert (st.min, st.max) == ("apple", "kiwi")
    return str(p), t


@pytest.fixture
def hive_dir(tmp_path) -> tuple[str, pa.Table]:
    """year=<int>/region=<str>/part-0.parquet, 2 x 3 partitions, 50 rows per file.

    Returns the directory and the full logical table (file columns + year + region).
    """
    root = tmp_path / "hive"
    pieces = []
    rid = 0
    for year in (2022, 2023):
        for region in ("eu", "us", "ap"):
            d = root / f"year={year}" / f"region={region}"
            d.mkdir(parents=True)
            n = 50
            t = pa.table(
                {
                    "id": pa.array(range(rid, rid + n), pa.int64()),
                    "amount": pa.array([float((rid + i) % 17) for i in range(n)], pa.float64()),
                    "tag": pa.array([None if i % 7 == 0 else f"t{i % 5}" for i in range(n)], pa.string()),
                }
            )
            pq.write_table(t, d / "part-0.parquet", row_group_size=20)
            pieces.append(
                t.append_column("year", pa.array([year] * n, pa.int32())).append_column(
                    "region", pa.array([region] * n, pa.string())
                )
            )
            rid += n
    # side files every Spark reader ignores (names starting with "_" or "."); not a ".crc":
    # Hadoop's local file system would check part-0.parquet against it
    (root / "_SUCCESS").write_bytes(b"")
    (root / "year=2022" / "region=eu" / ".part-9.parquet.inprogress").write_bytes(b"not parquet")
    return str(root), pa.concat_tables(pieces)


@pytest.fixture
def small_file(tmp_path) -> tuple[str, pa.Table]:
    """A small valid file (3 row groups, page index, dictionary + plain columns)."""
    t = pa.table(
        {
            "a": pa.array([None if i % 9 == 0 else i for i in range(60)], pa.int64()),
            "f": pa.array([NAN if i % 11 == 0 else i / 4 for i in range(60)], pa.float64()),
            "s": pa.array([["x", "yy", "", "日本"][i % 4] for i in range(60)], pa.string()),
            "l": pa.array([[i, None] if i % 5 else None for i in range(60)], pa.list_(pa.int32())),
        }
    )
    p = tmp_path / "small.parquet"
    pq.write_table(t, p, row_group_size=20, write_page_index=True, use_dictionary=["s"])
    return str(p), t
