"""Hash joins (issue 4, first part) against PySpark: every join type with every hash strategy
that can run it, on data with NULL keys, duplicate and skewed keys, unicode strings, decimals,
doubles (NaN, -0.0), several keys, null-safe equality, residual conditions and empty sides.
Columns are compared by name and order, rows as multisets."""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

import ferrospark as fs
from helpers import arrow_rows, assert_same_rows, spark_rows

pytestmark = pytest.mark.spark

NAN = float("nan")


def _side(seed: int, n: int, prefix: str) -> pa.Table:
    rng = random.Random(seed)
    words = ["a", "é", "b", "", "日本", None]
    k = [None if rng.random() < 0.08 else (0 if rng.random() < 0.3 else rng.randint(1, 25)) for _ in range(n)]
    s = [rng.choice(words) for _ in range(n)]
    d = [None if rng.random() < 0.1 else Decimal(rng.randint(-300, 300)).scaleb(-2) for _ in range(n)]
    f = [rng.choice([0.0, -0.0, NAN, 1.5, None]) for _ in range(n)]
    v = [rng.randint(-100, 100) for _ in range(n)]
    return pa.table(
        {
            "k": pa.array(k, pa.int32()),
            "s": pa.array(s, pa.string()),
            "d": pa.array(d, pa.decimal128(9, 2)),
            "f": pa.array(f, pa.float64()),
            f"{prefix}v": pa.array(v, pa.int64()),
        }
    )


LEFT = _side(1, 400, "l")
RIGHT = _side(2, 300, "r")
HOWS = ["inner", "left", "right", "full", "semi", "anti"]
# Which hash strategies Spark can run for each join type.
STRATEGIES = {
    "inner": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge", "nested_loop", "cartesian"],
    "left": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge", "nested_loop"],
    "right": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge", "nested_loop"],
    "full": ["auto", "shuffle_hash", "sort_merge", "nested_loop"],
    "semi": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge", "nested_loop"],
    "anti": ["auto", "broadcast_hash", "shuffle_hash", "sort_merge", "nested_loop"],
}


def _check(spark, got: pa.Table, expected, context: str) -> None:
    """``expected`` is a Spark DataFrame or its ``_answer`` (collected once for many strategies)."""
    columns, rows = expected if isinstance(expected, tuple) else _answer(expected)
    assert got.column_names == columns, context
    assert_same_rows(rows, arrow_rows(got), context)


def _answer(df) -> tuple[list[str], list[tuple]]:
    return df.columns, spark_rows(df)


@pytest.fixture(scope="module")
def frames(spark):
    return spark.createDataFrame(LEFT), spark.createDataFrame(RIGHT)


@pytest.fixture(scope="module")
def using_answers(frames):
    """Spark's answer to ``LEFT.join(RIGHT, on, how)``, computed once for every strategy and
    every test that asks for it (Spark's oracle does not depend on ferrospark's settings)."""
    ldf, rdf = frames
    answers: dict = {}

    def answer(on, how):
        key = (tuple(on) if isinstance(on, list) else on, how)
        if key not in answers:
            answers[key] = _answer(ldf.join(rdf, on, how))
        return answers[key]

    return answer


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("on", ["k", ["k", "s"], ["d"], ["f"]])
def test_using_join_matches_spark(spark, using_answers, how, on):
    expected = using_answers(on, how)
    for strategy in STRATEGIES[how]:
        got = fs.join(LEFT, RIGHT, on, how, strategy=strategy)
        _check(spark, got, expected, f"on={on} how={how} strategy={strategy} ({fs.last_join_plan()})")


@pytest.mark.parametrize("how", HOWS)
def test_condition_join_with_residual_matches_spark(spark, frames, how):
    ldf, rdf = frames
    right = RIGHT.rename_columns(["rk", "rs", "rd", "rf", "rv"])
    rdf2 = rdf.toDF(*right.column_names)
    cond_spark = (ldf.k == rdf2.rk) & (ldf.s == rdf2.rs) & (ldf.lv < rdf2.rv)
    expected = _answer(ldf.join(rdf2, cond_spark, how))
    cond = (fs.col("k") == fs.col("rk")) & (fs.col("s") == fs.col("rs")) & (fs.col("lv") < fs.col("rv"))
    for strategy in STRATEGIES[how]:
        got = fs.join(LEFT, right, cond, how, strategy=strategy)
        _check(spark, got, expected, f"condition how={how} strategy={strategy}")


@pytest.mark.parametrize("how", HOWS)
def test_spilling_sort_merge_and_hash_fall_back_match_spark(spark, using_answers, how):
    """Under a limit of a few KB both sides are sorted in spilled runs (and a shuffled hash
    join falls back to sort-merge): same answer as Spark, over NaN, -0.0, decimals, unicode."""
    # A semi or anti join builds only the right side's keys (the optimizer prunes the rest):
    # a smaller limit makes them spill too.
    limit = "2k" if how in ("semi", "anti") else "8k"
    session = fs.Session(conf={"ferrospark.memory.limit": limit, "ferrospark.batch.size": "64"})
    left = pa.Table.from_batches(LEFT.to_batches(max_chunksize=50))
    right = pa.Table.from_batches(RIGHT.to_batches(max_chunksize=50))
    for on in ["k", ["k", "s"], ["d"], ["f"]]:
        expected = using_answers(on, how)
        for strategy in ["sort_merge", "shuffle_hash"]:
            got = session.join(left, right, on, how, strategy=strategy)
            metrics = fs.last_join_metrics()
            assert metrics["spill_count"] > 0, (strategy, metrics)
            _check(spark, got, expected, f"spilling on={on} how={how} {fs.last_join_plan()}")


@pytest.mark.parametrize("how", ["inner", "left", "full", "anti"])
def test_null_safe_equality_matches_spark(spark, frames, how):
    ldf, rdf = frames
    right = RIGHT.rename_columns(["rk", "rs", "rd", "rf", "rv"])
    rdf2 = rdf.toDF(*right.column_names)
    expected = ldf.join(rdf2, ldf.k.eqNullSafe(rdf2.rk) & ldf.s.eqNullSafe(rdf2.rs), how)
    got = fs.join(LEFT, right, None, how, condition="k <=> rk AND s <=> rs", strategy="shuffle_hash")
    _check(spark, got, expected, f"null-safe how={how}")


@pytest.mark.parametrize("how", HOWS)
def test_empty_sides_match_spark(spark, frames, how):
    ldf, rdf = frames
    for left, right, lsdf, rsdf in [
        (LEFT.slice(0, 0), RIGHT, ldf.limit(0), rdf),
        (LEFT, RIGHT.slice(0, 0), ldf, rdf.limit(0)),
    ]:
        expected = lsdf.join(rsdf, "k", how)
        got = fs.join(left, right, "k", how)
        _check(spark, got, expected, f"empty side how={how}")


def test_auto_broadcasts_a_small_side_and_shuffles_otherwise():
    small = RIGHT.slice(0, 10)
    fs.join(LEFT, small, "k", "inner")
    assert fs.last_join_plan().startswith("broadcast_hash"), fs.last_join_plan()
    s = fs.Session(conf={"spark.sql.autoBroadcastJoinThreshold": "-1"})
    s.join(LEFT, small, "k", "inner")
    # Where Spark sort-merges what it does not broadcast, one process builds a hash table on
    # the smaller side (falling back to a sort-merge join past the memory limit).
    assert fs.last_join_plan().startswith("shuffle_hash: ShuffledHashJoin"), fs.last_join_plan()
    assert "BuildRight" in fs.last_join_plan(), fs.last_join_plan()
    # a side too big to broadcast but small enough for a partition's hash map, 3x smaller
    s = fs.Session(
        conf={"spark.sql.autoBroadcastJoinThreshold": "100", "spark.sql.join.preferSortMergeJoin": "false"}
    )
    s.join(LEFT, small, "k", "inner")
    assert fs.last_join_plan().startswith("shuffle_hash"), fs.last_join_plan()
    # the smaller side is built
    fs.join(small, LEFT, "k", "inner", strategy="shuffle_hash")
    assert "BuildLeft" in fs.last_join_plan(), fs.last_join_plan()
    m = fs.last_join_metrics()
    # NULL keys never match: the inferred IsNotNull filter drops them before the join.
    non_null = [t.num_rows - t.column("k").null_count for t in (small, LEFT)]
    assert [m["build_rows"], m["probe_rows"]] == non_null, m


def test_bad_joins_are_clear_errors():
    with pytest.raises(fs.ConfigError, match="broadcast_hash join cannot run this FullOuter join"):
        fs.join(LEFT, RIGHT, "k", "full", strategy="broadcast_hash")
    with pytest.raises(fs.ConfigError, match="cartesian join cannot run this LeftOuter join"):
        fs.join(LEFT, RIGHT, "k", "left", strategy="cartesian")
    with pytest.raises(fs.ConfigError, match="unknown join type"):
        fs.join(LEFT, RIGHT, "k", "sideways")
    with pytest.raises(
        fs.ConfigError, match="sort_merge join cannot run this LeftOuter join: it needs equality keys"
    ):
        fs.join(
            LEFT, RIGHT.rename_columns(["rk", "rs", "rd", "rf", "rv"]), None, "left", "lv < rv", "sort_merge"
        )
    with pytest.raises(fs.AnalysisError, match="UNRESOLVED_USING_COLUMN_FOR_JOIN.*right side"):
        fs.join(LEFT, RIGHT.drop_columns(["k"]), "k")
    with pytest.raises(fs.AnalysisError, match="AMBIGUOUS_REFERENCE.*`k`"):
        fs.join(LEFT, RIGHT, fs.col("k") == fs.col("rv"))
    with pytest.raises(fs.AnalysisError, match="DATATYPE_MISMATCH.*INT.*BINARY"):
        as_bytes = pa.array([None if v is None else str(v).encode() for v in RIGHT.column("k").to_pylist()])
        fs.join(LEFT, RIGHT.set_column(0, "k", as_bytes), "k")


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "semi", "anti"])
def test_non_equi_join_matches_spark(spark, frames, how):
    ldf, rdf = frames
    right = RIGHT.rename_columns(["rk", "rs", "rd", "rf", "rv"])
    rdf2 = rdf.toDF(*right.column_names)
    expected = ldf.join(rdf2, (ldf.lv < rdf2.rv - 90) | (ldf.k > rdf2.rk + 20), how)
    got = fs.join(LEFT, right, None, how, condition="lv < rv - 90 OR k > rk + 20")
    _check(spark, got, expected, f"non-equi how={how} ({fs.last_join_plan()})")
    assert "NestedLoopJoin" in fs.last_join_plan()


def test_cross_join_matches_spark(spark, frames):
    ldf, rdf = frames
    left, right = LEFT.slice(0, 40), RIGHT.slice(0, 30).rename_columns(["rk", "rs", "rd", "rf", "rv"])
    expected = _answer(ldf.limit(40).crossJoin(rdf.limit(30).toDF(*right.column_names)))
    for strategy in ["auto", "cartesian", "nested_loop"]:
        got = fs.join(left, right, how="cross", strategy=strategy)
        assert got.num_rows == 1200
        _check(spark, got, expected, f"cross {strategy}")


@pytest.mark.parametrize("how", ["inner", "left", "semi", "anti", "right", "full"])
def test_many_probe_batches_on_several_threads_match_spark(spark, using_answers, how):
    chunked = pa.Table.from_batches(LEFT.to_batches(max_chunksize=37))
    s = fs.Session(conf={"ferrospark.scan.threads": "3"})
    got = s.join(chunked, RIGHT, "k", how, strategy="shuffle_hash")
    _check(spark, got, using_answers("k", how), f"chunked probe how={how}")
    assert fs.last_join_metrics()["probe_batches"] == chunked.to_batches().__len__() or how in (
        "right",
        "full",
    )


@pytest.mark.parametrize("how", ["inner", "left", "right", "full", "anti"])
def test_keys_of_different_types_compare_as_spark_widens_them(spark, how):
    left = LEFT.select(["k", "lv"])
    right = RIGHT.select(["k", "rv"]).set_column(0, "k", RIGHT.column("k").cast(pa.int64()))
    columns, rows = _answer(spark.createDataFrame(left).join(spark.createDataFrame(right), "k", how))
    for strategy in STRATEGIES[how][:3]:
        got = fs.join(left, right, "k", how, strategy=strategy)
        assert_same_rows(rows, arrow_rows(got), f"int vs bigint {how} {strategy}")
        assert got.column_names == columns


def test_null_aware_anti_join_is_spark_not_in(spark):
    """``how="null_aware_anti"`` is ``WHERE k NOT IN (SELECT k FROM right)``: an empty right
    side keeps every row, a NULL right key none, a NULL left key drops its row."""
    left = LEFT.select(["k", "lv"])
    right_sets = {
        "with NULL": RIGHT.select(["k"]),
        "without NULL": RIGHT.select(["k"]).filter(RIGHT.column("k").is_valid()),
        "empty": RIGHT.select(["k"]).slice(0, 0),
    }
    spark.createDataFrame(left).createOrReplaceTempView("naaj_l")
    for name, right in right_sets.items():
        schema = "k INT" if right.num_rows == 0 else None
        spark.createDataFrame(right.to_pylist() if schema else right, schema).createOrReplaceTempView(
            "naaj_r"
        )
        expected = spark.sql("SELECT * FROM naaj_l WHERE k NOT IN (SELECT k FROM naaj_r)")
        got = fs.join(left, right, "k", "null_aware_anti")
        assert fs.last_join_plan().startswith("broadcast_hash"), fs.last_join_plan()
        _check(spark, got, expected, f"NOT IN, right side {name}")
        assert expected.count() == got.num_rows


def test_a_build_side_over_the_memory_limit_says_so():
    s = fs.Session(conf={"ferrospark.memory.limit": "4k"})
    with pytest.raises(fs.MemoryLimitError, match="ferrospark.memory.limit"):
        s.join(LEFT, RIGHT, "k", "inner", strategy="broadcast_hash")
    with pytest.raises(fs.ConfigError, match="cross join takes no"):
        fs.join(LEFT, RIGHT, "k", "cross")
    with pytest.raises(fs.ConfigError, match="unknown join strategy"):
        fs.join(LEFT, RIGHT, "k", strategy="teleport")
