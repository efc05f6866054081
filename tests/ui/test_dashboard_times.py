"""The dashboard's times: relative on the row, exact on hover in the viewer's time zone (the one the
browser reports once the tab connects; UTC until then, or when the zone is unknown here)."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime

from nicegui import background_tasks
from nicegui.testing import User

from tests.ui.helpers import engine, one, start_demo
from webapp.engine.machine import State
from webapp.ui.pages.dashboard_rows import ZONE_JS, exact_time


def test_exact_time_is_shown_in_the_given_zone_and_in_utc_without_a_known_one() -> None:
    winter = datetime(2026, 1, 15, 12, 30, 5, tzinfo=UTC)
    summer = datetime(2026, 7, 15, 12, 30, 5, tzinfo=UTC)
    assert exact_time(winter) == "2026-01-15 12:30:05 UTC"
    assert exact_time(winter, "Europe/Paris") == "2026-01-15 13:30:05 CET (Europe/Paris)"
    assert exact_time(summer, "Europe/Paris") == "2026-07-15 14:30:05 CEST (Europe/Paris)"
    assert exact_time(winter, "America/New_York") == "2026-01-15 07:30:05 EST (America/New_York)"
    assert exact_time(winter, "Not/AZone") == "2026-01-15 12:30:05 UTC"  # a zone this machine lacks
    assert exact_time(winter, "../../etc/passwd") == "2026-01-15 12:30:05 UTC"  # nor a path


async def test_the_hover_time_follows_the_browsers_time_zone(user: User) -> None:
    user.javascript_rules[re.compile(re.escape(ZONE_JS))] = lambda _: "Asia/Tokyo"
    session = await start_demo("What time is it in Tokyo?")
    assert await session.join() is State.COMPLETED
    row = await (await engine()).store.get_row(session.id)
    assert row is not None
    await user.open("/")
    await user.should_see(marker=f"time-{session.id}")
    expected = exact_time(row.created_at, "Asia/Tokyo")
    assert expected.endswith("JST (Asia/Tokyo)")
    # the page asks the browser once it connects, then renders its rows again: wait for that task
    await asyncio.gather(*(t for t in background_tasks.running_tasks if t.get_name() == "dashboard-outcomes"))
    assert one(user, f"time-{session.id}").props["title"] == expected
    assert one(user, f"time-{session.id}").text == "just now"
