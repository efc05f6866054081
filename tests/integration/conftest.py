"""Fixtures shared by the integration tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.webhook_receiver import Receiver, receiving


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    """A webhook receiver on 127.0.0.1 whose arrivals the test awaits (`await receiver.next()`)."""
    with receiving(asyncio.get_running_loop()) as made:
        yield made
