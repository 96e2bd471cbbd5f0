"""Runs a stream-stream join or a session window aggregation over deterministic
micro-batches, recording each batch's output the way a sink with exactly-once writes would,
for the streaming operators' crash tests.

stream_worker.py <checkpoint> <output dir> <join|session> <batches> [<die after batch>]
    from the first batch whose output is not recorded on, processes each batch and records
    its output (``out-<batch>.parquet``, written whole or not at all); with a last argument,
    kills itself once that batch is processed but before its output is recorded.
"""

from __future__ import annotations

import os
import random
import signal
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import ferrospark as fs
from ferrospark import streaming as fst

MIN_US = 60_000_000
TS = pa.timestamp("us", tz="UTC")
CONF = {
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": "3",
    "spark.sql.streaming.minBatchesToRetain": "4",
}


def side(b: int, salt: int, n: int) -> pa.Table:
    rng = random.Random(b * 7919 + salt)
    times = [b * MIN_US + rng.randrange(-3 * MIN_US, MIN_US) for _ in range(n)]
    return pa.table(
        {
            "k": pa.array([rng.randrange(n // 4) for _ in range(n)], pa.int64()),
            "t": pa.array(times, TS),
            "v": pa.array([f"{salt}-{b}-{i}" for i in range(n)]),
        }
    )


def operator(kind: str, checkpoint: str) -> object:
    if kind == "join":
        return fst.StreamStreamJoin(
            on=["k"],
            how="full",
            condition="lt BETWEEN rt - INTERVAL 2 MINUTES AND rt + INTERVAL 2 MINUTES",
            left_watermark=("lt", "1 minute"),
            right_watermark=("rt", "1 minute"),
            checkpoint=checkpoint,
            conf=CONF,
        )
    return fst.SessionWindowAggregation(
        "t",
        "90 seconds",
        by="k",
        aggs=[fs.count("*").alias("n"), fs.max("v").alias("last")],
        watermark=("t", "1 minute"),
        checkpoint=checkpoint,
        conf=CONF,
    )


def inputs(kind: str, b: int) -> tuple[pa.Table, ...]:
    if kind == "join":
        left = side(b, 1, 6000).rename_columns(["k", "lt", "lv"])
        right = side(b, 2, 6000).rename_columns(["k", "rt", "rv"])
        return left, right
    return (side(b, 3, 12000),)


def main() -> None:
    checkpoint, out_dir, kind, batches = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    die_after = int(sys.argv[5]) if len(sys.argv) > 5 else None
    out_dir.mkdir(parents=True, exist_ok=True)
    op = operator(kind, checkpoint)
    first = len(list(out_dir.glob("out-*.parquet")))
    for b in range(first, batches):
        out = op.process(b, *inputs(kind, b))  # type: ignore[attr-defined]
        if die_after == b:
            os.kill(os.getpid(), signal.SIGKILL)
        tmp = out_dir / f".out-{b}.tmp"
        pq.write_table(out, tmp)
        os.replace(tmp, out_dir / f"out-{b}.parquet")
        print(b, flush=True)


if __name__ == "__main__":
    main()
