"""Whole queries on a real multi-executor Spark (local-cluster): TPC-H, a killed task retried,
spills inside tasks (tests/scripts/spark_stages_cluster.py, in its own process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "spark_stages_cluster.py"


@pytest.mark.spark
def test_queries_on_local_cluster_equal_spark_with_a_task_killed_and_spills(tmp_path):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, TZ="UTC")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=900, env=env
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, (
        f"no result; exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    )
    result = json.loads(lines[-1])
    assert result["executors"] >= 2, result
    for name, check in result["checks"].items():
        assert check["same"], (name, check)
    assert len([n for n in result["checks"] if n.startswith("Q")]) == 22
    killed = result["checks"]["killed_task_retried"]
    assert killed["killed"], killed
    assert killed["rows"] == killed["expected"], killed
    assert result["checks"]["spilled_in_tasks"]["spilled_tasks"] >= 1, result["checks"]["spilled_in_tasks"]
