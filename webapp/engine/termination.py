"""Judge-side calls made between turns: round decisions (free-form, convergence, quality), per-round
scores, clarification questions, on-topic checks, summaries and the final synthesis.

Each function takes `call(spec, request) -> (text, cost_record)` from the runner, so retries, cost
and timeouts are handled in one place, and returns plain data that the runner stores as an event.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from webapp.engine.judge import VerdictInvalid, anonymised_transcript, assign_labels, extract_json, judge_debate
from webapp.engine.prompts import render_history
from webapp.engine.schedule import TurnSlot
from webapp.models import JudgeSpec, Participant, Turn
from webapp.providers.base import Message, ProviderError, ProviderRequest

if TYPE_CHECKING:
    from webapp.engine.state import DebateState

AuxCall = Callable[[Any, ProviderRequest], Awaitable[tuple[str, dict[str, Any]]]]

_STOPWORDS = set(
    "a an the of to in on for and or but is are was were be been it this that these those with as by at from "
    "should would could will can we you they he she i our your their not no do does did have has had".split()
)


def _judge_spec(state: DebateState) -> JudgeSpec:
    return state.config.judge.judges[0]


def _request(spec: JudgeSpec, state: DebateState, prompt: str, purpose: str, **context: Any) -> ProviderRequest:
    return ProviderRequest(
        model=spec.model,
        system="You are a careful, impartial debate judge. Answer with JSON only when asked for JSON.",
        messages=[Message(role="user", content=prompt)],
        max_tokens=min(spec.max_tokens, 800),
        temperature=spec.temperature,
        json_mode=purpose != "synthesis" and purpose != "summary",
        purpose=purpose,
        context={"topic": state.config.topic, "seed": state.config.seed, **context},
        connect_timeout=state.config.timeouts.connect,
        first_token_timeout=state.config.timeouts.first_token,
    )


async def _ask_json(call: AuxCall, spec: JudgeSpec, request: ProviderRequest) -> tuple[dict[str, Any], list[dict]]:
    calls: list[dict[str, Any]] = []
    text, record = await call(spec, request)
    calls.append(record)
    try:
        return extract_json(text), calls
    except VerdictInvalid as exc:
        repair = request.model_copy(update={"messages": [
            *request.messages, Message(role="assistant", content=text[:4000]),
            Message(role="user", content=f"Invalid: {exc}. Reply with the JSON object only."),
        ]})
        text, record = await call(spec, repair)
        calls.append(record)
        return extract_json(text), calls


def _labelled(state: DebateState, upto_round: int | None = None) -> str:
    debaters = [p.id for p in state.config.participants if p.position != "moderator"]
    labels = assign_labels(debaters, state.config.seed)
    turns = [t for t in state.turns if t.visible and (upto_round is None or t.round <= upto_round)]
    return anonymised_transcript(turns, labels, state.format)


async def decide(call: AuxCall, state: DebateState, round_no: int) -> tuple[dict[str, Any], list[dict]]:
    """Should the round block continue after `round_no`? Returns {stop, reason, …}."""
    kind = state.format.termination.kind
    spec = _judge_spec(state)
    transcript = _labelled(state)
    if kind == "judge":
        prompt = (f"Debate topic: {state.config.topic}\n\nTranscript so far:\n{transcript}\n\n"
                  f"Round {round_no} has just ended. Decide whether another round would add anything new. "
                  'Reply with JSON: {"continue": true or false, "reason": "one sentence"}')
        try:
            data, calls = await _ask_json(call, spec, _request(spec, state, prompt, "round_check", round=round_no))
        except (VerdictInvalid, ProviderError) as exc:
            return {"stop": False, "reason": f"judge gave no usable decision ({exc}); continuing"}, []
        cont = data.get("continue")
        stop = (not cont) if isinstance(cont, bool) else str(cont).lower() in ("false", "no", "stop")
        reason = str(data.get("reason") or ("the judge ended the debate" if stop else "continue"))
        return {"stop": stop, "reason": f"judge decided to stop: {reason}" if stop else reason}, calls
    if kind == "convergence":
        threshold = state.config.convergence_threshold
        prompt = (f"Debate topic: {state.config.topic}\n\nTranscript so far:\n{transcript}\n\n"
                  "Rate how far the participants now agree, 0 (opposed) to 100 (full agreement), and say whether "
                  'their positions are irreconcilable. Reply with JSON: {"agreement": 0-100, '
                  '"irreconcilable": true or false, "reason": "one sentence"}')
        try:
            data, calls = await _ask_json(call, spec, _request(spec, state, prompt, "convergence", round=round_no))
            agreement = max(0.0, min(100.0, float(data.get("agreement", 0))))
        except (VerdictInvalid, ProviderError, TypeError, ValueError) as exc:
            return {"stop": False, "reason": f"judge gave no usable rating ({exc}); continuing"}, []
        irreconcilable = bool(data.get("irreconcilable"))
        if irreconcilable:
            reason = f"the judge declared the positions irreconcilable: {data.get('reason', '')}".strip()
        elif agreement >= threshold:
            reason = f"converged: agreement {agreement:g} reached the threshold {threshold}"
        else:
            reason = f"agreement {agreement:g} is below the threshold {threshold}"
        return {"stop": irreconcilable or agreement >= threshold, "reason": reason, "agreement": agreement,
                "irreconcilable": irreconcilable}, calls
    if kind == "quality":
        threshold = state.config.quality_threshold
        prompt = (f"Problem: {state.config.topic}\n\nWork so far:\n{transcript}\n\nRate the quality of the latest "
                  'refined proposals from 0 to 100. Reply with JSON: {"score": 0-100, "reason": "one sentence"}')
        try:
            data, calls = await _ask_json(call, spec, _request(spec, state, prompt, "quality", round=round_no))
            score = max(0.0, min(100.0, float(data.get("score", 0))))
        except (VerdictInvalid, ProviderError, TypeError, ValueError) as exc:
            return {"stop": False, "reason": f"judge gave no usable score ({exc}); continuing"}, []
        stop = score >= threshold
        reason = (f"quality {score:g} reached the threshold {threshold}" if stop
                  else f"quality {score:g} is below the threshold {threshold}")
        return {"stop": stop, "reason": reason, "score": score}, calls
    return {"stop": False, "reason": "fixed rounds"}, []


async def score_round(call: AuxCall, state: DebateState, round_no: int) -> tuple[dict[str, Any], list[dict]]:
    """Per-round scores by the (first) judge on the transcript so far."""
    calls: list[dict[str, Any]] = []

    async def judge_call(spec: JudgeSpec, request: ProviderRequest) -> str:
        request.context["turn_key"] = f"round-{round_no}/{spec.label}"
        text, record = await call(spec, request)
        calls.append(record)
        return text

    config = state.config.model_copy(update={"judge": state.config.judge.model_copy(
        update={"judges": [state.config.judge.judges[0]], "fallback": None})})
    turns = [t for t in state.turns if t.visible and t.round <= round_no]
    verdict = await judge_debate(judge_call, config, state.format, turns)
    return {"scores": verdict.scores, "winner": verdict.winner, "available": verdict.available}, calls


def brief(state: DebateState) -> str:
    """The user's answers to clarification questions, as a block for prompts."""
    lines: list[str] = []
    for asked in state.clarifications:
        iteration = asked.get("iteration")
        answers = next((a["answers"] for a in state.answers if a.get("iteration") == iteration), {})
        for pid, questions in (asked.get("questions") or {}).items():
            given = answers.get(pid, [])
            for i, question in enumerate(questions):
                answer = given[i] if i < len(given) and given[i] else "(no answer)"
                lines.append(f"Q: {question}\nA: {answer}")
    return "\n".join(lines)


def turn_context(state: DebateState, participant: Participant, slot: TurnSlot) -> dict[str, Any]:
    """Extra context for a turn: the user's clarifications (collaborative)."""
    text = brief(state)
    return {"brief": text} if text else {}


async def ask_clarifications(call: AuxCall, state: DebateState, iteration: int) -> tuple[dict[str, list[str]],
                                                                                        list[dict]]:
    """Each agent's questions for the user (follow-ups after the first iteration)."""
    config = state.config
    questions: dict[str, list[str]] = {}
    calls: list[dict[str, Any]] = []
    known = brief(state)
    for participant in config.participants:
        prompt = (f"Problem: {config.topic}\nYou are {participant.name} ({participant.position}).\n"
                  + (f"What the user already told us:\n{known}\n" if known else "")
                  + f"Ask at most {config.clarification_questions} questions whose answers you need before "
                  "proposing a solution; ask none if you need nothing. "
                  'Reply with JSON: {"questions": ["…"]}')
        request = ProviderRequest(
            model=participant.model, system="You are a careful problem solver.",
            messages=[Message(role="user", content=prompt)], max_tokens=min(participant.max_tokens, 500),
            temperature=participant.temperature, json_mode=True, purpose="clarify",
            context={"topic": config.topic, "seed": config.seed, "iteration": iteration,
                     "max_questions": config.clarification_questions, "turn_key": f"clarify/{iteration}/{participant.id}"},
        )
        text, record = await call(participant, request)
        calls.append(record)
        try:
            raw = extract_json(text).get("questions") or []
        except VerdictInvalid:
            raw = [line.strip("-• ").strip() for line in text.splitlines() if line.strip().endswith("?")]
        items = [str(q).strip()[:500] for q in raw if str(q).strip()]
        questions[participant.id] = items[: config.clarification_questions]
    return questions, calls


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z'-]{2,}", text.lower()) if w not in _STOPWORDS}


async def check_on_topic(call: AuxCall, state: DebateState, participant: Participant, text: str) -> str | None:
    """Strict mode: a note flagging an off-topic turn, else None (judge model, or lexical offline)."""
    if not state.config.strict:
        return None
    spec = _judge_spec(state)
    if spec.provider == "demo":
        overlap = _content_words(text) & _content_words(state.config.topic)
        return None if overlap else "off-topic: shares no key words with the topic (lexical check)"
    prompt = (f"Topic: {state.config.topic}\n\nTurn:\n{text}\n\nIs this turn on topic? "
              'Reply with JSON: {"on_topic": true or false, "reason": "one sentence"}')
    try:
        data, _ = await _ask_json(call, spec, _request(spec, state, prompt, "on_topic"))
    except (VerdictInvalid, ProviderError):
        return None
    if data.get("on_topic") is False:
        return f"off-topic: {data.get('reason', 'the judge flagged this turn')}"
    return None


async def summarise(call: AuxCall, state: DebateState, turns: list[Turn]) -> tuple[str, dict[str, Any]]:
    spec = _judge_spec(state)
    text = render_history(turns, state.config, state.format)
    points = [t.text.split(".")[0][:120] for t in turns]
    prompt = ("Summarise these debate turns in a short paragraph per speaker, keeping every argument and "
              f"concession:\n\n{text}")
    request = _request(spec, state, prompt, "summary", points=points, turn_key=f"summary/{len(turns)}")
    return await call(spec, request)


async def synthesize(call: AuxCall, state: DebateState) -> tuple[str, dict[str, Any]] | None:
    """The judge's final solution for formats that end in a synthesis."""
    if not state.format.judge_synthesis:
        return None
    spec = _judge_spec(state)
    transcript = render_history([t for t in state.turns if t.visible], state.config, state.format)
    known = brief(state)
    prompt = (f"Problem: {state.config.topic}\n" + (f"User's clarifications:\n{known}\n" if known else "")
              + f"\nAll rounds of proposals, critiques and refinements:\n{transcript}\n\n"
              "Write the final solution, drawing on the best of every round.")
    return await call(spec, _request(spec, state, prompt, "synthesis", turn_key="synthesis"))


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)
