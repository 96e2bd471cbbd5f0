"""The rest of ``pyspark.sql.DataFrame``'s methods, mixed into :class:`ferrospark.DataFrame`.

Methods that only tune a cluster (``repartition``, ``coalesce``, ``checkpoint``,
``unpersist``, ...) are accepted and return the DataFrame unchanged: one process has one
partition of work to plan, so they change neither the rows nor the plan. Methods whose result
needs the rows in Python (``sample``, ``transpose``, ``mapInPandas``, ``describe``, ...) run the
query once and build a DataFrame over the result. Those with no meaning without a JVM
(``rdd``, ``pandas_api``, ``writeStream`` on a batch DataFrame) raise with what to use instead.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ._udf_values import name_of
from .column import Column, col, lit
from .errors import AnalysisError, PythonException, UnsupportedError

if TYPE_CHECKING:
    from .dataframe import DataFrame


def _python_failure(func: Callable[..., Any], e: Exception) -> PythonException:
    """The error for a user's Python function that raised (as a Python UDF's is)."""
    return PythonException(f"[PYTHON_UDF_FAILED] the function {name_of(func)} raised {type(e).__name__}: {e}")


def _names(cols: Any) -> list[str]:
    if cols is None:
        return []
    if isinstance(cols, (str, Column)):
        cols = [cols]
    return [c if isinstance(c, str) else str(c) for c in cols]


class StorageLevel:
    """Where a cached DataFrame lives; ferrospark keeps nothing between queries (``NONE``)."""

    def __init__(self, use_disk: bool = False, use_memory: bool = False) -> None:
        self.useDisk = use_disk
        self.useMemory = use_memory
        self.useOffHeap = False
        self.deserialized = False
        self.replication = 1

    def __repr__(self) -> str:
        return f"StorageLevel({self.useDisk}, {self.useMemory}, False, False, 1)"


class Observation:
    """Named metrics of a DataFrame (``df.observe(obs, F.count("*"))``), read with ``get``
    once the DataFrame has run."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or "observation"
        self._frame: Any = None
        self._exprs: tuple[Any, ...] = ()
        self._result: dict[str, Any] | None = None

    @property
    def get(self) -> dict[str, Any]:
        """The metrics as a dict (computed on first read)."""
        if self._result is None:
            if self._frame is None:
                raise AnalysisError("[NO_OBSERVATION] the Observation was not given to df.observe(...)")
            row = self._frame.agg(*self._exprs).collect()[0]
            self._result = row.asDict()
        return self._result


class JsonLines(list):
    """``df.toJSON()``: one JSON text per row (a list; ``collect()`` returns it, as an RDD's)."""

    def collect(self) -> list[str]:
        return list(self)

    def take(self, n: int) -> list[str]:
        return list(self[:n])


class DataFrameExtras:
    """PySpark's remaining DataFrame methods; mixed into ``DataFrame``."""

    # -- partitioning and caching: one process, nothing to tune --------------------------
    def coalesce(self: DataFrame, numPartitions: int) -> DataFrame:  # noqa: N803 - PySpark's name
        """No-op here (one process plans one partition of work); the rows are unchanged."""
        return self

    def repartition(self: DataFrame, numPartitions: Any = None, *cols: Any) -> DataFrame:  # noqa: N803
        """No-op here; the rows are unchanged."""
        return self

    def repartitionByRange(self: DataFrame, numPartitions: Any = None, *cols: Any) -> DataFrame:  # noqa: N802, N803
        """No-op here; the rows are unchanged."""
        return self

    def repartitionById(self: DataFrame, numPartitions: int, partitionIdCol: Any) -> DataFrame:  # noqa: N802, N803
        """No-op here; the rows are unchanged."""
        return self

    def sortWithinPartitions(self: DataFrame, *cols: Any, **kwargs: Any) -> DataFrame:  # noqa: N802
        """One partition here: the same as ``orderBy``."""
        return self.orderBy(*cols, **kwargs)

    def unpersist(self: DataFrame, blocking: bool = False) -> DataFrame:
        """No-op here."""
        return self

    def checkpoint(self: DataFrame, eager: bool = True) -> DataFrame:
        """No-op here (no lineage to truncate)."""
        return self

    def localCheckpoint(self: DataFrame, eager: bool = True, storageLevel: Any = None) -> DataFrame:  # noqa: N802, N803
        """No-op here (no lineage to truncate)."""
        return self

    @property
    def storageLevel(self) -> StorageLevel:  # noqa: N802
        """``NONE``: nothing is cached between queries."""
        return StorageLevel()

    def isLocal(self) -> bool:  # noqa: N802
        """True: every query runs in this process."""
        return True

    @property
    def isStreaming(self) -> bool:  # noqa: N802
        """False: a DataFrame of ``Session`` is a batch query (streams are ``ferrospark.streaming``)."""
        return False

    def withWatermark(self: DataFrame, eventTime: str, delayThreshold: str) -> DataFrame:  # noqa: N802, N803
        """A batch DataFrame's rows are all on time: unchanged, as in Spark."""
        return self

    def dropDuplicatesWithinWatermark(self: DataFrame, subset: Any = None) -> DataFrame:  # noqa: N802
        """On a batch DataFrame, ``dropDuplicates``, as in Spark."""
        return self.dropDuplicates(subset) if subset else self.dropDuplicates()

    def inputFiles(self: DataFrame) -> list[str]:  # noqa: N802
        """The files the query's scans read."""
        return sorted(set(self._plan.input_files())) if hasattr(self._plan, "input_files") else []

    @property
    def sparkSession(self: DataFrame) -> Any:  # noqa: N802
        """The session this DataFrame belongs to."""
        return self._session

    @property
    def executionInfo(self) -> None:  # noqa: N802
        """Spark Connect's execution information: none in process."""
        return None

    # -- names and views -----------------------------------------------------------------
    def registerTempTable(self: DataFrame, name: str) -> None:  # noqa: N802
        """``createOrReplaceTempView`` (Spark's older name)."""
        self.createOrReplaceTempView(name)

    def createGlobalTempView(self: DataFrame, name: str) -> None:  # noqa: N802
        """A global temp view; an error if one of that name exists."""
        try:
            self._session.table(f"global_temp.{name}")
        except Exception:  # absent: create it
            self.createOrReplaceGlobalTempView(name)
            return
        raise AnalysisError(
            f"[TEMP_TABLE_OR_VIEW_ALREADY_EXISTS] Cannot create the temporary view `{name}` because it already exists."
        )

    def toDF(self: DataFrame, *cols: str) -> DataFrame:  # noqa: N802
        """The same columns under new names, in order."""
        names = self.columns
        if len(cols) != len(names):
            raise AnalysisError(
                f"[NUM_COLUMNS_MISMATCH] toDF needs {len(names)} names, got {len(cols)}: {list(cols)}"
            )
        return self.select(*[col(o).alias(n) for o, n in zip(names, cols)])

    def to(self: DataFrame, schema: Any) -> DataFrame:
        """The columns of ``schema`` (a PySpark ``StructType``, a ``pyarrow.Schema`` or DDL
        text), found by name and cast to its types."""
        from ._types import spark_type_name

        if isinstance(schema, str):
            from ._types import split_ddl

            fields = split_ddl(schema)
        elif isinstance(schema, pa.Schema):
            fields = [(f.name, spark_type_name(f)) for f in schema]
        else:
            fields = [(f.name, f.dataType.simpleString()) for f in schema.fields]
        return self.select(*[col(n).cast(t).alias(n) for n, t in fields])

    def withMetadata(self: DataFrame, columnName: str, metadata: dict[str, Any]) -> DataFrame:  # noqa: N802, N803
        """The DataFrame unchanged: ferrospark keeps no column metadata."""
        if columnName not in self.columns:
            raise AnalysisError(
                f"[UNRESOLVED_COLUMN] withMetadata: no column `{columnName}` in {self.columns}"
            )
        return self

    def colRegex(self: DataFrame, colName: str) -> list[Column]:  # noqa: N802, N803
        """The columns whose names match the regex (backquoted as PySpark writes it); give the
        result to ``select``."""
        pattern = colName[1:-1] if colName.startswith("`") and colName.endswith("`") else colName
        rx = re.compile(pattern)
        return [col(c) for c in self.columns if rx.fullmatch(c)]

    def transform(self: DataFrame, func: Callable[..., DataFrame], *args: Any, **kwargs: Any) -> DataFrame:
        """``func(self, *args, **kwargs)``: chains custom transformations."""
        out = func(self, *args, **kwargs)
        if not hasattr(out, "_plan"):
            raise AnalysisError(f"transform: {func!r} returned {type(out).__name__}, not a DataFrame")
        return out

    # -- actions -------------------------------------------------------------------------
    def isEmpty(self: DataFrame) -> bool:  # noqa: N802
        """Whether the query returns no row."""
        return self.limit(1).count() == 0

    def tail(self: DataFrame, num: int) -> list[Any]:
        """The last ``num`` rows."""
        rows = self.collect()
        return rows[-num:] if num > 0 else []

    def toLocalIterator(self: DataFrame, prefetchPartitions: bool = False) -> Iterator[Any]:  # noqa: N802, N803
        """The rows one at a time, batch by batch as the query streams them."""
        from .dataframe import Row

        reader = pa.RecordBatchReader.from_stream(self)
        for batch in reader:
            names = batch.schema.names
            for values in zip(*(c.to_pylist() for c in batch.columns)):
                yield Row(values, names)

    def foreach(self: DataFrame, f: Callable[[Any], None]) -> None:
        """Calls ``f`` on each row."""
        for r in self.collect():
            f(r)

    def foreachPartition(self: DataFrame, f: Callable[[Iterator[Any]], None]) -> None:  # noqa: N802
        """Calls ``f`` once with an iterator over every row (one partition here)."""
        f(iter(self.collect()))

    def toJSON(self: DataFrame, use_unicode: bool = True) -> JsonLines:  # noqa: N802
        """Each row as a JSON object text (NULL fields left out, as Spark writes them)."""
        import json

        table = self.toArrow()
        out = JsonLines()
        for row in table.to_pylist():
            out.append(
                json.dumps(
                    {k: _json_value(v) for k, v in row.items() if v is not None},
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
            )
        return out

    def scalar(self: DataFrame) -> Column:
        """The one value of a one-row, one-column query, as a literal column (the query runs now)."""
        table = self.toArrow()
        if table.num_columns != 1:
            raise AnalysisError(
                f"[INVALID_SUBQUERY_EXPRESSION.SCALAR_SUBQUERY_RETURN_MORE_THAN_ONE_OUTPUT_COLUMN] scalar() needs one column, got {table.num_columns}"
            )
        if table.num_rows > 1:
            raise AnalysisError(
                "[SCALAR_SUBQUERY_TOO_MANY_ROWS] More than one row returned by a subquery used as an expression."
            )
        value = table.column(0)[0].as_py() if table.num_rows else None
        return lit(value).cast(_spark_type(table.schema.field(0).type))

    def exists(self: DataFrame) -> Column:
        """Whether the query returns a row, as a literal column (the query runs now)."""
        return lit(not self.isEmpty())

    def observe(self: DataFrame, observation: Observation | str, *exprs: Any) -> DataFrame:
        """The DataFrame unchanged; ``observation.get`` gives ``exprs`` aggregated over its rows."""
        if isinstance(observation, Observation):
            observation._frame = self
            observation._exprs = exprs
        return self

    # -- rows in Python ------------------------------------------------------------------
    def _from_arrow(self: DataFrame, table: pa.Table) -> DataFrame:
        return self._session.createDataFrame(table)

    def sample(
        self: DataFrame, withReplacement: Any = None, fraction: Any = None, seed: int | None = None
    ) -> DataFrame:  # noqa: N803
        """About ``fraction`` of the rows, drawn with ``seed`` (not Spark's generator: the same
        seed gives the same rows here, other rows than Spark's)."""
        if (
            fraction is None
            and isinstance(withReplacement, (int, float))
            and not isinstance(withReplacement, bool)
        ):
            withReplacement, fraction = False, withReplacement
        if fraction is None or fraction < 0:
            raise AnalysisError(f"sample: fraction must be >= 0, got {fraction}")
        rnd = random.Random(seed)
        table = self.toArrow()
        if withReplacement:
            idx = [i for i in range(table.num_rows) for _ in range(_poisson(rnd, fraction))]
        else:
            idx = [i for i in range(table.num_rows) if rnd.random() < fraction]
        return self._from_arrow(table.take(pa.array(idx, pa.int64())))

    def randomSplit(self: DataFrame, weights: list[float], seed: int | None = None) -> list[DataFrame]:  # noqa: N802
        """The rows split at random in proportion to ``weights`` (each row in one part)."""
        if not weights or any(w < 0 for w in weights) or sum(weights) <= 0:
            raise AnalysisError(
                f"randomSplit: weights must be non-negative with a positive sum, got {weights}"
            )
        total = sum(weights)
        bounds = [sum(weights[: i + 1]) / total for i in range(len(weights))]
        rnd = random.Random(seed)
        table = self.toArrow()
        parts: list[list[int]] = [[] for _ in weights]
        for i in range(table.num_rows):
            x = rnd.random()
            parts[next(k for k, b in enumerate(bounds) if x < b or k == len(bounds) - 1)].append(i)
        return [self._from_arrow(table.take(pa.array(p, pa.int64()))) for p in parts]

    def mapInArrow(
        self: DataFrame,
        func: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
        schema: Any,
        barrier: bool = False,
        profile: Any = None,
    ) -> DataFrame:  # noqa: N802
        """``func`` over the query's record batches; its batches, as ``schema``, are the result."""
        return self._map_batches(func, schema, arrow=True)

    def mapInPandas(
        self: DataFrame,
        func: Callable[[Iterator[Any]], Iterator[Any]],
        schema: Any,
        barrier: bool = False,
        profile: Any = None,
    ) -> DataFrame:  # noqa: N802
        """``func`` over the query's rows as pandas DataFrames; its frames, as ``schema``, are
        the result."""
        return self._map_batches(func, schema, arrow=False)

    def _map_batches(self: DataFrame, func: Callable[..., Any], schema: Any, arrow: bool) -> DataFrame:
        from .errors import FerroError
        from .session import _ddl_schema

        target = _ddl_schema(schema) if isinstance(schema, str) else schema
        reader = pa.RecordBatchReader.from_stream(self)
        batches = (b for b in reader) if arrow else (b.to_pandas() for b in reader)
        out = []
        try:
            for piece in func(batches):
                t = piece if arrow else pa.Table.from_pandas(piece, preserve_index=False)
                out.append(t if isinstance(t, pa.Table) else pa.Table.from_batches([t]))
        except FerroError:
            raise
        except Exception as e:
            raise _python_failure(func, e) from e
        table = (
            pa.concat_tables([t.select(target.names).cast(target) for t in out])
            if out
            else target.empty_table()
        )
        return self._from_arrow(table)

    def transpose(self: DataFrame, indexColumn: Any = None) -> DataFrame:  # noqa: N803
        """Rows become columns: the index column's values (the first column by default) name
        the new columns, in their sorted order; the other columns become rows under ``key``."""
        table = self.toArrow()
        index = (
            indexColumn
            if isinstance(indexColumn, str)
            else (str(indexColumn) if indexColumn is not None else table.column_names[0])
        )
        others = [c for c in table.column_names if c != index]
        keys = table.column(index).to_pylist()
        order = sorted(range(len(keys)), key=lambda i: (keys[i] is None, keys[i]))
        value_types = {table.schema.field(c).type for c in others}
        vt = value_types.pop() if len(value_types) == 1 else pa.string()
        columns: dict[str, Any] = {"key": pa.array(others, pa.string())}
        for i in order:
            if keys[i] is None:
                continue
            columns[str(keys[i])] = pa.array([table.column(c)[i].as_py() for c in others], vt)
        return self._from_arrow(pa.table(columns))

    def zipWithIndex(self: DataFrame, indexColName: str = "index") -> DataFrame:  # noqa: N802, N803
        """The rows with their position (from 0, in the query's order) in ``indexColName``."""
        table = self.toArrow()
        return self._from_arrow(
            table.append_column(indexColName, pa.array(range(table.num_rows), pa.int64()))
        )

    def zip(self: DataFrame, other: DataFrame) -> DataFrame:
        """The columns of both, row by row (both must have as many rows)."""
        a, b = self.toArrow(), other.toArrow()
        if a.num_rows != b.num_rows:
            raise AnalysisError(
                f"zip: the DataFrames have {a.num_rows} and {b.num_rows} rows; zip needs as many"
            )
        for name, column in zip(b.column_names, b.columns):
            a = a.append_column(name, column)
        return self._from_arrow(a)

    # -- reshaping -----------------------------------------------------------------------
    def unpivot(
        self: DataFrame, ids: Any, values: Any, variableColumnName: str, valueColumnName: str
    ) -> DataFrame:  # noqa: N803
        """One row per id row and value column: the ids, the value column's name and its value."""
        id_names = _names(ids)
        value_names = _names(values) if values is not None else [c for c in self.columns if c not in id_names]
        if not value_names:
            raise AnalysisError(
                "[UNPIVOT_REQUIRES_VALUE_COLUMNS] At least one value column needs to be specified for UNPIVOT."
            )
        parts = [
            self.select(
                *[col(i) for i in id_names],
                lit(v).alias(variableColumnName),
                col(v).alias(valueColumnName),
            )
            for v in value_names
        ]
        out = parts[0]
        for p in parts[1:]:
            out = out.union(p)
        return out

    melt = unpivot

    # -- statistics ----------------------------------------------------------------------
    @property
    def na(self: DataFrame) -> Any:
        """Missing-value functions: ``fill``, ``drop``, ``replace``."""
        from .frame_stats import DataFrameNaFunctions

        return DataFrameNaFunctions(self)

    @property
    def stat(self: DataFrame) -> Any:
        """Statistic functions: ``corr``, ``cov``, ``crosstab``, ``freqItems``, ``approxQuantile``, ``sampleBy``."""
        from .frame_stats import DataFrameStatFunctions

        return DataFrameStatFunctions(self)

    def fillna(self: DataFrame, value: Any, subset: Any = None) -> DataFrame:
        """``na.fill``."""
        return self.na.fill(value, subset)

    def dropna(self: DataFrame, how: str = "any", thresh: int | None = None, subset: Any = None) -> DataFrame:
        """``na.drop``."""
        return self.na.drop(how, thresh, subset)

    def replace(self: DataFrame, to_replace: Any, value: Any = ..., subset: Any = None) -> DataFrame:
        """``na.replace``."""
        return self.na.replace(to_replace, value, subset)

    def corr(self: DataFrame, col1: str, col2: str, method: str | None = None) -> float:
        """``stat.corr``."""
        return self.stat.corr(col1, col2, method)

    def cov(self: DataFrame, col1: str, col2: str) -> float:
        """``stat.cov``."""
        return self.stat.cov(col1, col2)

    def crosstab(self: DataFrame, col1: str, col2: str) -> DataFrame:
        """``stat.crosstab``."""
        return self.stat.crosstab(col1, col2)

    def freqItems(self: DataFrame, cols: Any, support: float | None = None) -> DataFrame:  # noqa: N802
        """``stat.freqItems``."""
        return self.stat.freqItems(cols, support)

    def approxQuantile(self: DataFrame, col: Any, probabilities: Any, relativeError: float) -> Any:  # noqa: N802, N803
        """``stat.approxQuantile``."""
        return self.stat.approxQuantile(col, probabilities, relativeError)

    def sampleBy(
        self: DataFrame, col: Any, fractions: dict[Any, float], seed: int | None = None
    ) -> DataFrame:  # noqa: N802
        """``stat.sampleBy``."""
        return self.stat.sampleBy(col, fractions, seed)

    def describe(self: DataFrame, *cols: Any) -> DataFrame:
        """count, mean, stddev, min and max of numeric and string columns, as strings."""
        from .frame_stats import summary

        return summary(
            self,
            _names(list(cols[0]) if len(cols) == 1 and isinstance(cols[0], list) else cols),
            ["count", "mean", "stddev", "min", "max"],
        )

    def summary(self: DataFrame, *statistics: str) -> DataFrame:
        """Like ``describe``, with percentiles (``25%``, ``50%``, ``75%`` by default)."""
        from .frame_stats import summary

        stats = list(statistics) or ["count", "mean", "stddev", "min", "25%", "50%", "75%", "max"]
        return summary(self, [], stats)

    # -- what needs a JVM ----------------------------------------------------------------
    @property
    def rdd(self) -> Any:
        """No RDDs without a JVM: use ``toArrow()``, ``collect()`` or ``toLocalIterator()``."""
        raise UnsupportedError(
            "DataFrame.rdd: ferrospark has no RDDs; use toArrow(), collect() or toLocalIterator()"
        )

    def pandas_api(self, index_col: Any = None) -> Any:
        """pandas-on-Spark needs Spark: use ``toPandas()``."""
        raise UnsupportedError("DataFrame.pandas_api: pandas-on-Spark needs Spark; use toPandas()")

    @property
    def plot(self) -> Any:
        """Plotting needs pandas: use ``toPandas().plot``."""
        raise UnsupportedError("DataFrame.plot: use toPandas().plot")

    @property
    def writeStream(self) -> Any:  # noqa: N802
        """A batch DataFrame cannot be written as a stream (Spark's error)."""
        raise AnalysisError(
            "[WRITE_STREAM_NOT_ALLOWED] 'writeStream' can be called only on streaming Dataset/DataFrame."
        )

    def writeTo(self: DataFrame, table: str) -> Any:  # noqa: N802
        """A catalog table written with Spark's v2 writer: ``.create()``, ``.append()``,
        ``.createOrReplace()``, ``.replace()``, ``.overwritePartitions()`` (``using``,
        ``option``, ``partitionedBy`` as Spark's)."""
        from .writer import DataFrameWriterV2

        return DataFrameWriterV2(self, table)

    def mergeInto(self, table: str, condition: Column) -> Any:  # noqa: N802
        """MERGE needs a table format with row-level changes; ferrospark's tables are Parquet."""
        raise UnsupportedError(
            "[UNSUPPORTED_FEATURE.TABLE_OPERATION] MERGE INTO: ferrospark's tables are Parquet files without row-level changes"
        )

    def asTable(self) -> Any:  # noqa: N802
        """Table arguments of Python table functions need Spark."""
        raise UnsupportedError("DataFrame.asTable: table-valued Python functions are not supported")

    def lateralJoin(self, other: Any, on: Any = None, how: str | None = None) -> Any:  # noqa: N802
        """Correlated lateral joins are not supported: write the correlation in SQL as a join."""
        raise UnsupportedError("DataFrame.lateralJoin: correlated lateral joins are not supported")

    def nearestByJoin(
        self,
        other: Any,
        rankingExpression: Any,
        numResults: int,
        mode: str,
        direction: str,
        *,
        joinType: str = "inner",
    ) -> Any:  # noqa: N802, N803
        """Not supported: rank the candidates with a window over a join."""
        raise UnsupportedError(
            "DataFrame.nearestByJoin: not supported; rank a join's rows with a window function"
        )

    def metadataColumn(self, colName: str) -> Column:  # noqa: N802, N803
        """File metadata columns (``_metadata``) are not produced by ferrospark's scans."""
        raise AnalysisError(
            f"[UNRESOLVED_COLUMN] metadata column `{colName}`: ferrospark's scans have no metadata columns"
        )

    def semanticHash(self: DataFrame) -> int:  # noqa: N802
        """A hash of the optimized plan (equal plans, equal hashes)."""
        return hash(_plan_text(self))

    def sameSemantics(self: DataFrame, other: DataFrame) -> bool:  # noqa: N802
        """Whether both optimize to the same plan."""
        return _plan_text(self) == _plan_text(other)


def _plan_text(df: Any) -> str:
    text = df._plan.explain("simple") if hasattr(df._plan, "explain") else repr(df._plan)
    return re.sub(r"#\d+", "", text)


def _spark_type(t: pa.DataType) -> str:
    from ._types import spark_type_name

    return spark_type_name(t)


def _json_value(v: Any) -> Any:
    import datetime as dt
    from decimal import Decimal

    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(v, Decimal):
        return float(v) if v != v.to_integral_value() else int(v)
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, bytes):
        import base64

        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and isinstance(v[0], tuple) and len(v[0]) == 2:
            return {str(k): _json_value(x) for k, x in v}
        return [_json_value(x) for x in v]
    return v


def _poisson(rnd: random.Random, lam: float) -> int:
    limit, k, p = math.exp(-lam), 0, rnd.random()
    while p > limit:
        k += 1
        p *= rnd.random()
    return k


class GroupedDataExtras:
    """PySpark's grouped-map methods on ``df.groupBy(...)``: each group's rows handed to a
    Python function (as pandas or Arrow), its results concatenated as ``schema``."""

    def applyInPandas(self, func: Callable[..., Any], schema: Any) -> DataFrame:  # noqa: N802 - PySpark's name
        """``func(pdf)`` (or ``func(key, pdf)``) per group; its pandas DataFrames are the result."""
        return self._apply_groups(func, schema, arrow=False)

    def applyInArrow(self, func: Callable[..., Any], schema: Any) -> DataFrame:  # noqa: N802 - PySpark's name
        """``func(table)`` (or ``func(key, table)``) per group over ``pyarrow.Table``s."""
        return self._apply_groups(func, schema, arrow=True)

    def apply(self, udf: Any) -> DataFrame:
        """PySpark's older grouped-map API: ``applyInPandas`` with the UDF's function and schema."""
        func = getattr(udf, "func", None)
        schema = getattr(udf, "returnType", None)
        if func is None or schema is None:
            raise AnalysisError(
                "GroupedData.apply takes a grouped-map pandas_udf; use applyInPandas(func, schema)"
            )
        return self._apply_groups(func, schema, arrow=False)

    def _apply_groups(self, func: Callable[..., Any], schema: Any, arrow: bool) -> DataFrame:
        import inspect

        from .errors import FerroError
        from .session import _ddl_schema

        df = self._df  # type: ignore[attr-defined]
        keys = [k if isinstance(k, str) else str(k) for k in self._keys]  # type: ignore[attr-defined]
        target = _ddl_schema(schema) if isinstance(schema, str) else schema
        table = df.toArrow()
        groups: dict[tuple[Any, ...], list[int]] = {}
        key_values = [table.column(k).to_pylist() for k in keys]
        for i in range(table.num_rows):
            groups.setdefault(tuple(v[i] for v in key_values), []).append(i)
        try:
            wants_key = len(inspect.signature(func).parameters) == 2
        except (TypeError, ValueError):
            wants_key = False
        out = []
        try:
            for key, rows in groups.items():
                part = table.take(pa.array(rows, pa.int64()))
                arg = part if arrow else part.to_pandas()
                res = func(key, arg) if wants_key else func(arg)
                t = res if arrow else pa.Table.from_pandas(res, preserve_index=False)
                out.append(t.select(target.names).cast(target))
        except FerroError:
            raise
        except Exception as e:
            raise _python_failure(func, e) from e
        result = pa.concat_tables(out) if out else target.empty_table()
        return df._session.createDataFrame(result)

    def pivot(self, pivot_col: str, values: list[Any] | None = None) -> Any:
        """Pivoted aggregation: ``.agg(...)`` then gives a column per value of ``pivot_col``
        (named by the value; ``value_aggregate`` when there are several aggregates)."""
        return _Pivot(self, pivot_col, values)

    def cogroup(self, other: Any) -> Any:
        """Two grouped DataFrames, for ``applyInPandas(func, schema)`` over each key's two groups."""
        return _CoGrouped(self, other)


class _CoGrouped:
    def __init__(self, left: Any, right: Any) -> None:
        self._left, self._right = left, right

    def applyInPandas(self, func: Callable[..., Any], schema: Any) -> DataFrame:  # noqa: N802 - PySpark's name
        """``func(left_pdf, right_pdf)`` (or with the key first) per key of either side."""
        import inspect

        from .session import _ddl_schema

        target = _ddl_schema(schema) if isinstance(schema, str) else schema
        sides = []
        for g in (self._left, self._right):
            keys = [k if isinstance(k, str) else str(k) for k in g._keys]
            pdf = g._df.toPandas()
            sides.append((keys, pdf))
        index: dict[tuple[Any, ...], list[list[int]]] = {}
        for s, (keys, pdf) in enumerate(sides):
            for i, key in enumerate(zip(*(pdf[k].tolist() for k in keys))):
                index.setdefault(tuple(key), [[], []])[s].append(i)
        wants_key = len(inspect.signature(func).parameters) == 3
        out = []
        for key, (li, ri) in index.items():
            lpdf, rpdf = sides[0][1].iloc[li], sides[1][1].iloc[ri]
            res = func(key, lpdf, rpdf) if wants_key else func(lpdf, rpdf)
            out.append(pa.Table.from_pandas(res, preserve_index=False).select(target.names).cast(target))
        result = pa.concat_tables(out) if out else target.empty_table()
        return self._left._df._session.createDataFrame(result)


class _Pivot:
    def __init__(self, grouped: Any, pivot_col: str, values: list[Any] | None) -> None:
        self._grouped, self._col, self._values = grouped, pivot_col, values

    def agg(self, *exprs: Any) -> DataFrame:
        """One column per pivot value (and aggregate), the groups' rows filtered to that value."""
        df = self._grouped._df
        keys = [k if isinstance(k, str) else str(k) for k in self._grouped._keys]
        values = self._values
        if values is None:
            seen = df.select(col(self._col)).distinct().toArrow().column(0).to_pylist()
            values = sorted(seen, key=lambda v: (v is not None, v))
        base = df.select(*[col(k) for k in keys]).distinct() if keys else None
        out = base
        for v in values:
            cond = col(self._col).isNull() if v is None else col(self._col) == lit(v)
            part = df.filter(cond).groupBy(*keys).agg(*exprs)
            names = [c for c in part.columns if c not in keys]
            label = "null" if v is None else str(v)
            renamed = {n: (label if len(names) == 1 else f"{label}_{n}") for n in names}
            part = part.select(*[col(k) for k in keys], *[col(n).alias(renamed[n]) for n in names])
            if out is None:
                out = part
            else:
                suffix = [f"__r_{k}" for k in keys]
                right = part.select(
                    *[col(k).alias(s) for k, s in zip(keys, suffix)],
                    *[col(renamed[n]) for n in names],
                )
                cond_join = None
                for k, s in zip(keys, suffix):
                    c = col(k).eqNullSafe(col(s))
                    cond_join = c if cond_join is None else cond_join & c
                out = out.join(right, cond_join, "left").drop(*suffix)
        if out is None:
            raise AnalysisError("pivot: no pivot values")
        return out

    def count(self) -> DataFrame:
        """Rows per group and pivot value."""
        from .functions import count

        return self.agg(count(lit(1)))

    def sum(self, *cols: str) -> DataFrame:
        """``sum`` per pivot value."""
        from .functions import sum as sum_

        return self.agg(*[sum_(c) for c in cols])

    def avg(self, *cols: str) -> DataFrame:
        """``avg`` per pivot value."""
        from .functions import avg

        return self.agg(*[avg(c) for c in cols])

    mean = avg

    def min(self, *cols: str) -> DataFrame:
        """``min`` per pivot value."""
        from .functions import min as min_

        return self.agg(*[min_(c) for c in cols])

    def max(self, *cols: str) -> DataFrame:
        """``max`` per pivot value."""
        from .functions import max as max_

        return self.agg(*[max_(c) for c in cols])
