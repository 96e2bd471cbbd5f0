"""``ferrospark.functions``: the names of ``pyspark.sql.functions`` over ferrospark's columns.

``from ferrospark import functions as F`` then ``F.col``, ``F.sum``, ``F.when``, ... as in PySpark.
Scalar functions build expressions evaluated natively with Spark's semantics; aggregates and
window functions are those of :mod:`ferrospark.aggregate` and :mod:`ferrospark.window`.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from typing import Any

from . import _native
from . import functions_partitioning as partitioning
from ._function_args import ColumnOrName, _c, _call, _call_mixed, _l
from .aggregate import (
    AggColumn,
    approx_count_distinct,
    avg,
    bool_and,
    bool_or,
    collect_list,
    collect_set,
    corr,
    count,
    count_distinct,
    count_if,
    covar_pop,
    covar_samp,
    first,
    last,
    max,
    max_by,
    mean,
    median,
    min,
    min_by,
    percentile,
    product,
    regr_avgx,
    regr_avgy,
    regr_count,
    regr_intercept,
    regr_r2,
    regr_slope,
    regr_sxx,
    regr_sxy,
    regr_syy,
    stddev,
    stddev_pop,
    stddev_samp,
    sum,
    sum_distinct,
    var_pop,
    var_samp,
    variance,
)
from .column import Column, col, column, expr, lit
from .errors import AnalysisError
from .functions_aggregates import (
    any_value,
    approx_percentile,
    approxCountDistinct,
    array_agg,
    bit_and,
    bit_or,
    bit_xor,
    collect_union,
    every,
    histogram_numeric,
    kurtosis,
    listagg,
    listagg_distinct,
    mode,
    percentile_approx,
    skewness,
    some,
    std,
    string_agg,
    string_agg_distinct,
    try_avg,
    try_sum,
)
from .functions_datetime import (
    curdate,
    date_diff,
    date_from_unix_date,
    date_part,
    datepart,
    localtimestamp,
    make_timestamp_ltz,
    now,
    timestamp_add,
    timestamp_diff,
    timestamp_micros,
    timestamp_millis,
    timestamp_seconds,
    to_char,
    to_timestamp_ltz,
    to_timestamp_ntz,
    to_unix_timestamp,
    to_varchar,
    unix_micros,
    unix_millis,
    unix_seconds,
    window,
    window_time,
)
from .functions_json import (
    from_csv,
    from_json,
    get_json_object,
    json_tuple,
    schema_of_csv,
    schema_of_json,
    to_csv,
    to_json,
)
from .functions_maps import (
    map_concat,
    map_entries,
    map_from_arrays,
    map_from_entries,
    sequence,
    shuffle,
    str_to_map,
)
from .functions_math import (
    bitwiseNOT,
    negate,
    shiftLeft,
    shiftRight,
    shiftRightUnsigned,
    toDegrees,
    toRadians,
)
from .functions_misc import (
    aes_decrypt,
    aes_encrypt,
    bucket,
    call_function,
    current_database,
    current_path,
    current_schema,
    days,
    equal_null,
    hours,
    months,
    randstr,
    try_aes_decrypt,
    uniform,
    version,
    years,
)
from .functions_more import (
    acosh,
    array_distinct,
    array_except,
    array_intersect,
    array_join,
    array_max,
    array_min,
    array_position,
    array_remove,
    array_repeat,
    array_union,
    arrays_overlap,
    asinh,
    atanh,
    char,
    chr,
    convert_timezone,
    cosh,
    crc32,
    current_catalog,
    current_timezone,
    current_user,
    dayname,
    factorial,
    find_in_set,
    flatten,
    from_utc_timestamp,
    hash,
    hypot,
    levenshtein,
    make_timestamp_ntz,
    mask,
    md5,
    monotonically_increasing_id,
    monthname,
    overlay,
    quote,
    rand,
    randn,
    random,
    sentences,
    session_user,
    sha,
    sha1,
    sha2,
    sinh,
    slice,
    soundex,
    spark_partition_id,
    substring_index,
    tanh,
    to_utc_timestamp,
    try_add,
    try_make_interval,
    try_make_timestamp,
    try_make_timestamp_ltz,
    try_make_timestamp_ntz,
    try_mod,
    try_multiply,
    try_subtract,
    try_to_date,
    try_to_timestamp,
    try_url_decode,
    url_decode,
    url_encode,
    user,
    uuid,
    xxhash64,
)
from .functions_text import (
    bit_length,
    contains,
    endswith,
    format_number,
    format_string,
    from_base32,
    hmac,
    ilike,
    jaro_winkler_similarity,
    json_array_length,
    json_object_keys,
    like,
    octet_length,
    parse_url,
    printf,
    startswith,
    to_base32,
    to_number,
    try_parse_url,
    try_to_number,
)
from .udf import PandasUDFType, UserDefinedFunction, call_udf, pandas_udf, udf
from .window import (
    counter_diff,
    cume_dist,
    dense_rank,
    first_value,
    lag,
    last_value,
    lead,
    nth_value,
    ntile,
    percent_rank,
    rank,
    row_number,
)


def grouping(c: ColumnOrName) -> Column:
    """1 where ``c`` is aggregated away in this row's grouping set (ROLLUP, CUBE,
    GROUPING SETS), else 0; a TINYINT."""
    return _call("grouping", c)


def grouping_id(*cols: ColumnOrName) -> Column:
    """The row's grouping set as a BIGINT bitmask over the grouping columns (a set bit: the
    column is aggregated away); ``cols`` empty or exactly the grouping columns."""
    return _call("grouping_id", *cols)


def countDistinct(c: ColumnOrName, *cols: ColumnOrName) -> AggColumn:  # noqa: N802 - PySpark's name
    """``count(DISTINCT c)``."""
    return count_distinct(c, *cols)


def sumDistinct(c: ColumnOrName) -> AggColumn:  # noqa: N802 - PySpark's name
    """``sum(DISTINCT c)``."""
    return sum_distinct(c)


def asc(c: ColumnOrName) -> Column:
    """Ascending sort key (NULLs first)."""
    return _c(c).asc()


def desc(c: ColumnOrName) -> Column:
    """Descending sort key (NULLs last)."""
    return _c(c).desc()


def asc_nulls_first(c: ColumnOrName) -> Column:
    """Ascending, NULLs first."""
    return _c(c).asc_nulls_first()


def asc_nulls_last(c: ColumnOrName) -> Column:
    """Ascending, NULLs last."""
    return _c(c).asc_nulls_last()


def desc_nulls_first(c: ColumnOrName) -> Column:
    """Descending, NULLs first."""
    return _c(c).desc_nulls_first()


def desc_nulls_last(c: ColumnOrName) -> Column:
    """Descending, NULLs last."""
    return _c(c).desc_nulls_last()


class _When(Column):
    """``when(cond, value)[.when(...)][.otherwise(value)]``: CASE WHEN as SQL text."""

    __slots__ = ("_branches", "_else")

    def __init__(self, branches: list[tuple[Column, Column]], otherwise: Column | None) -> None:
        self._branches = branches
        self._else = otherwise
        parts = " ".join(f"WHEN {c} THEN {v}" for c, v in branches)
        tail = f" ELSE {otherwise}" if otherwise is not None else ""
        super().__init__(expr(f"CASE {parts}{tail} END")._expr)

    def when(self, condition: Column, value: Any) -> _When:
        """Another branch."""
        return _When([*self._branches, (condition, _lit_or_col(value))], self._else)

    def otherwise(self, value: Any) -> Column:
        """The value when no branch matches (NULL without it)."""
        return _When(self._branches, _lit_or_col(value))


def _lit_or_col(v: Any) -> Column:
    return v if isinstance(v, Column) else lit(v)


def when(condition: Column, value: Any) -> _When:
    """``CASE WHEN condition THEN value``; chain ``.when`` and ``.otherwise``."""
    return _When([(condition, _lit_or_col(value))], None)


def broadcast(df: Any) -> Any:
    """Marks ``df`` to be the broadcast (built) side of its next join: ``df.hint("broadcast")``."""
    return df.hint("broadcast")


def session_window(timeColumn: ColumnOrName, gapDuration: str | Column) -> Column:  # noqa: N803
    """A session window to group by, as PySpark's: ``df.groupBy(session_window("ts", "10
    minutes"), "user")``. Each row opens ``[time, time + gap)``; rows of one key whose spans
    touch or overlap form one session. ``gapDuration`` is interval text or a per-row column
    (interval text or an interval). The group column is ``session_window``, a struct of
    ``start`` and ``end``."""
    gap = gapDuration if isinstance(gapDuration, Column) else lit(gapDuration)
    return _call("session_window", timeColumn, gap)


def coalesce(*cols: ColumnOrName) -> Column:
    """The first non-NULL argument."""
    return _call("coalesce", *cols)


def isnull(c: ColumnOrName) -> Column:
    """``c IS NULL``."""
    return _c(c).is_null()


def isnan(c: ColumnOrName) -> Column:
    """True for NaN."""
    return _call("isnan", c)


def _scalar(name: str):  # type: ignore[no-untyped-def]
    def f(*args: Any) -> Column:
        return _call(name, *args)

    f.__name__ = name
    f.__doc__ = f"Spark's ``{name}``, evaluated natively."
    return f


abs = _scalar("abs")  # noqa: A001 - Spark's name
upper = _scalar("upper")
lower = _scalar("lower")
length = _scalar("length")
char_length = _scalar("char_length")
concat = _scalar("concat")
initcap = _scalar("initcap")
reverse = _scalar("reverse")
ascii = _scalar("ascii")  # noqa: A001 - Spark's name
year = _scalar("year")
month = _scalar("month")
day = _scalar("day")
dayofmonth = _scalar("dayofmonth")
dayofyear = _scalar("dayofyear")
quarter = _scalar("quarter")
dayofweek = _scalar("dayofweek")
weekday = _scalar("weekday")
weekofyear = _scalar("weekofyear")
hour = _scalar("hour")
minute = _scalar("minute")
second = _scalar("second")
last_day = _scalar("last_day")
unix_date = _scalar("unix_date")
bround = _scalar("bround")
floor = _scalar("floor")
ceil = _scalar("ceil")
ceiling = _scalar("ceiling")
sqrt = _scalar("sqrt")
cbrt = _scalar("cbrt")
exp = _scalar("exp")
expm1 = _scalar("expm1")
ln = _scalar("ln")
log10 = _scalar("log10")
log2 = _scalar("log2")
log1p = _scalar("log1p")
sin = _scalar("sin")
cos = _scalar("cos")
tan = _scalar("tan")
asin = _scalar("asin")
acos = _scalar("acos")
atan = _scalar("atan")
atan2 = _scalar("atan2")
degrees = _scalar("degrees")
radians = _scalar("radians")
rint = _scalar("rint")
signum = _scalar("signum")
sign = _scalar("sign")
negative = _scalar("negative")
positive = _scalar("positive")
pow = _scalar("pow")  # noqa: A001 - Spark's name
power = _scalar("power")
pmod = _scalar("pmod")
greatest = _scalar("greatest")
least = _scalar("least")
nanvl = _scalar("nanvl")
datediff = _scalar("datediff")
date_add = _scalar("date_add")
date_sub = _scalar("date_sub")
dateadd = _scalar("dateadd")
add_months = _scalar("add_months")
make_date = _scalar("make_date")
nvl = _scalar("nvl")
ifnull = _scalar("ifnull")
nullif = _scalar("nullif")
nvl2 = _scalar("nvl2")
left = _scalar("left")
right = _scalar("right")
replace = _scalar("replace")


def round(c: ColumnOrName, scale: int = 0) -> Column:  # noqa: A001 - Spark's name
    """HALF_UP rounding to ``scale`` digits."""
    return _call_mixed("round", _c(c), lit(scale))


def log(arg1: Any, arg2: ColumnOrName | None = None) -> Column:
    """``log(x)`` is the natural logarithm; ``log(base, x)`` the logarithm to ``base``."""
    if arg2 is None:
        return _call("ln", arg1)
    return _call_mixed("log", _l(arg1), _c(arg2))


def substring(s: ColumnOrName, pos: Any, len: Any) -> Column:  # noqa: A002 - Spark's name
    """Characters ``pos`` (from 1; negative from the end) onwards, ``len`` of them."""
    return _call_mixed("substring", _c(s), _l(pos), _l(len))


def substr(s: ColumnOrName, pos: Any, len: Any = None) -> Column:  # noqa: A002
    """``substring``; without ``len`` to the end."""
    args = [_c(s), _c(pos)] + ([] if len is None else [_c(len)])
    return _call_mixed("substring", *args)


def _trim(name: str, c: ColumnOrName, chars: Any) -> Column:
    if chars is None:
        return _call_mixed(name, _c(c))
    # Spark SQL's two-argument trim / ltrim / rtrim name the characters first; btrim does not.
    if name == "btrim":
        return _call_mixed(name, _c(c), _l(chars))
    return _call_mixed(name, _l(chars), _c(c))


def trim(c: ColumnOrName, trim: str | None = None) -> Column:
    """Strips spaces (or the characters of ``trim``) from both ends."""
    return _trim("trim", c, trim)


def ltrim(c: ColumnOrName, trim: str | None = None) -> Column:
    """Strips spaces (or ``trim``'s characters) from the start."""
    return _trim("ltrim", c, trim)


def rtrim(c: ColumnOrName, trim: str | None = None) -> Column:
    """Strips spaces (or ``trim``'s characters) from the end."""
    return _trim("rtrim", c, trim)


def btrim(c: ColumnOrName, trim: ColumnOrName | None = None) -> Column:
    """``trim`` with the characters as a column or literal."""
    return _trim("btrim", c, trim)


def lpad(c: ColumnOrName, len: int, pad: str) -> Column:  # noqa: A002 - Spark's name
    """Left-padded (or cut) to ``len`` characters."""
    return _call_mixed("lpad", _c(c), _l(len), _l(pad))


def rpad(c: ColumnOrName, len: int, pad: str) -> Column:  # noqa: A002 - Spark's name
    """Right-padded (or cut) to ``len`` characters."""
    return _call_mixed("rpad", _c(c), _l(len), _l(pad))


def repeat(c: ColumnOrName, n: Any) -> Column:
    """The string ``n`` times."""
    return _call_mixed("repeat", _c(c), _l(n))


def instr(c: ColumnOrName, substr: str) -> Column:
    """1-based position of ``substr`` (0 when absent)."""
    return _call_mixed("instr", _c(c), _l(substr))


def locate(substr: str, c: ColumnOrName, pos: int = 1) -> Column:
    """1-based position of ``substr`` at or after ``pos``."""
    return _call_mixed("locate", _l(substr), _c(c), lit(pos))


def translate(c: ColumnOrName, matching: str, replace: str) -> Column:
    """Replaces each character of ``matching`` by the one at its position in ``replace``."""
    return _call_mixed("translate", _c(c), _l(matching), _l(replace))


def regexp_replace(c: ColumnOrName, pattern: Any, replacement: Any) -> Column:
    """Every match of ``pattern`` replaced (Java's ``$1`` group references)."""
    return _call_mixed("regexp_replace", _c(c), _l(pattern), _l(replacement))


def regexp_extract(c: ColumnOrName, pattern: str, idx: int) -> Column:
    """Group ``idx`` of the first match, or ``''``."""
    return _call_mixed("regexp_extract", _c(c), _l(pattern), lit(idx))


def rlike(c: ColumnOrName, pattern: Any) -> Column:
    """True where ``pattern`` matches anywhere."""
    return _call_mixed("rlike", _c(c), _l(pattern))


def split(c: ColumnOrName, pattern: str, limit: int = -1) -> Column:
    """The pieces between matches of ``pattern``, an ARRAY<STRING>."""
    return _call_mixed("split", _c(c), _l(pattern), lit(limit))


def date_format(c: ColumnOrName, format: str) -> Column:  # noqa: A002 - Spark's name
    """The timestamp as text in Java's pattern letters."""
    return _call_mixed("date_format", _c(c), _l(format))


def to_date(c: ColumnOrName, format: str | None = None) -> Column:  # noqa: A002
    """Text parsed as a DATE (as CAST without ``format``)."""
    return _call("to_date", c) if format is None else _call_mixed("to_date", _c(c), _l(format))


def to_timestamp(c: ColumnOrName, format: str | None = None) -> Column:  # noqa: A002
    """Text parsed as a TIMESTAMP in the session time zone."""
    if format is None:
        return _call("to_timestamp", c)
    return _call_mixed("to_timestamp", _c(c), _l(format))


def unix_timestamp(
    timestamp: ColumnOrName | None = None,
    format: str = "yyyy-MM-dd HH:mm:ss",  # noqa: A002
) -> Column:
    """Seconds since the epoch (of text in ``format``, or of a timestamp)."""
    if timestamp is None:
        return _call_mixed("unix_timestamp")
    return _call_mixed("unix_timestamp", _c(timestamp), _l(format))


def from_unixtime(c: ColumnOrName, format: str = "yyyy-MM-dd HH:mm:ss") -> Column:  # noqa: A002
    """Seconds since the epoch as text in the session time zone."""
    return _call_mixed("from_unixtime", _c(c), _l(format))


def date_trunc(format: str, timestamp: ColumnOrName) -> Column:  # noqa: A002
    """The timestamp truncated to ``format`` ('year', 'month', 'day', 'hour', ...)."""
    return _call_mixed("date_trunc", _l(format), _c(timestamp))


def trunc(date: ColumnOrName, format: str) -> Column:  # noqa: A002
    """The date truncated to ``format`` ('year', 'quarter', 'month', 'week')."""
    return _call_mixed("trunc", _c(date), _l(format))


def next_day(date: ColumnOrName, dayOfWeek: str) -> Column:  # noqa: N803 - Spark's name
    """The first date after ``date`` that falls on ``dayOfWeek``."""
    return _call_mixed("next_day", _c(date), _l(dayOfWeek))


def months_between(date1: ColumnOrName, date2: ColumnOrName, roundOff: bool = True) -> Column:  # noqa: N803
    """Months from ``date2`` to ``date1`` (Spark's 31-day-month fraction)."""
    return _call_mixed("months_between", _c(date1), _c(date2), lit(roundOff))


def current_date() -> Column:
    """Today in the session time zone."""
    return _call_mixed("current_date")


def current_timestamp() -> Column:
    """Now."""
    return _call_mixed("current_timestamp")


def try_divide(left: ColumnOrName, right: ColumnOrName) -> Column:
    """``left / right``, NULL where ``right`` is 0."""
    return _call("try_divide", left, right)


def concat_ws(sep: str, *cols: ColumnOrName) -> Column:
    """Joins the non-NULL arguments with ``sep``."""
    return Column(_native.Expr.function("concat_ws", [lit(sep)._expr] + [_c(c)._expr for c in cols]))


sec = _scalar("sec")
csc = _scalar("csc")
cot = _scalar("cot")


character_length = _scalar("character_length")
lcase = _scalar("lcase")
ucase = _scalar("ucase")
isnotnull = _scalar("isnotnull")
e = _scalar("e")
pi = _scalar("pi")
extract = _scalar("extract")
position = _scalar("position")
regexp = _scalar("regexp")
regexp_like = _scalar("regexp_like")
named_struct = _scalar("named_struct")


def struct(*cols: ColumnOrName) -> Column:
    """A STRUCT of the columns, fields named after them (``col1``, ... for expressions)."""
    if len(cols) == 1 and isinstance(cols[0], (list, tuple, set)):
        cols = tuple(cols[0])
    return _call("struct", *cols)


# -- bytes -----------------------------------------------------------------------------------

hex = _scalar("hex")  # noqa: A001 - Spark's name
unhex = _scalar("unhex")
base64 = _scalar("base64")
unbase64 = _scalar("unbase64")
nullifzero = _scalar("nullifzero")
zeroifnull = _scalar("zeroifnull")


def to_binary(col: ColumnOrName, format: Any = None) -> Column:  # noqa: A002 - PySpark's name
    """Text as bytes: hex digits (the default), ``'utf-8'`` or ``'base64'``."""
    if format is None:
        return _call("to_binary", col)
    return _call_mixed("to_binary", _c(col), _l(format))


def try_to_binary(col: ColumnOrName, format: Any = None) -> Column:  # noqa: A002 - PySpark's name
    """:func:`to_binary`, NULL for malformed text or an unknown format."""
    if format is None:
        return _call("try_to_binary", col)
    return _call_mixed("try_to_binary", _c(col), _l(format))


def encode(col: ColumnOrName, charset: str) -> Column:
    """Text as bytes in ``charset`` (UTF-8, US-ASCII, ISO-8859-1, UTF-16, UTF-16BE, UTF-16LE,
    UTF-32; Java's other names under ``spark.sql.legacy.javaCharsets``)."""
    return _call_mixed("encode", _c(col), lit(charset))


def decode(col: ColumnOrName, charset: str) -> Column:
    """Bytes read as text in ``charset``."""
    return _call_mixed("decode", _c(col), lit(charset))


def elt(*inputs: ColumnOrName) -> Column:
    """The n-th (1-based, the first argument) of the other arguments."""
    return _call("elt", *inputs)


# -- bits ------------------------------------------------------------------------------------


def shiftleft(col: ColumnOrName, numBits: int) -> Column:  # noqa: N803 - PySpark's name
    """``col << numBits`` (INT or BIGINT; Java's shift, the count modulo the width)."""
    return _call_mixed("shiftleft", _c(col), lit(numBits))


def shiftright(col: ColumnOrName, numBits: int) -> Column:  # noqa: N803 - PySpark's name
    """``col >> numBits``, the sign kept."""
    return _call_mixed("shiftright", _c(col), lit(numBits))


def shiftrightunsigned(col: ColumnOrName, numBits: int) -> Column:  # noqa: N803 - PySpark's name
    """``col >>> numBits``, zeros shifted in."""
    return _call_mixed("shiftrightunsigned", _c(col), lit(numBits))


def bitwise_not(col: ColumnOrName) -> Column:
    """``~col``."""
    return _call("~", col)


def bit_count(col: ColumnOrName) -> Column:
    """Set bits of an integer (sign-extended to 64 bits) or a boolean."""
    return _call("bit_count", col)


def getbit(col: ColumnOrName, pos: Any) -> Column:
    """Bit ``pos`` (0 the lowest) of an integer, as a TINYINT."""
    return _call_mixed("getbit", _c(col), _l(pos))


bit_get = getbit


# -- arrays and maps -------------------------------------------------------------------------


def array(*cols: ColumnOrName) -> Column:
    """An ARRAY of the columns (names or Columns), their common type."""
    if len(cols) == 1 and isinstance(cols[0], (list, tuple, set)):
        cols = tuple(cols[0])
    return _call("array", *cols)


def create_map(*cols: ColumnOrName) -> Column:
    """A MAP of key, value, key, value, ... columns (SQL's ``map``)."""
    if len(cols) == 1 and isinstance(cols[0], (list, tuple, set)):
        cols = tuple(cols[0])
    return _call("map", *cols)


def size(col: ColumnOrName) -> Column:
    """Elements of an array or entries of a map (NULL for NULL under ANSI, else -1)."""
    return _call("size", col)


def cardinality(col: ColumnOrName) -> Column:
    """``size``."""
    return _call("cardinality", col)


def array_size(col: ColumnOrName) -> Column:
    """Elements of an array (NULL for NULL)."""
    return _call("array_size", col)


def element_at(col: ColumnOrName, extraction: Any) -> Column:
    """The element at 1-based ``extraction`` (negative: from the end) or a map's value of a key."""
    return _call_mixed("element_at", _c(col), _l(extraction))


def try_element_at(col: ColumnOrName, extraction: Any) -> Column:
    """``element_at``, NULL where the index is out of bounds."""
    return _call_mixed("try_element_at", _c(col), _l(extraction))


def get(col: ColumnOrName, index: Any) -> Column:
    """The element at 0-based ``index``, NULL out of bounds."""
    return _call_mixed("get", _c(col), _l(index))


def array_contains(col: ColumnOrName, value: Any) -> Column:
    """Whether the array holds ``value`` (NULL when it does not but holds a NULL)."""
    return _call_mixed("array_contains", _c(col), _l(value))


def sort_array(col: ColumnOrName, asc: bool = True) -> Column:
    """The array sorted (NULLs first ascending, last descending)."""
    return _call_mixed("sort_array", _c(col), lit(asc))


def array_append(col: ColumnOrName, value: Any) -> Column:
    """The array with ``value`` added at its end."""
    return _call_mixed("array_append", _c(col), _l(value))


def array_prepend(col: ColumnOrName, value: Any) -> Column:
    """The array with ``value`` added at its start."""
    return _call_mixed("array_prepend", _c(col), _l(value))


def array_compact(col: ColumnOrName) -> Column:
    """The array without its NULLs."""
    return _call("array_compact", col)


def map_keys(col: ColumnOrName) -> Column:
    """A map's keys as an array."""
    return _call("map_keys", col)


def map_values(col: ColumnOrName) -> Column:
    """A map's values as an array."""
    return _call("map_values", col)


# -- strings, regular expressions, arrays, intervals and misc (SQL names, PySpark signatures) --


def split_part(src: ColumnOrName, delimiter: ColumnOrName, partNum: ColumnOrName) -> Column:  # noqa: N803 - PySpark's name
    """Piece ``partNum`` of ``src`` split at ``delimiter`` (negative from the end; ``''`` past it)."""
    return _call("split_part", src, delimiter, partNum)


def regexp_extract_all(str: ColumnOrName, regexp: ColumnOrName, idx: Any = None) -> Column:  # noqa: A002
    """Group ``idx`` (default 1) of every match, as an array."""
    args = [_c(str), _c(regexp)] + ([] if idx is None else [_l(idx)])
    return _call_mixed("regexp_extract_all", *args)


def regexp_count(str: ColumnOrName, regexp: ColumnOrName) -> Column:  # noqa: A002
    """How many times ``regexp`` matches."""
    return _call("regexp_count", str, regexp)


def regexp_substr(str: ColumnOrName, regexp: ColumnOrName) -> Column:  # noqa: A002
    """The first match, NULL when none."""
    return _call("regexp_substr", str, regexp)


def regexp_instr(str: ColumnOrName, regexp: ColumnOrName, idx: Any = None) -> Column:  # noqa: A002
    """Where the first match starts (1-based), 0 when none."""
    args = [_c(str), _c(regexp)] + ([] if idx is None else [_l(idx)])
    return _call_mixed("regexp_instr", *args)


def is_valid_utf8(str: ColumnOrName) -> Column:  # noqa: A002
    """Whether the bytes are valid UTF-8."""
    return _call("is_valid_utf8", str)


def make_valid_utf8(str: ColumnOrName) -> Column:  # noqa: A002
    """The text with invalid UTF-8 sequences replaced by U+FFFD."""
    return _call("make_valid_utf8", str)


def validate_utf8(str: ColumnOrName) -> Column:  # noqa: A002
    """The text, or ``INVALID_UTF8_STRING``."""
    return _call("validate_utf8", str)


def try_validate_utf8(str: ColumnOrName) -> Column:  # noqa: A002
    """The text, or NULL where it is not valid UTF-8."""
    return _call("try_validate_utf8", str)


def array_insert(arr: ColumnOrName, pos: Any, value: Any) -> Column:
    """``arr`` with ``value`` at 1-based ``pos`` (negative from the end)."""
    return _call_mixed("array_insert", _c(arr), _l(pos), _l(value))


def arrays_zip(*cols: ColumnOrName) -> Column:
    """Structs of the i-th elements of each array, as long as the longest."""
    return _call("arrays_zip", *cols)


def map_contains_key(col: ColumnOrName, value: Any) -> Column:
    """Whether the map has the key ``value``."""
    return _call_mixed("map_contains_key", _c(col), _l(value))


def width_bucket(v: ColumnOrName, min: ColumnOrName, max: ColumnOrName, numBucket: Any) -> Column:  # noqa: A002, N803
    """Which of ``numBucket`` equal buckets between ``min`` and ``max`` holds ``v``."""
    return _call_mixed("width_bucket", _c(v), _c(min), _c(max), _l(numBucket))


def conv(col: ColumnOrName, fromBase: int, toBase: int) -> Column:  # noqa: N803
    """The number written in ``fromBase`` rewritten in ``toBase`` (Spark's 64-bit rules)."""
    return _call_mixed("conv", _c(col), lit(fromBase), lit(toBase))


def bin(col: ColumnOrName) -> Column:  # noqa: A001 - Spark's name
    """The two's complement bits of a BIGINT."""
    return _call("bin", col)


def typeof(col: ColumnOrName) -> Column:
    """The Spark type name of the value (``int``, ``interval day``)."""
    return _call("typeof", col)


def make_timestamp(
    years: ColumnOrName,
    months: ColumnOrName,
    days: ColumnOrName,
    hours: ColumnOrName,
    mins: ColumnOrName,
    secs: ColumnOrName,
    timezone: ColumnOrName | None = None,
) -> Column:
    """A timestamp from its fields (seconds with a fraction) in the session or given zone."""
    args = [years, months, days, hours, mins, secs] + ([] if timezone is None else [timezone])
    return _call("make_timestamp", *args)


def make_ym_interval(years: ColumnOrName | None = None, months: ColumnOrName | None = None) -> Column:
    """A year-month interval."""
    return _call("make_ym_interval", *[a if a is not None else lit(0) for a in (years, months)])


def make_dt_interval(
    days: ColumnOrName | None = None,
    hours: ColumnOrName | None = None,
    mins: ColumnOrName | None = None,
    secs: ColumnOrName | None = None,
) -> Column:
    """A day-time interval."""
    return _call("make_dt_interval", *[a if a is not None else lit(0) for a in (days, hours, mins, secs)])


def make_interval(
    years: ColumnOrName | None = None,
    months: ColumnOrName | None = None,
    weeks: ColumnOrName | None = None,
    days: ColumnOrName | None = None,
    hours: ColumnOrName | None = None,
    mins: ColumnOrName | None = None,
    secs: ColumnOrName | None = None,
) -> Column:
    """Spark's calendar interval (months, days and microseconds kept apart)."""
    fields = (years, months, weeks, days, hours, mins, secs)
    return _call("make_interval", *[a if a is not None else lit(0) for a in fields])


def raise_error(errMsg: Any) -> Column:  # noqa: N803
    """``USER_RAISED_EXCEPTION`` with the message, on every row it is evaluated for."""
    return _call_mixed("raise_error", _l(errMsg))


def assert_true(col: ColumnOrName, errMsg: Any = None) -> Column:  # noqa: N803
    """NULL where ``col`` is true, else ``USER_RAISED_EXCEPTION``."""
    args = [_c(col)] + ([] if errMsg is None else [_l(errMsg)])
    return _call_mixed("assert_true", *args)


# Higher-order functions: a Python callable becomes a lambda over columns standing for its
# parameters, as PySpark builds one.

_LAMBDA_IDS = itertools.count()


def _lambda(f: Callable[..., Column], most: int, least: int = 1) -> Column:
    try:
        params = [
            p
            for p in inspect.signature(f).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError) as e:
        raise AnalysisError(f"a higher-order function needs a Python function, got {f!r}") from e
    if not least <= len(params) <= most:
        raise AnalysisError(
            f"[INVALID_LAMBDA_FUNCTION_CALL.NUM_ARGS_MISMATCH] the function takes {len(params)} "
            f"arguments; {least} to {most} expected"
        )
    names = [f"x_{next(_LAMBDA_IDS)}" for _ in params]
    body = f(*[col(n) for n in names])
    if not isinstance(body, Column):
        raise AnalysisError(
            f"[HIGHER_ORDER_FUNCTION_SHOULD_RETURN_COLUMN] the function should return a Column, "
            f"got {type(body).__name__}"
        )
    return Column(_native.Expr.lambda_function(names, body._expr))


def transform(col: ColumnOrName, f: Callable[..., Column]) -> Column:
    """Each element of the array ``col`` through ``f(x)`` or ``f(x, i)`` (``i`` its 0-based
    position)."""
    return _call_mixed("transform", _c(col), _lambda(f, 2))


def filter(col: ColumnOrName, f: Callable[..., Column]) -> Column:  # noqa: A001 - Spark's name
    """The elements of ``col`` for which ``f(x)`` (or ``f(x, i)``) is true."""
    return _call_mixed("filter", _c(col), _lambda(f, 2))


def exists(col: ColumnOrName, f: Callable[[Column], Column]) -> Column:
    """Whether ``f(x)`` holds for some element: NULL when none does and some test is NULL."""
    return _call_mixed("exists", _c(col), _lambda(f, 1))


def forall(col: ColumnOrName, f: Callable[[Column], Column]) -> Column:
    """Whether ``f(x)`` holds for every element: NULL when none fails and some test is NULL."""
    return _call_mixed("forall", _c(col), _lambda(f, 1))


def aggregate(
    col: ColumnOrName,
    initialValue: ColumnOrName,  # noqa: N803 - PySpark's parameter name
    merge: Callable[[Column, Column], Column],
    finish: Callable[[Column], Column] | None = None,
) -> Column:
    """``merge(acc, x)`` folded over the elements from ``initialValue``, then ``finish(acc)``."""
    args = [_c(col), _c(initialValue), _lambda(merge, 2, 2)]
    if finish is not None:
        args.append(_lambda(finish, 1))
    return _call_mixed("aggregate", *args)


reduce = aggregate  # Spark's other name for it


def zip_with(left: ColumnOrName, right: ColumnOrName, f: Callable[[Column, Column], Column]) -> Column:
    """``f(x, y)`` over the arrays' elements pairwise, the shorter padded with NULLs."""
    return _call_mixed("zip_with", _c(left), _c(right), _lambda(f, 2, 2))


def transform_keys(col: ColumnOrName, f: Callable[[Column, Column], Column]) -> Column:
    """The map with each key replaced by ``f(k, v)``."""
    return _call_mixed("transform_keys", _c(col), _lambda(f, 2, 2))


def array_sort(col: ColumnOrName, comparator: Callable[[Column, Column], Column] | None = None) -> Column:
    """The array sorted ascending with NULLs last, or by ``comparator(l, r)`` (an INT: negative,
    0 or positive), stably."""
    if comparator is None:
        return _call("array_sort", col)
    return _call_mixed("array_sort", _c(col), _lambda(comparator, 2, 2))


def map_zip_with(
    col1: ColumnOrName, col2: ColumnOrName, f: Callable[[Column, Column, Column], Column]
) -> Column:
    """A map of every key of either map to ``f(k, v1, v2)``, a value NULL where its map lacks
    the key (the first map's keys first)."""
    return _call_mixed("map_zip_with", _c(col1), _c(col2), _lambda(f, 3, 3))


def transform_values(col: ColumnOrName, f: Callable[[Column, Column], Column]) -> Column:
    """The map with each value replaced by ``f(k, v)``."""
    return _call_mixed("transform_values", _c(col), _lambda(f, 2, 2))


def map_filter(col: ColumnOrName, f: Callable[[Column, Column], Column]) -> Column:
    """The entries of the map for which ``f(k, v)`` is true."""
    return _call_mixed("map_filter", _c(col), _lambda(f, 2, 2))


# Generators: in ``select`` / ``withColumn``, each input row is repeated once per row the
# generator makes (one generator per select, as in Spark).


def explode(col: ColumnOrName) -> Column:
    """A row per element of the array (``col``) or entry of the map (``key``, ``value``);
    none for a NULL or empty one."""
    return _call("explode", col)


def explode_outer(col: ColumnOrName) -> Column:
    """As :func:`explode`, with one row of NULLs for a NULL or empty array or map."""
    return _call("explode_outer", col)


def posexplode(col: ColumnOrName) -> Column:
    """As :func:`explode`, with each element's 0-based position first (``pos``)."""
    return _call("posexplode", col)


def posexplode_outer(col: ColumnOrName) -> Column:
    """As :func:`posexplode`, with one row of NULLs for a NULL or empty array or map."""
    return _call("posexplode_outer", col)


def inline(col: ColumnOrName) -> Column:
    """A row per struct of the array, its fields as columns."""
    return _call("inline", col)


def inline_outer(col: ColumnOrName) -> Column:
    """As :func:`inline`, with one row of NULLs for a NULL or empty array."""
    return _call("inline_outer", col)


def stack(*cols: Any) -> Column:
    """``stack(n, v1, ..., vk)``: ``n`` rows of ``ceil(k / n)`` columns ``col0``, ``col1``, ..."""
    return _call_mixed("stack", *[_c(c) for c in cols])


__all__ = [
    "current_timezone",
    "current_catalog",
    "current_user",
    "user",
    "session_user",
    "make_timestamp_ntz",
    "try_make_timestamp_ntz",
    "uuid",
    "rand",
    "randn",
    "random",
    "monotonically_increasing_id",
    "spark_partition_id",
    "array_distinct",
    "array_max",
    "array_min",
    "flatten",
    "array_union",
    "array_intersect",
    "array_except",
    "arrays_overlap",
    "array_position",
    "array_remove",
    "array_join",
    "slice",
    "array_repeat",
    "acosh",
    "asinh",
    "atanh",
    "char",
    "chr",
    "convert_timezone",
    "cosh",
    "crc32",
    "dayname",
    "factorial",
    "find_in_set",
    "from_utc_timestamp",
    "hash",
    "hypot",
    "levenshtein",
    "mask",
    "md5",
    "monthname",
    "overlay",
    "quote",
    "sha",
    "sha1",
    "sha2",
    "sinh",
    "sentences",
    "soundex",
    "substring_index",
    "tanh",
    "to_utc_timestamp",
    "try_add",
    "try_make_interval",
    "try_make_timestamp",
    "try_make_timestamp_ltz",
    "try_mod",
    "try_multiply",
    "try_subtract",
    "try_to_date",
    "try_to_timestamp",
    "try_url_decode",
    "url_decode",
    "url_encode",
    "xxhash64",
    "any_value",
    "approxCountDistinct",
    "array_agg",
    "bit_and",
    "bit_or",
    "bit_xor",
    "every",
    "histogram_numeric",
    "kurtosis",
    "skewness",
    "some",
    "std",
    "curdate",
    "date_diff",
    "date_from_unix_date",
    "date_part",
    "datepart",
    "localtimestamp",
    "make_timestamp_ltz",
    "now",
    "timestamp_add",
    "timestamp_diff",
    "timestamp_micros",
    "timestamp_millis",
    "timestamp_seconds",
    "to_char",
    "to_unix_timestamp",
    "to_varchar",
    "unix_micros",
    "unix_millis",
    "unix_seconds",
    "bitwiseNOT",
    "negate",
    "shiftLeft",
    "shiftRight",
    "shiftRightUnsigned",
    "toDegrees",
    "toRadians",
    "call_function",
    "equal_null",
    "bit_length",
    "contains",
    "endswith",
    "ilike",
    "like",
    "octet_length",
    "startswith",
    "format_string",
    "printf",
    "to_number",
    "try_to_number",
    "corr",
    "covar_pop",
    "covar_samp",
    "regr_count",
    "max_by",
    "min_by",
    "product",
    "regr_intercept",
    "regr_sxy",
    "regr_r2",
    "regr_avgx",
    "regr_avgy",
    "regr_slope",
    "regr_sxx",
    "regr_syy",
    "explode",
    "explode_outer",
    "posexplode",
    "posexplode_outer",
    "inline",
    "inline_outer",
    "stack",
    "aggregate",
    "exists",
    "filter",
    "forall",
    "map_filter",
    "reduce",
    "transform",
    "transform_keys",
    "transform_values",
    "zip_with",
    "split_part",
    "regexp_extract_all",
    "regexp_count",
    "regexp_substr",
    "regexp_instr",
    "is_valid_utf8",
    "make_valid_utf8",
    "validate_utf8",
    "try_validate_utf8",
    "array_insert",
    "arrays_zip",
    "map_contains_key",
    "width_bucket",
    "conv",
    "bin",
    "typeof",
    "make_timestamp",
    "make_ym_interval",
    "make_dt_interval",
    "make_interval",
    "raise_error",
    "assert_true",
    "hex",
    "unhex",
    "base64",
    "unbase64",
    "nullifzero",
    "zeroifnull",
    "to_binary",
    "try_to_binary",
    "encode",
    "decode",
    "elt",
    "character_length",
    "e",
    "extract",
    "isnotnull",
    "lcase",
    "named_struct",
    "pi",
    "position",
    "regexp",
    "regexp_like",
    "struct",
    "ucase",
    "shiftleft",
    "shiftright",
    "shiftrightunsigned",
    "bitwise_not",
    "bit_count",
    "getbit",
    "bit_get",
    "sec",
    "csc",
    "cot",
    "array",
    "create_map",
    "size",
    "cardinality",
    "array_size",
    "element_at",
    "try_element_at",
    "get",
    "array_contains",
    "sort_array",
    "array_append",
    "array_prepend",
    "array_compact",
    "map_keys",
    "map_values",
    "abs",
    "broadcast",
    "session_window",
    "acos",
    "add_months",
    "AggColumn",
    "approx_count_distinct",
    "asc",
    "asc_nulls_first",
    "asc_nulls_last",
    "ascii",
    "asin",
    "atan",
    "atan2",
    "avg",
    "bool_and",
    "bool_or",
    "bround",
    "btrim",
    "cbrt",
    "ceil",
    "ceiling",
    "char_length",
    "coalesce",
    "col",
    "collect_list",
    "collect_set",
    "Column",
    "column",
    "concat",
    "concat_ws",
    "cos",
    "count",
    "count_distinct",
    "count_if",
    "countDistinct",
    "cume_dist",
    "current_date",
    "current_timestamp",
    "date_add",
    "date_format",
    "date_sub",
    "date_trunc",
    "dateadd",
    "datediff",
    "day",
    "dayofmonth",
    "dayofweek",
    "dayofyear",
    "degrees",
    "dense_rank",
    "desc",
    "desc_nulls_first",
    "desc_nulls_last",
    "exp",
    "expm1",
    "expr",
    "first",
    "first_value",
    "floor",
    "from_unixtime",
    "greatest",
    "hour",
    "ifnull",
    "initcap",
    "instr",
    "isnan",
    "isnull",
    "lag",
    "last",
    "last_day",
    "last_value",
    "lead",
    "counter_diff",
    "least",
    "left",
    "length",
    "lit",
    "ln",
    "locate",
    "log",
    "log10",
    "log1p",
    "log2",
    "lower",
    "lpad",
    "ltrim",
    "make_date",
    "max",
    "mean",
    "min",
    "minute",
    "month",
    "months_between",
    "nanvl",
    "negative",
    "next_day",
    "nth_value",
    "ntile",
    "nullif",
    "nvl",
    "nvl2",
    "percent_rank",
    "percentile",
    "median",
    "pmod",
    "positive",
    "pow",
    "power",
    "quarter",
    "radians",
    "rank",
    "regexp_extract",
    "regexp_replace",
    "repeat",
    "replace",
    "reverse",
    "right",
    "rint",
    "rlike",
    "round",
    "row_number",
    "rpad",
    "rtrim",
    "second",
    "sign",
    "signum",
    "sin",
    "split",
    "sqrt",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "substr",
    "substring",
    "sum",
    "sum_distinct",
    "sumDistinct",
    "tan",
    "to_date",
    "to_timestamp",
    "to_timestamp_ltz",
    "to_timestamp_ntz",
    "translate",
    "trim",
    "trunc",
    "try_divide",
    "unix_date",
    "unix_timestamp",
    "upper",
    "udf",
    "call_udf",
    "pandas_udf",
    "PandasUDFType",
    "UserDefinedFunction",
    "var_pop",
    "var_samp",
    "variance",
    "weekday",
    "weekofyear",
    "when",
    "year",
    "map_concat",
    "map_entries",
    "map_from_arrays",
    "map_from_entries",
    "sequence",
    "shuffle",
    "str_to_map",
    "current_database",
    "current_path",
    "current_schema",
    "randstr",
    "uniform",
    "version",
    "format_number",
    "from_base32",
    "hmac",
    "jaro_winkler_similarity",
    "json_array_length",
    "json_object_keys",
    "from_json",
    "to_json",
    "schema_of_json",
    "get_json_object",
    "json_tuple",
    "from_csv",
    "to_csv",
    "schema_of_csv",
    "aes_encrypt",
    "aes_decrypt",
    "try_aes_decrypt",
    "bucket",
    "days",
    "hours",
    "months",
    "years",
    "partitioning",
    "parse_url",
    "to_base32",
    "try_parse_url",
    "try_sum",
    "try_avg",
    "mode",
    "listagg",
    "listagg_distinct",
    "string_agg",
    "string_agg_distinct",
    "percentile_approx",
    "approx_percentile",
    "array_sort",
    "map_zip_with",
    "window",
    "window_time",
    "collect_union",
]
