"""The judge: builds the verdict request, parses and validates the answer, repairs it once.

Participants are shown to the judge under neutral labels (A, B, C…) in a seeded shuffled order, and
the judge is told to ignore length; the label → participant mapping is stored with the verdict.
A panel of judges is averaged and its disagreement reported; a failed judge is recorded and the
others still rule; a fallback judge takes over when every configured judge fails.
"""

from __future__ import annotations

import asyncio
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


def anonymise_text(text: str, aliases: dict[str, str]) -> str:
    """Replace each real name (whole word, as written) by its neutral alias, longest names first."""
    for name in sorted(aliases, key=len, reverse=True):
        if len(name) >= 2:
            text = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", aliases[name], text)
    return text


def anonymised_transcript(turns: list[Turn], labels: dict[str, str], fmt: Format,
                          names: dict[str, str] | None = None) -> str:
    """The transcript with every debater under its neutral label; real names in the text are replaced too."""
    by_id = {pid: label for label, pid in labels.items()}
    aliases = {name: f"Debater {by_id[pid]}" for pid, name in (names or {}).items() if pid in by_id and name}
    titles = {p.id: p.title for p in fmt.phases}
    lines = []
    for turn in turns:
        if not turn.visible or turn.speaker not in by_id:
            continue
        lines.append(f"[{titles.get(turn.phase, turn.phase)}, round {turn.round}] Debater {by_id[turn.speaker]}:\n"
                     f"{anonymise_text(turn.text, aliases)}")
    return "\n\n".join(lines)


def verdict_request(spec: JudgeSpec, config: DebateConfig, fmt: Format, turns: list[Turn],
                    labels: dict[str, str]) -> ProviderRequest:
    criteria = config.judge.criteria
    label_list = list(labels)
    example = {
        "winner": " or ".join(label_list) + ' or "tie"',
        "scores": {lab: "0-100" for lab in label_list},
        "criteria": {c: {lab: {"score": "0-100", "note": "one line"} for lab in label_list} for c in criteria},
        "reasoning": "a paragraph",
        "confidence": "0.0-1.0",
    }
    words = {lab: sum(len(t.text.split()) for t in turns if t.speaker == pid) for lab, pid in labels.items()}
    transcript = anonymised_transcript(turns, labels, fmt, names={p.id: p.name for p in config.participants})
    prompt = (
        f"You are the judge of a {fmt.title} debate on the topic: {config.topic}\n\n"
        f"Debaters are labelled {', '.join(label_list)}; their real names are hidden. In your reasoning and "
        "notes call them \"Debater A\", \"Debater B\" and so on. Judge only the quality "
        "of the arguments. Ignore length: a longer answer is not a better one. Ignore the order of speaking.\n\n"
        f"Criteria: {', '.join(criteria)}.\n\nTranscript:\n{transcript}\n\n"
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
        connect_timeout=config.timeouts.connect,
        first_token_timeout=config.timeouts.first_token,
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
    if isinstance(value, bool):
        raise VerdictInvalid(f"{where} must be a number from 0 to 100, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise VerdictInvalid(f"{where} must be a number from 0 to 100, got {value!r}") from None
    if not 0 <= number <= 100:
        raise VerdictInvalid(f"{where} must be between 0 and 100, got {number:g}")
    return number


def _confidence(value: Any) -> float | None:
    """0–1; a judge answering in percent (e.g. 85) is understood as 0.85."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip().rstrip("%"))
    except (TypeError, ValueError):
        return None
    if number > 1:
        number /= 100
    return max(0.0, min(1.0, number))


def _winner(data: dict[str, Any], labels: dict[str, str]) -> str | None:
    raw = str(data.get("winner", "")).strip()
    if raw.lower() in ("tie", "draw", "none", "null", ""):
        return None
    label = re.sub(r"^(debater|participant)\s+", "", raw, flags=re.IGNORECASE).strip().upper()
    if label in labels:
        return labels[label]
    raise VerdictInvalid(f"'winner' must be one of {', '.join(labels)} or \"tie\", got {raw!r}")


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
    winner = _winner(data, labels)
    per_criterion: dict[str, dict[str, CriterionScore]] = {}
    crit_raw = data.get("criteria")
    if not isinstance(crit_raw, dict):
        raise VerdictInvalid("'criteria' must be an object with one entry per criterion")
    lowered = {str(k).strip().lower(): v for k, v in crit_raw.items()}
    for criterion in criteria:
        entry = lowered.get(criterion.lower())
        if not isinstance(entry, dict):
            raise VerdictInvalid(f"'criteria' is missing {criterion!r}")
        per_criterion[criterion] = {}
        for lab, pid in labels.items():
            item = entry.get(lab)
            if item is None:
                raise VerdictInvalid(f"'criteria.{criterion}' is missing label {lab}")
            if isinstance(item, dict):
                score = _score(item.get("score"), f"criteria.{criterion}.{lab}.score")
                note = " ".join(str(item.get("note") or "").split())[:300]  # one line
            else:
                score, note = _score(item, f"criteria.{criterion}.{lab}"), ""
            per_criterion[criterion][pid] = CriterionScore(score=score, note=note)
    reasoning = str(data.get("reasoning") or "").strip()
    if not reasoning:
        raise VerdictInvalid("'reasoning' must not be empty")
    try:
        return JudgeRuling(judge=judge, winner=winner, scores=scores, criteria=per_criterion,
                           reasoning=reasoning, confidence=_confidence(data.get("confidence")))
    except ValidationError as exc:
        raise VerdictInvalid(str(exc)) from None


def repair_request(original: ProviderRequest, reply: str, error: str) -> ProviderRequest:
    """The one repair request (for a verdict or any judge JSON): the bad reply, what was wrong with
    it, and a request for the fix."""
    return original.model_copy(
        update={
            "messages": [
                *original.messages,
                Message(role="assistant", content=reply[:4000] or "(empty reply)"),
                Message(role="user", content=f"That reply was not valid: {error}. "
                        "Reply again with the corrected JSON object only."),
            ],
            "context": {**original.context, "repair": True, "validation_error": error},
        }
    )


class RuleResult:
    """One judge's outcome: its ruling (possibly with an error) and every raw reply it gave."""

    def __init__(self, ruling: JudgeRuling, raw: list[str]) -> None:
        self.ruling = ruling
        self.raw = raw


async def rule_one(call: JudgeCall, spec: JudgeSpec, config: DebateConfig, fmt: Format, turns: list[Turn],
                   labels: dict[str, str], name: str | None = None) -> RuleResult:
    """One judge's ruling, with one repair request on an invalid reply. Never raises (except cancellation):
    a failure becomes a ruling whose `error` says what happened."""
    name = name or spec.label
    request = verdict_request(spec, config, fmt, turns, labels)
    raw: list[str] = []
    try:
        reply = await call(spec, request)
        raw.append(reply)
        try:
            return RuleResult(parse_ruling(reply, labels, config.judge.criteria, name), raw)
        except VerdictInvalid as first_error:
            second = await call(spec, repair_request(request, reply, str(first_error)))
            raw.append(second)
            try:
                return RuleResult(parse_ruling(second, labels, config.judge.criteria, name), raw)
            except VerdictInvalid as second_error:
                error = f"invalid verdict after one repair request: {second_error} (first reply: {first_error})"
                return RuleResult(JudgeRuling(judge=name, error=error), raw)
    except ProviderError as exc:
        return RuleResult(JudgeRuling(judge=name, error=str(exc)), raw)
    except Exception as exc:  # a judge must never take the whole verdict down with it
        return RuleResult(JudgeRuling(judge=name, error=f"{type(exc).__name__}: {exc}"), raw)


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
    if len(good) == 1:
        winner = good[0].winner
    else:
        ranked = sorted(pids, key=lambda p: -scores[p])
        winner = ranked[0] if len(ranked) == 1 or scores[ranked[0]] > scores[ranked[1]] else None
    disagreement = None
    reasoning = good[0].reasoning if len(good) == 1 else "\n\n".join(f"{r.judge}: {r.reasoning}" for r in good)
    if len(good) > 1:
        # Mean over participants of the spread (population standard deviation) of the judges' scores.
        disagreement = round(statistics.fmean(statistics.pstdev(r.scores[p] for r in good) for p in pids), 1)
        picks = {r.winner for r in good}
        if len(picks) > 1:
            names = {pid: label for label, pid in labels.items()}
            split = ", ".join(f"{r.judge} → {'Debater ' + names[r.winner] if r.winner else 'tie'}" for r in good)
            reasoning = f"The judges split on the winner ({split}); the mean score decides.\n\n{reasoning}"
    failed = [r for r in rulings if r.error is not None]
    if failed:
        reasoning += "\n\n" + "\n".join(f"{r.judge} failed and is left out: {r.error}" for r in failed)
    confidences = [r.confidence for r in good if r.confidence is not None]
    return Verdict(
        available=True,
        winner=winner,
        scores=scores,
        criteria=per_criterion,
        reasoning=reasoning,
        confidence=round(statistics.fmean(confidences), 2) if confidences else None,
        rulings=rulings,
        disagreement=disagreement,
        labels=labels,
    )


def _judge_names(specs: list[JudgeSpec]) -> list[str]:
    """Display names of a panel's judges; the same model from two servers gets #2 so each ruling stays distinct."""
    seen: dict[str, int] = {}
    names = []
    for spec in specs:
        seen[spec.label] = seen.get(spec.label, 0) + 1
        names.append(spec.label if seen[spec.label] == 1 else f"{spec.label} #{seen[spec.label]}")
    return names


def _raw_text(results: list[tuple[str, RuleResult]]) -> str | None:
    parts = []
    for name, result in results:
        for i, text in enumerate(result.raw):
            parts.append(f"--- {name}, {'first reply' if i == 0 else 'reply to the repair request'} ---\n{text}")
    return "\n\n".join(parts) or None


async def judge_debate(call: JudgeCall, config: DebateConfig, fmt: Format, turns: list[Turn]) -> Verdict:
    """Run the configured judge(s) concurrently, the fallback if none succeeded, and combine the rulings.

    With no valid ruling at all the verdict is *unavailable*, carrying every raw reply and every error.
    """
    debaters = [p.id for p in config.participants if p.position != "moderator"]
    labels = assign_labels(debaters, config.seed)
    specs = list(config.judge.judges)
    names = _judge_names(specs)
    outcomes = await asyncio.gather(*(rule_one(call, spec, config, fmt, turns, labels, name)
                                      for spec, name in zip(specs, names, strict=True)))
    results = list(zip(names, outcomes, strict=True))
    if not any(r.ruling.error is None for _, r in results) and config.judge.fallback is not None:
        name = f"{config.judge.fallback.label} (fallback)"
        results.append((name, await rule_one(call, config.judge.fallback, config, fmt, turns, labels, name)))
    rulings = [r.ruling for _, r in results]
    if not any(r.error is None for r in rulings):
        reasons = "; ".join(f"{r.judge}: {r.error}" for r in rulings)
        return Verdict(available=False, reasoning=f"Verdict unavailable. {reasons}", rulings=rulings,
                       labels=labels, raw_text=_raw_text(results))
    verdict = combine(rulings, labels, config.judge.criteria)
    return reveal_names(verdict, {label: config.participant(pid).name for label, pid in labels.items()})


def reveal_names(verdict: Verdict, names: dict[str, str]) -> Verdict:
    """Write participants' names back where the judge wrote "Debater A" (the stored labels map stays)."""

    def swap(text: str) -> str:
        return re.sub(r"\bDebater ([A-Z])\b", lambda m: names.get(m.group(1), m.group(0)), text)

    verdict.reasoning = swap(verdict.reasoning)
    for per in verdict.criteria.values():
        for score in per.values():
            score.note = swap(score.note)
    for ruling in verdict.rulings:
        ruling.reasoning = swap(ruling.reasoning)
        for per in ruling.criteria.values():
            for score in per.values():
                score.note = swap(score.note)
    return verdict
