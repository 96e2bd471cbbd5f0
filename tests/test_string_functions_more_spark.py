"""String and byte functions against PySpark: ``encode`` / ``decode`` in every charset Spark 4
accepts (constant or one per row, with the legacy settings), ``to_binary``'s folded formats
and base64 checks, ``to_number`` / ``try_to_number``, ``format_string`` / ``printf``,
``right`` of a NULL length and ``uuid``.

Each query runs in both engines over the same inline rows (NULLs, empty strings, unicode);
values are compared, and each refusal must carry the error class Spark raises.
"""

from __future__ import annotations

import re

import pytest

import ferrospark as fs
from helpers import arrow_rows, check_rows, spark_rows

ROWS = (
    "VALUES ('hello', 'UTF-16'), ('日本語', 'UTF-16LE'), ('', 'UTF-32'), (NULL, 'utf-8'), "
    "('é', 'ISO-8859-1'), ('x', NULL), ('Ab', 'us-ascii'), ('😀 ok', 'UTF-16BE'), ('ñ😀', 'utf-32') "
    "AS t(s, cs)"
)


@pytest.fixture(scope="module")
def sessions(spark):
    return fs.Session(), spark


def _same(sessions, sql: str, ordered: bool = False) -> None:
    s, spark = sessions
    got = arrow_rows(s.sql(sql).toArrow())
    want = spark_rows(spark.sql(sql))
    check_rows(sql, got, want, ordered)


def _same_error(sessions, sql: str, error_class: str) -> None:
    s, spark = sessions
    with pytest.raises(Exception) as theirs:
        spark.sql(sql).collect()
    assert error_class in str(theirs.value), f"Spark: {theirs.value}"
    with pytest.raises(fs.FerroError) as ours:
        s.sql(sql).toArrow()
    assert f"[{error_class}" in str(ours.value), str(ours.value)


QUERIES = {
    "charset_per_row": f"SELECT s, cs, hex(encode(s, cs)) AS h, decode(encode(s, cs), cs) AS r FROM {ROWS}",
    "charset_constants": (
        "SELECT hex(encode('ab', 'UTF-16')) AS a, hex(encode('ab', 'utf-16le')) AS b, "
        "hex(encode('a😀', 'UTF-32')) AS c, hex(encode('', 'UTF-16')) AS d, "
        "decode(X'FFFE6100', 'UTF-16') AS e, decode(X'0061', 'Utf-16') AS f, "
        "decode(X'0000FEFF00000061', 'UTF-32') AS g, decode(X'FEFF0061', 'UTF-16BE') AS h, "
        "encode(NULL, 'UTF-16') AS i, decode(X'61', CAST(NULL AS STRING)) AS j, "
        "decode(encode('日本', 'UTF-16'), 'UTF-16') AS k"
    ),
    "to_binary_formats": (
        "SELECT to_binary('abc', concat('utf', '-8')) AS a, to_binary('abc', NULL) AS b, "
        "to_binary(NULL, CAST(NULL AS STRING)) AS c, to_binary('  ', 'utf8') AS d, "
        "to_binary('4a4B', lower('HEX')) AS e, to_binary(' ab c=', 'base64') AS f, "
        "to_binary('ab\\tcd', 'BASE64') AS g, to_binary('abcdef==', 'base64') AS h, "
        "to_binary('abc', 'base64') AS i, to_binary('', 'base64') AS j"
    ),
    "to_number": (
        "SELECT to_number('454', '000') AS a, to_number('454.2', '000.0') AS b, "
        "to_number('12,454', '00,000') AS c, to_number('$78.12', '$00.00') AS d, "
        "to_number('-454', 'S000') AS e, to_number('12,454.8-', '00,000.9MI') AS f, "
        "to_number('<00,454.8>', '00,000.9PR') AS g, to_number('5', '9.9') AS h, "
        "to_number('1,2', '99,99') AS i, to_number('  454', '9999') AS j, "
        "to_number('5+', '9s') AS k, to_number('12.34', '99d99') AS l, "
        "to_number(NULL, '99') AS m, to_number('1', NULL) AS n, "
        "typeof(to_number('1', '99.99PR')) AS o, typeof(to_number('1', 'S$99.99')) AS p"
    ),
    "try_to_number_per_row": (
        "SELECT s, try_to_number(s, '9,999.99') AS a, try_to_number(s, 'S$99') AS b FROM VALUES "
        "('1,234.5'), ('abc'), (''), (NULL), ('12345'), ('-$12'), ('$1'), ('日本'), ('1.234') AS t(s)"
    ),
    "format_string_per_row": (
        "SELECT format_string('%s|%5d|%-6s|%x|%.2f|%e|%,d|%%', s, n, s, n, d, d, n) AS a, "
        "printf('%2$s %1$s %<s', s, n) AS b, format_string('%08.3f|%+d|%(d|% d', d, n, n, n) AS c, "
        "format_string(s) AS e, format_string('%b %B %S', n, s, s) AS f FROM VALUES "
        "('x', 42, 3.25D), (NULL, NULL, NULL), ('日本', -7, -0.0D), ('', 0, 1e-5D), "
        "('😀', 2147483647, 1234567.125D), ('a%%b', -2147483648, CAST('NaN' AS DOUBLE)), "
        "('y', 5, CAST('-Infinity' AS DOUBLE)) AS t(s, n, d)"
    ),
    "format_string_types": (
        "SELECT format_string('%s %s %s %s', 1.50BD, 2.0D, 1.5F, true) AS a, "
        "format_string('%d %x %o %c', 3Y, -1S, 8L, 97) AS b, format_string('%.1f %.2f %g %G', 0.25D, 0.125D, 0.0001D, 1e10D) AS c"
    ),
    "right_of_null_length": (
        "SELECT s, right(s, NULL) AS a, right(s, 2) AS b, left(s, NULL) AS c, right(s, 0) AS d "
        "FROM VALUES ('abcd'), (NULL), (''), ('日本語') AS t(s)"
    ),
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_matches_spark(sessions, name):
    _same(sessions, QUERIES[name])


def test_legacy_settings(sessions):
    s, spark = sessions
    q = (
        "SELECT hex(encode('€a', 'WINDOWS-1252')) AS a, decode(X'80', 'cp1252') AS b, "
        "hex(encode('a', 'utf8')) AS c, hex(encode(s, cs)) AS d FROM VALUES ('日x', 'US-ASCII'), "
        "('ÿ€', 'ISO-8859-1'), ('é', 'windows-1252') AS t(s, cs)"
    )
    try:
        for session in (s, spark):
            session.sql("SET spark.sql.legacy.javaCharsets=true")
            session.sql("SET spark.sql.legacy.codingErrorAction=true")
        _same(sessions, q)
        _same(
            sessions, "SELECT decode(X'61D800', 'UTF-16BE') AS a, decode(X'00000061FFFFFFFF', 'UTF-32') AS b"
        )
    finally:
        for session in (s, spark):
            session.sql("RESET spark.sql.legacy.javaCharsets")
            session.sql("RESET spark.sql.legacy.codingErrorAction")


@pytest.mark.parametrize(
    "text",
    [" ab cd ", "a", "a?", "abcde", "abcd=", "a===", "ab==f", "abcdef= =", "abcdef== ", "ab=", "abc==", "=="],
)
def test_base64_checks_as_spark(sessions, text):
    q = f"SELECT to_binary('{text}', 'base64') AS b"
    s, spark = sessions
    try:
        want = spark_rows(spark.sql(q))
    except Exception as e:  # noqa: BLE001 - Spark's error is the expectation
        assert "CONVERSION_INVALID_INPUT" in str(e)
        with pytest.raises(fs.FerroError, match="CONVERSION_INVALID_INPUT"):
            s.sql(q).toArrow()
        return
    assert arrow_rows(s.sql(q).toArrow()) == want


@pytest.mark.parametrize(
    ("sql", "error_class"),
    [
        ("SELECT encode('hello', 'WINDOWS-1252')", "INVALID_PARAMETER_VALUE.CHARSET"),
        ("SELECT encode('a', 'utf8')", "INVALID_PARAMETER_VALUE.CHARSET"),
        ("SELECT decode(X'68', 'Windows-xxx')", "INVALID_PARAMETER_VALUE.CHARSET"),
        (
            "SELECT encode(s, c) FROM VALUES ('a', 'UTF-8'), ('b', 'Windows-xxx') AS t(s, c)",
            "INVALID_PARAMETER_VALUE.CHARSET",
        ),
        ("SELECT encode(s, c) FROM VALUES ('客舍', 'US-ASCII') AS t(s, c)", "MALFORMED_CHARACTER_CODING"),
        ("SELECT decode(X'D800', 'UTF-16')", "MALFORMED_CHARACTER_CODING"),
        ("SELECT decode(X'610062', 'UTF-16LE')", "MALFORMED_CHARACTER_CODING"),
        ("SELECT decode(b, c) FROM VALUES (X'E8A5BF', 'US-ASCII') AS t(b, c)", "MALFORMED_CHARACTER_CODING"),
        ("SELECT to_binary('abc', 1)", "DATATYPE_MISMATCH.INVALID_ARG_VALUE"),
        ("SELECT to_binary('abc', 'invalidFormat')", "DATATYPE_MISMATCH.INVALID_ARG_VALUE"),
        ("SELECT to_binary('abc', f) FROM VALUES ('hex') AS t(f)", "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT"),
        ("SELECT to_binary(' ab cdef= = ', substr('base64whynot', 0, 6))", "CONVERSION_INVALID_INPUT"),
        ("SELECT to_number('454', '00')", "INVALID_FORMAT.MISMATCH_INPUT"),
        ("SELECT to_number(s, '999') FROM VALUES ('12'), ('abc') AS t(s)", "INVALID_FORMAT.MISMATCH_INPUT"),
        ("SELECT to_number('1', '')", "INVALID_FORMAT.EMPTY"),
        ("SELECT to_number('1', 'x')", "INVALID_FORMAT.WRONG_NUM_DIGIT"),
        ("SELECT to_number('1', '9$')", "INVALID_FORMAT.CUR_MUST_BEFORE_DIGIT"),
        ("SELECT try_to_number('1', '9,.9')", "INVALID_FORMAT.CONT_THOUSANDS_SEPS"),
        ("SELECT to_number('1', '9.9,9')", "INVALID_FORMAT.THOUSANDS_SEPS_MUST_BEFORE_DEC"),
        ("SELECT to_number('1', '99SS')", "INVALID_FORMAT.WRONG_NUM_TOKEN"),
        ("SELECT to_number('1', '$S99')", "INVALID_FORMAT.UNEXPECTED_TOKEN"),
        ("SELECT to_number('1', f) FROM VALUES ('9') AS t(f)", "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT"),
        ("SELECT format_string()", "WRONG_NUM_ARGS.WITHOUT_SUGGESTION"),
    ],
)
def test_errors_as_spark(sessions, sql, error_class):
    _same_error(sessions, sql, error_class)


def test_format_string_java_errors(sessions):
    """Java's formatter refuses a conversion its argument's class does not take; Spark passes
    the message on without an error class."""
    s, spark = sessions
    for q, message in [
        ("SELECT format_string('%f', 1.5BD)", "f != org.apache.spark.sql.types.Decimal"),
        ("SELECT format_string('%d', 'x')", "d != org.apache.spark.unsafe.types.UTF8String"),
        ("SELECT format_string('%s %s', 'x')", "Format specifier '%s'"),
    ]:
        with pytest.raises(Exception, match=re.escape(message)):
            spark.sql(q).collect()
        with pytest.raises(fs.FerroError, match=re.escape(message)):
            s.sql(q).toArrow()


def test_uuid_is_random_per_row_and_per_call(sessions):
    s, spark = sessions
    q = "SELECT uuid() AS a, uuid() AS b, length(uuid()) AS n FROM range(50)"
    got = s.sql(q).toArrow()
    a, b = got.column("a").to_pylist(), got.column("b").to_pylist()
    shape = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    assert all(shape.match(u) for u in a + b)
    assert len(set(a + b)) == 100
    assert set(got.column("n").to_pylist()) == {36}
    # As in Spark: two calls differ, and the names and types agree.
    q2 = "SELECT length(uuid()) AS n, uuid() <> uuid() AS d, typeof(uuid()) AS t"
    _same(sessions, q2)
    again = s.sql("SELECT uuid() AS u").toArrow().column("u").to_pylist()
    assert again[0] not in a + b


#: Texts whose sentences and words Java's BreakIterator cuts in ways UAX #29 does not: periods
#: followed by zero, one or two spaces before each kind of character, terminators, closers,
#: mid-word and mid-number punctuation, currency, CJK runs, combining marks, characters past
#: the BMP.
SENTENCE_TEXTS = [
    "Hi there! How are you? I am fine.",
    "e.g. this is one. Yes.",
    "Mr. Smith went. He left.",
    "Line one\nLine two",
    "Para one\u2029Para two",
    "one\u2029\u2029two",
    "Wait... what?! Really.",
    'He said "Stop." Then left.',
    "The 3.14 value. Next",
    "end.Start",
    "one.  two",
    "one.\ntwo",
    "one. \ntwo",
    "one. (two)",
    "one. )two",
    "one. ,two",
    "one. :two",
    "one. 2two",
    "one. \u00e9two",
    "one. \u02b0x",
    "one.\u00bb two",
    "one.\u201d Two",
    "x.-y",
    "x.,y",
    "x.(y",
    "Q: 1? a: 2!",
    "(Hello.) (World.)",
    "Ends with period. 123 starts with digit.",
    "$5 and 10% off, 1,000.50 total #1 .5",
    "\u00a25 5\u00a2 x^2",
    "don't can't rock'n'roll o' a''b",
    "hello\tworld\r\nnext",
    "a--b c\u2014d e_f g@h.com http://x.y/z #tag",
    "e\u0301cole caf\u00e9 x\u200by",
    "\u2167 roman \u00bd fraction \u2460circled",
    "\u00bfQu\u00e9? \u00a1S\u00ed!",
    "U.S.A. is big. ok",
    "\u65e5\u672c\u8a9e\u306e\u6587\u3002\u6b21\u306e\u6587\uff01 \u00dcn\u00efc\u00f6d\u00e9 w\u00f6rds.",
    "\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3001\u6f22\u5b57\u30fc\u9577\u97f3\u3002",
    "\u30fd\u30ab\u3042\u309d \u30fb\u30ab \u309b\u3042 \uff76\uff80\uff76\uff85",
    "one\u0964two one\u0965 x",
    "abc123def 123abc abc123 1st 2nd a1-b2 A1,2B 3.5.6 1..2",
    "\U0001d49cbc d \U00020000\u4e00 x",
    "!!!",
    "   ",
    "",
    None,
]


def test_sentences_match_spark(sessions):
    """``sentences`` over texts that tell Java's break rules from UAX #29's, and its names
    with one, two and three arguments."""
    s, spark = sessions
    rows = [(i, t) for i, t in enumerate(SENTENCE_TEXTS)]
    table = s.createDataFrame(rows, "i INT, s STRING")
    query = "SELECT i, sentences(s), sentences(s, 'en'), sentences(s, 'en', 'US') FROM t ORDER BY i"
    table.createOrReplaceTempView("t")
    spark.createDataFrame(rows, "i INT, s STRING").createOrReplaceTempView("t")
    got = s.sql(query).toArrow()
    want = spark.sql(query)
    assert got.column_names == want.columns
    check_rows("sentences", arrow_rows(got), spark_rows(want), ordered=True)
