"""Demo-provider pacing: does a turn take `tokens ÷ rate`, even when the event loop stalls?

    .venv/bin/python bench/pacing.py [--tokens 1000] [--rate 200] [--runs 3] [--stall-ms 0,20] [--json]

Streams one demo turn of `--tokens` words (the demo model's own prose, repeated) at `--rate` tokens/s
and reports wall time ÷ (tokens ÷ rate); the goal is ≤ 1.01 on a quiet machine. With `--stall-ms N`
a second task blocks the loop for N ms every 100 ms (a busy server), which a delay per word would add
to the turn (ratio ≈ 1 + N/100) and a deadline schedule catches up (ratio stays ≈ 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webapp.providers.base import Message, ProviderRequest, TextDelta
from webapp.providers.demo import DemoProvider


class LongDemo(DemoProvider):
    """The demo model's prose, repeated until it is `tokens` words long."""

    def __init__(self, tokens: int, speed: float) -> None:
        super().__init__("demo", speed=speed, failures={})
        self.tokens = tokens

    def compose(self, request: ProviderRequest) -> str:
        words: list[str] = []
        seed = 0
        while len(words) < self.tokens:
            seed += 1
            ctx = {**request.context, "seed": seed}
            words += super().compose(request.model_copy(update={"context": ctx})).split()
        return " ".join(words[: self.tokens])


def a_request(tokens: int) -> ProviderRequest:
    context = {"topic": "Should cities ban private cars from their centres?", "position": "pro", "act": "speak",
               "phase": "opening", "phase_title": "Opening", "turn_key": "opening/r1/pro/1", "word_limit": 200}
    return ProviderRequest(model="demo", messages=[Message(role="user", content="…")], max_tokens=tokens * 10,
                           context=context)


async def stall(every_s: float, block_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        time.sleep(block_s)  # blocks the whole loop, like a slow synchronous call in a busy server


async def one_run(tokens: int, rate: float, stall_ms: float) -> dict[str, float]:
    provider = LongDemo(tokens, rate)
    staller = asyncio.create_task(stall(0.1, stall_ms / 1000)) if stall_ms else None
    count = 0
    start = time.perf_counter()
    async for item in provider.stream(a_request(tokens)):
        if isinstance(item, TextDelta):
            count += 1
    wall = time.perf_counter() - start
    if staller is not None:
        staller.cancel()
    assert count == tokens, (count, tokens)
    return {"wall_s": wall, "ratio": wall / (tokens / rate)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stall-ms", default="0,20", help="comma-separated loop stalls per 100 ms to try")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])  # before the runs
    results = []
    for stall_ms in [float(s) for s in args.stall_ms.split(",") if s.strip()]:
        runs = [asyncio.run(one_run(args.tokens, args.rate, stall_ms)) for _ in range(args.runs)]
        ratios = [r["ratio"] for r in runs]
        results.append({"tokens": args.tokens, "rate": args.rate, "stall_ms_per_100ms": stall_ms,
                        "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                        "wall_s_median": statistics.median(r["wall_s"] for r in runs)})
    if args.json:
        print(json.dumps({"load": load, "results": results}, indent=2))
    else:
        print(f"load average {load}; {args.tokens} tokens at {args.rate:g} tok/s, {args.runs} runs each")
        for r in results:
            print(f"stall {r['stall_ms_per_100ms']:>4g} ms/100 ms  wall {r['wall_s_median']:.3f} s  "
                  f"ratio median {r['ratio_median']:.4f} (min {r['ratio_min']:.4f}, max {r['ratio_max']:.4f})"
                  f"  target ≤ 1.01 {'ok' if r['ratio_median'] <= 1.01 else 'MISSED'}")
    return 0 if all(r["ratio_median"] <= 1.01 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
