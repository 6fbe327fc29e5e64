"""argparse types: numbers in a range, counts, comma lists; a bad value is argparse's error
(exit 2, naming the option), not a traceback or a value that switches a check off (NaN)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def number(text: str) -> float:
    """A finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def at_least(low: float) -> Callable[[str], float]:
    def check(text: str) -> float:
        value = number(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"{text} is below {low}")
        return value

    return check


def above(low: float) -> Callable[[str], float]:
    def check(text: str) -> float:
        value = number(text)
        if value <= low:
            raise argparse.ArgumentTypeError(f"{text} must be above {low}")
        return value

    return check


def fraction(text: str) -> float:
    value = number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1")
    return value


def count(text: str) -> int:
    """A whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def counts(text: str) -> list[int]:
    """A comma list of whole numbers of at least 1, e.g. 1,2,5."""
    values = [count(part) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r} names no number")
    return values
