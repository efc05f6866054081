"""`python main.py` with `ROSTRUM_REDIS_URL` and `NICEGUI_REDIS_URL`: the web app joins the live bus
(its dashboard subscription is on Redis) and NiceGUI keeps each visitor's storage in Redis, so another
instance behind the load balancer would find it."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import redis

from tests.integration.test_hosting_start import Lines, start

WAIT = 30.0  # seconds: an upper bound


def test_the_web_app_puts_its_live_bus_and_user_storage_on_redis(tmp_path: Path, redis_url: str) -> None:
    server = start(tmp_path, merge_output=True, ROSTRUM_REDIS_URL=redis_url, NICEGUI_REDIS_URL=redis_url)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        assert server.stdout is not None
        lines = Lines(server.stdout)
        ready = lines.until("NiceGUI ready to go")[-1]
        url = ready.split(" on ", 1)[1].split()[0].rstrip("/")
        assert httpx.get(url + "/", timeout=WAIT).status_code == 200  # a visitor: NiceGUI makes their storage
        deadline = time.monotonic() + WAIT
        while True:  # another process's subscriptions: asking the server is the only way to see them
            channels = set(client.pubsub_channels())
            users = [c for c in channels if c.startswith("nicegui:user-")]
            if ("rostrum:dashboard" in channels and users) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert "rostrum:dashboard" in channels, channels
        assert users, f"no per-user storage on Redis: {channels}"
        assert redis_url not in "\n".join(lines.seen), "the Redis URL is not logged"
    finally:
        client.close()
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
