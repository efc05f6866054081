"""Markdown for untrusted text (model output, judge reasoning): raw HTML is shown as text.

`ui.markdown` sanitises in the browser (DOMPurify), which removes scripts but still renders a
harmless-looking `<img>` from model output as an element. Here markdown2's `safe_mode="escape"`
turns any raw HTML into visible text on the server first, and DOMPurify stays on as a second layer.
"""

from __future__ import annotations

from functools import lru_cache

from nicegui import ui


@lru_cache(maxsize=512)
def render(content: str, extras: str) -> str:
    import markdown2  # on the first transcript shown, not at start-up

    return markdown2.markdown(content, extras=extras.split(), safe_mode="escape")


class SafeMarkdown(ui.markdown):
    """`ui.markdown` whose HTML comes from escaped Markdown; keep `sanitize=True` (the default)."""

    def _handle_content_change(self, content: str) -> None:
        html = render(content, " ".join(self.extras))
        if self._props.get("innerHTML") != html:
            self._props["innerHTML"] = html
