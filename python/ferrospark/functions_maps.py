"""Maps built from arrays, entries, other maps and text, and arrays built from ranges and
permutations (``map_from_arrays``, ``map_concat``, ``str_to_map``, ``sequence``, ``shuffle``),
with PySpark's signatures, re-exported by :mod:`ferrospark.functions`."""

from __future__ import annotations

from typing import Any

from ._function_args import ColumnOrName, _c, _call, _call_mixed
from .column import Column, lit


def map_from_arrays(col1: ColumnOrName, col2: ColumnOrName) -> Column:
    """A map of the keys in ``col1`` to the values at the same positions in ``col2`` (arrays
    of one length; a NULL or repeated key fails)."""
    return _call("map_from_arrays", col1, col2)


def map_from_entries(col: ColumnOrName) -> Column:
    """A map of an array of (key, value) structs; NULL when an entry is."""
    return _call("map_from_entries", col)


def map_entries(col: ColumnOrName) -> Column:
    """A map's entries as an array of ``struct<key, value>``."""
    return _call("map_entries", col)


def map_concat(*cols: Any) -> Column:
    """The union of the maps (NULL when one is; a key in two of them fails, Spark's default
    ``spark.sql.mapKeyDedupPolicy=EXCEPTION``)."""
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    return _call("map_concat", *cols)


def str_to_map(
    text: ColumnOrName,
    pairDelim: ColumnOrName | None = None,  # noqa: N803 - PySpark's name
    keyValueDelim: ColumnOrName | None = None,  # noqa: N803 - PySpark's name
) -> Column:
    """A map of the text split into pairs at ``pairDelim`` (``,``) and each pair into key and
    value at ``keyValueDelim`` (``:``); both delimiters are regular expressions."""
    pair = lit(",") if pairDelim is None else _c(pairDelim)
    kv = lit(":") if keyValueDelim is None else _c(keyValueDelim)
    return _call_mixed("str_to_map", _c(text), pair, kv)


def sequence(start: ColumnOrName, stop: ColumnOrName, step: ColumnOrName | None = None) -> Column:
    """The integers, dates or timestamps from ``start`` to ``stop`` by ``step`` (1 or -1, a day
    or minus a day, by default)."""
    if step is None:
        return _call("sequence", start, stop)
    return _call("sequence", start, stop, step)


def shuffle(col: ColumnOrName, seed: Column | int | None = None) -> Column:
    """The array in a random order, Spark's seeded permutation (``shuffle(a, 42)`` gives
    Spark's order on one partition)."""
    if seed is None:
        from .functions_more import _seed

        return _call_mixed("shuffle", _c(col), _seed(None))
    return _call_mixed("shuffle", _c(col), seed if isinstance(seed, Column) else lit(seed))
