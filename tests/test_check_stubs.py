"""The stub check (tests/check_stubs.py, run by `make lint`) finds what is missing or stale."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

_spec = importlib.util.spec_from_file_location("check_stubs", Path(__file__).with_name("check_stubs.py"))
assert _spec is not None and _spec.loader is not None
check_stubs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_stubs)


def _fake_module() -> types.ModuleType:
    m = types.ModuleType("fake")

    class Scan:
        def read(self): ...
        def __arrow_c_stream__(self, requested_schema=None): ...
        def _private(self): ...

    m.Scan = Scan
    m.plan = lambda: None
    m.window = lambda: None
    m._hidden_hook = lambda: None
    m.__version__ = "1"
    return m


def test_matching_stubs_pass():
    stubs = """
__version__: str
class Scan:
    def __init__(self) -> None: ...
    def read(self) -> None: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
def plan() -> None: ...
def window() -> None: ...
"""
    assert check_stubs.compare(check_stubs.module_names(_fake_module()), check_stubs.stub_names(stubs)) == []


def test_missing_and_stale_names_are_listed():
    stubs = """
class Scan:
    def read(self) -> None: ...
    def explain(self) -> str: ...
def plan() -> None: ...
def gone() -> None: ...
"""
    problems = check_stubs.compare(check_stubs.module_names(_fake_module()), check_stubs.stub_names(stubs))
    assert problems == [
        "missing from the stubs: function window",
        "stale in the stubs (not in the module): gone",
        "missing from the stubs: Scan.__arrow_c_stream__",
        "stale in the stubs (not in the module): Scan.explain",
    ]


def test_the_real_stubs_parse():
    names = check_stubs.stub_names(check_stubs.STUBS.read_text())
    assert "window" in names and "Expr" in names and "binary" in (names["Expr"] or set())
