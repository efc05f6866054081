"""The CLI against a local one-request-at-a-time server (the fake one, like llama-cpp-python), as a
real subprocess: the parallel preparation queues (limit 1 by default for a local server), a turn cut
at its token limit says so in the live output and in `show --json`, and so does estimated usage."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakellm import FakeLLMServer, Script
from tests.integration.test_cli_compatible import VERDICT_JSON, run_cli


def test_cli_on_a_one_at_a_time_server_marks_cut_turns_and_estimated_usage(tmp_path: Path) -> None:
    with FakeLLMServer(json_reply=VERDICT_JSON, usage_in_stream=False, chunk_delay=0.005,
                       one_at_a_time=True) as server:
        server.enqueue(Script(), Script(), Script(finish_reason="length"))  # two preparations, then the opening
        url = server.openai_url
        result = run_cli(
            tmp_path, "debate", "Libraries should lend tools, not only books", "--format", "classic",
            "--rounds", "1", "--questions", "1",
            "--participant", f"name=Ada,provider=compatible,base_url={url},model=llama3.2,position=pro,max_tokens=200",
            "--participant", f"name=Brook,provider=compatible,base_url={url},model=qwen2.5,position=con",
            "--judge", f"provider=compatible,base_url={url},model=mistral-nemo",
        )
        assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
        assert server.interrupted == 0 and server.most_at_once == 1  # the preparations queued
    out = result.stdout
    assert "[cut at the 200-token limit]" in out
    assert "some token counts are estimated" in out
    listed = run_cli(tmp_path, "list", "--json")
    [row] = json.loads(listed.stdout)
    shown = run_cli(tmp_path, "show", row["id"], "--json")
    data = json.loads(shown.stdout)
    opening = [t for t in data["turns"] if t["phase"] == "opening"]
    assert opening[0]["notes"] == ["cut at the 200-token limit"]
    assert all(t["usage"]["estimated"] is True for t in data["turns"])
    assert data["cost"]["estimated_usage"] is True
    markdown = run_cli(tmp_path, "show", row["id"], "--markdown").stdout
    assert "cut at the 200-token limit" in markdown and "token counts estimated" in markdown
