"""The JSON reader against PySpark's ``spark.read.json`` on the same files and options: schema
inference with Spark's type merging, missing and reordered fields, nested structs, arrays and
maps, typed schemas with malformed records in every mode, Jackson's leniency options, filters
checked while records convert (same rows with pushdown on and off, early skipping shown by the
metrics), unicode, NaN, decimals, dates and timestamps, multi-line documents, compressed files,
hive partitions, and bytes that are not JSON at all."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import ferrospark as fs
from helpers import arrow_rows, assert_same_rows, spark_rows

pytestmark = pytest.mark.spark


def _ours(path, schema=None, filter=None, conf=None, **options) -> pa.Table:
    s = fs.Session(conf=conf or {})
    return fs.read_json(str(path), schema=schema, filter=filter, session=s, **options).read_all()


def _theirs(spark, path, schema=None, filter=None, **options):
    r = spark.read.options(
        **{k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
    )
    if schema is not None:
        r = r.schema(schema)
    df = r.json(str(path))
    return df.filter(filter) if filter else df


def _check(spark, path, schema=None, filter=None, **options):
    expected = _theirs(spark, path, schema, filter, **options)
    got = _ours(path, schema, filter, **dict(options))
    assert got.column_names == expected.columns, (got.column_names, expected.columns)
    assert_same_rows(spark_rows(expected), arrow_rows(got), f"{options} {schema} {filter}")
    return got


def _rows_text(n: int, seed: int = 11) -> str:
    rnd = random.Random(seed)
    names = ["a", "b,c", 'say "hi"', "日本", "é", "", " pad ", "x\\y", None]
    lines = []
    for i in range(n):
        rec = {
            "id": i,
            "name": rnd.choice(names),
            "x": rnd.choice([1.5, -0.0, "NaN", None, 2.25, -3, "Infinity", 1e3, 7]),
            "price": rnd.choice([12.34, -0.5, None, 99999.99, 7]),
            "day": rnd.choice(["2024-01-31", "1999-12-31", None]),
            "ts": rnd.choice(
                ["2024-01-31T10:20:30", "2024-02-01 00:00:00", "2024-03-01T01:02:03.456Z", None]
            ),
            "flag": rnd.choice([True, False, None]),
            "tags": rnd.choice([["p", "q"], [], None, ["r", None]]),
            "loc": rnd.choice([{"lat": 1.5, "lon": -2}, {"lon": 3}, None]),
        }
        keys = list(rec)
        rnd.shuffle(keys)
        # Missing fields: some keys left out entirely.
        kept = [k for k in keys if k == "id" or rnd.random() > 0.1]
        line = json.dumps({k: rec[k] for k in kept}, ensure_ascii=rnd.random() < 0.5)
        if i % 97 == 5:
            line = line[: len(line) // 2]  # truncated: malformed
        lines.append(line)
    return "\n".join(lines) + "\n"


EDGE = """{"a": 1, "b": "x", "c": 1.50, "d": true, "e": {"z": 1, "y": [1, 2]}, "f": null}
{"b": "\\u00fc\\u00e9\\n", "a": 9223372036854775807, "c": 2, "g": [1, 2.5]}
{"a": 99999999999999999999, "c": "NaN", "d": "true"}
{'a': 3, b: 'single'}
{"a": 01, "c": NaN, "h": -Infinity}

[{"a": 5}, {"a": 6}]
[]
[1, 2]
42
{"a": 7} trailing
{"a": 1e3, "c": -0.0}
{"a": "12", "b": 13, "c": "1.5"}
{"a": 1 /* c */, "b": "q"}
{"a":
{"e": {"y": "str"}}
{"e": 5}
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("json")
    (d / "rows.json").write_text(_rows_text(400), encoding="utf-8")
    (d / "edge.json").write_text(EDGE, encoding="utf-8")
    (d / "nested.json").write_text(
        '[{"id": 1, "m": {"k": 1.5, "j": null}, "l": [[1], [2, 3]], "s": {"p": "x", "q": [true]}},\n'
        ' {"id": 2, "m": {"k": 2}, "l": [], "s": null},\n'
        ' {"id": 3, "m": {"k": "bad"}, "l": [[null]], "s": {"q": []}},\n'
        ' {"id": 4, "m": {"a": 1}, "l": [[1, "x"], [2]], "s": {"p": 5, "q": [true, 1]}}]\n',
        encoding="utf-8",
    )
    return d


def test_inference_strings_and_edges(spark, data):
    _check(spark, data / "edge.json")
    _check(spark, data / "edge.json", allowComments=True)
    _check(spark, data / "edge.json", allowNumericLeadingZeros=True, allowUnquotedFieldNames=True)
    _check(spark, data / "edge.json", primitivesAsString=True)
    _check(spark, data / "edge.json", allowSingleQuotes=False, allowNonNumericNumbers=False)
    _check(spark, data / "rows.json")
    _check(spark, data / "rows.json", primitivesAsString=True, dropFieldIfAllNull=True)
    _check(spark, data / "nested.json", multiLine=True)


def test_typed_schema_in_every_mode(spark, data):
    schema = (
        "a INT, b INT, c DOUBLE, d BOOLEAN, c2 DECIMAL(5,2), e STRUCT<y: ARRAY<INT>, z: BIGINT>, "
        "g ARRAY<DOUBLE>, _corrupt_record STRING"
    )
    _check(spark, data / "edge.json", schema=schema)
    _check(spark, data / "edge.json", schema="a BIGINT, c DECIMAL(5,2), b STRING")
    _check(spark, data / "edge.json", schema="a BIGINT, b STRING", mode="DROPMALFORMED")
    _check(spark, data / "edge.json", schema="c FLOAT, a SMALLINT, h DOUBLE", allowNumericLeadingZeros=True)
    nested = "id BIGINT, m MAP<STRING, DOUBLE>, l ARRAY<ARRAY<INT>>, s STRUCT<p: STRING, q: ARRAY<BOOLEAN>>"
    _check(spark, data / "nested.json", schema=nested, multiLine=True)
    _check(spark, data / "nested.json", schema=nested + ", _corrupt_record STRING", multiLine=True)
    with pytest.raises(fs.MalformedRecordError, match="FAILFAST"):
        _ours(data / "edge.json", schema="a BIGINT, b STRING", mode="FAILFAST")
    with pytest.raises(Exception, match="FAILFAST|MALFORMED"):
        _theirs(spark, data / "edge.json", schema="a BIGINT, b STRING", mode="FAILFAST").collect()


def test_typed_rows_with_dates_and_timestamps(spark, data):
    schema = (
        "id BIGINT, name STRING, x DOUBLE, price DECIMAL(7,2), day DATE, ts TIMESTAMP, flag BOOLEAN, "
        "tags ARRAY<STRING>, loc STRUCT<lat: DOUBLE, lon: INT>, _corrupt_record STRING"
    )
    _check(spark, data / "rows.json", schema=schema)
    _check(spark, data / "rows.json", schema=schema, mode="DROPMALFORMED")


def test_filters_while_converting(spark, data):
    path = data / "rows.json"
    schema = "id BIGINT, name STRING, x DOUBLE, price DECIMAL(7,2), day DATE, ts TIMESTAMP, flag BOOLEAN"
    for cond in [
        "id < 40",
        "x > 1 AND name IS NOT NULL",
        "price >= 12 OR flag",
        "day = DATE '2024-01-31' AND id % 3 = 0",
        "name LIKE '%hi%'",
        "x IS NULL",
    ]:
        _check(spark, path, schema=schema, filter=cond)
        # Without pushdown a truncated record is an all-NULL row for the filter to judge; with
        # it, fields read before the syntax error may fail the filter first (Spark's answers
        # differ too: `x IS NULL` keeps a truncated record only without pushdown).
        off = _ours(path, schema, cond, conf={"spark.sql.json.filterPushdown.enabled": "false"})
        spark.conf.set("spark.sql.json.filterPushdown.enabled", "false")
        try:
            assert_same_rows(spark_rows(_theirs(spark, path, schema, cond)), arrow_rows(off), cond)
        finally:
            spark.conf.unset("spark.sql.json.filterPushdown.enabled")
    reader = fs.read_json(str(path), schema=schema, filter="id < 40", session=fs.Session())
    assert reader.read_all().num_rows == _theirs(spark, path, schema, "id < 40").count()
    m = fs.scan_metrics(reader)
    # `id` converts first: the rows past 40 (and truncated ones without an id) convert
    # none of their six other fields.
    skipped = m["rows_skipped_early"]
    assert m["rows_read"] == 400 and 355 <= skipped <= 365, m
    assert m["fields_not_converted"] == skipped * 6, m


def test_multi_line_compressed_and_partitioned(spark, data, tmp_path):
    text = (data / "rows.json").read_bytes()
    root = tmp_path / "parts"
    for region in ["eu", "us"]:
        part = root / f"region={region}"
        part.mkdir(parents=True)
        with gzip.open(part / "rows.json.gz", "wb") as f:
            f.write(text)
    got = _check(spark, root, filter="region = 'us' AND id < 10")
    assert got.num_rows == 9  # the record with id 5 is truncated
    doc = tmp_path / "doc.json"
    doc.write_text('{\n  "a": 1,\n  "b": [1,\n 2]\n}\n', encoding="utf-8")
    _check(spark, doc, multiLine=True)
    # Read line by line, every record is malformed: only the corrupt-record column is left,
    # which Spark refuses to query.
    with pytest.raises(fs.AnalysisError, match="QUERY_ONLY_CORRUPT_RECORD_COLUMN"):
        _ours(doc)
    with pytest.raises(Exception, match="QUERY_ONLY_CORRUPT_RECORD_COLUMN"):
        _theirs(spark, doc).collect()


def test_bad_options_are_config_errors(data):
    with pytest.raises(fs.ConfigError, match="mode"):
        _ours(data / "rows.json", mode="LENIENT")
    with pytest.raises(fs.ConfigError, match="samplingRatio"):
        _ours(data / "rows.json", samplingRatio="0")
    with pytest.raises(fs.ConfigError, match="allowComments"):
        _ours(data / "rows.json", allowComments="maybe")
    with pytest.raises(fs.PathNotFoundError):
        _ours(data / "missing.json")


def test_garbage_never_crashes(tmp_path):
    """Random bytes, a `{` repeated 100,000 times, a 100 MB line, invalid UTF-8, truncated
    documents: each read gives rows or a clear error, in a subprocess that must survive."""
    script = textwrap.dedent(
        f"""
        import os, random, ferrospark as fs
        d = {str(tmp_path)!r}
        rnd = random.Random(5)
        cases = {{
            "random": bytes(rnd.randrange(256) for _ in range(50000)),
            "braces": b"{{" * 100000,
            "arrays": b"[" * 100000 + b"\\n" + b'{{"a": [' * 2000,
            "long": b'{{"a": "' + b"x" * 100_000_000 + b'"}}\\n',
            "utf8": b'{{"a": "\\xff\\xfe"}}\\n{{"\\xc3": 1}}\\n',
            "truncated": b'{{"a": [1, {{"b": "',
        }}
        for name, raw in cases.items():
            p = os.path.join(d, name + ".json")
            open(p, "wb").write(raw)
            for opts in [{{}}, {{"multiLine": "true"}}, {{"schema": "a STRING, _corrupt_record STRING"}}]:
                try:
                    n = fs.read_json(p, **opts).read_all().num_rows
                    print("rows", name, n)
                except fs.FerroError as e:
                    print("error", name, type(e).__name__)
        print("survived")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "survived" in out.stdout


def test_dataframe_source_pushes_filters_and_columns(spark, data):
    """``s.read.json`` as a DataFrame source: the optimizer pushes the query's filters into
    the parsing and reads only the columns it uses; the answers equal Spark's."""
    from pyspark.sql import functions as PF

    from ferrospark import functions as F

    path = str(data / "rows.json")
    s = fs.Session()
    ours = s.read.json(path)
    theirs = spark.read.json(path)
    assert ours.columns == theirs.columns
    for build in [
        lambda df, f: df.filter("id < 100 AND price > 0").select("name", "x"),
        lambda df, f: df.groupBy("flag").agg(f.count("*").alias("n"), f.sum("price").alias("p")),
        lambda df, f: df.filter(f.col("name").isNotNull()).select("id", "loc", "tags"),
    ]:
        assert_same_rows(spark_rows(build(theirs, PF)), arrow_rows(build(ours, F).toArrow()))
    q = ours.filter("id < 100").select("name")
    q.toArrow()
    plan = q.executedPlan()
    assert "FileScan json" in plan and "PushedFilters: [id#" in plan, plan
    assert "rows_skipped_early=301" in plan, plan  # ids 100.. and a truncated record


def test_fss_read_json_on_spark(spark, data):
    """``fss.read_json``: the scan runs natively inside a Spark task, composes with Spark's
    own DataFrame API, and is continued by the next fss function."""
    from pyspark.sql import functions as PF

    from ferrospark import spark as fss

    path = str(data / "rows.json")
    schema = (
        "id BIGINT, name STRING, x DOUBLE, price DECIMAL(7,2), day DATE, flag BOOLEAN, tags ARRAY<STRING>"
    )
    ours = fss.read_json(spark, path, schema=schema, filter="id % 4 = 1")
    theirs = spark.read.schema(schema).json(path).filter("id % 4 = 1")
    assert ours.columns == theirs.columns
    assert_same_rows(spark_rows(theirs), spark_rows(ours))
    agg = fss.aggregate(ours, "flag", [fs.count(), fs.sum("price")])
    expected = theirs.groupBy("flag").agg(PF.count(PF.lit(1)), PF.sum("price"))
    assert_same_rows(spark_rows(expected), spark_rows(agg))


def test_custom_date_and_timestamp_formats(spark, tmp_path):
    """``dateFormat`` / ``timestampFormat`` by Spark's pattern letters, as for CSV."""
    path = tmp_path / "formats.json"
    path.write_text(
        '{"id": 1, "day": "31/01/2024", "ts": "2024/01/31 10:20:30.123"}\n'
        '{"id": 2, "day": "2024-01-31", "ts": "2024/01/31 10:20:30.1"}\n'
        '{"id": 3, "day": "29/02/2023", "ts": "2024-01-31 10:20:30"}\n'
        '{"id": 4, "day": null, "ts": 1700000000}\n',
        encoding="utf-8",
    )
    schema = "id INT, day DATE, ts TIMESTAMP, _corrupt_record STRING"
    _check(spark, path, schema=schema, dateFormat="dd/MM/yyyy", timestampFormat="yyyy/MM/dd HH:mm:ss.SSS")


def test_character_sets(spark, tmp_path):
    """``encoding`` for JSON: read line by line with ``lineSep``, or whole with ``multiLine``;
    Spark's requirements for the two are kept (a configuration error otherwise)."""
    path = tmp_path / "latin1.json"
    path.write_bytes('{"id": 1, "name": "café"}\n{"id": 2, "name": "Zürich \\u00e9"}\n'.encode("latin-1"))
    schema = "id INT, name STRING"
    _check(spark, path, schema=schema, encoding="ISO-8859-1", lineSep="\n")
    whole = tmp_path / "utf16.json"
    whole.write_bytes('[{"id": 1, "name": "日本"}, {"id": 2, "name": "é"}]'.encode("utf-16"))
    _check(spark, whole, schema=schema, encoding="UTF-16", multiLine=True)
    with pytest.raises(fs.FerroError, match="lineSep"):
        _ours(path, schema=schema, encoding="ISO-8859-1")
    with pytest.raises(fs.FerroError, match="multiLine"):
        _ours(whole, schema=schema, encoding="UTF-16")


def test_timestamp_ntz_columns(spark, tmp_path):
    """A TIMESTAMP_NTZ column takes local date-time strings only (no zone, no offset, no
    number of seconds), by Spark's parsing or by ``timestampNTZFormat``."""
    path = tmp_path / "ntz.json"
    values = [
        "2020-01-02T03:04:05",
        "2020-01-02 03:04:05.123",
        "2020-01-02T03:04:05+01:00",
        "2020-01-02",
        "02/01/2020 03:04",
        "2020-01-02T03:04:05Z",
        None,
        12345,
    ]
    path.write_text(
        "".join(json.dumps({"t": v, "u": i}) + "\n" for i, v in enumerate(values)),
        encoding="utf-8",
    )
    schema = "t TIMESTAMP_NTZ, u INT, _corrupt_record STRING"
    _check(spark, path, schema=schema)
    _check(spark, path, schema=schema, timestampNTZFormat="dd/MM/yyyy HH:mm")


def test_custom_line_separator(spark, tmp_path):
    """``lineSep`` other than a line end: records end at it wherever it stands (inside a
    string too, as Spark's reader cuts them), blank records are skipped, and a record may
    hold line ends; schema inference reads the same records."""
    one = tmp_path / "pipe.json"
    one.write_bytes(
        b'{"a":1,"b":"p"}|{"a":2,\n"b":"q"}|  ||{"a":"x|y"}|{"a":3}\n|\n{"a":4}|'
        + "|".join(json.dumps({"a": i, "b": "é" * (i % 3)}) for i in range(5, 40)).encode()
    )
    two = tmp_path / "double.json"
    two.write_bytes(b'{"a":1}||{"a":2}\r\n||||{"a":3}||')
    _check(spark, one, schema="a INT, b STRING, _corrupt_record STRING", lineSep="|")
    _check(spark, one, lineSep="|")
    _check(spark, two, lineSep="||")
    _check(spark, two, schema="a INT", lineSep="||", mode="DROPMALFORMED")
    with pytest.raises(fs.FerroError, match="lineSep"):
        _ours(two, lineSep="")


def test_binary_columns_and_map_keys(spark, tmp_path):
    """A BINARY column reads base64 text as Spark's parser decodes it (padding required; a
    number or text that is not base64 is a malformed record), in every mode; a map whose
    keys are not strings is refused with Spark's error class."""
    path = tmp_path / "binary.json"
    path.write_text(
        '{"b":"aGVsbG8=","n":1}\n{"b":"","n":2}\n{"b":null,"n":3}\n{"b":"!!notb64","n":4}\n'
        '{"b":"aGVsbG8","n":5}\n{"b":123,"n":6}\n{"b":"5pel5pys","n":7}\n{"n":8}\n',
        encoding="utf-8",
    )
    _check(spark, path, schema="b BINARY, n INT, _corrupt_record STRING")
    _check(spark, path, schema="b BINARY, n INT", mode="DROPMALFORMED")
    _check(spark, path, schema="b BINARY, n INT", filter="n > 3")
    with pytest.raises(fs.FerroError, match="MALFORMED_RECORD_IN_PARSING"):
        _ours(path, schema="b BINARY, n INT", mode="FAILFAST")
    with pytest.raises(fs.FerroError, match="INVALID_JSON_SCHEMA_MAP_TYPE"):
        _ours(path, schema="m MAP<INT, STRING>")


def test_timestamps_in_a_session_zone_other_than_utc(spark, tmp_path):
    """A session in another zone reads a time without an offset as that zone's local time,
    whatever zone the given Arrow schema labels the column with."""
    path = tmp_path / "local.json"
    path.write_text(
        '{"id": 1, "t": "2024-03-01 19:29:12.873619"}\n{"id": 2, "t": "2024-03-10 02:30:00"}\n'
        '{"id": 3, "t": "2024-03-01T19:29:12Z"}\n{"id": 4, "t": null}\n',
        encoding="utf-8",
    )
    tz = "America/Los_Angeles"
    was = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", tz)
    try:
        expected = spark_rows(_theirs(spark, path, "id INT, t TIMESTAMP"))
    finally:
        spark.conf.set("spark.sql.session.timeZone", was)
    for given in (
        "id INT, t TIMESTAMP",
        pa.schema([("id", pa.int32()), ("t", pa.timestamp("us", tz="UTC"))]),
    ):
        got = _ours(path, given, conf={"spark.sql.session.timeZone": tz})
        assert_same_rows(expected, arrow_rows(got), str(given))
