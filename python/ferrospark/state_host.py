"""The executor's state host: one process per Spark executor that keeps fss's streaming
operators, and so their state stores, loaded between micro-batches, as Spark keeps its state
store providers loaded in the executor's JVM.

Spark runs a task in whichever of the executor's Python workers is idle, so a state
partition's next batch lands on another worker than its last one about half the time, and
that worker must first load the partition from its files (or catch up on the deltas another
worker wrote). With the host, the task's worker hands its rows to the host instead, which runs
the partition's operator where it stayed loaded::

    Python worker (task of partition p)        state host (one per executor)
    ───────────────────────────────────        ─────────────────────────────
    connect <dir>/h-<executor>-<build>.sock ─▶ accept: a thread per connection
    header: key, make, step (pickled)       ─▶ op = loaded[key] or make()  (a lock per key)
    the task's rows (Arrow IPC stream)      ─▶ out, extra = step(op, rows)
                                            ◀─ extra, or the error (pickled)
                                            ◀─ out (Arrow IPC stream)

The first task on an executor that finds no host starts one (``python -m
ferrospark.state_host``); a host that cannot take the socket's lock file (another is starting)
exits, and the task connects to the one that did. The host exits when its executor's process
(the worker's parent) is gone, or when it has held nothing for ``idle`` seconds. An operator
is dropped, its state left in its files, when its query stops (the driver removes the
query's lease file, which each request names) or when no batch used it for ``idle`` seconds.

Nothing here changes what a batch computes: each operator commits its versions to its files
as it does in a worker, and one whose loaded version is behind a batch catches up from the
files. A host killed between batches costs the next batch a load; killed during a batch, the
task fails and Spark's retry (or a restart of the query) runs the batch again, which the
operators' exactly-once versions make safe. Only when no host can be started or reached
before a task sends its rows does the task run its operator in its own worker.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pickle
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

# How long a task waits for a host it started (or found starting) to accept connections.
_START_TIMEOUT_S = 30.0
_LEN = struct.Struct("<Q")


class HostUnavailable(Exception):
    """No state host could be started or reached; nothing was sent to one."""


def host_dir() -> Path:
    """The directory of this user's host sockets, lock files and logs (only the user may
    enter it: a host runs what its socket is sent)."""
    base = Path(tempfile.gettempdir())
    if len(str(base)) > 60:  # a Unix socket's path is at most 107 bytes
        base = Path("/tmp")
    d = base / f"ferrospark-{os.getuid()}"
    d.mkdir(mode=0o700, exist_ok=True)
    st = d.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise HostUnavailable(f"{d} is not this user's alone")
    return d


def _build() -> str:
    """What a host must share with its clients: the interpreter, ferrospark's native module
    and this module (the protocol)."""
    from . import _native

    parts = [sys.executable]
    for f in (Path(_native.__file__), Path(__file__)):
        parts += [str(f), str(f.stat().st_mtime_ns)]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:12]


def socket_path(executor_pid: int) -> Path:
    """The socket of the host serving the executor whose process is ``executor_pid``."""
    return host_dir() / f"h-{executor_pid}-{_build()}.sock"


def _send(f: Any, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_LEN.pack(len(data)))
    f.write(data)


def _receive(f: Any) -> Any:
    head = f.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError("the connection closed")
    (n,) = _LEN.unpack(head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError("the connection closed")
    return pickle.loads(data)


# ---------------------------------------------------------------------------------------
# The client: a task's worker.


def _connect(path: Path, executor_pid: int, idle_s: float) -> socket.socket:
    """A connection to the executor's host, starting one when none answers."""
    deadline = time.monotonic() + _START_TIMEOUT_S
    started = -1.0
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(str(path))
            return s
        except OSError:
            s.close()
        # Started again after a while: the one started may have met a host on its way out
        # still holding the lock, and left.
        if time.monotonic() - started > 2.0:
            _start(path, executor_pid, idle_s)
            started = time.monotonic()
        if time.monotonic() > deadline:
            raise HostUnavailable(f"no state host answered at {path} within {_START_TIMEOUT_S:.0f} s")
        time.sleep(0.02)


def _start(path: Path, executor_pid: int, idle_s: float) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    with open(path.with_suffix(".log"), "ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "ferrospark.state_host", str(path), str(executor_pid), str(idle_s)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
            close_fds=True,
        )


def run(
    key: tuple[str, int],
    make: Callable[[], Any],
    step: Callable[[Any, list[pa.RecordBatch]], tuple[pa.Table, Any]],
    batches: Iterator[pa.RecordBatch],
    *,
    idle_s: float,
    lease: str | None = None,
    executor_pid: int | None = None,
) -> tuple[Iterator[pa.RecordBatch], Any]:
    """Runs ``step(op, rows)`` in this executor's host, ``op`` being the operator loaded there
    for ``key`` (``make()`` the first time): returns the output's batches and ``step``'s extra
    result. Raises :class:`HostUnavailable`, having consumed no rows, when no host can be
    reached; an error ``step`` raised in the host is raised here. The operator is dropped
    once the file ``lease`` (the running query's, removed when it stops) is gone, or after
    ``idle_s`` unused. The host is the one of the
    executor whose process is ``executor_pid`` (default: this worker's parent, Spark's Python
    daemon or the executor's JVM)."""
    from pyspark import cloudpickle

    executor = os.getppid() if executor_pid is None else executor_pid
    try:
        path = socket_path(executor)
        s = _connect(path, executor, idle_s)
    except OSError as e:  # no directory for the socket, or no host process could be started
        raise HostUnavailable(f"no state host could be started: {e}") from e
    try:
        with s.makefile("wb", buffering=1 << 20) as w:
            first = next(batches, None)
            _send(w, (key, lease, cloudpickle.dumps((make, step)), first is not None))
            if first is not None:
                with pa.ipc.new_stream(w, first.schema) as ipc:
                    ipc.write_batch(first)
                    for b in batches:
                        ipc.write_batch(b)
            w.flush()
        r = s.makefile("rb", buffering=1 << 20)
        ok, extra = _receive(r)
        out = pa.ipc.open_stream(r).read_all() if ok else None
    except (OSError, EOFError) as e:
        from .errors import FerroIOError

        raise FerroIOError(
            f"the state host at {path} stopped while running partition {key[1]}'s batch ({e}); "
            f"its log is {path.with_suffix('.log')}. Spark's retry of the task, or a restart of "
            "the query, runs the batch again from its committed state"
        ) from e
    finally:
        s.close()
    if out is None:
        raise extra
    return iter(out.to_batches()), extra


# ---------------------------------------------------------------------------------------
# The host.


class _Loaded:
    """An operator the host keeps, with the lock its batches take turns on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.op: Any = None
        self.used = time.monotonic()
        # A file that exists while the operator's query runs (None: kept until idle).
        self.lease: str | None = None

    def unused(self, now: float, idle_s: float) -> bool:
        """Whether the operator may go: its query stopped, or no batch used it for ``idle_s``."""
        if now - self.used > idle_s:
            return True
        return self.lease is not None and now - self.used > 1.0 and not os.path.exists(self.lease)


class _Host:
    def __init__(self, executor_pid: int, idle_s: float) -> None:
        self.executor_pid = executor_pid
        self.idle_s = idle_s
        self.loaded: dict[tuple[str, int], _Loaded] = {}
        self.guard = threading.Lock()
        self.busy = 0
        self.last = time.monotonic()

    def slot(self, key: tuple[str, int], lease: str | None) -> _Loaded:
        with self.guard:
            self.busy += 1
            slot = self.loaded.get(key)
            if slot is None:
                slot = self.loaded[key] = _Loaded()
            slot.used = time.monotonic()  # not swept while this request waits for its lock
            slot.lease = lease
            return slot

    def done(self) -> None:
        with self.guard:
            self.busy -= 1
            self.last = time.monotonic()

    @staticmethod
    def run(slot: _Loaded, fns: bytes, rows: list[pa.RecordBatch]) -> tuple[pa.Table, Any] | Exception:
        """The batch's output and extra result, or the error it raised."""
        with slot.lock:
            try:
                make, step = pickle.loads(fns)
                if slot.op is None:
                    slot.op = make()
                return step(slot.op, rows)
            except Exception as e:
                # The operator may be half-way through a batch: a fresh one reloads from the
                # committed files.
                slot.op = None
                return e
            finally:
                slot.used = time.monotonic()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            r = conn.makefile("rb", buffering=1 << 20)
            w = conn.makefile("wb", buffering=1 << 20)
            try:
                key, lease, fns, has_rows = _receive(r)
                rows = list(pa.ipc.open_stream(r)) if has_rows else []
            except Exception as e:  # a client that went away before sending its rows
                print(f"state host: a request was not received whole: {e!r}", file=sys.stderr)
                return
            slot = self.slot(key, lease)
            try:
                result = self.run(slot, fns, rows)
                if isinstance(result, Exception):
                    self.reply_error(w, result)
                    return
                out, extra = result
                with contextlib.suppress(OSError):
                    _send(w, (True, extra))
                    with pa.ipc.new_stream(w, out.schema) as ipc:
                        ipc.write_table(out)
                    w.flush()
            finally:
                self.done()

    @staticmethod
    def reply_error(w: Any, e: BaseException) -> None:
        try:
            pickle.loads(pickle.dumps(e))
            err: BaseException = e
        except Exception:
            err = RuntimeError(f"{type(e).__name__}: {e}")
        with contextlib.suppress(OSError):
            _send(w, (False, err))
            w.flush()

    def sweep(self) -> bool:
        """Drops the operators idle too long; whether the host should go on."""
        if not _alive(self.executor_pid):
            return False
        now = time.monotonic()
        with self.guard:
            for key, slot in list(self.loaded.items()):
                if slot.unused(now, self.idle_s) and slot.lock.acquire(blocking=False):
                    del self.loaded[key]
                    slot.lock.release()
            return bool(self.loaded) or self.busy > 0 or now - self.last < self.idle_s


def serve(path: Path, executor_pid: int, idle_s: float) -> None:
    """Runs a host on ``path`` until its executor is gone or it has been idle ``idle_s``."""
    lock = open(path.with_suffix(".lock"), "a+")  # noqa: SIM115 - held for the host's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another host has it
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a dead host's socket
    _clear_dead(path.parent)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(64)
    srv.settimeout(1.0)
    path.with_suffix(".pid").write_text(str(os.getpid()))
    host = _Host(executor_pid, idle_s)
    threads: list[threading.Thread] = []
    try:
        while host.sweep():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            threads = [t for t in threads if t.is_alive()]
            threads.append(_served(host, conn))
        # No new client finds the socket now; those that connected before are served.
        path.unlink()
        srv.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:
                threads.append(_served(host, srv.accept()[0]))
        for t in threads:
            t.join()
    finally:
        srv.close()
        for suffix in (".sock", ".pid", ".lock"):
            with contextlib.suppress(FileNotFoundError):
                path.with_suffix(suffix).unlink()
        log = path.with_suffix(".log")
        with contextlib.suppress(FileNotFoundError):
            if log.stat().st_size == 0:
                log.unlink()
        lock.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _clear_dead(d: Path) -> None:
    """Removes what hosts killed with their executors left: the socket, pid and lock files
    of an executor that is gone and whose lock no host holds, its log when empty or a week old."""
    for lock_path in d.glob("h-*.lock"):
        try:
            executor = int(lock_path.name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if _alive(executor):
            continue
        with contextlib.suppress(OSError), open(lock_path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            for suffix in (".sock", ".pid", ".lock"):
                with contextlib.suppress(FileNotFoundError):
                    lock_path.with_suffix(suffix).unlink()
    week = time.time() - 7 * 24 * 3600
    for log in d.glob("h-*.log"):
        with contextlib.suppress(OSError):
            st = log.stat()
            if (st.st_size == 0 or st.st_mtime < week) and not log.with_suffix(".lock").exists():
                log.unlink()


def _served(host: _Host, conn: socket.socket) -> threading.Thread:
    conn.setblocking(True)
    t = threading.Thread(target=host.serve, args=(conn,), daemon=True)
    t.start()
    return t


if __name__ == "__main__":
    serve(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
