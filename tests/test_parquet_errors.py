"""Bad input is an answer, not a crash: every failure is a FerroError subclass naming the
file or column at fault; flipped bytes never crash or hang the process."""

from __future__ import annotations

import os
import random
import threading
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs


def drain(*args, **kwargs) -> pa.Table:
    """Errors may come when the reader is created or while it is pulled: accept both."""
    return fs.read_parquet(*args, **kwargs).read_all()


# ------------------------------------------------------------------------------------------
# missing paths
# ------------------------------------------------------------------------------------------


def test_error_hierarchy():
    assert issubclass(fs.PathNotFoundError, fs.FerroError)
    assert issubclass(fs.PathNotFoundError, FileNotFoundError)
    for cls in (
        fs.AnalysisError,
        fs.SchemaError,
        fs.ParquetError,
        fs.ConfigError,
        fs.SparkArithmeticError,
        fs.UnsupportedError,
        fs.MemoryLimitError,
    ):
        assert issubclass(cls, fs.FerroError), cls
    assert issubclass(fs.ConfigError, ValueError)
    assert issubclass(fs.SparkArithmeticError, ArithmeticError)
    assert issubclass(fs.FerroError, Exception)


@pytest.mark.parametrize("name", ["nope.parquet", "no_such_dir/", "deep/er/x.parquet"])
def test_missing_path(tmp_path, name):
    missing = str(tmp_path / name)
    with pytest.raises(fs.PathNotFoundError) as ei:
        drain(missing)
    assert isinstance(ei.value, FileNotFoundError) and isinstance(ei.value, fs.FerroError)
    assert missing.rstrip("/") in str(ei.value) or os.path.basename(missing.rstrip("/")) in str(ei.value), (
        str(ei.value)
    )


def test_missing_path_caught_as_builtin(tmp_path):
    with pytest.raises(FileNotFoundError):
        drain(str(tmp_path / "absent.parquet"))


def test_missing_file_in_list(tmp_path, small_file):
    path, _ = small_file
    missing = str(tmp_path / "gone.parquet")
    with pytest.raises(fs.PathNotFoundError) as ei:
        drain([path, missing])
    assert "gone.parquet" in str(ei.value)


def test_missing_path_session_and_scan(tmp_path):
    missing = str(tmp_path / "absent.parquet")
    with pytest.raises(fs.PathNotFoundError):
        fs.Session(conf={}).read_parquet(missing).read_all()
    with pytest.raises(fs.PathNotFoundError):
        fs.scan_parquet(missing).read_all()


# ------------------------------------------------------------------------------------------
# corrupt, truncated, not Parquet
# ------------------------------------------------------------------------------------------


def _corruptions(data: bytes) -> dict[str, bytes]:
    n = len(data)
    footer_len = int.from_bytes(data[-8:-4], "little")
    return {
        "text": b"hello, this is not a parquet file\n" * 20,
        "zero_bytes": b"",
        "magic_only": b"PAR1",
        "two_magics": b"PAR1PAR1",
        "csv": b"a,b\n1,2\n3,4\n",
        "truncated_half": data[: n // 2],
        "truncated_minus_1": data[:-1],
        "truncated_minus_8": data[:-8],
        "truncated_12": data[:12],
        "footer_cut": data[: n - 8 - footer_len // 2] + data[-8:],
        "bad_tail_magic": data[:-4] + b"PAR2",
        "bad_tail_magic_zeros": data[:-4] + b"\x00\x00\x00\x00",
        "footer_len_huge": data[:-8] + (2**31 - 1).to_bytes(4, "little") + b"PAR1",
        "footer_len_past_start": data[:-8] + (n - 4).to_bytes(4, "little") + b"PAR1",
        "footer_len_zero": data[:-8] + (0).to_bytes(4, "little") + b"PAR1",
        "footer_garbage": data[: n - 8 - footer_len] + b"\xff" * footer_len + data[-8:],
        "footer_zeros": data[: n - 8 - footer_len] + b"\x00" * footer_len + data[-8:],
    }


CORRUPTIONS = list(_corruptions(b"PAR1" + b"\x00" * 100 + (20).to_bytes(4, "little") + b"PAR1"))


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_corrupt_file_raises_parquet_error_naming_file(tmp_path, small_file, kind):
    path, _ = small_file
    data = open(path, "rb").read()
    bad = tmp_path / f"corrupt_{kind}.parquet"
    bad.write_bytes(_corruptions(data)[kind])
    with pytest.raises(fs.ParquetError) as ei:
        drain(str(bad))
    assert bad.name in str(ei.value), f"message does not name the file: {ei.value}"


def test_corrupt_file_among_good_ones(tmp_path, small_file):
    path, t = small_file
    d = tmp_path / "dir"
    d.mkdir()
    for i in range(3):
        pq.write_table(t, d / f"part-{i}.parquet")
    (d / "part-9.parquet").write_bytes(open(path, "rb").read()[:-10])
    with pytest.raises(fs.ParquetError) as ei:
        drain(str(d))
    assert "part-9.parquet" in str(ei.value)


def test_error_from_column_filter_too(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"garbage" * 10)
    with pytest.raises(fs.ParquetError):
        drain(str(bad), filter=fs.col("a") > 1)
    with pytest.raises(fs.ParquetError):
        fs.scan_parquet(str(bad)).read_all()


# ------------------------------------------------------------------------------------------
# schemas that disagree
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "other",
    [
        pa.table({"id": pa.array([3], pa.int64()), "amount": pa.array(["12.5"], pa.string())}),
        pa.table({"id": pa.array([3], pa.int64()), "amount": pa.array([{"x": 1}])}),
        pa.table({"id": pa.array([3], pa.int64()), "amount": pa.array([[1.0]], pa.list_(pa.float64()))}),
    ],
    ids=["string", "struct", "list"],
)
def test_schema_mismatch_across_files(tmp_path, other):
    good = pa.table({"id": pa.array([1, 2], pa.int64()), "amount": pa.array([1.5, 2.5], pa.float64())})
    pq.write_table(good, tmp_path / "part-0.parquet")
    pq.write_table(other, tmp_path / "part-1.parquet")
    for source in (str(tmp_path), [str(tmp_path / "part-0.parquet"), str(tmp_path / "part-1.parquet")]):
        with pytest.raises(fs.SchemaError) as ei:
            drain(source)
        msg = str(ei.value)
        assert "amount" in msg or "part-1.parquet" in msg, msg


# ------------------------------------------------------------------------------------------
# unknown columns, wrong types, bad SQL, bad options
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def typed_file(tmp_path_factory) -> str:
    t = pa.table(
        {
            "i32": pa.array([1, 2, None], pa.int32()),
            "b": pa.array([True, None, False]),
            "s": pa.array(["a", "b", None]),
            "d": pa.array([0, 1, None], pa.date32()),
            "st": pa.array([{"x": 1}, None, {"x": 2}]),
            "l": pa.array([[1], [], None], pa.list_(pa.int64())),
            "m": pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int64())),
        }
    )
    p = tmp_path_factory.mktemp("typed") / "typed.parquet"
    pq.write_table(t, p)
    return str(p)


@pytest.mark.parametrize("columns", [["nope_col"], ["i32", "nope_col"], ["st.nope_col"]])
def test_unknown_column_in_projection(typed_file, columns):
    with pytest.raises(fs.AnalysisError) as ei:
        drain(typed_file, columns=columns)
    assert "nope_col" in str(ei.value)


@pytest.mark.parametrize(
    "flt",
    ["nope_col > 1", "i32 > 1 AND nope_col IS NULL", "st.nope_col = 1", "nope_col.x = 1"],
)
def test_unknown_column_in_filter_string(typed_file, flt):
    with pytest.raises(fs.AnalysisError) as ei:
        drain(typed_file, filter=flt)
    assert "nope_col" in str(ei.value)


def test_unknown_column_in_filter_column(typed_file):
    with pytest.raises(fs.AnalysisError) as ei:
        drain(typed_file, filter=(fs.col("i32") > 0) & (fs.col("nope_col") == 1))
    assert "nope_col" in str(ei.value)


def test_unknown_column_in_hive_dir(hive_dir):
    root, _ = hive_dir
    with pytest.raises(fs.AnalysisError) as ei:
        drain(root, filter="month = 3")
    assert "month" in str(ei.value)


TYPE_MISMATCH_FILTERS = [
    "i32 AND b",
    "i32 AND true",
    "NOT i32",
    "d > 5",
    "st > 1",
    "l > 1",
    "m = 1",
    "b OR s LIKE 'a%' OR l",
    "i32 + 1",
    "CAST(i32 AS STRING)",
]


@pytest.mark.parametrize("flt", TYPE_MISMATCH_FILTERS)
def test_type_mismatch_in_filter(typed_file, flt):
    with pytest.raises(fs.AnalysisError):
        drain(typed_file, filter=flt)


def test_type_mismatches_are_rejected_by_spark(spark, typed_file):
    """Spark's analyzer rejects every filter of TYPE_MISMATCH_FILTERS."""
    from pyspark.errors import AnalysisException

    df = spark.read.parquet(typed_file)
    accepted = []
    for flt in TYPE_MISMATCH_FILTERS:
        try:
            df.filter(flt).collect()
            accepted.append(flt)
        except AnalysisException as e:
            assert (
                "DATATYPE_MISMATCH" in str(e)
                or "FILTER_NOT_BOOLEAN" in str(e)
                or "data type mismatch" in str(e)
            ), (flt, str(e)[:300])
    assert not accepted, accepted


def test_bad_sql_in_filter(typed_file):
    for flt in ("i32 >", "i32 = = 1", "(i32 > 1", "i32 LIKE"):
        with pytest.raises(fs.AnalysisError):
            drain(typed_file, filter=flt)


@pytest.mark.parametrize("batch_size", [0, -1])
def test_bad_batch_size(typed_file, batch_size):
    with pytest.raises(ValueError):  # fs.ConfigError is a ValueError
        drain(typed_file, batch_size=batch_size)


@pytest.mark.parametrize(
    "conf",
    [
        {"ferrospark.batch.size": "abc"},
        {"ferrospark.batch.size": "-5"},
        {"spark.sql.parquet.filterPushdown": "maybe"},
        {"ferrospark.scan.threads": "zero"},
        {"spark.sql.session.timeZone": "Not/AZone"},
    ],
    ids=lambda c: next(iter(c)) + "=" + next(iter(c.values())),
)
def test_bad_session_conf(typed_file, conf):
    with pytest.raises(fs.ConfigError) as ei:
        fs.Session(conf=conf).read_parquet(typed_file).read_all()
    assert next(iter(conf)) in str(ei.value), str(ei.value)


# ------------------------------------------------------------------------------------------
# bit flips: succeed or raise FerroError; never crash, never hang
# ------------------------------------------------------------------------------------------

FUZZ_FILTERS = [None, "a > 10 AND s = 'x'", "a = 7", "f > 1 OR l IS NULL"]
FUZZ_SEEDS = 200
FUZZ_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def fuzz_base(tmp_path_factory) -> bytes:
    t = pa.table(
        {
            "a": pa.array([None if i % 9 == 0 else i for i in range(60)], pa.int64()),
            "f": pa.array([float("nan") if i % 11 == 0 else i / 4 for i in range(60)], pa.float64()),
            "s": pa.array([["x", "yy", "", "日本"][i % 4] for i in range(60)], pa.string()),
            "l": pa.array([[i, None] if i % 5 else None for i in range(60)], pa.list_(pa.int32())),
            "st": pa.array([{"p": i, "q": str(i)} for i in range(60)]),
            "dec": pa.array([Decimal(i * 7).scaleb(-2) for i in range(60)], pa.decimal128(12, 2)),
        }
    )
    p = tmp_path_factory.mktemp("fuzz") / "base.parquet"
    pq.write_table(
        t,
        p,
        row_group_size=20,
        write_page_index=True,
        use_dictionary=["s"],
        bloom_filter_options={"a": {"ndv": 64, "fpp": 0.05}},
    )
    data = p.read_bytes()
    assert len(data) < 20_000
    # the unflipped file reads fine
    assert_ok = fs.read_parquet(str(p)).read_all()
    assert assert_ok.num_rows == 60
    return data


def _read_with_timeout(path: str, flt, timeout: float):
    box: dict = {}

    def work():
        try:
            t = fs.read_parquet(path, filter=flt).read_all()
            t.validate(full=True)  # whatever comes out must be structurally valid Arrow
            box["table"] = t
        except BaseException as e:  # noqa: BLE001 - classified by the caller
            box["error"] = e

    th = threading.Thread(target=work, daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        return "hang", None
    return ("error", box["error"]) if "error" in box else ("ok", box["table"])


@pytest.mark.parametrize("seed", range(FUZZ_SEEDS))
def test_bit_flip_never_crashes(tmp_path, fuzz_base, seed):
    rng = random.Random(1000 + seed)
    data = bytearray(fuzz_base)
    n = len(data)
    # 60 % of the flips anywhere, 40 % inside the footer / page index region at the end
    pos = rng.randrange(n) if seed % 5 < 3 else rng.randrange(max(0, n - 600), n)
    data[pos] ^= rng.randint(1, 255)
    path = tmp_path / f"flip_{seed}_{pos}.parquet"
    path.write_bytes(bytes(data))
    flt = FUZZ_FILTERS[seed % len(FUZZ_FILTERS)]
    outcome, value = _read_with_timeout(str(path), flt, FUZZ_TIMEOUT_S)
    assert outcome != "hang", f"read of {path.name} (byte {pos} of {n} flipped, filter {flt!r}) hung"
    if outcome == "error":
        assert isinstance(value, fs.FerroError), (
            f"byte {pos} of {n} flipped, filter {flt!r}: raised {type(value).__module__}.{type(value).__name__}: "
            f"{value}"
        )
