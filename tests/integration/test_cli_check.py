"""`python -m webapp check URL` as a real subprocess against the fake server: whether the server answers,
and which structured-output mode it accepts (one tiny probe); a bad target is a usage error naming it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from tests.child_env import child_env
from tests.fakellm import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]


def run_check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "webapp", "check", *args], cwd=tmp_path,
                          env=child_env(PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=60)


def test_check_reports_the_structured_output_mode_of_a_llama_cpp_python_server(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.llama_cpp_python = True
    done = run_check(tmp_path, fake_llm.openai_url)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == f"{fake_llm.openai_url}: Answers at {fake_llm.openai_url}: 1 model (fake-model)"
    assert second.strip().startswith("Structured output: json_object with the schema attached (json_schema refused)")
    assert "kept to its schema" in second
    kinds = [r.body["response_format"]["type"] for r in fake_llm.model_requests]
    assert kinds == ["json_schema", "json_object"]

    fake_llm.llama_cpp_python, fake_llm.grammar = False, True
    done = run_check(tmp_path, fake_llm.openai_url, "--model", "other", "--json")
    (report,) = json.loads(done.stdout)
    assert report["structured"]["mode"] == "json_schema" and report["structured"]["model"] == "other"
    assert report["server"]["models"] == ["fake-model"]


def test_check_fails_for_a_server_that_does_not_answer_and_names_a_bad_target(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    done = run_check(tmp_path, url)
    assert done.returncode == 1 and f"Does not answer at {url}" in done.stdout
    done = run_check(tmp_path, "localhost:8000")
    assert done.returncode == 2
    assert "check: 'localhost:8000' is neither a URL (http://…) nor a preset" in done.stderr
