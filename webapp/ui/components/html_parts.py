"""Fixed card content written as one HTML element instead of many NiceGUI elements, and values that
every page of a debate holds once (`shared_text`, `shared_options`, `shared_prop`).

Every element costs each open page memory (about 5 KB in NiceGUI), and the cards a debate shows when it
ends are built on every spectator's page at the same moment. `HtmlParts` collects escaped pieces, each
optionally marked (`data-mark` in the HTML, for tests and styling), and renders them as one `ui.html`
that carries the markers of every marked part, so `user.should_see(marker=...)` still finds them.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from html import escape
from typing import Any, TypeVar, cast

from nicegui import ui
from nicegui.observables import ObservableDict, ObservableList

T = TypeVar("T")


class _Shared:
    """The same value, once: many pages of one debate build identical card HTML and chart options at
    the same moment (when it ends); each page keeps a reference to one shared object instead of its own
    copy. Bounded (least recently used goes first); values are never changed in place."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self.values: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str, value: T) -> T:
        found = self.values.get(key)
        if found is not None:
            self.values.move_to_end(key)
            return cast(T, found)
        self.values[key] = value
        if len(self.values) > self.size:
            self.values.popitem(last=False)
        return value


_SHARED = _Shared()


def shared_text(text: str) -> str:
    """`text`, as the one string object every page with the same text holds."""
    return _SHARED.get(text, text)


def shared_options(options: dict[str, Any]) -> dict[str, Any]:
    """Chart options (plain JSON data), as one object shared by every page showing the same chart."""
    return _SHARED.get("options:" + json.dumps(options, sort_keys=True, default=str), options)


def shared_prop(value: T) -> T:
    """`value` (plain JSON data) as one observable collection that every page's element holds.

    NiceGUI copies a dict or list given as a prop into observable collections of the element's own
    (every page had its own copy of a debate's stepper, cast, status and transcript snapshot), but
    keeps a collection that is already observable. Props are replaced, never edited in place, so
    sharing one is safe. Anything else is returned as it is."""
    if not isinstance(value, (dict, list)):
        return value
    key = "prop:" + hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()
    found = _SHARED.values.get(key)
    if found is None:
        found = ObservableDict(value) if isinstance(value, dict) else ObservableList(value)
    return cast(T, _SHARED.get(key, found))


class HtmlParts:
    """Pieces of trusted markup around escaped text, rendered as one element."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.marks: list[str] = []

    def add(self, markup: str, mark: str | None = None) -> HtmlParts:
        """Append markup built by the caller (any user text in it already escaped)."""
        self.parts.append(markup)
        if mark and mark not in self.marks:
            self.marks.append(mark)
        return self

    def text(self, text: str, classes: str = "", mark: str | None = None, tag: str = "div") -> HtmlParts:
        """Append `text` (escaped) in a `tag` with these classes."""
        data = f' data-mark="{mark}"' if mark else ""
        return self.add(f'<{tag} class="{classes}"{data}>{escape(text)}</{tag}>', mark)

    def render(self, classes: str = "", *marks: str, sanitize: bool = False) -> ui.html | None:
        """One `ui.html` with everything appended (nothing if nothing was); `sanitize` adds the browser's
        DOMPurify pass, for parts rendered from untrusted Markdown."""
        if not self.parts:
            return None
        return ui.html(shared_text("".join(self.parts)), sanitize=sanitize).classes(classes) \
            .mark(*marks, *self.marks)


def icon(name: str, classes: str = "") -> str:
    """A Material icon as markup, hidden from screen readers (decoration beside its text)."""
    return f'<i class="q-icon notranslate material-icons {classes}" aria-hidden="true">{escape(name)}</i>'


def dot(color: str, classes: str = "") -> str:
    """A participant's colour dot (`color` must come from `safe_color`)."""
    return f'<span class="rostrum-dot {classes}" style="background:{color}" aria-hidden="true"></span>'
