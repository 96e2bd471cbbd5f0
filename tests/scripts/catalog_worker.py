"""A process using a shared SQLite metastore, for the catalog's multi-process tests.

catalog_worker.py create  <metastore> <warehouse> <worker> <tables>
    creates tables w<worker>_<i> (each with a row and a partition) in database `shared`.
catalog_worker.py insert  <metastore> <warehouse> <parquet>
    inserts the rows of a Parquet file into `shared.big` (long enough to be killed
    mid-write).
catalog_worker.py insert_parts <metastore> <warehouse> <parquet>
    inserts the rows of a Parquet file (columns id, p) into `shared.parts`, partitioned by
    p: thousands of files to move when it commits (long enough to be killed mid-commit).
"""

from __future__ import annotations

import sys

import ferrospark as fs


def main() -> None:
    cmd, metastore, warehouse = sys.argv[1:4]
    s = fs.Session(conf={"spark.sql.warehouse.dir": warehouse}, catalog=f"sqlite://{metastore}")
    if cmd == "create":
        worker, tables = int(sys.argv[4]), int(sys.argv[5])
        s.sql("CREATE DATABASE IF NOT EXISTS shared")
        for i in range(tables):
            name = f"shared.w{worker}_{i}"
            s.sql(f"CREATE TABLE {name} (v INT, p INT) USING parquet PARTITIONED BY (p)")
            s.sql(f"INSERT INTO {name} VALUES ({worker * 1000 + i}, {i})")
        print("done", flush=True)
    elif cmd == "insert":
        source = sys.argv[4]
        print("started", flush=True)
        s.sql(f"INSERT INTO shared.big SELECT id, s FROM parquet.`{source}`")
        print("done", flush=True)
    elif cmd == "insert_parts":
        source = sys.argv[4]
        s.sql(f"INSERT INTO shared.parts SELECT id, p FROM parquet.`{source}`")
        print("done", flush=True)


if __name__ == "__main__":
    main()
