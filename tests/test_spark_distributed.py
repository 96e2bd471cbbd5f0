"""ferrospark on a real multi-executor Spark: two executor JVMs, each with its own Python
workers, read their splits natively, aggregate and join, and the results equal Spark's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "distributed_read.py"


@pytest.mark.spark
def test_read_parquet_on_local_cluster_equals_spark(tmp_path):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, TZ="UTC")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, (
        f"no result; exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    )
    result = json.loads(lines[-1])
    assert result["executors"] >= 2, result
    for name, check in result["checks"].items():
        assert check["same"], (name, check)
        assert check["rows"] == check["expected"], (name, check)
        assert check["partitions"] >= 1, (name, check)
    assert result["checks"]["all"]["rows"] == 20000
    # Built once per Python worker, not once per probe task: the builds equal the distinct
    # worker processes (host, pid) that ran probe tasks, counted apart from the builds. The
    # comparison runs the join in three jobs over the scan's splits, so the workers are reused:
    # a build per task would make the builds equal the probes, above the workers.
    broadcast = result["checks"]["join_broadcast"]
    assert broadcast["probes"] >= 6, result
    assert 1 <= broadcast["workers"] < broadcast["probes"], result
    assert broadcast["builds"] == broadcast["workers"], result
    assert proc.returncode == 0, proc.stderr[-3000:]
