"""Which models a provider offers, for the new-debate form's model picker: the models `genai-prices`
knows for a provider, with their input and output prices, and the models an OpenAI-compatible server
says it serves (`GET <base URL>/models`, asked from the server side with a short timeout).

Nothing here is needed to run a debate: the picker only suggests, any model name may still be typed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from webapp.providers.endpoints import EndpointPolicy, configured_policy
from webapp.providers.presets import get_preset
from webapp.providers.pricing import HOSTED_PRESET_PROVIDER
from webapp.wording import counted

PROBE_TIMEOUT = 3.0  # seconds: a local server that answers at all answers at once
MAX_SERVER_MODELS = 200
MAX_MODEL_NAME = 200  # what a participant's model field takes
# Why a server did not answer, in words (by httpx's exception class).
REASONS = {"ConnectError": "nothing listens there, or the host cannot be reached",
           "RemoteProtocolError": "something answered, but not in HTTP",
           "ReadError": "the connection broke", "UnsupportedProtocol": "not an http:// or https:// address"}


class PricedModel(BaseModel):
    """A model `genai-prices` knows, with its USD prices per million tokens."""

    id: str
    input_per_mtok: float
    output_per_mtok: float

    @property
    def label(self) -> str:
        return f"{self.id} — {_money(self.input_per_mtok)} in / {_money(self.output_per_mtok)} out per M tokens"


def _money(value: float) -> str:
    """$2.50, $0.15, $0.075: cents always shown, smaller fractions when there are any."""
    return f"${value:.2f}" if round(value, 2) == value else f"${value:g}"


class ServerAnswer(BaseModel):
    """What a compatible server said to `GET /models`: whether it answered, and the models it lists."""

    url: str
    answers: bool
    models: list[str] = []
    message: str


def genai_provider(provider: str, preset: str | None = None) -> str | None:
    """The `genai-prices` provider id of a form's provider (and compatible preset), if it has one."""
    if provider in ("openai", "anthropic"):
        return provider
    if provider == "compatible":
        return HOSTED_PRESET_PROVIDER.get((preset or "").strip().lower())
    return None


def _per_mtok(value: Any) -> float | None:
    """A price field of genai-prices: a number, or tiers (the base price then), or nothing."""
    if isinstance(value, Decimal | int | float):
        return float(value)
    base = getattr(value, "base", None)
    return float(base) if isinstance(base, Decimal | int | float) else None


@lru_cache(maxsize=16)
def priced_models(provider_id: str) -> tuple[PricedModel, ...]:
    """The current (not deprecated) text models of a `genai-prices` provider that have both an input
    and an output price, by id. Read from the bundled data once per provider."""
    from genai_prices import data_snapshot  # late: its tables are large, loaded when a picker first asks

    provider = next((p for p in data_snapshot.get_snapshot().providers if p.id == provider_id), None)
    if provider is None:
        return ()
    now = datetime.now(tz=UTC)
    found: dict[str, PricedModel] = {}
    for model in provider.models:
        if model.deprecated:
            continue
        prices = model.get_prices(now)
        cost_in = _per_mtok(getattr(prices, "input_mtok", None))
        cost_out = _per_mtok(getattr(prices, "output_mtok", None))
        if cost_in is None or cost_out is None:
            continue  # audio, image or embedding models: not something that debates
        found.setdefault(model.id, PricedModel(id=model.id, input_per_mtok=cost_in, output_per_mtok=cost_out))
    return tuple(sorted(found.values(), key=lambda m: m.id))


def server_url(preset: str | None, base_url: str | None) -> str:
    """The base URL a compatible row points at: its own, else its preset's default."""
    chosen = (base_url or "").strip()
    if not chosen:
        known = get_preset(preset)
        chosen = known.default_url if known else ""
    return chosen.rstrip("/")


async def list_server_models(base_url: str, api_key: str | None = None, timeout: float = PROBE_TIMEOUT,
                             policy: EndpointPolicy | None = None) -> ServerAnswer:
    """Ask an OpenAI-compatible server at `base_url` (e.g. http://localhost:11434/v1) which models it
    serves, if `policy` lets this server ask that address (the same guard as a debate's calls: registered
    endpoints, free URLs, no metadata or private addresses where they are not allowed). `api_key`: sent
    only when the caller checked it may go there. Never raises: a server that does not answer, answers
    something else, or may not be asked, is reported."""
    url = base_url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        return ServerAnswer(url=url, answers=False, message=f"{url or 'The base URL'} is not an http:// or "
                                                            "https:// address")
    route, refused = (policy or configured_policy()).url_rule(url)
    if route is None:
        return ServerAnswer(url=url, answers=False, message=f"Not asked: {refused}")
    # late: loaded on the first "Test connection", not at start-up: the form page imports this module
    # (bench/README.md, "Start-up").
    import httpx2

    from webapp.providers.netguard import BlockedAddress, guarded_client  # late: httpx2 and httpcore2, as above

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with guarded_client(url, route.allow_private, timeout=httpx2.Timeout(timeout)) as client:
            response = await client.get(f"{url}/models", headers=headers)
    except BlockedAddress as exc:
        return ServerAnswer(url=url, answers=False, message=f"Not asked: {exc}")
    except httpx2.TimeoutException:
        return ServerAnswer(url=url, answers=False, message=f"{url} does not answer (no reply within {timeout:g} s)")
    except httpx2.HTTPError as exc:
        reason = REASONS.get(type(exc).__name__, type(exc).__name__)
        return ServerAnswer(url=url, answers=False, message=f"{url} does not answer ({reason})")
    if response.status_code != 200:
        return ServerAnswer(url=url, answers=True, message=f"{url} answers, but {url}/models says HTTP "
                                                           f"{response.status_code}")
    try:
        data = response.json().get("data") or []
        models = sorted({str(item["id"]) for item in data
                         if isinstance(item, dict) and item.get("id") and len(str(item["id"])) <= MAX_MODEL_NAME})
    except (ValueError, AttributeError, TypeError):
        return ServerAnswer(url=url, answers=True, message=f"{url} answers, but not with a list of models")
    models = models[:MAX_SERVER_MODELS]
    count = counted(len(models), "model")
    return ServerAnswer(url=url, answers=True, models=models, message=f"{url} answers: {count}")
