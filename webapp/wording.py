"""Counted nouns in words: "1 round", "2 rounds", "0 debates" — one helper instead of a hand-written
`'s' if n != 1` at every sentence (which was forgotten in places: "the hard cap of 1 rounds").

English only, like the rest of the interface; the few irregular plurals the app uses are listed.
"""

from __future__ import annotations

IRREGULAR = {"series": "series", "criterion": "criteria", "reply": "replies", "match": "matches"}


def noun(count: float, singular: str, plural: str | None = None) -> str:
    """The noun's form for `count`: singular for exactly one, else the plural (given, irregular or +s)."""
    if count == 1:
        return singular
    return plural or IRREGULAR.get(singular, singular + "s")


def counted(count: float, singular: str, plural: str | None = None) -> str:
    """`count` and the noun in the matching form: "1 round", "3 rounds", "0.5 points", "2 series"."""
    number = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{number} {noun(count, singular, plural)}"
