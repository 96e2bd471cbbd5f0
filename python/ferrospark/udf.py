"""Python functions in queries: ``F.udf``, ``F.pandas_udf`` and ``spark.udf.register``.

The engine calls a function over a batch of rows at a time (one ``pyarrow.RecordBatch`` of its
argument columns in, one ``pyarrow.Array`` out), holding the GIL only for that call. What the
function sees and what becomes of what it returns follow PySpark 4 (``_udf_values``):

- ``F.udf`` (row at a time): arguments as PySpark hands them (``int``, ``float``, ``str``,
  ``bytes``, ``Decimal``, ``date``, naive local ``datetime``, ``list``, ``dict``, ``Row``);
  results converted the Arrow-optimized way, Spark 4's default; ``useArrow=False`` converts
  them as a pickled UDF's (NULL where a value does not fit the declared type).
- ``F.pandas_udf``: ``pandas.Series`` in and out (a struct is a ``pandas.DataFrame``); an
  ``Iterator[Series]`` function runs over an iterator of one batch per call; a function from
  Series to a scalar is a grouped aggregate, called once per group (``groupBy().agg``).

A function that raises fails the query with :class:`~ferrospark.errors.PythonException`
naming it, with the Python traceback.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from . import _native
from . import _udf_values as values
from ._types import arrow_type
from .column import Column, col
from .errors import AnalysisError, UnsupportedError

# PySpark's evaluation types (``pyspark.util.PythonEvalType``).
SQL_BATCHED_UDF = 100
SQL_ARROW_BATCHED_UDF = 101
SQL_SCALAR_PANDAS_UDF = 200
SQL_GROUPED_MAP_PANDAS_UDF = 201
SQL_GROUPED_AGG_PANDAS_UDF = 202
SQL_SCALAR_PANDAS_ITER_UDF = 204


class PandasUDFType:
    """PySpark's older way to say what a ``pandas_udf`` is (``functionType=``)."""

    SCALAR = SQL_SCALAR_PANDAS_UDF
    SCALAR_ITER = SQL_SCALAR_PANDAS_ITER_UDF
    GROUPED_MAP = SQL_GROUPED_MAP_PANDAS_UDF
    GROUPED_AGG = SQL_GROUPED_AGG_PANDAS_UDF


def _arrow_of(t: Any) -> pa.DataType:
    """The Arrow type of a return type given as a DDL string, a PySpark ``DataType`` or an
    Arrow type."""
    if isinstance(t, pa.DataType):
        return t
    if isinstance(t, str):
        return arrow_type(t)
    simple = getattr(t, "simpleString", None)
    if simple is not None:
        return arrow_type(simple())
    raise AnalysisError(f"[NOT_A_DATATYPE] returnType must be a DDL string or a DataType, got {t!r}")


def _columns(cols: tuple[Any, ...]) -> list[_native.Expr]:
    return [(c if isinstance(c, Column) else col(c))._expr for c in cols]


class UserDefinedFunction:
    """A Python function callable on columns (``f(df.a, "b")``) and, once registered, from
    SQL. ``func``, ``returnType``, ``evalType`` and ``deterministic`` are PySpark's."""

    def __init__(
        self,
        func: Callable[..., Any],
        returnType: Any = "string",  # noqa: N803 - PySpark's name
        name: str | None = None,
        evalType: int = SQL_BATCHED_UDF,  # noqa: N803 - PySpark's name
        deterministic: bool = True,
    ) -> None:
        if not callable(func):
            raise AnalysisError(f"[NOT_CALLABLE] the UDF's function must be callable, got {func!r}")
        self.func = func
        self.returnType = returnType
        self.evalType = evalType
        self.deterministic = deterministic
        self._name = name or values.name_of(func)
        # a grouped-map function's return type is a whole schema, used by applyInPandas
        self._arrow = None if evalType == SQL_GROUPED_MAP_PANDAS_UDF else _arrow_of(returnType)
        functools.update_wrapper(self, func, updated=())  # type: ignore[arg-type]

    def __call__(self, *cols: Any) -> Column:
        if self.evalType == SQL_GROUPED_MAP_PANDAS_UDF:
            raise AnalysisError(
                "[INVALID_UDF_EVAL_TYPE] a grouped-map pandas_udf is used through "
                "groupBy(...).applyInPandas(func, schema)"
            )
        expr = _native.Expr.udf(
            self._name,
            self._batch_function(),
            self._arrow,
            self.deterministic,
            self.evalType == SQL_GROUPED_AGG_PANDAS_UDF,
            _columns(cols),
        )
        return Column(expr)

    def asNondeterministic(self) -> UserDefinedFunction:  # noqa: N802 - PySpark's name
        """The same function, which the optimizer must not move, merge or call fewer times."""
        self.deterministic = False
        return self

    def _batch_function(self) -> Callable[[pa.RecordBatch], pa.Array]:
        f, t = self.func, self._arrow
        if self.evalType in (SQL_BATCHED_UDF, SQL_ARROW_BATCHED_UDF):
            return values.rows_function(f, t, arrow=self.evalType == SQL_ARROW_BATCHED_UDF)
        if self.evalType == SQL_SCALAR_PANDAS_UDF:
            return values.series_function(f, t)
        if self.evalType == SQL_SCALAR_PANDAS_ITER_UDF:
            return values.series_iterator_function(f, t)
        if self.evalType == SQL_GROUPED_AGG_PANDAS_UDF:
            return values.group_function(f, t)
        raise UnsupportedError(f"a UDF of evaluation type {self.evalType} cannot run in a query")

    def _register(self, native_catalog: Any, name: str) -> UserDefinedFunction:
        registered = UserDefinedFunction(self.func, self.returnType, name, self.evalType, self.deterministic)
        native_catalog.register_udf(
            name,
            registered._batch_function(),
            registered._arrow,
            registered.deterministic,
            registered.evalType == SQL_GROUPED_AGG_PANDAS_UDF,
        )
        return registered


# -- the public constructors --------------------------------------------------------------


def udf(
    f: Callable[..., Any] | Any = None,
    returnType: Any = "string",  # noqa: N803 - PySpark's name
    *,
    useArrow: bool | None = None,  # noqa: N803 - PySpark's name
) -> Any:
    """A Python function as a column function, row at a time (``@udf("int")``,
    ``udf(lambda x: x + 1, "int")``). ``useArrow=True`` converts its results with Arrow."""
    if f is None or isinstance(f, (str, pa.DataType)) or hasattr(f, "simpleString"):
        given = "string" if f is None else f
        return functools.partial(
            _make_udf, returnType=given if f is not None else returnType, useArrow=useArrow
        )
    return _make_udf(f, returnType=returnType, useArrow=useArrow)


def _make_udf(f: Callable[..., Any], returnType: Any, useArrow: bool | None) -> UserDefinedFunction:  # noqa: N803
    # Spark 4 makes row functions Arrow-optimized unless told otherwise
    # (spark.sql.execution.pythonUDF.arrow.enabled is true by default).
    kind = SQL_BATCHED_UDF if useArrow is False else SQL_ARROW_BATCHED_UDF
    return UserDefinedFunction(f, returnType, evalType=kind)


def _pandas_kind(f: Callable[..., Any]) -> int:
    """The kind of pandas_udf its type hints say: Series -> Series (scalar), Iterator[Series]
    -> Iterator[Series] (scalar iterator), Series -> scalar (grouped aggregate)."""
    try:
        hints = typing.get_type_hints(f)
    except Exception:  # noqa: BLE001 - unresolvable hints: fall back to the signature's text
        hints = {k: v for k, v in getattr(f, "__annotations__", {}).items()}
    ret = hints.get("return")
    params = [hints.get(p) for p in inspect.signature(f).parameters if p in hints]
    text = [str(x) for x in params]
    if ret is None and not params:
        raise AnalysisError(
            f"[INVALID_PANDAS_UDF] the pandas_udf {values.name_of(f)} needs type hints (pd.Series -> pd.Series) "
            "or functionType"
        )
    ret_text = str(ret)
    if "Iterator" in ret_text or (text and "Iterator" in text[0]):
        return SQL_SCALAR_PANDAS_ITER_UDF
    if "Series" in ret_text or "DataFrame" in ret_text:
        return SQL_SCALAR_PANDAS_UDF
    return SQL_GROUPED_AGG_PANDAS_UDF


def pandas_udf(
    f: Callable[..., Any] | Any = None,
    returnType: Any = None,  # noqa: N803 - PySpark's name
    functionType: int | None = None,  # noqa: N803 - PySpark's name
) -> Any:
    """A pandas function as a column function (``@pandas_udf("double")`` over type-hinted
    ``pd.Series`` functions, or ``functionType=PandasUDFType...``)."""
    if f is None or isinstance(f, (str, pa.DataType)) or hasattr(f, "simpleString"):
        rtype = f if f is not None else returnType
        if isinstance(returnType, int) and functionType is None:
            functionType = returnType
        return functools.partial(_make_pandas_udf, returnType=rtype, functionType=functionType)
    if isinstance(returnType, int) and functionType is None:
        raise AnalysisError("[INVALID_PANDAS_UDF] pandas_udf needs a return type")
    return _make_pandas_udf(f, returnType=returnType, functionType=functionType)


def _make_pandas_udf(f: Callable[..., Any], returnType: Any, functionType: int | None) -> UserDefinedFunction:  # noqa: N803
    if returnType is None:
        raise AnalysisError("[CANNOT_BE_NONE] pandas_udf needs a return type")
    kind = functionType if functionType is not None else _pandas_kind(f)
    return UserDefinedFunction(f, returnType, evalType=kind)


def call_udf(udfName: str, *cols: Any) -> Column:  # noqa: N803 - PySpark's name
    """A call of the function registered as ``udfName`` (``spark.udf.register``)."""
    return Column(_native.Expr.function(udfName, _columns(cols)))


class UDFRegistration:
    """``spark.udf``: Python functions registered by name for SQL."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def register(
        self,
        name: str,
        f: Callable[..., Any] | UserDefinedFunction,
        returnType: Any = None,  # noqa: N803 - PySpark's name
    ) -> UserDefinedFunction:
        """Registers ``f`` (a function or a ``udf`` / ``pandas_udf``) as the SQL function
        ``name`` of this session; returns it as a column function."""
        if isinstance(f, UserDefinedFunction):
            if returnType is not None:
                raise AnalysisError(
                    "[CANNOT_SPECIFY_RETURN_TYPE_FOR_UDF] Cannot specify return type for the UDF "
                    f"{name!r}: it has its own"
                )
            if f.evalType not in (
                SQL_BATCHED_UDF,
                SQL_ARROW_BATCHED_UDF,
                SQL_SCALAR_PANDAS_UDF,
                SQL_SCALAR_PANDAS_ITER_UDF,
                SQL_GROUPED_AGG_PANDAS_UDF,
            ):
                raise AnalysisError(
                    "[INVALID_UDF_EVAL_TYPE] only row, scalar pandas and grouped-aggregate pandas UDFs "
                    "can be registered for SQL"
                )
            return f._register(self._session._native_catalog, name)
        fn = UserDefinedFunction(f, returnType if returnType is not None else "string", name)
        return fn._register(self._session._native_catalog, name)

    def registerJavaFunction(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802 - PySpark's name
        """Java functions need a JVM: not available in ferrospark."""
        raise UnsupportedError(
            "registerJavaFunction needs a JVM; register a Python function with spark.udf.register"
        )

    def registerJavaUDAF(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802 - PySpark's name
        """Java aggregate functions need a JVM: not available in ferrospark."""
        raise UnsupportedError("registerJavaUDAF needs a JVM; use a grouped-aggregate pandas_udf instead")


__all__ = [
    "PandasUDFType",
    "call_udf",
    "UDFRegistration",
    "UserDefinedFunction",
    "pandas_udf",
    "udf",
]
