"""What people read: the compact state diagram shown in the UI, and names restored in verdicts."""

from __future__ import annotations

from webapp.engine.judge import reveal_names
from webapp.engine.machine import TRANSITIONS
from webapp.engine.mermaid import to_mermaid
from webapp.models import CriterionScore, JudgeRuling, Verdict


def test_compact_diagram_draws_each_grouped_edge_once_from_a_pseudo_state() -> None:
    text = to_mermaid(compact=True, highlight="paused")
    edges = [line.strip() for line in text.splitlines() if "-->" in line]
    assert len(edges) == len(set(edges))
    assert "active --> paused: PAUSE" in edges and "active --> error: ERROR" in edges
    assert "unfinished --> stopped: STOP" in edges
    assert not any(line.startswith(("debating --> paused", "judging --> error")) for line in edges)
    assert 'state "any running state" as active' in text
    assert text.rstrip().endswith("class paused current")
    # every declared event still appears
    for t in TRANSITIONS:
        assert t.event.value in text
    assert len(edges) < len(TRANSITIONS) * 0.6


def test_verdict_text_gets_names_back_but_not_ordinary_capitals() -> None:
    verdict = Verdict(
        winner="ada",
        scores={"ada": 80, "bo": 70},
        criteria={"clarity": {"ada": CriterionScore(score=80, note="Debater B was clearer than Debater A.")}},
        reasoning="A close call. Debater A rebutted Debater B point by point.",
        rulings=[JudgeRuling(judge="demo:demo", reasoning="Debater A won.")],
        labels={"A": "ada", "B": "bo"},
    )
    revealed = reveal_names(verdict, {"A": "Ada", "B": "Bo"})
    assert revealed.reasoning == "A close call. Ada rebutted Bo point by point."
    assert revealed.criteria["clarity"]["ada"].note == "Bo was clearer than Ada."
    assert revealed.rulings[0].reasoning == "Ada won."
    assert revealed.labels == {"A": "ada", "B": "bo"}
