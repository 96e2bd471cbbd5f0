"""Spark's names for Arrow types (``bigint``, ``decimal(15,2)``, ``timestamp``)."""

from __future__ import annotations

import pyarrow as pa


def spark_type_name(t: pa.DataType | pa.Field) -> str:
    """The Spark SQL type name of an Arrow type or field, as ``DataFrame.dtypes`` shows it.

    A field's ``ferrospark:spark_type`` metadata names the Spark type where Arrow's cannot (a
    year-month interval travels as a ``month_day_nano_interval``)."""
    if isinstance(t, pa.Field):
        named = (t.metadata or {}).get(b"ferrospark:spark_type")
        if named:
            return named.decode()
        t = t.type
    if pa.types.is_duration(t):
        return "interval day to second"
    if pa.types.is_interval(t):
        return "interval"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t):
        return "tinyint"
    if pa.types.is_int16(t):
        return "smallint"
    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "bigint"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz else "timestamp_ntz"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{spark_type_name(t.value_field)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{spark_type_name(f)}" for f in t) + ">"
    if pa.types.is_map(t):
        return f"map<{spark_type_name(t.key_field)},{spark_type_name(t.item_field)}>"
    if pa.types.is_null(t):
        return "void"
    return str(t)


_SIMPLE = {
    "boolean": pa.bool_(),
    "tinyint": pa.int8(),
    "byte": pa.int8(),
    "smallint": pa.int16(),
    "short": pa.int16(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "long": pa.int64(),
    "float": pa.float32(),
    "real": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}


def arrow_type(name: str) -> pa.DataType:
    """The Arrow type of a Spark SQL type name (``int``, ``decimal(10,2)``,
    ``array<string>``, ``struct<a: int, b: array<double>>``, ``map<string, bigint>``)."""
    n = name.strip().lower()
    if n in _SIMPLE:
        return _SIMPLE[n]
    if n.startswith("decimal"):
        inner = n[len("decimal") :].strip("() ")
        p, _, s = inner.partition(",")
        return pa.decimal128(int(p or 10), int(s or 0))
    raw = name.strip()
    head, _, rest = raw.partition("<")
    if rest.endswith(">"):
        inner, kind = rest[:-1], head.strip().lower()
        if kind == "array":
            return pa.list_(arrow_type(inner))
        if kind == "map":
            key, value = (t for _, t in _split_top(inner, keyed=False))
            return pa.map_(arrow_type(key), arrow_type(value))
        if kind == "struct":
            return pa.struct([pa.field(f, arrow_type(t)) for f, t in _split_top(inner, keyed=True)])
    from .errors import AnalysisError

    raise AnalysisError(f"[UNSUPPORTED_DATATYPE] unsupported data type {name!r} in a schema string")


def _split_top(text: str, keyed: bool) -> list[tuple[str, str]]:
    """Comma-separated items of ``text`` outside brackets; ``name type`` / ``name: type``
    pairs when ``keyed``, else bare types (named by position)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch in "(<"
        depth -= ch in ")>"
        cur += ch
    if cur.strip():
        parts.append(cur)
    if not keyed:
        return [(str(i), p.strip()) for i, p in enumerate(parts)]
    out = []
    for p in parts:
        p = p.strip()
        cut = min((i for i in (p.find(" "), p.find(":")) if i > 0), default=len(p))
        out.append((p[:cut].strip("`"), p[cut:].strip().lstrip(":").strip()))
    return out


def split_ddl(text: str) -> list[tuple[str, str]]:
    """``"a int, b decimal(10,2)"`` as ``[("a", "int"), ("b", "decimal(10,2)")]``."""
    return _split_top(text, keyed=True)


def _seconds_text(micros: int) -> str:
    whole, frac = divmod(micros, 1_000_000)
    return f"{whole:02d}" + (f".{frac:06d}".rstrip("0") if frac else "")


def interval_text(value: object, field: pa.Field) -> str | None:
    """An interval value as Spark prints it (``INTERVAL '1-2' YEAR TO MONTH``,
    ``INTERVAL '3' DAY``, ``INTERVAL '1 02:03:04.5' DAY TO SECOND``, ``1 years 2 months``);
    ``None`` when ``field`` holds no interval."""
    kind = spark_type_name(field)
    if value is None or not kind.startswith("interval"):
        return None
    if kind == "interval year to month":
        months = value.months  # type: ignore[attr-defined]
        sign = "-" if months < 0 else ""
        return f"INTERVAL '{sign}{abs(months) // 12}-{abs(months) % 12}' YEAR TO MONTH"
    if kind == "interval":
        return calendar_text(value.months, value.days, value.nanoseconds // 1000)  # type: ignore[attr-defined]
    td = value  # a datetime.timedelta
    micros = td.days * 86_400_000_000 + td.seconds * 1_000_000 + td.microseconds  # type: ignore[attr-defined]
    if kind == "interval day":
        return f"INTERVAL '{micros // 86_400_000_000}' DAY"
    sign = "-" if micros < 0 else ""
    days, rest = divmod(abs(micros), 86_400_000_000)
    hours, rest = divmod(rest, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    return f"INTERVAL '{sign}{days} {hours:02d}:{minutes:02d}:{_seconds_text(rest)}' DAY TO SECOND"


def calendar_text(months: int, days: int, micros: int) -> str:
    """Spark's ``CalendarInterval.toString``."""
    if months == 0 and days == 0 and micros == 0:
        return "0 seconds"
    parts: list[str] = []

    def unit(v: int, name: str) -> None:
        if v:
            parts.append(f"{v} {name}")

    def tdiv(a: int, b: int) -> int:
        return -(-a // b) if a < 0 else a // b

    if months:
        unit(tdiv(months, 12), "years")
        unit(months - 12 * tdiv(months, 12), "months")
    unit(days, "days")
    if micros:
        hours = tdiv(micros, 3_600_000_000)
        unit(hours, "hours")
        rest = micros - hours * 3_600_000_000
        minutes = tdiv(rest, 60_000_000)
        unit(minutes, "minutes")
        rest -= minutes * 60_000_000
        if rest:
            sign = "-" if rest < 0 else ""
            whole, frac = divmod(abs(rest), 1_000_000)
            text = f"{whole}" + (f".{frac:06d}".rstrip("0") if frac else "")
            parts.append(f"{sign}{text} seconds")
    return " ".join(parts)
