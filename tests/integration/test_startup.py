"""What `python main.py` does before its first page: it does not import the vendor SDKs (over a second
of start-up for a demo-only app) nor httpx/httpx2 nor markdown2 nor the HTTP API's routes, and it checks
the database's integrity once, not twice (main.py's check before serving, then the app's own open of the
same file). A fresh interpreter each time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import asyncio, json, os, runpy, sqlite3, sys

from webapp.store import repository

checks = []
real_connect = repository._connect

def counting_connect(path):
    conn = real_connect(path)
    conn.set_trace_callback(lambda sql: checks.append(sql) if "quick_check" in sql else None)
    return conn

repository._connect = counting_connect
main = runpy.run_path(sys.argv[1], run_name="startup_probe")  # imports and page set-up, as `python main.py`
main["_preflight"]()  # what `python main.py` does before serving

from nicegui import core
from webapp.ui import runtime

async def app_start():  # the app's own start-up (webapp.ui.runtime): the engine, bus, hub, webhooks …
    core.loop = asyncio.get_running_loop()  # (what NiceGUI sets when it serves)
    rt = runtime.current()
    await rt.start()
    await rt.stop()

asyncio.run(app_start())
print(json.dumps({"sdks": sorted(m for m in ("openai", "anthropic") if m in sys.modules),
                  "http_clients": sorted(m for m in ("httpx", "httpx2") if m in sys.modules),
                  "markdown": sorted(m for m in ("markdown2", "pygments") if m in sys.modules),
                  "api": sorted(m for m in ("webapp.api.routes", "webapp.api.events") if m in sys.modules),
                  "checks": len(checks)}))
"""


def _probe(workdir: Path, db: Path) -> dict[str, object]:
    env = child_env(("NICEGUI_", "ROSTRUM_"), ROSTRUM_DB=str(db))
    result = subprocess.run([sys.executable, "-c", PROBE, str(ROOT / "main.py")], cwd=workdir, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_start_up_imports_no_sdk_and_checks_the_database_once(tmp_path: Path) -> None:
    db = tmp_path / "data" / "rostrum.sqlite3"
    first = _probe(tmp_path, db)  # a new database: nothing to check yet
    # nor the HTTP clients only "Test connection" and the server check use (a quarter second of imports)
    # and not Markdown (NiceGUI's markdown element brings markdown2 and pygments; only a verdict uses it),
    # nor the HTTP API's routes (built on the first /api/v1 request)
    assert first == {"sdks": [], "http_clients": [], "markdown": [], "api": [], "checks": 0}
    second = _probe(tmp_path, db)  # an existing one: checked before serving, not again by the app
    assert second == {"sdks": [], "http_clients": [], "markdown": [], "api": [], "checks": 1}
