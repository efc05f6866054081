"""The debate page's live region: the status bar announces turn and phase changes to screen readers,
never each streamed token (the cost, which moves with every token, is outside the live region)."""

from __future__ import annotations

from pathlib import Path

from nicegui.testing import User

from tests.ui.helpers import engine
from webapp.engine.machine import State
from webapp.engine.stream import LiveChunk, LiveMessage
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.live import wire as live_wire


async def test_the_announcement_changes_per_turn_and_phase_not_per_token(user: User) -> None:
    eng = await engine()
    session = await eng.session(await eng.create(quick_demo_config("Should libraries lend tools?")))
    announced: list[str] = []
    chunks = 0

    def listen(message: LiveMessage) -> None:
        nonlocal chunks
        chunks += isinstance(message, LiveChunk)
        status = live_wire.status(session)  # what the status bar is sent after each live item
        if not announced or announced[-1] != status["announce"]:
            announced.append(status["announce"])

    unsubscribe = session.broadcaster.subscribe(listen)
    try:
        session.ensure_running()
        assert await session.join() is State.COMPLETED
    finally:
        unsubscribe()
    turns = session.state.turns
    names = {p.id: p.name for p in session.state.config.participants}
    assert turns
    # every turn is announced, with where the debate is and who speaks
    for turn in turns:
        where = live_wire.group_title(session.state, turn.phase, turn.round)
        assert f"{where}: {names[turn.speaker]} speaking" in announced, (turn.key, announced)
    assert "The judge is deciding" in announced
    assert announced[-1] == "Debate completed"
    # one announcement per turn (and the judge, the end), though the text streamed in many pieces
    assert len(announced) <= len(turns) + 4, announced
    assert chunks > 5 * len(announced)


def test_the_live_region_holds_the_announcement_only() -> None:
    template = (Path(live_wire.__file__).parents[1] / "components" / "live_status.js").read_text(encoding="utf-8")
    live = [line for line in template.splitlines() if "aria-live" in line or 'role="status"' in line]
    assert live == [line for line in live if "s.announce" in line] and len(live) == 1, live
