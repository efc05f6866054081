"""The dashboard's sort orders, applied in SQL: newest, oldest, cost, status (who needs a person first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pg_fixtures import STORE_KINDS, opened_store
from webapp.models import EventKind
from webapp.store.protocol import EventStore


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path):
    """Each store in turn: the orders are the same SQL on SQLite and PostgreSQL."""
    async with opened_store(request.param, request, tmp_path) as s:
        yield s


async def test_listing_sorts_by_date_cost_and_status_and_pages_in_that_order(store: EventStore) -> None:
    made = [("a", "completed", 0.5), ("b", "error", 0.01), ("c", "debating", 2.0), ("d", "stopped", 0.0),
            ("e", "paused", 0.2)]
    for debate_id, status, cost in made:
        await store.create_debate(debate_id, f"Topic {debate_id}", "classic", {}, {"status": status})
        await store.append(debate_id, EventKind.NOTE, {}, summary={"status": status, "cost_usd": cost})

    async def ids(order: str, **kwargs: int) -> list[str]:
        rows, total = await store.list_debates(order=order, **kwargs)
        assert total == len(made)
        return [r.id for r in rows]

    assert await ids("newest") == ["e", "d", "c", "b", "a"]
    assert await ids("oldest") == ["a", "b", "c", "d", "e"]
    assert await ids("cost") == ["c", "a", "e", "b", "d"]
    assert await ids("status") == ["b", "c", "e", "d", "a"]
    assert await ids("cost", offset=2, limit=2) == ["e", "b"]
    with pytest.raises(ValueError, match="order"):
        await store.list_debates(order="topic; DROP TABLE debates")
