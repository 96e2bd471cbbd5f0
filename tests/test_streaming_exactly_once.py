"""Exactly once: a stream-stream join and a session window aggregation killed (``kill -9``)
before, during and after their commits, restarted from the first batch whose output was not
recorded, give every batch's output exactly as an uninterrupted run does."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

WORKER = Path(__file__).resolve().parent / "scripts" / "stream_worker.py"
BATCHES = 14


def _run(ckpt: Path, out: Path, kind: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(WORKER), str(ckpt), str(out), kind, str(BATCHES), *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _outputs(out: Path) -> list[list[tuple]]:
    got = []
    for b in range(BATCHES):
        t: pa.Table = pq.read_table(out / f"out-{b}.parquet")
        rows = [tuple(str(v) for v in r.values()) for r in t.to_pylist()]
        got.append(sorted(rows))
    return got


@pytest.mark.parametrize("kind", ["join", "session"])
def test_a_query_killed_anywhere_loses_and_duplicates_nothing(tmp_path, kind):
    clean = _run(tmp_path / "c-ckpt", tmp_path / "c-out", kind)
    assert clean.returncode == 0, clean.stderr
    want = _outputs(tmp_path / "c-out")
    assert sum(len(b) for b in want) > 0
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"
    # After a commit, before the output is recorded: the restart runs that batch again.
    died = _run(ckpt, out, kind, "3")
    assert died.returncode == -signal.SIGKILL, died.stderr
    assert len(list(out.glob("out-*.parquet"))) == 3
    # A crash in the middle of the commit: one of the stores has the batch's version, the
    # others not (its delta removed by hand, as a process killed between them leaves it).
    ok = _run(ckpt, out, kind, "6")
    assert ok.returncode == -signal.SIGKILL, ok.stderr
    stores = sorted(p for p in (ckpt / "state" / "0" / "0").rglob("7.delta"))
    assert stores, "the batch committed version 7"
    stores[-1].unlink()
    # Kills at random moments: before, during or after a batch's commit.
    rnd = random.Random(5)
    for _ in range(4):
        p = subprocess.Popen(
            [sys.executable, str(WORKER), str(ckpt), str(out), kind, str(BATCHES)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(rnd.uniform(0.4, 1.6))
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    done = _run(ckpt, out, kind)
    assert done.returncode == 0, done.stderr
    assert _outputs(out) == want
