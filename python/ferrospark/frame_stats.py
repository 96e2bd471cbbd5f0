"""``df.na`` and ``df.stat`` (PySpark's ``DataFrameNaFunctions`` and
``DataFrameStatFunctions``) and the ``describe`` / ``summary`` tables.

Each builds a query of ferrospark's own columns and aggregates (``fill`` is ``coalesce``,
``drop`` a filter on the count of non-NULL values, ``corr`` and ``cov`` Spark's sample
formulas), so the work runs natively; only the quantiles of ``summary`` /
``approxQuantile`` are picked in Python from the sorted values, as Spark's quantile sketch
returns them for data of this size (the value whose rank first reaches ``p * n``).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .column import Column, col, lit
from .errors import AnalysisError

if TYPE_CHECKING:
    from .dataframe import DataFrame

_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double")


def _is_integral(t: str) -> bool:
    return t in ("tinyint", "smallint", "int", "bigint")


def _is_numeric(t: str) -> bool:
    return t in _NUMERIC or t.startswith("decimal")


def _q(name: str) -> Column:
    return col(name)


def _subset(df: DataFrame, subset: Any) -> list[str]:
    if subset is None:
        return list(df.columns)
    names = [subset] if isinstance(subset, str) else list(subset)
    for n in names:
        if n not in df.columns:
            raise AnalysisError(
                f"[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column `{n}` cannot be resolved among {df.columns}."
            )
    return names


class DataFrameNaFunctions:
    """``df.na``: ``fill``, ``drop``, ``replace`` as PySpark's."""

    def __init__(self, df: DataFrame) -> None:
        self._df = df

    def fill(self, value: Any, subset: Any = None) -> DataFrame:
        """NULLs (and NaN in floating columns) replaced by ``value`` in the columns of its type
        (a number fills numeric columns, a string string columns, a bool boolean ones; a dict
        names a value per column)."""
        df = self._df
        types = dict(df.dtypes)
        if isinstance(value, dict):
            plan = {k: v for k, v in value.items()}
        else:
            names = _subset(df, subset)
            plan = {n: value for n in names}
        out = []
        for name in df.columns:
            c = _q(name)
            if name in plan and _fills(types[name], plan[name]):
                v = plan[name]
                t = types[name]
                filled = c
                if t in ("float", "double"):
                    from .functions import isnan, when

                    filled = when(isnan(c), lit(v).cast(t)).otherwise(c)
                from .functions import coalesce

                c = coalesce(filled, lit(v).cast(t)).alias(name)
            out.append(c)
        return df.select(*out)

    def drop(self, how: str = "any", thresh: int | None = None, subset: Any = None) -> DataFrame:
        """Rows with NULLs (or NaN) dropped: any of ``subset`` NULL (``how="any"``), all of them
        (``"all"``), or fewer than ``thresh`` non-NULL values."""
        if how not in ("any", "all"):
            raise AnalysisError(f"na.drop: how must be 'any' or 'all', got {how!r}")
        df = self._df
        names = _subset(df, subset)
        types = dict(df.dtypes)
        if thresh is None:
            thresh = len(names) if how == "any" else 1
        from .functions import isnan, when

        present = lit(0)
        for n in names:
            ok = _q(n).is_not_null()
            if types[n] in ("float", "double"):
                ok = ok & ~isnan(_q(n))
            present = present + when(ok, lit(1)).otherwise(lit(0))
        return df.filter(present >= lit(thresh))

    def replace(self, to_replace: Any, value: Any = ..., subset: Any = None) -> DataFrame:
        """Values equal to ``to_replace`` (a value, a list, or a dict of old to new) replaced,
        in the columns whose type the values have."""
        if isinstance(to_replace, dict):
            pairs = list(to_replace.items())
        else:
            olds = to_replace if isinstance(to_replace, (list, tuple)) else [to_replace]
            if value is ...:
                raise AnalysisError("na.replace: value is required unless to_replace is a dict")
            news = value if isinstance(value, (list, tuple)) else [value] * len(olds)
            if len(news) != len(olds):
                raise AnalysisError("na.replace: to_replace and value lists must have the same length")
            pairs = list(zip(olds, news))
        df = self._df
        names = _subset(df, subset)
        types = dict(df.dtypes)
        from .functions import when

        out = []
        for name in df.columns:
            c = _q(name)
            t = types[name]
            usable = [(o, n) for o, n in pairs if _fills(t, o)]
            if name in names and usable:
                expr = None
                for o, n in usable:
                    cond = c.isNull() if o is None else c == lit(o).cast(t)
                    new = lit(None).cast(t) if n is None else lit(n).cast(t)
                    expr = when(cond, new) if expr is None else expr.when(cond, new)
                c = expr.otherwise(c).alias(name)
            out.append(c)
        return df.select(*out)


def _fills(spark_type: str, value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return spark_type == "boolean"
    if isinstance(value, (int, float)):
        return _is_numeric(spark_type)
    if isinstance(value, str):
        return spark_type == "string"
    return False


class DataFrameStatFunctions:
    """``df.stat``: ``corr``, ``cov``, ``crosstab``, ``freqItems``, ``approxQuantile``, ``sampleBy``."""

    def __init__(self, df: DataFrame) -> None:
        self._df = df

    def _moments(self, col1: str, col2: str) -> tuple[int, float, float, float, float, float]:
        from .functions import avg, count

        df = self._df.select(_q(col1).cast("double").alias("x"), _q(col2).cast("double").alias("y"))
        df = df.filter(col("x").is_not_null() & col("y").is_not_null())
        row = df.agg(
            count(lit(1)).alias("n"),
            avg(col("x")).alias("mx"),
            avg(col("y")).alias("my"),
            avg(col("x") * col("y")).alias("mxy"),
            avg(col("x") * col("x")).alias("mxx"),
            avg(col("y") * col("y")).alias("myy"),
        ).collect()[0]
        return tuple(row)  # type: ignore[return-value]

    def corr(self, col1: str, col2: str, method: str | None = None) -> float:
        """Pearson's correlation of two numeric columns."""
        if method not in (None, "pearson"):
            raise AnalysisError(f"corr: only the pearson method is supported, got {method!r}")
        n, mx, my, mxy, mxx, myy = self._moments(col1, col2)
        if not n:
            return float("nan")
        cov = mxy - mx * my
        vx, vy = mxx - mx * mx, myy - my * my
        return cov / math.sqrt(vx * vy) if vx > 0 and vy > 0 else float("nan")

    def cov(self, col1: str, col2: str) -> float:
        """The sample covariance of two numeric columns."""
        n, mx, my, mxy, _, _ = self._moments(col1, col2)
        if n is None or n < 2:
            return float("nan")
        return (mxy - mx * my) * n / (n - 1)

    def crosstab(self, col1: str, col2: str) -> DataFrame:
        """A contingency table: one row per value of ``col1`` (in ``col1_col2``), one column per
        value of ``col2``, counts in the cells."""
        from .functions import count

        rows = (
            self._df.groupBy(_q(col1).cast("string").alias("a"), _q(col2).cast("string").alias("b"))
            .agg(count(lit(1)).alias("n"))
            .collect()
        )
        firsts = sorted({("null" if r[0] is None else r[0]) for r in rows})
        seconds = sorted({("null" if r[1] is None else r[1]) for r in rows})
        cells = {(("null" if a is None else a), ("null" if b is None else b)): n for a, b, n in rows}
        table = {f"{col1}_{col2}": pa.array(firsts, pa.string())}
        for s in seconds:
            table[s] = pa.array([cells.get((f, s), 0) for f in firsts], pa.int64())
        return self._df._session.createDataFrame(pa.table(table))

    def freqItems(self, cols: Any, support: float | None = None) -> DataFrame:  # noqa: N802 - PySpark's name
        """Values seen in at least ``support`` (default 1%) of the rows, per column, as arrays
        in ``<col>_freqItems``."""
        support = 0.01 if support is None else support
        names = [cols] if isinstance(cols, str) else list(cols)
        table = self._df.select(*[_q(n) for n in names]).toArrow()
        out = {}
        for n in names:
            values = table.column(n).to_pylist()
            counts: dict[Any, int] = {}
            for v in values:
                counts[v] = counts.get(v, 0) + 1
            keep = [v for v, k in counts.items() if k >= support * len(values)]
            out[f"{n}_freqItems"] = pa.array([keep], pa.list_(table.schema.field(n).type))
        return self._df._session.createDataFrame(pa.table(out))

    def approxQuantile(self, col: Any, probabilities: Any, relativeError: float) -> Any:  # noqa: N802, N803
        """The values at ``probabilities`` of numeric columns (NULLs and NaN left out)."""
        if relativeError < 0:
            raise AnalysisError(f"approxQuantile: relativeError must be >= 0, got {relativeError}")
        single = isinstance(col, str)
        names = [col] if single else list(col)
        out = []
        for n in names:
            values = sorted(
                v
                for v in self._df.select(_q(n).cast("double").alias("v")).toArrow().column("v").to_pylist()
                if v is not None and not math.isnan(v)
            )
            out.append([_quantile(values, p) for p in probabilities] if values else [])
        return out[0] if single else out

    def sampleBy(self, col: Any, fractions: dict[Any, float], seed: int | None = None) -> DataFrame:  # noqa: N802
        """A sample per value of ``col``: each row kept with its value's fraction (others dropped)."""
        import random

        name = col if isinstance(col, str) else str(col)
        rnd = random.Random(seed)
        table = self._df.toArrow()
        keys = table.column(name).to_pylist()
        idx = [i for i, k in enumerate(keys) if rnd.random() < fractions.get(k, 0.0)]
        return self._df._session.createDataFrame(table.take(pa.array(idx, pa.int64())))


def _quantile(sorted_values: list[float], p: float) -> float:
    if not 0 <= p <= 1:
        raise AnalysisError(f"quantile probabilities must be in [0, 1], got {p}")
    n = len(sorted_values)
    rank = max(1, math.ceil(p * n))
    return sorted_values[min(rank, n) - 1]


def _stat_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, float):
        from ._java import java_double_text

        return java_double_text(v)
    if isinstance(v, Decimal):
        return format(v, "f")
    return str(v)


def summary(df: DataFrame, cols: list[str], stats: list[str]) -> DataFrame:
    """``describe`` / ``summary``: one row per statistic, a string column per numeric or
    string column."""
    from .functions import avg, count, max, min, stddev

    types = dict(df.dtypes)
    names = cols or [c for c in df.columns if _is_numeric(types[c]) or types[c] == "string"]
    table = df.select(*[_q(n) for n in names]).toArrow()
    rows: list[list[str | None]] = []
    for stat in stats:
        values: list[str | None] = []
        for n in names:
            numeric = _is_numeric(types[n])
            c = _q(n)
            if stat == "count":
                v = _stat_text(df.agg(count(c)).collect()[0][0])
            elif stat == "mean":
                v = _stat_text(df.agg(avg(c)).collect()[0][0]) if numeric else None
            elif stat == "stddev":
                v = _stat_text(df.agg(stddev(c.cast("double"))).collect()[0][0]) if numeric else None
            elif stat in ("min", "max"):
                agg = min if stat == "min" else max
                v = _stat_text(df.agg(agg(c)).collect()[0][0])
            elif stat.endswith("%"):
                if not numeric:
                    v = None
                else:
                    xs = sorted(x for x in table.column(n).to_pylist() if x is not None)
                    q = _quantile([float(x) for x in xs], float(stat[:-1]) / 100) if xs else None
                    # Integers keep their type; decimals and floats print as doubles.
                    v = None if q is None else _stat_text(int(q) if _is_integral(types[n]) else float(q))
            else:
                raise AnalysisError(
                    f"[SUMMARY_STATISTIC] unknown statistic {stat!r}: use count, mean, stddev, min, max or a percentile such as 25%"
                )
            values.append(v)
        rows.append([stat, *values])
    data = {"summary": pa.array([r[0] for r in rows], pa.string())}
    for i, n in enumerate(names):
        data[n] = pa.array([r[i + 1] for r in rows], pa.string())
    return df._session.createDataFrame(pa.table(data))
