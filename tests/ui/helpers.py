"""Small helpers shared by the `user`-fixture tests."""

from __future__ import annotations

import asyncio
import json
from html.parser import HTMLParser
from typing import Any

from nicegui import context, ui
from nicegui.functions.navigate import Navigate
from nicegui.testing import User
from nicegui.testing.user_notify import UserNotify

from webapp.engine.engine import Engine
from webapp.engine.runner import DebateSession
from webapp.models import DebateConfig
from webapp.ui import runtime
from webapp.ui.components.presets import quick_demo_config


async def demo_speed(monkeypatch: Any, tokens_per_second: float) -> None:
    """Set the running app's demo speed: on the settings object its engine was given (settings are
    read once, like any setting) and on the process-wide one."""
    from webapp.settings import get_settings

    running = await engine()
    for settings in {id(s): s for s in (get_settings(), running.settings)}.values():
        monkeypatch.setattr(settings, "demo_speed", float(tokens_per_second))


async def engine() -> Engine:
    return await runtime.current().engine()


def one(user: User, marker: str) -> Any:
    """The single element with this marker on the user's current page."""
    elements = list(user.find(marker=marker).elements)
    assert len(elements) == 1, f"expected one element marked {marker!r}, found {len(elements)}"
    return elements[0]


def send_command(user: User, name: str, verdict: bool | None = None) -> None:
    """What the browser sends when a command button (or an item of Stop's menu) is pressed: the
    command bar's "command" event, over NiceGUI's own event path, whether the button is enabled or not
    (a tampered page can send it anyway)."""
    bar = one(user, "controls")
    listener = next(li for li in bar._event_listeners.values() if li.type == "command")
    args = {"name": name} if verdict is None else {"name": name, "verdict": verdict}
    user.client.handle_event({"id": bar.id, "listener_id": listener.id, "args": [json.dumps(args)]})


def press(user: User, name: str, verdict: bool | None = None) -> None:
    """A person pressing an enabled command button (Stop: choosing `verdict` in its menu)."""
    assert one(user, "controls").enabled(name), f"{name} is not enabled"
    send_command(user, name, verdict)


def texts(user: User, marker: str) -> list[str]:
    """The content (Markdown) or text of every element with this marker, in page order; for
    "turn-text", the text of every turn in the page's transcript snapshot."""
    if marker == "turn-text":
        return transcript(user).texts()
    elements = sorted(user.find(marker=marker).elements, key=lambda e: e.id)
    return [getattr(e, "content", None) or e.text for e in elements]


class _Marked(HTMLParser):
    """The text inside each element of a piece of HTML that carries `data-mark="<mark>"`."""

    def __init__(self, mark: str) -> None:
        super().__init__()
        self.mark, self.depth, self.found = mark, 0, []  # type: ignore[var-annotated]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += 1
        elif dict(attrs).get("data-mark") == self.mark:
            self.depth = 1
            self.found.append("")

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.found[-1] += data


def html_text(content: str) -> str:
    """The text of a piece of HTML (what a reader sees), tags dropped."""
    parser = HTMLParser()
    parts: list[str] = []
    parser.handle_data = parts.append  # type: ignore[method-assign]
    parser.feed(content)
    return "".join(parts)


def marked_texts(user: User, mark: str) -> list[str]:
    """The text of every part marked `data-mark="<mark>"` inside the page's HTML elements (parts of a
    card written as HTML rather than as elements), in page order."""
    found: list[str] = []
    for element in sorted(user.client.elements.values(), key=lambda e: e.id):
        if isinstance(element, ui.html):
            parser = _Marked(mark)
            parser.feed(element.content)
            found += parser.found
    return found


def transcript(user: User) -> Any:
    """The transcript element of the user's debate page (its snapshot: what the page was built with)."""
    return one(user, "transcript")


def snapshot_turn(user: User, key: str) -> dict[str, Any] | None:
    """The turn with this key in the page's transcript snapshot."""
    return next((t for t in transcript(user).turns if t["key"] == key), None)


def turn_notes(user: User) -> list[str]:
    """Every note on every turn of the page's transcript snapshot."""
    return [note for turn in transcript(user).turns for note in turn["notes"]]


async def start_by_clicking(user: User, marker: str = "start") -> DebateSession:
    """Click the button that starts a debate; once its page shows, the one debate the engine runs."""
    user.find(marker=marker).click()
    await user.should_see(marker="transcript", retries=100)  # creating it writes the store: allow a busy machine
    (session,) = (await engine()).sessions.values()
    return session


def assert_nowhere_on_page(user: User, secret: str) -> None:
    """Neither an element's props nor its text holds `secret`."""
    for element in user.client.elements.values():
        assert secret not in str(element.props) and secret not in str(getattr(element, "text", "") or "")


def notified(needle: str, *users: User) -> asyncio.Event:
    """An event set as soon as any of these users gets a notification containing `needle` (which user's
    `ui.notify` a background task reaches depends on which simulated user acted last)."""
    arrived = asyncio.Event()

    class Signalling(UserNotify):
        def __call__(self, message: str, **kwargs: Any) -> None:
            super().__call__(message, **kwargs)
            if needle in str(message):
                arrived.set()

    for user in users:
        user.notify = Signalling()
    return arrived


async def start_demo(topic: str | None = None, **changes: Any) -> DebateSession:
    config = quick_demo_config(topic)
    if changes:
        config = DebateConfig.model_validate({**config.model_dump(), **changes})
    return await (await engine()).start(config)


def another_user() -> User:
    """One more simulated browser on the same running app (another tab or person)."""
    import httpx
    from nicegui import core

    return User(httpx.AsyncClient(transport=httpx.ASGITransport(core.app), base_url="http://test"))


def stream_text(user: User, key: str) -> str:
    """The text streamed so far that the user's page was built with, for a turn in flight."""
    turn = snapshot_turn(user, key)
    return "" if turn is None or turn["state"] != "live" else str(turn["text"])


def grow(text: str, offset: int, chunk: str) -> str:
    """What a browser's transcript does with a streamed text item (static/live/index.js): append
    what extends the text it has; a gap is refused (the page would ask for a resync)."""
    assert offset <= len(text), f"a gap: text item at {offset}, the page has {len(text)} characters"
    return text + chunk[len(text) - offset:] if offset + len(chunk) > len(text) else text


class _TabNavigate(Navigate):
    """`ui.navigate` for several simulated tabs: each navigation goes to the tab whose page asked for it.

    NiceGUI's user simulation keeps one `ui.navigate` for all, the navigation of whichever `User` was
    touched last, and it touches a tab on its own too (answering a page's JavaScript): a page's
    `ui.navigate.to` after an await could take another tab there (the tab that signed out stayed where it
    was, while the other one went to the sign-in page)."""

    def __init__(self, tabs: dict[User, Navigate]) -> None:
        super().__init__()
        self.tabs = tabs

    def _own(self) -> Navigate:
        client = context.client
        for tab, navigate in self.tabs.items():
            if object.__getattribute__(tab, "client") is client:  # not `tab.client`: that re-points the globals
                return navigate
        raise AssertionError(f"no simulated tab shows client {client.id}")

    def to(self, target: Any, new_tab: bool = False) -> None:
        self._own().to(target, new_tab)

    def back(self) -> None:
        self._own().back()

    def forward(self) -> None:
        self._own().forward()

    def reload(self) -> None:
        self._own().reload()


def navigate_per_tab(*tabs: User) -> None:
    """Let each of these simulated tabs navigate on its own (`_TabNavigate`)."""
    routed = _TabNavigate({tab: tab.navigate for tab in tabs})
    for tab in tabs:
        tab.navigate = routed  # type: ignore[misc]  # User.__getattribute__ installs it as `ui.navigate`
