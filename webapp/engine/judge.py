"""The judge: builds the verdict request, has the answer parsed and validated, repairs it once.

The verdict is asked for through the provider's structured-output mechanism with a JSON schema made
for this debate (`webapp.engine.answers.verdict_model`: every label a required score, the winner an
enum of the labels and "tie"); the same pydantic model validates the reply. The prompt explains the
fields in words — no example object whose placeholders a small model would copy.

Bias controls: each judge sees the participants in its own order (a shuffle seeded by the debate's
seed and the judge's index, so a replay is the same) under neutral labels given in that order (A is
shown first); the order is stored with the ruling. With `swap_sides`, each judge rules a second time
with the order reversed; a judge whose winner changes is undecided and its vote does not count. The
verdict stores each debater's word count and flags a win by the much longer side.

What "the order shown" changes: the labels, the order the debaters are introduced and listed in the
answer's fields, and the order of turns given side by side (a parallel phase). Turns that answer each
other stay in the order they were spoken.

A panel's scores are averaged; the winner is the majority of the deciding judges' picks, and an even
split has no winner (`webapp.engine.panel`: mean scores never pick one). A failed judge is recorded
and the others still rule; a fallback judge takes over when every configured judge fails.
"""

from __future__ import annotations

import asyncio
import random
import re
import statistics
import string
from collections import Counter
from collections.abc import Awaitable, Callable

from webapp.engine.answers import json_schema, verdict_model
from webapp.engine.formats import Format
from webapp.engine.judge_reply import VerdictInvalid, parse_ruling, repair_request
from webapp.models import CriterionScore, DebateConfig, JudgeRuling, JudgeSpec, Turn, Verdict
from webapp.providers.base import Message, ProviderError, ProviderRequest
from webapp.providers.structured import OutputMode, mode_for

# (spec, request) -> text; raises ProviderError. Supplied by the runner (which handles retries and cost).
JudgeCall = Callable[[JudgeSpec, ProviderRequest], Awaitable[str]]
LENGTH_RATIO = 1.5  # a winner who spoke more than this many times the words of the runner-up is flagged
UNDECIDED = "the order of presentation decided: undecided"


def presentation_order(participant_ids: list[str], seed: int, judge_index: int = 0) -> list[str]:
    """The order one judge sees the debaters in: a shuffle seeded by the debate and the judge."""
    order = list(participant_ids)
    random.Random(f"labels-{seed}" if judge_index == 0 else f"labels-{seed}-judge-{judge_index}").shuffle(order)
    return order


def labels_for(order: list[str]) -> dict[str, str]:
    """Neutral label → participant id, A for the first shown."""
    return {string.ascii_uppercase[i]: pid for i, pid in enumerate(order)}


def assign_labels(participant_ids: list[str], seed: int, judge_index: int = 0) -> dict[str, str]:
    """Neutral label → participant id, in the seeded order judge number `judge_index` sees."""
    return labels_for(presentation_order(participant_ids, seed, judge_index))


def anonymise_text(text: str, aliases: dict[str, str]) -> str:
    """Replace each real name (whole word, as written) by its neutral alias, longest names first."""
    for name in sorted(aliases, key=len, reverse=True):
        if len(name) >= 2:
            text = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", aliases[name], text)
    return text


def _presented(turns: list[Turn], rank: dict[str, int], fmt: Format) -> list[Turn]:
    """Turns in speaking order, except that turns given side by side (a parallel phase, same round)
    follow the presentation order."""
    parallel = {p.id for p in fmt.phases if p.parallel}
    out: list[Turn] = []
    block: list[Turn] = []
    for turn in [*turns, None]:
        if block and (turn is None or (turn.phase, turn.round) != (block[0].phase, block[0].round)
                      or turn.phase not in parallel):
            out.extend(sorted(block, key=lambda t: rank.get(t.speaker, len(rank))))
            block = []
        if turn is None:
            break
        if turn.phase in parallel:
            block.append(turn)
        else:
            out.append(turn)
    return out


def anonymised_transcript(turns: list[Turn], labels: dict[str, str], fmt: Format,
                          names: dict[str, str] | None = None) -> str:
    """The transcript with every debater under its neutral label; real names in the text are replaced too."""
    by_id = {pid: label for label, pid in labels.items()}
    aliases = {name: f"Debater {by_id[pid]}" for pid, name in (names or {}).items() if pid in by_id and name}
    titles = {p.id: p.title for p in fmt.phases}
    rank = {pid: i for i, pid in enumerate(labels.values())}
    lines = []
    for turn in _presented(turns, rank, fmt):
        if not turn.visible or turn.speaker not in by_id:
            continue
        lines.append(f"[{titles.get(turn.phase, turn.phase)}, round {turn.round}] Debater {by_id[turn.speaker]}:\n"
                     f"{anonymise_text(turn.text, aliases)}")
    return "\n\n".join(lines)


def word_counts(turns: list[Turn], participant_ids: list[str]) -> dict[str, int]:
    """Words each debater spoke in the visible turns."""
    return {pid: sum(len(t.text.split()) for t in turns if t.visible and t.speaker == pid) for pid in participant_ids}


def verdict_fields(labels: list[str], criteria: list[str]) -> str:
    """The verdict's fields in words (the schema says the same to a structured-output mechanism)."""
    debaters = ", ".join(labels)
    quoted = ", ".join(f'"{c}"' for c in criteria)
    return (
        "Answer with one JSON object with exactly these fields:\n"
        f'- "criteria": an object with one entry per criterion ({quoted}); each entry has one entry per '
        f'debater ({debaters}), each an object with "score" (a whole number from 0 to 100) and "note" '
        "(one line saying why).\n"
        '- "reasoning": a paragraph explaining your decision; call the debaters "Debater A", "Debater B" '
        "and so on.\n"
        f'- "scores": an object giving every debater ({debaters}) an overall score, a whole number from '
        "0 to 100.\n"
        f'- "winner": the label of the debater who argued better ({" or ".join(labels)}), or "tie".\n'
        '- "confidence": how sure you are of the winner, a number from 0 to 1.'
    )


def verdict_request(spec: JudgeSpec, config: DebateConfig, fmt: Format, turns: list[Turn],
                    labels: dict[str, str], *, swapped: bool = False) -> ProviderRequest:
    """The verdict request for one judge, with the participants under `labels` (in the order shown)."""
    criteria = config.judge.criteria
    label_list = list(labels)
    words = {lab: sum(len(t.text.split()) for t in turns if t.speaker == pid) for lab, pid in labels.items()}
    transcript = anonymised_transcript(turns, labels, fmt, names={p.id: p.name for p in config.participants})
    schema = json_schema(verdict_model(label_list, criteria))
    prompt = (
        f"You are the judge of a {fmt.title} debate on the topic: {config.topic}\n\n"
        f"Debaters are labelled {', '.join(label_list)}; their real names are hidden. In your reasoning and "
        "notes call them \"Debater A\", \"Debater B\" and so on. Judge only the quality "
        "of the arguments. Ignore length: a longer answer is not a better one. Ignore the order of speaking "
        "and the order of the labels.\n\n"
        f"Criteria: {', '.join(criteria)}.\n\nTranscript:\n{transcript}\n\n"
        + verdict_fields(label_list, criteria)
    )
    return ProviderRequest(
        model=spec.model,
        system="You are a fair, rigorous debate judge. You answer with JSON only.",
        messages=[Message(role="user", content=prompt)],
        max_tokens=spec.max_tokens,
        temperature=spec.temperature,
        json_mode=True,
        json_schema=schema,
        schema_name="verdict",
        purpose="verdict",
        context={"labels": label_list, "criteria": criteria, "label_words": words, "seed": config.seed,
                 "label_ids": dict(labels), "turn_key": f"verdict/{spec.label}" + ("/swapped" if swapped else ""),
                 "topic": config.topic},
        connect_timeout=config.timeouts.connect,
        first_token_timeout=config.timeouts.first_token,
    )


class RuleResult:
    """One judge's outcome: its ruling (possibly with an error), every raw reply it gave, and notes on how
    the ruling was obtained (a structured-output fallback, a failed swap)."""

    def __init__(self, ruling: JudgeRuling, raw: list[str], notes: list[str] | None = None) -> None:
        self.ruling = ruling
        self.raw = raw
        self.notes = notes or []


def _mode_note(name: str, spec: JudgeSpec, mode: OutputMode) -> str | None:
    """A line for `Verdict.notes` when a judge was asked in a weaker mode than its provider's best."""
    if mode in ("json_schema", "tool"):
        return None
    if mode == "json_object+schema":
        return (f"{name}: the server refused json_schema structured output; the verdict was asked for in "
                "json_object mode with the schema attached (response_format.schema) and in the prompt")
    if mode == "json_object":
        return (f"{name}: the server refused json_schema structured output and a schema in json_object; the "
                "verdict was asked for in json_object mode with the schema in the prompt")
    return (f"{name}: the server supports no structured output; the verdict was asked for in the prompt "
            "only (JSON schema in the prompt)")


async def rule_one(call: JudgeCall, spec: JudgeSpec, config: DebateConfig, fmt: Format, turns: list[Turn],
                   labels: dict[str, str], name: str | None = None, *, swapped: bool = False) -> RuleResult:
    """One judge's ruling on the participants under `labels` (in the order shown), with one repair request
    on an invalid reply. Never raises (except cancellation): a failure becomes a ruling whose `error` says
    what happened. The ruling records the order shown, the output mode used and the unusable replies."""
    name = name or spec.label
    request = verdict_request(spec, config, fmt, turns, labels, swapped=swapped)
    order = list(labels.values())
    raw: list[str] = []
    failures = 0

    def done(ruling: JudgeRuling) -> RuleResult:
        mode = mode_for(spec)  # after the call: the mode it ended up using (a refusal steps it down)
        ruling.order, ruling.output_mode, ruling.parse_failures = order, mode, failures
        note = _mode_note(name, spec, mode) if raw else None
        return RuleResult(ruling, raw, [note] if note else [])

    try:
        reply = await call(spec, request)
        raw.append(reply)
        try:
            return done(parse_ruling(reply, labels, config.judge.criteria, name))
        except VerdictInvalid as first_error:
            failures += 1
            second = await call(spec, repair_request(request, reply, str(first_error)))
            raw.append(second)
            try:
                return done(parse_ruling(second, labels, config.judge.criteria, name))
            except VerdictInvalid as second_error:
                failures += 1
                error = f"invalid verdict after one repair request: {second_error} (first reply: {first_error})"
                return done(JudgeRuling(judge=name, error=error))
    except ProviderError as exc:
        return done(JudgeRuling(judge=name, error=str(exc)))
    except Exception as exc:  # a judge must never take the whole verdict down with it
        return done(JudgeRuling(judge=name, error=f"{type(exc).__name__}: {exc}"))


def _named(ruling: JudgeRuling, names: dict[str, str]) -> JudgeRuling:
    """The ruling with "Debater X" in its text replaced by the name of whom X was for this judge."""
    by_label = {label: names.get(pid, pid) for label, pid in labels_for(ruling.order).items()}

    def swap(text: str) -> str:
        return re.sub(r"\bDebater ([A-Z])\b", lambda m: by_label.get(m.group(1), m.group(0)), text)

    ruling.reasoning = swap(ruling.reasoning)
    for per in ruling.criteria.values():
        for score in per.values():
            score.note = swap(score.note)
    return ruling


async def rule_with_swap(call: JudgeCall, spec: JudgeSpec, config: DebateConfig, fmt: Format, turns: list[Turn],
                         order: list[str], name: str, names: dict[str, str] | None = None) -> RuleResult:
    """One judge's ruling on the debaters in `order`; with `swap_sides`, a second ruling with the order
    reversed: `swap_winner` is its winner and `flipped` says whether the winner changed (a tie is a
    winner value too). A failed second ruling leaves `flipped` unset and is noted."""
    names = names or {}
    first = await rule_one(call, spec, config, fmt, turns, labels_for(order), name)
    if first.ruling.error is None:
        _named(first.ruling, names)
    if not config.judge.swap_sides or first.ruling.error is not None:
        return first
    second = await rule_one(call, spec, config, fmt, turns, labels_for(order[::-1]), name, swapped=True)
    ruling = first.ruling
    ruling.parse_failures += second.ruling.parse_failures
    notes = first.notes + [n for n in second.notes if n not in first.notes]
    if second.ruling.error is not None:
        notes.append(f"{name}: the re-judging with the order reversed failed ({second.ruling.error}); "
                     "its first ruling stands")
    else:
        ruling.swap_winner = second.ruling.winner
        ruling.flipped = second.ruling.winner != ruling.winner
    return RuleResult(ruling, first.raw + second.raw, notes)


def _label_of(names: dict[str, str] | None, labels: dict[str, str], pid: str | None) -> str:
    if pid is None:
        return "tie"
    if names and pid in names:
        return names[pid]
    by_id = {p: label for label, p in labels.items()}
    return f"Debater {by_id[pid]}" if pid in by_id else pid


def _pick(deciding: list[JudgeRuling]) -> tuple[str | None, str]:
    """The panel's winner from its deciding judges, and how it was decided ("single", "majority", "split"):
    the rule of `webapp.engine.panel` (an even split has no winner; mean scores never pick one)."""
    if len(deciding) == 1:
        return deciding[0].winner, "single"
    votes = Counter(r.winner for r in deciding).most_common()
    if len(votes) == 1 or votes[0][1] > votes[1][1]:
        return votes[0][0], "majority"
    return None, "split"


def length_check(winner: str | None, scores: dict[str, float], words: dict[str, int],
                 names: dict[str, str] | None = None) -> tuple[bool, str | None]:
    """Whether the winner spoke more than `LENGTH_RATIO` times the words of the strongest loser, with a note."""
    if winner is None or winner not in words:
        return False, None
    losers = [pid for pid in words if pid != winner]
    if not losers:
        return False, None
    runner_up = max(losers, key=lambda p: (scores.get(p, 0.0), words[p]))
    mine, theirs = words[winner], words[runner_up]
    if mine <= LENGTH_RATIO * theirs:
        return False, None
    who = (names or {}).get
    ratio = f"{mine / theirs:.1f}×" if theirs else "all"
    return True, (f"Length: the winner, {who(winner, winner)}, spoke {ratio} the words of "
                  f"{who(runner_up, runner_up)} ({mine} against {theirs}); judges tend to favour the longer "
                  "side, so weigh this verdict with care")


def combine(rulings: list[JudgeRuling], labels: dict[str, str], criteria: list[str], *,
            names: dict[str, str] | None = None, words: dict[str, int] | None = None) -> Verdict:
    """The panel verdict: mean scores; the winner by the deciding judges (a judge whose winner flipped with
    the order is undecided and does not vote): one judge's pick or the majority's; an even split has no
    winner; disagreement as the mean score spread. `words` (participant id → words) sets the length
    flag."""
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
    undecided = [r for r in good if r.flipped]
    deciding = [r for r in good if not r.flipped]
    notes: list[str] = []
    reasoning = good[0].reasoning if len(good) == 1 else "\n\n".join(f"{r.judge}: {r.reasoning}" for r in good)
    if deciding:
        winner, how = _pick(deciding)
    else:
        winner, how = None, "undecided"
        notes.append(f"Every judge changed its winner when the order was reversed: {UNDECIDED}")
    for r in undecided:
        line = (f"{r.judge} is undecided: it picked {_label_of(names, labels, r.winner)} with the order shown and "
                f"{_label_of(names, labels, r.swap_winner)} with the order reversed, so its vote does not count")
        notes.append(line)
    disagreement = None
    if len(good) > 1:
        # Mean over participants of the spread (population standard deviation) of the judges' scores.
        disagreement = round(statistics.fmean(statistics.pstdev(r.scores[p] for r in good) for p in pids), 1)
        picks = {r.winner for r in deciding}
        if len(picks) > 1:
            split = ", ".join(f"{r.judge} → {_label_of(names, labels, r.winner)}" for r in deciding)
            decides = "the majority decides" if how == "majority" else \
                "no majority, so no winner: the debate counts as a tie"
            reasoning = f"The judges split on the winner ({split}); {decides}.\n\n{reasoning}"
    if undecided:
        reasoning = "\n".join(notes) + ".\n\n" + reasoning
    failed = [r for r in rulings if r.error is not None]
    if failed:
        reasoning += "\n\n" + "\n".join(f"{r.judge} failed and is left out: {r.error}" for r in failed)
    confidences = [r.confidence for r in deciding if r.confidence is not None]
    flag, length_note = length_check(winner, scores, words or {}, names)
    if length_note:
        notes.append(length_note)
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
        word_counts=dict(words or {}),
        length_flag=flag,
        undecided_judges=[r.judge for r in undecided],
        notes=notes,
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
            what = (("first reply" if i == 0 else "reply to the repair request") if len(result.raw) <= 2
                    else f"reply {i + 1}")
            parts.append(f"--- {name}, {what} ---\n{text}")
    return "\n\n".join(parts) or None


async def judge_debate(call: JudgeCall, config: DebateConfig, fmt: Format, turns: list[Turn]) -> Verdict:
    """Run the configured judge(s) concurrently — each with its own presentation order, and with the order
    reversed too when `swap_sides` is set — the fallback if none succeeded, and combine the rulings.

    With no valid ruling at all the verdict is *unavailable*, carrying every raw reply and every error.
    """
    debaters = [p.id for p in config.participants if p.position != "moderator"]
    names = {p.id: p.name for p in config.participants}
    specs = list(config.judge.judges)
    judge_names = _judge_names(specs)
    orders = [presentation_order(debaters, config.seed, i) for i in range(len(specs) + 1)]
    outcomes = await asyncio.gather(*(rule_with_swap(call, spec, config, fmt, turns, orders[i], name, names)
                                      for i, (spec, name) in enumerate(zip(specs, judge_names, strict=True))))
    results = list(zip(judge_names, outcomes, strict=True))
    if not any(r.ruling.error is None for _, r in results) and config.judge.fallback is not None:
        name = f"{config.judge.fallback.label} (fallback)"
        results.append((name, await rule_with_swap(call, config.judge.fallback, config, fmt, turns,
                                                   orders[len(specs)], name, names)))
    rulings = [r.ruling for _, r in results]
    notes = [n for _, r in results for n in r.notes]
    first = next((labels_for(r.order) for r in rulings if r.order), labels_for(orders[0]))
    if not any(r.error is None for r in rulings):
        reasons = "; ".join(f"{r.judge}: {r.error}" for r in rulings)
        return Verdict(available=False, reasoning=f"Verdict unavailable. {reasons}", rulings=rulings,
                       labels=first, raw_text=_raw_text(results), notes=notes,
                       word_counts=word_counts(turns, debaters))
    verdict = combine(rulings, first, config.judge.criteria, names=names, words=word_counts(turns, debaters))
    verdict.notes = notes + verdict.notes
    return verdict


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
