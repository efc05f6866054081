"""Every labelled button on every page reads in sentence case, as typed ("Start debate", "Re-run"):
Quasar's buttons are upper case unless told `no-caps`, and a page mixing both looks unfinished."""

from __future__ import annotations

from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import start_demo
from webapp.engine.machine import State

PAGES = ["/", "/new", "/settings", "/judges", "/leaderboard", "/tournaments", "/tournaments/new", "/admin",
         "/no/such/page"]


def labelled(user: User) -> list[ui.button]:
    return [e for e in user.client.elements.values() if isinstance(e, ui.button) and e.props.get("label")]


def shouting(user: User) -> list[str]:
    """The labels of the buttons on the user's page that Quasar would show in capitals."""
    return [str(e.props["label"]) for e in labelled(user) if "no-caps" not in e.props]


async def test_no_page_shows_a_button_in_capitals(user: User) -> None:
    done = await start_demo("Do capitals shout?")
    assert await done.join() is State.COMPLETED
    found: dict[str, list[str]] = {}
    checked = 0
    for path in [*PAGES, f"/debate/{done.id}"]:
        if path == "/no/such/page":
            response = await user.http_client.get(path)
            assert response.status_code == 404
            continue
        await user.open(path)
        await user.should_see(kind=ui.button)
        found[path] = shouting(user)
        checked += len(labelled(user))
    # the form's Advanced level too
    await user.open("/new")
    for advanced in [e for e in user.client.elements.values() if isinstance(e, ui.expansion)]:
        advanced.open()
    found["/new, advanced"] = shouting(user)
    assert found == {path: [] for path in found}, found
    assert checked >= 15  # the pages' labelled buttons were looked at (Start debate, Re-run, Export…)
