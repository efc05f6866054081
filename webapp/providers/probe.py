"""Whether an OpenAI-compatible server answers right now: one `GET {base_url}/models`, short timeout.

Settings runs it on demand for the local presets (Ollama, vLLM, llama.cpp, LM Studio), from the server
(the browser could not reach `localhost` of the machine Rostrum runs on): a local server is never
assumed ready just because it needs no key. No key is sent: local servers take none, and the answer
only says whether something listens and which models it serves.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from webapp.models import utcnow

CHECK_TIMEOUT_S = 3.0


class ServerCheck(BaseModel):
    """The result of one check: whether the server answered, what it said, and when it was asked."""

    url: str
    answers: bool
    models: list[str] = []
    status: int | None = None
    problem: str = ""
    checked_at: datetime

    def describe(self) -> str:
        """One sentence for the page."""
        if not self.answers:
            return f"Does not answer at {self.url}: {self.problem}. Start the server, or check its address."
        if self.problem:
            said = f"HTTP {self.status}: " if self.status != 200 else ""
            return f"Answers at {self.url}, but its /models answer is not usable ({said}{self.problem})"
        count = len(self.models)
        shown = ", ".join(self.models[:5]) + (" …" if count > 5 else "")
        return (f"Answers at {self.url}: {count} model{'' if count == 1 else 's'}"
                + (f" ({shown})" if count else " (pull or load one before debating)"))


async def check_server(base_url: str, timeout: float = CHECK_TIMEOUT_S) -> ServerCheck:
    """Ask `base_url`/models once; never raises for a server that is down, slow or odd."""
    # Loaded on the first check, not at start-up: the settings page imports this module, and httpx2 is
    # most of Rostrum's own import time before the first page (bench/README.md, "Start-up").
    import httpx2

    url = base_url.rstrip("/")
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(timeout)) as client:
            response = await client.get(f"{url}/models")
    except httpx2.TimeoutException:
        return ServerCheck(url=url, answers=False, problem=f"no answer within {timeout:g} s", checked_at=utcnow())
    except (httpx2.HTTPError, OSError) as exc:
        reason = type(exc).__name__ if not str(exc) else f"{type(exc).__name__}: {exc}"
        return ServerCheck(url=url, answers=False, problem=f"connection failed ({reason})"[:300],
                           checked_at=utcnow())
    if response.status_code != 200:
        return ServerCheck(url=url, answers=True, status=response.status_code,
                           problem=response.text[:200].strip() or response.reason_phrase, checked_at=utcnow())
    try:
        data = response.json().get("data") or []
        models = [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]
    except (ValueError, AttributeError):
        return ServerCheck(url=url, answers=True, status=200, problem="the answer is not an OpenAI model list",
                           checked_at=utcnow())
    return ServerCheck(url=url, answers=True, status=200, models=models, checked_at=utcnow())
