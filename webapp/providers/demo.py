"""The offline demo provider: deterministic, topic-, position- and phase-aware prose, no key needed.

It streams word by word at a configurable rate (`demo` ≈ 40 tokens/s, `demo-instant` without delay;
the `demo_speed` setting, `ROSTRUM_DEMO_SPEED`, overrides both without changing a word) against a
deadline schedule, so a stalled event loop delays words but does not slow the turn down; it stops at the
request's `max_tokens` like a real model, reports token usage, answers judge requests with valid
JSON worked out from the request, and can be told to fail at a chosen turn of every debate for tests
(`ROSTRUM_DEMO_FAIL`; `stall` holds a turn half-written until it is paused or stopped). It keeps
nothing of what it is asked (`RecordingDemoProvider`, a test double, does).

Its simulated price is not here: it comes from the price table (`webapp.engine.budget`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from webapp.models import Usage
from webapp.providers.base import (
    Completion,
    ErrorKind,
    ProviderError,
    ProviderRequest,
    StreamItem,
    TextDelta,
    estimate_request_tokens,
    estimate_tokens,
)
from webapp.providers.lexical import lexical_on_topic

if TYPE_CHECKING:
    from webapp.settings import Settings

DEMO_MODELS = {"demo": 40.0, "demo-instant": 0.0}
# `timeout`: no first token (the first-token timeout ends the attempt); `stall`: half the turn's words, then
# nothing until the call is cancelled (a pause, a stop) or runs into the turn timeout — a debate held
# running for a test, which a pause and resume release (the redone turn streams); the others raise.
FAILURE_KINDS = ("timeout", "stall", "rate_limit", "cut", "server", "auth")

_STANCE = {
    "pro": "in favour of the motion",
    "con": "against the motion",
    "moderator": "as the neutral moderator",
}
_OPENERS = [
    "Let me be direct about {topic_short}.",
    "The question of {topic_short} deserves a clear answer.",
    "I come to {topic_short} {stance}, and for concrete reasons.",
    "Consider what {topic_short} means in practice.",
]
_ARGUMENTS = [
    "the {aspect} evidence points one way: when similar policies were tried, outcomes followed incentives, "
    "not intentions",
    "the {aspect} costs are routinely underestimated by those who have not had to bear them",
    "people adapt to rules faster than critics predict, and that changes the {aspect} calculation",
    "the burden of proof rests on whoever asks us to accept the {aspect} risk",
    "a {aspect} framework that ignores second-order effects is not a framework at all",
    "the {aspect} benefits compound over time while the objections are one-off",
    "fairness demands we ask who pays the {aspect} price and who collects the reward",
    "the {aspect} record shows that half-measures satisfy nobody",
]
_ASPECTS = ["economic", "ethical", "practical", "historical", "social", "long-term", "empirical"]
_CONNECTIVES = ["First,", "Second,", "Moreover,", "Crucially,", "Finally,"]
_QUESTIONS = [
    "If {point}, how do you account for the people it leaves worse off?",
    "You said {point}. What evidence would change your mind?",
    "Can you name one case where {point} actually held up under scrutiny?",
    "Who bears the cost if {point} turns out to be wrong?",
]
_REBUT = [
    "My opponent argued that {point}. That claim does not survive contact with the details.",
    "We heard that {point}. It sounds reasonable, but it assumes exactly what it needs to prove.",
    "{name} insists that {point}. Even granting that, it does not carry the motion.",
]


def _seeded(*parts: Any) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def _short_topic(topic: str) -> str:
    topic = " ".join(topic.split()).rstrip("?.! ")
    words = topic.split()
    short = " ".join(words[:14]) + ("…" if len(words) > 14 else "")
    return f"“{short[:1].lower()}{short[1:]}”"


def _point_of(text: str) -> str:
    """A short, quotable claim from someone's turn: an argument, not a quote of a quote."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 6]
    answers = [s.split("straightforward: ", 1)[1] for s in sentences if "straightforward: " in s]
    candidates = answers or [s for s in sentences if s.split()[0] in _CONNECTIVES]
    if not candidates:  # a turn of pure rebuttal: there is no fresh claim of theirs to quote
        return "their case needs no further defence"
    chosen = candidates[0].split(maxsplit=1)[1] if candidates[0].split()[0] in _CONNECTIVES else candidates[0]
    words = chosen.rstrip(".!?").split()
    return " ".join(words[:16]).strip(",;:")


def _question_of(text: str) -> str:
    questions = [q.strip() for q in re.findall(r"[^.!?]*\?", text) if len(q.split()) >= 4]
    return questions[-1] if questions else "your question"


def _fit(sentences: list[tuple[int, str]], limit: int) -> str:
    """Whole sentences within `limit` words. Each sentence carries a rank (0 = keep longest); the
    highest-ranked ones are dropped first, so a short turn still answers the opponent and argues,
    rather than stopping mid-sentence."""
    kept = [(rank, re.sub(r"\ba ([aeiou])", r"an \1", text)) for rank, text in sentences]
    while sum(len(t.split()) for _, t in kept) > limit and len(kept) > 1:
        worst = max(range(len(kept)), key=lambda i: (kept[i][0], i))
        del kept[worst]
    text = " ".join(t for _, t in kept)
    parts = text.split()
    return text if len(parts) <= limit else " ".join(parts[:limit])


# The on-topic question of `webapp.engine.termination.check_on_topic`.
_ON_TOPIC = re.compile(r"Topic: (?P<topic>.*?)\n\nTurn by [^\n]*:\n(?P<turn>.*)\n\nIs this turn on topic\?", re.S)


def _within(words: list[str], max_tokens: int) -> tuple[list[str], str]:
    """The words that fit in `max_tokens` (counted as usage counts them), and the finish reason."""
    kept: list[str] = []
    size = 0
    for word in words:
        size += len(word)
        if (size + 3) // 4 > max_tokens:  # `estimate_tokens` of the text so far
            return kept, "length"
        kept.append(word)
    return kept, "stop"


def parse_failures(spec: str | None) -> dict[int, str]:
    """`"3:rate_limit,5:cut"` → {3: "rate_limit", 5: "cut"}; a trailing `!` fails every attempt."""
    out: dict[int, str] = {}
    for item in (spec or "").split(","):
        number, _, kind = item.strip().partition(":")
        if number.strip().isdigit() and kind.strip().rstrip("!") in FAILURE_KINDS:
            out[int(number)] = kind.strip()
    return out


class DemoProvider:
    """A deterministic offline model. Its output depends only on the seed and the turn, never on
    timing or retries, so an interrupted debate ends with the same transcript as an uninterrupted one."""

    name = "demo"

    def __init__(
        self,
        model: str = "demo",
        speed: float | None = None,
        failures: dict[int, str] | None = None,
        settings: Settings | None = None,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        """`speed` (tokens per second, 0 = instant) wins over the settings' `demo_speed`, which wins
        over the model's own pace. `clock` (seconds, monotonic; default: the running loop's clock) and
        `sleep` (default `asyncio.sleep`) are there for tests of the pacing."""
        self.model = model
        if speed is None and settings is not None:
            speed = settings.demo_speed
        self.speed = speed if speed is not None else DEMO_MODELS.get(model, 40.0)
        self.failures = failures if failures is not None else parse_failures(os.environ.get("ROSTRUM_DEMO_FAIL"))
        self._failed: set[tuple[str, int, int]] = set()  # (topic, seed, turn number) that failed once
        self._clock = clock
        self._sleep = sleep if sleep is not None else asyncio.sleep

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        text = self.compose(request)
        failure = self._failure_for(request)
        if failure in ("rate_limit", "server", "auth"):
            raise self._error(failure)
        words, finish_reason = _within(re.findall(r"\S+\s*", text), request.max_tokens)
        text = "".join(words)
        cut_at = len(words) // 2 if failure == "cut" else None
        stall_at = len(words) // 2 if failure == "stall" else None
        # Word i is due at t0 + (i + 1) / speed: a schedule, not a delay per word, so time the loop
        # spent elsewhere (a stall, a slow consumer) is caught up rather than added to the turn.
        clock = self._clock or asyncio.get_running_loop().time
        t0 = clock()
        unpaused = 0  # words yielded since the loop last had a turn
        for i, word in enumerate(words):
            if i == cut_at:
                raise ProviderError(ErrorKind.RETRYABLE, "demo", "stream ended before completion", reason="cut_stream")
            if failure == "timeout" or i == stall_at:
                await self._sleep(3600)
            wait = t0 + (i + 1) / self.speed - clock() if self.speed else 0.0
            if wait > 0:
                await self._sleep(wait)
                unpaused = 0
            elif unpaused % 16 == 0:  # instant, or behind schedule: still let the loop run now and then
                await self._sleep(0)
            unpaused += 1
            yield TextDelta(word)
        usage = Usage(input_tokens=estimate_request_tokens(request), output_tokens=estimate_tokens(text))
        yield Completion(usage=usage, finish_reason=finish_reason, request_id=None)

    def _failure_for(self, request: ProviderRequest) -> str | None:
        number = request.context.get("turn_number")
        if not isinstance(number, int):
            return None
        kind = self.failures.get(number)
        if kind is None:
            return None
        if kind.endswith("!"):
            return kind[:-1]
        # Once per debate, not once per process: a server's provider is shared by every debate it runs,
        # and each of them is to meet the failure (a debate is its topic and seed, as its text is).
        debate = (str(request.context.get("topic", "")), int(request.context.get("seed") or 0), number)
        if debate in self._failed:
            return None
        self._failed.add(debate)
        return kind

    def _error(self, kind: str) -> ProviderError:
        if kind == "rate_limit":
            return ProviderError(ErrorKind.RETRYABLE, "demo", "simulated rate limit", status=429,
                                 retry_after=0.0, reason="rate_limit")
        if kind == "server":
            return ProviderError(ErrorKind.RETRYABLE, "demo", "simulated server error", status=500, reason="server")
        return ProviderError(ErrorKind.FATAL, "demo", "simulated invalid API key", status=401, reason="auth")

    # --- writing -------------------------------------------------------------------------------

    def compose(self, request: ProviderRequest) -> str:
        """The full text this request produces (deterministic for a seed and a turn), before any cut
        at `max_tokens`."""
        ctx = request.context
        rng = _seeded(ctx.get("seed", 0), ctx.get("turn_key", ""), request.purpose, self.model)
        if request.purpose == "on_topic":
            return self._write_on_topic(request)
        if request.purpose == "verdict":
            return self._write_verdict(rng, ctx, request.max_tokens)
        writer = getattr(self, f"_write_{request.purpose}", None)
        if writer is None:
            return self._write_turn(rng, ctx)
        return writer(rng, ctx)

    def _write_turn(self, rng: random.Random, ctx: dict[str, Any]) -> str:
        topic = _short_topic(str(ctx.get("topic", "the motion")))
        position = str(ctx.get("position", "pro"))
        stance = _STANCE.get(position, f"as the {position}")
        act = str(ctx.get("act", "speak"))
        phase = str(ctx.get("phase_title", ctx.get("phase", "this phase")))
        opponent = ctx.get("opponent_last") or {}
        point = _point_of(opponent.get("text", "")) if opponent else ""
        name = opponent.get("name", "my opponent")
        limit = int(ctx.get("word_limit") or 150)
        if act == "ask":
            q = rng.choice(_QUESTIONS).format(point=point or f"{topic} is settled")
            return f"{name}, my question. {q[0].upper()}{q[1:]}"
        if act == "answer":
            question = _question_of(opponent.get("text", "")) if opponent else "your question"
            body = (
                f"You asked: “{question}” My answer, {stance}, is straightforward: "
                f"{rng.choice(_ARGUMENTS).format(aspect=rng.choice(_ASPECTS))}. "
                f"That is why on {topic} I hold my ground."
            )
            return body
        # (rank, sentence): lower ranks survive a tight word limit (see _fit)
        sentences = [(3, rng.choice(_OPENERS).format(topic_short=topic, stance=stance))]
        if act == "prepare":
            sentences = [(3, f"Preparation notes on {topic}, {stance}.")]
        if point and act in ("speak", "critique", "refine", "synthesize"):
            sentences.append((0, rng.choice(_REBUT).format(point=point, name=name)))
        sentences.append((4, f"In the {phase.lower()}, I speak {stance}."))
        budget = max(40, min(limit, 160))
        arguments = rng.sample(_ARGUMENTS, len(_CONNECTIVES))
        aspects = rng.sample(_ASPECTS, len(_CONNECTIVES))
        for rank, (connective, template, aspect) in enumerate(zip(_CONNECTIVES, arguments, aspects, strict=True)):
            sentences.append((2 if rank == 0 else 5 + rank, f"{connective} {template.format(aspect=aspect)}."))
            if len(" ".join(t for _, t in sentences).split()) > budget * 0.8:
                break
        if act in ("synthesize",):
            sentences.append((1, "Both sides agree the stakes are real; they differ on who should carry the risk."))
        else:
            sentences.append((1, f"For these reasons I stand {stance} on {topic}."))
        return _fit(sentences, limit)

    def _write_verdict(self, rng: random.Random, ctx: dict[str, Any], max_tokens: int | None = None) -> str:
        """A verdict in the judge's JSON schema; a big panel's notes are left out rather than let the
        JSON be cut off at `max_tokens`."""
        labels: list[str] = list(ctx.get("labels") or ["A", "B"])
        criteria: list[str] = list(ctx.get("criteria") or ["argument quality"])
        lengths: dict[str, int] = dict(ctx.get("label_words") or {})
        scores: dict[str, int] = {}
        per_criterion: dict[str, dict[str, dict[str, Any]]] = {}
        # Scores follow the debater, not the label: with `label_ids` (label → participant), each score is
        # drawn for the participant, so the demo judge rules the same whatever order it is shown.
        ids: dict[str, str] = dict(ctx.get("label_ids") or {})
        base_key = str(ctx.get("turn_key", "")).removesuffix("/swapped")
        for criterion in criteria:
            per_criterion[criterion] = {}
            for label in labels:
                draw = _seeded(ctx.get("seed", 0), base_key, ids[label], criterion) if label in ids else rng
                score = 55 + draw.randint(0, 35) + min(5, lengths.get(label, 0) // 400)
                per_criterion[criterion][label] = {
                    "score": score,
                    "note": f"Debater {label} was {'consistent' if score > 75 else 'uneven'} on {criterion}.",
                }
        for label in labels:
            values = [per_criterion[c][label]["score"] for c in criteria]
            scores[label] = round(sum(values) / len(values))
        ranked = sorted(labels, key=lambda lab: (-scores[lab], lab))
        winner = ranked[0] if len(ranked) == 1 or scores[ranked[0]] != scores[ranked[1]] else None
        reasoning = (
            f"Judged on {', '.join(criteria)}. "
            + (f"Debater {winner} made the stronger case overall, engaging directly with the other side's points."
               if winner else "The two sides were evenly matched; this is a tie.")
        )
        verdict = {
            "winner": winner or "tie",
            "scores": scores,
            "criteria": per_criterion,
            "reasoning": reasoning,
            "confidence": round(0.6 + rng.random() * 0.3, 2),
        }
        text = json.dumps(verdict)
        if max_tokens is not None and estimate_tokens(text) > max_tokens:
            for per_label in per_criterion.values():
                for entry in per_label.values():
                    entry["note"] = ""
            text = json.dumps(verdict, separators=(",", ":"))
        return text

    def _write_round_check(self, rng: random.Random, ctx: dict[str, Any]) -> str:
        round_no = int(ctx.get("round", 1))
        stop = round_no >= int(ctx.get("demo_stop_after", 3))
        reason = "the main arguments have been exhausted" if stop else "new arguments are still emerging"
        return json.dumps({"continue": not stop, "reason": reason})

    def _write_convergence(self, rng: random.Random, ctx: dict[str, Any]) -> str:
        round_no = int(ctx.get("round", 1))
        agreement = min(100, 40 + 15 * round_no + rng.randint(0, 5))
        return json.dumps({"agreement": agreement, "irreconcilable": False,
                           "reason": f"the sides now share {agreement}% of their position"})

    def _write_quality(self, rng: random.Random, ctx: dict[str, Any]) -> str:
        round_no = int(ctx.get("round", 1))
        score = min(100, 60 + 12 * round_no + rng.randint(0, 4))
        return json.dumps({"score": score, "reason": f"the refined proposals score {score}/100"})

    def _write_clarify(self, rng: random.Random, ctx: dict[str, Any]) -> str:
        topic = _short_topic(str(ctx.get("topic", "the problem")))
        iteration = int(ctx.get("iteration", 1))
        limit = int(ctx.get("max_questions", 3))
        if iteration > 1:
            questions = [f"Following up: is there a deadline we must meet for {topic}?"][:limit]
        else:
            questions = [
                f"What does success look like for {topic}?",
                "What constraints (budget, time, people) must the solution respect?",
                "Who are the main stakeholders?",
            ][:limit]
        return json.dumps({"questions": questions if iteration <= 2 else []})

    def _write_summary(self, rng: random.Random, ctx: dict[str, Any]) -> str:
        points = [str(p) for p in ctx.get("points", [])][:6]
        joined = "; ".join(points) if points else "earlier turns restated each side's position"
        return f"Summary of earlier turns: {joined}."

    def _write_on_topic(self, request: ProviderRequest) -> str:
        """Judge a turn's relevance the offline way, from the request itself: does the turn share a
        key word with the topic?"""
        asked = _ON_TOPIC.search(request.messages[-1].content if request.messages else "")
        if asked is None or lexical_on_topic(asked["topic"], asked["turn"]):
            return json.dumps({"on_topic": True, "reason": "the turn addresses the topic"})
        return json.dumps({"on_topic": False, "reason": "shares no key words with the topic (lexical check)"})

    def _write_synthesis(self, rng: random.Random, ctx: dict[str, Any]) -> str:
        topic = _short_topic(str(ctx.get("topic", "the problem")))
        return (
            f"Final solution for {topic}: combine the strongest elements of each refined proposal, "
            "stage the rollout so the riskiest assumptions are tested first, and review the results "
            "against the success criteria the user gave."
        )


class RecordingDemoProvider(DemoProvider):
    """A test double: the demo model keeping every request it receives in `received`, so a test can
    check what each speaker and judge was shown. Never made by the app (a server would keep every
    prompt it ever sent)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.received: list[ProviderRequest] = []

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        self.received.append(request)
        async for item in super().stream(request):
            yield item


class OneProvider:
    """A provider source that hands the same provider to every participant and judge — for tests,
    benchmarks and offline runs of the engine without the registry. Defaults to an instant demo
    model with no injected failures that records what it is asked (`provider.received`)."""

    def __init__(self, provider: Any = None) -> None:
        self.provider = provider if provider is not None else RecordingDemoProvider("demo-instant", speed=0,
                                                                                    failures={})

    def get(self, spec: object) -> Any:
        return self.provider
