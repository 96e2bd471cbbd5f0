"""The JSON and CSV converters and the AES functions in SQL and as a generator, against PySpark: ``from_json`` (modes, the
corrupt-record column, arrays and maps, nested partial results), ``to_json``,
``schema_of_json``, ``get_json_object`` and ``json_tuple`` (in a select list and in
``LATERAL VIEW``), ``from_csv`` / ``to_csv`` / ``schema_of_csv``, and their refusals with Spark's error classes. The DataFrame forms over a
table are in ``test_functions_names_spark.py`` (the ``json_csv`` family)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import ferrospark as fs
from ferrospark import functions as F
from helpers import arrow_rows, assert_both_refuse

SQL_FORMS = [
    # from_json: records, modes and shapes
    'SELECT from_json(\'{"a":1, "b":"x"}\', \'a INT, b STRING\') AS r',
    'SELECT from_json(\'{"a":"q", "b":"x"}\', \'a INT, b STRING\') AS r',
    "SELECT from_json('xyz', 'a INT, b STRING') AS r, from_json('  ', 'a INT') AS blank",
    "SELECT from_json(CAST(NULL AS STRING), 'a INT') AS r, from_json('null', 'a INT') AS jn",
    "SELECT from_json('[{\"a\":1},{\"a\":2}]', 'a INT') AS r, from_json('[]', 'a INT') AS e",
    "SELECT from_json('[{\"a\":1},{\"a\":2}]', 'array<struct<a:int>>') AS r",
    "SELECT from_json('{\"a\":1}', 'array<struct<a:int>>') AS one, from_json('[]', 'array<int>') AS e",
    "SELECT from_json('[1,2,\"x\"]', 'array<int>') AS r, from_json('xx', 'array<int>') AS bad",
    "SELECT from_json('{\"k\":1,\"j\":2}', 'map<string,int>') AS m, from_json('{\"k\":\"x\"}', 'map<string,int>') AS bad",
    'SELECT from_json(\'{"a":{"b":"x","c":2}}\', \'a struct<b:int,c:int>\') AS r',
    "SELECT from_json('{\"a\":1, \"a\":2}', 'a INT') AS dup, from_json('{\"A\":1}', 'a INT') AS upper",
    "SELECT from_json('{\"a\":1}', 'a INT NOT NULL, b STRING COMMENT \"x\"') AS r",
    "SELECT from_json('{\"a\":1} xyz', 'a INT') AS tail",
    "SELECT from_json('xx', 'a INT, _corrupt_record STRING') AS r, "
    "from_json('{\"a\":\"q\"}', 'a INT, _corrupt_record STRING') AS half",
    "SELECT from_json('{\"t\":\"02/01/2020\"}', 't DATE', map('dateFormat','dd/MM/yyyy')) AS r",
    "SELECT from_json('{\"t\":\"2020-01-02 03:04:05\"}', 't TIMESTAMP') AS r",
    'SELECT from_json(\'{"a":1}\', \'{"type":"struct","fields":[{"name":"a","type":"integer",'
    '"nullable":true,"metadata":{}}]}\') AS r',
    "SELECT from_json('{\"a\":1}', schema_of_json('{\"a\":1}')) AS r",
    # to_json
    "SELECT to_json(named_struct('a',1,'b',CAST(NULL AS STRING),'c',array(1,2),'d',map('k',1.5D))) AS r",
    "SELECT to_json(array(named_struct('a',1))) AS r, to_json(map('a',named_struct('b',1))) AS m",
    "SELECT to_json(named_struct('t',TIMESTAMP'2020-01-02 03:04:05.123', 'd', DATE'2020-01-02', "
    "'x', X'0102', 'f', CAST('NaN' AS DOUBLE), 'g', 1.0E20D, 'dec', 1.50BD)) AS r",
    "SELECT to_json(named_struct('t',TIMESTAMP'2020-01-02 03:04:05'), map('timestampFormat','yyyy/MM/dd')) AS r",
    "SELECT to_json(named_struct('a',CAST(NULL AS INT)), map('ignoreNullFields','false')) AS r",
    "SELECT to_json(CAST(NULL AS STRUCT<a:INT>)) AS r, to_json(map(1, 'a')) AS m",
    "SELECT to_json(named_struct('s', 'é\"\\n\\t')) AS r",
    # schema_of_json
    'SELECT schema_of_json(\'{"a":1, "b":[1.5, null], "c":{"d":"x"}, "e":null}\') AS r',
    "SELECT schema_of_json('[1,2]') AS a, schema_of_json('1.5') AS d, schema_of_json('\"s\"') AS s",
    "SELECT schema_of_json('{\"a\":1.5}', map('prefersDecimal','true')) AS r",
    "SELECT schema_of_json('{\"a\":{}}') AS r, schema_of_json('{\"a\":[]}') AS e",
    # get_json_object
    'SELECT get_json_object(\'{"a":{"b":[1,2,{"c":"x"}]}}\', \'$.a.b[2].c\') AS r',
    'SELECT get_json_object(\'{"a":[{"b":1},{"b":2}]}\', \'$.a[*].b\') AS r, '
    "get_json_object('{\"a\":[\"x\"]}', '$.a[*]') AS one",
    "SELECT get_json_object('{\"a\":[[1,2],[3]]}', '$.a[*][*]') AS r, "
    "get_json_object('{\"a\":[[1,2],[3]]}', '$.a[0][*]') AS first",
    "SELECT get_json_object('{\"a\":null}', '$.a') AS n, get_json_object('xx', '$.a') AS bad, "
    "get_json_object('{\"a\":1}', 'a') AS no_root, get_json_object('{\"a\":1.50}', '$.a') AS f",
    "SELECT get_json_object('{\"a\":1, \"b\":}', '$.a') AS broken, get_json_object('{\"a\":1} x', '$.a') AS tail, "
    "get_json_object('{\"a\":\"\\\\u00e9\\\\n\"}', '$.a') AS esc, get_json_object('{\"a\":[\"\\\\n\"]}', '$.a') AS inner",
    "SELECT get_json_object('{\"a\":1}', '$.*') AS star, get_json_object('{\"a b\":1}', '$[\\'a b\\']') AS quoted",
    # from_csv, to_csv, schema_of_csv
    "SELECT from_csv('1,abc', 'a INT, b STRING') AS r, from_csv('1', 'a INT, b STRING') AS short",
    "SELECT from_csv('1,2,3', 'a INT, b STRING') AS r, from_csv('x,abc', 'a INT, b STRING') AS bad",
    "SELECT from_csv('', 'a INT, b STRING') AS r, from_csv(CAST(NULL AS STRING), 'a INT') AS n",
    "SELECT from_csv('\"a,b\",c', 'a STRING, b STRING') AS r, from_csv('1;2', 'a INT, b INT', map('sep',';')) AS s",
    "SELECT from_csv('26/08/2015', 'time Timestamp', map('timestampFormat', 'dd/MM/yyyy')) AS r",
    "SELECT from_csv('1.5,true,2020-01-01, x ', 'a DOUBLE, b BOOLEAN, c DATE, d STRING') AS r",
    "SELECT from_csv('x,abc', 'a INT, b STRING, _corrupt_record STRING') AS r",
    "SELECT from_csv('1,,3', 'a INT, b STRING, c INT') AS r, from_csv('1,\"\",3', 'a INT, b STRING, c INT') AS q, "
    "from_csv('1,NA,3', 'a INT, b STRING, c INT', map('nullValue','NA')) AS na",
    "SELECT schema_of_csv('1,abc') AS r, schema_of_csv('1|2', map('sep','|')) AS s",
    "SELECT schema_of_csv('1.5,true,2020-01-01,2020-01-01 10:00:00,x,') AS r",
    "SELECT schema_of_csv('12345678901,1e10,\"q,r\"') AS r",
    "SELECT to_csv(named_struct('a', 1, 'b', 'x,y', 'c', CAST(NULL AS INT), 'd', 'q\"t')) AS r",
    "SELECT to_csv(named_struct('t', TIMESTAMP'2020-01-02 03:04:05.5', 'd', DATE'2020-01-02', 'f', 1.5D, "
    "'n', CAST('NaN' AS DOUBLE))) AS r",
    "SELECT to_csv(named_struct('a', 1, 'b', 2), map('sep', '|')) AS r, to_csv(named_struct('a', ' x ', 'b', '')) AS t",
    "SELECT to_csv(named_struct('a', array(1,2))) AS r, to_csv(CAST(NULL AS STRUCT<a:INT>)) AS n",
    "SELECT to_csv(named_struct('a', 1.50BD, 'b', true, 'c', TIMESTAMP_NTZ'2020-01-01 00:00:00')) AS r",
    # AES: Spark's ciphertexts with given IVs, and Spark's own ciphertext decrypted
    "SELECT hex(aes_encrypt('Spark', '0000111122223333', 'ECB')) AS ecb, "
    "hex(aes_encrypt('Spark', '000011112222333344445555', 'ECB', 'PKCS')) AS k24, hex(aes_encrypt('', '0000111122223333', 'ECB')) AS e",
    "SELECT hex(aes_encrypt('Spark', 'abcdefghijklmnop12345678ABCDEFGH', 'GCM', 'DEFAULT', "
    "unhex('000000000000000000000000'), 'This is an AAD mixed into the input')) AS r",
    "SELECT CAST(aes_decrypt(unhex('6E7CA17BBB468D3084B5744BCA729FB7B2B7BCB8E4472847D02670489D95FA97DBBA7D3210'), "
    "'0000111122223333', 'GCM') AS STRING) AS r, try_aes_decrypt(unhex('0011'), '0000111122223333') AS t, "
    "aes_encrypt(CAST(NULL AS STRING), '0000111122223333') AS n",
    # json_tuple
    "SELECT json_tuple('{\"a\":1,\"b\":{\"c\":2},\"d\":\"x\",\"e\":null}', 'a', 'b', 'd', 'e', 'zz')",
    "SELECT json_tuple('xx', 'a'), 1 AS one",
    "SELECT j, x, y FROM VALUES ('{\"a\":1, \"b\":[1, 2.50]}'), ('[1]'), (NULL) AS t(j) "
    "LATERAL VIEW json_tuple(j, 'a', 'b') jt AS x, y ORDER BY j NULLS FIRST",
    "SELECT json_tuple(j, 'a', 'a') FROM VALUES ('{\"a\":1, \"a\":2}'), ('{\"a\":1, \"a\":null}') AS t(j)",
]


@pytest.mark.parametrize("sql", SQL_FORMS)
def test_json_functions_in_sql_match_pyspark(spark, sql):
    """Values, names and types of each SQL form, as PySpark's."""
    got = fs.Session().sql(sql).toArrow()
    want = spark.sql(sql).toArrow()
    assert got.schema.names == want.schema.names
    assert [str(t) for t in got.schema.types] == [str(t) for t in want.schema.types]
    assert arrow_rows(got) == arrow_rows(want)


@pytest.mark.parametrize(
    ("sql", "error_class"),
    [
        ("SELECT from_json('1', 'int')", "INVALID_JSON_SCHEMA"),
        ("SELECT to_json(1)", "INVALID_JSON_SCHEMA"),
        ("SELECT from_json('xx', 'a INT', map('mode','FAILFAST'))", "MALFORMED_RECORD_IN_PARSING"),
        ("SELECT from_json('{\"a\":\"x\"}', 'a INT', map('mode','FAILFAST'))", "MALFORMED_RECORD_IN_PARSING"),
        ("SELECT from_json('xx', 'a INT', map('mode','DROPMALFORMED'))", "PARSE_MODE_UNSUPPORTED"),
        ("SELECT schema_of_json(NULL)", "UNEXPECTED_NULL"),
        ("SELECT json_tuple(NULL, 'a')", "NON_STRING_TYPE"),
        ("SELECT json_tuple('{}')", "WRONG_NUM_ARGS"),
        ("SELECT from_json(s, s) FROM VALUES ('a INT') AS t(s)", "INVALID_SCHEMA"),
        ("SELECT from_csv('1,abc', 'array<int>')", "INVALID_SCHEMA.NON_STRUCT_TYPE"),
        ("SELECT from_csv('1,abc', 'a struct<b:int>')", "UNSUPPORTED_DATATYPE"),
        (
            "SELECT from_csv('x,abc', 'a INT, b STRING', map('mode','FAILFAST'))",
            "MALFORMED_RECORD_IN_PARSING",
        ),
        ("SELECT schema_of_csv(NULL)", "UNEXPECTED_NULL"),
        ("SELECT to_csv(1)", "UNSUPPORTED_INPUT_TYPE"),
        ("SELECT aes_encrypt('Spark', '12345')", "AES_KEY_LENGTH"),
        ("SELECT aes_encrypt('Spark', '0000111122223333', 'XYZ')", "AES_MODE"),
        ("SELECT aes_encrypt('Spark', '0000111122223333', 'GCM', 'PKCS')", "AES_MODE"),
        ("SELECT aes_decrypt(unhex('0011'), '0000111122223333', 'GCM')", "AES_CRYPTO_ERROR"),
        ("SELECT aes_encrypt('Spark', '0000111122223333', 'ECB', 'DEFAULT', unhex('00'))", "AES_MODE_IV"),
        ("SELECT aes_encrypt('Spark', '0000111122223333', 'CBC', 'DEFAULT', unhex('00'))", "AES_IV_LENGTH"),
        (
            "SELECT aes_encrypt('x', '0000111122223333', 'CBC', 'DEFAULT', unhex('00000000000000000000000000000000'), 'a')",
            "AES_MODE_AAD",
        ),
    ],
)
def test_json_function_refusals_are_sparks(spark, sql, error_class):
    assert_both_refuse(spark, sql, error_class)


def test_json_tuple_as_a_column_matches_pyspark(spark):
    """``F.json_tuple`` in a select list beside other columns: Spark's ``c0``, ``c1`` names."""
    import pyspark.sql.functions as P

    docs = ['{"a": 1, "b": "x"}', '{"a": [1, {"c": null}]}', "broken", None, '{"b": "日本 😀"}']
    table = pa.table({"id": list(range(len(docs))), "j": docs})
    got = (
        fs.Session().createDataFrame(table).select("id", F.json_tuple("j", "a", "b")).orderBy("id").toArrow()
    )
    sdf = spark.createDataFrame([(i, d) for i, d in enumerate(docs)], "id long, j string")
    want = sdf.select("id", P.json_tuple("j", "a", "b")).orderBy("id").toArrow()
    assert got.schema.names == want.schema.names == ["id", "c0", "c1"]
    assert arrow_rows(got) == arrow_rows(want)


def test_from_json_round_trips_to_json_over_many_rows():
    """``from_json(to_json(s))`` gives ``s`` back, over batches of odd sizes (the values
    buffer of a sliced string array)."""
    s = fs.Session()
    df = s.sql(
        "SELECT id, named_struct('a', id, 'b', CAST(id AS STRING) || 'é', 'c', array(id, NULL)) AS s "
        "FROM range(0, 20000, 1, 3)"
    )
    back = df.select("id", F.from_json(F.to_json("s"), "a BIGINT, b STRING, c ARRAY<BIGINT>").alias("t"))
    same = back.filter(
        (F.col("t.a") == F.col("id"))
        & (F.col("t.b") == F.concat(F.col("id").cast("string"), F.lit("é")))
        & (F.size("t.c") == 2)
    ).count()
    assert same == 20000
