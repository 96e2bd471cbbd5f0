"""fs.read_parquet / fs.scan_parquet without filters (or with simple ones): the oracle is
pyarrow.parquet.read_table on the same file, which defines the expected Arrow types."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from helpers import (
    arrow_rows,
    assert_same_rows,
    assert_tables_equal,
    check_metrics_consistent,
    schema_diff,
)

NAN = float("nan")
INF = float("inf")
UTC = dt.timezone.utc


def every_type_table(n: int = 1000, seed: int = 1) -> pa.Table:
    rng = random.Random(seed)

    def col(gen, typ, p_null=0.1, specials=()):
        out = []
        for i in range(n):
            if rng.random() < p_null:
                out.append(None)
            elif specials and i % 13 == 0:
                out.append(specials[(i // 13) % len(specials)])
            else:
                out.append(gen())
        return pa.array(out, typ)

    def ints(bits, signed=True):
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
        return lambda: rng.randint(lo, hi)

    def dec(precision, scale):
        return lambda: Decimal(rng.randint(-(10**precision) + 1, 10**precision - 1)).scaleb(-scale)

    t0 = dt.datetime(2024, 3, 10, 1, 59, 59)
    strings = ["", "a", "日本語", "😀 emoji", "héllo wörld", "x" * 100, "tab\tnew\nline", "nul\x00byte"]

    def ts():
        return t0 + dt.timedelta(
            seconds=rng.randint(-(10**9), 10**9), microseconds=rng.randint(0, 999) * 1000
        )

    def nested_struct():
        return {
            "a": rng.choice([None, rng.randint(-5, 5)]),
            "b": rng.choice([None, "", "q", "日本"]),
            "c": rng.choice([None, [], [rng.randint(0, 9) for _ in range(rng.randint(1, 3))]]),
        }

    ts_cols = {}
    for unit in ("ms", "us", "ns"):
        for tz in (None, "UTC", "America/New_York"):
            name = f"ts_{unit}" + ("" if tz is None else ("_utc" if tz == "UTC" else "_ny"))
            vals = []
            for _ in range(n):
                if rng.random() < 0.1:
                    vals.append(None)
                    continue
                v = ts()
                if tz is not None:
                    v = v.replace(tzinfo=UTC)
                vals.append(v)
            arr = pa.array(vals, pa.timestamp("us", tz=tz if tz is None else "UTC"))
            if unit == "ns":  # add sub-microsecond digits that must survive
                arr = pc.add(
                    arr.cast(pa.timestamp("ns", tz=arr.type.tz)).cast(pa.int64()),
                    pa.array([i % 1000 for i in range(n)], pa.int64()),
                ).cast(pa.timestamp("ns", tz=arr.type.tz))
            ts_cols[name] = (
                arr.cast(pa.timestamp(unit, tz=tz)) if unit != "ns" else arr.cast(pa.timestamp("ns", tz=tz))
            )

    cols = {
        "id": pa.array(range(n), pa.int64()),
        "i8": col(ints(8), pa.int8(), specials=(-128, 127, 0)),
        "i16": col(ints(16), pa.int16(), specials=(-32768, 32767)),
        "i32": col(ints(32), pa.int32(), specials=(-(2**31), 2**31 - 1)),
        "i64": col(ints(64), pa.int64(), specials=(-(2**63), 2**63 - 1)),
        "u8": col(ints(8, False), pa.uint8(), specials=(0, 255)),
        "u16": col(ints(16, False), pa.uint16(), specials=(65535,)),
        "u32": col(ints(32, False), pa.uint32(), specials=(2**32 - 1, 2**31)),
        "u64": col(ints(64, False), pa.uint64(), specials=(2**64 - 1, 2**63)),
        "f32": col(lambda: rng.uniform(-1e6, 1e6), pa.float32(), specials=(NAN, -0.0, 0.0, INF, -INF, 1e-45)),
        "f64": col(
            lambda: rng.uniform(-1e300, 1e300), pa.float64(), specials=(NAN, -0.0, 0.0, INF, -INF, 5e-324)
        ),
        "dec_5_2": col(
            dec(5, 2), pa.decimal128(5, 2), specials=(Decimal("999.99"), Decimal("-999.99"), Decimal("0.00"))
        ),
        "dec_18_4": col(dec(18, 4), pa.decimal128(18, 4)),
        "dec_38_10": col(
            dec(38, 10),
            pa.decimal128(38, 10),
            specials=(
                Decimal("9999999999999999999999999999.9999999999"),
                Decimal("-9999999999999999999999999999.9999999999"),
            ),
        ),
        "dec_38_0": col(dec(38, 0), pa.decimal128(38, 0)),
        "s": col(lambda: rng.choice(strings), pa.string()),
        "ls": col(lambda: rng.choice(strings), pa.large_string()),
        "dict_s": col(lambda: rng.choice(["red", "green", "blue", ""]), pa.string()).dictionary_encode(),
        "bin": col(lambda: rng.choice([b"", b"\x00", b"\xff" * 7, bytes(range(256))]), pa.binary()),
        "lbin": col(lambda: rng.choice([b"", b"\x01\x02"]), pa.large_binary()),
        "fsb": col(lambda: bytes(rng.randint(0, 255) for _ in range(4)), pa.binary(4)),
        "b": col(lambda: rng.random() < 0.5, pa.bool_()),
        "d": col(
            lambda: dt.date(2000, 1, 1) + dt.timedelta(days=rng.randint(-200000, 200000)),
            pa.date32(),
            specials=(dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1), dt.date(1582, 10, 4)),
        ),
        **ts_cols,
        "st": col(
            nested_struct, pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.list_(pa.int64()))])
        ),
        "l_i32": col(
            lambda: [rng.choice([None, rng.randint(-9, 9)]) for _ in range(rng.randint(0, 4))],
            pa.list_(pa.int32()),
        ),
        "l_s": col(
            lambda: [rng.choice([None, "", "日本", "x"]) for _ in range(rng.randint(0, 3))],
            pa.list_(pa.string()),
        ),
        "l_st": col(
            lambda: [
                {"x": rng.randint(0, 3), "y": rng.choice([None, "a"])} for _ in range(rng.randint(0, 2))
            ],
            pa.list_(pa.struct([("x", pa.int16()), ("y", pa.string())])),
        ),
        "l_l": col(
            lambda: [
                [rng.randint(0, 9)] * rng.randint(0, 2) if rng.random() < 0.8 else None
                for _ in range(rng.randint(0, 3))
            ],
            pa.list_(pa.list_(pa.int64())),
        ),
        "m": col(
            lambda: [
                (k, rng.choice([None, rng.uniform(-1, 1), NAN]))
                for k in rng.sample(["a", "b", "日本", ""], rng.randint(0, 3))
            ],
            pa.map_(pa.string(), pa.float64()),
        ),
        "m_int": col(
            lambda: [(k, rng.choice([None, "v"])) for k in rng.sample(range(100), rng.randint(0, 3))],
            pa.map_(pa.int32(), pa.string()),
        ),
    }
    return pa.table(cols)


@pytest.fixture(scope="module")
def every_type(tmp_path_factory) -> tuple[str, pa.Table]:
    t = every_type_table()
    p = tmp_path_factory.mktemp("every") / "every.parquet"
    pq.write_table(t, p, row_group_size=300)
    assert pq.ParquetFile(p).metadata.num_row_groups == 4
    return str(p), t


def read_all(*args, **kwargs) -> pa.Table:
    reader = fs.read_parquet(*args, **kwargs)
    assert isinstance(reader, pa.RecordBatchReader), type(reader)
    return reader.read_all()


# ------------------------------------------------------------------------------------------
# round trips
# ------------------------------------------------------------------------------------------


def test_round_trip_every_type(every_type):
    path, _ = every_type
    assert_tables_equal(read_all(path), pq.read_table(path))


def test_round_trip_every_type_small_batches(every_type):
    path, _ = every_type
    got = read_all(path, batch_size=77)
    assert_tables_equal(got, pq.read_table(path))


def test_round_trip_values_are_the_written_ones(every_type):
    # pyarrow's reading is the oracle only if pyarrow itself round-trips: guard the oracle
    path, t = every_type
    assert_tables_equal(pq.read_table(path), t, context="pyarrow oracle")


def test_round_trip_every_type_page_index_v2_pages(tmp_path):
    t = every_type_table(n=700, seed=2)
    p = tmp_path / "v2.parquet"
    pq.write_table(
        t,
        p,
        row_group_size=250,
        write_page_index=True,
        data_page_version="2.0",
        max_rows_per_page=50,
        compression="zstd",
    )
    assert_tables_equal(read_all(str(p)), pq.read_table(p))


def test_round_trip_no_dictionary_plain_encoding(tmp_path):
    t = every_type_table(n=500, seed=3)
    p = tmp_path / "plain.parquet"
    pq.write_table(t, p, row_group_size=200, use_dictionary=False, compression="none")
    assert_tables_equal(read_all(str(p)), pq.read_table(p))


def test_round_trip_int96_timestamps(tmp_path):
    t = every_type_table(n=400, seed=4).select(["id", "ts_us", "ts_us_utc", "ts_ms", "ts_ns_utc", "ts_ns_ny"])
    p = tmp_path / "int96.parquet"
    pq.write_table(t, p, use_deprecated_int96_timestamps=True, row_group_size=150)
    phys = {pq.ParquetFile(p).schema.column(i).physical_type for i in range(1, 6)}
    assert phys == {"INT96"}, phys
    assert_tables_equal(read_all(str(p)), pq.read_table(p))


def test_round_trip_decimals_stored_as_integers(tmp_path):
    t = every_type_table(n=400, seed=5).select(["id", "dec_5_2", "dec_18_4", "dec_38_10"])
    p = tmp_path / "decint.parquet"
    pq.write_table(t, p, store_decimal_as_integer=True)
    sch = pq.ParquetFile(p).schema
    assert [sch.column(i).physical_type for i in range(1, 4)] == ["INT32", "INT64", "FIXED_LEN_BYTE_ARRAY"]
    assert_tables_equal(read_all(str(p)), pq.read_table(p))
    # and the filter sees the right values whatever the physical encoding
    got = read_all(str(p), filter="dec_5_2 > 0 AND dec_18_4 < 0")
    exp = pq.read_table(p).filter(
        (pc.field("dec_5_2") > pa.scalar(Decimal("0"), pa.decimal128(5, 2)))
        & (pc.field("dec_18_4") < pa.scalar(Decimal("0"), pa.decimal128(18, 4)))
    )
    assert exp.num_rows > 0
    assert_tables_equal(got, exp, ordered=False)


def test_round_trip_spark_written_file(spark, tmp_path):
    """Files from parquet-mr (Spark's writer): INT96 timestamps, INT32/INT64 decimals, v1 pages."""
    out = tmp_path / "spark_written"
    df = spark.sql(
        """
        SELECT id,
               CAST(id % 100 - 50 AS TINYINT) AS i8,
               CAST(id * 7 AS INT) AS i32,
               IF(id % 5 = 0, NULL, CAST(id AS DOUBLE) / 3) AS f64,
               IF(id % 7 = 0, CAST('NaN' AS DOUBLE), -0.0D) AS special,
               CAST(id / 8 AS DECIMAL(9, 2)) AS d9,
               CAST(id * 1000003 AS DECIMAL(18, 3)) AS d18,
               CAST(id AS DECIMAL(38, 6)) * 1000000000000 AS d38,
               IF(id % 3 = 0, NULL, concat('row-', id, '-日本')) AS s,
               DATE '2024-01-01' + CAST(id AS INT) AS d,
               TIMESTAMP '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 1.5) AS ts,
               named_struct('x', id, 'y', CAST(id AS STRING)) AS st,
               array(id, NULL, id + 1) AS arr,
               map('k', id) AS m
        FROM range(0, 3000)
        """
    )
    df.coalesce(1).write.option("parquet.block.size", 32 * 1024).parquet(str(out))
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 1
    assert_tables_equal(read_all(str(files[0])), pq.read_table(files[0]))


# ------------------------------------------------------------------------------------------
# the reader object, schema, metrics
# ------------------------------------------------------------------------------------------


def test_returns_record_batch_reader_with_schema(every_type):
    path, _ = every_type
    reader = fs.read_parquet(path)
    assert isinstance(reader, pa.RecordBatchReader)
    d = schema_diff(reader.schema, pq.read_schema(path))
    assert d is None, d
    n = 0
    for batch in reader:
        assert isinstance(batch, pa.RecordBatch)
        assert batch.schema.names == reader.schema.names
        n += batch.num_rows
    assert n == 1000


def test_scan_object(every_type):
    path, _ = every_type
    scan = fs.scan_parquet(path, columns=["id", "s"], filter="id < 10")
    assert isinstance(scan, fs.ParquetScan)
    assert scan.schema.names == ["id", "s"]
    assert isinstance(scan.explain(), str) and scan.explain().strip()
    t = scan.read_all()
    assert isinstance(t, pa.Table)
    assert t.column("id").to_pylist() == list(range(10))
    reader = fs.scan_parquet(path, columns=["id"]).to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().num_rows == 1000


def test_metrics_after_full_read(every_type):
    path, _ = every_type
    scan = fs.scan_parquet(path)
    t = scan.read_all()
    m = scan.metrics()
    check_metrics_consistent(m, t)
    assert m["files_total"] == 1 and m["files_pruned"] == 0
    assert m["row_groups_total"] == 4 and m["row_groups_read"] == 4
    assert m["rows_total"] == 1000 and m["rows_read"] == 1000 and m["rows_output"] == 1000
    assert m["batches_output"] >= 1
    assert m["bytes_read"] > 0
    assert m["pages_pruned"] == 0


def test_scan_metrics_of_reader(every_type):
    path, _ = every_type
    reader = fs.read_parquet(path, filter="id >= 900")
    plan = fs.scan_metrics(reader)
    assert plan["files_total"] == 1  # plan counts are there right after creation
    t = reader.read_all()
    m = fs.scan_metrics(reader)
    check_metrics_consistent(m, t)
    assert t.num_rows == 100 and m["rows_output"] == 100
    assert m["batches_output"] >= 1


# ------------------------------------------------------------------------------------------
# projection
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "columns",
    [
        ["s"],
        ["st", "id"],
        ["m", "l_l", "d", "ts_ns_ny", "dec_38_10"],
        ["u64", "f32", "f64", "i8"],
        ["dict_s"],
    ],
    ids=lambda c: "+".join(c),
)
def test_projection_order(every_type, columns):
    path, _ = every_type
    got = read_all(path, columns=columns)
    assert got.column_names == columns
    assert_tables_equal(got, pq.read_table(path, columns=columns).select(columns))


def test_projection_with_filter_on_other_column(every_type):
    path, t = every_type
    got = read_all(path, columns=["id"], filter="i32 > 0")
    assert got.column_names == ["id"]
    exp = t.filter(pc.greater(t["i32"], 0)).select(["id"])
    assert_tables_equal(got, exp, ordered=False)


def test_projection_empty_list(every_type):
    path, _ = every_type
    got = read_all(path, columns=[])
    assert got.num_columns == 0
    assert got.num_rows == 1000


def test_projection_duplicate_column_name_is_rejected_or_repeated(every_type):
    path, _ = every_type
    # Spark allows selecting a column twice; either that, or a clear AnalysisError, not garbage.
    try:
        got = read_all(path, columns=["id", "id"])
    except fs.AnalysisError:
        return
    assert got.column_names == ["id", "id"]
    assert got.column(0).to_pylist() == got.column(1).to_pylist() == list(range(1000))


# ------------------------------------------------------------------------------------------
# several files, directories, hive partitions
# ------------------------------------------------------------------------------------------


def _write_parts(tmp_path: Path, k: int = 3, rows: int = 200) -> tuple[list[str], pa.Table]:
    t = every_type_table(n=k * rows, seed=9).select(["id", "i32", "f64", "s", "st", "l_i32", "d"])
    paths = []
    for i in range(k):
        p = tmp_path / f"part-{i:05d}.parquet"
        pq.write_table(t.slice(i * rows, rows), p, row_group_size=64)
        paths.append(str(p))
    return paths, t


def test_list_of_files(tmp_path):
    paths, t = _write_parts(tmp_path)
    got = read_all(paths)
    assert_tables_equal(got, t, ordered=False)
    got2 = read_all([Path(p) for p in reversed(paths)], filter="i32 > 0")
    exp = t.filter(pc.greater(t["i32"], 0))
    assert_tables_equal(got2, exp, ordered=False)


def test_single_file_as_pathlike(tmp_path):
    paths, t = _write_parts(tmp_path, k=1)
    assert_tables_equal(read_all(Path(paths[0])), t)


def test_directory(tmp_path):
    paths, t = _write_parts(tmp_path)
    # files every Spark reader ignores: names starting with "_" or "."
    (tmp_path / "_SUCCESS").write_bytes(b"")
    (tmp_path / "_committed_123").write_text("{}")
    (tmp_path / ".part-00009.parquet.inprogress").write_bytes(b"\x00\x01garbage")
    got = read_all(str(tmp_path))
    assert_tables_equal(got, t, ordered=False)
    scan = fs.scan_parquet(tmp_path)
    scan.read_all()
    assert scan.metrics()["files_total"] == 3


def test_hive_partition_columns_are_typed_and_appended(hive_dir):
    root, full = hive_dir
    got = read_all(root)
    assert got.column_names == ["id", "amount", "tag", "year", "region"]
    assert pa.types.is_integer(got.schema.field("year").type), got.schema.field("year").type
    rt = got.schema.field("region").type
    assert pa.types.is_string(rt) or pa.types.is_large_string(rt), rt
    assert_same_rows(arrow_rows(full), arrow_rows(got), "hive read")


@pytest.mark.parametrize(
    "flt, expected_pruned",
    [
        ("year = 2023", 3),
        ("region = 'eu'", 4),
        ("year = 2022 AND region IN ('us', 'ap')", 4),
        ("region = 'eu' AND amount > 5", 4),
        ("year + 1 = 2024", 3),
        ("year > 2030", 6),
        ("year = 2023 OR amount > 15", 0),
        ("amount > 15", 0),
    ],
)
def test_hive_partition_pruning(hive_dir, flt, expected_pruned):
    root, full = hive_dir
    scan = fs.scan_parquet(root, filter=flt)
    got = scan.read_all()
    m = scan.metrics()
    check_metrics_consistent(m, got)
    assert m["files_total"] == 6
    assert m["files_pruned"] == expected_pruned, m
    # expected rows, computed with pyarrow on the logical table
    expr = {
        "year = 2023": pc.field("year") == 2023,
        "region = 'eu'": pc.field("region") == "eu",
        "year = 2022 AND region IN ('us', 'ap')": (pc.field("year") == 2022)
        & pc.field("region").isin(["us", "ap"]),
        "region = 'eu' AND amount > 5": (pc.field("region") == "eu") & (pc.field("amount") > 5),
        "year + 1 = 2024": pc.field("year") == 2023,
        "year > 2030": pc.field("year") > 2030,
        "year = 2023 OR amount > 15": (pc.field("year") == 2023) | (pc.field("amount") > 15),
        "amount > 15": pc.field("amount") > 15,
    }[flt]
    exp = full.filter(expr)
    assert_same_rows(arrow_rows(exp), arrow_rows(got.select(full.column_names)), flt)


def test_hive_projection_of_partition_columns(hive_dir):
    root, full = hive_dir
    got = read_all(root, columns=["region", "id"], filter="year = 2022")
    assert got.column_names == ["region", "id"]
    exp = full.filter(pc.field("year") == 2022).select(["region", "id"])
    assert_same_rows(arrow_rows(exp), arrow_rows(got), "projection")


def test_hive_partition_value_null(tmp_path):
    # Spark writes NULL partition values as __HIVE_DEFAULT_PARTITION__ and reads them back as NULL
    for region in ("eu", "__HIVE_DEFAULT_PARTITION__"):
        d = tmp_path / f"region={region}"
        d.mkdir()
        pq.write_table(
            pa.table({"id": pa.array([1, 2] if region == "eu" else [3], pa.int64())}), d / "p.parquet"
        )
    got = read_all(str(tmp_path))
    assert sorted(zip(got["id"].to_pylist(), got["region"].to_pylist())) == [(1, "eu"), (2, "eu"), (3, None)]
    got = read_all(str(tmp_path), filter="region IS NULL")
    assert got["id"].to_pylist() == [3]


# ------------------------------------------------------------------------------------------
# empty inputs and outputs
# ------------------------------------------------------------------------------------------


def test_empty_file(tmp_path):
    t = every_type_table(n=10).slice(0, 0)
    p = tmp_path / "empty.parquet"
    pq.write_table(t, p)
    assert pq.ParquetFile(p).metadata.num_rows == 0
    got = read_all(str(p))
    assert got.num_rows == 0
    assert_tables_equal(got, pq.read_table(p))
    got = read_all(str(p), filter="i32 > 0 AND s LIKE 'a%'")
    assert got.num_rows == 0 and schema_diff(got.schema, pq.read_schema(p)) is None


def test_empty_file_among_others(tmp_path):
    paths, t = _write_parts(tmp_path, k=2)
    p = tmp_path / "part-empty.parquet"
    pq.write_table(t.slice(0, 0), p)
    assert_tables_equal(read_all(str(tmp_path)), t, ordered=False)


def test_zero_byte_file_in_directory_is_skipped(tmp_path):
    # Spark skips zero-length files when it plans a directory scan (a lone zero-byte file is an
    # error: see test_parquet_errors)
    paths, t = _write_parts(tmp_path, k=2)
    (tmp_path / "part-zero.parquet").write_bytes(b"")
    assert_tables_equal(read_all(str(tmp_path)), t, ordered=False)


def test_empty_filter_result(every_type):
    path, _ = every_type
    reader = fs.read_parquet(path, filter="id < 0")
    got = reader.read_all()
    assert got.num_rows == 0
    d = schema_diff(got.schema, pq.read_schema(path))
    assert d is None, d


# ------------------------------------------------------------------------------------------
# batch size, sessions, threads
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ten_k(tmp_path_factory) -> tuple[str, pa.Table]:
    t = every_type_table(n=10_000, seed=12).select(["id", "i32", "s", "l_i32", "st"])
    p = tmp_path_factory.mktemp("tenk") / "tenk.parquet"
    pq.write_table(t, p, row_group_size=3000)
    return str(p), t


@pytest.mark.parametrize("batch_size", [1, 1000, 4096, 100_000])
def test_batch_size_honoured(ten_k, batch_size):
    path, t = ten_k
    reader = fs.read_parquet(path, batch_size=batch_size)
    sizes = [b.num_rows for b in reader]
    assert sum(sizes) == 10_000
    assert max(sizes) <= batch_size, f"batch of {max(sizes)} rows with batch_size={batch_size}"
    if batch_size <= 1000:
        # a reader must not dribble out tiny batches when it could fill them
        assert len(sizes) <= 2 * (10_000 // batch_size) + 8, len(sizes)


def test_batch_size_with_filter(ten_k):
    path, t = ten_k
    sizes = [b.num_rows for b in fs.read_parquet(path, batch_size=500, filter="id % 2 = 0")]
    assert sum(sizes) == 5000 and max(sizes) <= 500


def test_batch_size_from_session_conf(ten_k):
    path, t = ten_k
    s = fs.Session(conf={"ferrospark.batch.size": "700"})
    sizes = [b.num_rows for b in s.read_parquet(path)]
    assert sum(sizes) == 10_000 and max(sizes) <= 700
    scan = s.scan_parquet(path)
    assert_tables_equal(scan.read_all(), pq.read_table(path))


@pytest.mark.parametrize("threads", ["1", "2"])
def test_scan_threads_same_answer(ten_k, threads):
    path, t = ten_k
    s = fs.Session(conf={"ferrospark.scan.threads": threads})
    assert_tables_equal(s.read_parquet(path).read_all(), pq.read_table(path))
    got = s.read_parquet(path, filter="i32 < 0 OR s = ''").read_all()
    exp = t.filter(pc.or_kleene(pc.less(t["i32"], 0), pc.equal(t["s"], "")))
    assert_tables_equal(got, exp, ordered=False)


def test_session_time_zone_applies_to_timestamp_literals(tmp_path):
    p = tmp_path / "tz.parquet"
    t = pa.table(
        {
            "id": [0, 1, 2],
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, h, tzinfo=UTC) for h in (11, 12, 13)], pa.timestamp("us", tz="UTC")
            ),
        }
    )
    pq.write_table(t, p)
    # 07:00 in New York (EST, UTC-5) is 12:00 UTC
    ny = fs.Session(conf={"spark.sql.session.timeZone": "America/New_York"})
    assert ny.read_parquet(str(p), filter="ts = TIMESTAMP '2024-01-01 07:00:00'").read_all()[
        "id"
    ].to_pylist() == [1]
    utc = fs.Session(conf={"spark.sql.session.timeZone": "UTC"})
    assert utc.read_parquet(str(p), filter="ts = TIMESTAMP '2024-01-01 07:00:00'").read_all().num_rows == 0
    assert utc.read_parquet(str(p), filter="ts = TIMESTAMP '2024-01-01 12:00:00'").read_all()[
        "id"
    ].to_pylist() == [1]


def test_reader_is_lazy_and_streams(ten_k, tmp_path):
    # Creating the reader must not read the whole data; pulling one batch gives rows.
    path, _ = ten_k
    reader = fs.read_parquet(path, batch_size=100)
    first = reader.read_next_batch()
    assert 0 < first.num_rows <= 100
    assert first.column("id").to_pylist() == list(range(first.num_rows))


def test_version():
    assert isinstance(fs.__version__, str) and fs.__version__
