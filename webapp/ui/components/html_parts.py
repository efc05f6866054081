"""Fixed card content written as one HTML element instead of many NiceGUI elements. The values every
page of a debate holds once (`shared_text`, `shared_options`, `shared_prop`) live in `ui.shared_values`,
below the page frame; they are re-exported here for the components that import them from this module.

Every element costs each open page memory (about 5 KB in NiceGUI), and the cards a debate shows when it
ends are built on every spectator's page at the same moment. `HtmlParts` collects escaped pieces, each
optionally marked (`data-mark` in the HTML, for tests and styling), and renders them as one `ui.html`
that carries the markers of every marked part, so `user.should_see(marker=...)` still finds them.
"""

from __future__ import annotations

from html import escape

from nicegui import ui

from webapp.ui.shared_values import shared_options, shared_prop, shared_text

__all__ = ["HtmlParts", "dot", "icon", "shared_options", "shared_prop", "shared_text"]


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
