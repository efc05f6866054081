"""What a whole debate may cost, before it starts: a low and a high figure from the format's turn
count and each model's price.

Nobody knows how long the answers will be, so the estimate rests on a stated token range per call
(`TokenRange`): a short answer for the low figure, the call's full allowance (its `max_tokens`, or
the word limit in tokens when that is smaller) for the high one. Every turn re-reads the visible
history before it (capped by the participant's context budget), which is what makes long debates
dear. Judge calls are counted too: each verdict (per judge, per checkpoint, twice when sides are
swapped), a per-round evaluation where the format ends on one, on-topic checks in strict mode and a
final synthesis.

Prices come from `budget.cost_of` (overrides, `genai-prices`, local servers at $0). The demo models
cost nothing (their simulated prices only let budgets be tried), so they count as free; a model with
no known price is listed as unpriced and adds nothing: a price is never invented.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from webapp.engine import budget as money
from webapp.engine.formats import Format, get_format
from webapp.engine.schedule import phase_visible, plan, total_rounds
from webapp.models import DebateConfig, JudgeSpec, Participant, Usage
from webapp.providers.base import estimate_tokens
from webapp.settings import Settings, get_settings

PROMPT_TOKENS = 350  # instructions, format and phase text of a call, besides the topic, persona and history
LOW_TURN_TOKENS = 150  # a short turn: the low figure's answer length
LOW_VERDICT_TOKENS = 300
AUX_MAX_TOKENS = 800  # the judge's smaller calls (round checks, on-topic) are capped at this (termination.py)
LOW_AUX_TOKENS = 40
TOKENS_PER_WORD = 1.4  # a word limit in tokens, generously
PRICE_PROBE_TOKENS = 10_000  # prices are read at this size: below any tier threshold, above rounding

Spec = Participant | JudgeSpec


@dataclass(frozen=True)
class TokenRange:
    """The answer length assumed for one call: `low` for the low figure, `high` for the high one."""

    low: int
    high: int


@dataclass
class DebateEstimate:
    """The estimated cost range of a debate (USD), over the models that have a price."""

    low_usd: float = 0.0
    high_usd: float = 0.0
    turns_low: int = 0
    turns_high: int = 0
    judge_calls_low: int = 0
    judge_calls_high: int = 0
    free_models: list[str] = field(default_factory=list)
    priced_models: list[str] = field(default_factory=list)
    unpriced_models: list[str] = field(default_factory=list)

    @property
    def free(self) -> bool:
        """Every model costs nothing (demo or local)."""
        return not self.priced_models and not self.unpriced_models

    @property
    def label(self) -> str:
        """'Free', '$0.02 – $0.41', '$0.02 – $0.41 + unpriced: x' or 'Unpriced: x'."""
        unpriced = ", ".join(self.unpriced_models)
        if self.free:
            return "Free"
        if not self.priced_models:
            return f"Unpriced: {unpriced}"
        span = f"{usd(self.low_usd)} – {usd(self.high_usd)}"
        return f"{span} + unpriced: {unpriced}" if unpriced else span


def usd(value: float) -> str:
    """Dollars with the precision a small amount needs ($0.0042, $0.12, $3.40)."""
    if value == 0:
        return "$0"
    if value < 0.01:
        return f"${value:.4f}"
    return f"${value:.2f}"


@dataclass
class _Tally:
    """Tokens per model, for one bound of the estimate."""

    tokens: dict[str, list[int]] = field(default_factory=dict)  # model label -> [input, output]

    def add(self, spec: Spec, input_tokens: int, output_tokens: int) -> None:
        counts = self.tokens.setdefault(_key(spec), [0, 0])
        counts[0] += input_tokens
        counts[1] += output_tokens


def label(spec: Spec) -> str:
    return f"{spec.provider}:{spec.model}"


def _key(spec: Spec) -> str:
    return label(spec) if spec.provider != "compatible" else f"{label(spec)}@{spec.preset or spec.base_url or ''}"


def turn_range(participant: Participant, word_limit: int | None) -> TokenRange:
    high = participant.max_tokens
    if word_limit:
        high = min(high, math.ceil(word_limit * TOKENS_PER_WORD))
    return TokenRange(min(high, LOW_TURN_TOKENS), high)


def _rates(spec: Spec, settings: Settings) -> tuple[float, float] | None:
    """(input, output) USD per token of `spec`'s model; None when unpriced; (0, 0) when free."""
    if spec.provider in ("demo", "human"):  # offline demo models and people cost nothing
        return 0.0, 0.0
    probe = PRICE_PROBE_TOKENS
    cost_in = money.cost_of(spec, Usage(input_tokens=probe, output_tokens=0), settings).usd
    cost_out = money.cost_of(spec, Usage(input_tokens=0, output_tokens=probe), settings).usd
    if cost_in is None or cost_out is None:
        return None
    return cost_in / probe, cost_out / probe


def _walk(config: DebateConfig, fmt: Format, rounds: int, bound: str, tally: _Tally) -> tuple[int, int]:
    """Add the tokens of a debate of `rounds` rounds at the `bound` ("low"/"high") answer length;
    returns (turns, judge calls)."""
    by_id = {p.id: p for p in config.participants}
    base = PROMPT_TOKENS + estimate_tokens(config.topic)
    history = 0  # visible output so far: what the next call re-reads
    turns = judge_calls = 0
    judge = config.judge
    aux = judge.judges[0] if judge.enabled else None
    steps = plan(fmt, config, rounds)
    last_round = max((s.round for s in steps), default=1)
    for index, step in enumerate(steps):
        added = 0
        for slot in step.turns:
            speaker = by_id[slot.speaker]
            length = getattr(turn_range(speaker, config.word_limit or fmt.phase(slot.phase).word_limit), bound)
            read = history if speaker.context_tokens is None else min(history, speaker.context_tokens)
            tally.add(speaker, base + estimate_tokens(speaker.persona) + read, length)
            turns += 1
            if phase_visible(fmt.phase(slot.phase), config):
                added += length
            if config.strict and aux is not None:  # an on-topic check of every turn
                tally.add(aux, base + length, LOW_AUX_TOKENS if bound == "low" else min(aux.max_tokens, 200))
                judge_calls += 1
        history += added
        end_of_round = index + 1 == len(steps) or steps[index + 1].round != step.round
        if not (end_of_round and fmt.has_rounds and aux is not None):
            continue
        if fmt.termination.kind != "fixed" and step.round < last_round:  # the judge asks: go on?
            tally.add(aux, base + history, LOW_AUX_TOKENS if bound == "low" else min(aux.max_tokens, AUX_MAX_TOKENS))
            judge_calls += 1
        if judge.frequency == "round" and step.round < last_round:
            judge_calls += _verdicts(config, base + history, bound, tally)
        if judge.frequency == "mid" and step.round == max(1, last_round // 2) and last_round > 1:
            judge_calls += _verdicts(config, base + history, bound, tally)
    if judge.enabled:
        judge_calls += _verdicts(config, base + history, bound, tally)
        if fmt.judge_synthesis and aux is not None:
            tally.add(aux, base + history, LOW_VERDICT_TOKENS if bound == "low" else aux.max_tokens)
            judge_calls += 1
    return turns, judge_calls


def _verdicts(config: DebateConfig, input_tokens: int, bound: str, tally: _Tally) -> int:
    """One verdict of every judge of the panel (twice with swapped sides); returns the calls."""
    times = 2 if config.judge.swap_sides else 1
    for spec in config.judge.judges:
        output = LOW_VERDICT_TOKENS if bound == "low" else spec.max_tokens
        for _ in range(times):
            tally.add(spec, input_tokens, min(output, spec.max_tokens))
    return times * len(config.judge.judges)


def estimate_debate(config: DebateConfig, settings: Settings | None = None) -> DebateEstimate:
    """The low and high cost of `config` (see the module's docstring for what is assumed)."""
    settings = settings or get_settings()
    fmt = get_format(config.format)
    high_rounds = total_rounds(fmt, config)
    low_rounds = high_rounds if fmt.termination.kind == "fixed" else min(high_rounds, fmt.termination.min_rounds)
    low, high = _Tally(), _Tally()
    result = DebateEstimate()
    result.turns_low, result.judge_calls_low = _walk(config, fmt, low_rounds, "low", low)
    result.turns_high, result.judge_calls_high = _walk(config, fmt, high_rounds, "high", high)
    specs: dict[str, Spec] = {}
    everyone: list[Spec] = [*config.participants, *(config.judge.judges if config.judge.enabled else [])]
    for spec in everyone:
        specs.setdefault(_key(spec), spec)
    for key, spec in specs.items():
        if key not in high.tokens:
            continue  # a participant who never speaks costs nothing
        rates = _rates(spec, settings)
        if rates is None:
            result.unpriced_models.append(label(spec))
            continue
        if rates == (0.0, 0.0):
            result.free_models.append(label(spec))
            continue
        result.priced_models.append(label(spec))
        for tally, attribute in ((low, "low_usd"), (high, "high_usd")):
            input_tokens, output_tokens = tally.tokens.get(key, [0, 0])
            cost = input_tokens * rates[0] + output_tokens * rates[1]
            setattr(result, attribute, getattr(result, attribute) + cost)
    return result
