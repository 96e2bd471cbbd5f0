"""The streaming state store through Python: both providers, a writer killed at any point
of its commits, damaged files, and the disk provider against the memory provider."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ferrospark as fs
from ferrospark import streaming as fst

SCRIPTS = Path(__file__).resolve().parent / "scripts"
sys.path.insert(0, str(SCRIPTS))
import state_worker  # noqa: E402

WORKER = SCRIPTS / "state_worker.py"


def model_at(version: int) -> dict[bytes, bytes]:
    """The state a run of the worker holds at ``version``."""
    state: dict[bytes, bytes] = {}
    for v in range(version):
        puts, removes = state_worker.changes(v)
        state.update(puts)
        for k in removes:
            state.pop(k, None)
    return state


@pytest.mark.parametrize("provider", ["memory", "disk"])
def test_versions_read_back_as_committed(tmp_path, provider):
    st = state_worker.store(str(tmp_path / "ckpt"), provider)
    assert st.latest_version() == 0
    assert st.commit(0, {b"a/1": b"x", b"a/2": b"y", b"b/1": "日本".encode()}) == 1
    assert st.commit(1, {b"a/1": b"x2"}, [b"a/2", b"nope"]) == 2
    assert st.scan(1) == [(b"a/1", b"x"), (b"a/2", b"y"), (b"b/1", "日本".encode())]
    assert st.scan(2, b"a/") == [(b"a/1", b"x2")]
    assert st.get(2, b"a/2") is None and st.get(1, b"a/2") == b"y"
    m = st.metrics()
    assert (m["numRowsTotal"], m["numRowsUpdated"], m["numRowsRemoved"]) == (2, 1, 1)
    assert m["commitTimeMs"] >= 0
    # A re-run of batch 1 replaces version 2.
    assert st.commit(1, {b"c": b"z"}) == 2
    assert st.scan(2) == [(b"a/1", b"x"), (b"a/2", b"y"), (b"b/1", "日本".encode()), (b"c", b"z")]
    with pytest.raises(fs.StateStoreError, match="version 7"):
        st.get(7, b"a/1")
    assert fst.StateStore(str(tmp_path / "ckpt"), conf=None).latest_version() in (0, 2)


def test_the_providers_agree_on_a_random_workload(tmp_path):
    rnd = random.Random(5)
    stores = {p: state_worker.store(str(tmp_path / p), p) for p in ("memory", "disk")}
    for v in range(30):
        puts = {
            f"{rnd.choice('abc')}/{rnd.randrange(200)}".encode(): os.urandom(rnd.randrange(8))
            for _ in range(50)
        }
        removes = [f"{rnd.choice('abc')}/{rnd.randrange(200)}".encode() for _ in range(20)]
        for st in stores.values():
            assert st.commit(v, puts, removes) == v + 1
        mem, disk = (stores[p].scan(v + 1, b"b/") for p in ("memory", "disk"))
        assert mem == disk
        assert stores["memory"].metrics()["numRowsTotal"] == stores["disk"].metrics()["numRowsTotal"]


@pytest.mark.parametrize("provider", ["memory", "disk"])
def test_a_writer_killed_at_any_point_loses_and_duplicates_nothing(tmp_path, provider):
    """The worker is killed at a random moment of its run, three times, and restarted; each
    time the store holds exactly the versions it committed, and the final state equals an
    uninterrupted run's."""
    ckpt = str(tmp_path / "ckpt")
    total = 12
    rnd = random.Random(3)
    for _ in range(3):
        p = subprocess.Popen(
            [sys.executable, str(WORKER), ckpt, provider, str(total)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(rnd.uniform(0.3, 1.5))
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        st = state_worker.store(ckpt, provider)
        v = st.latest_version()
        assert dict(st.scan(v)) == model_at(v), f"version {v} after a kill"
    done = subprocess.run(
        [sys.executable, str(WORKER), ckpt, provider, str(total)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    st = state_worker.store(ckpt, provider)
    assert st.latest_version() == total
    assert dict(st.scan(total)) == model_at(total)


def test_a_damaged_delta_is_an_error_naming_it(tmp_path):
    ckpt = tmp_path / "ckpt"
    st = state_worker.store(str(ckpt), "memory")
    for v in range(2):
        puts, removes = state_worker.changes(v)
        st.commit(v, puts, removes)
    delta = ckpt / "state" / "0" / "0" / "2.delta"
    data = delta.read_bytes()
    delta.write_bytes(data[: len(data) // 2])
    fresh = state_worker.store(str(ckpt), "memory")
    with pytest.raises(fs.StateStoreError, match="2.delta.*corrupt or truncated"):
        fresh.scan(2)
    # Nothing else is affected: version 1 still reads, and the process carries on.
    assert dict(fresh.scan(1)) == model_at(1)


def test_state_beyond_the_memory_limit_moves_to_disk(tmp_path):
    """The in-memory store moves to disk once ``ferrospark.memory.limit`` cannot hold it, and
    reads the same; versions from before the move are a clear error."""
    ckpt = tmp_path / "ckpt"
    # Five entries of about 40 bytes a batch (key, value, header) and the hash table's
    # slots: two batches fit, the third moves the store.
    st = fst.StateStore(str(ckpt), conf={"ferrospark.memory.limit": "1000b"})
    model: dict[bytes, bytes] = {}
    v = 0
    for b in range(6):
        puts = {f"k{b}-{i}".encode(): bytes([b]) * 20 for i in range(5)}
        model.update(puts)
        v = st.commit(v, puts)
        assert st.scan(v) == sorted(model.items())
    assert (ckpt / "state" / "0" / "0" / "state.db").exists()
    assert st.metrics()["spillsToDisk"] == 1
    assert fst.StateStore(str(ckpt)).scan(v) == sorted(model.items()), "reopened: on disk"
    with pytest.raises(fs.StateStoreError, match="moved to disk"):
        st.scan(1)


@pytest.mark.parametrize("codec", ["lz4", "zstd", "org.apache.spark.io.ZStdCompressionCodec"])
def test_files_are_compressed_by_sparks_codec_key(tmp_path, codec):
    """``spark.sql.streaming.stateStore.compression.codec`` compresses the delta files; a
    reopened store reads them back; a codec ferrospark does not write is a ConfigError."""
    ckpt = tmp_path / "ckpt"
    conf = {"spark.sql.streaming.stateStore.compression.codec": codec}
    st = fst.StateStore(str(ckpt), conf=conf)
    puts = {f"key-{i:05d}".encode(): b"value " * 20 for i in range(2000)}
    assert st.commit(0, puts) == 1
    delta = ckpt / "state" / "0" / "0" / "1.delta"
    raw = sum(len(k) + len(v) for k, v in puts.items())
    assert delta.read_bytes()[:8] == b"FSSTATE2"
    assert delta.stat().st_size < raw / 4, "compressed"
    assert dict(fst.StateStore(str(ckpt)).scan(1)) == puts
    with pytest.raises(fs.ConfigError, match="snappy"):
        fst.StateStore(
            str(tmp_path / "other"),
            conf={"spark.sql.streaming.stateStore.compression.codec": "snappy"},
        )


def test_the_join_reports_its_state_and_timings(tmp_path):
    """``StreamStreamJoin.metrics()``: its four stores' rows added up (a count per key and a
    row per buffered row, each side), and Spark's operator timings."""
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    j = fst.StreamStreamJoin(
        on=["k"],
        how="inner",
        checkpoint=str(tmp_path / "ckpt"),
        conf={"ferrospark.streaming.statePartitions": "2"},
    )
    assert j.metrics() == {}
    left = pa.table({"k": [1, 1, 2], "a": [0, 1, 2], "lt": pa.array([0, 1, 2], ts)})
    right = pa.table({"k": [1, 3], "b": [5, 6], "rt": pa.array([3, 4], ts)})
    out = j.process(0, left, right)
    assert out.num_rows == 2
    m = j.metrics()
    # Left: keys 1 and 2, three rows; right: keys 1 and 3, two rows.
    assert m["numRowsTotal"] == 2 + 3 + 2 + 2
    assert m["numRowsUpdated"] >= 9
    assert m["allUpdatesTimeMs"] > 0 and m["allRemovalsTimeMs"] >= 0
    assert m["deltasWritten"] == 2 * 4, "four stores in each of two partitions"


def test_state_of_another_row_encoding_is_refused_naming_the_file(tmp_path):
    """A checkpoint records the arrow-row encoding its state keys were written in; a build
    that encodes rows differently refuses to resume it (rather than finding no stored key
    equal to a new one), and the same build resumes it."""
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    ckpt = tmp_path / "ckpt"
    left = pa.table({"k": [1, 2], "a": [0, 1], "lt": pa.array([0, 1], ts)})
    right = pa.table({"k": [1], "b": [5], "rt": pa.array([3], ts)})

    def join() -> fst.StreamStreamJoin:
        return fst.StreamStreamJoin(on=["k"], how="inner", checkpoint=str(ckpt))

    assert join().process(0, left, right).num_rows == 1
    recorded = ckpt / "state" / "0" / "_rowformat"
    text = recorded.read_text()
    assert text.startswith("arrow-row ")
    recorded.write_text("arrow-row 0000000000000001\n")
    with pytest.raises(fs.StateStoreError, match="_rowformat.*0000000000000001.*new checkpoint"):
        join().process(1, left, None)
    recorded.write_text(text)
    # Key 1 was stored on the right by batch 0: the left row of key 1 in batch 1 joins it.
    assert join().process(1, left, None).num_rows == 1
