"""The engine's notices: what a layer above announces reaches every listener, a failing listener is
logged and never breaks the emitter or the others, and an unsubscribed listener hears nothing more."""

from __future__ import annotations

import pytest

from webapp.engine.notices import Notices


def test_a_notice_reaches_every_listener_even_past_a_failing_one(caplog: pytest.LogCaptureFixture) -> None:
    notices = Notices()
    heard: list[object] = []

    def broken(notice: object) -> None:
        raise RuntimeError("listener bug")

    notices.subscribe(broken)
    stop = notices.subscribe(heard.append)
    notices.emit("first")
    assert heard == ["first"]
    assert "a notice listener failed on str" in caplog.text
    stop()
    notices.emit("second")
    assert heard == ["first"]
