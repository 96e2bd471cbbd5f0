"""fss reading streaming file sources' files in its own tasks (``stream_sources``): rows
routed exactly as Spark's ``repartition(n, keys)`` routes them, the source recognised only
when it is bare, and a query whose batches take both paths equal to Spark's own."""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from ferrospark import _native
from ferrospark.stream_sources import FileSourceLog, NativeFileSource

UTC = dt.timezone.utc


def _typed_table() -> pa.Table:
    """Every key type routed natively, with NULLs, NaN, -0.0, unicode, duplicates and extremes."""
    n = 64
    return pa.table(
        {
            "i": pa.array([None if k % 11 == 0 else k * 7919 - 250_000 for k in range(n)], pa.int32()),
            "l": pa.array([None if k % 13 == 0 else (k - 30) * 10**15 for k in range(n)], pa.int64()),
            "b": pa.array([None if k % 7 == 0 else k % 2 == 0 for k in range(n)], pa.bool_()),
            "d": pa.array(
                [[0.0, -0.0, float("nan"), 1.5, -2.25, None, 1e300, -1e-300][k % 8] for k in range(n)],
                pa.float64(),
            ),
            "f": pa.array([[0.0, -0.0, float("nan"), 3.5, None][k % 5] for k in range(n)], pa.float32()),
            "s": pa.array(
                [
                    [None, "", "a", "abcd", "abcde", "çelik", "日本語テキスト", "😀x", "user-17"][k % 9]
                    for k in range(n)
                ]
            ),
            "bin": pa.array([None if k % 6 == 0 else bytes(range(k % 9)) for k in range(n)], pa.binary()),
            "dt": pa.array([None if k % 5 == 0 else dt.date(1970 + k, 1 + k % 12, 1) for k in range(n)]),
            "ts": pa.array(
                [
                    None if k % 4 == 0 else dt.datetime(1960 + k, 3, 1, 12, k % 60, tzinfo=UTC)
                    for k in range(n)
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "dec": pa.array(
                [None if k % 3 == 0 else decimal.Decimal(k * 1234567 - 9999999) / 100 for k in range(n)],
                pa.decimal128(12, 2),
            ),
        }
    )


@pytest.mark.parametrize(
    "keys", [["i"], ["l"], ["b"], ["d"], ["f"], ["s"], ["bin"], ["dt"], ["ts"], ["dec"], ["s", "i", "d"]]
)
def test_rows_are_routed_as_sparks_hash_partitioning(spark, keys):
    """Each row's piece is ``pmod(hash(keys), n)`` as Spark computes it."""
    from pyspark.sql import functions as F

    t = _typed_table().append_column("row", pa.array(range(64), pa.int64()))
    n = 5
    parts = _native.spark_hash_split(t, keys, n)
    assert parts is not None and len(parts) == n
    ours = {r: p for p, part in enumerate(parts) for r in part.column("row").to_pylist()}
    assert sorted(ours) == list(range(64))
    sdf = spark.createDataFrame(t)
    assert [f.dataType.simpleString() for f in sdf.schema][:10] == [
        "int",
        "bigint",
        "boolean",
        "double",
        "float",
        "string",
        "binary",
        "date",
        "timestamp",
        "decimal(12,2)",
    ]
    theirs = {
        r["row"]: r["p"]
        for r in sdf.select("row", F.expr(f"pmod(hash({', '.join(keys)}), {n})").alias("p")).collect()
    }
    assert ours == theirs


def test_a_key_type_not_hashed_here_is_left_to_spark():
    t = pa.table({"k": pa.array([[1], [2]], pa.list_(pa.int64()))})
    assert _native.spark_hash_split(t, ["k"], 3) is None


def test_only_a_bare_file_source_is_read_natively(spark, tmp_path):
    pq.write_table(pa.table({"user": ["a"], "v": [1]}), tmp_path / "batch-00000.parquet")
    schema = spark.read.parquet(str(tmp_path)).schema
    bare = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path))
    assert NativeFileSource.of(bare, str(tmp_path / "c"), {}, ["user"]) is not None
    assert (
        NativeFileSource.of(bare, str(tmp_path / "c"), {"ferrospark.streaming.nativeScan": "false"}, ["user"])
        is None
    )
    assert NativeFileSource.of(bare.select("user"), str(tmp_path / "c"), {}, ["user"]) is None
    assert NativeFileSource.of(bare.filter("v > 0"), str(tmp_path / "c"), {}, ["user"]) is None
    rebased = spark.readStream.schema(schema).option("datetimeRebaseMode", "LEGACY").parquet(str(tmp_path))
    assert NativeFileSource.of(rebased, str(tmp_path / "c"), {}, ["user"]) is None
    # CSV and JSON with the options ferrospark's readers apply as Spark does, not others.
    as_json = spark.readStream.schema(schema).option("allowSingleQuotes", True).json(str(tmp_path))
    assert NativeFileSource.of(as_json, str(tmp_path / "c"), {}, ["user"]) is not None
    as_csv = spark.readStream.schema(schema).option("header", True).option("sep", ";").csv(str(tmp_path))
    source = NativeFileSource.of(as_csv, str(tmp_path / "c"), {}, ["user"])
    assert source is not None and source.sides[0].options == {"header": "true", "sep": ";"}
    localised = spark.readStream.schema(schema).option("locale", "de-DE").csv(str(tmp_path))
    assert NativeFileSource.of(localised, str(tmp_path / "c"), {}, ["user"]) is None
    # An option PySpark sends that Spark's JSON reader does not read (its plural is).
    singular = spark.readStream.schema(schema).option("allowNumericLeadingZero", True).json(str(tmp_path))
    assert NativeFileSource.of(singular, str(tmp_path / "c"), {}, ["user"]) is None
    # Session settings with which Spark parses text its own way.
    for key, value in (
        ("spark.sql.legacy.timeParserPolicy", "LEGACY"),
        ("spark.sql.columnNameOfCorruptRecord", "_bad"),
    ):
        spark.conf.set(key, value)
        try:
            assert NativeFileSource.of(as_csv, str(tmp_path / "c"), {}, ["user"]) is None
        finally:
            spark.conf.unset(key)
    assert NativeFileSource.of(as_csv, str(tmp_path / "c"), {}, ["user"]) is not None
    # Text compressed by a codec Hadoop decodes and ferrospark's reader does not (or the other
    # way round): Spark's rows.
    (tmp_path / "x.csv.snappy").write_bytes(b"\xff\x06\x00\x00sNaPpY")
    (tmp_path / "x.csv.gzip").write_bytes(b"\x1f\x8b")
    assert source.readable(0, [str(tmp_path / "x.csv.snappy")]) is None
    assert source.readable(0, [str(tmp_path / "x.csv.gzip")]) is None
    as_text = spark.readStream.schema("value STRING").text(str(tmp_path))
    assert NativeFileSource.of(as_text, str(tmp_path / "c"), {}, ["value"]) is None


def test_a_join_is_read_natively_only_from_two_bare_sources_of_their_own(spark, tmp_path):
    """A join's sides are read by fss when each is a bare Parquet source of its own directory
    (neither inside the other, so a logged file tells its side) keyed by a type hashed here."""
    for name in ("l", "r", "l/nested"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"k": [1], "v": [1.5]}), tmp_path / name / "batch-00000.parquet")
    schema = spark.read.parquet(str(tmp_path / "r")).schema

    def stream(name: str) -> Any:
        return spark.readStream.schema(schema).parquet(str(tmp_path / name))

    def of(left: Any, right: Any) -> Any:
        return NativeFileSource.of_join(
            [left, right], str(tmp_path / "c"), {}, [["k"], ["k"]], lambda _side, t: t
        )

    source = of(stream("l"), stream("r"))
    assert source is not None
    assert [s.log.index for s in source.sides] == [0, 1]
    assert [s.log.root for s in source.sides] == [tmp_path / "l", tmp_path / "r"]
    same = stream("l")
    assert of(same, same) is None
    assert of(stream("l"), stream("l/nested")) is None
    assert of(stream("l"), stream("r").select("k", "v")) is None
    assert (
        NativeFileSource.of_join(
            [stream("l"), stream("r")],
            str(tmp_path / "c"),
            {"ferrospark.streaming.nativeScan": "false"},
            [["k"], ["k"]],
            lambda _side, t: t,
        )
        is None
    )


def test_a_file_with_other_columns_takes_sparks_path(spark, tmp_path):
    pq.write_table(pa.table({"user": ["a"], "v": pa.array([1], pa.int64())}), tmp_path / "good.parquet")
    pq.write_table(pa.table({"user": ["a"], "v": pa.array([1], pa.int32())}), tmp_path / "narrow.parquet")
    pq.write_table(pa.table({"user": ["a"]}), tmp_path / "missing.parquet")
    schema = spark.read.parquet(str(tmp_path / "good.parquet")).schema
    df = spark.readStream.schema(schema).parquet(str(tmp_path))
    source = NativeFileSource.of(df, str(tmp_path / "c"), {}, ["user"])
    assert source is not None
    assert source.readable(0, [str(tmp_path / "good.parquet")]) == 1
    assert source.readable(0, [str(tmp_path / "narrow.parquet")]) is None
    assert source.readable(0, [str(tmp_path / "missing.parquet")]) is None
    assert source.readable(0, []) == 0


@pytest.fixture(scope="module")
def either_path_oracle(spark, tmp_path_factory) -> dict[str, Any]:
    """Spark's own runs ``test_batches_taking_either_path_keep_each_key_in_its_partition``
    compares with, made once for both partition counts (Spark's answer does not depend on
    them, nor on which path fss's batches take) and side by side."""
    from test_streaming_spark import _spark_join, _spark_sessions, spark_runs

    work = tmp_path_factory.mktemp("either-path")
    return spark_runs(
        spark,
        {
            "sessions": functools.partial(_spark_sessions, spark, work / "sessions", 29),
            "join": functools.partial(_spark_join, spark, work / "join", 118, "full", right_batches=3),
        },
    )


@pytest.mark.parametrize("workload", ["sessions", "join"])
@pytest.mark.parametrize("partitions", [3, 7])
def test_batches_taking_either_path_keep_each_key_in_its_partition(
    spark, either_path_oracle, tmp_path, monkeypatch, partitions, workload
):
    """Every other batch read by fss, the rest through Spark's exchange: a key's sessions (or
    a join key's rows of both sides) stay in one state partition, so the output equals Spark's
    own. With 3 partitions on 2 cores each partition's task reads the batch itself; with 7 a
    stage reads it once and Spark's shuffle moves the pieces. The join's right side has fewer
    files, so its later batches have new files on the left alone."""
    from test_streaming_spark import _fss_join, compare_batches, fss_sessions

    real = NativeFileSource.rows
    taken: list[bool] = []

    def alternate(self: NativeFileSource, spark: Any, batch_id: int, n: int) -> Any:
        rows = real(self, spark, batch_id, n) if batch_id % 2 == 0 else None
        taken.append(rows is not None)
        return rows

    monkeypatch.setattr(NativeFileSource, "rows", alternate)
    was = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        if workload == "sessions":
            theirs, got, _ = fss_sessions(spark, tmp_path, 29, theirs=either_path_oracle["sessions"])
        else:
            got = {}
            theirs, _ = _fss_join(
                spark,
                tmp_path,
                118,
                "full",
                lambda df, b: got.__setitem__(b, df.toArrow()),
                right_batches=3,
                theirs=either_path_oracle["join"],
            )
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", was)
    assert set(taken) == {True, False}, taken
    compare_batches(theirs, got)
    assert {p.name for p in (tmp_path / "ckpt" / "state" / "0").iterdir() if p.name.isdigit()} == {
        str(p) for p in range(partitions)
    }


def test_source_log_names_the_batchs_files(tmp_path):
    """A batch's files: the source's log offsets after the previous batch and after this one
    (the query's offsets log) bound the log entries it took, plain or compacted."""
    ckpt = tmp_path / "ckpt"
    log = ckpt / "sources" / "1"
    log.mkdir(parents=True)
    (ckpt / "offsets").mkdir()
    for batch, offsets in enumerate([("-", 0), (0, 0), (1, 2), (1, 9), (1, 10), (1, 11)]):
        lines = ["v1", '{"batchWatermarkMs":0}']
        lines += ["-" if o == "-" else json.dumps({"logOffset": o}) for o in offsets]
        (ckpt / "offsets" / str(batch)).write_text("\n".join(lines) + "\n")
    (log / "0").write_text('v1\n{"path":"file:///data/a%20b.parquet","timestamp":1,"batchId":0}\n')
    (log / "1").write_text('v1\n{"path":"file:///data/c.parquet","timestamp":1,"batchId":1}\n')
    (log / "2").write_text('v1\n{"path":"file:///data/d.parquet","timestamp":1,"batchId":2}\n')
    (log / "9.compact").write_text(
        'v1\n{"path":"file:///data/old.parquet","timestamp":1,"batchId":8}\n'
        '{"path":"file:///data/new.parquet","timestamp":1,"batchId":9}\n'
    )
    (log / "10").write_text('v1\n{"path":"hdfs://nn/data/x.parquet","timestamp":1,"batchId":10}\n')
    source = FileSourceLog(ckpt, 1, Path("/data"))
    assert source.files(0) == ["/data/a b.parquet"]
    assert source.files(1) == []  # no new files from this source
    assert source.files(2) == ["/data/c.parquet", "/data/d.parquet"]
    assert source.files(3) is None  # offsets 3 to 8 are not in the log
    assert source.files(4) is None  # not a local file
    assert source.files(6) is None  # no offsets for the batch
    assert FileSourceLog(ckpt, 1, Path("/elsewhere")).files(0) is None
    assert FileSourceLog(ckpt, 0, Path("/data")).files(0) == []  # offset "-": no file yet
    # An offset whose entries are only in the compacted file that ends with it; a file in a
    # `key=value` directory (a partition column Spark adds from the path) and an entry this
    # reading does not understand take Spark's rows.
    ck2 = tmp_path / "ck2"
    log2 = ck2 / "sources" / "0"
    log2.mkdir(parents=True)
    (ck2 / "offsets").mkdir()
    for batch, offset in enumerate([8, 9, 10, 11]):
        (ck2 / "offsets" / str(batch)).write_text(f'v1\n{{}}\n{{"logOffset":{offset}}}\n')
    (log2 / "9.compact").write_text((log / "9.compact").read_text())
    (log2 / "10").write_text('v1\n{"path":"file:///data/day=1/y.parquet","timestamp":1,"batchId":10}\n')
    (log2 / "11").write_text('v1\n["not", "an entry"]\n')
    compacted = FileSourceLog(ck2, 0, Path("/data"))
    assert compacted.files(1) == ["/data/new.parquet"]
    assert compacted.files(2) is None
    assert compacted.files(3) is None


def _native_batches_taken(monkeypatch: Any) -> list[bool]:
    """Whether each batch from now on is read by fss's tasks (in order)."""
    real = NativeFileSource.rows
    taken: list[bool] = []

    def rows(self: NativeFileSource, spark: Any, batch_id: int, n: int) -> Any:
        got = real(self, spark, batch_id, n)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(NativeFileSource, "rows", rows)
    return taken


def _text_files(directory: Path, fmt: str, batches: list[pa.Table]) -> int:
    """Each batch as a CSV (with a header) or JSON-lines file, in order of modification time,
    with a malformed record in every other file; the records written."""
    import os

    directory.mkdir(parents=True)
    written = 0
    for b, table in enumerate(batches):
        lines = ["user,ts,v"] if fmt == "csv" else []
        for user, ts, v in zip(*(table.column(c).to_pylist() for c in ("user", "ts", "v")), strict=True):
            when = ts.strftime("%Y-%m-%d %H:%M:%S.%f")
            if fmt == "csv":
                lines.append(f"{'' if user is None else user},{when},{v}")
            else:
                lines.append(json.dumps({"user": user, "ts": when, "v": v}, ensure_ascii=False))
            written += 1
        if b % 2 == 1:
            # PERMISSIVE: the record's fields that do not parse are NULL (a NULL time, never late).
            lines.append("bo,not a time,oops" if fmt == "csv" else '{"user": "bo", "ts": 12, "v": "x"')
            written += 1
        path = directory / f"batch-{b:05d}.{fmt}"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.utime(path, (1_700_000_000 + b, 1_700_000_000 + b))
    return written


@pytest.mark.parametrize(
    ("fmt", "tz", "partitions"), [("csv", "UTC", 3), ("json", "UTC", 7), ("csv", "America/Los_Angeles", 3)]
)
def test_sessions_over_a_text_source_read_by_fss_match_sparks_own(
    spark, tmp_path, monkeypatch, fmt, tz, partitions
):
    """A CSV or JSON source read by fss's tasks with ferrospark's reader of the format (malformed
    records, unicode, NULLs, times read in the session's time zone), each task reading the
    batch (3 partitions) or a stage reading it and Spark's shuffle moving the pieces (7): the
    sessions equal Spark's own over the same stream, and the query's progress counts every
    record Spark's would."""
    was = (spark.conf.get("spark.sql.session.timeZone"), spark.conf.get("spark.sql.shuffle.partitions"))
    spark.conf.set("spark.sql.session.timeZone", tz)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        # Seven partitions: two files a batch, so that the batch's files are read by two tasks.
        _text_sessions(spark, tmp_path, monkeypatch, fmt, 2 if partitions == 7 else 1)
    finally:
        spark.conf.set("spark.sql.session.timeZone", was[0])
        spark.conf.set("spark.sql.shuffle.partitions", was[1])


def _text_sessions(spark: Any, tmp_path: Path, monkeypatch: Any, fmt: str, files_per_batch: int) -> None:
    from pyspark.sql import functions as F
    from test_streaming_spark import rows_of, session_input

    from ferrospark import spark as fss

    # Last files without records: fss's operator emits the sessions the watermark closed
    # with the next batch, where Spark runs a batch of no data for them.
    batches = session_input(47)
    empty = batches[0].schema.empty_table()
    written = _text_files(tmp_path / "in", fmt, [*batches, empty, empty])
    schema = "user STRING, ts TIMESTAMP, v BIGINT"

    def stream() -> Any:
        reader = spark.readStream.schema(schema).option("maxFilesPerTrigger", files_per_batch)
        if fmt == "csv":
            return reader.option("header", True).csv(str(tmp_path / "in"))
        return reader.option("mode", "PERMISSIVE").json(str(tmp_path / "in"))

    def run(writer: Any) -> Any:
        q = writer.trigger(availableNow=True).start()
        q.awaitTermination(600)
        assert q.exception() is None, q.exception()
        return q

    theirs: list[pa.Table] = []
    spark_q = run(
        stream()
        .withWatermark("ts", "5 minutes")
        .groupBy(F.session_window("ts", "2 minutes").alias("session_window"), "user")
        .agg(F.count("*").alias("n"), F.sum("v").alias("s"))
        .writeStream.outputMode("append")
        .option("checkpointLocation", str(tmp_path / "spark"))
        .foreachBatch(lambda df, _b: theirs.append(df.toArrow()))
    )
    taken = _native_batches_taken(monkeypatch)
    ours: list[pa.Table] = []
    q = run(
        fss.session_window_stream(
            stream(),
            "ts",
            "2 minutes",
            by="user",
            aggs=[fs.count("*").alias("n"), fs.sum("v").alias("s")],
            watermark=("ts", "5 minutes"),
            checkpoint=str(tmp_path / "fss"),
            on_batch=lambda df, _b: ours.append(df.toArrow()),
        )
    )
    assert taken and all(taken), taken
    # Spark ends with a batch of no data that only moves the watermark: the same sessions
    # come out, their last with fss's last batch.
    mine, spark_rows = pa.concat_tables(ours), pa.concat_tables(theirs)
    assert mine.column_names == spark_rows.column_names
    assert rows_of(mine) == rows_of(spark_rows) and spark_rows.num_rows > 0
    counted = sum(p["numInputRows"] for p in q.recentProgress)
    assert counted == sum(p["numInputRows"] for p in spark_q.recentProgress) == written


def test_parquet_sessions_in_a_session_zone_other_than_utc(spark, tmp_path, monkeypatch):
    """A Parquet source read by fss's tasks in a session whose zone is not UTC: its times are
    the same instants, and the sessions equal Spark's own."""
    from test_streaming_spark import compare_batches, fss_sessions

    taken = _native_batches_taken(monkeypatch)
    was = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        theirs, got, _ = fss_sessions(spark, tmp_path, 53)
    finally:
        spark.conf.set("spark.sql.session.timeZone", was)
    assert taken and all(taken), taken
    compare_batches(theirs, got)
