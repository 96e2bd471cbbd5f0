"""Date and time functions of ``pyspark.sql.functions`` (epoch conversions, ``date_part``,
``timestamp_add`` / ``timestamp_diff``, ``to_char``, the clock), re-exported by
:mod:`ferrospark.functions`."""

from __future__ import annotations

from . import _native
from ._function_args import ColumnOrName, _c, _call, _call_mixed
from .column import Column, lit
from .errors import AnalysisError


def curdate() -> Column:
    """Today in the session time zone (``current_date()``)."""
    return _call_mixed("current_date")


def now() -> Column:
    """The timestamp at the start of the query; every call in one query sees the same."""
    return _call_mixed("now")


def localtimestamp() -> Column:
    """The wall-clock time at the start of the query in the session time zone."""
    return _call_mixed("localtimestamp")


def date_from_unix_date(days: ColumnOrName) -> Column:
    """The date ``days`` days after 1970-01-01."""
    return _call("date_from_unix_date", days)


def date_part(field: Column, source: ColumnOrName) -> Column:
    """Part ``field`` (``lit('YEAR')``, ``'MONTH'``, ``'DOW'``, ``'SECOND'`` ...) of a date,
    timestamp or interval, as ``extract``."""
    return _call("date_part", field, source)


def datepart(field: Column, source: ColumnOrName) -> Column:
    """:func:`date_part`."""
    return _call("datepart", field, source)


def date_diff(end: ColumnOrName, start: ColumnOrName) -> Column:
    """Days from ``start`` to ``end`` (``datediff``)."""
    return _call("datediff", end, start)


def timestamp_seconds(col: ColumnOrName) -> Column:
    """Seconds since 1970-01-01 00:00:00 UTC (integer or fractional) as a timestamp."""
    return _call("timestamp_seconds", col)


def timestamp_millis(col: ColumnOrName) -> Column:
    """Milliseconds since 1970-01-01 00:00:00 UTC (an integer) as a timestamp."""
    return _call("timestamp_millis", col)


def timestamp_micros(col: ColumnOrName) -> Column:
    """Microseconds since 1970-01-01 00:00:00 UTC (an integer) as a timestamp."""
    return _call("timestamp_micros", col)


def unix_seconds(col: ColumnOrName) -> Column:
    """Whole seconds since 1970-01-01 00:00:00 UTC (rounded down), a BIGINT."""
    return _call("unix_seconds", col)


def unix_millis(col: ColumnOrName) -> Column:
    """Milliseconds since 1970-01-01 00:00:00 UTC (rounded down), a BIGINT."""
    return _call("unix_millis", col)


def unix_micros(col: ColumnOrName) -> Column:
    """Microseconds since 1970-01-01 00:00:00 UTC, a BIGINT."""
    return _call("unix_micros", col)


def to_unix_timestamp(timestamp: ColumnOrName, format: ColumnOrName | None = None) -> Column:  # noqa: A002
    """Seconds since the epoch of a timestamp, a date, or text in ``format`` (a column, or
    by default ``yyyy-MM-dd HH:mm:ss``)."""
    fmt = lit("yyyy-MM-dd HH:mm:ss") if format is None else _c(format)
    return _call_mixed("to_unix_timestamp", _c(timestamp), fmt)


def to_char(col: ColumnOrName, format: ColumnOrName) -> Column:  # noqa: A002 - PySpark's name
    """A date or timestamp as text in ``format`` (Java's pattern letters, as
    ``date_format``). Number formats (``'999.99'``) are not supported yet."""
    return _call("to_char", col, format)


def to_varchar(col: ColumnOrName, format: ColumnOrName) -> Column:  # noqa: A002 - PySpark's name
    """:func:`to_char`."""
    return _call("to_varchar", col, format)


def _unit(unit: str) -> str:
    if not (isinstance(unit, str) and unit.isascii() and unit.replace("_", "").isalpha()):
        raise AnalysisError(f"[INVALID_PARAMETER_VALUE.DATETIME_UNIT] unit {unit!r} is not a datetime unit")
    return unit


def timestamp_add(unit: str, quantity: ColumnOrName, ts: ColumnOrName) -> Column:
    """``ts`` plus ``quantity`` of ``unit`` (``'YEAR'``, ``'QUARTER'``, ``'MONTH'``,
    ``'WEEK'``, ``'DAY'``, ``'HOUR'``, ``'MINUTE'``, ``'SECOND'``, ``'MILLISECOND'``,
    ``'MICROSECOND'``)."""
    return Column(_native.Expr.parse(f"timestampadd({_unit(unit)}, {_c(quantity)}, {_c(ts)})"))


def timestamp_diff(unit: str, start: ColumnOrName, end: ColumnOrName) -> Column:
    """Whole ``unit``\\ s from ``start`` to ``end`` (units as :func:`timestamp_add`), a BIGINT."""
    return Column(_native.Expr.parse(f"timestampdiff({_unit(unit)}, {_c(start)}, {_c(end)})"))


def make_timestamp_ltz(
    years: ColumnOrName,
    months: ColumnOrName,
    days: ColumnOrName,
    hours: ColumnOrName,
    mins: ColumnOrName,
    secs: ColumnOrName,
    timezone: ColumnOrName | None = None,
) -> Column:
    """A timestamp (with the session's local time zone) from its fields, as ``make_timestamp``."""
    args = [years, months, days, hours, mins, secs] + ([] if timezone is None else [timezone])
    return _call("make_timestamp", *args)


def to_timestamp_ntz(timestamp: ColumnOrName, format: ColumnOrName | None = None) -> Column:  # noqa: A002
    """A TIMESTAMP_NTZ: text parsed (by ``format`` when given), a timestamp's wall clock in
    the session time zone."""
    if format is None:
        return _call("to_timestamp_ntz", timestamp)
    return _call("to_timestamp_ntz", timestamp, format)


def to_timestamp_ltz(timestamp: ColumnOrName, format: ColumnOrName | None = None) -> Column:  # noqa: A002
    """A TIMESTAMP (local time zone): text parsed (by ``format`` when given), a
    TIMESTAMP_NTZ read in the session time zone."""
    if format is None:
        return _call("to_timestamp_ltz", timestamp)
    return _call("to_timestamp_ltz", timestamp, format)


def window(
    timeColumn: ColumnOrName,  # noqa: N803 - PySpark's names
    windowDuration: str,  # noqa: N803
    slideDuration: str | None = None,  # noqa: N803
    startTime: str | None = None,  # noqa: N803
) -> Column:
    """The time windows (``struct<start, end>``) a timestamp falls in, as a grouping key:
    ``windowDuration`` long, one starting every ``slideDuration`` (tumbling by default),
    shifted by ``startTime``; rows without a time are dropped, as Spark drops them."""
    args = [_c(timeColumn), lit(windowDuration)]
    if slideDuration is not None or startTime is not None:
        args.append(lit(slideDuration if slideDuration is not None else windowDuration))
    if startTime is not None:
        args.append(lit(startTime))
    return _call_mixed("window", *args)


def window_time(windowColumn: ColumnOrName) -> Column:  # noqa: N803 - PySpark's name
    """The last microsecond of a time window (its end less one microsecond)."""
    return _call("window_time", windowColumn)
