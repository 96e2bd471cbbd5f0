"""State store benchmark: micro-batches of puts and removes committed through
``ferrospark.streaming.StateStore``, memory provider against disk provider.

    python benches/state_store.py [--sizes 10000,100000,1000000] [--batches 4]

For each provider and batch size, in a process of its own: ``--batches`` versions, each
putting ``size`` new keys (16 bytes) with 64-byte values and removing half of the previous
version's keys (what a watermark evicts); then the store is opened afresh and its latest
version loaded (recovery after a restart). Prints rows/s (puts and removes per second of
commit), the median commit time, the state's keys and bytes on disk, the recovery time and
the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

from child import run_json

PROVIDERS = {
    "memory": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "disk": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


def worker(provider: str, size: int, batches: int) -> dict:
    from ferrospark import streaming as fst

    conf = {"spark.sql.streaming.stateStore.providerClass": PROVIDERS[provider]}
    with tempfile.TemporaryDirectory() as ckpt:
        st = fst.StateStore(ckpt, conf=conf)
        value = b"v" * 64
        commits, rows = [], 0
        for b in range(batches):
            puts = {f"{b:04d}-{i:011d}".encode(): value for i in range(size)}
            removes = [f"{b - 1:04d}-{i:011d}".encode() for i in range(0, size, 2)] if b else []
            t0 = time.perf_counter()
            st.commit(b, puts, removes)
            commits.append(time.perf_counter() - t0)
            rows += len(puts) + len(removes)
        m = st.metrics()
        t0 = time.perf_counter()
        fresh = fst.StateStore(ckpt, conf=conf)
        fresh.get(fresh.latest_version(), b"none")
        recovery = time.perf_counter() - t0
        return {
            "rows_per_s": rows / sum(commits),
            "commit_s": sorted(commits)[len(commits) // 2],
            "keys": m["numRowsTotal"],
            "disk_mb": m["diskBytes"] / 1e6,
            "recovery_s": recovery,
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        provider, size, batches = args.worker
        print(json.dumps(worker(provider, int(size), int(batches))))
        return 0
    print(
        f"{'provider':<9} {'batch':>9} {'rows/s':>11} {'commit s':>9} {'keys':>9} {'disk MB':>8} "
        f"{'recovery s':>10} {'peak MB':>8}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        for provider in PROVIDERS:
            cmd = [sys.executable, __file__, "--worker", provider, str(size), str(args.batches)]
            r = run_json(cmd, f"{provider} {size}")
            if r is None:
                continue
            print(
                f"{provider:<9} {size:>9} {r['rows_per_s']:>11.0f} {r['commit_s']:>9.3f} {r['keys']:>9.0f} "
                f"{r['disk_mb']:>8.1f} {r['recovery_s']:>10.3f} {r['peak_mb']:>8.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
