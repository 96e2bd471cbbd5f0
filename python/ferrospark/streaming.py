"""Structured Streaming's stateful side (``ferrospark-stream``): the versioned state store
stateful operators keep their rows in between micro-batches, the stream-stream join and the
streaming session window aggregation.

Each operator is fed one micro-batch at a time: ``process(batch_id, ...)`` returns the rows
that batch emits and commits the batch's state as version ``batch_id + 1``. Calling it again
with the last committed id (a retry after a crash) returns the same rows and changes
nothing; an older id is an error.

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

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from . import _native
from .column import Column

if TYPE_CHECKING:
    from .aggregate import AggColumn

__all__ = ["SessionWindowAggregation", "StateStore", "StreamStreamJoin"]

_RIGHT_KEY = "__right__"


def _table(data: Any) -> pa.Table | None:
    if data is None:
        return None
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    return pa.table(data)


def _conf_text(conf: Mapping[str, object] | None) -> dict[str, str]:
    return {k: str(v) for k, v in (conf or {}).items()}


class _Schemas:
    """An operator's input schemas kept beside its state, so a restarted query whose first
    batch lacks an input still knows its columns."""

    def __init__(self, checkpoint: str, operator_id: int) -> None:
        self._dir = Path(checkpoint) / "schemas" / str(operator_id)

    def get(self, name: str, seen: pa.Table | None) -> pa.Schema | None:
        path = self._dir / f"{name}.arrow"
        kept = pa.ipc.read_schema(pa.py_buffer(path.read_bytes())) if path.exists() else None
        if seen is None:
            return kept
        if kept is None:
            self._dir.mkdir(parents=True, exist_ok=True)
            # Partitions of one operator may write it at once (threads of the state host,
            # worker processes): each through a temporary file of its own.
            _native.write_file_atomic(str(path), seen.schema.serialize().to_pybytes())
        elif not kept.equals(seen.schema, check_metadata=False):
            from .errors import StateStoreError

            raise StateStoreError(
                f"the {name} rows' columns ({seen.schema}) are not those this checkpoint's state "
                f"was written with ({kept}): restore the input's columns or start a new checkpoint"
            )
        return seen.schema


class StateStore:
    """One (operator, partition)'s versioned key-value state.

    ``conf`` takes Spark's keys: ``spark.sql.streaming.stateStore.providerClass``
    (``...HDFSBackedStateStoreProvider``, the default, keeps the state in memory with a delta
    file per version and a snapshot every
    ``spark.sql.streaming.stateStore.minDeltasForSnapshot`` versions;
    ``...RocksDBStateStoreProvider`` keeps it on disk, in an embedded SQLite file, so it may
    outgrow memory) and ``spark.sql.streaming.minBatchesToRetain``. Under
    ``ferrospark.memory.limit`` the in-memory state that outgrows the limit moves to disk
    before the next version is changed (``metrics()["spillsToDisk"]``). A damaged or missing
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
        self._native = _native.StateStore(
            str(checkpoint), operator_id, partition_id, store_name, _conf_text(conf)
        )

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
        ``deltasCaughtUp``, ``diskBytes``, ``spillsToDisk`` (moves to disk under
        ``ferrospark.memory.limit``)."""
        return self._native.metrics()


def _is_condition(text: str) -> bool:
    """Whether ``on`` text is a join condition rather than one column's name."""
    lowered = f" {text.lower()} "
    return any(op in text for op in "=<>") or any(f" {w} " in lowered for w in ("and", "between", "or"))


def _condition(c: Any) -> _native.Expr | None:
    if c is None:
        return None
    if isinstance(c, Column):
        return c._expr
    if isinstance(c, str):
        return _native.Expr.parse(c)
    raise TypeError(f"a join condition is a SQL string or a Column, got {type(c).__name__!r}")


def _spelled(schema: pa.Schema, name: str) -> str:
    """``name`` as ``schema`` spells it when one column matches it but for case (as Spark
    finds columns); otherwise ``name`` itself, for the engine to resolve or refuse."""
    if name in schema.names:
        return name
    same = [n for n in schema.names if n.lower() == name.lower()]
    return same[0] if len(same) == 1 else name


class StreamStreamJoin:
    """Spark's stream-stream join over micro-batches (``StreamingSymmetricHashJoinExec``):
    each side's rows wait in state for partners from the other side's later batches, until
    the watermark says none can come.

    ``on`` is a list of column names both sides have (a using join: each key once in the
    output, first) or a condition (SQL text or a Column) whose ``left_col = right_col``
    equalities are the keys; ``condition`` adds to it, typically a time range such as
    ``"lt BETWEEN rt - INTERVAL 10 MINUTES AND rt"``. ``how`` is ``inner``, ``left``,
    ``right``, ``full`` or ``semi``. The keys are split over
    ``ferrospark.streaming.statePartitions`` state partitions (default: the cores, fixed for
    a checkpoint by its first batch), each run on its own thread; ``partition_id`` runs one
    of them alone (as a Spark task does). An outer or semi join needs what lets its waiting rows
    go (a watermark on a join key, or a watermark on the side whose rows wait and a time
    range bounding it), as Spark requires; otherwise an ``AnalysisError`` says what to add.

    Each batch drops a side's rows at or below the previous batch's watermark as late,
    joins the rest with the other side's state, keeps them, and frees the rows the watermark
    passes, emitting the outer join's rows that never found a partner. The watermark is each
    input's largest event time minus its delay, combined by
    ``spark.sql.streaming.multipleWatermarkPolicy`` (``min`` by default).
    """

    def __init__(
        self,
        on: Sequence[str] | str | Column,
        how: str = "inner",
        *,
        condition: str | Column | None = None,
        left_watermark: tuple[str, str] | None = None,
        right_watermark: tuple[str, str] | None = None,
        checkpoint: str,
        conf: Mapping[str, object] | None = None,
        operator_id: int = 0,
        partition_id: int | None = None,
    ) -> None:
        if isinstance(on, Column) or (isinstance(on, str) and _is_condition(on)):
            self._using: list[str] = []
            cond = _condition(on)
            if condition is not None:
                extra = _condition(condition)
                cond = extra if cond is None else cond.binary("and", extra)
        else:
            self._using = [on] if isinstance(on, str) else list(on)
            cond = _condition(condition)
        self._how = how.lower()
        self._cond = cond
        self._watermarks = (left_watermark, right_watermark)
        self._checkpoint = str(checkpoint)
        self._conf = _conf_text(conf)
        self._ids = (operator_id, partition_id)
        self._schemas = _Schemas(self._checkpoint, operator_id)
        self._right_using: dict[str, str] = {}
        self._native: Any = None

    def _renamed_right(self, t: pa.Table) -> pa.Table:
        keys = self._right_using
        return t.rename_columns([_RIGHT_KEY + keys[c] if c in keys else c for c in t.column_names])

    def _open(self, left: pa.Table | None, right: pa.Table | None) -> None:
        ls = self._schemas.get("left", left)
        rs = self._schemas.get("right", right)
        if ls is None or rs is None:
            missing = "left" if ls is None else "right"
            raise ValueError(
                f"the first batch of this join has no {missing} rows and its checkpoint keeps no "
                f"{missing} schema: pass a table (it may be empty) for the {missing} side"
            )
        # Spelled as the inputs spell them (Spark finds a column whatever its case): the
        # output's key takes the left's spelling, the right's key is renamed after it.
        self._using = [_spelled(ls, k) for k in self._using]
        self._right_using = {_spelled(rs, k): k for k in self._using}
        keys = self._right_using
        lw, rw = self._watermarks
        if rw is not None and _spelled(rs, rw[0]) in keys:
            rw = (_RIGHT_KEY + keys[_spelled(rs, rw[0])], rw[1])
        rs = pa.schema([f.with_name(_RIGHT_KEY + keys[f.name]) if f.name in keys else f for f in rs])
        self._native = _native.StreamStreamJoin(
            self._checkpoint,
            ls,
            rs,
            list(self._using),
            [_RIGHT_KEY + k for k in self._using],
            self._how,
            self._cond,
            lw,
            rw,
            self._conf,
            *self._ids,
        )

    def process(self, batch_id: int, left: Any = None, right: Any = None) -> pa.Table:
        """The rows micro-batch ``batch_id`` emits for these inputs (either may be ``None``:
        that side had no data)."""
        return self._process(batch_id, left, right, None, False)

    def _process(
        self, batch_id: int, left: Any, right: Any, marks: tuple[int, int] | None, under: bool
    ) -> pa.Table:
        lt, rt = _table(left), _table(right)
        if self._native is None:
            self._open(lt, rt)
        if rt is not None and self._using:
            rt = self._renamed_right(rt)
        if under:
            out = self._native.process_under(batch_id, lt, rt, marks)
        else:
            out = self._native.process(batch_id, lt, rt)
        return self._using_output(out) if self._using else out

    def metrics(self) -> dict[str, float]:
        """The join's counters after the last batch: its four state stores' (as
        :meth:`StateStore.metrics`) added up, with ``allUpdatesTimeMs`` (joining and storing
        the batch's rows) and ``allRemovalsTimeMs`` (evicting what the watermark frees),
        summed over partitions as Spark sums them over tasks."""
        if self._native is None:
            return {}
        return self._native.metrics()

    def keys(self, left_schema: pa.Schema, right_schema: pa.Schema) -> tuple[list[str], list[str]]:
        """The join keys of each side (the condition's equalities included), for inputs of
        these schemas."""
        if self._using:
            return list(self._using), list(self._using)
        if self._native is None:
            self._open(left_schema.empty_table(), right_schema.empty_table())
        return self._native.keys()

    def _using_output(self, out: pa.Table) -> pa.Table:
        """Spark's using-join columns: the keys once (the right's for a right join, the
        first non-NULL for a full one), then the left's other columns, then the right's."""
        names = out.column_names
        keys = []
        for k in self._using:
            r = _RIGHT_KEY + k
            if self._how in ("right", "right_outer", "rightouter"):
                keys.append(out.column(r))
            elif self._how in ("full", "outer", "full_outer", "fullouter") and r in names:
                keys.append(pc.coalesce(out.column(k), out.column(r)))
            else:
                keys.append(out.column(k))
        rest = [n for n in names if n not in self._using and not n.startswith(_RIGHT_KEY)]
        return pa.table(keys + [out.column(n) for n in rest], names=list(self._using) + rest)


class SessionWindowAggregation:
    """Spark's streaming ``groupBy(session_window(time, gap), *by).agg(*aggs)``: each batch's
    rows open ``[time, time + gap)``, merge into sessions per key, and merge with the
    sessions stored for their key; each session keeps its aggregates' buffers in state.

    ``gap`` is a literal (``"10 minutes"``) or a Column of per-row gaps (interval strings or
    durations; a NULL or non-positive one drops the row). ``watermark=(time, delay)``:
    a batch's sessions ending at or below the previous batch's watermark are late and
    dropped; sessions ending at or below the current one are final. ``output_mode``:
    ``append`` emits each session once, when final (it needs a watermark); ``update`` emits
    the sessions each batch changes; ``complete`` emits every session every batch and keeps
    them all. Output: ``session_window`` (``start``, ``end``), the keys, the aggregates.
    """

    def __init__(
        self,
        time: str,
        gap: str | Column,
        by: str | Sequence[str] = (),
        aggs: AggColumn | Sequence[AggColumn] = (),
        *,
        watermark: tuple[str, str] | None = None,
        output_mode: str = "append",
        checkpoint: str,
        conf: Mapping[str, object] | None = None,
        operator_id: int = 0,
        partition_id: int | None = None,
    ) -> None:
        from .aggregate import _aggs

        if not isinstance(gap, str | Column):
            raise TypeError(f"a session gap is a string such as '10 minutes' or a Column, got {gap!r}")
        self._time = time
        self._gap = gap
        self._by = [by] if isinstance(by, str) else list(by)
        self._aggs = [a._spec() for a in _aggs(aggs)]
        self._watermark = watermark
        self._mode = output_mode
        self._checkpoint = str(checkpoint)
        self._conf = _conf_text(conf)
        self._ids = (operator_id, partition_id)
        self._schemas = _Schemas(self._checkpoint, operator_id)
        self._native: Any = None

    def _open(self, table: pa.Table | None) -> None:
        schema = self._schemas.get("input", table)
        if schema is None:
            raise ValueError(
                "the first batch of this aggregation has no rows and its checkpoint keeps no "
                "schema: pass a table (it may be empty)"
            )
        text = self._gap if isinstance(self._gap, str) else None
        expr = self._gap._expr if isinstance(self._gap, Column) else None
        self._native = _native.SessionWindowAggregation(
            self._checkpoint,
            schema,
            self._time,
            text,
            expr,
            self._by,
            self._aggs,
            self._watermark,
            self._mode,
            self._conf,
            *self._ids,
        )

    def process(self, batch_id: int, table: Any = None) -> pa.Table:
        """The sessions micro-batch ``batch_id`` emits (``table=None``: a batch without
        data, which still frees what the watermark passed)."""
        return self._process(batch_id, table, None, False)

    def _process(self, batch_id: int, table: Any, marks: tuple[int, int] | None, under: bool) -> pa.Table:
        t = _table(table)
        if self._native is None:
            self._open(t)
        if under:
            return self._native.process_under(batch_id, t, marks)
        return self._native.process(batch_id, t)

    def metrics(self) -> dict[str, float]:
        """The state store's counters after the last batch (as :meth:`StateStore.metrics`),
        with ``allUpdatesTimeMs`` (merging the batch's rows into sessions and storing them)
        and ``allRemovalsTimeMs`` (finding and removing the sessions the watermark ends)."""
        if self._native is None:
            return {}
        return self._native.metrics()
