"""Stored debates with chosen results, for the leaderboard tests (unit, CLI and page)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from webapp.models import EventKind, JudgeRuling, Verdict
from webapp.store.protocol import EventStore

ALPHA, BETA, GAMMA = "demo:alpha", "demo:beta", "demo:gamma"


async def store_result(store: EventStore, debate_id: str, a: str, b: str, winner: str | None, *,
                       judges: tuple[str, ...] = ("demo:judge",), picks: tuple[str | None, ...] | None = None,
                       tags: tuple[str, ...] = (), series: str | None = None, fmt: str = "classic",
                       words: tuple[int, int] = (400, 400), cost: float = 0.02, created: str | None = None,
                       status: str = "completed", topic: str | None = None,
                       ruling_extra: dict[str, Any] | None = None) -> None:
    """A completed debate between models `a` (side "a", pro) and `b` (side "b", con), won by "a", "b" or
    None (a tie); `picks`: each judge's own winner, for a panel; `ruling_extra`: more fields of every
    ruling (parse failures, a flip on the side swap)."""
    cast = [{"id": "a", "name": "Side A", "provider": a.split(":")[0], "model": a.split(":")[1], "position": "pro"},
            {"id": "b", "name": "Side B", "provider": b.split(":")[0], "model": b.split(":")[1], "position": "con"}]
    config: dict[str, Any] = {"topic": topic or f"Topic {debate_id}", "format": fmt, "participants": cast,
                              "tags": list(tags), "series": series}
    await store.create_debate(debate_id, config["topic"], fmt, config, {"status": status, "participants": cast})
    chosen = picks if picks is not None else tuple(winner for _ in judges)
    rulings = [JudgeRuling(judge=j, winner=w, reasoning="because " * 50, **(ruling_extra or {}))
               for j, w in zip(judges, chosen, strict=True)]
    verdict = Verdict(winner=winner, rulings=rulings, word_counts={"a": words[0], "b": words[1]},
                      reasoning="long reasoning " * 20)
    await store.append(debate_id, EventKind.VERDICT, {"verdict": verdict.model_dump(mode="json"), "calls": []},
                       summary={"cost_usd": cost})
    if created is not None:
        async with store.transaction() as tx:
            await tx.execute("UPDATE debates SET created_at = ? WHERE id = ?",
                             (datetime.fromisoformat(created).isoformat(), debate_id))


async def store_league(store: EventStore) -> None:
    """Alpha beats beta twice and ties once; gamma beats beta; alpha and gamma meet once, split 2–1
    by a panel for alpha; one debate is still running (not rated)."""
    await store_result(store, "d1", ALPHA, BETA, "a", tags=("ethics",), created="2026-01-05T10:00:00+00:00")
    await store_result(store, "d2", BETA, ALPHA, "b", tags=("ethics", "ai"), created="2026-01-06T10:00:00+00:00")
    await store_result(store, "d3", ALPHA, BETA, None, created="2026-02-01T10:00:00+00:00")
    await store_result(store, "d4", GAMMA, BETA, "a", tags=("science",), created="2026-02-02T10:00:00+00:00")
    await store_result(store, "d5", ALPHA, GAMMA, "a", judges=("demo:j1", "demo:j2", "demo:j3"),
                       picks=("a", "a", "b"), created="2026-02-03T10:00:00+00:00")
    await store_result(store, "d6", ALPHA, GAMMA, "b", status="judging", created="2026-02-04T10:00:00+00:00")


async def league_file(db: Path) -> None:
    """A SQLite database at `db` holding the league (for a CLI run or a served app)."""
    from webapp.store import Store

    store = await Store.open(db)
    try:
        await store_league(store)
    finally:
        await store.close()
