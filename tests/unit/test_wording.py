"""Counted nouns: singular for exactly one, the plural otherwise (irregular ones included)."""

from __future__ import annotations

from webapp.wording import counted, every, noun


def test_counted_nouns_are_singular_only_for_one() -> None:
    assert counted(1, "round") == "1 round"
    assert counted(0, "round") == "0 rounds" and counted(2, "round") == "2 rounds"
    assert counted(1.0, "point") == "1 point" and counted(2.5, "point") == "2.5 points"
    assert counted(2, "series") == "2 series" and counted(3, "criterion") == "3 criteria"
    assert counted(4, "person", "people") == "4 people"
    assert noun(1, "debate") == "debate" and noun(7, "debate") == "debates"
    assert counted(2, "automatic retry") == "2 automatic retries" and counted(3, "day") == "3 days"
    assert counted(2, "match") == "2 matches" and counted(2, "judged debate") == "2 judged debates"
    assert noun(1, "was", "were") == "was" and noun(2, "was", "were") == "were"


def test_every_never_says_all_one() -> None:
    assert every(1, "planned round") == "the only planned round"
    assert every(3, "automatic retry") == "all 3 automatic retries"
