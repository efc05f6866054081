"""Markdown for untrusted text (model output, judge reasoning): raw HTML is shown as text.

`ui.markdown` sanitises in the browser (DOMPurify), which removes scripts but still renders a
harmless-looking `<img>` from model output as an element. Here markdown2's `safe_mode="escape"`
turns any raw HTML into visible text on the server first, and DOMPurify stays on as a second layer.

Markdown images (`![alt](url)`) are not raw HTML: markdown2 renders them as `<img>`, and every
spectator's browser would fetch a URL the model chose (a tracking pixel, an address on the viewer's
own network). They are rendered as links instead ("image: alt (host)"), unless their host is one an
admin allowed with `ROSTRUM_IMAGE_HOSTS`. Links from model output open in a new tab, without referrer.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from nicegui import ui

from webapp.settings import image_hosts

LINK_REL = "noopener noreferrer nofollow"
# What markdown2 emits for links and images: raw HTML in the input is escaped before this, so every
# tag matched here was written by markdown2, with its attribute values quoted and escaped.
_TAGS = re.compile(r'(?P<open><a\s[^>]*>)|(?P<close></a>)|(?P<img><img\s[^>]*?/?>)')
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """Whether `host` is listed (exactly, as the browser's transcript renderer matches it)."""
    return host.lower().rstrip(".") in set(allowed)


def image_url_allowed(url: str, allowed: Iterable[str]) -> bool:
    """Whether an image at `url` may be fetched by spectators' browsers: http(s) on an allowed host."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(host) and host_allowed(host or "", allowed)


def _linkable(url: str) -> str | None:
    """The host of an absolute http(s) URL (which may become a link), else None."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        return None
    return host if parts.scheme.lower() in ("http", "https") and host else None


def _image_replacement(attrs: dict[str, str], allowed: frozenset[str], in_link: bool) -> str:
    url = html.unescape(attrs.get("src", ""))
    alt = html.unescape(attrs.get("alt", "")).strip() or "untitled"
    if image_url_allowed(url, allowed):
        return (f'<img src="{html.escape(url, quote=True)}" alt="{html.escape(alt, quote=True)}" '
                'referrerpolicy="no-referrer" loading="lazy" />')
    host = _linkable(url)
    if host is None or in_link:  # javascript:, data:, relative… never a link; no link inside a link
        suffix = f" ({host})" if host else ""
        return f'<span class="rostrum-image-link">image: {html.escape(alt)}{html.escape(suffix)}</span>'
    return (f'<a href="{html.escape(url, quote=True)}" rel="{LINK_REL}" target="_blank" '
            f'class="rostrum-image-link">image: {html.escape(alt)} ({html.escape(host)})</a>')


def neutralise(rendered: str, allowed: frozenset[str] = frozenset()) -> str:
    """markdown2's HTML with images from other hosts turned into links and every link opening in a
    new tab without referrer (`javascript:` and the like never become links: markdown2 already writes
    `href="#"` for them, and an image's URL is linked only when it is http or https)."""
    depth = 0

    def swap(match: re.Match[str]) -> str:
        nonlocal depth
        if match.group("open"):
            depth += 1
            tag = match.group("open")
            external = re.search(r'\bhref="https?:', tag, re.IGNORECASE) and "rel=" not in tag
            return f'<a rel="{LINK_REL}" target="_blank" {tag[3:]}' if external else tag
        if match.group("close"):
            depth = max(0, depth - 1)
            return match.group("close")
        attrs = {k: v for k, v in _ATTR.findall(match.group("img"))}
        return _image_replacement(attrs, allowed, in_link=depth > 0)

    return _TAGS.sub(swap, rendered)


@lru_cache(maxsize=512)
def render(content: str, extras: str, allowed: frozenset[str] = frozenset()) -> str:
    import markdown2  # on the first transcript shown, not at start-up

    return neutralise(markdown2.markdown(content, extras=extras.split(), safe_mode="escape"), allowed)


@lru_cache(maxsize=1)
def _element_class() -> type[ui.markdown]:
    """`ui.markdown` whose HTML comes from escaped Markdown; keep `sanitize=True` (the default). Made on
    first use: NiceGUI's markdown element imports markdown2 and pygments, which no first page needs (a
    verdict's synthesis is the only Markdown element)."""

    class SafeMarkdown(ui.markdown):
        def _handle_content_change(self, content: str) -> None:
            html_text = render(content, " ".join(self.extras), image_hosts())
            if self._props.get("innerHTML") != html_text:
                self._props["innerHTML"] = html_text

    return SafeMarkdown


def safe_markdown(content: str) -> ui.markdown:
    """A Markdown element showing `content` escaped and neutralised (see the module's docstring)."""
    return _element_class()(content)
