"""The executor's state host (``ferrospark.state_host``) on its own, without Spark: an
operator stays loaded across tasks, errors come back and leave the host serving, and the
host leaves when its executor is gone or it has been idle. Each test plays an executor with
a process of its own, so each gets a host of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from ferrospark import state_host
from ferrospark.errors import FerroIOError, StateStoreError


class Counter:
    """An operator that counts the batches it ran and the rows it saw."""

    def __init__(self) -> None:
        self.batches = 0
        self.rows = 0
        self.pid = os.getpid()


def counting(op: Counter, got: list[pa.RecordBatch]) -> tuple[pa.Table, Any]:
    op.batches += 1
    op.rows += sum(b.num_rows for b in got)
    t = pa.table({"batches": [op.batches], "rows": [op.rows], "pid": [op.pid]})
    return t, {"seen": sum(b.num_rows for b in got)}


def failing(op: Counter, got: list[pa.RecordBatch]) -> tuple[pa.Table, Any]:
    raise StateStoreError("the delta file 7.delta is truncated")


def sleeping(op: Counter, got: list[pa.RecordBatch]) -> tuple[pa.Table, Any]:
    time.sleep(30)
    return counting(op, got)


def batches(n: int, size: int = 1000) -> Iterator[pa.RecordBatch]:
    for i in range(n):
        yield pa.record_batch({"x": pa.array(range(i * size, (i + 1) * size), pa.int64())})


@pytest.fixture
def executor() -> Iterator[subprocess.Popen]:
    p = subprocess.Popen(["sleep", "600"])
    yield p
    p.kill()
    p.wait()


def call(executor: subprocess.Popen, step: Any, rows: Iterator[pa.RecordBatch], key: Any = ("q", 0)) -> Any:
    out, extra = state_host.run(key, Counter, step, rows, idle_s=60, executor_pid=executor.pid)
    return pa.Table.from_batches(list(out)).to_pylist(), extra


def host_pid(executor: subprocess.Popen) -> int | None:
    path = state_host.socket_path(executor.pid).with_suffix(".pid")
    return int(path.read_text()) if path.exists() else None


def started_host(executor: subprocess.Popen) -> int:
    """The pid of the executor's host, started by a first task."""
    call(executor, counting, batches(1))
    pid = host_pid(executor)
    assert pid is not None
    return pid


def gone(pid: int, within_s: float = 20) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A host started by this process is its child until reaped.
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.1)
    return False


def test_an_operator_stays_loaded_across_tasks(executor):
    rows, extra = call(executor, counting, batches(3))
    assert rows == [{"batches": 1, "rows": 3000, "pid": host_pid(executor)}]
    assert extra == {"seen": 3000}
    assert rows[0]["pid"] != os.getpid()
    rows, _ = call(executor, counting, batches(2))
    assert rows[0]["batches"] == 2 and rows[0]["rows"] == 5000
    # Another partition has an operator of its own; a task with no rows still runs.
    rows, extra = call(executor, counting, iter([]), key=("q", 1))
    assert rows[0]["batches"] == 1 and rows[0]["rows"] == 0 and extra == {"seen": 0}


def test_tasks_of_partitions_run_side_by_side(executor):
    results: dict[int, Any] = {}

    def task(p: int) -> None:
        results[p] = call(executor, counting, batches(5), key=("q", p))

    threads = [threading.Thread(target=task, args=(p,)) for p in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(6))
    assert all(rows[0]["rows"] == 5000 for rows, _ in results.values())
    assert len({rows[0]["pid"] for rows, _ in results.values()}) == 1


def test_an_error_comes_back_and_the_host_serves_on(executor):
    call(executor, counting, batches(1))
    with pytest.raises(StateStoreError, match=r"7\.delta is truncated"):
        call(executor, failing, batches(1))
    # The operator that failed was dropped: its next batch starts from a fresh one (in fss,
    # one that loads the committed state from its files).
    rows, _ = call(executor, counting, batches(1))
    assert rows[0]["batches"] == 1


def test_a_host_killed_between_tasks_is_started_again(executor):
    first = started_host(executor)
    os.kill(first, signal.SIGKILL)
    assert gone(first)
    rows, _ = call(executor, counting, batches(1))
    assert rows[0]["pid"] != first and rows[0]["batches"] == 1


def test_a_host_killed_during_a_task_is_a_clear_error(executor):
    pid = started_host(executor)
    threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(FerroIOError, match=r"state host .* stopped while running partition 0's batch.*log"):
        call(executor, sleeping, batches(1))
    assert gone(pid)  # the connection drops while the killed host is still being torn down
    rows, _ = call(executor, counting, batches(1))
    assert rows[0]["batches"] == 1


def test_the_host_leaves_with_its_executor(executor):
    pid = started_host(executor)
    path = state_host.socket_path(executor.pid)
    executor.kill()
    executor.wait()
    assert gone(pid)
    assert not path.exists() and not path.with_suffix(".pid").exists()


def test_an_idle_host_drops_its_operators_and_leaves(executor):
    out, _ = state_host.run(("q", 0), Counter, counting, batches(1), idle_s=0.5, executor_pid=executor.pid)
    list(out)
    pid = host_pid(executor)
    assert pid is not None
    assert gone(pid)
    rows, _ = call(executor, counting, batches(1))
    assert rows[0]["batches"] == 1 and rows[0]["pid"] != pid


def test_an_operator_goes_when_its_query_lease_does(executor, tmp_path):
    lease = tmp_path / "running" / "q"
    lease.parent.mkdir()
    lease.touch()

    def leased(step: Any) -> int:
        out, _ = state_host.run(
            ("q", 0), Counter, step, batches(1), idle_s=60, lease=str(lease), executor_pid=executor.pid
        )
        return pa.Table.from_batches(list(out)).to_pylist()[0]["batches"]

    assert leased(counting) == 1
    time.sleep(2.5)  # past the host's sweeps: the query still runs, the operator stays
    assert leased(counting) == 2
    lease.unlink()  # the query stopped
    time.sleep(3.5)
    assert leased(counting) == 1


def test_the_host_directory_is_this_users_alone():
    d = state_host.host_dir()
    assert d.stat().st_uid == os.getuid() and d.stat().st_mode & 0o077 == 0
    assert len(str(state_host.socket_path(2**22))) < 108
    assert Path(d).name == f"ferrospark-{os.getuid()}"


def test_a_new_host_clears_what_killed_ones_left(executor, tmp_path):
    other = subprocess.Popen(["sleep", "600"])
    call(other, counting, batches(1))
    pid = host_pid(other)
    assert pid is not None
    left = state_host.socket_path(other.pid)
    os.kill(pid, signal.SIGKILL)
    assert gone(pid)
    other.kill()
    other.wait()
    assert left.exists() and left.with_suffix(".lock").exists()
    call(executor, counting, batches(1))
    assert not left.exists() and not left.with_suffix(".pid").exists()
    assert not left.with_suffix(".lock").exists() and not left.with_suffix(".log").exists()


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class _Session:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)


def test_the_host_settings_are_checked():
    from ferrospark.errors import ConfigError
    from ferrospark.spark_streaming import HOST, HOST_IDLE, _settings

    def _host_setting(session: _Session, conf: dict[str, str]) -> tuple[bool, float]:
        from ferrospark.spark_streaming import _host_setting

        return _host_setting(_settings(session, conf))

    assert _host_setting(_Session({}), {}) == (True, 600.0)
    assert _host_setting(_Session({HOST: "false"}), {}) == (False, 600.0)
    # A query's own conf wins over the session's.
    assert _host_setting(_Session({HOST: "false"}), {HOST: "TRUE", HOST_IDLE: "5"}) == (True, 5.0)
    with pytest.raises(ConfigError, match=r"stateHost must be true or false, not 'maybe'"):
        _host_setting(_Session({}), {HOST: "maybe"})
    for bad in ("0", "-3", "soon", "nan"):
        with pytest.raises(ConfigError, match=r"idleTimeout must be a positive number of seconds"):
            _host_setting(_Session({HOST_IDLE: bad}), {})


def test_no_host_is_reported_before_any_row_is_taken(monkeypatch):
    """Where no host can be started, ``run`` says so having taken no rows, so the task runs
    its operator in its own worker on all of them."""

    def no_dir() -> Path:
        raise PermissionError("read-only /tmp")

    monkeypatch.setattr(state_host, "host_dir", no_dir)
    rows = batches(3)
    with pytest.raises(state_host.HostUnavailable, match="read-only"):
        state_host.run(("q", 0), Counter, counting, rows, idle_s=60, executor_pid=os.getpid())
    assert sum(b.num_rows for b in rows) == 3000
