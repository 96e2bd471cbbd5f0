"""Join hints in SQL text (`/*+ BROADCAST(t) */`, `MERGE`, `SHUFFLE_HASH`,
`SHUFFLE_REPLICATE_NL`): the plan uses the hinted strategy (EXPLAIN says so) and the answer is
Spark's."""

from __future__ import annotations

import contextlib
import io

import pyarrow as pa
import pytest

import ferrospark as fs
from helpers import arrow_rows, assert_same_rows, spark_rows


def _tables() -> tuple[pa.Table, pa.Table]:
    facts = pa.table({"k": [i % 17 for i in range(500)], "v": list(range(500))})
    dims = pa.table({"k": list(range(20)), "name": [f"n{i}" if i % 5 else None for i in range(20)]})
    return facts, dims


@pytest.fixture(scope="module")
def sessions(spark):
    facts, dims = _tables()
    s = fs.Session()
    s.createDataFrame(facts).createOrReplaceTempView("facts")
    s.createDataFrame(dims).createOrReplaceTempView("dims")
    spark.createDataFrame(facts.to_pandas()).createOrReplaceTempView("facts")
    spark.createDataFrame(dims.to_pandas()).createOrReplaceTempView("dims")
    return s, spark


def _plan(df) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain()
    return out.getvalue()


@pytest.mark.parametrize(
    "hint,operator",
    [
        ("BROADCAST(d)", "BroadcastHashJoin"),
        ("BROADCASTJOIN(d)", "BroadcastHashJoin"),
        ("MERGE(f)", "SortMergeJoin"),
        ("SHUFFLE_HASH(d)", "ShuffledHashJoin"),
        ("SHUFFLE_REPLICATE_NL(d)", "CartesianProduct"),
    ],
)
def test_hint_picks_the_strategy_and_keeps_the_answer(sessions, hint, operator):
    s, spark = sessions
    text = f"SELECT /*+ {hint} */ f.v, d.name FROM facts f JOIN dims d ON f.k = d.k WHERE f.v < 300"
    df = s.sql(text)
    assert operator in _plan(df), _plan(df)
    assert_same_rows(spark_rows(spark.sql(text)), arrow_rows(df.toArrow()), hint)


def test_no_hint_and_unknown_hints_leave_the_choice_to_join_selection(sessions):
    s, _ = sessions
    for text in [
        "SELECT f.v FROM facts f JOIN dims d ON f.k = d.k",
        "SELECT /*+ REPARTITION(4) */ f.v FROM facts f JOIN dims d ON f.k = d.k",
    ]:
        plan = _plan(s.sql(text))
        assert "SortMergeJoin" not in plan and "Join" in plan, plan


@pytest.mark.parametrize(
    "hint,operator",
    [
        ("broadcast", "BroadcastHashJoin"),
        ("merge", "SortMergeJoin"),
        ("shuffle_hash", "ShuffledHashJoin"),
        ("shuffle_replicate_nl", "CartesianProduct"),
    ],
)
def test_dataframe_hint_picks_the_strategy_and_keeps_the_answer(sessions, hint, operator):
    """``df.hint(name)`` and ``F.broadcast(df)`` ask the next join for Spark's strategy, as
    the SQL hint does; the answer is PySpark's for the same hint."""
    from pyspark.sql import functions as SF

    from ferrospark import functions as F

    s, spark = sessions
    # Off by default: without the hint these small sides would be broadcast anyway.
    s2 = fs.Session(conf={"spark.sql.autoBroadcastJoinThreshold": "-1"})
    facts, dims = (s2.createDataFrame(t) for t in _tables())
    df = facts.filter(F.col("v") < 300).join(dims.hint(hint), "k").select("v", "name")
    assert operator in _plan(df), _plan(df)
    expected = (
        spark.table("facts")
        .filter(SF.col("v") < 300)
        .join(spark.table("dims").hint(hint), "k")
        .select("v", "name")
    )
    assert_same_rows(spark_rows(expected), arrow_rows(df.toArrow()), hint)
    if hint == "broadcast":
        via_function = facts.join(F.broadcast(dims), "k")
        assert "BroadcastHashJoin" in _plan(via_function), _plan(via_function)
    # Other hints say nothing to one process and leave the choice to join selection.
    plain, unhinted = _plan(facts.join(dims.hint("repartition", 4), "k")), _plan(facts.join(dims, "k"))
    assert plain == unhinted, (plain, unhinted)
