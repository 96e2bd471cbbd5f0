"""Spark's SQL golden tests (``shared/conformance/spark-sql-tests``) run through ferrospark.

The golden files are the oracle: each ``results/**/*.sql.out`` holds every query of its file
with the schema and output Spark printed for it, so no JVM is needed. The runner scores each
block as Spark's ``SQLQueryTestSuite`` does:

* a **row** block passes when the rows, printed as Spark's ``hiveResultString`` (columns joined
  by a TAB), equal Spark's; rows are compared sorted unless the query ends in a global
  ``ORDER BY``. Its schema line (``struct<name:type,...>``) is scored on its own;
* an **error** block passes when ferrospark refuses the query with the same error class
  (``[CLASS]`` in the message); the few golden errors without a class pass on any refusal;
* a **command** block (``struct<>`` with no output) passes when it runs.

Each file runs in a fresh session with the manifest's settings (ANSI on, session time zone
``America/Los_Angeles``) and preloaded tables, in a child process of its own, so a query that
hangs or kills the interpreter costs its file, not the run.

    python tests/conformance/runner.py                   # the per-file table and totals
    python tests/conformance/runner.py --only count      # files whose path contains "count"
    python tests/conformance/runner.py --show-failures   # each failing block, expected vs got
    python tests/conformance/runner.py --update          # grow passing.txt (the ratchet) to today's passes
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import decimal
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RATCHET = HERE / "passing.txt"


def golden_root() -> Path:
    """``shared/conformance/spark-sql-tests`` beside the checkout (``FERROSPARK_SQL_TESTS`` overrides)."""
    env = os.environ.get("FERROSPARK_SQL_TESTS")
    if env:
        return Path(env)
    return HERE.parents[2] / "shared" / "conformance" / "spark-sql-tests"


# ---------------------------------------------------------------------------------------------
# The golden files
# ---------------------------------------------------------------------------------------------

_EXCEPTION_LINE = re.compile(r"^[A-Za-z_$][\w$]*(\.[\w$]+)+$")
_ERROR_CLASS = re.compile(r'"errorClass" : "([^"]+)"')


@dataclass
class Block:
    """One ``-- !query`` block of a golden file."""

    index: int
    query: str
    schema: str
    output: str

    @property
    def kind(self) -> str:
        """``error``, ``command`` or ``rows``."""
        first = self.output.split("\n", 1)[0]
        if self.schema == "struct<>" and first and _EXCEPTION_LINE.match(first) and "Exception" in first:
            return "error"
        if self.schema == "struct<>" and first and first.startswith(("java.", "org.apache")):
            return "error"
        if self.schema == "struct<>" and not self.output:
            return "command"
        return "rows"

    @property
    def error_class(self) -> str | None:
        m = _ERROR_CLASS.search(self.output)
        return m.group(1) if m else None


def parse_golden(text: str) -> list[Block]:
    """The blocks of a ``.sql.out`` file, in order."""
    blocks = []
    for i, chunk in enumerate(text.split("-- !query\n")[1:]):
        query, _, rest = chunk.partition("\n-- !query schema\n")
        schema, _, output = rest.partition("\n-- !query output\n")
        blocks.append(Block(i, query.strip(), schema.strip(), output.rstrip("\n")))
    return blocks


def golden_files(root: Path) -> list[Path]:
    return sorted((root / "results").rglob("*.sql.out"))


def file_id(root: Path, path: Path) -> str:
    return str(path.relative_to(root / "results"))


# ---------------------------------------------------------------------------------------------
# Spark's hiveResultString
# ---------------------------------------------------------------------------------------------


def java_double(v: float, single: bool = False) -> str:
    """``Double.toString`` / ``Float.toString``, as Spark prints doubles and floats."""
    from ferrospark._java import java_double_text

    return java_double_text(v, single)


def _fraction(micros: int) -> str:
    if micros == 0:
        return ""
    return "." + f"{micros:06d}".rstrip("0")


def _timestamp(v: dt.datetime) -> str:
    # Spark pads the year to four digits (`0001-01-01`); strftime's %Y does not on glibc.
    return f"{v.year:04d}-{v:%m-%d %H:%M:%S}" + _fraction(v.microsecond)


def _day_time(td: dt.timedelta) -> str:
    total = td.days * 86_400_000_000 + td.seconds * 1_000_000 + td.microseconds
    sign = "-" if total < 0 else ""
    total = abs(total)
    days, rest = divmod(total, 86_400_000_000)
    hours, rest = divmod(rest, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, micros = divmod(rest, 1_000_000)
    return f"{sign}{days} {hours:02d}:{minutes:02d}:{seconds:02d}.{micros:06d}000"


def hive_string(value: object, typ: object, zone: object, nested: bool = False) -> str:
    """One value as Spark's ``HiveResult.toHiveString`` prints it (``typ`` a field or a type)."""
    import pyarrow as pa

    if value is None:
        return "null" if nested else "NULL"
    spark_type = None
    if isinstance(typ, pa.Field):
        md = typ.metadata or {}
        spark_type = md.get(b"ferrospark:spark_type", b"").decode() or None
        typ = typ.type
    t: pa.DataType = typ  # type: ignore[assignment]
    if pa.types.is_boolean(t):
        return "true" if value else "false"
    if pa.types.is_floating(t):
        return java_double(float(value), single=pa.types.is_float32(t) or pa.types.is_float16(t))
    if pa.types.is_decimal(t):
        return format(value, "f") if isinstance(value, decimal.Decimal) else str(value)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return f'"{value}"' if nested else str(value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes(value).decode("utf-8", errors="replace")
    if pa.types.is_timestamp(t):
        if t.tz is not None and zone is not None:
            value = value.astimezone(zone)
        return _timestamp(value)
    if pa.types.is_date(t):
        return value.isoformat() if value.year >= 1 else str(value)
    if pa.types.is_duration(t):
        return _day_time(value)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "[" + ",".join(hive_string(v, t.value_field, zone, True) for v in value) + "]"
    if pa.types.is_map(t):
        return (
            "{"
            + ",".join(
                f"{hive_string(k, t.key_field, zone, True)}:{hive_string(v, t.item_field, zone, True)}"
                for k, v in value
            )
            + "}"
        )
    if pa.types.is_struct(t):
        return "{" + ",".join(f'"{f.name}":{hive_string(value[f.name], f, zone, True)}' for f in t) + "}"
    if pa.types.is_interval(t):
        months, days, nanos = value.months, value.days, value.nanoseconds
        if spark_type == "interval year to month":
            sign = "-" if months < 0 else ""
            return f"{sign}{abs(months) // 12}-{abs(months) % 12}"
        from ferrospark._types import calendar_text

        return calendar_text(months, days, nanos // 1000)
    return str(value)


def hive_rows(table: object, zone: object, as_text: Callable[[object], list] | None = None) -> list[str]:
    """Each row of an Arrow table as Spark's runner prints it. A date or timestamp column
    Python's calendar cannot hold (years after 9999 or before 1) is printed by ``as_text``
    (the engine's own CAST to STRING, which prints Spark's `+99999-03-18`)."""
    import pyarrow as pa

    cols = table.columns  # type: ignore[attr-defined]
    types = list(table.schema)  # type: ignore[attr-defined]
    values = []
    text_cols = set()
    for k, c in enumerate(cols):
        try:
            values.append(c.to_pylist())
        except (OverflowError, ValueError):
            if as_text is None or not (pa.types.is_date(c.type) or pa.types.is_timestamp(c.type)):
                raise
            values.append(as_text(c))
            text_cols.add(k)

    def cell(c: int, r: int) -> str:
        v = values[c][r]
        if c in text_cols:
            return "NULL" if v is None else str(v)
        return hive_string(v, types[c], zone)

    return [
        "\t".join(cell(c, r) for c in range(len(cols)))
        for r in range(table.num_rows)  # type: ignore[attr-defined]
    ]


def _engine_text(session: object, column: object) -> list:
    """``column`` cast to STRING by ferrospark in the session's zone."""
    import pyarrow as pa

    session.createDataFrame(pa.table({"v": column})).createOrReplaceTempView("__runner_text")  # type: ignore[attr-defined]
    out = session.sql("SELECT CAST(v AS STRING) AS v FROM __runner_text").toArrow()  # type: ignore[attr-defined]
    return out.column(0).to_pylist()


def schema_line(schema: object) -> str:
    from ferrospark._types import spark_type_name

    return "struct<" + ",".join(f"{f.name}:{spark_type_name(f)}" for f in schema) + ">"  # type: ignore[attr-defined]


def has_top_level_order_by(query: str) -> bool:
    """Whether the query's outermost level sorts its output (Spark's ``isSemanticallySorted``)."""
    depth, text = 0, []
    for ch in query:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            text.append(ch)
    flat = re.sub(r"\s+", " ", "".join(text).lower())
    return re.search(r"\border by\b|\bsort by\b", flat) is not None


# ---------------------------------------------------------------------------------------------
# Running one file (in a child process)
# ---------------------------------------------------------------------------------------------

ZONE = "America/Los_Angeles"


@dataclass
class Result:
    """The score of one block."""

    index: int
    kind: str
    passed: bool
    schema_ok: bool = False
    got: str = ""
    expected: str = ""


def _preload(session: object, root: Path) -> None:
    """The tables Spark's ``createTestTables`` creates before each file."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    s = session
    keys = list(range(1, 101))
    tables = {
        "testdata": pa.table({"key": pa.array(keys, pa.int32()), "value": [str(k) for k in keys]}),
        "arraydata": pa.table(
            {
                "arraycol": pa.array([[1, 2, 3], [2, 3, 4]], pa.list_(pa.int32())),
                "nestedarraycol": pa.array([[[1, 2, 3]], [[2, 3, 4]]], pa.list_(pa.list_(pa.int32()))),
            }
        ),
        "mapdata": pa.table(
            {
                "mapcol": pa.array(
                    [
                        [(1, "a1"), (2, "b1"), (3, "c1"), (4, "d1"), (5, "e1")],
                        [(1, "a2"), (2, "b2"), (3, "c2"), (4, "d2")],
                        [(1, "a3"), (2, "b3"), (3, "c3")],
                        [(1, "a4"), (2, "b4")],
                        [(1, "a5")],
                    ],
                    pa.map_(pa.int32(), pa.string()),
                )
            }
        ),
    }
    data = root / "data" / "postgresql"
    tenk_cols = (
        "unique1 unique2 two four ten twenty hundred thousand twothousand fivethous tenthous odd even".split()
    )
    tenk_types = {c: pa.int32() for c in tenk_cols} | {
        c: pa.string() for c in ("stringu1", "stringu2", "string4")
    }
    opts = pacsv.ParseOptions(delimiter="\t")
    for name, file, cols, types in (
        ("aggtest", "agg.data", ["a", "b"], {"a": pa.int32(), "b": pa.float32()}),
        ("onek", "onek.data", list(tenk_types), tenk_types),
        ("tenk1", "tenk.data", list(tenk_types), tenk_types),
    ):
        tables[name] = pacsv.read_csv(
            data / file,
            read_options=pacsv.ReadOptions(column_names=cols),
            parse_options=opts,
            convert_options=pacsv.ConvertOptions(column_types=types),
        )
    for name, table in tables.items():
        try:
            s.createDataFrame(table).createOrReplaceTempView(name)  # type: ignore[attr-defined]
        except Exception as e:  # a table ferrospark cannot hold yet: its blocks fail, the rest run
            print(f"preload {name}: {e}", file=sys.stderr)


def _error_class(message: str) -> str | None:
    # Spark's legacy classes start with an underscore (`_LEGACY_ERROR_TEMP_0029`).
    m = re.search(r"\[(_?[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]", message)
    return m.group(1) if m else None


def run_file(root: Path, path: Path) -> list[Result]:
    """Every block of one golden file, run in one fresh session."""
    import zoneinfo

    import ferrospark as fs

    rel = file_id(root, path)
    session = fs.Session()
    for key, value in (
        ("spark.sql.ansi.enabled", "true"),
        ("spark.sql.session.timeZone", ZONE),
        ("spark.sql.shuffle.partitions", "4"),
    ):
        try:
            session.set(key, value)
        except Exception as e:
            print(f"setting {key}: {e}", file=sys.stderr)
    if rel.startswith("postgreSQL/"):
        try:
            session.set("spark.sql.legacy.interval.enabled", "true")
        except Exception as e:
            print(f"setting legacy intervals: {e}", file=sys.stderr)
    _preload(session, root)
    zone = zoneinfo.ZoneInfo(ZONE)
    results = []
    for block in parse_golden(path.read_text(encoding="utf-8")):
        results.append(_run_block(session, block, zone))
    return results


def _run_block(session: object, block: Block, zone: object) -> Result:
    kind = block.kind
    res = Result(block.index, kind, False)
    try:
        df = session.sql(block.query)  # type: ignore[attr-defined]
        table = df.toArrow() if df is not None else None
    except BaseException as e:  # every refusal is scored, whatever its type
        if isinstance(e, KeyboardInterrupt):
            raise
        message = f"{type(e).__name__}: {e}"
        res.got = message[:2000]
        if kind == "error":
            want = block.error_class
            res.passed = want is None or _error_class(str(e)) == want
            res.expected = want or block.output.split("\n", 1)[0]
        else:
            res.expected = block.output[:2000]
        return res
    if kind == "error":
        res.expected = block.error_class or block.output.split("\n", 1)[0]
        res.got = "no error"
        return res
    if kind == "command":
        res.passed = True
        return res
    try:
        rows = hive_rows(table, zone, lambda c: _engine_text(session, c)) if table is not None else []
        schema = schema_line(table.schema) if table is not None else "struct<>"
    except Exception as e:
        res.got = f"formatting the result failed: {type(e).__name__}: {e}"
        res.expected = block.output[:2000]
        return res
    res.schema_ok = schema == block.schema
    # Spark's suite strips trailing whitespace (Java's `\s+$`) from a block's output.
    got = re.sub(r"[ \t\n\x0b\f\r]+$", "", "\n".join(rows))
    expected = block.output
    if got == expected:
        res.passed = True
    elif not has_top_level_order_by(block.query):
        res.passed = "\n".join(sorted(rows)) == expected or sorted(got.split("\n")) == sorted(
            expected.split("\n")
        )
    if not res.passed:
        res.got, res.expected = got[:2000], expected[:2000]
    if not res.schema_ok and res.passed:
        res.got, res.expected = schema, block.schema
    return res


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------


@dataclass
class FileScore:
    """A file's results, or why it has none."""

    file: str
    results: list[Result] = field(default_factory=list)
    crashed: str = ""
    seconds: float = 0.0


def _child(root: Path, rel: str) -> None:
    results = run_file(root, root / "results" / rel)
    sys.stdout.write("\n@@RESULTS@@" + json.dumps([asdict(r) for r in results]))
    sys.stdout.flush()


def score_file(root: Path, rel: str, timeout: float) -> FileScore:
    """Runs one file in a child process and collects its scores."""
    start = time.monotonic()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", rel, "--root", str(root)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return FileScore(rel, crashed=f"timed out after {timeout:.0f} s", seconds=time.monotonic() - start)
    _, marker, payload = proc.stdout.rpartition("@@RESULTS@@")
    if not marker:
        tail = (proc.stderr or proc.stdout)[-800:]
        return FileScore(rel, crashed=f"exit {proc.returncode}: {tail}", seconds=time.monotonic() - start)
    results = [Result(**r) for r in json.loads(payload)]
    return FileScore(rel, results, seconds=time.monotonic() - start)


def run_all(
    root: Path, only: str | None = None, jobs: int = 2, timeout: float = 300.0, files: list[str] | None = None
) -> list[FileScore]:
    """Scores every golden file (or those named in ``files``, or whose path contains ``only``)."""
    rels = files if files is not None else [file_id(root, p) for p in golden_files(root)]
    if only:
        rels = [r for r in rels if only in r]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda r: score_file(root, r, timeout), rels))


def block_counts(root: Path, rel: str) -> dict[str, int]:
    blocks = parse_golden((root / "results" / rel).read_text(encoding="utf-8"))
    counts = {"rows": 0, "error": 0, "command": 0}
    for b in blocks:
        counts[b.kind] += 1
    return counts


def passing_ids(scores: list[FileScore]) -> set[str]:
    return {f"{s.file}#{r.index}" for s in scores for r in s.results if r.passed}


#: Blocks where PySpark 4.3 (the oracle of the tests against PySpark) answers otherwise than
#: the golden files, which come from an older Spark; ferrospark follows PySpark 4.3 there, so
#: these blocks leave the ratchet.
CHANGED_SINCE_GOLDEN = {
    "timestamp.sql.out#80": "timestamp + NULL is a NULL TIMESTAMP in Spark 4.3, not BINARY_OP_DIFF_TYPES",
    "timestamp.sql.out#81": "NULL + timestamp is a NULL TIMESTAMP in Spark 4.3, not BINARY_OP_DIFF_TYPES",
    "decimalArithmeticOperations.sql.out#2": "a decimal % 0 is REMAINDER_BY_ZERO in Spark 4.3, not DIVIDE_BY_ZERO",
    "decimalArithmeticOperations.sql.out#3": "pmod(decimal, 0) is REMAINDER_BY_ZERO in Spark 4.3, not DIVIDE_BY_ZERO",
}


def read_ratchet() -> set[str]:
    if not RATCHET.exists():
        return set()
    return {
        line.strip() for line in RATCHET.read_text().splitlines() if line.strip() and not line.startswith("#")
    } - CHANGED_SINCE_GOLDEN.keys()


def write_ratchet(ids: set[str]) -> None:
    def key(i: str) -> tuple[str, int]:
        f, _, n = i.rpartition("#")
        return f, int(n)

    header = (
        "# Blocks of Spark's SQL golden tests that ferrospark passes (file#block, counted from 0).\n"
        "# tests/test_conformance.py fails when one of them stops passing; grow the list with\n"
        "# `python tests/conformance/runner.py --update`. It only grows.\n"
    )
    RATCHET.write_text(header + "".join(f"{i}\n" for i in sorted(ids, key=key)))


def table_text(root: Path, scores: list[FileScore]) -> str:
    """The per-file table and the totals."""
    lines = [
        f"{'file':<52} {'blocks':>6} {'pass':>5} {'%':>6} {'rows':>9} {'errors':>9} {'cmds':>9} {'schema':>9}"
    ]
    tot = dict.fromkeys(
        ("blocks", "pass", "rows", "rows_ok", "err", "err_ok", "cmd", "cmd_ok", "schema_ok"), 0
    )

    def frac(a: int, b: int) -> str:
        return f"{a}/{b}"

    for s in scores:
        counts = block_counts(root, s.file)
        n = sum(counts.values())
        by = {"rows": [0, counts["rows"]], "error": [0, counts["error"]], "command": [0, counts["command"]]}
        schema_ok = 0
        for r in s.results:
            by[r.kind][0] += r.passed
            schema_ok += r.kind == "rows" and r.schema_ok
        passed = sum(v[0] for v in by.values())
        pct = 100.0 * passed / n if n else 100.0
        note = f"  ({s.crashed.splitlines()[0][:60]})" if s.crashed else ""
        lines.append(
            f"{s.file:<52} {n:>6} {passed:>5} {pct:>5.1f}% {frac(*by['rows']):>9} {frac(*by['error']):>9}"
            f" {frac(*by['command']):>9} {frac(schema_ok, counts['rows']):>9}{note}"
        )
        tot["blocks"] += n
        tot["pass"] += passed
        tot["rows"] += counts["rows"]
        tot["rows_ok"] += by["rows"][0]
        tot["err"] += counts["error"]
        tot["err_ok"] += by["error"][0]
        tot["cmd"] += counts["command"]
        tot["cmd_ok"] += by["command"][0]
        tot["schema_ok"] += schema_ok

    def pc(a: int, b: int) -> str:
        return f"{a}/{b} ({100.0 * a / b if b else 100.0:.1f}%)"

    lines.append("")
    lines.append(f"all blocks        {pc(tot['pass'], tot['blocks'])}")
    lines.append(f"row blocks        {pc(tot['rows_ok'], tot['rows'])}")
    lines.append(f"error class       {pc(tot['err_ok'], tot['err'])}")
    lines.append(f"commands          {pc(tot['cmd_ok'], tot['cmd'])}")
    lines.append(f"schema lines      {pc(tot['schema_ok'], tot['rows'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=None, help="the spark-sql-tests directory")
    ap.add_argument("--only", default=None, help="run the files whose path contains this text")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a file may take")
    ap.add_argument("--show-failures", action="store_true")
    ap.add_argument("--update", action="store_true", help="add today's passes to passing.txt")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    root = args.root or golden_root()
    if args.child:
        _child(root, args.child)
        return 0
    if not (root / "results").is_dir():
        print(f"no golden files at {root}: set FERROSPARK_SQL_TESTS", file=sys.stderr)
        return 2
    scores = run_all(root, args.only, args.jobs, args.timeout)
    if args.show_failures:
        for s in scores:
            blocks = parse_golden((root / "results" / s.file).read_text(encoding="utf-8"))
            for r in s.results:
                if not r.passed:
                    print(f"=== {s.file}#{r.index} [{r.kind}]\n{blocks[r.index].query}")
                    print(f"--- expected\n{r.expected}\n--- got\n{r.got}\n")
    print(table_text(root, scores))
    passing = passing_ids(scores)
    ratchet = read_ratchet()
    if args.only is None:
        lost = sorted(ratchet - passing)
        if lost:
            print(f"\n{len(lost)} block(s) of passing.txt no longer pass: {', '.join(lost[:20])}")
        if args.update:
            write_ratchet(ratchet | passing)
            print(f"passing.txt: {len(ratchet | passing)} blocks ({len(passing - ratchet)} new)")
        return 1 if lost else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
