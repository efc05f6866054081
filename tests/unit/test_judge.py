"""The judge: JSON extraction, verdict validation, the repair request, anonymisation, panels, fallback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from webapp.engine.answers import verdict_model
from webapp.engine.formats import get_format
from webapp.engine.judge import (
    anonymised_transcript,
    assign_labels,
    combine,
    judge_debate,
    rule_one,
    verdict_request,
)
from webapp.engine.judge_reply import VerdictInvalid, extract_json, parse_ruling
from webapp.models import DebateConfig, JudgeConfig, JudgeRuling, JudgeSpec, Participant, Turn, utcnow
from webapp.providers.base import ErrorKind, ProviderError, ProviderRequest

CRITERIA = ["logic", "evidence"]
FMT = get_format("classic")


def make_config(**judge: Any) -> DebateConfig:
    return DebateConfig(
        topic="Should cities ban cars from their centres?",
        participants=[Participant(name="Alice Pro", position="pro"), Participant(name="Bob Con", position="con")],
        judge=JudgeConfig(criteria=CRITERIA, **judge),
        seed=7,
    )


def turn(key: str, speaker: str, text: str, visible: bool = True) -> Turn:
    now = utcnow()
    return Turn(key=key, phase="opening", round=1, speaker=speaker, text=text, started_at=now, finished_at=now,
                visible=visible)


TURNS = [
    turn("opening/r1/alice-pro/0", "alice-pro", "I am Alice Pro and cars choke our streets."),
    turn("opening/r1/bob-con/1", "bob-con", "Alice Pro is wrong; Bob Con says shops need cars."),
]


def verdict_text(labels: dict[str, str], scores: dict[str, float], winner: str = "tie", **extra: Any) -> str:
    """A valid verdict reply for these labels (`scores` by label)."""
    data = {
        "winner": winner,
        "scores": scores,
        "criteria": {c: {lab: {"score": scores[lab], "note": f"{lab} on {c}"} for lab in labels} for c in CRITERIA},
        "reasoning": "Both argued; one argued better.",
        "confidence": 0.8,
        **extra,
    }
    return json.dumps(data)


Reply = str | ProviderError | Callable[[ProviderRequest], str]


def about(scores: dict[str, float], winner: str | None) -> Callable[[ProviderRequest], str]:
    """A valid verdict reply given by participant id, written in the labels of the request it answers
    (each judge sees its own order and labels)."""

    def reply(request: ProviderRequest) -> str:
        labels: dict[str, str] = request.context["label_ids"]
        by_id = {pid: lab for lab, pid in labels.items()}
        return verdict_text(labels, {by_id[pid]: score for pid, score in scores.items()},
                            winner=by_id[winner] if winner else "tie")

    return reply


class ScriptedJudges:
    """A `JudgeCall` answering each judge (by model) from its own queue; records every request."""

    def __init__(self, replies: dict[str, list[Reply]]) -> None:
        self.replies = {model: list(items) for model, items in replies.items()}
        self.requests: list[tuple[str, ProviderRequest]] = []

    async def __call__(self, spec: JudgeSpec, request: ProviderRequest) -> str:
        self.requests.append((spec.model, request))
        reply = self.replies[spec.model].pop(0)
        if isinstance(reply, ProviderError):
            raise reply
        return reply if isinstance(reply, str) else reply(request)


def fatal(message: str = "invalid API key") -> ProviderError:
    return ProviderError(ErrorKind.FATAL, "openai", message, status=401, reason="auth")


# --- extracting JSON ---------------------------------------------------------------------------


def test_extract_json_keeps_the_whole_object_when_a_string_holds_a_raw_line_break() -> None:
    # Gemma 3 270M under llama-cpp-python's grammar wrote notes with raw line breaks: the outer object
    # was refused as JSON and the first inner object ({"score", "note"}) was taken for the verdict.
    reply = '{"criteria": {"a": {"A": {"score": 0, "note": " x\n- "}}}, "winner": "tie"}'
    assert extract_json(reply) == {"criteria": {"a": {"A": {"score": 0, "note": " x\n- "}}}, "winner": "tie"}


def test_extract_json_bare_fenced_and_in_prose() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Here you go:\n```json\n{"a": 2}\n```\nThanks.') == {"a": 2}
    assert extract_json('```\n{"a": 3}\n```') == {"a": 3}
    assert extract_json('My verdict is {"a": 4, "b": {"c": "}"}} and that is final.') == {"a": 4, "b": {"c": "}"}}
    # stray braces in the prose before the object do not hide it
    assert extract_json('Scores {roughly} follow: {"a": 5}') == {"a": 5}


def test_extract_json_without_an_object_is_invalid() -> None:
    with pytest.raises(VerdictInvalid, match="no JSON object"):
        extract_json("I think A won, clearly.")
    with pytest.raises(VerdictInvalid):
        extract_json("[1, 2, 3]")


# --- validating a ruling -----------------------------------------------------------------------


def test_parse_ruling_maps_labels_back_to_participants() -> None:
    labels = {"A": "bob-con", "B": "alice-pro"}
    text = "```json\n" + verdict_text(labels, {"A": 61, "B": 77}, winner="Debater B") + "\n```"
    ruling = parse_ruling(text, labels, CRITERIA, "demo:demo")
    assert ruling.winner == "alice-pro"
    assert ruling.scores == {"bob-con": 61, "alice-pro": 77}
    assert ruling.criteria["logic"]["alice-pro"].score == 77
    assert ruling.criteria["evidence"]["bob-con"].note == "A on evidence"
    assert ruling.confidence == 0.8
    assert ruling.error is None


def test_parse_ruling_tie_percent_confidence_and_one_line_notes() -> None:
    labels = {"A": "x", "B": "y"}
    data = json.loads(verdict_text(labels, {"A": 50, "B": 50}, winner="tie", confidence=85))
    data["criteria"]["logic"]["A"]["note"] = "first line\nsecond line"
    ruling = parse_ruling(json.dumps(data), labels, CRITERIA, "j")
    assert ruling.winner is None
    assert ruling.confidence == pytest.approx(0.85)
    assert ruling.criteria["logic"]["x"].note == "first line second line"


@pytest.mark.parametrize("impossible", [257319, -3, 100.5])
def test_an_impossible_confidence_is_dropped_not_the_verdict(impossible: float) -> None:
    """A grammar that keeps to the schema's types but not its bounds (llama-cpp-python) wrote a confidence
    of 257319 in an otherwise complete verdict: the verdict stands, with no confidence."""
    labels = {"A": "x", "B": "y"}
    data = json.loads(verdict_text(labels, {"A": 40, "B": 70}, winner="B", confidence=impossible))
    ruling = parse_ruling(json.dumps(data), labels, CRITERIA, "j")
    assert ruling.error is None and ruling.winner == "y" and ruling.confidence is None


def test_the_verdict_schema_still_asks_for_a_confidence_from_0_to_1() -> None:
    schema = verdict_model(["A", "B"], CRITERIA).model_json_schema()
    confidence = schema["properties"]["confidence"]
    assert (confidence["type"], confidence["minimum"], confidence["maximum"]) == ("number", 0, 1)
    assert "confidence" in schema["required"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["scores"].pop("B"), "'scores' is missing 'B'"),
        (lambda d: d["scores"].update(A=140), "scores.A must be at most 100, got 140"),
        (lambda d: d["scores"].update(A="lots"), "scores.A must be a number"),
        (lambda d: d.update(winner="C"), "'winner' must be 'A', 'B' or 'tie', got 'C'"),
        (lambda d: d["criteria"].pop("evidence"), "'criteria' is missing 'evidence'"),
        (lambda d: d["criteria"]["logic"].pop("A"), "'criteria.logic' is missing 'A'"),
        (lambda d: d.update(reasoning=""), "reasoning must not be empty"),
        (lambda d: d.update(scores=[1, 2]), "'scores' must be an object"),
        (lambda d: d.update(confidence=True), "confidence must be a number from 0 to 1"),
        (lambda d: d.pop("confidence"), "the field 'confidence' is missing"),
    ],
)
def test_parse_ruling_rejects_invalid_verdicts_with_a_precise_reason(mutate: Any, message: str) -> None:
    labels = {"A": "x", "B": "y"}
    data = json.loads(verdict_text(labels, {"A": 60, "B": 70}))
    mutate(data)
    with pytest.raises(VerdictInvalid, match=message):
        parse_ruling(json.dumps(data), labels, CRITERIA, "j")


# --- fairness ----------------------------------------------------------------------------------


def test_labels_are_a_seeded_shuffle() -> None:
    ids = ["p1", "p2", "p3"]
    first = assign_labels(ids, seed=1)
    assert list(first) == ["A", "B", "C"]
    assert sorted(first.values()) == ids
    assert assign_labels(ids, seed=1) == first  # deterministic for a seed (stored and reproducible)
    who_is_a = {assign_labels(ids, seed=s)["A"] for s in range(40)}
    assert who_is_a == set(ids)  # the first speaker is not always "A"


def test_judge_sees_neutral_labels_only_and_is_told_to_ignore_length() -> None:
    config = make_config()
    labels = assign_labels(["alice-pro", "bob-con"], config.seed)
    hidden = turn("prep/r1/alice-pro/0", "alice-pro", "secret notes", visible=False)
    request = verdict_request(config.judge.judges[0], config, FMT, [*TURNS, hidden], labels)
    prompt = request.messages[0].content
    assert "Alice" not in prompt and "Bob" not in prompt
    assert "alice-pro" not in prompt and "bob-con" not in prompt
    by_id = {pid: lab for lab, pid in labels.items()}
    assert f"Debater {by_id['alice-pro']}:\nI am Debater {by_id['alice-pro']} and cars" in prompt
    assert f"Debater {by_id['bob-con']} says shops need cars" in prompt
    assert "secret notes" not in prompt
    assert "Ignore length" in prompt
    assert request.json_mode is True
    assert request.context["labels"] == ["A", "B"]


def test_anonymised_transcript_keeps_words_that_merely_contain_a_name() -> None:
    labels = {"A": "pro"}
    text = anonymised_transcript([turn("k", "pro", "Pro argues the pros, a pro-growth view.")], labels, FMT,
                                 names={"pro": "Pro"})
    assert "Debater A argues the pros, a pro-growth view." in text


# --- one judge: repair -------------------------------------------------------------------------


async def test_invalid_reply_gets_one_repair_request_quoting_the_error() -> None:
    config = make_config()
    labels = assign_labels(["alice-pro", "bob-con"], config.seed)
    good = "Sure! Here it is: " + verdict_text(labels, {"A": 70, "B": 60}, winner="A") + " Hope that helps."
    judges = ScriptedJudges({"demo": ['{"winner": "A", "scores": {"A": 70}}', good]})
    result = await rule_one(judges, config.judge.judges[0], config, FMT, TURNS, labels)
    assert result.ruling.error is None
    assert result.ruling.winner == labels["A"]
    assert len(judges.requests) == 2
    repair = judges.requests[1][1]
    assert repair.messages[-2].role == "assistant"
    assert repair.messages[-2].content == '{"winner": "A", "scores": {"A": 70}}'
    assert "'scores' is missing 'B'" in repair.messages[-1].content
    assert repair.context["repair"] is True


async def test_still_invalid_after_repair_is_an_error_with_every_raw_reply() -> None:
    config = make_config()
    labels = assign_labels(["alice-pro", "bob-con"], config.seed)
    judges = ScriptedJudges({"demo": ["A won.", "I insist: A won."]})
    result = await rule_one(judges, config.judge.judges[0], config, FMT, TURNS, labels)
    assert result.ruling.error is not None
    assert "after one repair request" in result.ruling.error
    assert result.raw == ["A won.", "I insist: A won."]
    assert len(judges.requests) == 2  # exactly one repair, never more


async def test_verdict_unavailable_keeps_the_raw_text_and_never_defaults() -> None:
    config = make_config()
    judges = ScriptedJudges({"demo": ["no json here", "still none"]})
    verdict = await judge_debate(judges, config, FMT, TURNS)
    assert verdict.available is False
    assert verdict.winner is None and verdict.scores == {}
    assert "no json here" in (verdict.raw_text or "") and "still none" in (verdict.raw_text or "")
    assert verdict.reasoning.startswith("Verdict unavailable.")
    assert verdict.rulings[0].error


# --- panels and the fallback -------------------------------------------------------------------


def panel_config(*models: str, fallback: str | None = None) -> DebateConfig:
    return make_config(judges=[JudgeSpec(model=m) for m in models],
                       fallback=JudgeSpec(model=fallback) if fallback else None)


async def test_panel_mean_and_disagreement() -> None:
    config = panel_config("j1", "j2", "j3")
    judges = ScriptedJudges({
        "j1": [about({"alice-pro": 80, "bob-con": 60}, "alice-pro")],
        "j2": [about({"alice-pro": 70, "bob-con": 70}, None)],
        "j3": [about({"alice-pro": 60, "bob-con": 80}, "bob-con")],
    })
    verdict = await judge_debate(judges, config, FMT, TURNS)
    assert verdict.available
    assert [r.judge for r in verdict.rulings] == ["demo:j1", "demo:j2", "demo:j3"]
    assert [r.winner for r in verdict.rulings] == ["alice-pro", None, "bob-con"]
    assert verdict.scores == {"alice-pro": 70.0, "bob-con": 70.0}
    assert verdict.winner is None  # no majority and equal means: a tie
    # spread of each participant's scores is pstdev(80, 70, 60) = 8.16…, the mean of both is the same
    assert verdict.disagreement == pytest.approx(8.2)
    assert "split on the winner" in verdict.reasoning and "no majority, so no winner" in verdict.reasoning
    assert verdict.criteria["logic"]["alice-pro"].score == 70.0


def test_panel_winner_by_mean_and_zero_disagreement_when_judges_agree() -> None:
    labels = {"A": "x", "B": "y"}
    rulings = [
        JudgeRuling(judge="j1", winner="x", scores={"x": 90, "y": 50}),
        JudgeRuling(judge="j2", winner="x", scores={"x": 90, "y": 50}),
    ]
    verdict = combine(rulings, labels, [])
    assert verdict.winner == "x" and verdict.disagreement == 0.0


async def test_panel_judges_run_concurrently() -> None:
    config = panel_config("j1", "j2", "j3")
    started: set[str] = set()
    everyone_started = asyncio.Event()

    async def call(spec: JudgeSpec, request: ProviderRequest) -> str:
        started.add(spec.model)
        if len(started) == 3:
            everyone_started.set()
        await everyone_started.wait()  # a sequential panel would wait here forever
        return about({"alice-pro": 50, "bob-con": 60}, "bob-con")(request)

    verdict = await asyncio.wait_for(judge_debate(call, config, FMT, TURNS), timeout=5)
    assert verdict.available and verdict.winner == "bob-con"


async def test_a_failed_judge_is_reported_and_the_rest_still_rule() -> None:
    config = panel_config("j1", "j2", fallback="backup")
    judges = ScriptedJudges({"j1": [fatal()], "j2": [about({"alice-pro": 40, "bob-con": 90}, "bob-con")],
                             "backup": []})
    verdict = await judge_debate(judges, config, FMT, TURNS)
    assert verdict.available and verdict.winner == "bob-con"
    failed = [r for r in verdict.rulings if r.error]
    assert [r.judge for r in failed] == ["demo:j1"] and "invalid API key" in (failed[0].error or "")
    assert verdict.scores == {"alice-pro": 40.0, "bob-con": 90.0}
    assert "demo:j1 failed" in verdict.reasoning
    assert all(model != "backup" for model, _ in judges.requests)  # the fallback was not needed


async def test_fallback_judge_takes_over_when_the_only_judge_fails() -> None:
    config = panel_config("main", fallback="backup")
    judges = ScriptedJudges({"main": [fatal("model not found")],
                             "backup": [about({"alice-pro": 66, "bob-con": 55}, "alice-pro")]})
    verdict = await judge_debate(judges, config, FMT, TURNS)
    assert verdict.available and verdict.winner == "alice-pro"
    assert [(r.judge, r.error is None) for r in verdict.rulings] == [("demo:main", False),
                                                                    ("demo:backup (fallback)", True)]


async def test_without_fallback_a_failed_only_judge_means_verdict_unavailable() -> None:
    config = panel_config("main")
    judges = ScriptedJudges({"main": [fatal()]})
    verdict = await judge_debate(judges, config, FMT, TURNS)
    assert verdict.available is False
    assert "invalid API key" in verdict.reasoning


def test_a_panel_refuses_the_same_model_twice() -> None:
    with pytest.raises(ValueError, match=r"judges\[1\] repeats demo:same; a panel needs different models"):
        panel_config("same", "same")
