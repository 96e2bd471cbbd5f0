"""ferrospark on a real multi-executor Spark: two executor JVMs, each with its own Python
workers, read their splits natively, aggregate and join, and the results equal Spark's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_spark_script

SCRIPT = Path(__file__).parent / "scripts" / "distributed_read.py"


@pytest.mark.spark
def test_read_parquet_on_local_cluster_equals_spark(tmp_path):
    result, proc = run_spark_script(SCRIPT, str(tmp_path / "data"), timeout=600)
    assert result["executors"] >= 2, result
    for name, check in result["checks"].items():
        assert check["same"], (name, check)
        assert check["rows"] == check["expected"], (name, check)
        assert check["partitions"] >= 1, (name, check)
    assert result["checks"]["all"]["rows"] == 20000
    # Built once per Python worker, not once per probe task or per job. Spark's own counts are
    # the reference: each job over the join runs one task per split (getNumPartitions), and one
    # job measured alone must show exactly that many probes and no build at all (its reused
    # workers built the side in earlier jobs; a build per job or per task would show here).
    # The builds over all four jobs equal the distinct worker processes (host, pid) that ran
    # probe tasks, counted apart from the builds, and are bounded by Spark's task slots
    # (executors x cores, one reused Python worker each).
    broadcast = result["checks"]["join_broadcast"]
    spark_tasks = broadcast["jobs"] * broadcast["job_tasks"]
    assert broadcast["job_tasks"] >= 2, result
    assert broadcast["job_probes"] == broadcast["job_tasks"], result
    assert broadcast["probes"] == spark_tasks, result
    assert spark_tasks > broadcast["slots"], result  # so a build per task would break the bound
    assert broadcast["job_builds"] == 0, result
    assert broadcast["builds"] <= broadcast["slots"], result
    assert broadcast["builds"] == broadcast["workers"], result
    assert proc.returncode == 0, proc.stderr[-3000:]
