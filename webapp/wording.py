"""Counted nouns in words: "1 round", "2 rounds", "0 debates" — one helper instead of a hand-written
`'s' if n != 1` at every sentence (which was forgotten in places: "the hard cap of 1 rounds").

English only, like the rest of the interface: the plural of the last word by the regular rules
(round → rounds, retry → retries, match → matches), the few irregular ones the app uses listed.
"""

from __future__ import annotations

IRREGULAR = {"series": "series", "criterion": "criteria", "person": "people"}


def noun(count: float, singular: str, plural: str | None = None) -> str:
    """The noun's form for `count`: singular for exactly one, else the plural (given, irregular or +s)."""
    if count == 1:
        return singular
    if plural:
        return plural
    head, _, last = singular.rpartition(" ")
    if last in IRREGULAR:
        last = IRREGULAR[last]
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        last = last[:-1] + "ies"
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def counted(count: float, singular: str, plural: str | None = None) -> str:
    """`count` and the noun in the matching form: "1 round", "3 rounds", "0.5 points", "2 series"."""
    number = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{number} {noun(count, singular, plural)}"


def every(count: float, singular: str, plural: str | None = None) -> str:
    """The whole of a counted set: "all 3 rounds", but "the only round" (never "all 1 rounds")."""
    return f"the only {singular}" if count == 1 else f"all {counted(count, singular, plural)}"
