"""The session catalog and its commands against PySpark: the same DDL / DML scripts through
both, every statement's output (column names, types, nullability, rows, error class)
compared; DataFrame writes read back by both engines."""

from __future__ import annotations

import re
from decimal import Decimal

import pyarrow as pa
import pytest

import ferrospark as fs
from helpers import arrow_rows, norm_float_any, spark_rows


@pytest.fixture
def spark(spark):
    """A SparkSession of its own over the shared SparkContext (the same catalog and
    configuration): SHOW TABLES / listTables list temporary views, and other test files
    register theirs on the shared session (TPC-H's tables, ...) in whatever order they run."""
    return spark.newSession()


# Cells that cannot agree: when and by what the table was made, sizes of files two Parquet
# writers wrote.
VOLATILE = {"Created Time", "Created By", "Owner"}


def _arrow_type_name(t: pa.DataType) -> str:
    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "bigint"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz else "timestamp_ntz"
    return str(t)


def _error_class(e: Exception) -> str:
    m = re.search(r"\[([A-Z_]+(?:\.[A-Z_]+)?)\]", str(e))
    return m.group(1) if m else type(e).__name__


def _normalize(rows: list[tuple], roots: list[str]) -> list[tuple]:
    out = []
    for r in rows:
        if r and r[0] in VOLATILE:
            continue
        cells = []
        for v in r:
            if isinstance(v, str):
                for root in roots:
                    v = v.replace(root, "<root>")
                v = re.sub(r"^\d+ bytes", "<n> bytes", v)
            cells.append(v)
        out.append(tuple(cells))
    return out


def _nullable(stmt: str, nullable: bool) -> bool | None:
    # ferrospark reports a computed column of a query as nullable unless it is a column or
    # a literal (it does not derive nullability through casts and arithmetic as Spark does):
    # queries' nullability is not compared, commands' is.
    return None if stmt.lstrip().upper().startswith("SELECT") else nullable


def run_fs(s: fs.Session, stmt: str, root: str) -> tuple:
    try:
        t = s.sql(stmt).toArrow()
    except fs.FerroError as e:
        return ("error", _error_class(e))
    schema = [(f.name, _arrow_type_name(f.type), _nullable(stmt, f.nullable)) for f in t.schema]
    return ("ok", schema, _normalize(arrow_rows(t), [root]))


def run_spark(spark, stmt: str, root: str) -> tuple:
    from pyspark.errors import PySparkException

    try:
        df = spark.sql(stmt)
        schema = [(f.name, f.dataType.simpleString(), _nullable(stmt, f.nullable)) for f in df.schema.fields]
        rows = spark_rows(df)
    except PySparkException as e:
        return ("error", _error_class(e))
    return ("ok", schema, _normalize(rows, [root, "file:" + root]))


def compare_script(spark, tmp_path, script: list[str], db: str) -> None:
    s = fs.Session(conf={"spark.sql.warehouse.dir": str(tmp_path / "fs_wh")})
    fs_root = str(tmp_path / "fs")
    spark_root = str(tmp_path / "spark")
    mismatches = []
    try:
        for stmt in script:
            got = run_fs(s, stmt.format(db=db, root=fs_root), fs_root)
            want = run_spark(spark, stmt.format(db=db, root=spark_root), spark_root)
            if got != want:
                mismatches.append(f"{stmt}\n  ferrospark: {got}\n  pyspark:    {want}")
    finally:
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
        spark.catalog.dropTempView("tv")
    assert not mismatches, "\n".join(mismatches)


TABLE_SCRIPT = [
    "CREATE DATABASE {db} COMMENT 'the db' LOCATION '{root}/db' WITH DBPROPERTIES ('k'='v')",
    "CREATE DATABASE {db}",
    "CREATE DATABASE IF NOT EXISTS {db}",
    "DESCRIBE DATABASE EXTENDED {db}",
    "ALTER DATABASE {db} SET DBPROPERTIES ('k2'='v2')",
    "DESCRIBE DATABASE EXTENDED {db}",
    "SHOW DATABASES LIKE '{db}'",
    "USE {db}",
    "CREATE TABLE t (id INT, s STRING, d DOUBLE, m DECIMAL(12,3), day DATE, p STRING) USING parquet PARTITIONED BY (p) TBLPROPERTIES ('a'='1')",
    "INSERT INTO t VALUES (1, 'héllo', 1.5, 1.25, DATE'2024-01-01', 'a'), "
    "(2, NULL, CAST('NaN' AS DOUBLE), NULL, NULL, 'a b'), (3, '日本', -0.0, -3.5, DATE'1970-01-01', NULL), "
    "(4, '', 2.0, 0.001, DATE'2024-02-29', 'x/y'), (4, '', 2.0, 0.001, DATE'2024-02-29', 'x/y')",
    "SELECT * FROM t ORDER BY id, s",
    "SHOW PARTITIONS t",
    "INSERT INTO t PARTITION (p='z') SELECT id + 10, s, d, m, day FROM t WHERE id < 3",
    "INSERT OVERWRITE t PARTITION (p='a') VALUES (100, 'new', 0.0, 0.0, NULL)",
    "SELECT p, count(*), sum(id) FROM t GROUP BY p ORDER BY p",
    "SELECT * FROM t WHERE p = 'z' ORDER BY id",
    "SHOW PARTITIONS t",
    "SHOW PARTITIONS t PARTITION (p='z')",
    "ALTER TABLE t ADD PARTITION (p='empty')",
    "ALTER TABLE t ADD PARTITION (p='empty')",
    "SHOW PARTITIONS t",
    "ALTER TABLE t DROP PARTITION (p='empty')",
    "ALTER TABLE t DROP PARTITION (p='empty')",
    "ALTER TABLE t DROP IF EXISTS PARTITION (p='empty')",
    "SELECT count(*) FROM t",
    "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS id, d",
    "DESCRIBE EXTENDED t id",
    "DESCRIBE EXTENDED t s",
    "DESCRIBE TABLE EXTENDED t",
    "SHOW COLUMNS IN t",
    "SHOW TBLPROPERTIES t",
    "SHOW TBLPROPERTIES t ('a')",
    "SHOW CREATE TABLE t",
    "CREATE TABLE c USING parquet PARTITIONED BY (k) AS SELECT id, s, id % 2 AS k FROM t",
    "SELECT * FROM c ORDER BY id, s",
    "DESCRIBE c",
    "SHOW PARTITIONS c",
    "CREATE TABLE c AS SELECT 1 AS x",
    "CREATE TABLE IF NOT EXISTS c AS SELECT 1 AS x",
    "INSERT OVERWRITE c SELECT 7, 'seven', 1",
    "SELECT * FROM c",
    "SHOW PARTITIONS c",
    "ALTER TABLE c SET TBLPROPERTIES ('x'='1', 'y'='2')",
    "ALTER TABLE c UNSET TBLPROPERTIES ('x')",
    "ALTER TABLE c UNSET TBLPROPERTIES ('nope')",
    "ALTER TABLE c UNSET TBLPROPERTIES IF EXISTS ('nope')",
    "SHOW TBLPROPERTIES c",
    "ALTER TABLE c ADD COLUMNS (extra STRING COMMENT 'more')",
    "DESCRIBE c",
    "SELECT * FROM c",
    "ALTER TABLE c RENAME TO c2",
    "SHOW TABLES LIKE 'c*|t'",
    "CREATE TABLE u (a BIGINT, b STRING) USING parquet",
    "INSERT INTO u SELECT id, s FROM t WHERE id < 3",
    "INSERT INTO u (b, a) VALUES ('named', 9)",
    "INSERT OVERWRITE u SELECT 5, 'five'",
    "INSERT INTO u SELECT 'x', 1",
    "INSERT INTO u VALUES (1)",
    "INSERT INTO u VALUES (1, 2, 3)",
    "SELECT * FROM u ORDER BY a",
    "SHOW PARTITIONS u",
    "CREATE VIEW v AS SELECT p, count(*) AS n FROM t GROUP BY p",
    "SELECT * FROM v ORDER BY p",
    "DESCRIBE EXTENDED v",
    "SHOW CREATE TABLE v",
    "SHOW VIEWS",
    # A column list names the query's columns by position (the text keeps its own names).
    "CREATE VIEW vl(a1, a2) AS VALUES (0, 'x'), (1, NULL)",
    "SELECT * FROM vl ORDER BY a1",
    "CREATE OR REPLACE VIEW vl(k, total) AS SELECT p, count(*) FROM t GROUP BY p",
    "SELECT total, k FROM vl ORDER BY k",
    "DROP VIEW vl",
    # Names Spark generates (`upper(s)`) are refused in a permanent view, even through `*`.
    "CREATE VIEW vg AS SELECT * FROM (SELECT upper(s) FROM t) q",
    "CREATE VIEW vg AS SELECT s, 1, upper(s) AS u FROM t",
    "SELECT * FROM vg ORDER BY s",
    "DROP VIEW vg",
    "CREATE TEMPORARY VIEW tv AS SELECT 1 AS one",
    "CREATE TEMPORARY VIEW tv AS SELECT 2 AS two",
    "SHOW TABLES",
    "DROP TABLE v",
    "DROP VIEW v",
    "DROP VIEW u",
    "DROP TABLE c2",
    "SHOW TABLES",
    "DROP TABLE nosuch",
    "DROP TABLE IF EXISTS nosuch",
    "CREATE TABLE t (a INT) USING parquet",
    "CREATE TABLE IF NOT EXISTS t (a INT) USING parquet",
    "CREATE TABLE `we.ird` (a INT) USING parquet",
    "CREATE TABLE `drop table x; --` (a INT) USING parquet",
    "CREATE TABLE bad (a INT) USING parquet PARTITIONED BY (zz)",
    "SELECT * FROM nosuch",
    "SHOW TABLES IN nosuchdb",
    "USE nosuchdb",
    "DROP DATABASE {db}",
    "USE default",
    "DROP DATABASE {db} CASCADE",
    "SHOW DATABASES LIKE '{db}'",
]


def test_table_commands_match_pyspark(spark, tmp_path):
    compare_script(spark, tmp_path, TABLE_SCRIPT, "fs_cat_tables")


FUNCTION_SCRIPT = [
    "CREATE DATABASE {db} LOCATION '{root}/db'",
    "USE {db}",
    "CREATE TEMPORARY FUNCTION plus1(x INT) RETURNS INT RETURN x + 1",
    "SELECT plus1(41)",
    "SELECT plus1(41) AS v, plus1(plus1(1)) AS w",
    "CREATE FUNCTION twice(x INT) RETURNS INT RETURN x * 2",
    "SELECT twice(21)",
    "SELECT twice(id) FROM VALUES (1), (NULL), (3) AS t(id) ORDER BY 1",
    "SHOW USER FUNCTIONS",
    "SHOW FUNCTIONS LIKE 'twi*'",
    "DESCRIBE FUNCTION twice",
    "CREATE FUNCTION twice(x INT) RETURNS INT RETURN x * 3",
    "DROP FUNCTION twice",
    "SHOW USER FUNCTIONS",
    "DROP TEMPORARY FUNCTION plus1",
    "SHOW USER FUNCTIONS",
    "USE default",
    "DROP DATABASE {db} CASCADE",
]


def test_sql_functions_match_pyspark(spark, tmp_path):
    compare_script(spark, tmp_path, FUNCTION_SCRIPT, "fs_cat_functions")


PRUNING_SCRIPT = [
    "CREATE DATABASE {db} LOCATION '{root}/db'",
    "USE {db}",
    "CREATE TABLE pt (id INT, s STRING, k INT, d DATE, tag STRING) USING parquet PARTITIONED BY (k, d, tag)",
    "INSERT INTO pt VALUES (1, 'a', 1, DATE'2024-01-01', 'x'), (2, NULL, 2, DATE'2024-01-02', '01'), "
    "(3, '日本', NULL, DATE'2024-01-01', NULL), (4, '', -1, NULL, 'x y'), (5, 'e', 10, DATE'2024-03-01', '01'), "
    "(6, 'f', 10, DATE'2024-03-01', '01')",
    "SELECT * FROM pt ORDER BY id",
    "SELECT * FROM pt WHERE k = 2 ORDER BY id",
    "SELECT id, tag FROM pt WHERE k > 1 AND tag = '01' ORDER BY id",
    "SELECT id FROM pt WHERE k IS NULL",
    "SELECT id FROM pt WHERE d >= DATE'2024-01-02' OR tag IS NULL ORDER BY id",
    "SELECT id FROM pt WHERE d IS NULL",
    "SELECT id FROM pt WHERE k = 2 OR id = 1 ORDER BY id",
    "SELECT count(*) FROM pt WHERE tag = '01' AND k + 1 = 11",
    "SELECT id FROM pt WHERE k = 99",
    "SELECT count(*), sum(id) FROM pt WHERE k = 99",
    "SELECT tag, count(*) FROM pt WHERE tag LIKE '0%' GROUP BY tag",
    "SELECT id FROM pt WHERE k IN (1, 10) AND s <> 'e' ORDER BY id",
    "ALTER TABLE pt ADD PARTITION (k=7, d='2024-05-05', tag='new')",
    "SELECT count(*) FROM pt WHERE k = 7",
    "SELECT a.id, b.id FROM pt a JOIN pt b ON a.k = b.k WHERE a.k = 10 ORDER BY 1, 2",
    "ALTER TABLE pt ADD COLUMNS (extra STRING)",
    "SELECT id, extra FROM pt WHERE k = 1",
    "SELECT id FROM pt WHERE extra IS NULL AND k = 10 ORDER BY id",
    "SELECT extra FROM pt WHERE k = 10",
    "SELECT count(*) FROM pt WHERE extra = 'x'",
    "ALTER TABLE pt DROP PARTITION (k=2, d='2024-01-02', tag='01')",
    "SELECT id FROM pt ORDER BY id",
    "SELECT id FROM pt WHERE k = 2",
    "ALTER TABLE pt ADD PARTITION (k=50, d='2024-06-01', tag='ext') LOCATION '{root}/elsewhere'",
    "SELECT id, s, k, tag FROM pt WHERE k = 50 ORDER BY id",
    "SELECT count(*) FROM pt",
    "DROP TABLE pt",
    "USE default",
    "DROP DATABASE {db} CASCADE",
]


def test_partition_pruning_matches_pyspark(spark, tmp_path):
    """Filters on partition columns of several types (NULL partitions, a string that looks
    like a number, dates), mixed with data filters, after ADD COLUMNS, and a partition
    located outside the table."""
    import pyarrow.parquet as pq

    for side in ("fs", "spark"):
        (tmp_path / side / "elsewhere").mkdir(parents=True)
        pq.write_table(
            pa.table({"id": pa.array([70, 71], pa.int32()), "s": ["out", None]}),
            tmp_path / side / "elsewhere" / "f.parquet",
        )
    compare_script(spark, tmp_path, PRUNING_SCRIPT, "fs_cat_pruning")


EXTERNAL_SCRIPT = [
    "CREATE DATABASE {db} LOCATION '{root}/db'",
    "CREATE TABLE {db}.ext (a INT, b STRING) USING csv OPTIONS (header 'true') LOCATION '{root}/csv'",
    "SELECT * FROM {db}.ext ORDER BY a",
    "DESCRIBE TABLE EXTENDED {db}.ext",
    "SHOW CREATE TABLE {db}.ext",
    "CREATE TABLE {db}.pq USING parquet LOCATION '{root}/pq'",
    "SELECT * FROM {db}.pq ORDER BY k",
    "DESCRIBE {db}.pq",
    "ALTER TABLE {db}.pq RECOVER PARTITIONS",
    "SHOW PARTITIONS {db}.pq",
    "DROP TABLE {db}.ext",
    "DROP TABLE {db}.pq",
    "DROP DATABASE {db} CASCADE",
]


def test_external_tables_match_pyspark_and_keep_their_files(spark, tmp_path):
    import pyarrow.parquet as pq

    for side in ("fs", "spark"):
        (tmp_path / side / "csv").mkdir(parents=True)
        (tmp_path / side / "csv" / "data.csv").write_text("a,b\n2,two\n1,one\n3,\n")
        for part in ("1", "2"):
            d = tmp_path / side / "pq" / f"part={part}"
            d.mkdir(parents=True)
            pq.write_table(pa.table({"k": [int(part) * 10, None], "v": ["x", "日本"]}), d / "f.parquet")
    compare_script(spark, tmp_path, EXTERNAL_SCRIPT, "fs_cat_external")
    # DROP of an external table leaves its files.
    assert (tmp_path / "fs" / "csv" / "data.csv").exists()
    assert (tmp_path / "fs" / "pq" / "part=1" / "f.parquet").exists()


def test_dataframe_writes_match_pyspark(spark, tmp_path):
    """saveAsTable in every mode, insertInto, write.parquet; each engine reads the other's
    files."""
    db = "fs_cat_writes"
    s = fs.Session(conf={"spark.sql.warehouse.dir": str(tmp_path / "fs_wh")})
    data = pa.table(
        {
            "id": pa.array([1, 2, None, 4], pa.int32()),
            "s": ["a", None, "日本", ""],
            "m": pa.array([Decimal("1.50"), None, Decimal("-2.25"), Decimal("0")], pa.decimal128(10, 2)),
            "p": ["x", "y", "x", None],
        }
    )
    try:
        for side, sql in (("fs", s.sql), ("spark", spark.sql)):
            sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / side / 'db'}'")
        fdf = s.createDataFrame(data)
        sdf = spark.createDataFrame(data.to_pandas())
        outcomes = {}
        for side, df, sess in (("fs", fdf, s), ("spark", sdf, spark)):
            got = []
            name = f"{db}.sv"
            df.write.saveAsTable(name)
            for mode in ("error", "append", "overwrite", "ignore"):
                try:
                    df.write.mode(mode).saveAsTable(name)
                    got.append((mode, "ok", sess.table(name).count()))
                except Exception as e:  # both engines' errors are compared by class
                    got.append((mode, _error_class(e)))
            df.select("id", "s", "m", "p").write.insertInto(name)
            got.append(("insertInto", sess.table(name).count()))
            df.write.insertInto(name, overwrite=True)
            got.append(("insertInto overwrite", sess.table(name).count()))
            try:
                df.select("s", "id", "m", "p").write.insertInto(name)
                got.append(("swapped", "ok"))
            except Exception as e:
                got.append(("swapped", _error_class(e)))
            df.write.partitionBy("p").saveAsTable(f"{db}.sp")
            got.append(("partitions", [r[0] for r in sess.sql(f"SHOW PARTITIONS {db}.sp").collect()]))
            got.append(("columns", [c.name for c in sess.catalog.listColumns(f"{db}.sp")]))
            got.append(("partition flags", [c.isPartition for c in sess.catalog.listColumns(f"{db}.sp")]))
            df.write.mode("overwrite").partitionBy("p").parquet(str(tmp_path / side / "files"))
            outcomes[side] = got
        assert outcomes["fs"] == outcomes["spark"]
        # Each engine reads the other's files, with the same rows.
        for writer, reader_name in (("fs", "spark"), ("spark", "fs")):
            path = str(tmp_path / writer / "files")
            if reader_name == "spark":
                rows = spark_rows(spark.read.parquet(path).select("id", "s", "m", "p"))
            else:
                rows = arrow_rows(s.read.parquet(path).select("id", "s", "m", "p").toArrow())
            expected = arrow_rows(data)
            assert sorted(rows, key=repr) == sorted(expected, key=repr), (writer, reader_name)
        assert sorted(spark_rows(spark.read.parquet(str(tmp_path / "fs" / "db" / "sp"))), key=repr) == sorted(
            spark_rows(spark.table(f"{db}.sp").select("id", "s", "m", "p")), key=repr
        )
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_python_catalog_api_matches_pyspark(spark, tmp_path):
    db = "fs_cat_api"
    s = fs.Session(conf={"spark.sql.warehouse.dir": str(tmp_path / "fs_wh")})
    try:
        results = {}
        for side, sess in (("fs", s), ("spark", spark)):
            sess.sql(f"CREATE DATABASE {db} COMMENT 'api' LOCATION '{tmp_path / side / 'db'}'")
            sess.sql(
                f"CREATE TABLE {db}.t (id INT COMMENT 'the id', name STRING, p INT) USING parquet PARTITIONED BY (p)"
            )
            sess.sql(f"CREATE VIEW {db}.v AS SELECT id FROM {db}.t")
            sess.sql("CREATE OR REPLACE TEMPORARY VIEW fs_api_tv AS SELECT 1 AS one")
            c = sess.catalog
            results[side] = [
                [(d.name, d.description) for d in c.listDatabases() if d.name == db],
                [
                    (t.name, t.namespace, t.tableType, t.isTemporary)
                    for t in c.listTables(db)
                    if t.name != "tv"
                ],
                [
                    (x.name, x.description, x.dataType, x.nullable, x.isPartition)
                    for x in c.listColumns(f"{db}.t")
                ],
                c.tableExists(f"{db}.t"),
                c.tableExists("nope"),
                c.tableExists("v", db),
                c.databaseExists(db),
                c.databaseExists("nope"),
                c.getTable(f"{db}.t").tableType,
                c.functionExists("abs"),
                c.functionExists("no_such_fn"),
                c.dropTempView("fs_api_tv"),
                c.dropTempView("fs_api_tv"),
            ]
            c.setCurrentDatabase(db)
            results[side].append(c.currentDatabase())
            c.setCurrentDatabase("default")
        assert results["fs"] == results["spark"]
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_persistent_views_resolve_in_their_own_database(tmp_path):
    s = fs.Session(conf={"spark.sql.warehouse.dir": str(tmp_path / "wh")})
    s.sql("CREATE DATABASE a")
    s.sql("CREATE TABLE a.t USING parquet AS SELECT 1 AS x")
    s.sql("USE a")
    s.sql("CREATE VIEW a.v AS SELECT x + 1 AS y FROM t")
    s.sql("USE default")
    s.sql("CREATE TABLE t USING parquet AS SELECT 100 AS x")
    assert s.sql("SELECT * FROM a.v").collect()[0][0] == 2
    assert s.table("a.v").collect()[0][0] == 2


# Rows Spark's Hive catalog adds to DESCRIBE EXTENDED (Hive's storage descriptor).
HIVE_ONLY = {"Owner", "Serde Library", "InputFormat", "OutputFormat", "Storage Properties"}


def test_table_commands_match_pyspark_with_hive_support(tmp_path):
    """The table script through PySpark with Hive support (a JVM of its own with the embedded
    Derby metastore) gives what ferrospark's SQLite metastore gives."""
    import json

    from helpers import run_spark_script

    db = "fs_cat_hive"
    root = str(tmp_path / "spark")
    statements = [s.format(db=db, root=root) for s in TABLE_SCRIPT]
    (tmp_path / "statements.json").write_text(json.dumps(statements))
    script = __import__("pathlib").Path(__file__).resolve().parent / "scripts" / "hive_catalog.py"
    result, _ = run_spark_script(script, str(tmp_path), str(tmp_path / "statements.json"))
    hive = result["outcomes"]
    s = fs.Session(
        conf={"spark.sql.warehouse.dir": str(tmp_path / "fs_wh")}, catalog=f"sqlite://{tmp_path / 'm.db'}"
    )
    fs_root = str(tmp_path / "fs")
    mismatches = []
    for stmt, want in zip(TABLE_SCRIPT, hive):
        got = run_fs(s, stmt.format(db=db, root=fs_root), fs_root)
        if want[0] == "ok":
            env = {"Decimal": Decimal, "datetime": __import__("datetime"), "nan": float("nan")}
            rows = [tuple(norm_float_any(eval(v, env)) for v in r) for r in want[2]]
            rows = [r for r in rows if not (r and r[0] in HIVE_ONLY)]

            # Hive keeps a DDL time among a table's properties.
            def drop_ddl_time(v):
                if not isinstance(v, str):
                    return v
                v = re.sub(r"TBLPROPERTIES \(\n  'transient_lastDdlTime' = '\d+'\)\n", "", v)
                return re.sub(r"(, )?transient_lastDdlTime=\d+", "", v).replace("[, ", "[")

            rows = [tuple(drop_ddl_time(v) for v in r) for r in rows]
            rows = [r for r in rows if r != ("Table Properties", "[]", "")]
            schema = [(n, t, _nullable(stmt, nl)) for n, t, nl in want[1]]
            want = ("ok", schema, _normalize(rows, [root, "file:" + root]))
        else:
            want = tuple(want)
        if got != want:
            mismatches.append(f"{stmt}\n  ferrospark: {got}\n  pyspark+hive: {want}")
    assert not mismatches, "\n".join(mismatches)


def test_partition_transforms_are_taken_as_sparks_session_catalog_takes_them(spark, tmp_path):
    """``writeTo(...).partitionedBy``: ``bucket(n, col)`` (beside an identity column) creates
    the table with the rows, the time transforms are refused with
    ``UNSUPPORTED_PARTITION_TRANSFORM``, and a transform outside ``partitionedBy`` raises
    ``PARTITION_TRANSFORM_EXPRESSION_NOT_IN_PARTITIONED_BY``."""
    import warnings

    import pyspark.sql.functions.partitioning  # noqa: F401 - makes SF.partitioning an attribute
    from pyspark.sql import functions as SF

    from ferrospark import functions as F

    db = "fs_cat_transforms"
    s = fs.Session(conf={"spark.sql.warehouse.dir": str(tmp_path / "fs_wh")})
    sql = (
        "SELECT id, CAST(id % 2 AS INT) AS p, timestamp_seconds(1577934245 + id * 86400) AS ts FROM range(6)"
    )
    try:
        outcomes = {}
        for side, sess, m in (("fs", s, F), ("spark", spark, SF)):
            sess.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / side / 'db'}'")
            df = sess.sql(sql)
            got = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                df.writeTo(f"{db}.b").partitionedBy("p", m.bucket(4, "id")).create()
                got.append(
                    sorted(
                        tuple(r)
                        for r in sess.table(f"{db}.b").selectExpr("id", "p", "CAST(ts AS STRING)").collect()
                    )
                )
                for t in (m.years, m.months, m.days, m.hours):
                    try:
                        df.writeTo(f"{db}.t").partitionedBy(t("ts")).create()
                        got.append("created")
                    except Exception as e:
                        got.append(_error_class(e))
                for c in (m.partitioning.years("ts"), m.partitioning.bucket(2, "id")):
                    try:
                        df.select(c).collect()
                        got.append("selected")
                    except Exception as e:
                        got.append(_error_class(e))
            outcomes[side] = got
        assert outcomes["fs"] == outcomes["spark"]
        assert outcomes["fs"][1:5] == ["UNSUPPORTED_PARTITION_TRANSFORM"] * 4
        assert outcomes["fs"][5:] == ["PARTITION_TRANSFORM_EXPRESSION_NOT_IN_PARTITIONED_BY"] * 2
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
