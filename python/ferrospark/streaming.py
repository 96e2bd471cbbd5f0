"""Structured Streaming's stateful side: the versioned state store stateful operators keep
their rows in between micro-batches (``ferrospark-stream``).

A store belongs to one (operator, partition) under a query's checkpoint, laid out as
Spark's: ``<checkpoint>/state/<operator>/<partition>[/<store name>]``. Batch ``b`` reads
version ``b`` and commits version ``b + 1``; a committed version can be read again, and
committing from an earlier version (a batch re-run after a crash) replaces what came after.

>>> from ferrospark import streaming as fst
>>> st = fst.StateStore("ckpt/op", operator_id=0, partition_id=0)  # doctest: +SKIP
>>> st.commit(0, puts={b"user-1": b"3"})  # doctest: +SKIP
1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import _native

__all__ = ["StateStore"]


class StateStore:
    """One (operator, partition)'s versioned key-value state.

    ``conf`` takes Spark's keys: ``spark.sql.streaming.stateStore.providerClass``
    (``...HDFSBackedStateStoreProvider``, the default, keeps the state in memory with a delta
    file per version and a snapshot every
    ``spark.sql.streaming.stateStore.minDeltasForSnapshot`` versions;
    ``...RocksDBStateStoreProvider`` keeps it on disk, in an embedded SQLite file, so it may
    outgrow memory) and ``spark.sql.streaming.minBatchesToRetain``. A damaged or missing
    state file raises :class:`ferrospark.StateStoreError` naming it.
    """

    def __init__(
        self,
        checkpoint: str,
        operator_id: int = 0,
        partition_id: int = 0,
        store_name: str = "default",
        conf: Mapping[str, object] | None = None,
    ) -> None:
        text = {k: str(v) for k, v in (conf or {}).items()}
        self._native = _native.StateStore(str(checkpoint), operator_id, partition_id, store_name, text)

    def latest_version(self) -> int:
        """The latest committed version (0 before the first commit)."""
        return self._native.latest_version()

    def commit(
        self,
        version: int,
        puts: Mapping[bytes, bytes] | None = None,
        removes: Iterable[bytes] = (),
    ) -> int:
        """Applies ``puts`` then ``removes`` to ``version`` and commits them, atomically:
        returns the new version (``version + 1``)."""
        return self._native.commit(version, list((puts or {}).items()), list(removes))

    def get(self, version: int, key: bytes) -> bytes | None:
        """``key``'s value at ``version``."""
        return self._native.get(version, key)

    def scan(self, version: int, prefix: bytes = b"") -> list[tuple[bytes, bytes]]:
        """The keys starting with ``prefix`` at ``version`` and their values, in key order."""
        return self._native.scan(version, prefix)

    def metrics(self) -> dict[str, float]:
        """The last commit's counters by Spark's names: ``numRowsTotal``,
        ``numRowsUpdated``, ``numRowsRemoved``, ``memoryUsedBytes``, ``commitTimeMs``, and
        the provider's ``snapshotsWritten``, ``deltasWritten``, ``loadedFromFiles``,
        ``diskBytes``."""
        return self._native.metrics()
