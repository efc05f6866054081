"""Counted nouns: singular for exactly one, the plural otherwise (irregular ones included)."""

from __future__ import annotations

from webapp.wording import counted, noun


def test_counted_nouns_are_singular_only_for_one() -> None:
    assert counted(1, "round") == "1 round"
    assert counted(0, "round") == "0 rounds" and counted(2, "round") == "2 rounds"
    assert counted(1.0, "point") == "1 point" and counted(2.5, "point") == "2.5 points"
    assert counted(2, "series") == "2 series" and counted(3, "criterion") == "3 criteria"
    assert counted(4, "person", "people") == "4 people"
    assert noun(1, "debate") == "debate" and noun(7, "debate") == "debates"
