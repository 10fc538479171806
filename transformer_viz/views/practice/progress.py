"""A student's progress as the URL carries it: ``ex=N``, the exercise open, and ``done=1,3,4``, the
exercises answered right, so that a link shows a tutor what was done; and that progress in words."""

from __future__ import annotations

from typing import Iterable


def exercise_number(value: str | None, n: int) -> int:
    """The exercise ``ex=`` names (1 … n); 1 for anything else, a number out of range clamped
    into it."""
    text = (value or "").strip()
    if not (text.isascii() and text.isdigit()):
        return 1
    return min(max(int(text), 1), n)


def parse_done(value: str | None, n: int) -> list[int]:
    """``done=1,3,4`` -> [1, 3, 4]: sorted, distinct, within 1 … n; anything else in it is left
    out."""
    parts = (value or "").replace(" ", "").split(",")
    numbers = {int(p) for p in parts if p.isascii() and p.isdigit()}
    return sorted(k for k in numbers if 1 <= k <= n)


def format_done(done: Iterable[int]) -> str | None:
    """[4, 1, 3] -> "1,3,4"; None when nothing is done (the parameter is then left out of the
    URL)."""
    numbers = sorted(set(done))
    return ",".join(map(str, numbers)) if numbers else None


def summary(done: Iterable[int], n: int) -> str:
    """"5 of 14 answered correctly: 1, 3, 4, 7, 9." in plain words."""
    numbers = sorted(set(done))
    if not numbers:
        return f"0 of {n} answered correctly yet."
    if len(numbers) == n:
        return f"All {n} of {n} answered correctly."
    return f"{len(numbers)} of {n} answered correctly: {', '.join(map(str, numbers))}."
