"""The HTTP API's event stream in scale-out: two web instances (`ROSTRUM_WORKERS=external`) and a debate
worker on one PostgreSQL and one Redis. A debate created through instance A's API, run by the worker,
is followed over SSE on instance B — its token deltas arrive through the bus — and, cut off in the
middle of a turn, the stream is resumed on instance A with `Last-Event-ID`: every committed event
arrives once, the cut turn continues from its character, and the text adds up to the stored turns.
Commands sent to either instance reach the worker, and the state machine's refusals come back as 409."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.integration.test_http_api import Transcript, read_events
from tests.integration.test_scale_out import Child, start_web, start_worker
from tests.redis_fixtures import RedisServer

pytestmark = pytest.mark.e2e
TIMEOUT = httpx.Timeout(10.0, read=60.0)


def follow(base: str, debate_id: str, transcript: Transcript, last_event_id: str | None = None,
           stop_after_chars: int | None = None) -> None:
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    with httpx.Client(base_url=base + "/api/v1", timeout=TIMEOUT) as client, \
            client.stream("GET", f"/debates/{debate_id}/events", headers=headers) as response:
        assert response.status_code == 200
        for m in read_events(response):
            transcript.take(m)
            if m.event == "end":
                return
            if stop_after_chars is not None and m.event == "delta" and \
                    len(transcript.streamed.get(m.data["key"], "")) > stop_after_chars:
                return


def mid_key(transcript: Transcript, chars: int) -> str:
    return next(key for key, text in transcript.streamed.items() if len(text) > chars)


async def test_the_event_stream_follows_a_worker_run_debate_on_any_instance(
    pg_dsn: str, own_redis: RedisServer, tmp_path: Path
) -> None:
    children: list[Child] = []
    try:
        base_a, base_b, _ = await asyncio.gather(
            start_web(children, "api-web-a", tmp_path / "a", pg_dsn, own_redis.url),
            start_web(children, "api-web-b", tmp_path / "b", pg_dsn, own_redis.url),
            start_worker(children, "api-worker", pg_dsn, own_redis.url))
        async with httpx.AsyncClient(base_url=base_a + "/api/v1", timeout=TIMEOUT) as a:
            # Four exchanges and a verdict: enough turns to cut one and resume (a classic debate's twelve
            # turns made this the suite's longest test, 53 s, and showed nothing more).
            created = await a.post("/debates", json={"topic": "Night buses pay for themselves",
                                                     "format": "round-limited", "rounds": 2,
                                                     "clarification": False})
            assert created.status_code == 201, created.text
            debate_id = created.json()["id"]
        first = Transcript()
        await asyncio.to_thread(follow, base_b, debate_id, first, None, 40)  # on B, until mid-turn
        assert not first.ended and "." in first.last_id
        cut = mid_key(first, 40)
        second = Transcript(streamed=dict(first.streamed))
        await asyncio.to_thread(follow, base_a, debate_id, second, first.last_id)  # resumed on A
        async with httpx.AsyncClient(base_url=base_b + "/api/v1", timeout=TIMEOUT) as b:
            document = (await b.get(f"/debates/{debate_id}")).json()
        stored = {t["key"]: t["text"] for t in document["turns"]}
        assert second.ended and document["status"] == "completed"
        seqs = first.seqs + second.seqs
        assert seqs == list(range(1, len(seqs) + 1))
        assert {**first.committed, **second.committed} == stored
        if cut in second.aborted:  # the attempt was cut off and redone meanwhile: it comes whole at commit
            assert second.committed[cut] == stored[cut]
        else:
            assert second.final_streams[cut] == stored[cut]
        streamed = {**first.final_streams, **second.final_streams}
        assert len(streamed) >= 3 and all(stored[key] == text for key, text in streamed.items())
        # Commands reach the worker running the debate, from either instance, refused the same way.
        async with httpx.AsyncClient(base_url=base_a + "/api/v1", timeout=TIMEOUT) as a, \
                httpx.AsyncClient(base_url=base_b + "/api/v1", timeout=TIMEOUT) as b:
            other = (await a.post("/debates", json={"topic": "Buses beat trams", "format": "classic"})).json()["id"]
            paused = await b.post(f"/debates/{other}/commands/pause")
            assert paused.status_code == 200 and paused.json()["status"] == "paused", paused.text
            again = await b.post(f"/debates/{other}/commands/pause")
            assert again.status_code == 409 and "paused" in again.json()["detail"]
            stopped = await a.post(f"/debates/{other}/commands/stop", json={"verdict": False})
            assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
    finally:
        for child in children:
            await child.stop()
