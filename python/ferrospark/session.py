"""Sessions: a configuration under Spark's key names, and every operator as a method."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from . import _native
from .aggregate import AggColumn, ColumnOrName, aggregate
from .column import Column
from .parquet import ParquetScan, Paths, read_parquet, scan_parquet


class Session:
    """Holds configuration (``spark.sql.*`` keys and ``ferrospark.*`` keys).

    With ``spark=`` a PySpark ``SparkSession``, queries are planned by ferrospark and run on
    Spark: each stage a Spark ``mapInArrow`` running its part of the plan natively, Spark's
    shuffle between stages (see :mod:`ferrospark.spark_stages`).

    ``catalog`` is where databases and tables live: ``"memory"`` (the default, gone with the
    session) or ``"sqlite:///path/metastore.db"`` (a metastore laid out as Hive's that
    sessions in several processes share). Tables' files go under ``spark.sql.warehouse.dir``
    (``spark-warehouse`` in the current directory by default).

    >>> s = Session(conf={"ferrospark.batch.size": "4096"})
    >>> s.conf["ferrospark.batch.size"]
    '4096'
    """

    def __init__(
        self,
        conf: Mapping[str, object] | None = None,
        spark: Any = None,
        catalog: str = "memory",
        _native_catalog: Any = None,
    ) -> None:
        self._conf: dict[str, str] = {}
        self._engine: _native.QueryEngine | None = None
        self._spark = spark
        # PySpark DataFrames given to createDataFrame, by the name of their plan leaf.
        self._spark_inputs: dict[str, Any] = {}
        for k, v in (conf or {}).items():
            self.set(k, v)
        self._catalog_url = catalog
        self._native_catalog = _native_catalog or _native.Catalog(self._conf, catalog)

    def set(self, key: str, value: object) -> None:
        """Sets one key, validating it (bad values raise ``ConfigError``)."""
        text = str(value).lower() if isinstance(value, bool) else str(value)
        _native.validate_conf({key: text})
        self._conf[key] = text
        if self._engine is not None:
            # The engine plans under a fixed configuration: make a new one, views kept.
            self._engine = None

    # -- queries ------------------------------------------------------------------------
    @property
    def _query_engine(self) -> _native.QueryEngine:
        if self._engine is None:
            # Views and tables live in the catalog, which outlives the engine.
            self._engine = _native.QueryEngine(self._conf, self._native_catalog)
        return self._engine

    @property
    def catalog(self) -> Any:
        """The catalog as ``spark.catalog``: databases, tables, columns, functions."""
        from .catalog import Catalog

        return Catalog(self)

    def newSession(self) -> Session:
        """A session sharing this one's databases, tables and global temp views, with its
        own configuration, current database, temp views and temp functions."""
        return Session(
            conf=self._conf,
            spark=self._spark,
            catalog=self._catalog_url,
            _native_catalog=self._native_catalog.new_session(),
        )

    def sql(self, sqlQuery: str) -> Any:
        """Runs Spark SQL: a lazy :class:`~ferrospark.dataframe.DataFrame` for a query; for
        ``EXPLAIN ...`` a one-row DataFrame with the plan text in column ``plan``. Commands
        (``CREATE TABLE``, ``INSERT``, ``SHOW TABLES``, ``DESCRIBE``...) run now, as Spark
        runs them, and return their output rows."""
        from .dataframe import DataFrame

        command = _set_command(sqlQuery)
        if command is not None:
            return self._run_set_command(*command)
        plan, explain = self._query_engine.sql(sqlQuery)
        if explain is not None:
            text = plan.explain(explain)
            return self.createDataFrame(pa.table({"plan": [text]}))
        return DataFrame(plan, self)

    def _run_set_command(self, verb: str, key: str | None, value: str | None) -> Any:
        """``SET``, ``SET k``, ``SET k=v``, ``RESET``, ``RESET k``: Spark's rows (key, value)."""
        if verb == "RESET":
            if key is None:
                self._conf.clear()
                self._engine = None
            else:
                self.unset(key)
            return self.createDataFrame(pa.table({}))
        if key is None:
            items = sorted(self._conf.items())
        elif value is None:
            items = [(key, self._conf.get(key, "<undefined>"))]
        else:
            self.set(key, value)
            items = [(key, self._conf[key])]
        return self.createDataFrame(
            pa.table({"key": [k for k, _ in items], "value": [v for _, v in items]}, schema=_KEY_VALUE)
        )

    @property
    def read(self) -> DataFrameReader:
        """``session.read.parquet(path)``: lazy DataFrames over files."""
        return DataFrameReader(self)

    def table(self, tableName: str) -> Any:
        """The DataFrame of a table or view (``t``, ``db.t``, ``global_temp.v``)."""
        from .dataframe import DataFrame

        return DataFrame(self._query_engine.table(tableName), self)

    def createDataFrame(self, data: Any, schema: Any = None) -> Any:
        """A DataFrame from Arrow data (anything with ``__arrow_c_stream__``), a pandas
        DataFrame, or a list of rows (tuples, dicts or Rows) with ``schema`` as a list of names,
        a ``pyarrow.Schema`` or a DDL string (``"a int, b string"``)."""
        from .dataframe import DataFrame

        if _is_pyspark_frame(data):
            if self._spark is None:
                raise ValueError(
                    "a PySpark DataFrame can be read only by a session on Spark: use fs.Session(spark=spark)"
                )
            from .spark_stages import spark_input

            return DataFrame(spark_input(self, data), self)
        table = _to_arrow(data, schema)
        return DataFrame(self._query_engine.from_arrow(table), self)

    def _adopt(self, frame: Any) -> Any:
        """A DataFrame of another session as one of this session's (its attributes given
        this session's ids; the PySpark DataFrames it reads come along)."""
        from .dataframe import DataFrame

        self._spark_inputs.update(frame._session._spark_inputs)
        return DataFrame(self._query_engine.adopt(frame._plan), self)

    def _register_view(self, name: str, df: Any, replace: bool) -> None:
        self._query_engine.register_view(name, df._plan, replace)

    def dropTempView(self, viewName: str) -> bool:
        """Drops a temp view; whether it existed."""
        return self._query_engine.drop_view(viewName)

    @property
    def udf(self) -> Any:
        """``spark.udf``: ``register(name, f, returnType)`` makes a Python function callable
        from this session's SQL."""
        from .udf import UDFRegistration

        return UDFRegistration(self)

    @property
    def conf(self) -> RuntimeConfig:
        """PySpark's ``RuntimeConfig``: ``conf.set(k, v)``, ``conf.get(k[, default])``,
        ``conf.unset(k)``, ``conf.isModifiable(k)``, ``conf.getAll``; also a dict of the
        settings as they are now (``s.conf["spark.sql.ansi.enabled"]``)."""
        return RuntimeConfig(self)

    def unset(self, key: str) -> None:
        """Removes one key: its default applies again."""
        if self._conf.pop(key, None) is not None:
            self._engine = None

    def read_parquet(
        self,
        path_or_paths: Paths,
        columns: Sequence[str] | None = None,
        filter: Column | str | None = None,
        batch_size: int | None = None,
    ) -> pa.RecordBatchReader:
        """:func:`ferrospark.read_parquet` with this session's configuration."""
        return read_parquet(path_or_paths, columns, filter, batch_size, session=self)

    def scan_parquet(
        self,
        path_or_paths: Paths,
        columns: Sequence[str] | None = None,
        filter: Column | str | None = None,
        batch_size: int | None = None,
    ) -> ParquetScan:
        """:func:`ferrospark.scan_parquet` with this session's configuration."""
        return scan_parquet(path_or_paths, columns, filter, batch_size, session=self)

    def aggregate(
        self,
        data: Any,
        by: ColumnOrName | Sequence[ColumnOrName] | None = None,
        aggs: AggColumn | Sequence[AggColumn] = (),
    ) -> pa.Table:
        """:func:`ferrospark.aggregate` with this session's configuration."""
        return aggregate(data, by, aggs, session=self)

    def window(self, data: Any, exprs: Any) -> pa.Table:
        """:func:`ferrospark.window` with this session's configuration."""
        from .window import window

        return window(data, exprs, session=self)

    def session_window(
        self, data: Any, time: Any, gap: str | Column, by: Any = (), aggs: Any = ()
    ) -> pa.Table:
        """:func:`ferrospark.session_window` with this session's configuration."""
        from .session_windows import session_window

        return session_window(data, time, gap, by, aggs, session=self)

    def join(
        self,
        left: Any,
        right: Any,
        on: Any = None,
        how: str = "inner",
        condition: Any = None,
        strategy: str = "auto",
    ) -> pa.Table:
        """:func:`ferrospark.join` with this session's configuration."""
        from .join import join

        return join(left, right, on, how, condition, strategy, session=self)

    @property
    def spark(self) -> Any:
        """The SparkSession queries run on, or ``None`` in process."""
        return self._spark

    def __repr__(self) -> str:
        on = ", spark=..." if self._spark is not None else ""
        return f"Session(conf={self._conf!r}{on})"


class RuntimeConfig(dict):
    """A session's settings (a dict of them as they were read) whose ``set`` / ``unset``
    change the session, as PySpark's ``spark.conf``."""

    def __init__(self, session: Session) -> None:
        super().__init__(session._conf)
        self._session = session

    def set(self, key: str, value: object) -> None:
        """Sets ``key`` for the session's next queries (bad values raise ``ConfigError``)."""
        self._session.set(key, value)
        self[key] = self._session._conf[key]

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        """The value of ``key``, else ``default``."""
        return self._session._conf.get(key, default)

    def unset(self, key: str) -> None:
        """Removes ``key``: its default applies again."""
        self._session.unset(key)
        self.pop(key, None)

    def isModifiable(self, key: str) -> bool:  # noqa: N802 - PySpark's name
        """True: every setting of a ferrospark session applies to its next query."""
        return True

    @property
    def getAll(self) -> dict[str, str]:  # noqa: N802 - PySpark's name
        """Every setting made."""
        return dict(self._session._conf)


class DataFrameReader:
    """``session.read``: file sources as lazy DataFrames."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._options: dict[str, str] = {}
        self._schema: Any = None
        self._format = "parquet"

    def option(self, key: str, value: Any) -> DataFrameReader:
        """One read option by Spark's name (``header``, ``sep``, ``inferSchema``...)."""
        self._options[key] = str(value).lower() if isinstance(value, bool) else str(value)
        return self

    def options(self, **options: Any) -> DataFrameReader:
        """Several read options."""
        for k, v in options.items():
            self.option(k, v)
        return self

    def schema(self, schema: Any) -> DataFrameReader:
        """The schema to read with: a ``pyarrow.Schema`` or DDL text."""
        self._schema = schema
        return self

    def csv(self, path: Any, schema: Any = None, **options: Any) -> Any:
        """CSV files as a lazy DataFrame, read as ``spark.read.csv`` reads them (see
        :func:`ferrospark.read_csv` for the options); the optimizer pushes the query's filters
        into the parsing and reads only the columns it uses."""
        return self._text("csv", path, schema, options)

    def json(self, path: Any, schema: Any = None, **options: Any) -> Any:
        """JSON files as a lazy DataFrame, read as ``spark.read.json`` reads them (see
        :func:`ferrospark.read_json` for the options); the optimizer pushes the query's filters
        into the parsing and reads only the columns it uses."""
        return self._text("json", path, schema, options)

    def avro(self, path: Any, **options: Any) -> Any:
        """Avro files as a lazy DataFrame, read as ``spark.read.format("avro")`` reads them
        (see :func:`ferrospark.read_avro` for the options); only the columns the query uses
        are decoded."""
        return self._text("avro", path, self._schema, options)

    def format(self, source: str) -> DataFrameReader:
        """The source ``load`` reads: ``csv``, ``json``, ``avro`` or ``parquet``
        (``s.read.format("avro").option(...).load(path)``)."""
        self._format = source.lower()
        return self

    def load(self, path: Any) -> Any:
        """The files at ``path`` in the source ``format`` named, as a lazy DataFrame."""
        if self._format == "parquet":
            return self.parquet(path)
        if self._format in ("csv", "json", "avro"):
            return self._text(self._format, path, self._schema, {})
        from .errors import ConfigError

        raise ConfigError(f"unknown data source {self._format!r}: expected csv, json, avro or parquet")

    def _text(self, format: str, path: Any, schema: Any, options: dict[str, Any]) -> Any:
        from .dataframe import DataFrame

        self.options(**options)
        schema = schema if schema is not None else self._schema
        if isinstance(schema, str):
            schema = _ddl_schema(schema)
        plan = self._session._query_engine.read_format(
            format, self._flat([path]), schema, dict(self._options)
        )
        return DataFrame(plan, self._session)

    def _flat(self, paths: Any) -> list[str]:
        flat: list[str] = []
        for p in paths:
            flat.extend([str(x) for x in p] if isinstance(p, (list, tuple)) else [str(p)])
        if self._session._spark is not None:
            # Spark's executors run elsewhere (another working directory, another machine
            # sharing the files): they get absolute paths.
            import os

            flat = [p if "://" in p else os.path.abspath(p) for p in flat]
        return flat

    def parquet(self, *paths: str) -> Any:
        """Parquet files: a file, several, or directories (hive partitions become columns)."""
        from .dataframe import DataFrame

        return DataFrame(self._session._query_engine.read_parquet(self._flat(paths)), self._session)


_KEY_VALUE = pa.schema([pa.field("key", pa.string(), False), pa.field("value", pa.string())])
_SET = re.compile(r"^\s*(SET|RESET)\b(.*?)[\s;]*$", re.IGNORECASE | re.DOTALL)
_TIME_ZONE = re.compile(r"^TIME\s+ZONE\s+(.+)$", re.IGNORECASE | re.DOTALL)


def _set_command(text: str) -> tuple[str, str | None, str | None] | None:
    """``(verb, key, value)`` of a ``SET`` / ``RESET`` statement; ``None`` for anything else."""
    m = _SET.match(text)
    if m is None:
        return None
    verb, rest = m.group(1).upper(), m.group(2).strip()
    if not rest:
        return verb, None, None
    tz = _TIME_ZONE.match(rest)
    if verb == "SET" and tz is not None:
        zone = tz.group(1).strip()
        if zone.upper() == "LOCAL":  # the session's default zone again
            return "RESET", "spark.sql.session.timeZone", None
        return verb, "spark.sql.session.timeZone", zone.strip("'\"")
    key, eq, value = rest.partition("=")
    key = key.strip().strip("`")
    return verb, key, (value.strip() if eq else None)


def _is_pyspark_frame(data: Any) -> bool:
    return type(data).__module__.startswith("pyspark.") and hasattr(data, "sparkSession")


def _ddl_schema(text: str) -> pa.Schema:
    from ._types import arrow_type, split_ddl

    return pa.schema([pa.field(n, arrow_type(t)) for n, t in split_ddl(text)])


def _to_arrow(data: Any, schema: Any) -> Any:
    if isinstance(schema, str):
        schema = _ddl_schema(schema)
    if hasattr(data, "__arrow_c_stream__") or isinstance(data, (pa.Table, pa.RecordBatch)):
        t = pa.table(data) if not isinstance(data, pa.Table) else data
        return t.cast(schema) if isinstance(schema, pa.Schema) else t
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_dict"):  # pandas
        return pa.Table.from_pandas(data, preserve_index=False)
    rows = list(data)
    if isinstance(schema, pa.Schema):
        names = schema.names
    elif schema is not None:
        names = list(schema)
    elif rows and isinstance(rows[0], dict):
        names = list(rows[0])
    elif rows and hasattr(rows[0], "__fields__"):
        names = list(rows[0].__fields__)
    else:
        width = len(rows[0]) if rows else 0
        names = [f"_{i + 1}" for i in range(width)]
    cols = list(zip(*[[r[n] for n in names] if isinstance(r, dict) else list(r) for r in rows])) or [
        [] for _ in names
    ]
    if isinstance(schema, pa.Schema):
        return pa.table([pa.array(list(c), type=f.type) for c, f in zip(cols, schema)], schema=schema)
    return pa.table({n: pa.array(list(c)) for n, c in zip(names, cols)})


_DEFAULT: Session | None = None


def default_session() -> Session:
    """The session module-level functions use."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Session()
    return _DEFAULT
