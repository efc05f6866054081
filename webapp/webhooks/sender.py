"""The background sender: takes due deliveries from the store and POSTs them, with retries.

Runs in the web app's process and in every debate worker (and, for the debates they run, the CLI's
commands). Any number of senders may share one store: each takes deliveries with a lease
(`WebhookStore.claim`), so each delivery is sent by one of them. A sender looks for due deliveries when
this process queued one (`wake`), when one of its sends finished, and otherwise every `poll` seconds.

An attempt that gets a 2xx answer delivers; anything else (another status, a timeout, a refused
connection, an address the guard refuses) is retried after `backoff * 2**(attempt-1)` seconds (at most
`backoff_cap`, with ±20 % jitter) until the delivery is `RETRY_WINDOW` (24 h) old, then it is marked
failed. Every attempt's status code and error are recorded for the admins' delivery log, which keeps
finished deliveries for `KEEP` (30 days).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import socket
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from webapp.store.protocol import EventStore
from webapp.store.webhooks import Claimed, WebhookStore
from webapp.webhooks.events import format_slack
from webapp.webhooks.guard import WebhookRefused, resolve_target, shown_url
from webapp.webhooks.signing import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    signature,
)

if TYPE_CHECKING:  # httpx is loaded on first use, not at start-up (bench/README.md, "Start-up")
    import httpx

log = logging.getLogger(__name__)

RETRY_WINDOW = 24 * 3600.0  # seconds a delivery is retried for
BACKOFF = 10.0  # seconds before the first retry; doubled each time
BACKOFF_CAP = 3600.0  # the longest wait between two attempts
POLL = 2.0  # seconds between looks at the queue when nothing wakes the sender
KEEP = 30 * 24 * 3600.0  # seconds a finished delivery stays in the log
PRUNE_EVERY = 3600.0  # seconds between two clean-ups of the log by one sender
LEASE = 60.0  # how long a claimed delivery stays this sender's (well over a request's timeout)
TIMEOUT = 10.0  # seconds one request may take
CONCURRENCY = 4  # requests in flight at once per sender
RESPONSE_KEPT = 300  # characters of a failed answer's body kept as its error
USER_AGENT = "Rostrum-Webhooks/1"
MAX_ADDRESSES = 3  # addresses of one endpoint tried per attempt (each may take `timeout`: well within `LEASE`)


def body_of(claimed: Claimed) -> bytes:
    """The bytes sent (and signed): the payload as JSON, or a Slack message for a Slack endpoint."""
    payload = claimed.delivery.payload
    document = format_slack(payload) if claimed.format == "slack" else payload
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


class WebhookSender:
    """Sends the deliveries queued in `store`."""

    def __init__(self, store: EventStore, *, allow_private: bool = False, owner: str | None = None,
                 poll: float = POLL, concurrency: int = CONCURRENCY, timeout: float = TIMEOUT, lease: float = LEASE,
                 backoff: float = BACKOFF, backoff_cap: float = BACKOFF_CAP,
                 clock: Callable[[], float] = time.time, rng: random.Random | None = None) -> None:
        self.webhooks = WebhookStore(store)
        self.allow_private = allow_private
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.poll = poll
        self.concurrency = concurrency
        self.timeout = timeout
        self.lease = lease
        self.backoff = backoff
        self.backoff_cap = backoff_cap
        self.clock = clock
        self.rng = rng or random.Random()
        self.sent = 0  # attempts made by this sender (delivered or not)
        self._client: httpx.AsyncClient | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        # One pump at a time: between claiming rows and adding their sends to `_inflight` a pump awaits
        # the store, and a second pump (a CLI's `drain` beside the loop) would find nothing due and
        # nothing in flight, call the queue idle and let `close` cancel the send just claimed.
        self._pumping = asyncio.Lock()

    # --- life cycle --------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        import httpx  # loaded with the first delivery, not at start-up

        if self._client is None:
            # No proxies from the environment (the address was checked; a proxy would go elsewhere) and no
            # redirects (a redirect could point anywhere, a private address included).
            self._client = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False, trust_env=False,
                                             headers={"User-Agent": USER_AGENT})
        return self._client

    async def start(self) -> None:
        """Send in the background until `close`. The HTTP client is made with the first delivery: httpx
        (and the CLI it loads, rich and pygments) took a quarter second before a web process served its
        first page, for webhooks that most instances never send."""
        self._task = asyncio.create_task(self._loop(), name="webhook-sender")

    async def run_once(self) -> int:
        """Claim what is due now, send it and record the outcomes; how many were sent (without `start`)."""
        claimed = await self.pump()
        await self.settled()
        return claimed

    async def close(self) -> None:
        """Stop: sends in flight are cancelled (their leases lapse and another sender sends them later)."""
        tasks = [t for t in (self._task, *self._inflight) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = None
        self._inflight.clear()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def wake(self) -> None:
        """Look at the queue now (something was just queued in this process)."""
        self._wake.set()

    async def settled(self) -> None:
        """Until the sends in flight now have finished and been recorded."""
        await asyncio.gather(*list(self._inflight), return_exceptions=True)

    async def drain(self, timeout: float) -> None:
        """Until nothing is due and nothing is in flight, or `timeout` seconds (a CLI command's last
        moment: what it queued gets its first attempt)."""

        async def until_idle() -> None:
            while True:
                await self.settled()
                if await self.run_once() == 0 and not self._inflight:
                    return

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(until_idle(), timeout)

    # --- the loop ----------------------------------------------------------------------------

    async def _loop(self) -> None:
        pruned = 0.0
        while True:
            self._wake.clear()
            try:
                if time.monotonic() - pruned > PRUNE_EVERY or not pruned:
                    pruned = time.monotonic()
                    await self.webhooks.prune(self.clock() - KEEP)
                claimed = await self.pump()
            except asyncio.CancelledError:
                raise
            except Exception:  # a busy or failing store: look again later
                log.exception("webhooks: reading the delivery queue failed")
                claimed = 0
            if claimed:
                continue  # more may be due
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll)

    async def pump(self) -> int:
        """Claim as many due deliveries as there are free slots and start sending them; how many."""
        async with self._pumping:
            return await self._pump()

    async def _pump(self) -> int:
        free = self.concurrency - len(self._inflight)
        if free <= 0:
            return 0
        now = self.clock()
        ids = await self.webhooks.due(now, free)
        if not ids:
            return 0
        claimed = await self.webhooks.claim(ids, self.owner, now, self.lease)
        for item in claimed:
            task = asyncio.create_task(self._deliver(item), name=f"webhook-{item.delivery.id}")
            self._inflight.add(task)
            task.add_done_callback(self._done)
        return len(claimed)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._wake.set()  # a slot is free

    async def _deliver(self, claimed: Claimed) -> None:
        try:
            status, error = await self.attempt(claimed)
        except Exception as exc:  # never an attempt without a record (it would be retried past its window)
            log.exception("webhooks: sending delivery %s failed", claimed.delivery.id)
            status, error = None, f"{type(exc).__name__}: {exc}"
        self.sent += 1
        now = self.clock()
        retry_at = None
        if error is not None:
            attempts = claimed.delivery.attempts  # the claim counted this attempt already
            wait = min(self.backoff_cap, self.backoff * 2 ** (attempts - 1)) * self.rng.uniform(0.8, 1.2)
            if now + wait <= claimed.delivery.give_up_at:
                retry_at = now + wait
            log.warning("webhook %s to %s: attempt %d failed (%s)%s", claimed.delivery.event, shown_url(claimed.url),
                        attempts, error, "" if retry_at else "; giving up")
        try:
            await self.webhooks.finish(claimed.delivery.id, self.owner, now=now, status_code=status, error=error,
                                       retry_at=retry_at)
        except Exception:  # the lease lapses and the delivery is sent again
            log.exception("webhooks: recording delivery %s failed", claimed.delivery.id)

    async def attempt(self, claimed: Claimed) -> tuple[int | None, str | None]:
        """POST one delivery: (status code, None) when delivered, else (status code or None, the error)."""
        import httpx  # loaded with the first delivery, not at start-up

        delivery = claimed.delivery
        body = body_of(claimed)
        timestamp = str(int(self.clock()))
        try:
            target = await asyncio.wait_for(resolve_target(claimed.url, self.allow_private), self.timeout)
        except WebhookRefused as exc:
            return None, str(exc)
        except TimeoutError:
            return None, f"looking up the endpoint's address took more than {self.timeout:g} s"
        headers = {
            "Host": target.host_header,
            "Content-Type": "application/json",
            EVENT_HEADER: delivery.event,
            DELIVERY_HEADER: delivery.id,
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: signature(claimed.secret, timestamp, body),
        }
        error = "no address"
        for url in target.urls[:MAX_ADDRESSES]:
            try:
                return await self._post(url, body, headers, target.extensions)
            except httpx.ConnectError as exc:  # this address cannot be reached: try the next one
                error = f"ConnectError: {exc}" if str(exc) else "ConnectError"
            except httpx.HTTPError as exc:
                return None, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return None, error

    async def _post(self, url: httpx.URL, body: bytes, headers: dict[str, str],
                    extensions: dict[str, object]) -> tuple[int | None, str | None]:
        async with self._http().stream("POST", url, content=body, headers=headers, extensions=extensions) as response:
            if 200 <= response.status_code < 300:
                return response.status_code, None
            text = ""
            async for chunk in response.aiter_text():
                text += chunk
                if len(text) >= RESPONSE_KEPT:
                    break
            answer = " ".join(text.split())[:RESPONSE_KEPT]
            return response.status_code, f"HTTP {response.status_code}" + (f": {answer}" if answer else "")
