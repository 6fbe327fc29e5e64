"""Number formatting shared by every report language (numbers never depend on the language)."""

from __future__ import annotations

import math
from typing import Any

from dlperf.util import is_number as is_number  # the report's modules read fmt.is_number

NA = "n/a"


def throughput(value: Any) -> str:
    """Samples/s: two decimals as DLPerf prints them, or three significant digits below 10 (n/a
    when not a number)."""
    if not is_number(value):
        return NA
    x = float(value)
    if abs(x) >= 10:
        return f"{x:.2f}"
    return f"{x:#.3g}".rstrip(".")


def speedup(value: Any) -> str:
    """Speedup (or any ratio): two decimals; n/a when there is no baseline."""
    return f"{float(value):.2f}" if is_number(value) else NA


def percent(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage: 0.0123 -> '1.2%'."""
    return f"{float(value) * 100:.{digits}f}%" if is_number(value) else NA


def setting_percent(value: float) -> str:
    """A fraction a user set (a test's level, a threshold) as the percentage it is, never rounded
    to another: 0.999 -> '99.9%' (not '100%'), 0.0025 -> '0.25%', 0.05 -> '5%'."""
    return f"{round(value * 100, 10):g}%"


def milliseconds(value: Any) -> str:
    return f"{float(value):.1f}" if is_number(value) else NA


def integer(value: Any) -> str:
    """Rounded to the nearest (415.9 MiB reads 416, never 415)."""
    return str(round(float(value))) if is_number(value) else NA


def as_printed(value: Any) -> str:
    """A published figure with the digits its table printed (56.601 stays 56.601)."""
    return str(float(value)).removesuffix(".0") if is_number(value) else NA


def text(value: Any) -> str:
    """A table field as one line of text ('' for NaN/None)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return " ".join(str(value).split())


def shorten(value: str, limit: int = 300) -> str:
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"
