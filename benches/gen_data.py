"""Generate TPC-H Parquet data for the benchmarks (a thin CLI over ``ferrospark.tpch``).

    python benches/gen_data.py --scale 1 --out data/tpch-sf1

writes ``data/tpch-sf1/lineitem/*.parquet`` and ``data/tpch-sf1/orders/*.parquet`` with
``tpchgen-cli`` and skips tables that are already there. Importable:
``ensure_tpch(scale, out)``.

``ferrospark.tpch`` is pure Python; when the ``ferrospark`` package is not built or
installed it is loaded straight from ``python/ferrospark/tpch.py``, so the generator
works without the engine.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _load_tpch():
    try:
        from ferrospark import tpch
    except ImportError:
        source = REPO / "python" / "ferrospark" / "tpch.py"
        spec = importlib.util.spec_from_file_location("_ferrospark_tpch", source)
        if spec is None or spec.loader is None:
            raise
        tpch = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = tpch
        spec.loader.exec_module(tpch)
    return tpch


_tpch = _load_tpch()
TABLES = _tpch.TABLES
default_out = _tpch.default_out
print_summary = _tpch.print_summary
summarize = _tpch.summarize


def ensure_tpch(scale=1, out=None, tables=("lineitem", "orders"), **kwargs) -> dict[str, str]:
    """``{table: directory}`` of TPC-H Parquet data at ``scale``, generated if missing.

    ``out`` defaults to ``<repo>/data/tpch-sf<scale>``; see
    ``ferrospark.tpch.ensure_tpch``.
    """
    if out is None:
        out = REPO / default_out(scale)
    return _tpch.ensure_tpch(scale, out, tables, **kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1, help="TPC-H scale factor (default 1)")
    parser.add_argument("--out", help="output directory (default data/tpch-sf<scale>)")
    parser.add_argument(
        "--tables",
        default="lineitem,orders",
        help=(f"comma-separated tables (default lineitem,orders; any of {','.join(TABLES)})"),
    )
    parser.add_argument("--parts", type=int, help="files per table (default 4 per scale unit)")
    parser.add_argument(
        "--row-group-bytes",
        help="approximate uncompressed row-group size (tpchgen default 7MiB)",
    )
    parser.add_argument("--compression", help="e.g. SNAPPY (tpchgen default), ZSTD(1)")
    parser.add_argument("--threads", type=int, help="tpchgen-cli threads (default: all CPUs)")
    parser.add_argument("--force", action="store_true", help="regenerate even if present")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    tables = [t.strip() for t in args.tables.split(",") if t.strip()]
    paths = ensure_tpch(
        args.scale,
        args.out,
        tables,
        parts=args.parts,
        row_group_bytes=args.row_group_bytes,
        compression=args.compression,
        threads=args.threads,
        force=args.force,
        progress=not args.quiet,
    )
    print_summary(paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
