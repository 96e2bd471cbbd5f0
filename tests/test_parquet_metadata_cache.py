"""The footer cache: settled files are parsed once per process, a changed file never serves a
stale footer, and a file that changes under a planned scan is an error, not a crash."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ferrospark as fs
from ferrospark.parquet import clear_metadata_cache, metadata_cache_stats

HOUR = 3600


def _table(n: int, offset: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(offset, offset + n), pa.int64()),
            "v": pa.array([i * 0.5 for i in range(n)], pa.float64()),
        }
    )


def _settled_file(path, table: pa.Table) -> str:
    """A file whose inode change time is old enough for the cache to trust it."""
    pq.write_table(table, path, row_group_size=100)
    time.sleep(2.1)
    return str(path)


def _scan(path: str, conf: dict[str, str] | None = None, flt: str | None = "id >= 10"):
    s = fs.Session(conf) if conf else None
    return fs.scan_parquet(path, filter=flt, session=s)


def test_settled_footer_is_reused_and_answers_agree(tmp_path):
    path = _settled_file(tmp_path / "a.parquet", _table(1000))
    first = _scan(path)
    rows_first = first.read_all()
    assert first.metrics()["footers_cached"] == 0
    before = metadata_cache_stats()
    second = _scan(path)
    assert second.metrics()["footers_cached"] == 1
    assert metadata_cache_stats()["hits"] == before["hits"] + 1
    assert second.read_all().equals(rows_first)
    assert rows_first.num_rows == 990


def test_rewritten_file_is_parsed_again(tmp_path):
    path = _settled_file(tmp_path / "b.parquet", _table(1000))
    _scan(path).read_all()
    assert _scan(path).metrics()["footers_cached"] == 1
    # Same path, other rows, mtime put back in the past: the change time still gives it away.
    pq.write_table(_table(500, offset=5000), path, row_group_size=100)
    old = time.time() - HOUR
    os.utime(path, (old, old))
    scan = _scan(path, flt=None)
    assert scan.metrics()["footers_cached"] == 0
    got = scan.read_all()
    assert got.num_rows == 500
    assert got["id"][0].as_py() == 5000


def test_budget_zero_turns_the_cache_off(tmp_path):
    path = _settled_file(tmp_path / "c.parquet", _table(300))
    off = {"ferrospark.parquet.metadataCache.size": "0"}
    _scan(path, off).read_all()
    assert _scan(path, off).metrics()["footers_cached"] == 0


def test_clear_forgets_every_footer(tmp_path):
    path = _settled_file(tmp_path / "d.parquet", _table(300))
    _scan(path).read_all()
    assert metadata_cache_stats()["entries"] >= 1
    clear_metadata_cache()
    assert metadata_cache_stats()["entries"] == 0
    assert _scan(path).metrics()["footers_cached"] == 0


@pytest.mark.parametrize("value", ["-1", "lots", "12 parsecs"])
def test_bad_cache_size_is_a_config_error(value):
    with pytest.raises(fs.ConfigError, match="metadataCache.size"):
        fs.Session({"ferrospark.parquet.metadataCache.size": value})


def test_file_truncated_after_planning_is_an_error(tmp_path):
    path = str(tmp_path / "e.parquet")
    pq.write_table(_table(5000), path, row_group_size=500)
    scan = _scan(path, flt=None)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 3)
    with pytest.raises(fs.ParquetError, match="e.parquet"):
        scan.read_all()


def test_file_replaced_after_planning_is_an_error(tmp_path):
    path = str(tmp_path / "f.parquet")
    pq.write_table(_table(5000), path, row_group_size=500)
    scan = _scan(path, flt=None)
    other = str(tmp_path / "g.parquet")
    pq.write_table(_table(10, offset=7), other)
    os.replace(other, path)
    with pytest.raises(fs.ParquetError, match="changed while it was being read"):
        scan.read_all()


def test_many_files_hold_few_descriptors(tmp_path):
    """A scan keeps no file open between planning and reading: 300 files under a limit of 64
    open descriptors read fine (run in a child process so the limit stays there)."""
    import subprocess
    import sys
    import textwrap

    d = tmp_path / "many"
    d.mkdir()
    for i in range(300):
        pq.write_table(_table(10, offset=10 * i), d / f"part-{i:04d}.parquet")
    script = textwrap.dedent(
        f"""
        import resource
        import ferrospark as fs
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
        t = fs.read_parquet({str(d)!r}, filter="id % 7 = 0").read_all()
        print(t.num_rows)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) == len([i for i in range(3000) if i % 7 == 0])
