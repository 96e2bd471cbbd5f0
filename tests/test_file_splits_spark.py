"""CSV, JSON and Avro files split across Spark tasks as Spark splits them: a file larger than a
split is read by several tasks, each reading the lines (or Avro blocks) that start in its byte
range, and the tasks together give the answers of PySpark's reader (of one in-process read
for Avro, which pip's PySpark cannot read)."""

from __future__ import annotations

import random
import re
from decimal import Decimal

import pytest

import ferrospark as fs
from helpers import arrow_rows, assert_same_rows, spark_rows

pytestmark = pytest.mark.spark

ROWS = 150_000
WORDS = ["a", "b,c", "日本", "é", "", "say hi"]


def _row(i: int, rnd: random.Random) -> tuple:
    name = None if i % 11 == 0 else rnd.choice(WORDS)
    x = rnd.choice([None, 1.5, -0.0, float("nan"), 2.25, -3.0])
    price = Decimal(rnd.randrange(-100000, 100000)) / 100
    return i, name, x, price


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("splits")
    rnd = random.Random(5)
    rows = [_row(i, rnd) for i in range(ROWS)]
    with open(d / "rows.csv", "w", encoding="utf-8", newline="") as f:
        f.write("id,name,x,price\r\n")
        for i, name, x, price in rows:
            n = "" if name is None else f'"{name}"'
            xs = "" if x is None else ("NaN" if x != x else repr(x))
            f.write(f"{i},{n},{xs},{price}\r\n")
    with open(d / "rows.json", "w", encoding="utf-8") as f:
        for i, name, x, price in rows:
            parts = [f'"id": {i}', f'"price": {price}']
            if name is not None:
                parts.append(f'"name": "{name}"')
            if x is not None:
                parts.append('"x": "NaN"' if x != x else f'"x": {x!r}')
            rnd.shuffle(parts)
            f.write("{" + ", ".join(parts) + "}\n")
    fastavro = pytest.importorskip("fastavro")
    schema = {
        "type": "record",
        "name": "Row",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"]},
            {"name": "x", "type": ["null", "double"]},
            {
                "name": "price",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            },
        ],
    }
    with open(d / "rows.avro", "wb") as f:
        records = ({"id": i, "name": n, "x": x, "price": p} for i, n, x, p in rows)
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec="null")
    return d


SCHEMA = "id BIGINT, name STRING, x DOUBLE, price DECIMAL(9,2)"
QUERY = "SELECT name, count(*), sum(price), count(x), max(id) FROM t WHERE id % 7 <> 3 GROUP BY name"


@pytest.fixture
def small_splits(spark):
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1MB")
    try:
        yield
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")


def _split_tasks(df) -> int:
    text = df._last_spark_run.explain()
    found = [int(n) for n in re.findall(r"(\d+) tasks over file splits", text)]
    assert found, text
    return max(found)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_text_splits_match_spark(spark, files, small_splits, fmt):
    path = str(files / f"rows.{fmt}")
    options = {"header": True} if fmt == "csv" else {}
    s = fs.Session(spark=spark)
    getattr(s.read.schema(SCHEMA), fmt)(path, **options).createOrReplaceTempView("t")
    reader = spark.read.schema(SCHEMA)
    getattr(reader, fmt)(path, **options).createOrReplaceTempView("t")
    ours = s.sql(QUERY)
    got = arrow_rows(ours.toArrow())
    assert _split_tasks(ours) > 1
    assert_same_rows(spark_rows(spark.sql(QUERY)), got, fmt)


def test_avro_splits_match_one_read(spark, files, small_splits):
    path = str(files / "rows.avro")
    s = fs.Session(spark=spark)
    s.read.avro(path).createOrReplaceTempView("t")
    ours = s.sql(QUERY)
    got = arrow_rows(ours.toArrow())
    assert _split_tasks(ours) > 1
    local = fs.Session()
    local.read.avro(path).createOrReplaceTempView("t")
    assert_same_rows(arrow_rows(local.sql(QUERY).toArrow()), got, "avro")
    # and by fss: the scan's tasks run the filter where they read.
    from ferrospark import spark as fss

    ours = fss.read_avro(spark, path, filter="id % 1000 = 7", columns=["id", "name"])
    assert sorted(r[0] for r in spark_rows(ours)) == list(range(7, ROWS, 1000))
