"""The dashboard: empty state, demo start, server-side paging, search, status filter, live updates."""

from __future__ import annotations

from nicegui.testing import User

from tests.ui.helpers import engine, one, start_by_clicking, start_demo
from webapp.engine.machine import State
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.pages.dashboard import PAGE_SIZE


async def test_empty_state_starts_a_demo_debate_that_reaches_its_verdict(user: User) -> None:
    await user.open("/")
    await user.should_see("No debates yet")
    await user.should_see(marker="start-demo")
    session = await start_by_clicking(user, "start-demo")
    assert await session.join() is State.COMPLETED
    await user.should_see(marker="winner", retries=20)
    await user.should_see(marker="score-chart")
    await user.open("/")
    await user.should_see(marker=f"debate-{session.id}")
    await user.should_see(marker="status-completed")
    await user.should_see(session.state.config.topic)


async def test_a_thousand_debates_are_paged_searched_and_filtered_in_sql(user: User) -> None:
    eng = await engine()
    ids = [await eng.create(quick_demo_config(f"Stored debate number {n:04d}")) for n in range(1000)]
    done = await start_demo("A finished one about tea")
    await done.join()
    await user.open("/")
    await user.should_see("1001 debates")
    assert len(user.find(marker="cost").elements) == PAGE_SIZE  # one page rendered, not a thousand rows
    await user.should_see("A finished one about tea")  # newest first
    await user.should_not_see("Stored debate number 0000")

    pagination = next(e for e in user.client.elements.values() if type(e).__name__ == "Pagination")
    with user:
        pagination.value = 51  # the last page
    await user.should_see("Stored debate number 0000")
    await user.should_see(marker=f"debate-{ids[0]}")

    user.find(marker="search").type("number 0999")
    await user.should_see("1 debate")
    await user.should_see(marker=f"debate-{ids[-1]}")
    await user.should_not_see("A finished one about tea")

    with user:
        one(user, "search").value = ""
        one(user, "status-filter").value = ["completed"]
    await user.should_see("1 debate")
    await user.should_see(marker=f"debate-{done.id}")
    with user:
        one(user, "status-filter").value = ["running", "error"]
    await user.should_see("No debates match these filters.")


async def test_dashboard_updates_live_when_a_debate_starts_and_finishes(user: User) -> None:
    await user.open("/")
    await user.should_see("No debates yet")
    session = await start_demo("Live dashboard topic")
    await user.should_see("Live dashboard topic", retries=30)  # no reload: the hub signalled the change
    await session.join()
    await user.should_see(marker="status-completed", retries=30)
