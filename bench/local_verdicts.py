"""How many verdicts parse against an OpenAI-compatible server (a small local model, or the fake server).

Every debater and every judge is on one compatible endpoint (no demo model anywhere). Two ways to run:

    # the suite of `make bench-local` (bench/local_server.py starts llama-cpp-python and sets the variables):
    # every format family, ~24 short debates, the table written into bench/local_model_verdicts.md
    .venv/bin/python bench/local_verdicts.py --suite --markdown bench/local_model_verdicts.md
    # N debates rotating through five formats, against any server
    .venv/bin/python bench/local_verdicts.py --base-url http://127.0.0.1:8080/v1 --model qwen2.5-0.5b-instruct -n 20
    # against the project's fake server in grammar mode (no model needed)
    .venv/bin/python bench/local_verdicts.py --fake -n 20
    # … or one that refuses json_schema, to see the json_object fallback at work
    .venv/bin/python bench/local_verdicts.py --fake --refuse-json-schema -n 10

`--base-url`/`--model`/`--model2` default to `ROSTRUM_LOCAL_MODEL_URL`, `ROSTRUM_LOCAL_MODEL` and
`ROSTRUM_LOCAL_MODEL_2`. It reports, per format: debates completed; verdicts parsed, at the first reply
and after the one repair request (a judge asked twice with the order reversed counts twice); round
decisions, convergence ratings and quality scores usable; the structured-output mode each judge
ended in; wall time. With `--suite` it also measures what a user feels on a debate turn (`--no-stream`
skips it): Rostrum's tokens per second (the engine's live chunks) ÷ the server's own tokens per second
on the same request streamed directly, and the time to the first token through Rostrum minus direct.

Exit code 0 when every debate completed and the share of parsed verdicts reaches `--target` (0.95).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from webapp.engine.engine import Engine  # noqa: E402
from webapp.engine.machine import State  # noqa: E402
from webapp.engine.stream import LiveChunk, LiveTurnStarted  # noqa: E402
from webapp.models import DebateConfig, JudgeConfig, JudgeSpec, Participant  # noqa: E402
from webapp.providers.base import ProviderRequest  # noqa: E402
from webapp.providers.registry import ProviderCache  # noqa: E402
from webapp.settings import Settings  # noqa: E402

FORMATS = ["oxford", "classic", "convergence", "collaborative", "free-form"]
TOPICS = [
    "Should cities ban cars from their centres?",
    "Is remote work better for software teams than office work?",
    "Should homework be abolished in primary schools?",
    "Should public transport be free at the point of use?",
    "Is nuclear power essential to decarbonise electricity?",
    "Should voting be compulsory?",
]
MARK_START, MARK_END = "<!-- bench-local:start -->", "<!-- bench-local:end -->"


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    model2: str

    def participant(self, name: str, position: str, max_tokens: int, **extra: Any) -> Participant:
        return Participant(name=name, position=position, provider="compatible", base_url=self.base_url,
                           model=self.model, max_tokens=max_tokens, **extra)

    def judge(self, second: bool = False, max_tokens: int = 1500) -> JudgeSpec:
        return JudgeSpec(provider="compatible", base_url=self.base_url, model=self.model2 if second else self.model,
                         max_tokens=max_tokens)


@dataclass(frozen=True)
class Case:
    """One kind of debate in the suite: a label for the table and how to make its config."""

    label: str
    make: Callable[[Endpoint, int, int], DebateConfig]  # (endpoint, seed, debater max tokens)
    count: int = 2


def _cast(ep: Endpoint, seats: list[tuple[str, str]], max_tokens: int) -> list[Participant]:
    return [ep.participant(name, position, max_tokens) for name, position in seats]


def _config(ep: Endpoint, seed: int, fmt: str, seats: list[tuple[str, str]], max_tokens: int, *,
            rounds: int | None = None, judges: int = 1, swap: bool = False, **extra: Any) -> DebateConfig:
    return DebateConfig(
        topic=TOPICS[seed % len(TOPICS)], format=fmt, rounds=rounds, questions=1,
        participants=_cast(ep, seats, max_tokens),
        judge=JudgeConfig(judges=[ep.judge(second=i == 1) for i in range(judges)], swap_sides=swap),
        word_limit=40, clarification=extra.pop("clarification", False), seed=seed, **extra)


PRO_CON = [("Ada", "pro"), ("Bo", "con")]
SUITE: list[Case] = [
    Case("six-phase, 3 participants", lambda ep, s, t: _config(
        ep, s, "six-phase", [("Ada", "pro"), ("Bo", "con"), ("Mo", "moderator")], t), count=1),
    Case("roundtable, 3 participants", lambda ep, s, t: _config(
        ep, s, "roundtable", [("Ada", "optimist"), ("Bo", "skeptic"), ("Cy", "pragmatist")], t, rounds=1)),
    Case("collaborative, no questions", lambda ep, s, t: _config(
        ep, s, "collaborative", [("Ada", "architect"), ("Bo", "critic")], t, rounds=2)),
    Case("collaborative, with questions", lambda ep, s, t: _config(
        ep, s, "collaborative", [("Ada", "architect"), ("Bo", "critic")], t, rounds=2, clarification=True,
        clarification_questions=1, clarification_iterations=1)),
    Case("oxford, judged twice (sides swapped)", lambda ep, s, t: _config(ep, s, "oxford", PRO_CON, t, rounds=1,
                                                                           swap=True)),
    Case("classic, two-judge panel", lambda ep, s, t: _config(ep, s, "classic", PRO_CON, t, judges=2)),
    Case("convergence", lambda ep, s, t: _config(ep, s, "convergence", PRO_CON, t, rounds=2)),
    Case("free-form", lambda ep, s, t: _config(ep, s, "free-form", PRO_CON, t, rounds=2)),
    Case("oxford", lambda ep, s, t: _config(ep, s, "oxford", PRO_CON, t, rounds=1), count=1),
    Case("classic", lambda ep, s, t: _config(ep, s, "classic", PRO_CON, t), count=1),
    Case("lincoln-douglas", lambda ep, s, t: _config(ep, s, "lincoln-douglas", PRO_CON, t), count=1),
    Case("round-limited", lambda ep, s, t: _config(ep, s, "round-limited", PRO_CON, t, rounds=1), count=1),
    Case("structured", lambda ep, s, t: _config(ep, s, "structured", PRO_CON, t), count=1),
]


def rotating_config(index: int, ep: Endpoint, *, swap: bool, max_tokens: int) -> DebateConfig:
    """The older mode: N debates rotating through five formats."""
    fmt = FORMATS[index % len(FORMATS)]
    seats = [("Ada", "pro"), ("Bo", "con"), ("Cy", "skeptic")][: 3 if fmt == "collaborative" else 2]
    return _config(ep, index, fmt, seats, max_tokens,
                   rounds=2 if fmt in ("convergence", "free-form", "collaborative") else 1, swap=swap)


# --- one debate ------------------------------------------------------------------------------------


def verdict_counts(state: Any) -> dict[str, int]:
    """Verdicts asked, parsed, and parsed at the first reply. A judge re-asked with the order reversed
    counts as two verdicts; `parse_failures` covers both halves, so the repaired ones are what is left
    once the halves that failed outright (two failures each) are taken out."""
    asked = parsed = first = 0
    verdict = state.verdict
    if verdict is None:
        return {"asked": len(state.config.judge.judges), "parsed": 0, "first": 0}
    for ruling in verdict.rulings:
        halves = 2 if state.config.judge.swap_sides and ruling.error is None else 1
        good = (ruling.error is None) + (ruling.flipped is not None if halves == 2 else 0)
        repaired = max(0, ruling.parse_failures - 2 * (halves - good))
        asked, parsed, first = asked + halves, parsed + good, first + max(0, good - repaired)
    return {"asked": asked, "parsed": parsed, "first": first}


def decision_counts(state: Any) -> dict[str, int]:
    """Round decisions the judge was asked for (not the hard cap, not fixed rounds) and the usable ones."""
    asked = unusable = 0
    for decision in state.round_decisions.values():
        reason = decision.reason
        if decision.cap or reason.startswith("fixed rounds"):
            continue
        asked += 1
        unusable += "no usable" in reason
    return {"asked": asked, "usable": asked - unusable}


async def run_debate(engine: Engine, config: DebateConfig, label: str) -> dict[str, Any]:
    started = time.monotonic()
    session = await engine.start(config)
    questions = answered = 0
    while True:
        status = await session.join()
        if status is State.AWAITING_CLARIFICATION and answered < 3:
            # No person here: answer every question with the same plain fact, as a hurried user would.
            asked = session.state.clarifications[-1].questions
            questions += sum(len(q) for q in asked.values())
            await session.answer_clarification(
                {pid: ["A mid-sized European city, on a small budget." for _ in qs] for pid, qs in asked.items()})
            answered += 1
            continue
        if status is State.AWAITING_ACK:
            await session.acknowledge_warning()
            continue
        break
    state = session.state
    verdict = state.verdict
    rulings = verdict.rulings if verdict is not None else []
    row = {
        "case": label,
        "format": config.format,
        "status": status.value,
        "completed": status is State.COMPLETED,
        "verdict_available": bool(verdict is not None and verdict.available),
        "verdicts": verdict_counts(state),
        "decisions": decision_counts(state),
        "clarification_questions": questions,
        "output_modes": [r.output_mode for r in rulings],
        "flipped": [r.flipped for r in rulings],
        "winner": verdict.winner if verdict is not None else None,
        "turns": len(state.turns),
        "errors": [r.error[:300] for r in rulings if r.error] + (
            [str(state.machine.context.error)[:300]] if status is State.ERROR else []),
        "seconds": round(time.monotonic() - started, 1),
    }
    if status not in (State.COMPLETED, State.STOPPED):
        await session.stop(verdict=False)
    return row


def print_row(done: int, total: int, row: dict[str, Any]) -> None:
    v, d = row["verdicts"], row["decisions"]
    print(f"{done:>3}/{total} {row['case']:<38} {row['status']:<10} verdicts {v['parsed']}/{v['asked']} "
          f"(first {v['first']}) decisions {d['usable']}/{d['asked']} modes={','.join(map(str, row['output_modes']))} "
          f"{row['turns']} turns {row['seconds']}s" + (f" ERR {row['errors'][0][:160]}" if row["errors"] else ""),
          file=sys.stderr, flush=True)


# --- what a user feels: streaming through Rostrum vs directly ------------------------------------------


class RecordingProviders(ProviderCache):
    """The real providers, with every request they are asked to stream kept (to replay it directly)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requests: list[ProviderRequest] = []

    def get(self, spec: Any) -> Any:
        return _Recorded(super().get(spec), self.requests)


class _Recorded:
    def __init__(self, inner: Any, log: list[ProviderRequest]) -> None:
        self._inner, self._log = inner, log

    def stream(self, request: ProviderRequest) -> Any:
        self._log.append(request)
        return self._inner.stream(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class Timing:
    """One streamed answer: seconds to the first token, the text chunks' arrival times, the text."""

    ttft: float
    times: list[float]
    text: str

    @property
    def rate(self) -> float:
        """Tokens per second while streaming (llama-cpp-python sends one token per chunk)."""
        span = self.times[-1] - self.times[0] if len(self.times) > 1 else 0.0
        return (len(self.times) - 1) / span if span > 0 else 0.0


async def flush(client: httpx.AsyncClient, ep: Endpoint) -> None:
    """One tiny unrelated request, so that no measured prompt finds its prefix in the server's cache."""
    await client.post(f"{ep.base_url}/chat/completions", json={
        "model": ep.model, "messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 2})


async def direct(client: httpx.AsyncClient, ep: Endpoint, params: dict[str, Any]) -> Timing:
    """The same request straight to the server, its server-sent events read as they come."""
    t0 = time.monotonic()
    times: list[float] = []
    parts: list[str] = []
    async with client.stream("POST", f"{ep.base_url}/chat/completions", json=params) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    times.append(time.monotonic())
                    parts.append(text)
    return Timing(ttft=times[0] - t0 if times else float("nan"), times=times, text="".join(parts))


async def through_rostrum(engine: Engine, config: DebateConfig) -> list[Timing]:
    """Run the debate (no judge); each turn's time to its first live chunk and the chunks' arrival times,
    as a page watching the debate receives them."""
    started: dict[str, float] = {}
    chunks: dict[str, list[tuple[float, str]]] = {}

    def listen(event: Any) -> None:
        now = time.monotonic()
        if isinstance(event, LiveTurnStarted):
            started[event.key] = now
            chunks[event.key] = []
        elif isinstance(event, LiveChunk) and event.key in chunks:
            chunks[event.key].append((now, event.text))

    # As a debate page does: the session first, subscribed, then started.
    session = await engine.session(await engine.create(config))
    unsubscribe = session.subscribe(listen)
    try:
        session.ensure_running()
        await session.join()
    finally:
        unsubscribe()
    return [Timing(ttft=c[0][0] - started[k], times=[t for t, _ in c], text="".join(x for _, x in c))
            for k, c in chunks.items() if c]


async def stream_check(ep: Endpoint, reps: int, max_tokens: int) -> dict[str, Any]:
    """Rostrum's tokens/s on debate turns ÷ the server's own on the same requests, and TTFT minus direct.

    Each repetition runs an oxford debate without a judge (3 turns, temperature 0, so a replay writes the
    same text), then replays its recorded requests directly in the same order (each turn's prompt then
    meets the same cached prefix on the server as it did through Rostrum). The order of the two alternates
    between repetitions; a tiny unrelated request goes before each side."""
    rostrum: list[Timing] = []
    plain: list[Timing] = []
    same_text = 0
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "stream.sqlite3"
        providers = RecordingProviders()
        engine = await Engine.open(db, settings=Settings(db=db), providers=providers)
        try:
            async with httpx.AsyncClient(timeout=httpx.Timeout(600.0)) as client:
                config = DebateConfig(
                    topic="Should cities ban cars from their centres?", format="oxford", rounds=1,
                    participants=[ep.participant(n, p, max_tokens, temperature=0.0) for n, p in PRO_CON],
                    judge=JudgeConfig(enabled=False), word_limit=400, clarification=False)
                replay: list[dict[str, Any]] = []
                for rep in range(reps):
                    order = ["rostrum", "direct"] if rep % 2 == 0 or not replay else ["direct", "rostrum"]
                    got: dict[str, list[Timing]] = {}
                    for side in order:
                        await flush(client, ep)
                        if side == "rostrum":
                            providers.requests.clear()
                            got[side] = await through_rostrum(engine, config)
                            if not replay:
                                provider = providers.get(config.participants[0])
                                replay = [provider.build_params(r) for r in providers.requests]
                        else:
                            got[side] = [await direct(client, ep, params) for params in replay]
                    for a, b in zip(got["rostrum"], got["direct"], strict=False):
                        rostrum.append(a)
                        plain.append(b)
                        same_text += a.text.strip() == b.text.strip()
                    print(f"  stream check {rep + 1}/{reps}: "
                          + ", ".join(f"{a.rate:.1f} vs {b.rate:.1f} tok/s, ttft {a.ttft:.2f} vs {b.ttft:.2f} s"
                                      for a, b in zip(got["rostrum"], got["direct"], strict=False)),
                          file=sys.stderr, flush=True)
        finally:
            await engine.close()

    def rate(timings: list[Timing]) -> float:
        tokens = sum(len(t.times) - 1 for t in timings)
        span = sum(t.times[-1] - t.times[0] for t in timings if len(t.times) > 1)
        return tokens / span if span else 0.0

    return {
        "turns": len(rostrum),
        "same_text": same_text,
        "tokens": sum(len(t.times) for t in rostrum),
        "rostrum_tokens_per_s": round(rate(rostrum), 2),
        "direct_tokens_per_s": round(rate(plain), 2),
        "ratio": round(rate(rostrum) / rate(plain), 3) if rate(plain) else None,
        "ttft_rostrum_s_median": round(statistics.median(t.ttft for t in rostrum), 3) if rostrum else None,
        "ttft_direct_s_median": round(statistics.median(t.ttft for t in plain), 3) if plain else None,
        "ttft_extra_s_median": round(statistics.median(a.ttft - b.ttft for a, b in zip(rostrum, plain, strict=True)),
                                     3) if rostrum else None,
    }


# --- the runs and the report ------------------------------------------------------------------------


async def run(args: argparse.Namespace, ep: Endpoint) -> dict[str, Any]:
    if args.stream_only:
        return {"base_url": ep.base_url, "streaming": await stream_check(ep, args.stream_reps, args.stream_tokens)}
    if args.suite:
        plan = [(case.label, case.make(ep, seed, args.max_tokens))
                for case in SUITE for seed in range(case.count)]
    else:
        plan = [(f"{c.format}", c) for c in (rotating_config(i, ep, swap=args.swap_sides, max_tokens=args.max_tokens)
                                             for i in range(args.n))]
    if args.limit:
        plan = plan[: args.limit]
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite3"
        engine = await Engine.open(db, settings=Settings(db=db), backoff_base=0.2)
        try:
            for label, config in plan:
                results.append(await run_debate(engine, config, label))
                print_row(len(results), len(plan), results[-1])
        finally:
            await engine.close()
    report: dict[str, Any] = {"base_url": ep.base_url, "models": sorted({ep.model, ep.model2}),
                              "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                              "wall_s": round(time.monotonic() - started, 1), **summary(results)}
    if args.suite and not args.no_stream:
        report["streaming"] = await stream_check(ep, args.stream_reps, args.stream_tokens)
    report["results"] = results
    return report


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    def total(rows: list[dict[str, Any]], group: str, key: str) -> int:
        return sum(r[group][key] for r in rows)

    by_case: dict[str, dict[str, Any]] = {}
    for label in dict.fromkeys(r["case"] for r in results):
        rows = [r for r in results if r["case"] == label]
        by_case[label] = {
            "debates": len(rows), "completed": sum(r["completed"] for r in rows),
            "verdicts_asked": total(rows, "verdicts", "asked"), "verdicts_parsed": total(rows, "verdicts", "parsed"),
            "verdicts_first_reply": total(rows, "verdicts", "first"),
            "decisions_asked": total(rows, "decisions", "asked"),
            "decisions_usable": total(rows, "decisions", "usable"),
            "questions": sum(r["clarification_questions"] for r in rows),
            "modes": dict(Counter(m for r in rows for m in r["output_modes"])),
            "seconds": round(sum(r["seconds"] for r in rows), 1),
        }
    asked = total(results, "verdicts", "asked")
    parsed = total(results, "verdicts", "parsed")
    decisions = total(results, "decisions", "asked")
    usable = total(results, "decisions", "usable")
    return {
        "debates": len(results),
        "completed": sum(r["completed"] for r in results),
        "verdicts_asked": asked, "verdicts_parsed": parsed,
        "verdicts_first_reply": total(results, "verdicts", "first"),
        "share_parsed": round(parsed / asked, 3) if asked else 0.0,
        "decisions_asked": decisions, "decisions_usable": usable,
        "share_decisions_usable": round(usable / decisions, 3) if decisions else None,
        "output_modes": dict(Counter(m for r in results for m in r["output_modes"])),
        "by_case": by_case,
        "failures": [e for r in results for e in r["errors"]][:8],
    }


def load() -> str:
    """The machine's load averages and core count, for reading the figures."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} cores"


def markdown_table(report: dict[str, Any]) -> str:
    def pct(a: int, b: int) -> str:
        return f"{a}/{b} ({100 * a / b:.0f} %)" if b else "—"

    lines = [
        f"Run {report['when']} against `{report['base_url']}` ({', '.join(report['models'])}); "
        f"{report['load_before']} before, {report['load_after']} after; wall time {report['wall_s'] / 60:.1f} min.",
        "",
        "| debates | completed | verdicts parsed | at the first reply | after the repair "
        "| round decisions / ratings usable | output mode | wall time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, c in report["by_case"].items():
        modes = ", ".join(f"{m} ×{n}" for m, n in c["modes"].items()) or "—"
        extra = f"; {c['questions']} clarification questions" if c["questions"] else ""
        lines.append(
            f"| {label} ×{c['debates']} | {c['completed']}/{c['debates']} "
            f"| {pct(c['verdicts_parsed'], c['verdicts_asked'])} "
            f"| {c['verdicts_first_reply']} | {c['verdicts_parsed'] - c['verdicts_first_reply']} "
            f"| {pct(c['decisions_usable'], c['decisions_asked'])}{extra} | {modes} | {c['seconds']:.0f} s |")
    r = report
    lines.append(
        f"| **all** ×{r['debates']} | **{pct(r['completed'], r['debates'])}** "
        f"| **{pct(r['verdicts_parsed'], r['verdicts_asked'])}** "
        f"| {r['verdicts_first_reply']} | {r['verdicts_parsed'] - r['verdicts_first_reply']} "
        f"| **{pct(r['decisions_usable'], r['decisions_asked'])}** "
        f"| {', '.join(f'{m} ×{n}' for m, n in r['output_modes'].items())} | {r['wall_s']:.0f} s |")
    s = r.get("streaming")
    if s:
        lines += ["", f"Streaming, {s['turns']} debate turns ({s['tokens']} tokens; {s['same_text']} of them the same "
                  "text both ways): Rostrum "
                  f"{s['rostrum_tokens_per_s']} tokens/s, the server directly {s['direct_tokens_per_s']} tokens/s, "
                  f"**ratio {s['ratio']}** (goal ≥ 0.95); time to first token {s['ttft_rostrum_s_median']} s through "
                  f"Rostrum, {s['ttft_direct_s_median']} s direct, **{s['ttft_extra_s_median']:+.3f} s** (median of "
                  "the per-turn differences)."]
    if r["failures"]:
        lines += ["", "First failures:", ""] + [f"- {f}" for f in r["failures"]]
    return "\n".join(lines)


def write_markdown(path: Path, table: str) -> None:
    """Put the table between the markers in `path` (appended, with the markers, if they are not there)."""
    text = path.read_text() if path.exists() else ""
    block = f"{MARK_START}\n{table}\n{MARK_END}"
    if MARK_START in text and MARK_END in text:
        head, rest = text.split(MARK_START, 1)
        text = head + block + rest.split(MARK_END, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("ROSTRUM_LOCAL_MODEL_URL"),
                        help="the server's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", default=os.environ.get("ROSTRUM_LOCAL_MODEL", "local-model"),
                        help="model name to ask for")
    parser.add_argument("--model2", default=os.environ.get("ROSTRUM_LOCAL_MODEL_2"),
                        help="a second model name on the same server, for the two-judge panel")
    parser.add_argument("--fake", action="store_true", help="start tests/fakellm in grammar mode and use it")
    parser.add_argument("--refuse-json-schema", action="store_true", help="with --fake: refuse json_schema (400)")
    parser.add_argument("--suite", action="store_true", help="every format family (~24 debates) instead of -n")
    parser.add_argument("--limit", type=int, default=0, help="run only the first N debates of the plan")
    parser.add_argument("-n", type=int, default=10, help="number of debates (without --suite)")
    parser.add_argument("--max-tokens", type=int, default=24, help="max tokens per debate turn")
    parser.add_argument("--swap-sides", action="store_true", help="judge twice, the order reversed (without --suite)")
    parser.add_argument("--no-stream", action="store_true", help="--suite without the streaming measurement")
    parser.add_argument("--stream-only", action="store_true", help="only the streaming measurement")
    parser.add_argument("--stream-reps", type=int, default=2, help="repetitions of the streaming measurement")
    parser.add_argument("--stream-tokens", type=int, default=80, help="max tokens of the measured turns")
    parser.add_argument("--target", type=float, default=0.95, help="share of parsed verdicts to reach")
    parser.add_argument("--markdown", type=Path, help="write the table into this file (between its markers)")
    parser.add_argument("--json", action="store_true", help="print every debate's row too")
    args = parser.parse_args(argv)
    if not args.fake and not args.base_url:
        parser.error("give --base-url (and --model), or --fake (or set ROSTRUM_LOCAL_MODEL_URL)")
    server = None
    if args.fake:
        from tests.fakellm import FakeLLMServer

        server = FakeLLMServer()
        server.grammar, server.refuse_json_schema = True, args.refuse_json_schema
        server.start()
        base_url = server.openai_url
    else:
        base_url = args.base_url.rstrip("/")
    model2 = args.model2 or f"{args.model}-b"
    before = load()
    try:
        report = asyncio.run(run(args, Endpoint(base_url, args.model, model2)))
    finally:
        if server is not None:
            server.stop()
    report["load_before"], report["load_after"] = before, load()
    if args.stream_only:
        print(json.dumps(report, indent=2))
        return 0
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        report["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                          text=True, timeout=10).stdout.strip()
    if not args.json:
        report.pop("results")
    print(json.dumps(report, indent=2))
    if args.markdown:
        write_markdown(args.markdown, markdown_table(report))
    ok = report["completed"] == report["debates"] and report["share_parsed"] >= args.target
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
