"""Runs catalog statements through PySpark with Hive support (its embedded Derby metastore)
and prints each one's outcome as JSON, for tests/test_catalog_spark.py.

    hive_catalog.py <work dir> <statements.json>
"""

from __future__ import annotations

import json
import re
import sys


def main() -> None:
    work, statements = sys.argv[1], sys.argv[2]
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", f"{work}/hive_wh")
        # The options of tests/helpers.py's SPARK_TEST_JVM_OPTIONS (this script imports nothing
        # of the tests).
        .config(
            "spark.driver.extraJavaOptions",
            f"-Dderby.system.home={work} -Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        )
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    out = []
    for stmt in json.load(open(statements)):
        try:
            df = spark.sql(stmt)
            schema = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]
            rows = [[repr(v) for v in r] for r in df.collect()]
            out.append(["ok", schema, rows])
        except PySparkException as e:
            m = re.search(r"\[([A-Z_]+(?:\.[A-Z_]+)?)\]", str(e))
            out.append(["error", m.group(1) if m else type(e).__name__])
    spark.stop()
    print(json.dumps({"outcomes": out}))


if __name__ == "__main__":
    main()
