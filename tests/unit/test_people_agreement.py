"""Judge health's agreement with the people: per AI judge model, the share of debates whose winner was
the people's majority and Cohen's kappa over the positions; debates without people's verdicts are left
out; and the people's majority itself (ties and even splits)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.corpus import ruling
from webapp.engine.audience import people_majority
from webapp.engine.judge_health import health
from webapp.models import Verdict
from webapp.store.audience import HumanVerdict

POSITIONS = {"a": "pro", "b": "con"}


def _verdict(*rulings: tuple[str, str | None]) -> Verdict:
    return Verdict(rulings=[ruling(judge, winner, ["a", "b"]) for judge, winner in rulings])


def _people(*winners: str | None) -> list[HumanVerdict]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return [HumanVerdict(by=f"user:{n}", winner=w, at=at) for n, w in enumerate(winners)]


def test_the_peoples_majority_a_tie_and_an_even_split() -> None:
    assert people_majority([]) == (None, 0)
    assert people_majority(_people("a", "a", "b")) == ("a", 3)
    assert people_majority(_people(None, None, "a")) == ("tie", 3)
    assert people_majority(_people("a", "b")) == ("tie", 2)  # an even split between the most named


def test_agreement_with_the_people_per_judge_share_and_kappa() -> None:
    verdicts = [
        ("d1", _verdict(("alpha", "a"), ("beta", "a")), POSITIONS),
        ("d2", _verdict(("alpha", "b"), ("beta", "a")), POSITIONS),
        ("d3", _verdict(("alpha", None), ("beta", "b")), POSITIONS),
        ("d4", _verdict(("alpha", "a"), ("beta", "b")), POSITIONS),
        ("d5", _verdict(("alpha", "b"), ("beta", "b")), POSITIONS),  # no people's verdicts: not counted
    ]
    people = {"d1": "a", "d2": "b", "d3": "tie", "d4": "b"}
    report = {j.judge: j for j in health(verdicts, people).judges}
    alpha, beta = report["alpha"], report["beta"]
    assert (alpha.people_debates, alpha.people_agreed) == (4, 3) and alpha.people_agreement == 0.75
    assert (beta.people_debates, beta.people_agreed) == (4, 2) and beta.people_agreement == 0.5
    # alpha vs people: (pro,pro) (con,con) (tie,tie) (pro,con): p_o = 3/4; judge pro 2, con 1, tie 1;
    # people pro 1, con 2, tie 1: p_e = (2*1 + 1*2 + 1*1) / 16 = 5/16 -> kappa = (12/16 - 5/16) / (11/16)
    assert alpha.people_kappa == pytest.approx(7 / 11)
    # beta vs people: (pro,pro) (pro,con) (con,tie) (con,con): p_o = 1/2; judge pro 2, con 2;
    # p_e = (2*1 + 2*2) / 16 = 6/16 -> kappa = (8/16 - 6/16) / (10/16) = 0.2
    assert beta.people_kappa == pytest.approx(0.2)
    assert alpha.public()["people_agreement"] == 0.75
    without = {j.judge: j for j in health(verdicts).judges}
    assert without["alpha"].people_debates == 0 and without["alpha"].people_kappa is None


def test_the_judges_page_row_shows_the_agreement_with_the_people() -> None:
    from webapp.ui.pages.judges import judge_row

    verdicts = [("d1", _verdict(("alpha", "a")), POSITIONS), ("d2", _verdict(("alpha", "b")), POSITIONS)]
    [alpha] = health(verdicts, {"d1": "a", "d2": "a"}).judges
    assert judge_row(alpha)["people"].startswith("50% of 2, kappa ")
    assert judge_row(health(verdicts).judges[0])["people"] == "–"
