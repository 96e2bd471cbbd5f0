"""Commits versions of a state store the way a streaming query's batches would, for the
state store's crash tests.

state_worker.py <checkpoint> <memory|disk> <versions>
    from the store's latest version on, commits each version's changes (a function of the
    version only) until <versions>; prints each committed version.
"""

from __future__ import annotations

import sys

from ferrospark import streaming as fst

PROVIDERS = {
    "memory": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "disk": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


def changes(version: int) -> tuple[dict[bytes, bytes], list[bytes]]:
    """Version ``version + 1``'s puts and removes."""
    puts = {
        f"k{(version * 37 + i) % 5000:05d}".encode(): f"v{version}-{i}".encode() * 20 for i in range(2000)
    }
    removes = [f"k{(version * 53 + i) % 5000:05d}".encode() for i in range(300)]
    return puts, removes


def store(checkpoint: str, provider: str) -> fst.StateStore:
    conf = {
        "spark.sql.streaming.stateStore.providerClass": PROVIDERS[provider],
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "3",
        "spark.sql.streaming.minBatchesToRetain": "5",
    }
    return fst.StateStore(checkpoint, operator_id=0, partition_id=0, conf=conf)


def main() -> None:
    checkpoint, provider, versions = sys.argv[1], sys.argv[2], int(sys.argv[3])
    st = store(checkpoint, provider)
    v = st.latest_version()
    while v < versions:
        puts, removes = changes(v)
        v = st.commit(v, puts, removes)
        print(v, flush=True)


if __name__ == "__main__":
    main()
