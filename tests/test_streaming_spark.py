"""Stream-stream joins and streaming session windows against Spark Structured Streaming,
batch by batch: the same micro-batches (a file source taking one file per trigger under
``Trigger.AvailableNow``) through Spark and through ``ferrospark.streaming``, each batch's
output compared, the trailing no-data batch Spark runs to flush outer rows and sessions
included. The data has NULL keys, duplicates, unicode, out-of-order and late rows."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import os
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from streaming_oracle import StreamRun, _session_conf, run_session_window_stream, run_stream_join

import ferrospark as fs
from ferrospark import streaming as fst

UTC = dt.timezone.utc
BASE = dt.datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
TS = pa.timestamp("us", tz="UTC")


def _minutes(m: float) -> dt.datetime:
    return BASE + dt.timedelta(minutes=m)


def _side(rows: list[tuple[Any, dt.datetime | None, str | None]], k: str, t: str, v: str) -> pa.Table:
    return pa.table(
        {
            k: pa.array([r[0] for r in rows], pa.int64()),
            t: pa.array([r[1] for r in rows], TS),
            v: pa.array([r[2] for r in rows], pa.string()),
        }
    )


def join_input(seed: int, names: tuple[str, str, str, str, str, str], batches: int = 6) -> tuple[list, list]:
    """Batches of both sides: a clock moving 10 minutes a batch, rows up to 6 minutes out of
    order, one in ten 40 minutes behind (late), NULL keys and times, duplicate rows, and a
    last batch with one far-future row per side, unmatched, to move the watermarks on."""
    rng = random.Random(seed)
    lk, lt, lv, rk, rt, rv = names
    left, right = [], []
    for b in range(batches):
        clock = 10 * b

        def rows(prefix: str, keys: int, b: int = b, clock: int = clock) -> list:
            out = []
            for i in range(rng.randrange(0, 12)):
                late = rng.random() < 0.1
                t = _minutes(clock + rng.uniform(-6, 3) - (40 if late else 0))
                key = None if rng.random() < 0.05 else rng.randrange(keys)
                row = (key, None if rng.random() < 0.03 else t, f"{prefix}{b}·{i}ü")
                out.append(row)
                if rng.random() < 0.1:
                    out.append(row)
            return out

        left.append(_side(rows("l", 6), lk, lt, lv))
        right.append(_side(rows("r", 5), rk, rt, rv))
    left.append(_side([(1000, _minutes(10 * batches + 500), "lend")], lk, lt, lv))
    right.append(_side([(2000, _minutes(10 * batches + 500), "rend")], rk, rt, rv))
    return left, right


def _key(v: Any) -> tuple:
    return (v is None, "" if v is None else str(type(v)), v if v is not None else 0)


def _plain(v: Any) -> Any:
    return tuple(v.values()) if isinstance(v, dict) else v


def rows_of(t: pa.Table) -> list[tuple]:
    """The table's rows, sorted (NULLs last), timestamps as UTC datetimes, structs as tuples."""
    rows = [tuple(_plain(v) for v in r.values()) for r in t.to_pylist()]
    return sorted(rows, key=lambda r: tuple(_key(v) for v in r))


def compare_batches(spark_run: Any, ours: dict[int, pa.Table]) -> None:
    assert [b for b, _ in spark_run.outputs] == sorted(ours), "the same micro-batches ran"
    emitted = 0
    for batch_id, table in spark_run.outputs:
        mine = ours[batch_id]
        assert mine.column_names == table.column_names, batch_id
        assert rows_of(mine) == rows_of(table), f"batch {batch_id}"
        emitted += table.num_rows
    assert emitted > 0, "the comparison saw rows"


def join_batches(j: Any, theirs: Any, left: list, right: list) -> dict[int, pa.Table]:
    """Our join's output for each batch Spark ran (no input after the last file)."""
    ours = {}
    for batch_id, _ in theirs.outputs:
        has = batch_id < len(left)
        ours[batch_id] = j.process(
            batch_id, left[batch_id] if has else None, right[batch_id] if has else None
        )
    return ours


JOINS = ["inner", "left", "right", "full", "semi"]
TIME_RANGE = "lt BETWEEN rt - INTERVAL 5 MINUTES AND rt + INTERVAL 5 MINUTES"
USING_NAMES = ("k", "lt", "lv", "k", "rt", "rv")
USING_WM = {"left_watermark": ("lt", "5 minutes"), "right_watermark": ("rt", "10 minutes")}
CONDITION_NAMES = ("lk", "lt", "lv", "rk", "rt", "rv")
CONDITION = f"lk = rk AND {TIME_RANGE} AND lv NOT LIKE '%3·%'"
CONDITION_WM = {"left_watermark": ("lt", "5 minutes"), "right_watermark": ("rt", "5 minutes")}
CONDITION_JOINS = ["inner", "left", "full"]

# Spark's runs the tests compare with are its answers only: what each micro-batch emitted, in
# a query of its own over its own inputs and checkpoint. Those do not depend on the number of
# shuffle partitions holding a stateful operator's state (a key's rows meet in one partition
# either way), and one partition costs Spark about half the work of the session's four.
# ``numRecentProgressUpdates`` is what ``run_stream_join`` and ``run_session_window_stream``
# set for their query; set around all the concurrent runs, each run's own setting saves and
# restores that same value, so no run's setting outlives the rest.
ORACLE_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.streaming.numRecentProgressUpdates": "100000",
}


def spark_runs(
    spark: Any, runs: dict[Any, Callable[[], StreamRun]], conf: dict[str, str] | None = None
) -> dict:
    """Spark's queries ``runs`` (each a ``run_stream_join`` or ``run_session_window_stream``
    call taking no session confs of its own), side by side in one session: the result of
    each by its name. Each is a query of its own, as if run alone. A query alone leaves
    Spark's cores idle much of the time (a micro-batch is a chain of small steps: offsets,
    planning, a few tiny tasks, state and commit files); side by side they fill each other's
    gaps, about halving the time. (One query joining the same inputs several ways is not the
    same: Spark 4.x reuses one join's exchange in another, and the full outer join's answers
    change.) Session confs, ``ORACLE_CONF`` and ``conf``, are set once around all of them:
    a query reads them when it starts."""
    with _session_conf(spark, {**ORACLE_CONF, **(conf or {})}):
        with ThreadPoolExecutor(max_workers=len(runs)) as pool:
            futures = {name: pool.submit(run) for name, run in runs.items()}
        return {name: f.result() for name, f in futures.items()}


@pytest.fixture(scope="module")
def join_runs(spark, tmp_path_factory) -> dict[tuple[str, str], StreamRun]:
    """Spark's stream-stream joins the join tests compare with, run once, side by side:
    ``("using", how)`` for every join type over ``join_input(11)`` (USING keys and the time
    range), ``("condition", how)`` over ``join_input(5)`` (keys from the condition, a
    left-only conjunct)."""
    work = tmp_path_factory.mktemp("spark-joins")
    left, right = join_input(11, USING_NAMES)
    runs: dict[Any, Callable[[], StreamRun]] = {
        ("using", how): functools.partial(
            run_stream_join,
            spark,
            work / f"using-{how}",
            left,
            right,
            how=how,
            on=["k"],
            condition=TIME_RANGE,
            **USING_WM,
        )
        for how in JOINS
    }
    cleft, cright = join_input(5, CONDITION_NAMES)
    for how in CONDITION_JOINS:
        runs["condition", how] = functools.partial(
            run_stream_join,
            spark,
            work / f"condition-{how}",
            cleft,
            cright,
            how=how,
            condition=CONDITION,
            **CONDITION_WM,
        )
    return spark_runs(spark, runs)


@pytest.mark.parametrize("how", JOINS)
def test_using_join_matches_spark_batch_by_batch(join_runs, tmp_path, how):
    left, right = join_input(11, USING_NAMES)
    theirs = join_runs["using", how]
    j = fst.StreamStreamJoin(
        on=["k"], how=how, condition=TIME_RANGE, checkpoint=str(tmp_path / "fs"), **USING_WM
    )
    compare_batches(theirs, join_batches(j, theirs, left, right))


@pytest.mark.parametrize("how", CONDITION_JOINS)
def test_condition_join_with_a_one_side_filter_matches_spark(join_runs, tmp_path, how):
    """Keys from the condition's equality; the left-only conjunct is Spark's pre-join filter,
    so an outer join emits a left row failing it at once."""
    left, right = join_input(5, CONDITION_NAMES)
    theirs = join_runs["condition", how]
    j = fst.StreamStreamJoin(on=CONDITION, how=how, checkpoint=str(tmp_path / "fs"), **CONDITION_WM)
    compare_batches(theirs, join_batches(j, theirs, left, right))


def test_the_max_watermark_policy_matches_spark(spark, tmp_path):
    left, right = join_input(23, USING_NAMES)
    wm = {"left_watermark": ("lt", "2 minutes"), "right_watermark": ("rt", "15 minutes")}
    conf = {"spark.sql.streaming.multipleWatermarkPolicy": "max"}
    run = functools.partial(
        run_stream_join,
        spark,
        tmp_path / "spark",
        left,
        right,
        how="left",
        on=["k"],
        condition=TIME_RANGE,
        **wm,
    )
    theirs = spark_runs(spark, {"max": run}, conf)["max"]
    j = fst.StreamStreamJoin(
        on=["k"], how="left", condition=TIME_RANGE, checkpoint=str(tmp_path / "fs"), conf=conf, **wm
    )
    compare_batches(theirs, join_batches(j, theirs, left, right))


def test_a_join_whose_state_outgrows_the_memory_limit_matches_spark(join_runs, tmp_path):
    """Under ``ferrospark.memory.limit`` the join's stores move to disk mid-stream (Spark's
    own provider would need its RocksDB one chosen up front); the answers stay Spark's (its
    full outer USING join of ``join_input(11)``)."""
    left, right = join_input(11, USING_NAMES)
    theirs = join_runs["using", "full"]
    ckpt = tmp_path / "fs"
    j = fst.StreamStreamJoin(
        on=["k"],
        how="full",
        condition=TIME_RANGE,
        checkpoint=str(ckpt),
        conf={"ferrospark.memory.limit": "1k", "ferrospark.streaming.statePartitions": "2"},
        **USING_WM,
    )
    compare_batches(theirs, join_batches(j, theirs, left, right))
    assert list(ckpt.glob("state/0/*/*/state.db")), "some state went to disk"


def test_joins_spark_refuses_are_refused(tmp_path):
    for how, wm, cond in [
        ("left", {}, TIME_RANGE),
        ("left", {"left_watermark": ("lt", "5 minutes")}, TIME_RANGE),
        ("full", {"left_watermark": ("lt", "5 minutes"), "right_watermark": ("rt", "5 minutes")}, None),
        ("semi", {}, None),
        # Both watermarks, but the left rows are bounded only from above: never evicted.
        ("left", {"left_watermark": ("lt", "5 minutes"), "right_watermark": ("rt", "5 minutes")}, "lt <= rt"),
        (
            "right",
            {"left_watermark": ("lt", "5 minutes"), "right_watermark": ("rt", "5 minutes")},
            "lt >= rt",
        ),
    ]:
        left, right = join_input(1, ("k", "lt", "lv", "k", "rt", "rv"), batches=1)
        j = fst.StreamStreamJoin(on=["k"], how=how, condition=cond, checkpoint=str(tmp_path / how), **wm)
        with pytest.raises(fs.AnalysisError, match="not supported without a watermark in the join keys"):
            j.process(0, left[0], right[0])
    # Accepted by Spark: the nullable side watermarked and bounded.
    j = fst.StreamStreamJoin(
        on=["k"],
        how="left",
        condition=TIME_RANGE,
        right_watermark=("rt", "5 minutes"),
        checkpoint=str(tmp_path / "ok"),
    )
    left, right = join_input(1, ("k", "lt", "lv", "k", "rt", "rv"), batches=1)
    j.process(0, left[0], right[0])


def session_input(seed: int, batches: int = 6) -> list[pa.Table]:
    """Clicks of six users (one NULL), the clock moving 4 minutes a batch, up to 3 minutes out
    of order, some rows 30 minutes late, then one far-future row to close every session."""
    rng = random.Random(seed)
    users = ["ana", "bo", "çelik", "dé", "eve", None]
    out = []
    for b in range(batches):
        rows = []
        for _ in range(rng.randrange(0, 15)):
            late = rng.random() < 0.1
            t = _minutes(4 * b + rng.uniform(-3, 1) - (30 if late else 0))
            rows.append((rng.choice(users), t, rng.randrange(-5, 50)))
        out.append(rows)
    out.append([("zz", _minutes(4 * batches + 600), 0)])
    return [
        pa.table(
            {
                "user": pa.array([r[0] for r in rows], pa.string()),
                "ts": pa.array([r[1] for r in rows], TS),
                "v": pa.array([r[2] for r in rows], pa.int64()),
            }
        )
        for rows in out
    ]


SESSION_WATERMARK = ("ts", "5 minutes")
PER_ROW_GAP = (
    "CASE WHEN user = 'ana' THEN '30 seconds' WHEN user = 'bo' THEN '-1 minute' ELSE '3 minutes' END"
)
#: Spark's session-window runs the session tests compare with: (seed of ``session_input``,
#: gap, output mode) by name.
SESSION_RUNS = {
    "append": (3, "2 minutes", "append"),
    "complete": (3, "2 minutes", "complete"),
    "memory limit": (8, "2 minutes", "append"),
    "per-row gap": (8, PER_ROW_GAP, "append"),
}


@pytest.fixture(scope="module")
def session_runs(spark, tmp_path_factory) -> dict[str, StreamRun]:
    """Spark's session-window aggregations of ``SESSION_RUNS``, run once, side by side."""
    work = tmp_path_factory.mktemp("spark-sessions")
    runs: dict[Any, Callable[[], StreamRun]] = {
        name: functools.partial(
            run_session_window_stream,
            spark,
            work / name.replace(" ", "-"),
            session_input(seed),
            time="ts",
            gap=gap,
            by=["user"],
            aggs=["count(*) AS n", "sum(v) AS s", "max(v) AS top"],
            watermark=SESSION_WATERMARK,
            output_mode=mode,
        )
        for name, (seed, gap, mode) in SESSION_RUNS.items()
    }
    return spark_runs(spark, runs)


def _session_run(session_runs, tmp_path, name, *, our_gap, conf=None) -> None:
    """Our session windows over the input of Spark's run ``name`` of ``SESSION_RUNS``, batch
    by batch against Spark's."""
    seed, _, mode = SESSION_RUNS[name]
    batches = session_input(seed)
    theirs = session_runs[name]
    sw = fst.SessionWindowAggregation(
        "ts",
        our_gap,
        by="user",
        aggs=[fs.count("*").alias("n"), fs.sum("v").alias("s"), fs.max("v").alias("top")],
        watermark=SESSION_WATERMARK,
        output_mode=mode,
        checkpoint=str(tmp_path / "fs"),
        conf=conf,
    )
    ours = {}
    for batch_id, _ in theirs.outputs:
        ours[batch_id] = sw.process(batch_id, batches[batch_id] if batch_id < len(batches) else None)
    compare_batches(theirs, ours)
    assert sw.metrics()["numRowsTotal"] >= 0


@pytest.mark.parametrize("mode", ["append", "complete"])
def test_session_windows_match_spark_batch_by_batch(session_runs, tmp_path, mode):
    _session_run(session_runs, tmp_path, mode, our_gap="2 minutes")


def test_sessions_whose_state_outgrows_the_memory_limit_match_spark(session_runs, tmp_path):
    ckpt = tmp_path / "fs"
    _session_run(
        session_runs,
        tmp_path,
        "memory limit",
        our_gap="2 minutes",
        conf={"ferrospark.memory.limit": "200b", "ferrospark.streaming.statePartitions": "1"},
    )
    assert list(ckpt.glob("state/0/*/state.db")), "the sessions went to disk"


def test_a_per_row_gap_matches_spark(session_runs, tmp_path):
    _session_run(session_runs, tmp_path, "per-row gap", our_gap=fs.expr(PER_ROW_GAP))


def test_append_without_a_watermark_is_refused(tmp_path):
    with pytest.raises(fs.AnalysisError, match="Append output mode not supported"):
        sw = fst.SessionWindowAggregation(
            "ts", "5 minutes", by="user", aggs=[fs.count()], checkpoint=str(tmp_path)
        )
        sw.process(0, session_input(1)[0])


def _fss_collect(writer: Any) -> Any:
    q = writer.trigger(availableNow=True).start()
    q.awaitTermination(600)
    err = q.exception()
    if err is not None:
        raise err
    return q


def _fss_join_input(seed: int, right_batches: int | None) -> tuple[list, list]:
    left, right = join_input(seed, USING_NAMES)
    if right_batches is not None:
        right = [*right[:right_batches], right[-1]]
    return left, right


def _spark_join(
    spark: Any, workdir: Path, seed: int, how: str, right_batches: int | None = None
) -> StreamRun:
    """Spark's own join of ``join_input(seed)``: the oracle of ``_fss_join``."""
    left, right = _fss_join_input(seed, right_batches)
    return run_stream_join(spark, workdir, left, right, how=how, on=["k"], condition=TIME_RANGE, **USING_WM)


def _fss_join(
    spark: Any,
    tmp_path: Path,
    seed: int,
    how: str,
    on_batch: Any,
    conf: dict[str, str] | None = None,
    right_batches: int | None = None,
    *,
    theirs: StreamRun | None = None,
) -> tuple[Any, Any]:
    """Spark's own join of ``join_input(seed)`` (its oracle) and the same join
    through ``fss.stream_join`` with ``on_batch`` under ``conf``, run to the end, and the
    finished fss query. ``right_batches``: the right side's first batches only (and its
    last), so that later batches have new files on the left alone. ``theirs``: the oracle's
    run already made (``_spark_join`` of the same seed, join type and ``right_batches``)."""
    from streaming_oracle import _read_stream, write_batches

    from ferrospark import spark as fss

    left, right = _fss_join_input(seed, right_batches)
    wm = USING_WM
    if theirs is None:
        theirs = _spark_join(spark, tmp_path / "spark", seed, how, right_batches)
    write_batches(tmp_path / "in" / "left", [*left, left[0].schema.empty_table()])
    write_batches(tmp_path / "in" / "right", [*right, right[0].schema.empty_table()])
    writer = fss.stream_join(
        _read_stream(spark, tmp_path / "in" / "left", None),
        _read_stream(spark, tmp_path / "in" / "right", None),
        on=["k"],
        how=how,
        condition=TIME_RANGE,
        checkpoint=str(tmp_path / "ckpt"),
        on_batch=on_batch,
        conf=conf,
        **wm,
    )
    return theirs, _fss_collect(writer)


#: Spark's own joins the fss join tests compare with: (seed of ``join_input``, join type).
FSS_JOINS = [(31, "left"), (31, "full"), (37, "left"), (41, "left")]
#: Spark's own session windows the fss session tests compare with: seeds of ``session_input``.
FSS_SESSIONS = [17]


@pytest.fixture(scope="module")
def fss_oracle(spark, tmp_path_factory) -> dict[tuple, StreamRun]:
    """Spark's own runs of ``FSS_JOINS`` (``("join", seed, how)``) and ``FSS_SESSIONS``
    (``("sessions", seed)``), run once, side by side."""
    work = tmp_path_factory.mktemp("spark-fss")
    runs: dict[Any, Callable[[], StreamRun]] = {
        ("join", seed, how): functools.partial(_spark_join, spark, work / f"join-{seed}-{how}", seed, how)
        for seed, how in FSS_JOINS
    }
    for seed in FSS_SESSIONS:
        runs["sessions", seed] = functools.partial(_spark_sessions, spark, work / f"sessions-{seed}", seed)
    return spark_runs(spark, runs)


@pytest.mark.parametrize(("how", "scan"), [("left", "true"), ("full", "true"), ("left", "false")])
def test_fss_stream_join_matches_sparks_own(spark, fss_oracle, tmp_path, how, scan):
    """ferrospark's join as the stateful step of a Structured Streaming query, its state
    split over Spark's shuffle partitions, its sources' files read by fss's tasks or its rows
    from Spark: each batch equals Spark's own join's, and the query's progress counts every
    input row. Spark gives its own join a trailing no-data batch; the fss query gets an
    empty batch in its place."""
    got: dict[int, pa.Table] = {}
    leases: dict[int, list[str]] = {}

    def on_batch(df: Any, b: int) -> None:
        got[b] = df.toArrow()
        leases[b] = sorted(p.name for p in (tmp_path / "ckpt" / "running").iterdir())

    theirs, q = _fss_join(
        spark,
        tmp_path,
        31,
        how,
        on_batch,
        {"ferrospark.streaming.nativeScan": scan},
        theirs=fss_oracle["join", 31, how],
    )
    compare_batches(theirs, got)
    rows = sum(t.num_rows for side in join_input(31, USING_NAMES) for t in side)
    assert sum(p["numInputRows"] for p in q.recentProgress) == rows
    # The query's lease (which keeps its operators loaded in the state hosts) lived while it
    # ran and went with it.
    assert all(len(names) == 1 for names in leases.values()) and len(set(map(tuple, leases.values()))) == 1
    running = tmp_path / "ckpt" / "running"
    deadline = time.monotonic() + 30
    while any(running.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(running.iterdir())
    parts = sorted(p.name for p in (tmp_path / "ckpt" / "state" / "0").iterdir() if p.is_dir())
    assert parts == [str(i) for i in range(int(spark.conf.get("spark.sql.shuffle.partitions")))], parts


@pytest.mark.parametrize("reads", ["part", "odd batches not at all"])
def test_fss_batches_on_batch_does_not_read_whole_still_move_the_state(spark, fss_oracle, tmp_path, reads):
    """The partitions an ``on_batch`` leaves unread (a ``limit``, or no action) still run
    their batch: the batches after it equal Spark's own join's, and a partition read in part
    and then whole gives the same rows."""
    got: dict[int, pa.Table] = {}

    def on_batch(df: Any, b: int) -> None:
        if reads == "part":
            df.limit(1).collect()
            got[b] = df.toArrow()
        elif b % 2 == 0:
            got[b] = df.toArrow()

    theirs, _ = _fss_join(spark, tmp_path, 37, "left", on_batch, theirs=fss_oracle["join", 37, "left"])
    if reads != "part":
        # A copy: the oracle's run is shared with the other tests.
        theirs = dataclasses.replace(theirs, outputs=[(b, t) for b, t in theirs.outputs if b % 2 == 0])
    compare_batches(theirs, got)


def _descends_from_this_process(pid: int) -> bool:
    """Whether ``pid`` is this process or one it started (through its JVM, ...)."""
    me = os.getpid()
    while pid > 1:
        if pid == me:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rpartition(")")[2].split()[1])  # the parent's pid
    return False


def _spark_hosts() -> dict[int, int]:
    """The state hosts serving this test process's Spark's Python daemons: host pid by
    executor pid. Not other processes' (another pytest-xdist worker's Spark on the machine)."""
    from ferrospark import state_host

    out = {}
    for pid_file in state_host.host_dir().glob("h-*.pid"):
        executor = int(pid_file.name.split("-")[1])
        try:
            cmdline = Path(f"/proc/{executor}/cmdline").read_bytes()
            out[executor] = int(pid_file.read_text())
        except (OSError, ValueError):
            continue
        if b"pyspark" not in cmdline or not _descends_from_this_process(executor):
            del out[executor]
    return out


def test_fss_state_host_killed_between_batches_changes_nothing(spark, fss_oracle, tmp_path):
    """The executor's state host, killed (``kill -9``) after a batch: the next batch's task
    starts another, which loads the partitions' state from their files; every batch equals
    Spark's own join's."""
    import signal

    got: dict[int, pa.Table] = {}
    killed: list[int] = []

    def on_batch(df: Any, b: int) -> None:
        got[b] = df.toArrow()
        if b == 2:
            hosts = _spark_hosts()
            assert hosts, "no state host served the batch"
            for pid in hosts.values():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    theirs, _ = _fss_join(spark, tmp_path, 41, "left", on_batch, theirs=fss_oracle["join", 41, "left"])
    compare_batches(theirs, got)
    after = _spark_hosts()
    assert after and not set(after.values()) & set(killed), (after, killed)


def _spark_sessions(spark: Any, workdir: Path, seed: int) -> StreamRun:
    """Spark's own session windows over ``session_input(seed)``: the oracle of
    ``fss_sessions``."""
    return run_session_window_stream(
        spark,
        workdir,
        session_input(seed),
        time="ts",
        gap="2 minutes",
        by=["user"],
        aggs=["count(*) AS n", "sum(v) AS s"],
        watermark=SESSION_WATERMARK,
        output_mode="append",
    )


def fss_sessions(
    spark: Any,
    tmp_path: Path,
    seed: int,
    conf: dict[str, str] | None = None,
    *,
    theirs: StreamRun | None = None,
) -> tuple:
    """Spark's own session windows over ``session_input(seed)`` (its oracle) and the same
    aggregation through ``fss.session_window_stream`` under ``conf``, run to the end: the
    oracle's batches, fss's batches and fss's finished query. ``theirs``: the oracle's run
    already made (``_spark_sessions`` of the same seed)."""
    from streaming_oracle import _read_stream, write_batches

    from ferrospark import spark as fss

    batches = session_input(seed)
    watermark = SESSION_WATERMARK
    if theirs is None:
        theirs = _spark_sessions(spark, tmp_path / "spark", seed)
    write_batches(tmp_path / "in", [*batches, batches[0].schema.empty_table()])
    got: dict[int, pa.Table] = {}
    writer = fss.session_window_stream(
        _read_stream(spark, tmp_path / "in", None),
        "ts",
        "2 minutes",
        by="user",
        aggs=[fs.count("*").alias("n"), fs.sum("v").alias("s")],
        watermark=watermark,
        checkpoint=str(tmp_path / "ckpt"),
        on_batch=lambda df, b: got.__setitem__(b, df.toArrow()),
        conf=conf,
    )
    q = writer.trigger(availableNow=True).start()
    q.awaitTermination(600)
    assert q.exception() is None, q.exception()
    return theirs, got, q


@pytest.mark.parametrize(("host", "scan"), [("true", "true"), ("false", "true"), ("true", "false")])
def test_fss_session_windows_match_sparks_own(spark, fss_oracle, tmp_path, host, scan):
    """With the executor's state host and without it (each task's operator in its Python
    worker), with the source's files read by fss's tasks and with Spark's rows, the sessions
    equal Spark's own, and the query's progress counts every input row."""
    conf = {"ferrospark.streaming.stateHost": host, "ferrospark.streaming.nativeScan": scan}
    theirs, got, q = fss_sessions(spark, tmp_path, 17, conf, theirs=fss_oracle["sessions", 17])
    compare_batches(theirs, got)
    rows = sum(b.num_rows for b in session_input(17))
    assert sum(p["numInputRows"] for p in q.recentProgress) == rows


@pytest.mark.parametrize("how", ["inner", "full"])
def test_columns_are_found_whatever_their_case(tmp_path, how):
    """Spark finds a column whatever its case (``spark.sql.caseSensitive=false``): keys,
    watermarks and session columns named in another case give the same rows as named
    exactly; an unknown one is ``[UNRESOLVED_COLUMN]`` suggesting the input's columns."""
    left, right = join_input(5, ("k", "lt", "lv", "k", "rt", "rv"))

    def run(ckpt: str, on: Any, lwm: str, rwm: str, rights: list) -> list[list]:
        j = fst.StreamStreamJoin(
            on=on,
            how=how,
            condition=TIME_RANGE,
            left_watermark=(lwm, "5 minutes"),
            right_watermark=(rwm, "10 minutes"),
            checkpoint=str(tmp_path / ckpt),
        )
        return [
            sorted(map(str, j.process(b, lt, rt).to_pylist())) for b, (lt, rt) in enumerate(zip(left, rights))
        ]

    want = run("exact", ["k"], "lt", "rt", right)
    assert sum(map(len, want)) > 0
    assert run("using", ["K"], "LT", "Rt", right) == want
    renamed = [t.rename_columns(["k2", "rt", "rv"]) for t in right]
    by_condition = run("cond", "k = K2", "lT", "RT", renamed)
    assert [len(b) for b in by_condition] == [len(b) for b in want]
    with pytest.raises(fs.AnalysisError, match=r"UNRESOLVED_COLUMN.*`kk`.*`k`"):
        run("unknown", "kk = k2", "lt", "rt", renamed)

    rows = session_input(3)
    exact = fst.SessionWindowAggregation(
        "ts",
        "2 minutes",
        by="user",
        aggs=[fs.count("*").alias("n")],
        watermark=("ts", "5 minutes"),
        checkpoint=str(tmp_path / "s1"),
    )
    cased = fst.SessionWindowAggregation(
        "TS",
        "2 minutes",
        by="USER",
        aggs=[fs.count("*").alias("n")],
        watermark=("Ts", "5 minutes"),
        checkpoint=str(tmp_path / "s2"),
    )
    for b, t in enumerate(rows):
        assert cased.process(b, t).to_pylist() == exact.process(b, t).to_pylist()


def test_fss_join_sides_share_columns_by_type_and_come_back_whole(spark):
    """A join's two inputs travel in shared columns (a left and a right column of the same
    type in one slot): each side's rows come back from the packed rows exactly, NULLs,
    NaN, -0.0 and unicode included; key columns of different types get a partitioning
    column of their own."""
    from ferrospark.spark_stages import arrow_schema
    from ferrospark.spark_streaming import SidePacking

    left = pa.table(
        {
            "a": pa.array([1, None, 3], pa.int32()),
            "t": pa.array([BASE, None, _minutes(1)], TS),
            "s": pa.array(["x", None, "ü·z"], pa.string()),
            "d": pa.array([float("nan"), -0.0, None], pa.float64()),
        }
    )
    right = pa.table(
        {
            "b": pa.array([3, 4, None, 1], pa.int64()),
            "u": pa.array([None, BASE, _minutes(2), BASE], TS),
            "x": pa.array(["p", "q", None, "ß"], pa.string()),
            "y": pa.array([None, "r", "s", ""], pa.string()),
            "z": pa.array([7, None, 9, 10], pa.int32()),
        }
    )
    ldf, rdf = spark.createDataFrame(left), spark.createDataFrame(right)
    assert ldf.dtypes == [("a", "int"), ("t", "timestamp"), ("s", "string"), ("d", "double")]
    packing = SidePacking(ldf, rdf, ["a"], ["b"])
    # a int / b bigint differ: a partitioning column of their own; the slots: a|z, t|u, s|x,
    # d, then b and y.
    assert packing.keys == ["__k0"]
    assert packing.left == {"a": 0, "t": 1, "s": 2, "d": 3}
    assert packing.right == {"b": 4, "u": 1, "x": 2, "y": 5, "z": 0}
    packed = packing.packed(ldf, rdf).toArrow()
    assert packed.column_names == ["__side", *[f"__c{i}" for i in range(6)], "__k0"]
    lt, rt = packing.unpack(packed.to_batches(), arrow_schema(ldf), arrow_schema(rdf))
    assert _same_with_nan(lt.to_pylist(), left.to_pylist())
    assert rt.to_pylist() == right.to_pylist()
    assert packed.column("__k0").to_pylist() == [1, None, 3, 3, 4, None, 1]
    # Keys of one type share their slot and partition on it.
    same = SidePacking(rdf, rdf, ["b", "z"], ["b", "z"])
    assert same.keys == ["__c0", "__c1"] and same.extra_keys == []
    assert len(same.types) == 5


def _same_with_nan(a: list[dict], b: list[dict]) -> bool:
    def norm(rows: list[dict]) -> list[tuple]:
        return [
            tuple(("nan" if isinstance(v, float) and v != v else (v, str(v))) for v in r.values())
            for r in rows
        ]

    return norm(a) == norm(b)


@pytest.mark.parametrize(("how", "condition"), [("left", "lt <= rt"), ("right", "lt >= rt")])
def test_a_join_whose_kept_rows_are_bounded_only_from_above_is_refused_as_spark_refuses_it(
    spark, tmp_path, how, condition
):
    wm = {"left_watermark": ("lt", "5 minutes"), "right_watermark": ("rt", "5 minutes")}
    left, right = join_input(3, ("k", "lt", "lv", "k", "rt", "rv"), batches=1)
    with pytest.raises(Exception, match="not supported without a watermark in the join keys"):
        run_stream_join(spark, tmp_path / "spark", left, right, how=how, on=["k"], condition=condition, **wm)
    j = fst.StreamStreamJoin(on=["k"], how=how, condition=condition, checkpoint=str(tmp_path / "fs"), **wm)
    with pytest.raises(fs.AnalysisError, match="not supported without a watermark in the join keys"):
        j.process(0, left[0], right[0])
