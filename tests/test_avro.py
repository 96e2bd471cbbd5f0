"""The Avro reader against ``fastavro`` (the reference Python reader) on files ``fastavro``
writes: every codec, Spark's types for Avro's (unions with NULL, enums, fixed, records,
arrays, maps, decimals, dates, timestamps in UTC and local), NULLs, NaN, -0.0, unicode, a
projection, filters, schema evolution by a reader schema, the DataFrame source, ``fss.read_avro``
on Spark, and bytes that are not Avro. Spark's own Avro reader is not part of pip's PySpark
(``spark-avro`` is a separate package this machine cannot fetch), so fastavro is the oracle."""

from __future__ import annotations

import datetime as dt
import random
import subprocess
import sys
import textwrap
from decimal import Decimal

import pytest

import ferrospark as fs
from helpers import arrow_rows, assert_same_rows, norm_datetime, norm_float, spark_rows

fastavro = pytest.importorskip("fastavro")

SCHEMA = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"]},
        {"name": "x", "type": ["null", "double"]},
        {"name": "flag", "type": ["null", "boolean"]},
        {"name": "n", "type": "int"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "tag", "type": {"type": "fixed", "name": "Tag", "size": 2}},
        {"name": "items", "type": {"type": "array", "items": ["null", "string"]}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {
            "name": "loc",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Loc",
                    "fields": [
                        {"name": "lat", "type": "double"},
                        {"name": "city", "type": ["null", "string"]},
                    ],
                },
            ],
        },
    ],
}
UTC = dt.timezone.utc


def _records(n: int, seed: int = 3) -> list[dict]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        out.append(
            {
                "id": i,
                "name": rnd.choice([None, "a", "日本", "é", "", 'say "hi"']),
                "x": rnd.choice([None, 1.5, -0.0, float("nan"), float("inf"), 2.25, -3.0]),
                "flag": rnd.choice([None, True, False]),
                "n": rnd.randrange(-5, 10),
                "price": Decimal(rnd.randrange(-100000, 100000)) / 100,
                "day": rnd.choice([None, dt.date(2024, 1, 31), dt.date(1969, 12, 31)]),
                "ts": dt.datetime(2024, 3, 1, 1, 2, 3, rnd.randrange(10**6), tzinfo=UTC),
                "ts_ms": dt.datetime(1999, 12, 31, 23, 59, 59, 1000 * rnd.randrange(1000), tzinfo=UTC),
                "local": dt.datetime(2020, 6, 1, 12, 0, rnd.randrange(60)),
                "color": rnd.choice(["RED", "GREEN", "BLUE"]),
                "tag": bytes([rnd.randrange(256), rnd.randrange(256)]),
                "items": rnd.choice([[], ["p", None], ["q"]]),
                "attrs": rnd.choice([{}, {"k": 1}, {"a": -2, "b": 3}]),
                "loc": rnd.choice([None, {"lat": 1.5, "city": "Oslo"}, {"lat": -0.0, "city": None}]),
            }
        )
    return out


def _norm(v):
    """A fastavro value as ferrospark's rows show it."""
    if v is None:
        return None
    if isinstance(v, float):
        return norm_float(v)
    if isinstance(v, dt.datetime):
        return norm_datetime(v)
    if isinstance(v, list):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return tuple(_norm(x) for x in v.values())
    return v


def _expected(records: list[dict], columns: list[str]) -> list[tuple]:
    rows = []
    for r in records:
        row = []
        for c in columns:
            v = r[c]
            if c == "attrs":
                row.append(tuple(sorted(v.items(), key=repr)))
            else:
                row.append(_norm(v))
        rows.append(tuple(row))
    return rows


def _write(path, records, codec="null", schema=SCHEMA):
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("avro")
    recs = _records(500)
    _write(d / "rows.avro", recs, "deflate")
    return d, recs


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"])
def test_every_codec_and_type_matches_fastavro(tmp_path, codec):
    recs = _records(300, seed=len(codec))
    path = tmp_path / f"t.{codec}.avro"
    try:
        _write(path, recs, codec)
    except ValueError as e:  # fastavro without this codec's library
        pytest.skip(str(e))
    got = fs.read_avro(str(path)).read_all()
    cols = [f["name"] for f in SCHEMA["fields"]]
    assert got.column_names == cols
    types = {f.name: str(f.type) for f in got.schema}
    assert types["color"] == "string" and types["tag"] == "binary"
    assert types["ts"] == "timestamp[us, tz=UTC]" and types["local"] == "timestamp[us]"
    assert types["price"] == "decimal128(9, 2)" and types["day"] == "date32[day]"
    # fastavro reads back what it wrote, so each side is compared with the same records.
    with open(path, "rb") as f:
        theirs = list(fastavro.reader(f))
    assert_same_rows(_expected(theirs, cols), arrow_rows(got), codec)


def test_columns_and_filters(data):
    d, recs = data
    path = str(d / "rows.avro")
    for cond, keep in [
        ("id < 40", lambda r: r["id"] < 40),
        ("n = 3 AND name IS NOT NULL", lambda r: r["n"] == 3 and r["name"] is not None),
        ("price > 100 OR flag", lambda r: r["price"] > 100 or r["flag"] is True),
        ("x IS NULL", lambda r: r["x"] is None),
        (
            "color = 'RED' AND day = DATE '2024-01-31'",
            lambda r: r["color"] == "RED" and r["day"] == dt.date(2024, 1, 31),
        ),
    ]:
        got = fs.read_avro(path, columns=["id", "name", "price"], filter=cond).read_all()
        expected = _expected([r for r in recs if keep(r)], ["id", "name", "price"])
        assert_same_rows(expected, arrow_rows(got), cond)
    scan = fs.scan_avro(path, columns=["name"], filter="id < 40")
    assert scan.read_all().num_rows == 40
    m = scan.metrics()
    assert m["rows_read"] == 500 and m["output_rows"] == 40, m


def test_a_reader_schema_evolves_records(data):
    d, recs = data
    reader = {
        "type": "record",
        "name": "Row",
        "fields": [
            {"name": "n", "type": "long"},  # int promoted to long
            {"name": "id", "type": "long"},
            {"name": "extra", "type": "string", "default": "none"},  # added, with a default
            {"name": "x", "type": ["null", "double"]},
        ],
    }
    import json

    got = fs.read_avro(str(d / "rows.avro"), avroSchema=json.dumps(reader)).read_all()
    assert got.column_names == ["n", "id", "extra", "x"]
    with open(d / "rows.avro", "rb") as f:
        theirs = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(reader)))
    assert_same_rows(_expected(theirs, ["n", "id", "extra", "x"]), arrow_rows(got))


def test_dataframe_source_and_partitions(data, tmp_path):
    from ferrospark import functions as F

    d, recs = data
    root = tmp_path / "parts"
    for region, part in [("eu", recs[:200]), ("us", recs[200:])]:
        (root / f"region={region}").mkdir(parents=True)
        _write(root / f"region={region}" / "p.avro", part, "snappy" if region == "eu" else "null")
    s = fs.Session()
    df = s.read.format("avro").load(str(root))
    assert df.columns[-1] == "region"
    got = (
        df.filter("region = 'us' AND n > 5")
        .groupBy("color")
        .agg(F.count("*").alias("c"), F.sum("price").alias("p"))
    )
    expected: dict[str, list] = {}
    for r in recs[200:]:
        if r["n"] > 5:
            e = expected.setdefault(r["color"], [0, Decimal(0)])
            e[0] += 1
            e[1] += r["price"]
    assert_same_rows([(k, c, p) for k, (c, p) in expected.items()], arrow_rows(got.toArrow()))
    q = s.read.avro(str(d / "rows.avro")).filter("id < 10").select("name")
    q.toArrow()
    plan = q.executedPlan()
    assert "FileScan avro" in plan and "PushedFilters: [id#" in plan, plan


@pytest.mark.spark
def test_fss_read_avro_on_spark(spark, data):
    """``fss.read_avro``: the scan runs natively inside a Spark task (Spark itself cannot read
    Avro without spark-avro) and continues into the next fss function."""
    from ferrospark import spark as fss

    d, recs = data
    path = str(d / "rows.avro")
    ours = fss.read_avro(spark, path, columns=["id", "name", "price", "color"], filter="id % 4 = 1")
    assert ours.columns == ["id", "name", "price", "color"]
    expected = _expected([r for r in recs if r["id"] % 4 == 1], ["id", "name", "price", "color"])
    assert_same_rows(expected, spark_rows(ours))
    agg = fss.aggregate(ours, "color", [fs.count(), fs.sum("price")])
    sums: dict[str, list] = {}
    for r in recs:
        if r["id"] % 4 == 1:
            e = sums.setdefault(r["color"], [0, Decimal(0)])
            e[0] += 1
            e[1] += r["price"]
    assert_same_rows([(k, c, p) for k, (c, p) in sums.items()], spark_rows(agg))


def test_bad_input_is_an_error_not_a_crash(tmp_path, data):
    d, _ = data
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(fs.AnalysisError, match="UNABLE_TO_INFER_SCHEMA"):
        fs.read_avro(str(empty))
    script = textwrap.dedent(
        f"""
        import os, random, ferrospark as fs
        d = {str(tmp_path)!r}
        good = open({str(d / "rows.avro")!r}, "rb").read()
        rnd = random.Random(9)
        cases = {{
            "random": bytes(rnd.randrange(256) for _ in range(50000)),
            "magic": b"Obj\\x01" + bytes(rnd.randrange(256) for _ in range(5000)),
            "truncated": good[: len(good) // 2],
            "flipped": bytes(b ^ 0xFF if i % 97 == 0 and i > 600 else b for i, b in enumerate(good)),
            "empty": b"",
        }}
        for name, raw in cases.items():
            p = os.path.join(d, name + ".avro")
            open(p, "wb").write(raw)
            try:
                n = fs.read_avro(p).read_all().num_rows
                print("rows", name, n)
            except fs.FerroError as e:
                print("error", name, type(e).__name__, str(e)[:80])
        print("survived")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "survived" in out.stdout
    assert "error truncated" in out.stdout, out.stdout


UNION_SCHEMA = {
    "type": "record",
    "name": "u",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "u", "type": ["null", "int", "string"]},
        {"name": "il", "type": ["int", "long"]},
        {"name": "fd", "type": ["null", "float", "double"]},
        {
            "name": "v",
            "type": [
                "string",
                {"type": "record", "name": "p", "fields": [{"name": "x", "type": "int"}]},
                "boolean",
            ],
        },
        {"name": "xs", "type": {"type": "array", "items": ["null", "long", "string"]}},
    ],
}


def _spark_union(value, branches: list[type]):
    """A union value as Spark reads it: a struct of ``member<i>``, the value's branch set."""
    if value is None:
        return None
    # bool before int: a Python bool is an int too.
    kind = next(
        i for i, t in enumerate(branches) if type(value) is t or (t is dict and isinstance(value, dict))
    )
    return {f"member{i}": (value if i == kind else None) for i in range(len(branches))}


def test_unions_of_several_types_read_as_spark_reads_them(tmp_path):
    """``[int, long]`` is a BIGINT, ``[float, double]`` a DOUBLE, any other union a struct of
    ``member0``, ``member1``, ... (NULL when the value is null), also inside arrays; pushed
    filters and pruned columns read them the same."""
    rnd = random.Random(5)
    recs = []
    for i in range(400):
        recs.append(
            {
                "id": i,
                "u": rnd.choice([None, rnd.randint(-5, 5), f"s{i}", "日本"]),
                "il": rnd.choice([rnd.randint(-(2**31), 2**31 - 1), 2**40 + i, -(2**50)]),
                "fd": rnd.choice([None, 1.5, -0.0, 2.25e300, float("inf")]),
                "v": rnd.choice([f"t{i}", {"x": i}, True, False]),
                "xs": [rnd.choice([None, i, f"x{i}"]) for _ in range(rnd.randint(0, 3))],
            }
        )
    path = tmp_path / "unions.avro"
    _write(path, recs, "deflate", UNION_SCHEMA)
    got = fs.read_avro(str(path)).read_all()
    types = {f.name: str(f.type) for f in got.schema}
    assert types["il"] == "int64" and types["fd"] == "double"
    assert types["u"] == "struct<member0: int32, member1: string>"
    assert types["v"] == "struct<member0: string, member1: struct<x: int32>, member2: bool>"
    assert types["xs"] == "list<item: struct<member0: int64, member1: string>>"
    with open(path, "rb") as f:
        theirs = list(fastavro.reader(f))

    def spark(r):
        return {
            "id": r["id"],
            "u": _spark_union(r["u"], [int, str]),
            "il": r["il"],
            "fd": r["fd"],
            "v": _spark_union(r["v"], [str, dict, bool]),
            "xs": [_spark_union(x, [int, str]) for x in r["xs"]],
        }

    want = [spark(r) for r in theirs]
    assert got.to_pylist() == want
    picked = fs.read_avro(str(path), columns=["id", "v"], filter="il > 1000000000000").read_all()
    assert picked.to_pylist() == [{"id": w["id"], "v": w["v"]} for w in want if w["il"] > 1_000_000_000_000]
