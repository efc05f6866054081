"""Pages over sessions the engine evicted: a finished debate nobody watched opens from its log."""

from __future__ import annotations

import gc

from nicegui.testing import User

from tests.ui.helpers import engine, start_demo, texts
from webapp.engine.machine import State


async def test_a_page_opens_a_finished_debate_the_engine_evicted(user: User) -> None:
    session = await start_demo("Should bicycles pay road tax?")
    assert await session.join() is State.COMPLETED
    debate_id, expected = session.id, [t.text for t in session.state.turns if t.visible]
    eng = await engine()
    assert debate_id not in eng.sessions  # finished and nobody watched it
    del session
    gc.collect()
    await user.open(f"/debate/{debate_id}")
    await user.should_see(marker="winner")
    await user.should_see(marker="status-completed")
    assert texts(user, "turn-text") == expected
    assert debate_id in eng.sessions  # loaded again from the log while the page watches it
    user.client.delete()  # the tab closes: the channel lets go, and the debate is evicted again
    assert debate_id not in eng.sessions
