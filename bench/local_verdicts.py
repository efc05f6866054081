"""How many verdicts parse against an OpenAI-compatible server (a small local model, or the fake server).

Runs N debates with every debater and the judge on one compatible endpoint (no demo model anywhere),
rotating through formats, and reports the share of verdicts that parse (at all, and at the first reply
without the repair request), how each verdict was asked for (json_schema / json_object / prompt), and
how many round decisions and convergence ratings were usable.

    # against a real server (see bench/local_model_verdicts.md for llama.cpp / Ollama set-ups)
    .venv/bin/python bench/local_verdicts.py --base-url http://127.0.0.1:8080/v1 --model qwen2.5-0.5b-instruct -n 20
    # against the project's fake server in grammar mode (no model needed)
    .venv/bin/python bench/local_verdicts.py --fake -n 20
    # … or one that refuses json_schema, to see the json_object fallback at work
    .venv/bin/python bench/local_verdicts.py --fake --refuse-json-schema -n 10

Exit code 0 when the share of parsed verdicts reaches `--target` (default 0.95), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from webapp.engine.engine import Engine  # noqa: E402
from webapp.engine.machine import State  # noqa: E402
from webapp.models import DebateConfig, JudgeConfig, JudgeSpec, Participant  # noqa: E402
from webapp.settings import Settings  # noqa: E402

FORMATS = ["oxford", "classic", "convergence", "collaborative", "free-form"]
TOPICS = [
    "Should cities ban cars from their centres?",
    "Is remote work better for software teams than office work?",
    "Should homework be abolished in primary schools?",
    "Should public transport be free at the point of use?",
    "Is nuclear power essential to decarbonise electricity?",
]


def debate_config(index: int, base_url: str, model: str, *, swap: bool, max_tokens: int) -> DebateConfig:
    fmt = FORMATS[index % len(FORMATS)]
    endpoint = {"provider": "compatible", "base_url": base_url, "model": model}
    names = [("Ada", "pro"), ("Bo", "con"), ("Cy", "skeptic")][: 3 if fmt == "collaborative" else 2]
    return DebateConfig(
        topic=TOPICS[index % len(TOPICS)],
        format=fmt,
        rounds=2 if fmt in ("convergence", "free-form", "collaborative") else 1,
        questions=1,
        participants=[Participant(name=n, position=p, max_tokens=max_tokens, **endpoint) for n, p in names],
        judge=JudgeConfig(judges=[JudgeSpec(max_tokens=1500, **endpoint)], swap_sides=swap),
        word_limit=80,
        clarification=False,
        seed=index,
    )


async def run(args: argparse.Namespace, base_url: str) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite3"
        engine = await Engine.open(db, settings=Settings(db=db), backoff_base=0.2)
        try:
            for index in range(args.n):
                config = debate_config(index, base_url, args.model, swap=args.swap_sides, max_tokens=args.max_tokens)
                started = time.monotonic()
                session = await engine.start(config)
                status = await session.join()
                state = session.state
                verdict = state.verdict
                decisions = list(state.round_decisions.values())
                rulings = verdict.rulings if verdict is not None else []
                results.append({
                    "format": config.format,
                    "status": status.value,
                    "verdict": bool(verdict is not None and verdict.available),
                    "first_reply": bool(verdict is not None and verdict.available
                                        and all(r.parse_failures == 0 for r in rulings if r.error is None)),
                    "output_modes": [r.output_mode for r in rulings],
                    "parse_failures": sum(r.parse_failures for r in rulings),
                    "flipped": [r.flipped for r in rulings],
                    "decisions": len([d for d in decisions if not d.get("cap")]),
                    "unusable_decisions": len([d for d in decisions if "no usable" in str(d.get("reason", ""))]),
                    "error": None if verdict is None or verdict.available else verdict.reasoning[:300],
                    "seconds": round(time.monotonic() - started, 1),
                })
                row = results[-1]
                print(f"{index + 1:>3}/{args.n} {row['format']:<14} {row['status']:<10} "
                      f"verdict={'yes' if row['verdict'] else 'NO '} modes={','.join(map(str, row['output_modes']))} "
                      f"failures={row['parse_failures']} decisions={row['decisions']} "
                      f"unusable={row['unusable_decisions']} {row['seconds']}s", file=sys.stderr, flush=True)
                if status not in (State.COMPLETED, State.STOPPED):
                    await session.stop(verdict=False)
        finally:
            await engine.close()
    parsed = sum(r["verdict"] for r in results)
    return {
        "base_url": base_url,
        "model": args.model,
        "debates": len(results),
        "verdicts_parsed": parsed,
        "share_parsed": round(parsed / len(results), 3) if results else 0.0,
        "parsed_at_first_reply": sum(r["first_reply"] for r in results),
        "output_modes": dict(Counter(m for r in results for m in r["output_modes"])),
        "round_decisions": sum(r["decisions"] for r in results),
        "unusable_round_decisions": sum(r["unusable_decisions"] for r in results),
        "by_format": {f: f"{sum(r['verdict'] for r in results if r['format'] == f)}/"
                         f"{sum(1 for r in results if r['format'] == f)}" for f in FORMATS},
        "failures": [r["error"] for r in results if r["error"]][:5],
        "results": results if args.json else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the server's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", default="local-model", help="model name to ask for")
    parser.add_argument("--fake", action="store_true", help="start tests/fakellm in grammar mode and use it")
    parser.add_argument("--refuse-json-schema", action="store_true", help="with --fake: refuse json_schema (400)")
    parser.add_argument("-n", type=int, default=10, help="number of debates")
    parser.add_argument("--max-tokens", type=int, default=200, help="max tokens per debate turn")
    parser.add_argument("--swap-sides", action="store_true", help="judge twice, the order reversed")
    parser.add_argument("--target", type=float, default=0.95, help="share of parsed verdicts to reach")
    parser.add_argument("--json", action="store_true", help="print every debate's row too")
    args = parser.parse_args(argv)
    if not args.fake and not args.base_url:
        parser.error("give --base-url (and --model), or --fake")
    server = None
    if args.fake:
        from tests.fakellm import FakeLLMServer

        server = FakeLLMServer()
        server.grammar, server.refuse_json_schema = True, args.refuse_json_schema
        server.start()
        base_url = server.openai_url
    else:
        base_url = args.base_url.rstrip("/")
    try:
        report = asyncio.run(run(args, base_url))
    finally:
        if server is not None:
            server.stop()
    if not args.json:
        report.pop("results")
    print(json.dumps(report, indent=2))
    return 0 if report["share_parsed"] >= args.target else 1


if __name__ == "__main__":
    raise SystemExit(main())
