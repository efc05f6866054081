"""The judge: builds the verdict request, parses and validates the answer, repairs it once.

Participants are shown to the judge under neutral labels (A, B, C…) in a seeded shuffled order, and
the judge is told to ignore length; the label → participant mapping is stored with the verdict.
A panel of judges is averaged and its disagreement reported; a failed judge is recorded and the
others still rule; a fallback judge takes over when every configured judge fails.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import string
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from webapp.engine.formats import Format
from webapp.models import CriterionScore, DebateConfig, JudgeRuling, JudgeSpec, Turn, Verdict
from webapp.providers.base import Message, ProviderError, ProviderRequest

# (spec, request) -> text; raises ProviderError. Supplied by the runner (which handles retries and cost).
JudgeCall = Callable[[JudgeSpec, ProviderRequest], Awaitable[str]]


class VerdictInvalid(ValueError):
    """The judge's answer was not a valid verdict; the message says why."""


def assign_labels(participant_ids: list[str], seed: int) -> dict[str, str]:
    """Neutral label → participant id, in a seeded shuffled order."""
    order = list(participant_ids)
    random.Random(f"labels-{seed}").shuffle(order)
    return {string.ascii_uppercase[i]: pid for i, pid in enumerate(order)}


def anonymised_transcript(turns: list[Turn], labels: dict[str, str], fmt: Format) -> str:
    by_id = {pid: label for label, pid in labels.items()}
    titles = {p.id: p.title for p in fmt.phases}
    lines = []
    for turn in turns:
        if not turn.visible or turn.speaker not in by_id:
            continue
        lines.append(f"[{titles.get(turn.phase, turn.phase)}, round {turn.round}] Debater {by_id[turn.speaker]}:\n"
                     f"{turn.text}")
    return "\n\n".join(lines)


def verdict_request(spec: JudgeSpec, config: DebateConfig, fmt: Format, turns: list[Turn],
                    labels: dict[str, str]) -> ProviderRequest:
    criteria = config.judge.criteria
    label_list = list(labels)
    example = {
        "winner": label_list[0] + " (or \"tie\")",
        "scores": {lab: "0-100" for lab in label_list},
        "criteria": {c: {lab: {"score": "0-100", "note": "one line"} for lab in label_list} for c in criteria},
        "reasoning": "a paragraph",
        "confidence": "0.0-1.0",
    }
    words = {lab: sum(len(t.text.split()) for t in turns if t.speaker == pid) for lab, pid in labels.items()}
    prompt = (
        f"You are the judge of a {fmt.title} debate on the topic: {config.topic}\n\n"
        f"Debaters are labelled {', '.join(label_list)}; their real names are hidden. Judge only the quality "
        "of the arguments. Ignore length: a longer answer is not a better one. Ignore the order of speaking.\n\n"
        f"Criteria: {', '.join(criteria)}.\n\nTranscript:\n{anonymised_transcript(turns, labels, fmt)}\n\n"
        "Reply with one JSON object only, shaped like this:\n" + json.dumps(example, indent=1)
    )
    return ProviderRequest(
        model=spec.model,
        system="You are a fair, rigorous debate judge. You answer with JSON only.",
        messages=[Message(role="user", content=prompt)],
        max_tokens=spec.max_tokens,
        temperature=spec.temperature,
        json_mode=True,
        purpose="verdict",
        context={"labels": label_list, "criteria": criteria, "label_words": words, "seed": config.seed,
                 "turn_key": f"verdict/{spec.label}", "topic": config.topic},
    )


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in a reply: bare, inside a code fence, or inside surrounding prose."""
    candidates: list[str] = []
    for match in re.finditer(r"```(?:json)?\s*(.*?)```", text, flags=re.DOTALL | re.IGNORECASE):
        candidates.append(match.group(1))
    candidates.append(text)
    start = text.find("{")
    while start != -1:
        depth, in_str, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                escape = not escape and ch == "\\"
                if ch == '"' and not escape:
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    candidates.append(text[start : i + 1])
                    break
        start = text.find("{", start + 1) if len(candidates) < 20 else -1
    for candidate in candidates:
        try:
            value = json.loads(candidate.strip())
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, dict):
            return value
    raise VerdictInvalid("the reply contains no JSON object")


def _score(value: Any, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise VerdictInvalid(f"{where} must be a number from 0 to 100, got {value!r}") from None
    if not 0 <= number <= 100:
        raise VerdictInvalid(f"{where} must be between 0 and 100, got {number:g}")
    return number


def parse_ruling(text: str, labels: dict[str, str], criteria: list[str], judge: str) -> JudgeRuling:
    """Validate a judge's reply and map labels back to participant ids; raises `VerdictInvalid`."""
    data = extract_json(text)
    scores_raw = data.get("scores")
    if not isinstance(scores_raw, dict):
        raise VerdictInvalid("'scores' must be an object mapping each label to a 0-100 score")
    missing = [lab for lab in labels if lab not in scores_raw]
    if missing:
        raise VerdictInvalid(f"'scores' is missing label(s) {', '.join(missing)}")
    scores = {labels[lab]: _score(scores_raw[lab], f"scores.{lab}") for lab in labels}
    winner_raw = str(data.get("winner", "")).strip()
    winner_label = winner_raw.removeprefix("Debater ").strip().upper()[:1] if winner_raw else ""
    if winner_raw.lower() in ("tie", "draw", "none", ""):
        winner = None
    elif winner_label in labels and len(winner_raw.removeprefix("Debater ").strip()) <= 1:
        winner = labels[winner_label]
    else:
        raise VerdictInvalid(f"'winner' must be one of {', '.join(labels)} or \"tie\", got {winner_raw!r}")
    per_criterion: dict[str, dict[str, CriterionScore]] = {}
    crit_raw = data.get("criteria") or {}
    if not isinstance(crit_raw, dict):
        raise VerdictInvalid("'criteria' must be an object")
    lowered = {str(k).strip().lower(): v for k, v in crit_raw.items()}
    for criterion in criteria:
        entry = lowered.get(criterion.lower())
        if not isinstance(entry, dict):
            raise VerdictInvalid(f"'criteria' is missing {criterion!r}")
        per_criterion[criterion] = {}
        for lab, pid in labels.items():
            item = entry.get(lab)
            if isinstance(item, dict):
                score = _score(item.get("score"), f"criteria.{criterion}.{lab}.score")
                note = str(item.get("note", ""))[:300]
            else:
                score, note = _score(item, f"criteria.{criterion}.{lab}"), ""
            per_criterion[criterion][pid] = CriterionScore(score=score, note=note)
    reasoning = str(data.get("reasoning", "")).strip()
    if not reasoning:
        raise VerdictInvalid("'reasoning' must not be empty")
    confidence = data.get("confidence")
    try:
        confidence = None if confidence is None else max(0.0, min(1.0, float(confidence)))
    except (TypeError, ValueError):
        confidence = None
    try:
        return JudgeRuling(judge=judge, winner=winner, scores=scores, criteria=per_criterion,
                           reasoning=reasoning, confidence=confidence)
    except ValidationError as exc:
        raise VerdictInvalid(str(exc)) from None


def repair_request(original: ProviderRequest, reply: str, error: str) -> ProviderRequest:
    return original.model_copy(
        update={
            "messages": [
                *original.messages,
                Message(role="assistant", content=reply[:4000]),
                Message(role="user", content=f"That reply was not a valid verdict: {error}. "
                        "Reply again with the corrected JSON object only."),
            ],
            "context": {**original.context, "repair": True},
        }
    )


async def rule_one(call: JudgeCall, spec: JudgeSpec, config: DebateConfig, fmt: Format, turns: list[Turn],
                   labels: dict[str, str]) -> tuple[JudgeRuling | None, str | None, str | None]:
    """One judge's ruling, with one repair attempt. Returns (ruling, raw_text, error)."""
    request = verdict_request(spec, config, fmt, turns, labels)
    try:
        reply = await call(spec, request)
    except ProviderError as exc:
        return None, None, str(exc)
    try:
        return parse_ruling(reply, labels, config.judge.criteria, spec.label), reply, None
    except VerdictInvalid as first_error:
        try:
            second = await call(spec, repair_request(request, reply, str(first_error)))
        except ProviderError as exc:
            return None, reply, str(exc)
        try:
            return parse_ruling(second, labels, config.judge.criteria, spec.label), second, None
        except VerdictInvalid as second_error:
            return None, second, f"invalid verdict after one repair: {second_error}"


def combine(rulings: list[JudgeRuling], labels: dict[str, str], criteria: list[str]) -> Verdict:
    """The panel verdict: mean scores, winner by mean, disagreement as the mean score spread."""
    good = [r for r in rulings if r.error is None]
    pids = list(labels.values())
    scores = {pid: round(statistics.fmean(r.scores[pid] for r in good), 1) for pid in pids}
    per_criterion = {
        c: {
            pid: CriterionScore(
                score=round(statistics.fmean(r.criteria[c][pid].score for r in good), 1),
                note=" / ".join(r.criteria[c][pid].note for r in good if r.criteria[c][pid].note)[:400],
            )
            for pid in pids
        }
        for c in criteria
    }
    ranked = sorted(pids, key=lambda p: -scores[p])
    winner = ranked[0] if len(ranked) == 1 or scores[ranked[0]] > scores[ranked[1]] else None
    if len(good) == 1:
        winner = good[0].winner
    disagreement = None
    if len(good) > 1:
        disagreement = round(statistics.fmean(statistics.pstdev(r.scores[p] for r in good) for p in pids), 1)
    confidences = [r.confidence for r in good if r.confidence is not None]
    return Verdict(
        available=True,
        winner=winner,
        scores=scores,
        criteria=per_criterion,
        reasoning="\n\n".join(r.reasoning for r in good) if len(good) == 1 else "\n\n".join(
            f"{r.judge}: {r.reasoning}" for r in good),
        confidence=round(statistics.fmean(confidences), 2) if confidences else None,
        rulings=rulings,
        disagreement=disagreement,
        labels=labels,
    )


async def judge_debate(call: JudgeCall, config: DebateConfig, fmt: Format, turns: list[Turn]) -> Verdict:
    """Run the configured judge(s), the fallback if all fail, and combine the rulings."""
    debaters = [p.id for p in config.participants if p.position != "moderator"]
    labels = assign_labels(debaters, config.seed)
    rulings: list[JudgeRuling] = []
    raw: str | None = None
    for spec in config.judge.judges:
        ruling, text, error = await rule_one(call, spec, config, fmt, turns, labels)
        raw = text or raw
        rulings.append(ruling or JudgeRuling(judge=spec.label, error=error))
    if not any(r.error is None for r in rulings) and config.judge.fallback is not None:
        spec = config.judge.fallback
        ruling, text, error = await rule_one(call, spec, config, fmt, turns, labels)
        raw = text or raw
        rulings.append(ruling or JudgeRuling(judge=f"{spec.label} (fallback)", error=error))
    if not any(r.error is None for r in rulings):
        reasons = "; ".join(f"{r.judge}: {r.error}" for r in rulings)
        return Verdict(available=False, reasoning=f"Verdict unavailable. {reasons}", rulings=rulings,
                       labels=labels, raw_text=raw)
    return combine(rulings, labels, config.judge.criteria)
