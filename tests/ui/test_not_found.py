"""Unknown addresses: a "not found" page inside the shared frame with HTTP 404, and a way back; the
navigation is made of real links with the current page marked."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from nicegui.testing import User

from tests.ui.helpers import one


def page_elements(html: str) -> list[dict]:
    """The elements a NiceGUI page response carries (as `parseElements` in nicegui.js reads them), to
    check a page `user.open` refuses (it expects HTTP 200)."""
    match = re.search(r"parseElements\(String\.raw`(.*?)`\)", html, re.S)
    assert match, "no element data in the page"
    raw = match.group(1)
    for escaped, char in (("&#36;", "$"), ("&#96;", "`"), ("&gt;", ">"), ("&lt;", "<"), ("&amp;", "&")):
        raw = raw.replace(escaped, char)
    return list(json.loads(raw).values())


async def test_an_unknown_address_answers_404_inside_the_frame(user: User) -> None:
    response = await user.http_client.get("/no/such/page")
    assert response.status_code == 404
    assert 'lang="en-US"' in response.text
    elements = page_elements(response.text)
    texts = {e.get("text") for e in elements}
    assert {"Page not found", "There is no page at /no/such/page.", "Back to Debates"} <= texts
    assert any('<a href="/" class="rostrum-nav" aria-label="Debates"' in str(value)
               for e in elements for value in e.get("props", {}).values())
    assert [e["text"] for e in elements if e.get("tag") == "h1"] == ["Page not found"]
    back = next(e for e in elements if "rostrum-back-link" in e.get("class", []))
    assert back["props"]["href"] == "/"


async def test_a_missing_static_file_keeps_a_plain_404(user: User) -> None:
    response = await user.http_client.get("/static/no-such-file.css")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


async def test_an_unknown_debate_is_a_404_page_with_a_heading_and_a_link_back(user: User) -> None:
    response = await user.http_client.get("/debate/does-not-exist")
    assert response.status_code == 404
    elements = page_elements(response.text)
    assert [e["text"] for e in elements if e.get("tag") == "h1"] == ["Not found"]
    assert "Back to Debates" in {e.get("text") for e in elements}


class _Links(HTMLParser):
    """The `<a>` elements of a piece of HTML, by their `data-mark`."""

    def __init__(self) -> None:
        super().__init__()
        self.links: dict[str, dict[str, str | None]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            found = dict(attrs)
            self.links[str(found.get("data-mark"))] = found


def nav_links(user: User) -> dict[str, dict[str, str | None]]:
    parser = _Links()
    parser.feed(one(user, "navigation").content)
    return parser.links


async def test_the_navigation_links_mark_the_current_page(user: User) -> None:
    await user.open("/settings")
    links = nav_links(user)
    assert links["nav-settings"]["href"] == "/settings" and links["nav-settings"]["aria-current"] == "page"
    assert links["nav-debates"]["href"] == "/" and "aria-current" not in links["nav-debates"]
    assert links["nav-new-debate"]["aria-label"] == "New debate"
    assert links["home"]["href"] == "/"
    assert one(user, "theme-toggle").props["aria-label"].startswith("Theme: ")
    await user.open(str(links["nav-judges"]["href"]))
    await user.should_see(marker="judge-health-title")
    assert nav_links(user)["nav-judges"]["aria-current"] == "page"
    assert "aria-current" not in nav_links(user)["nav-settings"]
