"""``session.catalog``: PySpark's ``Catalog`` API over ferrospark's session catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .session import Session


class Database(NamedTuple):
    """A database, as ``pyspark.sql.catalog.Database``."""

    name: str
    catalog: str | None
    description: str | None
    locationUri: str


class Table(NamedTuple):
    """A table or view, as ``pyspark.sql.catalog.Table``."""

    name: str
    catalog: str | None
    namespace: list[str] | None
    description: str | None
    tableType: str
    isTemporary: bool

    @property
    def database(self) -> str | None:
        """The table's database (``None`` for a temp view)."""
        return self.namespace[0] if self.namespace else None


class Column(NamedTuple):
    """A column, as ``pyspark.sql.catalog.Column``."""

    name: str
    description: str | None
    dataType: str
    nullable: bool
    isPartition: bool
    isBucket: bool
    isCluster: bool


class Function(NamedTuple):
    """A function, as ``pyspark.sql.catalog.Function``."""

    name: str
    catalog: str | None
    namespace: list[str] | None
    description: str | None
    className: str | None
    isTemporary: bool


def _qualified(name: str, dbName: str | None) -> str:
    if dbName is None:
        return name
    return f"`{dbName.replace('`', '``')}`.`{name.replace('`', '``')}`"


def _table(row: tuple[Any, ...]) -> Table:
    name, namespace, description, kind, temporary = row
    return Table(
        name,
        None if temporary and namespace is None else "spark_catalog",
        [namespace] if namespace else [],
        description,
        kind,
        temporary,
    )


class Catalog:
    """Databases, tables, columns and functions of a session (``spark.catalog``)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._native = session._native_catalog

    def currentCatalog(self) -> str:
        """The catalog's name: ``spark_catalog``."""
        return "spark_catalog"

    def currentDatabase(self) -> str:
        """The current database."""
        return str(self._native.current_database())

    def setCurrentDatabase(self, dbName: str) -> None:
        """``USE dbName``."""
        self._native.set_current_database(dbName)

    def listDatabases(self, pattern: str | None = None) -> list[Database]:
        """Every database (matching ``pattern``, Spark's ``*`` and ``|``)."""
        return [Database(n, "spark_catalog", d, loc) for n, d, loc in self._native.list_databases(pattern)]

    def getDatabase(self, dbName: str) -> Database:
        """One database; a missing one raises ``AnalysisError`` [SCHEMA_NOT_FOUND]."""
        n, d, loc = self._native.get_database(dbName)
        return Database(n, "spark_catalog", d, loc)

    def databaseExists(self, dbName: str) -> bool:
        """Whether the database exists."""
        return bool(self._native.database_exists(dbName))

    def listTables(self, dbName: str | None = None, pattern: str | None = None) -> list[Table]:
        """Tables and views of ``dbName`` (the current database by default), then temp views."""
        return [_table(r) for r in self._native.list_tables(dbName, pattern)]

    def getTable(self, tableName: str) -> Table:
        """One table or view; a missing one raises ``AnalysisError`` [TABLE_OR_VIEW_NOT_FOUND]."""
        return _table(self._native.get_table(tableName))

    def tableExists(self, tableName: str, dbName: str | None = None) -> bool:
        """Whether the table or view exists."""
        return bool(self._native.table_exists(_qualified(tableName, dbName)))

    def listColumns(self, tableName: str, dbName: str | None = None) -> list[Column]:
        """The columns of a table or view, partition columns flagged."""
        rows = self._native.list_columns(_qualified(tableName, dbName))
        return [Column(n, d, t, nullable, part, False, False) for n, d, t, nullable, part in rows]

    def listFunctions(self, dbName: str | None = None, pattern: str | None = None) -> list[Function]:
        """Built-in functions (from ``SHOW FUNCTIONS``) and SQL functions users made."""
        from .errors import AnalysisError

        if dbName is not None and not self.databaseExists(dbName):
            raise AnalysisError(f"[SCHEMA_NOT_FOUND] The schema `spark_catalog`.`{dbName}` cannot be found.")
        like = f" LIKE '{pattern}'" if pattern else ""
        names = [r[0] for r in self._session.sql(f"SHOW FUNCTIONS{like}").collect()]
        user = {n: (db, temp) for n, db, temp in self._native.list_user_functions()}
        out = []
        for n in names:
            short = n.rsplit(".", 1)[-1]
            if short in user:
                db, temp = user[short]
                out.append(
                    Function(
                        short, None if temp else "spark_catalog", None if temp else [db], None, None, temp
                    )
                )
            else:
                out.append(Function(n, None, None, None, None, True))
        return out

    def functionExists(self, functionName: str, dbName: str | None = None) -> bool:
        """Whether a built-in or SQL function of that name exists."""
        name = _qualified(functionName, dbName)
        if self._native.function_exists(name):
            return True
        return dbName is None and bool(
            self._session.sql(f"SHOW SYSTEM FUNCTIONS LIKE '{functionName}'").collect()
        )

    def dropTempView(self, viewName: str) -> bool:
        """Drops a temp view; whether it existed."""
        return bool(self._native.drop_temp_view(viewName))

    def dropGlobalTempView(self, viewName: str) -> bool:
        """Drops a global temp view; whether it existed."""
        return bool(self._native.drop_global_temp_view(viewName))

    def refreshTable(self, tableName: str) -> None:
        """Forgets what the session cached of a table: its files are listed again."""
        self._native.refresh_table(tableName)

    def recoverPartitions(self, tableName: str) -> None:
        """``ALTER TABLE t RECOVER PARTITIONS``: partition directories found become partitions."""
        self._session.sql(f"ALTER TABLE {tableName} RECOVER PARTITIONS")

    def createTable(
        self,
        tableName: str,
        path: str | None = None,
        source: str | None = None,
        schema: Any = None,
        description: str | None = None,
        **options: str,
    ) -> Any:
        """``CREATE TABLE`` from arguments: an external table over ``path``, or a managed one
        with ``schema`` (a ``pyarrow.Schema`` or DDL text); the table's DataFrame."""
        from ._types import spark_type_name

        parts = [f"CREATE TABLE {tableName}"]
        if schema is not None:
            if isinstance(schema, str):
                parts.append(f"({schema})")
            else:
                parts.append("(" + ", ".join(f"`{f.name}` {spark_type_name(f)}" for f in schema) + ")")
        parts.append(f"USING {source or 'parquet'}")
        if options:
            opts = ", ".join(f"'{k}' = '{str(v)}'" for k, v in options.items())
            parts.append(f"OPTIONS ({opts})")
        if path is not None:
            parts.append(f"LOCATION '{path}'")
        if description is not None:
            parts.append(f"COMMENT '{description}'")
        self._session.sql(" ".join(parts))
        return self._session.table(tableName)

    createExternalTable = createTable
