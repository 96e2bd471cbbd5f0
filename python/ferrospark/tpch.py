"""TPC-H data sets for demos and benchmarks, generated with the ``tpchgen-cli`` tool.

``ensure_tpch(scale, out)`` writes one directory of Parquet files per table::

    <out>/lineitem/lineitem.1.parquet ... lineitem.<parts>.parquet
    <out>/orders/orders.1.parquet ...
    <out>/.tpch-lineitem.json    (marker, written last: generation skipped if present)

Each table is generated in ``parts`` pieces (one ``tpchgen-cli --part`` run each, so
there is a progress bar) into a hidden temporary directory that is moved into place
when complete. The markers live next to the table directories, not inside them, so
every Parquet reader sees only ``*.parquet`` files in a table directory.

This module needs only the standard library (plus ``tqdm`` when installed, and
``pyarrow`` for row counts and the size summary), so ``benches/gen_data.py`` can load
it without the native extension.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "TABLES",
    "default_out",
    "default_parts",
    "ensure_tpch",
    "format_bytes",
    "print_summary",
    "summarize",
    "tpchgen_cli",
]

#: Approximate rows per table at scale factor 1 (only used for the progress bar).
TABLES: dict[str, int] = {
    "lineitem": 6_001_215,
    "orders": 1_500_000,
    "partsupp": 800_000,
    "part": 200_000,
    "customer": 150_000,
    "supplier": 10_000,
    "nation": 25,
    "region": 5,
}

#: Files per table per unit of scale factor (scale 1 -> 4 files per table).
PARTS_PER_SCALE = 4

_MARKER_VERSION = 1


def default_out(scale: float) -> str:
    """The conventional data directory for a scale factor: ``data/tpch-sf<scale>``."""
    return f"data/tpch-sf{scale:g}"


def default_parts(scale: float, table: str = "lineitem") -> int:
    """How many files a table is split into by default (tiny tables are one file)."""
    if TABLES.get(table, 0) * scale < 100_000:
        return 1
    return max(1, math.ceil(PARTS_PER_SCALE * scale))


def tpchgen_cli() -> str:
    """Path of ``tpchgen-cli``: next to this interpreter first, then on ``PATH``."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "tpchgen-cli",
        Path(sys.executable).parent / "tpchgen-cli",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("tpchgen-cli")
    if found:
        return found
    raise FileNotFoundError(
        "tpchgen-cli not found: install it with `pip install tpchgen-cli` "
        "(https://github.com/clflushopt/tpchgen-rs)"
    )


def _tpchgen_version(exe: str) -> str:
    try:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return proc.stdout.strip().removeprefix("tpchgen-cli").strip() or "unknown"


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _parquet_files(table_dir: Path) -> list[Path]:
    files = [p for p in table_dir.glob("*.parquet") if p.is_file()]

    def part_number(p: Path) -> tuple[int, str]:
        # lineitem.10.parquet sorts after lineitem.9.parquet
        middle = p.name.removesuffix(".parquet").rpartition(".")[2]
        return (int(middle) if middle.isdigit() else -1, p.name)

    return sorted(files, key=part_number)


def _marker_path(out: Path, table: str) -> Path:
    return out / f".tpch-{table}.json"


def _read_marker(out: Path, table: str) -> dict | None:
    try:
        return json.loads(_marker_path(out, table).read_text())
    except (OSError, ValueError):
        return None


def _write_marker(out: Path, table: str, content: dict) -> None:
    marker = _marker_path(out, table)
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, marker)


class _Progress:
    """A tqdm bar counting generated rows, or plain prints without tqdm."""

    def __init__(self, total_rows: int, enabled: bool) -> None:
        self._bar = None
        self._enabled = enabled
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return
        self._bar = tqdm(
            total=total_rows,
            unit=" rows",
            unit_scale=True,
            desc="tpch",
            dynamic_ncols=True,
            file=sys.stderr,
        )

    def start(self, table: str, part: int, parts: int) -> None:
        if self._bar is not None:
            self._bar.set_description(f"tpch {table} {part}/{parts}")

    def done(self, table: str, part: int, parts: int, rows: int, seconds: float) -> None:
        if self._bar is not None:
            self._bar.update(rows)
        elif self._enabled:
            print(
                f"  {table} part {part}/{parts}: {rows:,} rows in {seconds:.1f}s",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self._bar is not None:
            # The row counts per table are estimates; end the bar at what was written.
            self._bar.total = self._bar.n
            self._bar.refresh()
            self._bar.close()


def _parquet_rows(path: Path) -> int:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return 0
    return pq.read_metadata(path).num_rows


def _generate_table(
    exe: str,
    scale: float,
    out: Path,
    table: str,
    parts: int,
    extra_args: Sequence[str],
    progress: _Progress,
) -> None:
    tmp = out / f".tmp-{table}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        for part in range(1, parts + 1):
            progress.start(table, part, parts)
            cmd = [
                exe,
                "parquet",
                "--scale-factor",
                f"{scale:g}",
                "--tables",
                table,
                "--parts",
                str(parts),
                "--part",
                str(part),
                "--output-dir",
                str(tmp),
                "--overwrite",
                "--no-progress",
                *extra_args,
            ]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
            seconds = time.perf_counter() - t0
            if proc.returncode != 0:
                raise RuntimeError(
                    f"tpchgen-cli failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr.strip()}"
                )
            written = tmp / table / f"{table}.{part}.parquet"
            if not written.is_file():
                raise RuntimeError(f"tpchgen-cli did not write {written}: {' '.join(cmd)}")
            progress.done(table, part, parts, _parquet_rows(written), seconds)
        dest = out / table
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp / table, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure_tpch(
    scale: float = 1,
    out: str | os.PathLike[str] | None = None,
    tables: Iterable[str] = ("lineitem", "orders"),
    *,
    parts: int | None = None,
    row_group_bytes: str | int | None = None,
    compression: str | None = None,
    threads: int | None = None,
    force: bool = False,
    progress: bool = True,
) -> dict[str, str]:
    """Generate the TPC-H ``tables`` at ``scale`` under ``out`` unless already there.

    Returns ``{table: directory}``; each directory holds ``<table>.<n>.parquet`` files.

    ``parts`` is the number of files per table (default: :func:`default_parts`);
    ``row_group_bytes`` (e.g. ``"7MiB"``, ``8000000``) and ``compression`` (e.g.
    ``"SNAPPY"``, ``"ZSTD(1)"``) are passed to ``tpchgen-cli parquet`` when given (its
    defaults: 7MiB row groups, SNAPPY). ``threads`` is tpchgen-cli's ``--num-threads``
    (default: all CPUs). A table is regenerated when ``force`` is true or its marker
    records different settings.
    """
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    tables = list(dict.fromkeys(tables))
    unknown = [t for t in tables if t not in TABLES]
    if unknown:
        raise ValueError(f"unknown TPC-H table(s) {unknown}; expected some of {list(TABLES)}")
    out_dir = Path(out if out is not None else default_out(scale))

    settings = {
        "scale": float(scale),
        "row_group_bytes": None if row_group_bytes is None else str(row_group_bytes),
        "compression": compression,
    }
    result: dict[str, str] = {}
    todo: list[tuple[str, int]] = []
    for table in tables:
        table_parts = parts if parts is not None else default_parts(scale, table)
        if table_parts < 1:
            raise ValueError(f"parts must be >= 1, got {table_parts}")
        marker = _read_marker(out_dir, table)
        wanted = {**settings, "parts": table_parts}
        have = _parquet_files(out_dir / table)
        if (
            not force
            and marker is not None
            and marker.get("settings") == wanted
            and [p.name for p in have] == marker.get("files")
        ):
            result[table] = str(out_dir / table)
        else:
            todo.append((table, table_parts))

    if not todo:
        return result

    exe = tpchgen_cli()
    version = _tpchgen_version(exe)
    extra_args: list[str] = []
    if row_group_bytes is not None:
        extra_args += ["--row-group-bytes", str(row_group_bytes)]
    if compression is not None:
        extra_args += ["--compression", compression]
    if threads is not None:
        extra_args += ["--num-threads", str(threads)]

    out_dir.mkdir(parents=True, exist_ok=True)
    names = ", ".join(t for t, _ in todo)
    print(
        f"generating TPC-H sf{scale:g} ({names}) in {out_dir} with tpchgen-cli {version}",
        file=sys.stderr,
        flush=True,
    )
    total_rows = sum(round(TABLES[t] * scale) for t, _ in todo)
    bar = _Progress(total_rows, progress)
    t0 = time.perf_counter()
    try:
        for table, table_parts in todo:
            _marker_path(out_dir, table).unlink(missing_ok=True)
            _generate_table(exe, scale, out_dir, table, table_parts, extra_args, bar)
            files = _parquet_files(out_dir / table)
            _write_marker(
                out_dir,
                table,
                {
                    "marker_version": _MARKER_VERSION,
                    "table": table,
                    "settings": {**settings, "parts": table_parts},
                    "files": [p.name for p in files],
                    "bytes": sum(p.stat().st_size for p in files),
                    "tpchgen_cli": version,
                    "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
            )
            result[table] = str(out_dir / table)
    finally:
        bar.close()
    print(f"generated in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    return {t: result[t] for t in tables}


def summarize(paths: dict[str, str]) -> list[dict]:
    """Per table: files, rows, row groups, bytes and compression of generated data."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    rows = []
    for table, directory in paths.items():
        files = _parquet_files(Path(directory))
        info = {
            "table": table,
            "path": directory,
            "files": len(files),
            "bytes": sum(p.stat().st_size for p in files),
        }
        if pq is not None and files:
            metas = [pq.read_metadata(p) for p in files]
            info["rows"] = sum(m.num_rows for m in metas)
            info["row_groups"] = sum(m.num_row_groups for m in metas)
            first = metas[0]
            if first.num_row_groups and first.num_columns:
                info["compression"] = first.row_group(0).column(0).compression
                info["rows_per_row_group"] = round(info["rows"] / max(1, info["row_groups"]))
        rows.append(info)
    return rows


def print_summary(paths: dict[str, str], file=None) -> None:
    """Print :func:`summarize` as a small table."""
    file = file if file is not None else sys.stdout
    header = f"{'table':<10} {'files':>5} {'rows':>12} {'row groups':>10} {'size':>11}  compression"
    print(header, file=file)
    for info in summarize(paths):
        print(
            f"{info['table']:<10} {info['files']:>5} {info.get('rows', 0):>12,} "
            f"{info.get('row_groups', 0):>10} {format_bytes(info['bytes']):>11}  "
            f"{info.get('compression', '?')}   {info['path']}",
            file=file,
        )
