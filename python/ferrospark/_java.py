"""Numbers printed as Java prints them (``Double.toString`` / ``Float.toString``), as Spark's
results show them when cast to text: shortest digits, ``E`` notation outside [1e-3, 1e7),
always a fractional digit (``1.0``, ``1.0E10``, ``1.5E-4``, ``NaN``, ``-Infinity``)."""

from __future__ import annotations

import math
import re


def java_double_text(v: float, single: bool = False) -> str:
    """``v`` as Java's ``Double.toString`` (``Float.toString`` when ``single``)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    if single:
        import numpy as np

        digits = np.format_float_scientific(np.float32(v), unique=True, trim="-")
    else:
        digits = _shortest_scientific(v)
    mant, _, exp = digits.partition("e")
    e = int(exp)
    neg = mant.startswith("-")
    mant = mant.lstrip("-")
    intpart, _, frac = mant.partition(".")
    alldigits = (intpart + frac).rstrip("0") or "0"
    sign = "-" if neg else ""
    if 1e-3 <= abs(v) < 1e7:
        point = e + 1
        if point <= 0:
            s = "0." + "0" * (-point) + alldigits
        elif point >= len(alldigits):
            s = alldigits + "0" * (point - len(alldigits)) + ".0"
        else:
            s = alldigits[:point] + "." + alldigits[point:]
        return sign + s
    frac = alldigits[1:] or "0"
    return f"{sign}{alldigits[0]}.{frac}E{e}"


def _shortest_scientific(v: float) -> str:
    """Python's shortest round-trip digits of ``v`` as ``d.ddde<exp>``."""
    m = re.match(r"^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$", repr(v))
    if not m:
        return f"{v:e}"
    sign, ip, fp, ex = m.group(1), m.group(2), m.group(3) or "", int(m.group(4) or 0)
    digits = (ip + fp).lstrip("0")
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    e = len(ip) - 1 + ex - lead_zeros
    if not digits:
        return "0e0"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}e{e}"
