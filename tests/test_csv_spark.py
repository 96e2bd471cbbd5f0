"""The CSV reader against PySpark's ``spark.read.csv`` on the same files and options: quoting,
escapes and NULLs, schema inference, typed schemas with malformed records in every mode,
filters checked while records convert (same rows with pushdown on and off, early skipping
shown by the metrics), unicode, NaN, decimals, dates and timestamps, multi-line values,
compressed files, hive partitions, and bytes that are not CSV at all."""

from __future__ import annotations

import bz2
import gzip
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
    header = options.pop("header", False)
    return fs.read_csv(
        str(path), schema=schema, filter=filter, header=header, session=s, **options
    ).read_all()


def _theirs(spark, path, schema=None, filter=None, **options):
    r = spark.read.options(
        **{k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
    )
    if schema is not None:
        r = r.schema(schema)
    df = r.csv(str(path))
    return df.filter(filter) if filter else df


def _check(spark, path, schema=None, filter=None, **options):
    expected = _theirs(spark, path, schema, filter, **options)
    got = _ours(path, schema, filter, **dict(options))
    assert got.column_names == expected.columns, (got.column_names, expected.columns)
    assert_same_rows(spark_rows(expected), arrow_rows(got), f"{options} {schema} {filter}")
    return got


def _rows_text(n: int, seed: int = 7) -> str:
    rnd = random.Random(seed)
    words = ["a", "b,c", 'say "hi"', "日本", "é", "", " pad ", "x\\y"]
    lines = ["id,name,x,price,day,ts,flag"]
    for i in range(n):
        name = rnd.choice(words)
        if '"' in name or "," in name:
            name = '"' + name.replace('"', '\\"') + '"'
        x = rnd.choice(["1.5", "-0.0", "NaN", "", "2.25", "-3", "Inf", "1e3"])
        price = rnd.choice(["12.34", "-0.5", "", "99999.99", "7"])
        day = rnd.choice(["2024-01-31", "1999-12-31", ""])
        ts = rnd.choice(["2024-01-31T10:20:30", "2024-02-01 00:00:00", "2024-03-01T01:02:03.456Z", ""])
        flag = rnd.choice(["true", "FALSE", ""])
        lines.append(f"{i},{name},{x},{price},{day},{ts},{flag}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("csv")
    (d / "rows.csv").write_text(_rows_text(400), encoding="utf-8")
    (d / "quotes.csv").write_text(
        'a,"",b\n"x\\"y","p""q",r\n"a\\\\b",c"d,e\n "s" , t ,"u"v\n,\n\n#c,d\n', encoding="utf-8"
    )
    (d / "typed.csv").write_text("1,a,1.5\nx,b,2\n3,c\n4,d,5,6\n 5,e, 7.5\n+6,f,1e2\n,g,\n", encoding="utf-8")
    (d / "multi.csv").write_text('id,text\n1,"two\nlines"\n2,"one"\n3,"a ""q"""\n', encoding="utf-8")
    return d


def test_strings_quotes_and_options(spark, data):
    path = data / "quotes.csv"
    for options in [
        {},
        {"nullValue": "x"},
        {"comment": "#"},
        {"ignoreLeadingWhiteSpace": True, "ignoreTrailingWhiteSpace": True},
        {"quote": "'"},
        {"escape": '"'},
        {"sep": ";"},
        {"emptyValue": "EMPTY"},
    ]:
        _check(spark, path, **options)


def test_header_inference_and_types(spark, data):
    path = data / "rows.csv"
    _check(spark, path, header=True)
    got = _check(spark, path, header=True, inferSchema=True)
    theirs = _theirs(spark, path, header=True, inferSchema=True)
    assert [f.dataType.simpleString() for f in theirs.schema.fields] == [
        {
            "int32": "int",
            "int64": "bigint",
            "double": "double",
            "string": "string",
            "bool": "boolean",
            "date32[day]": "date",
        }.get(str(t), "timestamp" if str(t).startswith("timestamp") else str(t))
        for t in got.schema.types
    ]
    _check(spark, path, header=True, inferSchema=True, samplingRatio=0.5)


def test_typed_schema_in_every_mode(spark, data):
    path = data / "typed.csv"
    for schema in ["i INT, s STRING, d DOUBLE, _corrupt_record STRING", "i INT, s STRING, d DOUBLE"]:
        for mode in ["PERMISSIVE", "DROPMALFORMED"]:
            _check(spark, path, schema=schema, mode=mode)
    rows = data / "rows.csv"
    schema = "id BIGINT, name STRING, x DOUBLE, price DECIMAL(7,2), day DATE, ts TIMESTAMP, flag BOOLEAN"
    _check(spark, rows, schema=schema, header=True)
    _check(spark, rows, schema="id INT, name STRING, x FLOAT, price DECIMAL(4,1)", header=True)
    with pytest.raises(fs.MalformedRecordError, match=r"MALFORMED_RECORD_IN_PARSING.*line 2"):
        _ours(path, schema="i INT, s STRING, d DOUBLE", mode="FAILFAST")


def test_filters_while_converting(spark, data):
    path = data / "rows.csv"
    schema = "id BIGINT, name STRING, x DOUBLE, price DECIMAL(7,2), day DATE, ts TIMESTAMP, flag BOOLEAN"
    for cond in [
        "id < 40",
        "x > 1 AND name IS NOT NULL",
        "price >= 12 OR flag",
        "day = DATE '2024-01-31' AND id % 3 = 0",
        "name LIKE '%hi%'",
        "x IS NULL",
    ]:
        _check(spark, path, schema=schema, filter=cond, header=True)
        off = _ours(path, schema, cond, conf={"spark.sql.csv.filterPushdown.enabled": "false"}, header=True)
        assert_same_rows(spark_rows(_theirs(spark, path, schema, cond, header=True)), arrow_rows(off), cond)
    s = fs.Session()
    reader = fs.read_csv(str(path), schema=schema, filter="id < 40", header=True, session=s)
    assert reader.read_all().num_rows == 40
    m = fs.scan_metrics(reader)
    # Rows 40.. fail at the first field: none of their six other fields is converted.
    assert m["rows_read"] == 400 and m["rows_skipped_early"] == 360, m
    assert m["fields_not_converted"] == 360 * 6, m


def test_multi_line_compressed_and_partitioned(spark, data, tmp_path):
    _check(spark, data / "multi.csv", header=True, multiLine=True, escape='"')
    text = (data / "rows.csv").read_bytes()
    root = tmp_path / "parts"
    for region, opener, ext in [("eu", gzip.open, "gz"), ("us", bz2.open, "bz2")]:
        part = root / f"region={region}"
        part.mkdir(parents=True)
        with opener(part / f"rows.csv.{ext}", "wb") as f:
            f.write(text)
    got = _check(spark, root, header=True, inferSchema=True, filter="region = 'us' AND id < 10")
    assert got.num_rows == 10


def test_bad_options_are_config_errors(data):
    with pytest.raises(fs.ConfigError, match="mode"):
        _ours(data / "rows.csv", mode="LENIENT")
    with pytest.raises(fs.ConfigError, match="samplingRatio"):
        _ours(data / "rows.csv", samplingRatio="2")
    with pytest.raises(fs.PathNotFoundError):
        _ours(data / "missing.csv")


def test_garbage_never_crashes(tmp_path):
    """Random bytes, a `{` repeated 100,000 times, a long line, invalid UTF-8 and truncated
    quotes: each read gives rows or a clear error, in a subprocess that must survive."""
    script = textwrap.dedent(
        f"""
        import os, random, ferrospark as fs
        d = {str(tmp_path)!r}
        rnd = random.Random(3)
        cases = {{
            "random": bytes(rnd.randrange(256) for _ in range(50000)),
            "braces": b"{{" * 100000,
            "long": b"a" * 5_000_000 + b",b\\n",
            "utf8": b"\\xff\\xfe,\\xc3\\n\\x80,x\\n",
            "quote": b'"unterminated,1\\n"a""b\\n',
        }}
        for name, raw in cases.items():
            p = os.path.join(d, name + ".csv")
            open(p, "wb").write(raw)
            for opts in [{{}}, {{"multiLine": "true"}}, {{"inferSchema": "true"}}]:
                try:
                    fs.read_csv(p, header=False, **opts).read_all()
                except fs.FerroError as e:
                    print("error", name, type(e).__name__)
        print("survived")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "survived" in out.stdout


def test_dataframe_source_pushes_filters_and_columns(spark, data):
    """``s.read.csv`` as a DataFrame source: the optimizer pushes the query's filters into
    the parsing and reads only the columns it uses; the answers equal Spark's."""
    from pyspark.sql import functions as PF

    from ferrospark import functions as F

    path = str(data / "rows.csv")
    s = fs.Session()
    ours = s.read.option("header", True).option("inferSchema", True).csv(path)
    theirs = spark.read.option("header", True).option("inferSchema", True).csv(path)
    assert ours.columns == theirs.columns
    for build in [
        lambda df, f: df.filter("id < 100 AND x > 0").select("name", "price"),
        lambda df, f: df.groupBy("flag").agg(f.count("*").alias("n"), f.sum("price").alias("p")),
        lambda df, f: df.filter(f.col("name").isNotNull()).select("id", "day", "ts"),
    ]:
        assert_same_rows(spark_rows(build(theirs, PF)), arrow_rows(build(ours, F).toArrow()))
    q = ours.filter("id < 100").select("name")
    q.toArrow()
    plan = q.executedPlan()
    assert "FileScan csv" in plan and "PushedFilters: [id#" in plan, plan
    assert "rows_skipped_early=300" in plan, plan
    typed = s.read.schema("id BIGINT, name STRING, x DOUBLE").csv(path, header=True, mode="DROPMALFORMED")
    expected = spark.read.schema("id BIGINT, name STRING, x DOUBLE").csv(
        path, header=True, mode="DROPMALFORMED"
    )
    assert_same_rows(spark_rows(expected), arrow_rows(typed.toArrow()))


def test_fss_read_csv_on_spark(spark, data):
    """``fss.read_csv``: the scan runs natively inside a Spark task, composes with Spark's own
    DataFrame API, and is continued by the next fss function."""
    from pyspark.sql import functions as PF

    from ferrospark import spark as fss

    path = str(data / "rows.csv")
    schema = "id BIGINT, name STRING, x DOUBLE, price DECIMAL(7,2), day DATE, ts TIMESTAMP, flag BOOLEAN"
    ours = fss.read_csv(spark, path, schema=schema, filter="id % 4 = 1", header=True)
    theirs = spark.read.schema(schema).csv(path, header=True).filter("id % 4 = 1")
    assert ours.columns == theirs.columns
    assert_same_rows(spark_rows(theirs), spark_rows(ours))
    assert ours.groupBy("flag").count().count() == theirs.groupBy("flag").count().count()
    agg = fss.aggregate(ours, "flag", [fs.count(), fs.sum("price")])
    expected = theirs.groupBy("flag").agg(PF.count(PF.lit(1)), PF.sum("price"))
    assert_same_rows(spark_rows(expected), spark_rows(agg))


def test_custom_date_and_timestamp_formats(spark, tmp_path):
    """``dateFormat`` / ``timestampFormat`` read by Spark's pattern letters; text the pattern
    does not read is a malformed field (no fallback to the default parsing once a format is
    set), in every mode."""
    path = tmp_path / "formats.csv"
    path.write_text(
        "id,day,ts\n"
        "1,31/01/2024,01-31-2024 10:20:30 PM\n"
        "2,29/02/2024,12-01-1999 12:00:00 AM\n"
        "3,2024-01-31,01-31-2024 10:20:30\n"
        "4,31/02/2024,13-01-2024 01:00:00 PM\n"
        "5,,\n"
        "6,1/1/2024,1-1-2024 1:2:3 am\n",
        encoding="utf-8",
    )
    schema = "id INT, day DATE, ts TIMESTAMP, _corrupt_record STRING"
    opts = {"header": True, "dateFormat": "dd/MM/yyyy", "timestampFormat": "MM-dd-yyyy hh:mm:ss a"}
    _check(spark, path, schema=schema, **opts)
    _check(spark, path, schema="id INT, day DATE, ts TIMESTAMP", mode="DROPMALFORMED", **opts)
    _check(spark, path, schema=schema, header=True, dateFormat="d/M/yyyy", timestampFormat="M-d-yyyy h:m:s a")
    with pytest.raises(fs.FerroError, match="dateFormat"):
        _ours(path, schema=schema, header=True, dateFormat="yyyy-bb")
    # Optional sections and zone offsets (an instant, whatever the session's zone).
    zoned = tmp_path / "zoned.csv"
    zoned.write_text(
        "1,2024-01-31T10:20:30.5+02:00\n2,2024-01-31T10:20:30Z\n3,2024-01-31T10:20:30\n"
        "4,2024-01-31T10:20:30-05:30\n5,2024-01-31T10:20:30+0200\n6,2024-01-31T10:20:30.\n",
        encoding="utf-8",
    )
    _check(
        spark,
        zoned,
        schema="id INT, ts TIMESTAMP, _corrupt_record STRING",
        timestampFormat="yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]",
    )


def test_character_sets(spark, tmp_path):
    """``encoding`` as Spark 4 takes it: the seven names it accepts, each decoded as Java
    decodes it (ISO-8859-1 maps each byte to its code, bytes 0x80-0x9F included; US-ASCII
    reads bytes above 0x7F as U+FFFD; UTF-16 and UTF-32 honour a byte order mark), and
    Spark's error for any other name."""
    text = 'id,name\n1,"café, naïve"\n2,Zürich\n3,\n4,"a\nb"\n'
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes(text.encode("latin-1") + b"5,ctrl\x85x\n")
    schema = "id INT, name STRING"
    _check(spark, latin1, schema=schema, header=True, encoding="ISO-8859-1")
    _check(spark, latin1, schema=schema, header=True, charset="iso-8859-1", multiLine=True)
    _check(spark, latin1, schema=schema, header=True, encoding="US-ASCII")
    for name, codec in [("UTF-16", "utf-16"), ("UTF-16LE", "utf-16-le"), ("UTF-32", "utf-32")]:
        path = tmp_path / f"{name}.csv"
        path.write_bytes(text.encode(codec))
        _check(spark, path, schema=schema, header=True, encoding=name, multiLine=True)
    for bad in ["latin1", "windows-1252"]:
        with pytest.raises(fs.FerroError, match="INVALID_PARAMETER_VALUE.CHARSET"):
            _ours(latin1, schema=schema, encoding=bad)


def test_timestamp_ntz_columns(spark, tmp_path):
    """A TIMESTAMP_NTZ column takes local date-times only: by Spark's own parsing without
    ``timestampNTZFormat``, by that pattern with it; text naming a zone or an offset is a
    malformed value either way (Spark's ``parseWithoutTimeZone(_, false)``)."""
    path = tmp_path / "ntz.csv"
    path.write_text(
        "t,u\n2020-01-02T03:04:05,a\n2020-01-02 03:04:05.123,b\n2020-01-02T03:04:05+01:00,c\n"
        "2020-01-02,d\n02/01/2020 03:04,e\n2020-01-02T03:04:05Z,f\n,g\n1969-12-31 23:59:59.9,h\n",
        encoding="utf-8",
    )
    schema = "t TIMESTAMP_NTZ, u STRING, _corrupt_record STRING"
    _check(spark, path, schema=schema, header=True)
    _check(spark, path, schema=schema, header=True, timestampNTZFormat="dd/MM/yyyy HH:mm")
    _check(spark, path, schema=schema, header=True, timestampNTZFormat="yyyy-MM-dd'T'HH:mm:ssXXX")
    # The NTZ pattern leaves TIMESTAMP columns to timestampFormat.
    _check(
        spark,
        path,
        schema="t TIMESTAMP, u STRING, _corrupt_record STRING",
        header=True,
        timestampNTZFormat="dd/MM/yyyy HH:mm",
    )


def test_inferred_timestamps_read_as_spark_reads_text(spark, tmp_path):
    """Inference and reading without a format take timestamp text as Spark's cast does:
    one-digit fields and times without seconds are timestamps, and a column mixing dates
    and such timestamps is a timestamp column."""
    path = tmp_path / "stamps.csv"
    path.write_text(
        "e,f,g\n2020-01-02,2020-1-3 4:5:6,x\n2020-01-03 04:05,2021-12-13 23:59,y\n",
        encoding="utf-8",
    )
    _check(spark, path, header=True, inferSchema=True)
    _check(spark, path, schema="e TIMESTAMP, f TIMESTAMP_NTZ, g STRING", header=True)


def test_inference_by_custom_date_and_timestamp_formats(spark, tmp_path):
    """``inferSchema`` reads dates by ``dateFormat`` and timestamps by ``timestampFormat``; a
    column mixing dates and timestamps is a timestamp column only when no timestamp pattern
    is set and the date pattern is one the lenient timestamp parser reads (Spark's
    ``canParseDateAsTimestamp``), else text."""
    path = tmp_path / "infer_formats.csv"
    path.write_text(
        "a,b,c,d,e,f\n"
        "31/01/2024,01-31-2024 10:20:30 PM,2024-01-31,31/01/2024,1/2/2024,2024-01-31\n"
        "01/02/2024,12-01-1999 12:00:00 AM,2024-02-01,2024-02-01 10:00:00,3/4/2024,"
        "2024-02-01 10:00:00\n"
        ",,,,,\n",
        encoding="utf-8",
    )

    def kind(t: pa.DataType) -> str:
        if pa.types.is_timestamp(t):
            return "timestamp"
        return {pa.date32(): "date", pa.string(): "string", pa.int32(): "int"}.get(t, str(t))

    for opts in [
        {"dateFormat": "dd/MM/yyyy", "timestampFormat": "MM-dd-yyyy hh:mm:ss a"},
        {"dateFormat": "dd/MM/yyyy"},
        {"timestampFormat": "MM-dd-yyyy hh:mm:ss a"},
        {"timestampFormat": "yyyy-MM-dd HH:mm:ss"},
        {"dateFormat": "d/M/yyyy"},
        {"dateFormat": "yyyy-M-d"},
        {},
    ]:
        got = _check(spark, path, header=True, inferSchema=True, **opts)
        theirs = _theirs(spark, path, header=True, inferSchema=True, **opts)
        assert [kind(f.type) for f in got.schema] == [t for _, t in theirs.dtypes], opts


def test_field_counts_checked_only_when_every_field_is_read(spark, tmp_path):
    """With column pruning (Spark's default) a record with too few or too many fields is
    malformed only when the query reads every column or the corrupt-record column; a count,
    or a query of some columns, takes it as it is. Without pruning every record is counted."""
    path = tmp_path / "ragged.csv"
    path.write_text('1,a,2,b\n2,x\n3,c,4,d,extra\n4,d,5,e\n5,"q,r",6\n', encoding="utf-8")
    schema = "a INT, b STRING, c INT, d STRING"
    key = "spark.sql.csv.parser.columnPruning.enabled"

    def outcome(read, cols, query):
        try:
            df = read.where("a > 1") if query == "filter" else read
            df = df.select(*cols)
            if query == "count":
                return df.count()
            return sorted(tuple(r) for r in df.collect())
        except Exception:
            return "error"

    for pruning in ["true", "false"]:
        spark.conf.set(key, pruning)
        try:
            for mode in ["DROPMALFORMED", "FAILFAST", "PERMISSIVE"]:
                for cols in [["a"], ["b", "c"], ["a", "b", "c", "d"]]:
                    for query in ["rows", "count", "filter"]:
                        theirs = spark.read.schema(schema).option("mode", mode).csv(str(path))
                        ours = (
                            fs.Session(conf={key: pruning})
                            .read.schema(schema)
                            .option("mode", mode)
                            .csv(str(path))
                        )
                        assert outcome(ours, cols, query) == outcome(theirs, cols, query), (
                            pruning,
                            mode,
                            cols,
                            query,
                        )
        finally:
            spark.conf.unset(key)


def test_zone_ids_in_timestamp_patterns(spark, tmp_path):
    """``VV`` in ``timestampFormat`` reads a zone id: a region's offset at that local time
    (through DST gaps and overlaps, as Java resolves them), ``Z``, ``UTC`` or an offset; an
    unknown region is a malformed field."""
    path = tmp_path / "zones.csv"
    path.write_text(
        "1,2024-01-31 10:20 Europe/Paris\n2,2024-07-01 10:00 Europe/Paris\n"
        "3,2024-03-31 02:30 Europe/Paris\n4,2024-10-27 02:30 Europe/Paris\n"
        "5,2024-01-31 10:20 America/New_York\n6,2024-01-31 10:20 UTC\n7,2024-01-31 10:20 Z\n"
        "8,2024-01-31 10:20 +05:30\n9,2024-01-31 10:20 Nowhere/City\n",
        encoding="utf-8",
    )
    _check(
        spark,
        path,
        schema="id INT, t TIMESTAMP, _corrupt_record STRING",
        timestampFormat="yyyy-MM-dd HH:mm VV",
    )


@pytest.mark.parametrize("schema", ["id INT, t TIMESTAMP", "ts_as_arrow"])
def test_timestamps_in_a_session_zone_other_than_utc(spark, tmp_path, schema):
    """A session in another zone reads a time without an offset as that zone's local time
    (an instant with an offset as itself), whatever zone the given Arrow schema labels the
    column with."""
    path = tmp_path / "local.csv"
    path.write_text(
        "1,2024-03-01 19:29:12.873619\n2,2024-03-10 02:30:00\n3,2024-11-03 01:30:00\n"
        "4,2024-03-01T19:29:12Z\n5,2024-03-01 19:29:12+05:30\n6,\n",
        encoding="utf-8",
    )
    tz = "America/Los_Angeles"
    ddl = "id INT, t TIMESTAMP"
    given = ddl if schema == ddl else pa.schema([("id", pa.int32()), ("t", pa.timestamp("us", tz="UTC"))])
    was = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", tz)
    try:
        expected = spark_rows(_theirs(spark, path, ddl))
    finally:
        spark.conf.set("spark.sql.session.timeZone", was)
    got = _ours(path, given, conf={"spark.sql.session.timeZone": tz})
    assert_same_rows(expected, arrow_rows(got), schema)


def test_patterned_timestamps_in_a_session_zone_other_than_utc(spark, tmp_path):
    """With ``timestampFormat`` too, local times are read in the session's zone and the column
    is labelled with the zone the given Arrow schema asks for."""
    path = tmp_path / "patterned.csv"
    path.write_text("1,01/03/2024 19:29:12\n2,10/03/2024 02:30:00\n3,\n", encoding="utf-8")
    tz = "America/Los_Angeles"
    pattern = "dd/MM/yyyy HH:mm:ss"
    was = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", tz)
    try:
        expected = spark_rows(_theirs(spark, path, "id INT, t TIMESTAMP", timestampFormat=pattern))
    finally:
        spark.conf.set("spark.sql.session.timeZone", was)
    given = pa.schema([("id", pa.int32()), ("t", pa.timestamp("us", tz="UTC"))])
    got = _ours(path, given, conf={"spark.sql.session.timeZone": tz}, timestampFormat=pattern)
    assert got.schema.field("t").type == given.field("t").type
    assert_same_rows(expected, arrow_rows(got), pattern)
