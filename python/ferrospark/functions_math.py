"""Math and bit functions of ``pyspark.sql.functions`` under their older names (``toDegrees``,
``shiftLeft``, ``bitwiseNOT``, ``negate``), re-exported by :mod:`ferrospark.functions`."""

from __future__ import annotations

import warnings

from ._function_args import ColumnOrName, _c, _call, _call_mixed
from .column import Column, lit


def negate(col: ColumnOrName) -> Column:
    """``-col`` (Spark's ``negative``)."""
    return _call("negative", col)


def toDegrees(col: ColumnOrName) -> Column:  # noqa: N802 - PySpark's name
    """Radians to degrees; deprecated in PySpark 2.1 for ``degrees``."""
    warnings.warn("Deprecated in 2.1, use degrees instead.", FutureWarning, stacklevel=2)
    return _call("degrees", col)


def toRadians(col: ColumnOrName) -> Column:  # noqa: N802 - PySpark's name
    """Degrees to radians; deprecated in PySpark 2.1 for ``radians``."""
    warnings.warn("Deprecated in 2.1, use radians instead.", FutureWarning, stacklevel=2)
    return _call("radians", col)


def shiftLeft(col: ColumnOrName, numBits: int) -> Column:  # noqa: N802, N803 - PySpark's names
    """``shiftleft``; deprecated in PySpark 3.2."""
    warnings.warn("Deprecated in 3.2, use shiftleft instead.", FutureWarning, stacklevel=2)
    return _call_mixed("shiftleft", _c(col), lit(numBits))


def shiftRight(col: ColumnOrName, numBits: int) -> Column:  # noqa: N802, N803 - PySpark's names
    """``shiftright``; deprecated in PySpark 3.2."""
    warnings.warn("Deprecated in 3.2, use shiftright instead.", FutureWarning, stacklevel=2)
    return _call_mixed("shiftright", _c(col), lit(numBits))


def shiftRightUnsigned(col: ColumnOrName, numBits: int) -> Column:  # noqa: N802, N803 - PySpark's names
    """``shiftrightunsigned``; deprecated in PySpark 3.2."""
    warnings.warn("Deprecated in 3.2, use shiftrightunsigned instead.", FutureWarning, stacklevel=2)
    return _call_mixed("shiftrightunsigned", _c(col), lit(numBits))


def bitwiseNOT(col: ColumnOrName) -> Column:  # noqa: N802 - PySpark's name
    """``~col``; deprecated in PySpark 3.2 for ``bitwise_not``."""
    warnings.warn("Deprecated in 3.2, use bitwise_not instead.", FutureWarning, stacklevel=2)
    return _call("~", col)
