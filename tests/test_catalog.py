"""The catalog's own promises: persistence across sessions and processes, several processes
writing one metastore, a writer killed mid-INSERT, hostile names, DROP removing a managed
table's data and nothing else, plans that read a table's files afresh after each change."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs

WORKER = Path(__file__).resolve().parent / "scripts" / "catalog_worker.py"


def session(tmp_path: Path, metastore: str | None = None) -> fs.Session:
    url = f"sqlite://{tmp_path / metastore}" if metastore else "memory"
    return fs.Session(conf={"spark.sql.warehouse.dir": str(tmp_path / "wh")}, catalog=url)


def start_worker(cmd: str, root: Path, source: Path) -> subprocess.Popen:
    """`catalog_worker.py <cmd>` on the metastore and warehouse under `root`."""
    return subprocess.Popen(
        [sys.executable, str(WORKER), cmd, str(root / "m.db"), str(root / "wh"), str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def rows(df) -> list[tuple]:
    return [tuple(r) for r in df.collect()]


def test_a_sqlite_metastore_outlives_its_session(tmp_path):
    s = session(tmp_path, "m.db")
    s.sql("CREATE DATABASE sales COMMENT 'kept'")
    s.sql("CREATE TABLE sales.t (id INT, p STRING) USING parquet PARTITIONED BY (p) TBLPROPERTIES ('k'='v')")
    s.sql("INSERT INTO sales.t VALUES (1, 'a'), (2, 'b'), (3, NULL)")
    s.sql("ANALYZE TABLE sales.t COMPUTE STATISTICS")
    s.sql("CREATE VIEW sales.v AS SELECT count(*) AS n FROM sales.t")
    s.sql("CREATE FUNCTION sales.twice(x INT) RETURNS INT RETURN x * 2")
    del s
    again = session(tmp_path, "m.db")
    assert rows(again.sql("SELECT * FROM sales.t ORDER BY id")) == [(1, "a"), (2, "b"), (3, None)]
    assert rows(again.sql("SHOW PARTITIONS sales.t")) == [
        ("p=__HIVE_DEFAULT_PARTITION__",),
        ("p=a",),
        ("p=b",),
    ]
    assert rows(again.sql("SELECT * FROM sales.v")) == [(3,)]
    assert rows(again.sql("SELECT sales.twice(21)")) == [(42,)]
    stats = [r for r in rows(again.sql("DESCRIBE TABLE EXTENDED sales.t")) if r[0] == "Statistics"]
    assert stats and stats[0][1].endswith("bytes, 3 rows")
    assert again.catalog.getDatabase("sales").description == "kept"
    # The file is a Hive metastore a person can read.
    db = sqlite3.connect(tmp_path / "m.db")
    assert db.execute("SELECT TBL_NAME, TBL_TYPE FROM TBLS ORDER BY TBL_NAME").fetchall() == [
        ("t", "MANAGED_TABLE"),
        ("v", "VIRTUAL_VIEW"),
    ]
    assert db.execute("SELECT PKEY_NAME, PKEY_TYPE FROM PARTITION_KEYS").fetchall() == [("p", "string")]
    columns = (
        "SELECT C.COLUMN_NAME, C.TYPE_NAME FROM COLUMNS_V2 C JOIN SDS S ON S.CD_ID = C.CD_ID "
        "JOIN TBLS T ON T.SD_ID = S.SD_ID WHERE T.TBL_NAME = 't' ORDER BY C.INTEGER_IDX"
    )
    assert db.execute(columns).fetchall() == [("id", "int")]
    assert db.execute("SELECT count(*) FROM PARTITIONS").fetchone() == (3,)
    assert ("k", "v") in db.execute("SELECT PARAM_KEY, PARAM_VALUE FROM TABLE_PARAMS").fetchall()
    assert db.execute("SELECT FUNC_NAME, CLASS_NAME FROM FUNCS").fetchall() == [("twice", "x * 2")]


def test_four_processes_creating_tables_in_one_metastore_lose_nothing(tmp_path):
    metastore = str(tmp_path / "m.db")
    warehouse = str(tmp_path / "wh")
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "create", metastore, warehouse, str(w), "12"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    s = session(tmp_path, "m.db")
    names = sorted(r[1] for r in rows(s.sql("SHOW TABLES IN shared")))
    assert names == sorted(f"w{w}_{i}" for w in range(4) for i in range(12))
    for w in range(4):
        for i in (0, 11):
            assert rows(s.sql(f"SELECT v, p FROM shared.w{w}_{i}")) == [(w * 1000 + i, i)]
            assert rows(s.sql(f"SHOW PARTITIONS shared.w{w}_{i}")) == [(f"p={i}",)]


def test_a_writer_killed_mid_insert_leaves_the_table_unchanged(tmp_path):
    source = tmp_path / "source.parquet"
    n = 1_500_000
    pq.write_table(
        pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"row {i:09d} " * 8 for i in range(n)]}),
        source,
    )
    s = session(tmp_path, "m.db")
    s.sql("CREATE DATABASE shared")
    s.sql("CREATE TABLE shared.big (id BIGINT, s STRING) USING parquet")
    s.sql("INSERT INTO shared.big VALUES (1, 'before')")
    before = rows(s.sql("SELECT * FROM shared.big"))
    table_dir = tmp_path / "wh" / "shared.db" / "big"
    p = start_worker("insert", tmp_path, source)
    # Kill it once it is writing: its staging directory holds data.
    deadline = time.time() + 120
    staged = False
    while time.time() < deadline and p.poll() is None:
        staging = table_dir / "_temporary"
        if staging.exists() and any(f.stat().st_size > 0 for f in staging.rglob("*.parquet")):
            staged = True
            break
        time.sleep(0.005)
    assert staged, "the writer finished before it could be killed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    again = session(tmp_path, "m.db")
    assert rows(again.sql("SELECT * FROM shared.big")) == before
    assert rows(again.sql("SELECT count(*) FROM shared.big")) == [(1,)]
    # The next write removes nothing it should not, and succeeds.
    again.sql("INSERT INTO shared.big VALUES (2, 'after')")
    assert rows(again.sql("SELECT id FROM shared.big ORDER BY id")) == [(1,), (2,)]


def test_a_writer_killed_mid_commit_is_finished_or_undone_whole(tmp_path):
    """The writer is killed while it moves its files into place (its commit journal is
    written, some files are in, others not): the next reader finishes or undoes the write
    as the metastore decides, and sees the table as before or with every new row."""
    n, parts = 60_000, 3_000
    source = tmp_path / "source.parquet"
    pq.write_table(
        pa.table(
            {"id": pa.array(range(n), pa.int64()), "p": pa.array([i % parts for i in range(n)], pa.int32())}
        ),
        source,
    )
    half_seen = False
    for attempt in range(7):
        root = tmp_path / f"try{attempt}"
        root.mkdir()
        s = session(root, "m.db")
        s.sql("CREATE DATABASE shared")
        s.sql("CREATE TABLE shared.parts (id BIGINT, p INT) USING parquet PARTITIONED BY (p)")
        s.sql("INSERT INTO shared.parts VALUES (-1, -1)")
        table_dir = root / "wh" / "shared.db" / "parts"
        p = start_worker("insert_parts", root, source)
        deadline = time.time() + 120
        journal = None
        while time.time() < deadline and p.poll() is None and journal is None:
            staging = table_dir / "_temporary"
            if staging.exists():
                journal = next(staging.glob("*/_JOURNAL"), None)
        if journal is None:
            p.wait(timeout=60)
            continue
        # The moves take tens of milliseconds: land inside them, later on each try.
        time.sleep(0.002 * 2**attempt)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        moved = sum(1 for d in table_dir.glob("p=*") if d.name != "p=-1" and any(d.glob("*.parquet")))
        half_seen |= 0 < moved < parts
        again = session(root, "m.db")
        count = rows(again.sql("SELECT count(*) FROM shared.parts"))[0][0]
        shown = len(rows(again.sql("SHOW PARTITIONS shared.parts")))
        assert (count, shown) in [(1, 1), (n + 1, parts + 1)], (count, shown, moved)
        assert not (table_dir / "_temporary").exists()
        # The table takes further writes.
        again.sql("INSERT INTO shared.parts VALUES (-2, -1)")
        assert rows(again.sql("SELECT count(*) FROM shared.parts WHERE p = -1")) == [(2,)]
        if half_seen:
            break
    assert half_seen, "no kill landed while files were being moved"


def test_a_dead_writers_half_moved_commit_is_undone_unless_recorded(tmp_path):
    """The state a writer killed mid-commit leaves, made by hand: a journal, one file moved
    in, one still staged. Unrecorded by the metastore, the read undoes it."""
    s = session(tmp_path, "m.db")
    s.sql("CREATE TABLE t (id INT, p INT) USING parquet PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 1)")
    loc = tmp_path / "wh" / "t"
    staging = loc / "_temporary" / "job-dead"
    (staging / "p=2").mkdir(parents=True)
    (loc / "p=3").mkdir()
    pq.write_table(pa.table({"id": pa.array([2], pa.int32())}), staging / "p=2" / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([3], pa.int32())}), loc / "p=3" / "b.parquet")
    (staging / "_WRITER").write_text("4194305")
    (staging / "_JOURNAL").write_text(
        '{"job": "job-dead", "moved": ["p=2/a.parquet", "p=3/b.parquet"], "dropped": [], "creates_table": false}'
    )
    s.sql("ALTER TABLE t ADD PARTITION (p=3)")
    fresh = session(tmp_path, "m.db")
    assert rows(fresh.sql("SELECT id, p FROM t ORDER BY id")) == [(1, 1)]
    assert not (loc / "p=3" / "b.parquet").exists() and not (loc / "_temporary").exists()


def test_drop_removes_a_managed_tables_data_and_nothing_else(tmp_path):
    s = session(tmp_path)
    s.sql("CREATE DATABASE d")
    s.sql("CREATE TABLE d.t (a INT, p INT) USING parquet PARTITIONED BY (p)")
    s.sql("INSERT INTO d.t VALUES (1, 1), (2, 2)")
    s.sql("CREATE TABLE d.t2 USING parquet AS SELECT 1 AS a")
    ext = tmp_path / "ext"
    ext.mkdir()
    pq.write_table(pa.table({"a": [7]}), ext / "x.parquet")
    s.sql(f"CREATE TABLE d.e USING parquet LOCATION '{ext}'")
    outside = tmp_path / "wh" / "d.db" / "notes.txt"
    outside.write_text("mine")
    # A link where a managed table would go is refused, not followed.
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.parquet").write_bytes(b"precious")
    os.symlink(target, tmp_path / "wh" / "d.db" / "linked")
    with pytest.raises(fs.AnalysisError, match="symbolic link"):
        s.sql("CREATE TABLE d.linked (a INT) USING parquet")
    s.sql("DROP TABLE d.t")
    assert not (tmp_path / "wh" / "d.db" / "t").exists()
    assert (tmp_path / "wh" / "d.db" / "t2").exists()
    s.sql("DROP TABLE d.e")
    assert (ext / "x.parquet").exists(), "an external table's files stay"
    s.sql("ALTER TABLE d.t2 RENAME TO t3")
    assert rows(s.sql("SELECT * FROM d.t3")) == [(1,)]
    s.sql("DROP DATABASE d CASCADE")
    assert outside.read_text() == "mine", "a file the catalog did not write stays"
    assert (target / "keep.parquet").read_bytes() == b"precious"


@pytest.mark.parametrize(
    "name",
    ["`drop table x; --`", "`a.b`", "`../escape`", "`a/b`", "`x'y`", "`日本`x", "``"],
)
def test_hostile_names_are_refused_cleanly(tmp_path, name):
    s = session(tmp_path, "m.db")
    with pytest.raises(fs.AnalysisError):
        s.sql(f"CREATE TABLE {name} (a INT) USING parquet")
    with pytest.raises(fs.AnalysisError):
        s.sql(f"CREATE DATABASE {name}")
    # Nothing was written and the session goes on.
    assert rows(s.sql("SHOW TABLES")) == []
    assert not any((tmp_path / "wh").rglob("*escape*"))
    s.sql("CREATE TABLE ok (a INT) USING parquet")
    assert rows(s.sql("SHOW TABLES")) == [("default", "ok", False)]


def test_hostile_text_is_stored_verbatim(tmp_path):
    s = session(tmp_path, "m.db")
    evil = "x'); DROP TABLE TBLS; --"
    s.sql(
        "CREATE TABLE t (a INT COMMENT 'x\\'); DROP TABLE TBLS; --') USING parquet "
        "TBLPROPERTIES ('k' = 'x\\'); DROP TABLE TBLS; --') COMMENT 'c'"
    )
    assert rows(s.sql("SHOW TBLPROPERTIES t ('k')")) == [("k", evil)]
    assert s.catalog.listColumns("t")[0].description == evil
    again = session(tmp_path, "m.db")
    assert rows(again.sql("SHOW TABLES")) == [("default", "t", False)]


def test_a_metastore_that_is_not_one_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a sqlite file" * 100)
    with pytest.raises(fs.MetastoreError, match="bad.db"):
        fs.Session(catalog=f"sqlite://{bad}")
    with pytest.raises(fs.ConfigError, match="sqlite"):
        fs.Session(catalog="postgres://x")


def test_reads_follow_every_change_to_a_table(tmp_path):
    s = session(tmp_path)
    s.sql("CREATE TABLE t (a INT) USING parquet")
    assert rows(s.sql("SELECT count(*) FROM t")) == [(0,)]
    s.sql("INSERT INTO t VALUES (1), (2)")
    assert rows(s.sql("SELECT count(*) FROM t")) == [(2,)]
    df = s.table("t")
    s.sql("INSERT OVERWRITE t VALUES (5)")
    assert rows(s.table("t")) == [(5,)]
    s.sql("TRUNCATE TABLE t")
    assert rows(s.sql("SELECT count(*) FROM t")) == [(0,)]
    assert df.columns == ["a"]


def test_analyzed_statistics_feed_join_selection(tmp_path):
    """The planner sizes an analyzed table by its statistics, as Spark does: files added
    behind the catalog's back (no ANALYZE since) do not change the join it picks."""
    s = fs.Session(
        conf={
            "spark.sql.warehouse.dir": str(tmp_path / "wh"),
            "spark.sql.autoBroadcastJoinThreshold": "20000",
        }
    )
    dim = tmp_path / "dim"
    dim.mkdir()
    pq.write_table(pa.table({"k": [1, 2], "name": ["one", "two"]}), dim / "a.parquet")
    s.sql(f"CREATE TABLE dim USING parquet LOCATION '{dim}'")
    fact = tmp_path / "fact"
    fact.mkdir()
    pq.write_table(
        pa.table({"id": list(range(30_000)), "k": [i % 7 for i in range(30_000)]}), fact / "f.parquet"
    )
    s.sql(f"CREATE TABLE fact USING parquet LOCATION '{fact}'")
    q = "EXPLAIN SELECT * FROM fact JOIN dim ON fact.k = dim.k"
    s.sql("ANALYZE TABLE dim COMPUTE STATISTICS")
    big = pa.table({"k": list(range(20_000)), "name": [f"n{i}" for i in range(20_000)]})
    pq.write_table(big, dim / "b.parquet")
    s.sql("REFRESH TABLE dim")
    assert (dim / "b.parquet").stat().st_size > 20_000
    analyzed = s.sql(q).collect()[0][0]
    assert "BroadcastHashJoin" in analyzed and "BuildRight" in analyzed, analyzed
    # Analyzed again, the table is too large to broadcast.
    s.sql("ANALYZE TABLE dim COMPUTE STATISTICS")
    assert "BroadcastHashJoin" not in s.sql(q).collect()[0][0]


def test_new_sessions_share_tables_and_global_views_not_temp_views(tmp_path):
    s = session(tmp_path)
    s.sql("CREATE TABLE t USING parquet AS SELECT 1 AS a")
    s.sql("CREATE TEMPORARY VIEW tv AS SELECT 2 AS b")
    s.sql("CREATE GLOBAL TEMPORARY VIEW gv AS SELECT 3 AS c")
    s.sql("CREATE DATABASE other")
    s.sql("USE other")
    n = s.newSession()
    assert n.catalog.currentDatabase() == "default"
    assert rows(n.sql("SELECT * FROM t")) == [(1,)]
    assert rows(n.sql("SELECT * FROM global_temp.gv")) == [(3,)]
    with pytest.raises(fs.AnalysisError, match="TABLE_OR_VIEW_NOT_FOUND"):
        n.sql("SELECT * FROM tv")
    # Changing a setting keeps the catalog: views and the current database stay.
    s.set("ferrospark.batch.size", "1024")
    assert rows(s.sql("SELECT * FROM tv")) == [(2,)]
    assert s.catalog.currentDatabase() == "other"


@pytest.mark.parametrize("metastore", [None, "m.db"])
def test_partition_filters_prune_in_the_metastore_before_listing(tmp_path, metastore):
    """A filter on partition columns decides which partitions are read from the catalog's
    values: a corrupt file in a partition the filter drops is never opened, the plan says
    how many partitions it reads, and switching the rule off reads them all with the same
    answer (and then meets the corrupt file)."""
    s = session(tmp_path, metastore)
    s.sql("CREATE TABLE pt (id INT, v STRING, p INT, q STRING) USING parquet PARTITIONED BY (p, q)")
    s.createDataFrame(pa.table({"id": pa.array(range(400), pa.int32())})).createOrReplaceTempView("src")
    s.sql(
        "INSERT INTO pt SELECT id, CAST(id AS STRING), id % 40, CASE WHEN id % 3 = 0 THEN NULL "
        "ELSE CAST(id % 3 AS STRING) END FROM src"
    )
    parts = rows(s.sql("SHOW PARTITIONS pt"))
    assert len(parts) == 120
    q = "SELECT count(*), sum(id) FROM pt WHERE p = 7 AND q = '1'"
    want = [
        (
            sum(1 for i in range(400) if i % 40 == 7 and i % 3 == 1),
            sum(i for i in range(400) if i % 40 == 7 and i % 3 == 1),
        )
    ]
    assert rows(s.sql(q)) == want
    plan = s.sql("EXPLAIN " + q).collect()[0][0]
    assert "PartitionsRead: 1" in plan, plan
    nulls = "SELECT count(*) FROM pt WHERE q IS NULL AND p < 10"
    assert rows(s.sql(nulls)) == [(sum(1 for i in range(400) if i % 3 == 0 and i % 40 < 10),)]
    assert "PartitionsRead: 10" in s.sql("EXPLAIN " + nulls).collect()[0][0]
    # A file no reader can open, in a partition the filter leaves out.
    bad = tmp_path / "wh" / "pt" / "p=8" / "q=2"
    assert bad.is_dir(), list((tmp_path / "wh" / "pt").iterdir())
    (bad / "part-corrupt.parquet").write_bytes(b"not parquet at all")
    assert rows(s.sql(q)) == want
    s.set("spark.sql.optimizer.excludedRules", "PruneFileSourcePartitions")
    with pytest.raises(fs.FerroError, match="part-corrupt.parquet"):
        s.sql(q).collect()
    (bad / "part-corrupt.parquet").unlink()
    assert rows(s.sql(q)) == want
    assert "PartitionsRead: 120" in s.sql("EXPLAIN " + q).collect()[0][0]


def test_a_partition_located_outside_the_table_is_read(tmp_path):
    s = session(tmp_path, "m.db")
    s.sql("CREATE TABLE pt (id INT, p STRING) USING parquet PARTITIONED BY (p)")
    s.sql("INSERT INTO pt VALUES (1, 'in')")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pq.write_table(pa.table({"id": pa.array([7, 8], pa.int32())}), elsewhere / "f.parquet")
    s.sql(f"ALTER TABLE pt ADD PARTITION (p='out') LOCATION '{elsewhere}'")
    assert rows(s.sql("SELECT id, p FROM pt ORDER BY id")) == [(1, "in"), (7, "out"), (8, "out")]
    assert rows(s.sql("SELECT id FROM pt WHERE p = 'out' ORDER BY id")) == [(7,), (8,)]


def test_analyzed_column_statistics_feed_the_planners_estimates(tmp_path):
    """A filter the files' footers cannot judge (equality on a DOUBLE) is estimated at half
    its rows; after `ANALYZE ... FOR COLUMNS` the column's distinct count says how few rows
    it keeps, and the in-process hash join builds on that side instead."""
    s = fs.Session(
        conf={
            "spark.sql.warehouse.dir": str(tmp_path / "wh"),
            "spark.sql.autoBroadcastJoinThreshold": "-1",
        }
    )
    n = 40_000
    for name, rows in (("f", n), ("d", n // 4)):
        s.createDataFrame(
            pa.table(
                {
                    "k": pa.array([i % 5000 for i in range(rows)], pa.int32()),
                    "y": [float(i % 20_000) + 0.5 for i in range(rows)],
                    "pad": [f"row {i}" for i in range(rows)],
                }
            )
        ).write.saveAsTable(name)
    q = "EXPLAIN SELECT f.pad, d.pad FROM f JOIN d ON f.k = d.k WHERE f.y = 3.5 AND d.y < 1e9"
    before = s.sql(q).collect()[0][0]
    s.sql("ANALYZE TABLE f COMPUTE STATISTICS FOR COLUMNS y")
    after = s.sql(q).collect()[0][0]
    assert "BuildRight" in before, before
    assert "BuildLeft" in after, after
    want = s.sql("SELECT count(*) FROM f JOIN d ON f.k = d.k WHERE f.y = 3.5").collect()
    f_keys = [i % 5000 for i in range(n) if i % 20_000 == 3]
    d_keys = [i % 5000 for i in range(n // 4)]
    assert [tuple(r) for r in want] == [(sum(d_keys.count(k) for k in f_keys),)]


def test_a_dynamic_partition_overwrite_replaces_only_the_partitions_written(tmp_path):
    s = session(tmp_path, "m.db")
    s.sql("CREATE TABLE t (id INT, p INT) USING parquet PARTITIONED BY (p)")
    s.sql("INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)")
    s.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    s.sql("INSERT OVERWRITE t VALUES (10, 1), (20, 2)")
    assert rows(s.sql("SELECT id, p FROM t ORDER BY p")) == [(10, 1), (20, 2), (3, 3)]
    assert len(rows(s.sql("SHOW PARTITIONS t"))) == 3
