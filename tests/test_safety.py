"""Safety: panics, deep expressions, unknown configuration keys and Ctrl-C end in Python
exceptions, never in a crashed or hung process."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from ferrospark import _native


def _run(code: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh interpreter, so a crash fails the test instead of pytest."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- panics ---------------------------------------------------------------------------------


@pytest.mark.parametrize("detached", [True, False])
def test_a_panic_is_an_internal_error_and_the_session_keeps_working(tmp_path, detached):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"k": [i % 3 for i in range(10_000)], "v": list(range(10_000))}), path)
    session = fs.Session()
    before = session.read.parquet(str(path)).groupBy("k").agg({"v": "sum"}).orderBy("k").toArrow()

    with pytest.raises(fs.InternalError) as info:
        _native._panic_for_test("boom in the engine", detached=detached)
    message = str(info.value)
    assert "boom in the engine" in message
    assert "ferrospark bug" in message and "report" in message
    assert "guard.rs" in message  # where it panicked
    assert isinstance(info.value, fs.FerroError)

    # The same session, the allocator and the scan threads all still work.
    for _ in range(3):
        after = session.read.parquet(str(path)).groupBy("k").agg({"v": "sum"}).orderBy("k").toArrow()
        assert after.equals(before)
    assert fs.read_parquet(str(path), filter="v >= 9990").read_all().num_rows == 10


def test_internal_errors_are_exported():
    assert fs.InternalError is fs.errors.InternalError
    assert issubclass(fs.InternalError, fs.FerroError)
    assert "InternalError" in fs.__all__


# -- deep expressions -------------------------------------------------------------------------


def test_a_50000_deep_expression_is_an_analysis_error_not_a_crash():
    result = _run(
        """
        import ferrospark as fs

        c = fs.col("a")
        built = 0
        try:
            for _ in range(50_000):
                c = c + 1
                built += 1
        except fs.AnalysisError as e:
            print("BUILT", built)
            print("ERROR", e)
        text = "a" + " + 1" * 50_000
        for name, parse in [
            ("EXPR", lambda: fs.expr(text)),
            ("PARENS", lambda: fs.expr("(" * 50_000 + "a" + ")" * 50_000)),
            ("SQL", lambda: fs.Session().sql("SELECT " + "1" + " + 1" * 5_000 + " AS x")),
        ]:
            try:
                parse()
                print(name, "no error")
            except fs.AnalysisError as e:
                print(name, str(e)[:60])
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert int(lines["BUILT"]) == 999  # fs.col("a") is one level, each `+ 1` one more
    message = lines["ERROR"]
    assert "limit of 1000 levels" in message
    assert "balanced tree" in message and "isin" in message  # says how to restructure
    for name in ["EXPR", "PARENS", "SQL"]:
        assert lines[name].startswith("[FAILED_TO_PARSE_TOO_COMPLEX]"), lines[name]


def test_expressions_at_the_limit_run_everywhere(tmp_path):
    """A tree just inside the limit survives every recursive pass: printing, parsing its text
    back, a Parquet filter on the scan's own threads, a projection and a SQL query."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": list(range(-2000, 2000))}), path)
    result = _run(
        f"""
        import pyarrow as pa
        import ferrospark as fs
        from ferrospark import _native

        c = fs.col("a")
        for _ in range(998):
            c = c + 1
        predicate = c > 0                              # 1000 levels
        print("FILTER", fs.read_parquet({str(path)!r}, filter=predicate).read_all().num_rows)
        text = str(predicate)
        print("TEXT", fs.read_parquet({str(path)!r}, filter=text).read_all().num_rows)
        out = _native.project(pa.table({{"a": [1, 2]}}), [c._expr], None)
        print("PROJECT", out.column(0).to_pylist())
        session = fs.Session()
        rows = session.sql("SELECT " + "a" + " + 1" * 997 + " AS x FROM parquet.`{path}` WHERE a = 0")
        print("SQL", rows.collect()[0].x)
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["FILTER"] == lines["TEXT"] == str(2000 + 998 - 1)
    assert lines["PROJECT"] == "[999, 1000]"
    assert lines["SQL"] == "997"


# -- configuration --------------------------------------------------------------------------


def test_an_unknown_ferrospark_key_is_a_config_error_with_a_suggestion():
    with pytest.raises(fs.ConfigError) as info:
        fs.Session(conf={"ferrospark.memroy.limit": "1g"})
    message = str(info.value)
    assert "'ferrospark.memroy.limit'" in message
    assert "did you mean 'ferrospark.memory.limit'" in message
    with pytest.raises(fs.ConfigError, match="ferrospark.scan.threads"):
        fs.Session().set("ferrospark.scan.thread", "2")
    with pytest.raises(fs.ConfigError, match="ferrospark.batch.size"):
        _native.QueryEngine({"ferrospark.batchSize": "10"})


def test_unknown_spark_keys_are_accepted():
    session = fs.Session(conf={"spark.sql.some.futureSetting": "x", "spark.executor.cores": "4"})
    assert session.conf["spark.sql.some.futureSetting"] == "x"
    assert session.sql("SELECT 1 AS one").collect()[0].one == 1
    known = fs.Session(conf={"ferrospark.memory.limit": "1g", "ferrospark.batch.size": "128"})
    assert known.conf["ferrospark.batch.size"] == "128"


# -- Ctrl-C ---------------------------------------------------------------------------------


def _big_file(tmp_path) -> str:
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"a": pa.array(range(2_000_000), pa.int64())}), path, row_group_size=100_000)
    return str(path)


def _interrupt(code: str, after: float) -> tuple[str, str, float, int]:
    """Runs `code` in a fresh interpreter, sends SIGINT `after` seconds past its first line
    ("ready"); returns its stdout, stderr, the seconds it took to stop, and its exit code."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(after)
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        waited = time.time() - sent
    finally:
        proc.kill()
    return out, err, waited, proc.returncode


def test_ctrl_c_stops_a_streaming_read(tmp_path):
    """SIGINT during a long read raises KeyboardInterrupt within a fraction of a second, even
    while the next batch is still being searched for (the filter matches no row)."""
    path = _big_file(tmp_path)
    out, err, waited, code = _interrupt(
        f"""
        import sys, time
        import ferrospark as fs

        session = fs.Session(conf={{"spark.sql.parquet.filterPushdown": "false"}})
        reader = fs.read_parquet([{path!r}] * 500, filter="a * 7 % 1000003 = -1", session=session)
        print("ready", flush=True)
        start = time.time()
        try:
            rows = reader.read_all().num_rows
        except KeyboardInterrupt:
            print("interrupted", time.time() - start, flush=True)
            raise
        print("finished", rows, time.time() - start, flush=True)
        """,
        after=1.0,
    )
    assert "finished" not in out, "the read ended before the signal: make it longer"
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert "interrupted" in out
    assert code != 0
    assert waited < 5, f"took {waited:.1f} s to stop after SIGINT"


def test_ctrl_c_stops_a_running_query(tmp_path):
    """SIGINT while ``Session.sql(...).collect()`` runs raises KeyboardInterrupt quickly: the
    scans stop at their next row group, and the session answers the next query."""
    path = _big_file(tmp_path)
    out, err, waited, _ = _interrupt(
        f"""
        import sys, time
        import ferrospark as fs

        s = fs.Session(conf={{"spark.sql.parquet.filterPushdown": "false"}})
        s.read.parquet(*[{path!r}] * 500).createOrReplaceTempView("big")
        print("ready", flush=True)
        start = time.time()
        try:
            n = s.sql("SELECT count(*) FROM big WHERE a * 7 % 1000003 = -1").collect()
        except KeyboardInterrupt:
            print("interrupted", time.time() - start, flush=True)
            print("after", s.sql("SELECT count(*) AS n FROM VALUES (1), (2)").collect()[0].n, flush=True)
            raise
        print("finished", n, time.time() - start, flush=True)
        """,
        after=1.5,
    )
    assert "finished" not in out, "the query ended before the signal: make it longer"
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert "interrupted" in out and "after 2" in out, out
    assert waited < 5, f"took {waited:.1f} s to stop after SIGINT"


# -- progress bar ---------------------------------------------------------------------------


def _many_row_groups(tmp_path) -> str:
    path = tmp_path / "rg.parquet"
    pq.write_table(pa.table({"a": pa.array(range(400_000), pa.int64())}), path, row_group_size=10_000)
    return str(path)


def test_progress_bar_draws_when_asked_and_clears(tmp_path, capfd):
    path = _many_row_groups(tmp_path)
    s = fs.Session(conf={"ferrospark.progress.bar": "always", "ferrospark.progress.delay": "0"})
    # Long enough (a few hundred ms) that the bar is drawn between two of the caller's
    # polls even on a busy machine.
    s.read.parquet(*[path] * 100).createOrReplaceTempView("t")
    n = s.sql("SELECT count(*) AS n FROM t WHERE a * 3 % 7 = 1").collect()[0].n
    assert n == 100 * sum(1 for a in range(400_000) if a * 3 % 7 == 1)
    err = capfd.readouterr().err
    assert "row groups" in err and "%" in err, err[-500:]
    assert "/4000 row groups" in err, err[-500:]
    # The bar's line is erased when the query ends.
    assert err.endswith("\r"), repr(err[-80:])


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path, capfd):
    path = _many_row_groups(tmp_path)
    s = fs.Session(conf={"ferrospark.progress.delay": "0"})
    s.read.parquet(*[path] * 20).createOrReplaceTempView("t")
    s.sql("SELECT sum(a) FROM t").collect()
    assert capfd.readouterr().err == ""


def test_progress_bar_on_a_terminal(tmp_path):
    """With the default ``auto``, a query on a terminal draws the bar (here a pseudo-terminal)."""
    import os
    import pty

    path = _many_row_groups(tmp_path)
    code = f"""
        import ferrospark as fs
        s = fs.Session(conf={{"ferrospark.progress.delay": "0"}})
        s.read.parquet(*[{path!r}] * 40).createOrReplaceTempView("t")
        print(s.sql("SELECT count(*) AS n FROM t WHERE a * 3 % 7 = 1").collect()[0].n)
    """
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=follower, text=True
    )
    os.close(follower)
    chunks: list[bytes] = []

    def drain() -> None:
        # Read as the child writes, so a full terminal buffer never blocks it.
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=120)
    reader.join(timeout=10)
    os.close(leader)
    assert proc.returncode == 0
    assert int(out) == 40 * sum(1 for a in range(400_000) if a * 3 % 7 == 1)
    assert b"row groups" in b"".join(chunks)


def test_bad_progress_settings_are_config_errors():
    s = fs.Session(conf={"ferrospark.progress.bar": "sometimes"})
    with pytest.raises(fs.ConfigError, match="auto, always or never"):
        s.sql("SELECT 1").collect()
    assert fs.Session().sql("SELECT 1 AS x").collect()[0].x == 1


def test_a_forked_process_runs_queries_on_worker_threads_of_its_own() -> None:
    # The session's worker threads live in the process that started them: a child forked
    # after a query (multiprocessing, a Spark Python worker) must start its own, not wait
    # on threads it does not have.
    r = _run(
        """
        import os, sys, pyarrow as pa, ferrospark as fs
        s = fs.Session()
        t = pa.table({"k": [i % 7 for i in range(5000)], "v": list(range(5000))})
        df = s.createDataFrame(t).groupBy("k").count().orderBy("k")
        before = df.toArrow()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if df.toArrow().equals(before) else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), before.num_rows)
        """,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "child 0 7" in r.stdout, r.stdout + r.stderr
