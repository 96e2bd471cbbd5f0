"""ferrospark on Spark one operator at a time (``fss``): each function a thin layer over whole
queries on Spark (:mod:`ferrospark.spark_stages`).

Each function returns an ordinary PySpark DataFrame whose rows come from ferrospark's plan,
cut into Spark stages where Spark's own plan puts an exchange and run natively inside Spark
tasks. A function given a DataFrame that another fss function returned continues that plan
(the files are read by the tasks themselves, and nothing but what Spark must shuffle crosses
into the JVM); any other PySpark DataFrame becomes a plan leaf whose rows ``mapInArrow``
hands to the tasks.

>>> from ferrospark import spark as fss                                   # doctest: +SKIP
>>> items = fss.read_parquet(spark, "lineitem/", columns=["l_orderkey", "l_quantity"])
>>> fss.aggregate(items, "l_orderkey", [fs.sum("l_quantity")]).show()     # doctest: +SKIP
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .column import Column
from .parquet import Paths, _paths
from .spark_stages import SparkRun, _spark_settings, arrow_schema, spark_schema
from .spark_streaming import session_window_stream, stream_join

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .dataframe import DataFrame as FerroFrame
    from .session import Session

#: The ferrospark DataFrame behind each PySpark DataFrame an fss function returned: the next
#: fss call continues that plan (its scan read by the tasks themselves) rather than reading
#: its rows back from the JVM.
_PLANS: dict[int, tuple[weakref.ref[DataFrame], Any]] = {}


def _remembered(registry: dict[int, tuple[weakref.ref[DataFrame], Any]], df: DataFrame) -> Any:
    """What `registry` remembers of this very DataFrame (not of another that reused its id)."""
    entry = registry.get(id(df))
    if entry is None:
        return None
    ref, value = entry
    if ref() is not df:
        del registry[id(df)]
        return None
    return value


def _session_for(spark: SparkSession) -> Session:
    """A ferrospark session on ``spark``, under the settings of Spark's it honours."""
    from .session import Session

    return Session(conf=_spark_settings(spark), spark=spark)


def _plan_of(df: DataFrame, session: Session | None = None) -> FerroFrame:
    """``df`` as a ferrospark DataFrame of a session on Spark (``session`` when given): the
    plan an fss function returned it from, else a plan leaf over its rows."""
    frame = _remembered(_PLANS, df)
    if frame is None:
        return (session or _session_for(df.sparkSession)).createDataFrame(df)
    if session is None or frame._session is session:
        return frame
    return session._adopt(frame)


def _published(frame: FerroFrame) -> DataFrame:
    """The PySpark DataFrame of a ferrospark plan on Spark, remembered for the next fss call."""
    out = frame.to_spark()
    _PLANS[id(out)] = (weakref.ref(out), frame)
    return out


def read_parquet(
    spark: SparkSession,
    path_or_paths: Paths,
    columns: Sequence[str] | None = None,
    filter: Column | str | None = None,
) -> DataFrame:
    """Reads Parquet into a PySpark DataFrame, natively inside Spark tasks.

    The result equals ``spark.read.parquet(path).filter(filter).select(columns)``. Its tasks
    read file splits packed as Spark packs them (``spark.sql.files.maxPartitionBytes``), the
    filter pruning row groups and pages and dropping rows inside the scan; handed to another
    fss function, the scan becomes the first step of that function's plan.
    """
    frame = _session_for(spark).read.parquet(*[str(p) for p in _paths(path_or_paths)])
    if filter is not None:
        frame = frame.filter(filter)
    if columns is not None:
        frame = frame.select(*columns)
    return _published(frame)


def read_csv(
    spark: SparkSession,
    path: Paths,
    schema: Any = None,
    filter: Column | str | None = None,
    header: bool = True,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> DataFrame:
    """Reads CSV into a PySpark DataFrame, natively inside a Spark task, as
    ``spark.read.csv(path, schema, header=header, **options).filter(filter).select(columns)``
    reads it (see :func:`ferrospark.read_csv` for the options). The filter is checked while
    records convert; handed to another fss function, the scan is the first step of its plan.
    A CSV scan runs in one task for now (not yet split across tasks by file ranges).
    """
    return _read_format(spark, "csv", path, schema, filter, columns, {**options, "header": header})


def read_json(
    spark: SparkSession,
    path: Paths,
    schema: Any = None,
    filter: Column | str | None = None,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> DataFrame:
    """Reads JSON into a PySpark DataFrame, natively inside a Spark task, as
    ``spark.read.json(path, schema, **options).filter(filter).select(columns)`` reads it (see
    :func:`ferrospark.read_json` for the options). The filter is checked while records
    convert; handed to another fss function, the scan is the first step of its plan.
    """
    return _read_format(spark, "json", path, schema, filter, columns, options)


def read_avro(
    spark: SparkSession,
    path: Paths,
    columns: Sequence[str] | None = None,
    filter: Column | str | None = None,
    **options: Any,
) -> DataFrame:
    """Reads Avro into a PySpark DataFrame, natively inside a Spark task, as
    ``spark.read.format("avro").options(**options).load(path).filter(filter).select(columns)``
    reads it (see :func:`ferrospark.read_avro` for the options); handed to another fss
    function, the scan is the first step of its plan. Spark itself needs the separate
    ``spark-avro`` package for this.
    """
    return _read_format(spark, "avro", path, None, filter, columns, options)


def _read_format(
    spark: SparkSession,
    format: str,
    path: Paths,
    schema: Any,
    filter: Column | str | None,
    columns: Sequence[str] | None,
    options: dict[str, Any],
) -> DataFrame:
    reader = _session_for(spark).read
    frame = reader._text(format, [str(p) for p in _paths(path)], schema, options)
    if filter is not None:
        frame = frame.filter(filter)
    if columns is not None:
        frame = frame.select(*columns)
    return _published(frame)


def aggregate(df: DataFrame, by: Any = None, aggs: Any = ()) -> DataFrame:
    """``df.groupBy(by).agg(aggs)`` planned by ferrospark and run as Spark stages.

    The aggregation's partial steps run in the tasks of its input's stage, Spark's shuffle
    moves their states as Arrow IPC blocks, the final steps run in the next stage (Spark's
    four steps and two shuffles with DISTINCT aggregates).
    """
    from .aggregate import _aggs, _key_list

    frame = _plan_of(df).groupBy(*_key_list(by)).agg(*_aggs(aggs))
    return _published(frame)


def join(
    left: DataFrame,
    right: DataFrame,
    on: Any = None,
    how: str = "inner",
    strategy: str = "auto",
    condition: Any = None,
) -> DataFrame:
    """``left.join(right, on, how)`` planned by ferrospark and run as Spark stages.

    The strategy is Spark's ``JoinSelection`` on Spark's size estimates (``strategy`` names
    one instead, as a join hint does): a broadcast join's build side is its own stage, its
    rows a Spark broadcast variable, its hash table built once per Python worker and probed
    by every task of the probe side's stage (inside the scan tasks when that side is a
    :func:`read_parquet` scan); a shuffled join has both sides' rows hash-partitioned on the
    join keys in their own tasks and joined per partition after Spark's shuffle.
    :func:`last_spark_join_plan` says what ran.
    """
    from .join import _request

    kind, using, cond = _request(on, how, condition, strategy)
    lf = _plan_of(left)
    rf = _plan_of(right, lf._session)
    plan = lf._plan.join(
        rf._plan,
        kind,
        on=using,
        condition=cond._expr if cond is not None else None,
        hint=None if strategy == "auto" else strategy,
    )
    frame = lf._new(plan)
    out = _published(frame)
    _LAST_JOIN[0] = frame._last_spark_run
    return out


#: The run of the last :func:`join` (on this driver).
_LAST_JOIN: list[SparkRun | None] = [None]


def _last_join_run() -> tuple[SparkRun, str] | None:
    run = _LAST_JOIN[0]
    if run is None:
        return None
    joins = run.joins()
    return (run, joins[-1][0]) if joins else None


def last_spark_join_plan() -> str:
    """The strategy, operator, keys, type and build side of the last :func:`join`."""
    run = _LAST_JOIN[0]
    joins = run.joins() if run is not None else []
    return f"{joins[-1][0]}: {joins[-1][1]}" if joins else ""


def _broadcast_counts() -> tuple[int, int, int] | None:
    last = _last_join_run()
    if last is None or last[1] != "broadcast_hash":
        return None
    return last[0].broadcast_builds()


def last_spark_join_builds() -> int | None:
    """How many times the last broadcast :func:`join`'s tasks built its broadcast side (once
    per Python worker that ran them), over the jobs run so far; ``None`` after a shuffled
    one."""
    counts = _broadcast_counts()
    return None if counts is None else counts[0]


def last_spark_join_probes() -> int | None:
    """How many probe tasks the last broadcast :func:`join` ran (over every job that used its
    result); ``None`` after a shuffled one."""
    counts = _broadcast_counts()
    return None if counts is None else counts[1]


def last_spark_join_workers() -> int | None:
    """How many distinct Python workers ran probe tasks of the last broadcast :func:`join`:
    each builds the broadcast side once, so this equals :func:`last_spark_join_builds`;
    ``None`` after a shuffled one."""
    counts = _broadcast_counts()
    return None if counts is None else counts[2]


def window(df: DataFrame, exprs: Any) -> DataFrame:
    """``df.select("*", *exprs)`` for window expressions (``fs.row_number().over(w)``, ...),
    planned by ferrospark and run as Spark stages: an exchange on each specification's
    partition keys (one partition without keys), then the window operator per partition in
    the next stage. Input columns, then the window columns in the order they were asked for,
    named as Spark names them.
    """
    from .window import WindowColumn, WindowFunction

    items = [exprs] if isinstance(exprs, WindowColumn) else list(exprs)
    for item in items:
        if isinstance(item, WindowFunction) or not isinstance(item, WindowColumn):
            from .errors import AnalysisError

            raise AnalysisError(f"{item!r} is not a window expression: call .over(window_spec) on it")
        item._check()
    return _published(_plan_of(df).select("*", *items))


def session_window(df: DataFrame, time: Any, gap: Any, by: Any = (), aggs: Any = ()) -> DataFrame:
    """``df.groupBy(session_window(time, gap), *by).agg(*aggs)`` planned by ferrospark and
    run as Spark stages: rows exchanged on the keys, each key's spans merged into sessions,
    then aggregated per session. ``time`` is a column name, an ``fs`` expression or a PySpark
    ``Column``; ``gap`` an interval literal (``"10 minutes"``) or a column of intervals (an
    ``fs`` expression, or a PySpark ``Column``, whose span end Spark computes itself).

    Output columns as Spark's: ``session_window`` (``struct<start, end>``), the keys, the
    aggregates.
    """
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType

    from . import functions as fsf
    from .aggregate import _aggs, _key_list

    if isinstance(time, SparkColumn):
        # Spark's own expression, evaluated into a column the plan reads.
        name = f"__session_time_{uuid.uuid4().hex[:8]}"
        df = df.withColumn(name, time)
        time = name
    if isinstance(gap, SparkColumn):
        # Spark's own span end per row (its interval casts and calendar arithmetic), as a gap
        # from the row's time.
        t = F.col(time) if isinstance(time, str) else F.expr(str(time._expr))
        kind = df.select(t).schema.fields[0].dataType
        start = t.cast("timestamp") if isinstance(kind, DateType) else t
        name = f"__session_gap_{uuid.uuid4().hex[:8]}"
        df = df.withColumn(name, F.session_window(t, gap)["end"] - start)
        gap = fsf.col(name)
    elif not isinstance(gap, (str, Column)):
        raise TypeError(f"a session window's gap must be a string or a column, got {gap!r}")
    keys = _key_list(by)
    frame = _plan_of(df).groupBy(fsf.session_window(time, gap), *keys).agg(*_aggs(aggs))
    return _published(frame)


__all__ = [
    "aggregate",
    "arrow_schema",
    "join",
    "last_spark_join_builds",
    "last_spark_join_plan",
    "last_spark_join_probes",
    "last_spark_join_workers",
    "read_avro",
    "session_window_stream",
    "stream_join",
    "read_csv",
    "read_json",
    "read_parquet",
    "session_window",
    "spark_schema",
    "window",
]
