"""ferrospark on a real multi-executor Spark (local-cluster[2,1,1024]: two executor JVMs, each
with its own Python workers), against Spark's own answers: whole TPC-H queries with a task
killed and spills inside tasks; native Parquet reads, aggregations, joins and windows across
executors. One application (tests/scripts/local_cluster.py, in its own process) runs both
sets of checks; each test asserts its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_spark_script

pytestmark = pytest.mark.spark

SCRIPT = Path(__file__).parent / "scripts" / "local_cluster.py"


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory, tpch_sf001):
    tpch = Path(next(iter(tpch_sf001.values()))).parent
    work = tmp_path_factory.mktemp("local_cluster")
    result, proc = run_spark_script(SCRIPT, str(work), str(tpch), timeout=1200)
    return result, proc


def test_queries_on_local_cluster_equal_spark_with_a_task_killed_and_spills(cluster_run):
    result, proc = cluster_run
    assert result["executors"] >= 2, result
    stages = result["stages"]
    assert "error" not in stages, stages["error"]
    for name, check in stages["checks"].items():
        assert check["same"], (name, check)
    assert len([n for n in stages["checks"] if n.startswith("Q")]) == 5
    killed = stages["checks"]["killed_task_retried"]
    assert killed["killed"], killed
    assert killed["rows"] == killed["expected"], killed
    assert stages["checks"]["spilled_in_tasks"]["spilled_tasks"] >= 1, stages["checks"]["spilled_in_tasks"]
    assert stages["ok"], stages
    # The script exits non-zero when a check of either part fails (the other test reports it).
    assert proc.returncode == 0 or not result["distributed"].get("ok"), proc.stderr[-3000:]


def test_read_parquet_on_local_cluster_equals_spark(cluster_run):
    result, proc = cluster_run
    assert result["executors"] >= 2, result
    distributed = result["distributed"]
    assert "error" not in distributed, distributed["error"]
    for name, check in distributed["checks"].items():
        assert check["same"], (name, check)
        assert check["rows"] == check["expected"], (name, check)
        assert check["partitions"] >= 1, (name, check)
    assert distributed["checks"]["all"]["rows"] == 20000
    # Built once per Python worker, not once per probe task or per job. Spark's own counts are
    # the reference: each job over the join runs one task per split (getNumPartitions), and one
    # job measured alone must show exactly that many probes and no build at all (its reused
    # workers built the side in earlier jobs; a build per job or per task would show here).
    # The builds over all four jobs equal the distinct worker processes (host, pid) that ran
    # probe tasks, counted apart from the builds, and are bounded by Spark's task slots
    # (executors x cores, one reused Python worker each).
    broadcast = distributed["checks"]["join_broadcast"]
    spark_tasks = broadcast["jobs"] * broadcast["job_tasks"]
    assert broadcast["job_tasks"] >= 2, result
    assert broadcast["job_probes"] == broadcast["job_tasks"], result
    assert broadcast["probes"] == spark_tasks, result
    assert spark_tasks > broadcast["slots"], result  # so a build per task would break the bound
    assert broadcast["job_builds"] == 0, result
    assert broadcast["builds"] <= broadcast["slots"], result
    assert broadcast["builds"] == broadcast["workers"], result
    assert distributed["ok"], distributed
    assert proc.returncode == 0 or not result["stages"].get("ok"), proc.stderr[-3000:]
