"""Lazy DataFrames with PySpark's method names, over ferrospark's query engine.

A :class:`DataFrame` holds a resolved logical plan; its methods build new plans (names are
checked as each call is made, as PySpark checks them) and nothing runs before an action
(:meth:`DataFrame.toArrow`, :meth:`~DataFrame.collect`, :meth:`~DataFrame.show`,
:meth:`~DataFrame.count`, ...). Plans run natively: optimized with Catalyst's rules, planned onto
ferrospark's operators, batches streamed out.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _native
from .aggregate import AggColumn
from .column import Column, col, expr
from .errors import AnalysisError
from .frame_extras import DataFrameExtras, GroupedDataExtras
from .window import WindowColumn

if TYPE_CHECKING:
    from .session import Session


def _to_expr(c: Any) -> _native.Expr:
    """A select / group / aggregate item as a native expression."""
    if isinstance(c, Column):
        return c._expr
    if isinstance(c, AggColumn):
        name, args, distinct, ignore_nulls, alias = c._spec()
        e = _native.Expr.aggregate(name, list(args), distinct, ignore_nulls)
        return e.alias(alias) if alias else e
    if isinstance(c, WindowColumn):
        return c._window_expr()
    if isinstance(c, str):
        return col(c)._expr
    raise TypeError(
        f"expected a column name, a Column, an aggregate or a window function, got {type(c).__name__!r}"
    )


def _join_hint(left: DataFrame, right: DataFrame) -> str | None:
    """The strategy the hints of a join's two sides ask for, the stronger one if both do."""
    a, b = left._join_hint, right._join_hint
    return _native.stronger_join_hint(a, b) if a and b else a or b


def _flatten(cols: Sequence[Any]) -> list[Any]:
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        return list(cols[0])
    return list(cols)


class Row(tuple):
    """A result row: a tuple whose values are also reachable by field name (PySpark's ``Row``)."""

    __fields__: tuple[str, ...]

    def __new__(cls, values: Iterable[Any], fields: Sequence[str]) -> Row:
        row = super().__new__(cls, tuple(values))
        row.__fields__ = tuple(fields)
        return row

    def asDict(self) -> dict[str, Any]:
        """The row as a dict of field name to value."""
        return dict(zip(self.__fields__, self))

    def __getattr__(self, name: str) -> Any:
        try:
            return self[self.__fields__.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self.__fields__.index(key))
            except ValueError:
                raise KeyError(key) from None
        return tuple.__getitem__(self, key)

    def __repr__(self) -> str:
        return "Row(" + ", ".join(f"{k}={v!r}" for k, v in zip(self.__fields__, self)) + ")"


class GroupedData(GroupedDataExtras):
    """``df.groupBy(...)``: aggregate with :meth:`agg` or a shortcut (``count``, ``sum``, ...)."""

    def __init__(self, df: DataFrame, keys: list[Any], sets: list[list[int]] | None = None) -> None:
        self._df = df
        self._keys = keys
        # GROUPING SETS as indices into ``keys`` (rollup, cube, groupingSets), else None.
        self._sets = sets

    def agg(self, *exprs: Any) -> DataFrame:
        """Groups and computes ``exprs`` (aggregates, or a dict of column to function name)."""
        items = _flatten(exprs)
        if len(items) == 1 and isinstance(items[0], dict):
            from . import functions as F

            items = [getattr(F, fn)(c) for c, fn in items[0].items()]
        plan = self._df._plan.aggregate(
            [_to_expr(k) for k in self._keys], [_to_expr(a) for a in items], self._sets
        )
        return DataFrame(plan, self._df._session)

    def count(self) -> DataFrame:
        """Rows per group, as column ``count``."""
        from . import functions as F

        return self.agg(F.count("*").alias("count"))

    def _numeric(self, fn: str, cols: Sequence[str]) -> DataFrame:
        from . import functions as F

        if not cols:
            keys = {str(k) for k in self._keys}
            numeric = [
                f.name
                for f in self._df.schema
                if (
                    pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
                )
                and f.name not in keys
            ]
            cols = numeric
        return self.agg(*[getattr(F, fn)(c) for c in cols])

    def sum(self, *cols: str) -> DataFrame:
        """``sum`` of each column (every numeric one when none is named)."""
        return self._numeric("sum", cols)

    def avg(self, *cols: str) -> DataFrame:
        """``avg`` of each column."""
        return self._numeric("avg", cols)

    mean = avg

    def min(self, *cols: str) -> DataFrame:
        """``min`` of each column."""
        return self._numeric("min", cols)

    def max(self, *cols: str) -> DataFrame:
        """``max`` of each column."""
        return self._numeric("max", cols)


class DataFrame(DataFrameExtras):
    """A lazy query. Build with PySpark's methods; run with an action."""

    def __init__(self, plan: _native.LogicalPlan, session: Session, join_hint: str | None = None) -> None:
        self._plan = plan
        self._session = session
        # A join strategy asked by ``hint()`` / ``F.broadcast``: the next join uses it.
        self._join_hint = join_hint

    # -- schema -----------------------------------------------------------------------
    @property
    def schema(self) -> pa.Schema:
        """The output schema as a ``pyarrow.Schema``."""
        return self._plan.schema()

    @property
    def columns(self) -> list[str]:
        """Output column names."""
        return self._plan.columns()

    @property
    def dtypes(self) -> list[tuple[str, str]]:
        """``(name, Spark type name)`` of every column."""
        from ._types import spark_type_name

        return [(f.name, spark_type_name(f)) for f in self.schema]

    def printSchema(self) -> None:
        """Prints the schema as PySpark does."""
        from ._types import spark_type_name

        lines = ["root"]
        for f in self.schema:
            lines.append(f" |-- {f.name}: {spark_type_name(f)} (nullable = {str(f.nullable).lower()})")
        print("\n".join(lines))

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            return Column(_native.Expr.column(self._plan.column_key(item)))
        if isinstance(item, Column):
            return self.filter(item)
        if isinstance(item, (list, tuple)):
            return self.select(*item)
        raise TypeError(f"cannot index a DataFrame with {type(item).__name__!r}")

    def __getattr__(self, name: str) -> Column:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self.columns:
            return self[name]
        raise AttributeError(f"'DataFrame' object has no attribute {name!r}")

    # -- transformations ----------------------------------------------------------------
    def _new(self, plan: _native.LogicalPlan) -> DataFrame:
        return DataFrame(plan, self._session)

    def select(self, *cols: Any) -> DataFrame:
        """``SELECT cols`` (names, Columns, ``"*"``)."""
        return self._new(self._plan.select([_to_expr(c) for c in _flatten(cols)]))

    def selectExpr(self, *exprs: str) -> DataFrame:
        """``SELECT`` of SQL expression texts."""
        return self._new(self._plan.select([expr(e)._expr for e in _flatten(exprs)]))

    def filter(self, condition: Column | str) -> DataFrame:
        """Rows where ``condition`` is true."""
        c = expr(condition) if isinstance(condition, str) else condition
        return self._new(self._plan.filter(c._expr))

    where = filter

    def withColumn(self, colName: str, col: Column) -> DataFrame:
        """Adds or replaces one column."""
        return self.withColumns({colName: col})

    def withColumns(self, *colsMap: dict[str, Column]) -> DataFrame:
        """Adds or replaces several columns."""
        mapping = colsMap[0] if colsMap else {}
        names = list(mapping)
        return self._new(self._plan.with_columns(names, [_to_expr(mapping[n]) for n in names]))

    def withColumnRenamed(self, existing: str, new: str) -> DataFrame:
        """Renames a column (no-op if absent)."""
        return self._new(self._plan.rename_column(existing, new))

    def withColumnsRenamed(self, colsMap: dict[str, str]) -> DataFrame:
        """Renames several columns."""
        df = self
        for old, new in colsMap.items():
            df = df.withColumnRenamed(old, new)
        return df

    def drop(self, *cols: Any) -> DataFrame:
        """Drops columns (by name or Column)."""
        names = []
        for c in _flatten(cols):
            names.append(str(c) if isinstance(c, Column) else c)
        return self._new(self._plan.drop_columns([n.strip("`") for n in names]))

    def groupBy(self, *cols: Any) -> GroupedData:
        """Groups by columns for :meth:`GroupedData.agg`."""
        return GroupedData(self, _flatten(cols))

    groupby = groupBy

    def rollup(self, *cols: Any) -> GroupedData:
        """Groups by ``ROLLUP(cols)``: every prefix of ``cols``, down to the grand total."""
        keys = _flatten(cols)
        n = len(keys)
        return GroupedData(self, keys, [list(range(i)) for i in range(n, -1, -1)])

    def cube(self, *cols: Any) -> GroupedData:
        """Groups by ``CUBE(cols)``: every subset of ``cols``, in Spark's order."""
        keys = _flatten(cols)

        def subsets(idx: list[int]) -> list[list[int]]:
            if not idx:
                return [[]]
            tail = subsets(idx[1:])
            return [[idx[0], *t] for t in tail] + tail

        return GroupedData(self, keys, subsets(list(range(len(keys)))))

    def groupingSets(self, groupingSets: Sequence[Sequence[Any]], *cols: Any) -> GroupedData:
        """Groups by ``GROUPING SETS``: each set lists some of ``cols`` (the group columns)."""
        keys = _flatten(cols)
        names = [k if isinstance(k, str) else str(k) for k in keys]
        sets = []
        for gs in groupingSets:
            idx = []
            for c in gs:
                name = c if isinstance(c, str) else str(c)
                if name not in names:
                    raise AnalysisError(
                        f"[GROUPING_COLUMN_MISMATCH] grouping set column {name} is not among the grouping columns {names}"
                    )
                idx.append(names.index(name))
            sets.append(idx)
        return GroupedData(self, keys, sets)

    def agg(self, *exprs: Any) -> DataFrame:
        """Aggregates the whole DataFrame (one row)."""
        return GroupedData(self, []).agg(*exprs)

    def join(self, other: DataFrame, on: Any = None, how: str | None = None) -> DataFrame:
        """Joins with ``other`` on column names (``USING``), a Column condition, or a list of them."""
        how = (how or "inner").lower()
        hint = _join_hint(self, other)
        if on is None:
            return self._new(self._plan.join(other._plan, "cross" if how == "inner" else how, hint=hint))
        if isinstance(on, str):
            return self._new(self._plan.join(other._plan, how, on=[on], hint=hint))
        if isinstance(on, (list, tuple)) and all(isinstance(x, str) for x in on):
            return self._new(self._plan.join(other._plan, how, on=list(on), hint=hint))
        conds = list(on) if isinstance(on, (list, tuple)) else [on]
        cond = conds[0]
        for c in conds[1:]:
            cond = cond & c
        return self._new(self._plan.join(other._plan, how, condition=cond._expr, hint=hint))

    def crossJoin(self, other: DataFrame) -> DataFrame:
        """The cartesian product."""
        return self._new(self._plan.join(other._plan, "cross", hint=_join_hint(self, other)))

    def hint(self, name: str, *params: Any) -> DataFrame:
        """Spark's join strategy hints (``broadcast``, ``merge``, ``shuffle_hash``,
        ``shuffle_replicate_nl`` and their aliases) for the next join of this DataFrame; other
        hints (``repartition``, ``coalesce``...) say nothing to one process and are ignored,
        as Spark ignores hints it does not know."""
        strategy = _native.join_hint_strategy(name)
        return DataFrame(self._plan, self._session, strategy) if strategy else self

    def orderBy(self, *cols: Any, ascending: bool | list[bool] | None = None) -> DataFrame:
        """Sorts by columns (ASC NULLS FIRST unless a Column says otherwise)."""
        items = _flatten(cols)
        if ascending is not None:
            flags = ascending if isinstance(ascending, list) else [ascending] * len(items)
            items = [
                (c if isinstance(c, Column) else col(c)).asc()
                if a
                else (c if isinstance(c, Column) else col(c)).desc()
                for c, a in zip(items, flags)
            ]
        return self._new(self._plan.sort([_to_expr(c) for c in items]))

    sort = orderBy

    def limit(self, num: int) -> DataFrame:
        """The first ``num`` rows."""
        return self._new(self._plan.limit(num, 0))

    def offset(self, num: int) -> DataFrame:
        """Skips ``num`` rows."""
        return self._new(self._plan.limit(None, num))

    def distinct(self) -> DataFrame:
        """Distinct rows."""
        return self._new(self._plan.distinct())

    def dropDuplicates(self, subset: Sequence[str] | None = None) -> DataFrame:
        """Distinct rows, or the first row of each distinct ``subset``."""
        if not subset:
            return self.distinct()
        return self._new(self._plan.drop_duplicates(list(subset)))

    drop_duplicates = dropDuplicates

    def union(self, other: DataFrame) -> DataFrame:
        """``UNION ALL`` by position."""
        return self._new(self._plan.union(other._plan))

    unionAll = union

    def unionByName(self, other: DataFrame, allowMissingColumns: bool = False) -> DataFrame:
        """``UNION ALL`` matching columns by name."""
        return self._new(self._plan.union(other._plan, by_name=True, allow_missing=allowMissingColumns))

    def intersect(self, other: DataFrame) -> DataFrame:
        """Distinct rows in both."""
        return self._new(self._plan.set_op(other._plan, "intersect", False))

    def intersectAll(self, other: DataFrame) -> DataFrame:
        """Rows in both, with multiplicity."""
        return self._new(self._plan.set_op(other._plan, "intersect", True))

    def subtract(self, other: DataFrame) -> DataFrame:
        """Distinct rows not in ``other``."""
        return self._new(self._plan.set_op(other._plan, "except", False))

    def exceptAll(self, other: DataFrame) -> DataFrame:
        """Rows not in ``other``, with multiplicity."""
        return self._new(self._plan.set_op(other._plan, "except", True))

    def alias(self, alias: str) -> DataFrame:
        """Names the relation, so columns can be written ``alias.col``."""
        return self._new(self._plan.alias(alias))

    def cache(self) -> DataFrame:
        """Runs the query once and keeps its result in memory."""
        return self._session.createDataFrame(self.toArrow())

    persist = cache

    def createOrReplaceTempView(self, name: str) -> None:
        """Registers this DataFrame as a temp view for SQL."""
        self._session._register_view(name, self, replace=True)

    def createTempView(self, name: str) -> None:
        """Registers a temp view; an existing name is an AnalysisError."""
        self._session._register_view(name, self, replace=False)

    def createOrReplaceGlobalTempView(self, name: str) -> None:
        """Registers ``global_temp.name``."""
        self._session._register_view(f"global_temp.{name}", self, replace=True)

    @property
    def write(self) -> Any:
        """A :class:`~ferrospark.writer.DataFrameWriter`: ``df.write.saveAsTable(name)``,
        ``insertInto``, ``parquet(path)``."""
        from .writer import DataFrameWriter

        return DataFrameWriter(self)

    # -- actions --------------------------------------------------------------------------
    def toArrow(self) -> pa.Table:
        """Runs the query: a ``pyarrow.Table`` (on Spark when the session runs there)."""
        if self._session._spark is not None:
            from .spark_stages import SparkRun

            run = SparkRun(self)
            self._last_spark_run = run
            return run.collect()
        return self._plan.collect()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        if self._session._spark is not None:
            return self.toArrow().__arrow_c_stream__(requested_schema)
        return self._plan.__arrow_c_stream__(requested_schema)

    def to_spark(self) -> Any:
        """The query as an ordinary PySpark DataFrame of the session's SparkSession: its
        stages run natively inside Spark tasks when Spark runs it, and it composes with the
        rest of a Spark job."""
        from .spark_stages import SparkRun

        run = SparkRun(self)
        self._last_spark_run = run
        return run.frame()

    toSpark = to_spark

    def toPandas(self) -> Any:
        """Runs the query: a pandas DataFrame."""
        return self.toArrow().to_pandas()

    def collect(self) -> list[Row]:
        """Runs the query: every row as a :class:`Row`."""
        t = self.toArrow()
        names = t.column_names
        cols = [c.to_pylist() for c in t.columns]
        return [Row(vals, names) for vals in zip(*cols)] if cols else [Row((), []) for _ in range(t.num_rows)]

    def count(self) -> int:
        """Number of rows."""
        from . import functions as F

        return self.agg(F.count("*").alias("count")).collect()[0][0]

    def take(self, num: int) -> list[Row]:
        """The first ``num`` rows."""
        return self.limit(num).collect()

    def head(self, n: int | None = None) -> Any:
        """The first row (or the first ``n``)."""
        if n is None:
            rows = self.take(1)
            return rows[0] if rows else None
        return self.take(n)

    def first(self) -> Row | None:
        """The first row."""
        return self.head()

    def show(self, n: int = 20, truncate: bool | int = True, vertical: bool = False) -> None:
        """Prints the first ``n`` rows as PySpark's ``show`` does."""
        print(self._show_string(n, truncate))

    def _show_string(self, n: int, truncate: bool | int) -> str:
        t = self.limit(n + 1).toArrow()
        width = 20 if truncate is True else (int(truncate) if truncate else 0)

        from ._types import interval_text

        fields = list(t.schema)

        def cell(v: Any, field: Any) -> str:
            shown = interval_text(v, field)
            s = (
                shown
                if shown is not None
                else "NULL"
                if v is None
                else (str(v).lower() if isinstance(v, bool) else str(v))
            )
            if width and len(s) > width:
                s = s[: width - 3] + "..." if width > 3 else s[:width]
            return s

        names = t.column_names
        rows = [[cell(v, f) for v, f in zip(r.values(), fields)] for r in t.slice(0, n).to_pylist()]
        # Spark's minimum column width is 3.
        widths = [max([3, len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(names)]
        sep = "+" + "+".join("-" * w for w in widths) + "+"
        pad = (lambda s, w: s.rjust(w)) if width else (lambda s, w: s.ljust(w))
        out = [sep, "|" + "|".join(pad(h, w) for h, w in zip(names, widths)) + "|", sep]
        out += ["|" + "|".join(pad(v, w) for v, w in zip(r, widths)) + "|" for r in rows]
        out.append(sep)
        if t.num_rows > n:
            out.append(f"only showing top {n} row{'s' if n != 1 else ''}")
        return "\n".join(out) + "\n"

    def explain(self, extended: bool | str | None = None, mode: str | None = None) -> None:
        """Prints the plan in Spark's style (``mode``: simple, extended, formatted)."""
        if isinstance(extended, str):
            mode = extended
        elif extended:
            mode = "extended"
        if self._session._spark is not None and (mode or "simple") == "simple":
            from .spark_stages import SparkRun

            print(SparkRun(self).explain(), file=sys.stdout)
            return
        print(self._plan.explain(mode or "simple"), file=sys.stdout)

    def executedPlan(self) -> str | None:
        """The physical plan of the last action with each operator's rows, time and spills
        (on Spark: the stages, then each task's operators)."""
        run = getattr(self, "_last_spark_run", None)
        if run is not None:
            return run.executed_plan()
        return self._plan.executed_plan()

    def __repr__(self) -> str:
        return "DataFrame[" + ", ".join(f"{n}: {t}" for n, t in self.dtypes) + "]"
