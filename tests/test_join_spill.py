"""Joins past ``ferrospark.memory.limit``: a sort-merge join of two 2-million-row sides under a
24MB limit spills sorted runs and agrees with pyarrow's own join; a shuffled hash join whose
build side does not fit falls back to sort-merge instead of failing."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import ferrospark as fs

N = 2_000_000


def _side(prefix: str, spread: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, spread, N)
    nulls = rng.random(N) < 0.01
    words = np.array([f"{prefix}{i}" for i in range(1000)], dtype=object)
    table = pa.table(
        {
            f"{prefix}k": pa.array(keys, mask=nulls),
            f"{prefix}v": pa.array(np.arange(N)),
            f"{prefix}s": pa.array(words[np.arange(N) % 1000].tolist()),
        }
    )
    # Batches of 64K rows, as a scan hands them over.
    return pa.Table.from_batches(table.to_batches(max_chunksize=65536))


@pytest.fixture(scope="module")
def sides() -> tuple[pa.Table, pa.Table]:
    return _side("l", 1_500_000, 3), _side("r", 3_000_000, 4)


def _digest(t: pa.Table, columns: list[str]) -> tuple:
    return (t.num_rows,) + tuple((pc.sum(t.column(c)).as_py(), t.column(c).null_count) for c in columns)


@pytest.mark.parametrize(
    ("how", "arrow_how"), [("inner", "inner"), ("full", "full outer"), ("anti", "left anti")]
)
def test_a_sort_merge_join_of_two_million_rows_each_side_under_24mb(sides, how, arrow_how):
    left, right = sides
    session = fs.Session(conf={"ferrospark.memory.limit": "24m"})
    got = session.join(left, right, fs.col("lk") == fs.col("rk"), how, strategy="sort_merge")
    metrics = fs.last_join_metrics()
    assert metrics["spill_count"] >= 2, metrics
    assert metrics["spilled_rows"] >= N, metrics
    expected = left.join(right, "lk", "rk", join_type=arrow_how)
    columns = ["lv", "rv"] if how != "anti" else ["lv"]
    assert _digest(got, columns) == _digest(expected, columns)
    assert got.column_names[: len(left.column_names)] == left.column_names


def test_a_shuffled_hash_join_over_the_limit_falls_back_to_sort_merge(sides):
    left, right = (t.slice(0, 300_000) for t in sides)
    session = fs.Session(conf={"ferrospark.memory.limit": "4m"})
    for how, arrow_how in [("inner", "inner"), ("right", "right outer"), ("semi", "left semi")]:
        got = session.join(left, right, fs.col("lk") == fs.col("rk"), how, strategy="shuffle_hash")
        metrics = fs.last_join_metrics()
        assert metrics["fallback_to_sort_merge"] == 1, metrics
        assert metrics["spill_count"] > 0, metrics
        assert "exceeded the memory limit" in fs.last_join_plan()
        expected = left.join(right, "lk", "rk", join_type=arrow_how)
        columns = ["lv", "rv"] if how != "semi" else ["lv"]
        assert _digest(got, columns) == _digest(expected, columns), how


def test_a_broadcast_join_over_the_limit_is_still_an_error(sides):
    left, right = (t.slice(0, 200_000) for t in sides)
    session = fs.Session(conf={"ferrospark.memory.limit": "1m"})
    with pytest.raises(fs.MemoryLimitError, match="ferrospark.memory.limit"):
        session.join(left, right, fs.col("lk") == fs.col("rk"), strategy="broadcast_hash")
