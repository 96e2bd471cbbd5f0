"""Whole queries on a real multi-executor Spark (local-cluster): nine TPC-H queries, one of each
plan shape (all 22 run on local[2] in test_spark_stages.py), a killed task retried, spills inside
tasks (tests/scripts/spark_stages_cluster.py, in its own process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_spark_script

SCRIPT = Path(__file__).parent / "scripts" / "spark_stages_cluster.py"


@pytest.mark.spark
def test_queries_on_local_cluster_equal_spark_with_a_task_killed_and_spills(tmp_path):
    result, proc = run_spark_script(SCRIPT, str(tmp_path))
    assert result["executors"] >= 2, result
    for name, check in result["checks"].items():
        assert check["same"], (name, check)
    assert len([n for n in result["checks"] if n.startswith("Q")]) == 9
    killed = result["checks"]["killed_task_retried"]
    assert killed["killed"], killed
    assert killed["rows"] == killed["expected"], killed
    assert result["checks"]["spilled_in_tasks"]["spilled_tasks"] >= 1, result["checks"]["spilled_in_tasks"]
    assert proc.returncode == 0, proc.stderr[-3000:]
