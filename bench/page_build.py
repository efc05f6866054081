"""A long debate's page: server build time and time until Chromium shows it.

    .venv/bin/python bench/page_build.py [--turns 160] [--runs 5] [--json]

Creates a finished demo debate of about `--turns` visible turns (round-limited, eight speakers, instant demo
speed) in a fresh database, starts `main.py` on it, then measures
- `server_build_ms`: the server's time to answer `GET /debate/{id}` (builds the page's elements and
  renders them into the HTML; measured with the app warmed up by a first request), and
- `visible_ms`: in headless Chromium, from navigation start until the last turn's text is rendered.
Goals (issue 10): server build < 150 ms, visible < 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402


async def make_debate(db: Path, turns: int) -> tuple[str, int]:
    from webapp.engine.engine import Engine
    from webapp.models import DebateConfig, Participant
    from webapp.settings import Settings

    engine = await Engine.open(db, settings=Settings(db=db, demo_speed=0))
    try:
        people = [Participant(id=f"p{i}", name=f"Speaker {i}", provider="demo", model="demo-instant",
                              position="for" if i % 2 == 0 else "against") for i in range(8)]
        rounds = max(1, min(20, turns // len(people)))  # round-limited: everyone speaks once per round
        config = DebateConfig(topic="Should a city run its own electricity company?", format="round-limited",
                              rounds=rounds, participants=people)
        session = await engine.start(config)
        await session.join()
        return session.id, sum(1 for t in session.state.turns if t.visible)
    finally:
        await engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=160)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite3"
        debate_id, visible = asyncio.run(make_debate(db, args.turns))
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST" and not k.startswith("NICEGUI_")}
        env.update(ROSTRUM_DB=str(db), ROSTRUM_PORT=str(port), ROSTRUM_HOST="127.0.0.1")
        server = subprocess.Popen([sys.executable, str(ROOT / "main.py")], cwd=tmp, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/debate/{debate_id}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(url, timeout=5).read()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit("the server did not start") from None
                    time.sleep(0.1)  # polling a port that is not open yet
            builds = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                body = urllib.request.urlopen(url, timeout=30).read()
                builds.append((time.perf_counter() - t0) * 1000)
            visible_ms = []
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists() else None,
                                            args=CHROMIUM_ARGS)
                for _ in range(args.runs):
                    page = browser.new_page(viewport={"width": 1440, "height": 900})
                    page.goto(url, wait_until="commit")
                    page.wait_for_function(
                        f"() => document.querySelectorAll('.rostrum-turn-final').length >= {visible} && "
                        "document.querySelector('.rostrum-turn-final:last-of-type .rostrum-turn-text')", timeout=30_000)
                    visible_ms.append(page.evaluate("() => performance.now()"))
                    page.close()
                browser.close()
        finally:
            server.terminate()
            server.wait(10)
    result = {"turns": visible, "html_kb": round(len(body) / 1024, 1),
              "server_build_ms_median": round(statistics.median(builds), 1),
              "server_build_ms_max": round(max(builds), 1),
              "visible_ms_median": round(statistics.median(visible_ms)), "visible_ms_max": round(max(visible_ms)),
              "load_average": os.getloadavg()}
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
