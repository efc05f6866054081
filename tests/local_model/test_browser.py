"""The web app with a real local model, in a real Chromium (`python main.py` on a loopback port, no sign-in).

Settings' "Check local servers" finds the server at the llama.cpp preset's address (and its structured-output
mode); on the new-debate form
a compatible participant's "Test connection" lists the served models; the debate streams token by token;
Pause closes the upstream request (the model server's log shows the client went away, and no token
arrives after it); Resume redoes the interrupted turn; the verdict card names a winner.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.e2e.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, DEBATE_URL, launch_server
from tests.local_model.conftest import LocalModel
from webapp.engine.engine import Engine
from webapp.models import DebateConfig, JudgeConfig, JudgeSpec, Participant
from webapp.providers.presets import PRESETS
from webapp.settings import Settings

pytestmark = [pytest.mark.local_model, pytest.mark.e2e]

TOPIC = "Should cities ban cars from their centres?"
LONG = 900_000  # ms: a turn, and the verdict, on a 270M model on two busy cores (2–8 tokens/s measured)
DISCONNECTED = "Disconnected from client"  # what llama-cpp-python prints when a streaming client goes away
REQUEST = "POST /v1/chat/completions"  # uvicorn's access log line for each chat request


def _config(lm: LocalModel) -> DebateConfig:
    def debater(name: str, position: str) -> Participant:
        # Long enough turns to catch one mid-stream and pause it.
        return Participant(name=name, position=position, provider="compatible", base_url=lm.url, model=lm.model,
                           max_tokens=96, temperature=0.0)

    return DebateConfig(topic=TOPIC, format="oxford", rounds=1,
                        participants=[debater("Ada", "pro"), debater("Bo", "con")],
                        judge=JudgeConfig(judges=[JudgeSpec(provider="compatible", base_url=lm.url, model=lm.model,
                                                            temperature=0.0)]),
                        clarification=False)


async def _create(db: Path, config: DebateConfig) -> str:
    """A debate stored (not started) in the app's database: the form opens it as a clone (`/new?from=ID`)."""
    engine = await Engine.open(db, settings=Settings(db=db))
    try:
        return await engine.create(config)
    finally:
        await engine.close()


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, local_model: LocalModel) -> Iterator[tuple[str, str]]:
    workdir = tmp_path_factory.mktemp("local-app")
    db = workdir / "app.sqlite3"
    source = asyncio.run(_create(db, _config(local_model)))
    with launch_server(workdir, db=db, log_name="local-model-server.log") as base:
        yield base, source


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        executable = CHROMIUM if Path(CHROMIUM).exists() else None
        chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _log_count(lm: LocalModel, needle: str) -> int:
    assert lm.log is not None, "ROSTRUM_LOCAL_MODEL_LOG names the model server's log"
    return lm.log.read_text(errors="replace").count(needle)


def _wait_log(lm: LocalModel, needle: str, more_than: int, timeout: float = 60.0) -> None:
    """Until the model server's log holds more than `more_than` lines with `needle` (a file has no event)."""
    deadline = time.monotonic() + timeout
    while _log_count(lm, needle) <= more_than:
        if time.monotonic() > deadline:
            tail = lm.log.read_text(errors="replace")[-2000:] if lm.log else ""
            raise AssertionError(f"the model server never logged {needle!r} (only {more_than} times); tail:\n{tail}")
        time.sleep(0.1)


def _texts(page: Page) -> list[str]:
    return page.locator(".rostrum-turn-text").all_inner_texts()


def test_settings_check_local_servers_finds_it(app: tuple[str, str], browser: Browser,
                                               local_model: LocalModel) -> None:
    preset = urlsplit(PRESETS["llamacpp"].default_url)
    if urlsplit(local_model.url).port != preset.port:
        pytest.skip(f"the model server is not at the llama.cpp preset's port {preset.port}, which Settings checks")
    base, _ = app
    page = browser.new_page()
    page.goto(base + "/settings")
    page.get_by_role("button", name="Check all").click()
    found = page.get_by_text(re.compile(r"^Answers at http://localhost:8080/v1"))
    expect(found).to_be_visible(timeout=30_000)
    expect(found).to_contain_text(local_model.model)
    # …and the probe finds the structured-output mode that makes a small model's verdicts parse.
    expect(page.get_by_text(re.compile(r"^Structured output: json_object with the schema attached"))) \
        .to_be_visible(timeout=60_000)
    page.close()


def test_a_debate_on_the_local_model_streams_pauses_resumes_and_ends_with_a_winner(
        app: tuple[str, str], browser: Browser, local_model: LocalModel) -> None:
    base, source = app
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{base}/new?from={source}")
        expect(page.get_by_label("What should they debate? *")).to_have_value(TOPIC)

        # Test connection on the first (compatible) participant lists what the server serves.
        page.get_by_role("button", name="Test connection").first.click()
        expect(page.get_by_text(re.compile(r"answers: 2 models"))).to_be_visible(timeout=30_000)
        expect(page.get_by_role("button", name=f"Use the model {local_model.model}", exact=True).first).to_be_visible()

        page.get_by_role("button", name="Start debate").click()
        page.wait_for_url(DEBATE_URL)

        # Token by token: one live turn's text, caught early, grows in place over many updates.
        page.wait_for_function("""() => {
            const s = [...document.querySelectorAll('.rostrum-turn-live .rostrum-turn-text')]
                .find(s => s.textContent.length > 0 && s.textContent.length < 60);
            if (!s) return false;
            window.__stream = s; window.__updates = 0; let last = s.textContent.length;
            new MutationObserver(() => {
                if (s.textContent.length > last) { window.__updates += 1; last = s.textContent.length; }
            }).observe(s, {subtree: true, childList: true, characterData: true});
            return true;
        }""", timeout=LONG, polling=10)
        page.wait_for_function("() => window.__stream.isConnected && window.__updates >= 5", timeout=LONG)

        # Pause mid-turn: the upstream request is closed, and nothing arrives afterwards.
        disconnects, requests = _log_count(local_model, DISCONNECTED), _log_count(local_model, REQUEST)
        page.get_by_role("button", name="Pause").click()
        expect(page.locator(".q-badge", has_text="paused")).to_be_visible(timeout=30_000)
        _wait_log(local_model, DISCONNECTED, disconnects)  # llama-cpp-python saw the client go away
        expect(page.locator(".rostrum-turn-live")).to_have_count(0)
        shown = _texts(page)
        finals = page.locator(".rostrum-turn-final").count()
        page.wait_for_timeout(1500)  # nothing may arrive while paused: observe a quiet interval
        assert _texts(page) == shown and page.locator(".rostrum-turn-live").count() == 0
        assert _log_count(local_model, REQUEST) == requests  # and nothing was asked of the model meanwhile

        # Resume redoes the interrupted turn: a new request, a live turn again, then the next final turn.
        page.get_by_role("button", name="Resume").click()
        expect(page.locator(".q-badge", has_text="running")).to_be_visible(timeout=30_000)
        _wait_log(local_model, REQUEST, requests)
        expect(page.locator(".rostrum-turn-final")).to_have_count(finals + 1, timeout=LONG)

        # The verdict card, from the same model as judge, gives its decision: a winner or a tie (the
        # model's call: Gemma 3 270M called a tie in the run of 2026-11-27 07:21), never "unavailable".
        expect(page.get_by_text(re.compile(r"^(Winner: .+|Tie)$")).first).to_be_visible(timeout=LONG)
        expect(page.get_by_text(re.compile("Verdict unavailable"))).to_have_count(0)
        expect(page.locator(".q-badge", has_text="completed")).to_be_visible()
        assert page.locator(".rostrum-turn-final").count() == 4  # oxford, one round: every turn, none lost
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "local-model-debate.png"), full_page=True)
        context.close()
