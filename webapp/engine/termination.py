"""Judge-side calls made between turns: round decisions (free-form, convergence, collaborative
evaluation), per-round scores, clarification questions, on-topic checks, summaries, the synthesis,
and the extra context each turn gets (the user's clarifications, collaborative guidance).

Each function takes `call(spec, request) -> (text, cost_record)` from the runner, so retries, cost
and timeouts are handled in one place, and returns plain data that the runner stores as an event.
Every JSON answer is a pydantic model (`webapp.engine.answers`) whose schema asks the provider for a
structured answer; the cost records of those calls say which mode was used (`output_mode`).
Judge-side calls go to the first judge; when it fails, the configured fallback judge takes over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from webapp.engine.answers import (
    Answer,
    AnswerInvalid,
    ContinueAnswer,
    ConvergenceAnswer,
    OnTopicAnswer,
    QualityAnswer,
    describe,
    json_schema,
    questions_model,
    validate,
)
from webapp.engine.events import CallRecord, RoundDecisionPayload, RoundScoresPayload
from webapp.engine.judge import anonymised_transcript, assign_labels, judge_debate
from webapp.engine.judge_reply import VerdictInvalid, extract_json, repair_request
from webapp.engine.prompts import render_history
from webapp.engine.schedule import TurnSlot
from webapp.engine.spending import BudgetExceeded
from webapp.models import JudgeSpec, Participant, Turn
from webapp.providers.base import Message, ProviderError, ProviderRequest
from webapp.providers.lexical import content_words, lexical_on_topic  # noqa: F401 (importable from here too)
from webapp.providers.structured import mode_for
from webapp.wording import counted, every

if TYPE_CHECKING:
    from webapp.engine.state import DebateState

# `call(spec, request)` → (text, cost record); with `commit_cost=True` the cost is committed at once.
AuxCall = Callable[..., Awaitable[tuple[str, CallRecord]]]
RequestFor = Callable[[JudgeSpec], ProviderRequest]



# --- judge calls with fallback -----------------------------------------------------------------


def judge_specs(state: DebateState) -> list[JudgeSpec]:
    """Who answers judge-side questions: the first judge, then the fallback judge if configured."""
    judge = state.config.judge
    return [judge.judges[0], *([judge.fallback] if judge.fallback is not None else [])]


def answer_fields(model: type[Answer]) -> str:
    """The answer's fields in words, for the prompt (the schema says the same to the provider)."""
    return "Answer with one JSON object with exactly these fields:\n" + describe(json_schema(model))


def _request(spec: JudgeSpec, state: DebateState, prompt: str, purpose: str, answer: type[Answer] | None = None,
             **context: Any) -> ProviderRequest:
    """A judge-side request; with an `answer` model, its JSON schema asks for a structured answer."""
    return ProviderRequest(
        model=spec.model,
        system="You are a careful, impartial debate judge. Answer with JSON only when asked for JSON.",
        messages=[Message(role="user", content=prompt + (f"\n\n{answer_fields(answer)}" if answer else ""))],
        max_tokens=min(spec.max_tokens, 800),
        temperature=spec.temperature,
        json_mode=answer is not None,
        json_schema=json_schema(answer) if answer is not None else None,
        schema_name=purpose,
        purpose=purpose,
        context={"topic": state.config.topic, "seed": state.config.seed, **context},
    )  # time limits: set per call for the provider's kind


async def _ask_text(call: AuxCall, state: DebateState, request_for: RequestFor) -> tuple[str, list[CallRecord]]:
    """Ask the judge; on a provider failure ask the fallback judge. Raises the last ProviderError."""
    failure: ProviderError | None = None
    for spec in judge_specs(state):
        try:
            text, record = await call(spec, request_for(spec))
        except ProviderError as exc:
            failure = exc
            continue
        return text, [record]
    assert failure is not None
    raise failure


async def _ask_answer(call: AuxCall, state: DebateState, request_for: RequestFor, model: type[Answer],
                      calls: list[CallRecord]) -> Any:
    """Ask for a structured answer validated by `model`, with one repair request quoting the field that
    failed. Every call made is appended to `calls` (also when this raises), so the money spent is always
    recorded. Raises `VerdictInvalid` when the repaired answer is still unusable."""
    failure: ProviderError | None = None
    for spec in judge_specs(state):
        request = request_for(spec)
        try:
            text, record = await call(spec, request)
        except ProviderError as exc:
            failure = exc
            continue
        calls.append(record.model_copy(update={"output_mode": mode_for(spec)}))
        try:
            return _validated(text, model)
        except VerdictInvalid as exc:
            text, record = await call(spec, repair_request(request, text, str(exc)))
            calls.append(record.model_copy(update={"output_mode": mode_for(spec), "repair": True}))
            return _validated(text, model)
    assert failure is not None
    raise failure


def _validated(text: str, model: type[Answer]) -> Any:
    try:
        return validate(model, extract_json(text))
    except AnswerInvalid as exc:
        raise VerdictInvalid(str(exc)) from None


def _labelled(state: DebateState, upto_round: int | None = None) -> str:
    debaters = [p.id for p in state.config.participants if p.position != "moderator"]
    labels = assign_labels(debaters, state.config.seed)
    turns = [t for t in state.turns
             if t.visible and t.act != "prepare" and (upto_round is None or t.round <= upto_round)]
    return anonymised_transcript(turns, labels, state.format, names=_names(state))


def _names(state: DebateState) -> dict[str, str]:
    return {p.id: p.name for p in state.config.participants}


# --- round decisions ---------------------------------------------------------------------------


def evaluation_kind(state: DebateState) -> str:
    """How rounds end: the format's policy, or the user's choice where the format leaves it open."""
    termination = state.format.termination
    return state.config.evaluation if termination.configurable else termination.kind


async def decide(call: AuxCall, state: DebateState, round_no: int) -> RoundDecisionPayload:
    """Should the round block continue after `round_no`? The decision (stop, reason, …) with the calls made.

    At the hard cap the debate stops without asking anyone; the reason says so.
    """
    kind = evaluation_kind(state)
    cap = state.total_rounds
    if kind == "fixed":
        planned = min(cap, state.config.rounds or state.format.termination.default_rounds)
        if round_no >= planned:
            return RoundDecisionPayload(round=round_no, stop=True, cap=True,
                                        reason=f"{every(planned, 'planned round')} completed")
        return RoundDecisionPayload(round=round_no, stop=False,
                                    reason=f"fixed rounds: {round_no} of {planned} done")
    if round_no >= cap:
        return RoundDecisionPayload(round=round_no, stop=True, cap=True,
                                    reason=f"reached the hard cap of {counted(cap, 'round')}")
    transcript = _labelled(state)
    if kind == "judge":
        return await _decide_free_form(call, state, round_no, transcript)
    if kind == "convergence":
        threshold = (state.config.quality_threshold if state.format.termination.configurable
                     else state.config.convergence_threshold)
        return await _decide_convergence(call, state, round_no, transcript, threshold)
    return await _decide_quality(call, state, round_no, transcript)


async def _decide_free_form(call: AuxCall, state: DebateState, round_no: int,
                            transcript: str) -> RoundDecisionPayload:
    prompt = (f"Debate topic: {state.config.topic}\n\nTranscript so far:\n{transcript}\n\n"
              f"Round {round_no} has just ended. Decide whether another round would add anything new.")
    calls: list[CallRecord] = []
    try:
        answer = await _ask_answer(call, state, lambda spec: _request(spec, state, prompt, "round_check",
                                                                      ContinueAnswer, round=round_no),
                                   ContinueAnswer, calls)
    except (VerdictInvalid, ProviderError) as exc:
        return RoundDecisionPayload(round=round_no, stop=False, calls=calls,
                                    reason=f"the judge gave no usable decision ({exc}); continuing")
    stop = not answer.continue_
    reason = answer.reason
    return RoundDecisionPayload(round=round_no, stop=stop, calls=calls,
                                reason=f"the judge decided to stop: {reason}" if stop else reason)


async def _decide_convergence(call: AuxCall, state: DebateState, round_no: int, transcript: str,
                              threshold: int) -> RoundDecisionPayload:
    prompt = (f"Debate topic: {state.config.topic}\n\nTranscript so far:\n{transcript}\n\n"
              "Rate how far the participants now agree, 0 (opposed) to 100 (full agreement), and say whether "
              "their positions are irreconcilable.")
    calls: list[CallRecord] = []
    try:
        answer = await _ask_answer(call, state, lambda spec: _request(spec, state, prompt, "convergence",
                                                                      ConvergenceAnswer, round=round_no),
                                   ConvergenceAnswer, calls)
    except (VerdictInvalid, ProviderError) as exc:
        return RoundDecisionPayload(round=round_no, stop=False, calls=calls,
                                    reason=f"the judge gave no usable agreement rating ({exc}); continuing")
    agreement = float(answer.agreement)
    irreconcilable = answer.irreconcilable
    why = answer.reason
    if irreconcilable:
        reason = "the judge declared the positions irreconcilable" + (f": {why}" if why else "")
    elif agreement >= threshold:
        reason = f"converged: agreement {agreement:g} reached the threshold {threshold}"
    else:
        reason = f"agreement {agreement:g} is below the threshold {threshold}"
    return RoundDecisionPayload(round=round_no, stop=irreconcilable or agreement >= threshold, reason=reason,
                                agreement=agreement, irreconcilable=irreconcilable, threshold=threshold, calls=calls)


async def _decide_quality(call: AuxCall, state: DebateState, round_no: int,
                          transcript: str) -> RoundDecisionPayload:
    threshold = state.config.quality_threshold
    prompt = (f"Problem: {state.config.topic}\n\nWork so far:\n{transcript}\n\nRate the quality of the latest "
              "refined proposals from 0 to 100.")
    calls: list[CallRecord] = []
    try:
        answer = await _ask_answer(call, state, lambda spec: _request(spec, state, prompt, "quality",
                                                                      QualityAnswer, round=round_no),
                                   QualityAnswer, calls)
    except (VerdictInvalid, ProviderError) as exc:
        return RoundDecisionPayload(round=round_no, stop=False, calls=calls,
                                    reason=f"the judge gave no usable quality score ({exc}); continuing")
    score = float(answer.score)
    stop = score >= threshold
    reason = (f"quality {score:g} reached the threshold {threshold}" if stop
              else f"quality {score:g} is below the threshold {threshold}")
    return RoundDecisionPayload(round=round_no, stop=stop, reason=reason, score=score, threshold=threshold,
                                calls=calls)


# --- per-round scores --------------------------------------------------------------------------


async def score_round(call: AuxCall, state: DebateState, round_no: int) -> RoundScoresPayload:
    """Per-round scores {participant_id: 0-100} by the first judge (or the fallback) on the transcript so far."""
    calls: list[CallRecord] = []

    async def judge_call(spec: JudgeSpec, request: ProviderRequest) -> str:
        request = request.model_copy(update={"context": {**request.context,
                                                         "turn_key": f"round-{round_no}/{spec.label}",
                                                         "round": round_no}})
        text, record = await call(spec, request)
        calls.append(record.model_copy(update={"purpose": "round_scores"}))
        return text

    config = state.config.model_copy(update={"judge": state.config.judge.model_copy(
        update={"judges": [state.config.judge.judges[0]], "swap_sides": False})})  # the final verdict swaps
    turns = [t for t in state.turns if t.visible and t.act != "prepare" and t.round <= round_no]
    verdict = await judge_debate(judge_call, config, state.format, turns)
    if not verdict.available:
        return RoundScoresPayload(round=round_no, scores=verdict.scores, winner=verdict.winner, available=False,
                                  error=verdict.reasoning, calls=calls)
    return RoundScoresPayload(round=round_no, scores=verdict.scores, winner=verdict.winner, available=True,
                              calls=calls)


# --- extra context for turns -------------------------------------------------------------------


def brief(state: DebateState) -> str:
    """The user's answers to clarification questions, as a block for prompts."""
    lines: list[str] = []
    for asked in state.clarifications:
        answers = next((a.answers for a in state.answers if a.iteration == asked.iteration), {})
        for pid, questions in asked.questions.items():
            given = answers.get(pid, [])
            for i, question in enumerate(questions):
                answer = given[i] if i < len(given) and given[i] else "(no answer)"
                lines.append(f"Q: {question}\nA: {answer}")
    return "\n".join(lines)


def collaborative_guidance(state: DebateState, participant: Participant, slot: TurnSlot) -> dict[str, Any]:
    """What a proposal / critique / refinement works from, for the prompt and for inspection."""
    turns = [t for t in state.turns if t.visible]
    names = _names(state)
    if slot.act == "propose":
        if slot.round == 1:
            return {"guidance": "This is round 1: write a fresh proposal.",
                    "collaborative": {"round": 1, "previous_refinements": []}}
        refinements = [t for t in turns if t.act == "refine" and t.round == slot.round - 1]
        own = next((t for t in refinements if t.speaker == participant.id), None)
        others = [names.get(t.speaker, t.speaker) for t in refinements if t.speaker != participant.id]
        text = (f"Start from your own round {slot.round - 1} refinement, shown above, and improve it"
                if own else f"You wrote no refinement in round {slot.round - 1}; write a proposal")
        text += f"; you may borrow from the refinements of {', '.join(others)}." if others else "."
        return {"guidance": text, "collaborative": {
            "round": slot.round, "own_previous": own.key if own else None,
            "previous_refinements": [t.key for t in refinements]}}
    if slot.act == "critique":
        proposals = [t for t in turns if t.act == "propose" and t.round == slot.round
                     and t.speaker != participant.id]
        authors = [names.get(t.speaker, t.speaker) for t in proposals]
        return {"guidance": f"Above are the round {slot.round} proposals of {', '.join(authors) or 'no one'}. "
                "Critique each of them by name (strengths, flaws, concrete fixes); do not critique your own.",
                "collaborative": {"round": slot.round, "proposals": [t.key for t in proposals]}}
    if slot.act == "refine":
        own = next((t for t in turns if t.act == "propose" and t.round == slot.round
                    and t.speaker == participant.id), None)
        critiques = [t for t in turns if t.act == "critique" and t.round == slot.round
                     and t.speaker != participant.id]
        critics = [names.get(t.speaker, t.speaker) for t in critiques]
        return {"guidance": f"Above are your round {slot.round} proposal and the critiques by "
                f"{', '.join(critics) or 'no one'}. Revise your own proposal to answer each critique, "
                "and say what changed.",
                "collaborative": {"round": slot.round, "own_proposal": own.key if own else None,
                                  "critiques": [t.key for t in critiques]}}
    return {}


def turn_context(state: DebateState, participant: Participant, slot: TurnSlot) -> dict[str, Any]:
    """Extra context for a turn: the user's clarifications and, in collaborative, the act's guidance."""
    extra: dict[str, Any] = {}
    text = brief(state)
    if text:
        extra["brief"] = text
    if slot.act in ("propose", "critique", "refine"):
        extra.update(collaborative_guidance(state, participant, slot))
    return extra


# --- clarification -----------------------------------------------------------------------------


def _last_round_unanswered(state: DebateState) -> bool:
    """True when the user left every question of the latest iteration unanswered."""
    if not state.answers:
        return False
    latest = state.answers[-1].answers
    return not any(str(a).strip() for items in latest.values() for a in items)


async def ask_clarifications(call: AuxCall, state: DebateState, iteration: int) -> tuple[dict[str, list[str]],
                                                                                        list[CallRecord]]:
    """Each agent's questions for the user (follow-ups after the first iteration), asked in parallel.

    No follow-ups are asked after the user left a whole iteration unanswered: they chose to move on.
    """
    config = state.config
    if iteration > 1 and _last_round_unanswered(state):
        return {p.id: [] for p in config.participants}, []
    known = brief(state)
    model = questions_model(config.clarification_questions)

    async def ask(participant: Participant) -> list[str]:
        follow_up = iteration > 1
        prompt = (f"Problem: {config.topic}\nYou are {participant.name} ({participant.position}).\n"
                  + (f"What the user already told us:\n{known}\n" if known else "")
                  + (f"Ask at most {counted(config.clarification_questions, 'follow-up question')}, only about what is "
                     "still unclear; ask none if you have what you need. " if follow_up else
                     f"Ask at most {counted(config.clarification_questions, 'question')} whose answers you need before "
                     "proposing a solution; ask none if you need nothing. ")
                  + "\n\n" + answer_fields(model))
        request = ProviderRequest(
            model=participant.model, system="You are a careful problem solver.",
            messages=[Message(role="user", content=prompt)], max_tokens=min(participant.max_tokens, 500),
            temperature=participant.temperature, json_mode=True, json_schema=json_schema(model),
            schema_name="clarify", purpose="clarify",
            context={"topic": config.topic, "seed": config.seed, "iteration": iteration, "speaker": participant.id,
                     "max_questions": config.clarification_questions,
                     "turn_key": f"clarify/{iteration}/{participant.id}"},
        )  # time limits: set per call for the provider's kind
        text, _ = await call(participant, request, commit_cost=True)
        try:
            raw = list(_validated(text, model).questions)
        except VerdictInvalid:
            try:  # a JSON answer with too many questions, or one question as a string
                found = extract_json(text).get("questions") or []
                raw = found if isinstance(found, list) else [found]
            except VerdictInvalid:
                raw = [line.strip("-•* ").strip() for line in text.splitlines() if line.strip().endswith("?")]
        items = [str(q).strip()[:500] for q in raw if str(q).strip()]
        return items[: config.clarification_questions]

    # Side by side, each call's cost committed as it completes: when one fails the others are
    # cancelled (not left running after the debate errored), and no call's cost is lost.
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(ask(p)) for p in config.participants]
    except BaseExceptionGroup as failed:
        raise first_error(failed) from failed
    questions = {p.id: task.result() for p, task in zip(config.participants, tasks, strict=True)}
    return questions, []


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The first failure inside a (nested) exception group, for callers that expect one error."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


# --- strict mode -------------------------------------------------------------------------------


async def check_on_topic(call: AuxCall, state: DebateState, participant: Participant,
                         text: str) -> tuple[str | None, list[CallRecord]]:
    """Strict mode: a note flagging an off-topic turn (else None), and the judge calls made.

    The judge model decides (the offline demo judge answers from the words of the topic and the turn).
    """
    if not state.config.strict:
        return None, []
    prompt = f"Topic: {state.config.topic}\n\nTurn by {participant.name}:\n{text}\n\nIs this turn on topic?"
    calls: list[CallRecord] = []
    try:
        answer = await _ask_answer(call, state, lambda spec: _request(spec, state, prompt, "on_topic",
                                                                      OnTopicAnswer, speaker=participant.id),
                                   OnTopicAnswer, calls)
    except (VerdictInvalid, ProviderError, BudgetExceeded) as exc:  # the turn itself is paid for: keep it
        return f"on-topic check unavailable: {exc}", calls
    if not answer.on_topic:
        return f"off-topic: {answer.reason or 'the judge flagged this turn'}", calls
    return None, calls


# --- summaries and synthesis -------------------------------------------------------------------


async def summarise(call: AuxCall, state: DebateState, turns: list[Turn]) -> tuple[str, CallRecord]:
    """A model's summary of older turns (the first item may be an earlier summary to extend)."""
    text = render_history(turns, state.config, state.format)
    points = [t.text.split(".")[0][:120] for t in turns]
    prompt = ("Summarise these debate turns in a short paragraph per speaker, keeping every argument and "
              f"concession (an earlier summary, if present, must be carried forward):\n\n{text}")
    key = "summary/" + ",".join(t.key for t in turns)[-200:]
    reply, calls = await _ask_text(call, state, lambda spec: _request(spec, state, prompt, "summary",
                                                                      points=points, turn_key=key))
    return reply, calls[0]


async def synthesize(call: AuxCall, state: DebateState) -> tuple[str, CallRecord] | None:
    """The judge's final solution for formats that end in a synthesis."""
    if not state.format.judge_synthesis:
        return None
    transcript = render_history([t for t in state.turns if t.visible], state.config, state.format)
    known = brief(state)
    prompt = (f"Problem: {state.config.topic}\n" + (f"User's clarifications:\n{known}\n" if known else "")
              + f"\nAll rounds of proposals, critiques and refinements:\n{transcript}\n\n"
              "Write the final solution, drawing on the best of every round.")
    try:
        text, calls = await _ask_text(call, state, lambda spec: _request(spec, state, prompt, "synthesis",
                                                                         turn_key="synthesis"))
    except BudgetExceeded:  # the verdict is in; there is no money left for the synthesis
        return None
    return text, calls[0]

