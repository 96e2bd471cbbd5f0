"""Compares the built extension ``ferrospark._native`` with its stubs, ``_native.pyi``.

Run by ``make lint`` after the extension is built::

    python tests/check_stubs.py            # exit 1 with a list of what is missing or stale

Checked: the module's public functions and classes (names not starting with ``_``), and each
class's public methods and attributes plus the Arrow protocol methods (``__arrow_c_*__``).
Hidden hooks such as ``_native._panic_for_test`` are not part of the stubs.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path
from types import ModuleType

STUBS = Path(__file__).resolve().parent.parent / "python" / "ferrospark" / "_native.pyi"


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__arrow_c_") and name.endswith("__"))


def stub_names(text: str) -> dict[str, set[str] | None]:
    """``{function or attribute: None, class: {its members}}`` declared by stub source."""
    out: dict[str, set[str] | None] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[node.name] = None
        elif isinstance(node, ast.ClassDef):
            members: set[str] = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members.update(t.id for t in item.targets if isinstance(t, ast.Name))
            out[node.name] = {m for m in members if _public(m)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
    return {k: v for k, v in out.items() if _public(k)}


def module_names(module: ModuleType) -> dict[str, set[str] | None]:
    """The same shape for a live module."""
    out: dict[str, set[str] | None] = {}
    for name, value in vars(module).items():
        if not _public(name):
            continue
        if inspect.isclass(value):
            out[name] = {m for m in vars(value) if _public(m)}
        elif not inspect.ismodule(value):
            out[name] = None
    return out


def compare(live: dict[str, set[str] | None], stubs: dict[str, set[str] | None]) -> list[str]:
    """Human-readable differences; empty when the stubs match."""
    problems = []
    for name in sorted(live.keys() - stubs.keys()):
        kind = "class" if live[name] is not None else "function"
        problems.append(f"missing from the stubs: {kind} {name}")
    for name in sorted(stubs.keys() - live.keys()):
        problems.append(f"stale in the stubs (not in the module): {name}")
    for name in sorted(live.keys() & stubs.keys()):
        have, declared = live[name], stubs[name]
        if (have is None) != (declared is None):
            what = "a class" if have is not None else "not a class"
            problems.append(f"{name} is {what} in the module but not in the stubs")
            continue
        if have is None or declared is None:
            continue
        for member in sorted(have - declared):
            problems.append(f"missing from the stubs: {name}.{member}")
        for member in sorted(declared - have):
            problems.append(f"stale in the stubs (not in the module): {name}.{member}")
    return problems


def main() -> int:
    from ferrospark import _native

    problems = compare(module_names(_native), stub_names(STUBS.read_text()))
    if problems:
        print(f"{STUBS} does not match the built ferrospark._native:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        print("Update the stubs (or rebuild the extension with `make build`).", file=sys.stderr)
        return 1
    print(f"stubs match ferrospark._native ({STUBS.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
