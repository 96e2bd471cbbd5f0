"""JSON and CSV functions of ``pyspark.sql.functions`` (``from_json``, ``to_json``,
``schema_of_json``, ``get_json_object``, ``json_tuple``, ``from_csv``, ``to_csv``,
``schema_of_csv``), re-exported by :mod:`ferrospark.functions`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ._function_args import ColumnOrName, _c, _call
from ._types import spark_type_name
from .column import Column, lit


def _option_text(v: Any) -> str:
    # PySpark's `to_str`: booleans as Spark spells them, everything else by str().
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _options(options: Mapping[str, Any] | None) -> list[Column]:
    if not options:
        return []
    pairs: list[Any] = []
    for k, v in options.items():
        pairs += [lit(k), lit(_option_text(v))]
    return [_call("map", *pairs)]


def _schema(schema: Any) -> Column:
    """A schema as the text ``from_json`` reads: DDL or a type as given, a PySpark
    ``DataType`` in its JSON form, an Arrow schema or type as DDL."""
    if isinstance(schema, Column):
        return schema
    if isinstance(schema, str):
        return lit(schema)
    if isinstance(schema, pa.Schema):
        return lit(", ".join(f"`{f.name}` {spark_type_name(f)}" for f in schema))
    if isinstance(schema, pa.DataType):
        return lit(spark_type_name(schema))
    as_json = getattr(schema, "json", None)
    if callable(as_json):
        return lit(as_json())
    from .errors import AnalysisError

    raise AnalysisError(
        f"[NOT_A_DATATYPE] schema must be a DDL string, a DataType, an Arrow schema or a Column, got {schema!r}"
    )


def from_json(col: ColumnOrName, schema: Any, options: Mapping[str, Any] | None = None) -> Column:
    """The JSON text of ``col`` read as ``schema`` (a struct, an array or a map) the way the
    JSON reader reads a record: fields that do not convert are NULL (the struct keeps the
    others), text that is not JSON gives a struct of NULLs; ``mode`` ``PERMISSIVE`` or
    ``FAILFAST``, ``columnNameOfCorruptRecord``, ``dateFormat``, ``timestampFormat``, ..."""
    return _call("from_json", _c(col), _schema(schema), *_options(options))


def to_json(col: ColumnOrName, options: Mapping[str, Any] | None = None) -> Column:
    """A struct, array or map as JSON text, as Spark's JSON writer writes it (NULL fields left
    out unless ``ignoreNullFields`` is false; ``dateFormat``, ``timestampFormat``)."""
    return _call("to_json", _c(col), *_options(options))


def schema_of_json(json: ColumnOrName, options: Mapping[str, Any] | None = None) -> Column:
    """The schema Spark infers for one JSON value (a constant), as DDL:
    ``STRUCT<a: BIGINT, b: ARRAY<STRING>>``."""
    text = lit(json) if isinstance(json, str) else _c(json)
    return _call("schema_of_json", text, *_options(options))


def get_json_object(col: ColumnOrName, path: str) -> Column:
    """The part of the JSON text at ``path`` (``$.a.b[0]``, ``$['a']``, ``$.a[*].b``) as text:
    a string without its quotes, other values as compact JSON; NULL when nothing matches or
    the text is not JSON."""
    return _call("get_json_object", _c(col), lit(path))


def json_tuple(col: ColumnOrName, *fields: str) -> Column:
    """A generator: one row per input row with a column per top-level key (``c0``, ``c1``,
    ...), each value as text (a string without quotes, other values as compact JSON); NULLs
    when the text is not a JSON object."""
    if not fields:
        from .errors import AnalysisError

        raise AnalysisError("[CANNOT_BE_EMPTY] At least one field must be specified")
    return _call("json_tuple", _c(col), *[lit(f) for f in fields])


def from_csv(col: ColumnOrName, schema: Any, options: Mapping[str, Any] | None = None) -> Column:
    """The first CSV record of ``col`` read as ``schema`` (a struct of simple types) the way
    the CSV reader reads a line: fields by position, those that do not convert NULL; ``sep``,
    ``quote``, ``nullValue``, ``mode`` (``PERMISSIVE`` / ``FAILFAST``), ``dateFormat``, ..."""
    return _call("from_csv", _c(col), _schema(schema), *_options(options))


def to_csv(col: ColumnOrName, options: Mapping[str, Any] | None = None) -> Column:
    """A struct as one CSV record, as Spark's CSV writer writes it (values trimmed, quoted when
    they hold the separator or a quote; ``sep``, ``nullValue``, ``timestampFormat``, ...)."""
    return _call("to_csv", _c(col), *_options(options))


def schema_of_csv(csv: ColumnOrName, options: Mapping[str, Any] | None = None) -> Column:
    """The schema Spark infers for one CSV record (a constant), as DDL:
    ``STRUCT<_c0: INT, _c1: STRING>``."""
    text = lit(csv) if isinstance(csv, str) else _c(csv)
    return _call("schema_of_csv", text, *_options(options))
