"""`python -m webapp debate` as a real subprocess against any OpenAI-compatible server (the fake one).

The child gets a clean environment: no `PYTEST_CURRENT_TEST`, no provider keys, its database in a
temporary directory, and a working directory without `.env`. Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakellm import FakeLLMServer
from tests.provider_helpers import verdict_json
from webapp.models import DEFAULT_CRITERIA
from webapp.providers.compatible import PRESETS

ROOT = Path(__file__).resolve().parents[2]
VERDICT_JSON = verdict_json("A", {"A": 74, "B": 61}, DEFAULT_CRITERIA, "Debater A engaged with every objection.")
KEY_VARS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
            *(p.key_env for p in PRESETS.values() if p.key_env)]


def child_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in KEY_VARS and k != "PYTEST_CURRENT_TEST" and not k.startswith("ROSTRUM_")}
    env["ROSTRUM_DB"] = str(tmp_path / "cli.sqlite3")
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webapp", *args],
        cwd=tmp_path,
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )


def stored(tmp_path: Path) -> list[tuple[str, float, int]]:
    db = tmp_path / "cli.sqlite3"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT status, cost_usd, turn_count FROM debates").fetchall()


@pytest.fixture(params=[True, False], ids=["usage-in-stream", "no-usage-like-lm-studio"])
def server(request: pytest.FixtureRequest) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(json_reply=VERDICT_JSON, usage_in_stream=request.param) as fake:
        yield fake


def test_cli_debates_against_any_compatible_server(server: FakeLLMServer, tmp_path: Path) -> None:
    url = server.openai_url
    result = run_cli(
        tmp_path, "debate", "Libraries should lend tools, not only books",
        "--format", "oxford", "--rounds", "1",
        "--participant", f"name=Ada,provider=compatible,base_url={url},model=llama3.2,position=pro",
        "--participant", f"name=Brook,provider=compatible,base_url={url},model=qwen2.5,position=con",
        "--judge", f"provider=compatible,base_url={url},model=mistral-nemo",
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr[-2000:] + out[-2000:]
    # The debate streamed, the judge ruled, the money was accounted for.
    assert "=== Opening statements ===" in out and "=== Rebuttal — Round 1 of 1 ===" in out
    assert "Ada (pro, compatible:llama3.2):" in out and "Brook (con, compatible:qwen2.5):" in out
    assert "=== Verdict ===" in out and "Winner: " in out
    assert "Ada engaged" in out or "Brook engaged" in out  # "Debater A" is shown by name
    cost_table = out[out.index("=== Cost ==="):]
    for model, calls in (("compatible:llama3.2", 2), ("compatible:qwen2.5", 2), ("compatible:mistral-nemo", 1)):
        [row] = [line for line in cost_table.splitlines() if line.startswith(model)]
        assert row.split()[1] == str(calls) and row.split()[-1] == "0.0000"  # a local server costs $0
    assert "total" in cost_table and "0.0000" in cost_table.split("total", 1)[1].splitlines()[0]
    assert "unpriced" not in cost_table and "simulated" not in cost_table
    estimated_note = "some token counts are estimated" in cost_table
    assert estimated_note is (not server.usage_in_stream)
    assert out.rstrip().endswith("completed (all rounds completed)")
    # Every call went to the compatible server, with compatible parameters.
    requests = server.model_requests
    assert len(requests) == 5 and {r.path for r in requests} == {"/v1/chat/completions"}
    assert sorted(r.model for r in requests) == ["llama3.2", "llama3.2", "mistral-nemo", "qwen2.5", "qwen2.5"]
    assert all("max_tokens" in r.body and "max_completion_tokens" not in r.body for r in requests)
    assert stored(tmp_path) == [("completed", 0.0, 4)]


def test_cli_refuses_a_provider_without_its_key(tmp_path: Path) -> None:
    with FakeLLMServer() as fake:
        url = fake.openai_url
        result = run_cli(
            tmp_path, "debate", "Libraries should lend tools",
            "--participant", "name=Ada,provider=openai,model=gpt-4o-mini,position=pro",
            "--participant", f"name=Brook,provider=compatible,base_url={url},model=qwen2.5,position=con",
            "--judge", f"provider=compatible,base_url={url},model=qwen2.5",
        )
        assert fake.model_requests == []
    assert result.returncode == 2, result.stdout + result.stderr
    assert "OPENAI_API_KEY" in result.stderr and "participants[0].provider" in result.stderr
    assert result.stdout == ""
    assert stored(tmp_path) == []  # nothing stored
