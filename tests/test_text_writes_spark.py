"""JSON, CSV and text files written by ferrospark, checked against PySpark: the lines of the
files equal the lines Spark writes for the same rows (Spark's own formatting: NULL fields,
NaN, quoting, dates and timestamps in the session zone), Spark reads them back as the same
rows, and tables ``USING json / csv`` take ``INSERT`` and read back."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import ferrospark as fs
from ferrospark.errors import FerroError

UTC = dt.timezone.utc

ROWS = [
    (
        1,
        "plain",
        1.5,
        Decimal("12.50"),
        dt.date(2024, 2, 29),
        dt.datetime(2024, 2, 29, 12, 34, 56, 123000, tzinfo=UTC),
        True,
    ),
    (
        2,
        'a,b "q"',
        float("nan"),
        Decimal("-0.01"),
        dt.date(1969, 12, 31),
        dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
        False,
    ),
    (3, "", -0.0, None, None, None, None),
    (4, None, 1e10, Decimal("99999.99"), dt.date(2000, 1, 1), dt.datetime(2000, 1, 1, tzinfo=UTC), True),
    (
        5,
        "  Ünïcödé 日本 😀  ",
        float("inf"),
        Decimal("0.00"),
        dt.date(1600, 2, 29),
        dt.datetime(2038, 1, 19, 3, 14, 7, 999000, tzinfo=UTC),
        None,
    ),
    (
        6,
        "line\nbreak\tand\\slash",
        None,
        Decimal("1.00"),
        dt.date(2024, 1, 1),
        dt.datetime(2024, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
        False,
    ),
]
DDL = "id int, s string, x double, dec decimal(7,2), d date, ts timestamp, b boolean"
ARROW = pa.schema(
    [
        ("id", pa.int32()),
        ("s", pa.string()),
        ("x", pa.float64()),
        ("dec", pa.decimal128(7, 2)),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("b", pa.bool_()),
    ]
)


def _table() -> pa.Table:
    cols = list(zip(*ROWS))
    return pa.table([pa.array(list(c), t) for c, t in zip(cols, ARROW.types)], schema=ARROW)


def _lines(path: Path, suffix: str) -> list[str]:
    out = []
    for f in sorted(path.glob(f"part-*{suffix}")):
        out.extend(f.read_text(encoding="utf-8").splitlines())
    return sorted(out)


@pytest.fixture(scope="module")
def frames(spark):
    sdf = spark.createDataFrame(ROWS, schema=DDL).coalesce(1)
    fdf = fs.Session().createDataFrame(_table())
    return fdf, sdf


CASES = {
    "json": ("json", {}, ".json"),
    "json keep nulls": ("json", {"ignoreNullFields": "false"}, ".json"),
    "json formats": ("json", {"dateFormat": "dd/MM/yyyy", "timestampFormat": "yyyy-MM-dd HH:mm"}, ".json"),
    "csv": ("csv", {}, ".csv"),
    "csv header": ("csv", {"header": "true", "sep": ";", "nullValue": "NA"}, ".csv"),
    "csv quote all": ("csv", {"quoteAll": "true", "emptyValue": "EMPTY"}, ".csv"),
    "csv keep spaces": (
        "csv",
        {"ignoreLeadingWhiteSpace": "false", "ignoreTrailingWhiteSpace": "false"},
        ".csv",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_files_equal_sparks(frames, tmp_path, case):
    fmt, options, suffix = CASES[case]
    fdf, sdf = frames
    sdf.write.format(fmt).options(**options).save(str(tmp_path / "spark"))
    fdf.write.format(fmt).options(**options).save(str(tmp_path / "ferro"))
    want = _lines(tmp_path / "spark", suffix)
    got = _lines(tmp_path / "ferro", suffix)
    if options.get("header") == "true":
        assert got.count(want[-1]) == 1 or want == got
    assert got == want


def test_spark_reads_back_the_rows(spark, frames, tmp_path):
    fdf, sdf = frames
    fdf.write.json(str(tmp_path / "j"))
    fdf.write.csv(str(tmp_path / "c"), header=True)
    back_json = spark.read.schema(DDL).json(str(tmp_path / "j")).orderBy("id").collect()
    back_csv = (
        spark.read.schema(DDL)
        .options(header=True, multiLine=True)
        .csv(str(tmp_path / "c"))
        .orderBy("id")
        .collect()
    )
    want = sdf.orderBy("id").collect()

    def norm(rows):
        return [tuple("nan" if isinstance(v, float) and v != v else v for v in r) for r in rows]

    assert norm(back_json) == norm(want)
    # CSV trims white space and cannot tell NULL text from NULL: the rest round-trips.
    assert [r.id for r in back_csv] == [r.id for r in want]
    assert [r.dec for r in back_csv] == [r.dec for r in want]
    assert [r.ts for r in back_csv] == [r.ts for r in want]


def test_text_lines_and_nested_json(spark, tmp_path):
    session = fs.Session()
    df = session.sql(
        "SELECT id, named_struct('k', id, 'v', CAST(NULL AS STRING)) AS st, "
        "array(id, NULL) AS arr, map('a', id) AS m FROM range(3)"
    )
    df.write.json(str(tmp_path / "ferro"))
    spark.sql(
        "SELECT id, named_struct('k', id, 'v', CAST(NULL AS STRING)) AS st, "
        "array(id, NULL) AS arr, map('a', id) AS m FROM range(3)"
    ).coalesce(1).write.json(str(tmp_path / "spark"))
    assert _lines(tmp_path / "ferro", ".json") == _lines(tmp_path / "spark", ".json")

    session.sql("SELECT concat('v', id) AS v FROM range(4)").write.text(str(tmp_path / "t"))
    assert _lines(tmp_path / "t", ".txt") == ["v0", "v1", "v2", "v3"]
    with pytest.raises(FerroError, match="single column"):
        df.write.text(str(tmp_path / "t2"))
    with pytest.raises(FerroError, match="UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE"):
        df.write.csv(str(tmp_path / "c2"))
    assert not (tmp_path / "t2").exists() or not list((tmp_path / "t2").glob("part-*"))


def test_tables_using_json_and_csv_take_inserts(tmp_path):
    session = fs.Session(conf={"spark.sql.warehouse.dir": str(tmp_path / "wh")})
    session.sql("CREATE TABLE tj (c int, s string) USING json")
    session.sql("INSERT INTO tj VALUES (1, 'a'), (NULL, NULL), (3, 'x,y')")
    session.sql("CREATE TABLE tc (c int, s string) USING csv")
    session.sql("INSERT INTO tc SELECT * FROM tj")
    session.sql("CREATE TABLE tas USING json AS SELECT c + 1 AS c2 FROM tc")
    assert sorted(session.sql("SELECT * FROM tj").collect(), key=str) == sorted(
        session.sql("SELECT * FROM tc").collect(), key=str
    )
    assert sorted(r[0] for r in session.sql("SELECT c2 FROM tas WHERE c2 IS NOT NULL").collect()) == [2, 4]
    files = list((tmp_path / "wh").rglob("part-*.json"))
    assert files and all(f.read_text().startswith("{") for f in files)
    with pytest.raises(FerroError, match="compression"):
        session.sql("SELECT 1 AS a").write.option("compression", "gzip").json(str(tmp_path / "gz"))
