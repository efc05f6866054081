"""Helpers shared by the tests that run whole debates through the real SDKs against `tests.fakellm`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from tests.fakellm import RecordedRequest
from webapp.engine.engine import Engine
from webapp.providers.endpoints import Endpoint
from webapp.settings import Settings, get_settings
from webapp.store.endpoints import EndpointStore
from webapp.store.protocol import EventStore

ROUND = re.compile(r"\(round (\d+) of \d+\)")


def round_of(request: RecordedRequest) -> str:
    """The debate round a turn request was for, from its "(round N of M)" instruction."""
    match = ROUND.search(request.last_user_text)
    assert match, request.prompt_text[:300]
    return match.group(1)


def genai_cost(model: str, provider: str, input_tokens: int, output_tokens: int, cached: int = 0) -> float:
    """What genai-prices charges for one call (computed here independently of the app)."""
    usage = PriceUsage(input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=cached or None)
    return float(calc_price(usage, model, provider_id=provider).total_price)


def verdict_json(
    winner: str, scores: dict[str, int], criteria: Iterable[str], reasoning: str, confidence: float = 0.7
) -> str:
    """A judge's reply in the verdict schema; every criterion is scored like the whole."""
    return json.dumps(
        {
            "winner": winner,
            "scores": scores,
            "criteria": {c: {label: {"score": s, "note": "fine"} for label, s in scores.items()} for c in criteria},
            "reasoning": reasoning,
            "confidence": confidence,
        }
    )


def use_fake_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **keys: str) -> None:
    """Run in `tmp_path` (no stray `.env`), without the SDKs' base-URL variables, with these keys set."""
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):  # the SDKs would obey these
        monkeypatch.delenv(name, raising=False)
    for name, value in keys.items():
        monkeypatch.setenv(name, value)


def register_fake_llm(monkeypatch: pytest.MonkeyPatch, *urls: str, openai_key: str = "OPENAI_API_KEY",
                      anthropic_key: str = "ANTHROPIC_API_KEY") -> None:
    """Register fake LLM servers as an admin would (`ROSTRUM_ENDPOINTS`), so that the providers' keys may go
    to them: each server's `/v1` with `openai_key`, its root (the Anthropic SDK's base URL) with
    `anthropic_key`. Settings made after this call (and `get_settings()`) see them."""
    endpoints = fake_endpoints(*urls, openai_key=openai_key, anthropic_key=anthropic_key)
    monkeypatch.setenv("ROSTRUM_ENDPOINTS", json.dumps([e.model_dump(exclude={"source"}) for e in endpoints]))
    get_settings.cache_clear()


def fake_endpoints(*urls: str, openai_key: str = "OPENAI_API_KEY",
                   anthropic_key: str = "ANTHROPIC_API_KEY") -> list[Endpoint]:
    """Fake LLM servers as registered endpoints: each server's `/v1` with `openai_key`, its root (the
    Anthropic SDK's base URL) with `anthropic_key`."""
    found = []
    for url in urls:
        root = url.rstrip("/").removesuffix("/v1")
        port = root.rsplit(":", 1)[-1]
        found += [Endpoint(name=f"Fake OpenAI {port}", base_url=f"{root}/v1", key_env=openai_key),
                  Endpoint(name=f"Fake Anthropic {port}", base_url=root, key_env=anthropic_key)]
    return found


async def register_in_store(store: EventStore, *urls: str, **keys: str) -> None:
    """Register fake LLM servers as an admin does in Settings (in the store): an engine reads them before it
    creates or starts a debate, so the providers' keys may go to them."""
    for endpoint in fake_endpoints(*urls, **keys):
        await EndpointStore(store).add(endpoint, "admin")


async def open_engine(tmp_path: Path, settings: Settings | None = None, **kwargs: Any) -> Engine:
    """An engine on `tmp_path/db.sqlite3` with quick automatic-retry backoff (`kwargs`: `Engine`'s own)."""
    db = tmp_path / "db.sqlite3"
    return await Engine.open(db, settings=settings or Settings(db=db), backoff_base=0.01, **kwargs)
