"""The verdict's schema, and the judge-side bias controls: a fresh order per judge, judging twice with the
order reversed (a judge that flips is undecided), the length flag, ties and panel splits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from webapp.engine.answers import json_schema, questions_model, verdict_model
from webapp.engine.formats import get_format
from webapp.engine.judge import (
    UNDECIDED,
    anonymised_transcript,
    combine,
    judge_debate,
    labels_for,
    presentation_order,
    verdict_request,
)
from webapp.engine.panel import decided_winner, panel_decision
from webapp.models import DebateConfig, JudgeConfig, JudgeRuling, JudgeSpec, Participant, Turn, utcnow
from webapp.providers.base import ProviderRequest

FMT = get_format("classic")
CRITERIA = ["logic", "evidence"]


def make_config(*models: str, swap: bool = False, seed: int = 7, n: int = 2) -> DebateConfig:
    names = ["Alice", "Bob", "Cleo", "Dan"][:n]
    return DebateConfig(
        topic="Should cities ban cars from their centres?",
        participants=[Participant(name=name, position=["pro", "con", "skeptic", "optimist"][i])
                      for i, name in enumerate(names)],
        judge=JudgeConfig(judges=[JudgeSpec(model=m) for m in models or ("demo",)], criteria=CRITERIA,
                          swap_sides=swap),
        seed=seed,
    )


def turn(speaker: str, words: int, phase: str = "opening", rnd: int = 1) -> Turn:
    now = utcnow()
    return Turn(key=f"{phase}/r{rnd}/{speaker}", phase=phase, round=rnd, speaker=speaker,
                text=" ".join(["word"] * words), started_at=now, finished_at=now)


def reply_for(request: ProviderRequest, scores: dict[str, float], winner: str | None) -> str:
    """A valid verdict in the labels of this request, given by participant id."""
    labels: dict[str, str] = request.context["label_ids"]
    by_id = {pid: lab for lab, pid in labels.items()}
    return json.dumps({
        "criteria": {c: {by_id[p]: {"score": s, "note": f"Debater {by_id[p]} on {c}"} for p, s in scores.items()}
                     for c in CRITERIA},
        "reasoning": f"Debater {by_id[winner] if winner else 'A'} argued better.",
        "scores": {by_id[p]: s for p, s in scores.items()},
        "winner": by_id[winner] if winner else "tie",
        "confidence": 0.7,
    })


class Judges:
    """A scripted `JudgeCall`: each judge (by model) answers by a rule of what it is shown."""

    def __init__(self, rules: dict[str, Any]) -> None:
        self.rules = rules
        self.requests: list[tuple[str, ProviderRequest]] = []

    async def __call__(self, spec: JudgeSpec, request: ProviderRequest) -> str:
        self.requests.append((spec.model, request))
        return str(self.rules[spec.model](request))


def steady(winner: str, loser: str) -> Any:
    """A judge that picks the same participant whatever the order."""
    return lambda request: reply_for(request, {winner: 80, loser: 60}, winner)


def other(pid: str) -> str:
    return "bob" if pid == "alice" else "alice"


def first_shown(request: ProviderRequest) -> str:
    """A judge with a position bias: it always picks whoever it was shown first (label A)."""
    first = request.context["label_ids"]["A"]
    return reply_for(request, {first: 75, other(first): 65}, first)


TURNS = [turn("alice", 100), turn("bob", 100)]


# --- the schema ----------------------------------------------------------------------------------


def test_verdict_schema_requires_every_label_and_enumerates_the_winner() -> None:
    schema = json_schema(verdict_model(["A", "B", "C"], ["logic", "Use of evidence"]))
    assert schema["required"] == ["criteria", "reasoning", "scores", "winner", "confidence"]
    assert schema["properties"]["winner"] == {**schema["properties"]["winner"], "type": "string",
                                              "enum": ["A", "B", "C", "tie"]}
    scores = schema["properties"]["scores"]
    assert scores["required"] == ["A", "B", "C"] and scores["additionalProperties"] is False
    assert all(s["type"] == "integer" and s["minimum"] == 0 and s["maximum"] == 100
               for s in scores["properties"].values())
    assert schema["properties"]["confidence"]["minimum"] == 0 and schema["properties"]["confidence"]["maximum"] == 1
    criteria = schema["properties"]["criteria"]
    assert criteria["required"] == ["logic", "Use of evidence"]
    assert criteria["properties"]["logic"]["required"] == ["A", "B", "C"]
    assert criteria["properties"]["logic"]["properties"]["B"]["required"] == ["score", "note"]

    def objects(node: Any) -> list[dict[str, Any]]:
        if isinstance(node, dict):
            found = [node] if node.get("type") == "object" else []
            return found + [o for v in node.values() for o in objects(v)]
        return [o for v in node for o in objects(v)] if isinstance(node, list) else []

    # strict: every object requires all of its properties and allows no others; nothing to dereference
    assert all(o["additionalProperties"] is False and o["required"] == list(o["properties"]) for o in objects(schema))
    assert "$ref" not in json.dumps(schema) and "$defs" not in json.dumps(schema)


def test_questions_schema_bounds_the_list() -> None:
    schema = json_schema(questions_model(3))
    assert schema["properties"]["questions"] == {**schema["properties"]["questions"], "type": "array",
                                                 "maxItems": 3, "items": {"type": "string"}}


def test_verdict_prompt_explains_the_fields_without_a_placeholder_example() -> None:
    config = make_config()
    labels = labels_for(presentation_order(["alice", "bob"], config.seed))
    request = verdict_request(config.judge.judges[0], config, FMT, TURNS, labels)
    prompt = request.messages[0].content
    assert "0-100" not in prompt and "0.0-1.0" not in prompt and '"scores": {' not in prompt
    assert '"winner": the label of the debater who argued better (A or B), or "tie"' in prompt
    assert request.json_schema is not None and request.schema_name == "verdict"
    assert request.json_schema["properties"]["scores"]["required"] == ["A", "B"]


# --- order -----------------------------------------------------------------------------------------


def test_each_judge_sees_its_own_seeded_order() -> None:
    ids = ["p1", "p2", "p3", "p4"]
    orders = [presentation_order(ids, seed=3, judge_index=i) for i in range(5)]
    assert all(sorted(o) == ids for o in orders)
    assert len({tuple(o) for o in orders}) > 1  # judges do not share one order
    assert orders == [presentation_order(ids, seed=3, judge_index=i) for i in range(5)]  # replays are stable


async def test_rulings_store_the_order_shown_and_labels_follow_it() -> None:
    config = make_config("j1", "j2", "j3", n=3)
    judges = Judges({m: (lambda r: reply_for(r, {"alice": 70, "bob": 60, "cleo": 50}, "alice"))
                     for m in ("j1", "j2", "j3")})
    verdict = await judge_debate(judges, config, FMT, [*TURNS, turn("cleo", 100)])
    for index, ruling in enumerate(verdict.rulings):
        assert ruling.order == presentation_order(["alice", "bob", "cleo"], config.seed, index)
        request = judges.requests[index][1]
        assert request.context["label_ids"] == labels_for(ruling.order)
        # the names in each judge's text are restored with that judge's own labels
        assert ruling.reasoning == "Alice argued better."
        assert ruling.criteria["logic"]["cleo"].note == "Cleo on logic"
    assert verdict.labels == labels_for(verdict.rulings[0].order)


def test_turns_given_side_by_side_follow_the_order_shown_and_exchanges_keep_theirs() -> None:
    fmt = get_format("structured")  # everyone in a phase speaks in parallel
    turns = [turn("alice", 3, "opening"), turn("bob", 4, "opening")]
    ab = anonymised_transcript(turns, {"A": "alice", "B": "bob"}, fmt)
    ba = anonymised_transcript(turns, {"A": "bob", "B": "alice"}, fmt)
    assert ab.index("word word word\n") < ab.index("word word word word")
    assert ba.index("word word word word") < ba.index("word word word\n")
    sequential = anonymised_transcript(turns, {"A": "bob", "B": "alice"}, get_format("oxford"))
    assert sequential.index("Debater B:") < sequential.index("Debater A:")  # spoken order kept


# --- side swap ---------------------------------------------------------------------------------------


async def test_swap_rejudges_with_the_order_reversed_and_a_steady_judge_decides() -> None:
    config = make_config("j1", swap=True)
    judges = Judges({"j1": steady("bob", "alice")})
    verdict = await judge_debate(judges, config, FMT, TURNS)
    first, second = (r for _, r in judges.requests)
    assert list(second.context["label_ids"].values()) == list(first.context["label_ids"].values())[::-1]
    (ruling,) = verdict.rulings
    assert ruling.winner == "bob" and ruling.swap_winner == "bob" and ruling.flipped is False
    assert verdict.winner == "bob" and verdict.undecided_judges == []


async def test_a_judge_that_flips_with_the_order_is_undecided() -> None:
    config = make_config("biased", swap=True)
    verdict = await judge_debate(Judges({"biased": first_shown}), config, FMT, TURNS)
    (ruling,) = verdict.rulings
    assert ruling.flipped is True and ruling.winner != ruling.swap_winner
    assert verdict.winner is None and verdict.undecided_judges == ["demo:biased"]
    assert any(UNDECIDED in note for note in verdict.notes)
    assert UNDECIDED in verdict.reasoning and "does not count" in verdict.reasoning


async def test_a_flipping_judge_does_not_vote_in_a_panel() -> None:
    config = make_config("biased", "steady", swap=True)
    verdict = await judge_debate(Judges({"biased": first_shown, "steady": steady("alice", "bob")}),
                                 config, FMT, TURNS)
    biased, steady_ruling = verdict.rulings
    assert biased.flipped is True and steady_ruling.flipped is False
    assert verdict.winner == "alice" and verdict.undecided_judges == ["demo:biased"]
    assert "demo:biased is undecided" in verdict.reasoning


async def test_a_tie_that_becomes_a_win_is_a_flip() -> None:
    calls = {"n": 0}

    def tie_then_win(request: ProviderRequest) -> str:
        calls["n"] += 1
        return reply_for(request, {"alice": 70, "bob": 70}, None) if calls["n"] == 1 else \
            reply_for(request, {"alice": 75, "bob": 65}, "alice")

    verdict = await judge_debate(Judges({"j": tie_then_win}), make_config("j", swap=True), FMT, TURNS)
    assert verdict.rulings[0].winner is None and verdict.rulings[0].swap_winner == "alice"
    assert verdict.rulings[0].flipped is True and verdict.undecided_judges == ["demo:j"]


async def test_without_swap_each_judge_rules_once() -> None:
    judges = Judges({"j1": first_shown})
    verdict = await judge_debate(judges, make_config("j1"), FMT, TURNS)
    assert len(judges.requests) == 1 and verdict.rulings[0].flipped is None


# --- length ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("alice_words", "flag"), [(151, True), (150, False), (90, False)])
async def test_word_counts_and_the_length_flag(alice_words: int, flag: bool) -> None:
    turns = [turn("alice", alice_words), turn("bob", 60), turn("bob", 40, "closing")]
    verdict = await judge_debate(Judges({"j": steady("alice", "bob")}), make_config("j"), FMT, turns)
    assert verdict.word_counts == {"alice": alice_words, "bob": 100}
    assert verdict.winner == "alice" and verdict.length_flag is flag
    assert any(n.startswith("Length: the winner, Alice, spoke") for n in verdict.notes) is flag


def test_the_length_flag_compares_with_the_strongest_loser() -> None:
    rulings = [JudgeRuling(judge="j", winner="a", scores={"a": 80, "b": 70, "c": 20})]
    labels = {"A": "a", "B": "b", "C": "c"}
    long_vs_runner_up = combine(rulings, labels, [], words={"a": 400, "b": 200, "c": 390})
    assert long_vs_runner_up.length_flag is True  # b, the strongest loser, spoke half as much
    close_to_runner_up = combine(rulings, labels, [], words={"a": 400, "b": 390, "c": 10})
    assert close_to_runner_up.length_flag is False


def test_a_tie_is_never_length_flagged() -> None:
    verdict = combine([JudgeRuling(judge="j", winner=None, scores={"a": 70, "b": 70})], {"A": "a", "B": "b"}, [],
                      words={"a": 900, "b": 10})
    assert verdict.winner is None and verdict.length_flag is False and verdict.available


# --- ties and splits ---------------------------------------------------------------------------------------


def test_a_majority_decides_over_the_mean_score() -> None:
    rulings = [
        JudgeRuling(judge="j1", winner="x", scores={"x": 61, "y": 60}, confidence=0.6),
        JudgeRuling(judge="j2", winner="x", scores={"x": 62, "y": 60}, confidence=0.5),
        JudgeRuling(judge="j3", winner="y", scores={"x": 10, "y": 95}, confidence=0.9),
    ]
    verdict = combine(rulings, {"A": "x", "B": "y"}, [], names={"x": "Xena", "y": "Yuri"})
    assert verdict.scores["y"] > verdict.scores["x"]  # the mean favours y …
    assert verdict.winner == "x"  # … but two judges of three picked x
    assert "j3 → Yuri" in verdict.reasoning and "the majority decides" in verdict.reasoning
    assert [(r.winner, r.confidence) for r in verdict.rulings] == [("x", 0.6), ("x", 0.5), ("y", 0.9)]


def test_an_even_split_has_no_winner_whatever_the_mean_scores_and_says_so() -> None:
    rulings = [JudgeRuling(judge="j1", winner="x", scores={"x": 70, "y": 60}),
               JudgeRuling(judge="j2", winner="y", scores={"x": 50, "y": 65})]
    verdict = combine(rulings, {"A": "x", "B": "y"}, [])
    assert verdict.scores["y"] > verdict.scores["x"]  # the mean favours y, but it never picks the winner
    assert verdict.winner is None and "no majority, so no winner" in verdict.reasoning
    decision = panel_decision(verdict)
    assert (decision.winner, decision.how, decision.split) == (None, "split", "1–1")
    # A verdict stored under the old rule (the mean broke the split) reads by the rule all the same.
    old = verdict.model_copy(update={"winner": "y"})
    assert decided_winner(old) is None and panel_decision(old).words == "judges split 1–1: no winner"


def test_a_unanimous_tie() -> None:
    rulings = [JudgeRuling(judge="j1", winner=None, scores={"x": 70, "y": 70}),
               JudgeRuling(judge="j2", winner=None, scores={"x": 66, "y": 68})]
    verdict = combine(rulings, {"A": "x", "B": "y"}, [])
    assert verdict.winner is None and verdict.available and "split" not in verdict.reasoning
