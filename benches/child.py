"""Runs a benchmark worker in a process of its own: its JSON result and its peak memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any


def run_json(cmd: list[str], what: str) -> dict[str, Any] | None:
    """Runs ``cmd``, which prints one JSON object; that object with ``peak_mb`` (the child's
    peak RSS) added, or ``None`` after printing ``what`` failed and its stderr."""
    # Files, not pipes: a child writing more than a pipe holds would wait forever.
    with tempfile.TemporaryFile("w+") as out_f, tempfile.TemporaryFile("w+") as err_f:
        p = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read()
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"{what}: failed\n{err}", file=sys.stderr)
        return None
    return {**json.loads(out), "peak_mb": usage.ru_maxrss / 1024}
