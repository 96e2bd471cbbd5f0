"""Session windows (issue 5, first part) against Spark's ``groupBy(session_window(...), keys)``:
NULL times dropped, NULL keys grouped, sessions touching exactly at the gap merged, events
out of order, several aggregates."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import ferrospark as fs
from helpers import assert_same_rows

pytestmark = pytest.mark.spark

BASE = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)


def _events(seed: int, n: int) -> pa.Table:
    rng = random.Random(seed)
    users = ["ann", "bob", "日本", None]
    ts = []
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            ts.append(None)
        else:
            # Minutes, some exactly 10 apart (a session boundary that touches).
            ts.append(
                BASE + dt.timedelta(minutes=rng.choice([0, 10, 20, 25, 40, 41, 90]) + rng.randint(0, 3) * 10)
            )
    return pa.table(
        {
            "user": pa.array([rng.choice(users) for _ in range(n)], pa.string()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "v": pa.array([rng.randint(-5, 50) for _ in range(n)], pa.int64()),
        }
    )


EVENTS = _events(3, 300)


def _flat_ours(t: pa.Table) -> list[tuple]:
    sw = t["session_window"].combine_chunks()
    cols = [pc.struct_field(sw, "start"), pc.struct_field(sw, "end")] + [t[c] for c in t.column_names[1:]]
    return [tuple(row) for row in zip(*(c.to_pylist() for c in cols), strict=True)]


@pytest.mark.parametrize("gap", ["10 minutes", "5 minutes", "1 hour"])
def test_static_gap_sessions_match_spark(spark, gap):
    from pyspark.sql import functions as F

    df = spark.createDataFrame(EVENTS)
    expected = (
        df.groupBy(F.session_window("ts", gap), "user")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.max("v").alias("m"))
        .select("session_window.start", "session_window.end", "user", "n", "s", "m")
        .collect()
    )
    got = fs.session_window(
        EVENTS,
        "ts",
        gap,
        by="user",
        aggs=[fs.count().alias("n"), fs.sum("v").alias("s"), fs.max("v").alias("m")],
    )
    assert got.column_names == ["session_window", "user", "n", "s", "m"]
    norm = [
        (r[0].replace(tzinfo=None) if r[0] else None, r[1].replace(tzinfo=None) if r[1] else None, *r[2:])
        for r in expected
    ]
    ours = [(r[0].replace(tzinfo=None), r[1].replace(tzinfo=None), *r[2:]) for r in _flat_ours(got)]
    assert_same_rows(norm, ours, f"sessions gap={gap}")


def test_session_window_errors():
    with pytest.raises(fs.UnsupportedError, match="per-row gap"):
        fs.session_window(EVENTS, "ts", fs.col("v"), by="user", aggs=[fs.count()])
    with pytest.raises(fs.AnalysisError, match="not a number"):
        fs.session_window(EVENTS, "ts", "ten minutes", by="user", aggs=[fs.count()])
    with pytest.raises(fs.AnalysisError, match="must be a timestamp"):
        fs.session_window(EVENTS, "v", "10 minutes", by="user", aggs=[fs.count()])
