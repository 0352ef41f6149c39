"""Numbers in words for messages and report headers."""

from __future__ import annotations


def count(n: float, noun: str) -> str:
    """``n`` (thousands separated) and ``noun``, plural unless ``n`` is 1: "1 job", "2,400 jobs", "0.5 days"."""
    number = f"{n:,}" if isinstance(n, int) else f"{n:,g}"
    return f"{number} {noun}{'' if n == 1 else 's'}"
