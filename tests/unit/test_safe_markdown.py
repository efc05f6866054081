"""Markdown from models never makes a spectator's browser fetch a URL the model chose: images are links
unless an admin allowed their host (ROSTRUM_IMAGE_HOSTS); `javascript:` never becomes a link."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from webapp.settings import Settings, get_settings, image_hosts
from webapp.ui.components.safe_markdown import LINK_REL, host_allowed, image_url_allowed, render

EXTRAS = "fenced-code-blocks tables"
ALLOWED = frozenset({"images.example.org", "wiki.example"})


def html(markdown: str, allowed: frozenset[str] = frozenset()) -> str:
    return render(markdown, EXTRAS, allowed)


def test_an_image_from_a_host_not_allowed_is_a_link_and_no_img() -> None:
    out = html("Look: ![tracking pixel](https://evil.example/pixel.png)")
    assert "<img" not in out
    assert ('<a href="https://evil.example/pixel.png" rel="noopener noreferrer nofollow" target="_blank"'
            in out)
    assert "image: tracking pixel (evil.example)</a>" in out


def test_an_image_from_an_allowed_host_is_shown_without_referrer() -> None:
    out = html("![chart](https://images.example.org/chart.png)", ALLOWED)
    assert '<img src="https://images.example.org/chart.png" alt="chart"' in out
    assert 'referrerpolicy="no-referrer"' in out
    assert "<img" in html("![x](https://WIKI.example/x.png)", ALLOWED)
    assert "<img" not in html("![x](https://upload.wiki.example/x.png)", ALLOWED)  # exact hosts only
    assert "<img" not in html("![x](https://evilwiki.example/x.png)", ALLOWED)
    assert "<img" not in html("![x](https://images.example.org.evil.example/x.png)", ALLOWED)
    assert "<img" not in html("![x](https://images.example.org@evil.example/x.png)", ALLOWED)  # user@host


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:image/svg+xml,<svg/>",
                                 "//evil.example/p.png", "/local.png", "vbscript:x"])
def test_an_image_that_is_not_http_never_becomes_a_link_or_an_img(url: str) -> None:
    out = html(f"![x]({url})", ALLOWED | {"evil.example"})
    assert "<img" not in out and "<a " not in out
    assert "image: x" in out


@pytest.mark.parametrize("text", ["[click](javascript:alert(1))", "[click](JAVASCRIPT:alert(1))",
                                  "[click](jav&#x61;script:alert(1))", "<javascript:alert(1)>"])
def test_javascript_urls_never_become_links(text: str) -> None:
    out = html(text)
    assert set(re.findall(r'href="([^"]*)"', out)) <= {"#"}, out  # markdown2 neutralises the target
    assert 'target="_blank"' not in out


def test_links_open_in_a_new_tab_without_referrer_and_raw_html_stays_text() -> None:
    out = html('[docs](https://docs.example/a?b=1&c=2) <img src="https://evil.example/x.png"> <script>x()</script>')
    assert f'<a rel="{LINK_REL}" target="_blank" href="https://docs.example/a?b=1&c=2">docs</a>' in out
    assert "<img" not in out and "<script" not in out and "&lt;script&gt;" in out


def test_an_image_inside_a_link_is_text_inside_that_link() -> None:
    out = html("[![badge](https://evil.example/b.png)](https://site.example)")
    assert "<img" not in out
    assert out.count("<a ") == 1 and "image: badge (evil.example)" in out


def test_alt_text_is_escaped() -> None:
    out = html('![<b onmouseover="x()">](https://evil.example/p.png)')
    assert "<b" not in out and "&lt;b" in out


def test_host_matching() -> None:
    assert host_allowed("Images.Example.org.", ALLOWED)
    assert host_allowed("wiki.example", ALLOWED) and not host_allowed("a.wiki.example", ALLOWED)
    assert not host_allowed("example.org", ALLOWED)
    assert image_url_allowed("https://images.example.org:8443/a.png", ALLOWED)
    assert not image_url_allowed("ftp://images.example.org/a.png", ALLOWED)
    assert not image_url_allowed("https://[::1/a.png", ALLOWED)


# --- the setting ---------------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("ROSTRUM_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_image_hosts_default_to_none(clean_env: None) -> None:
    assert Settings().image_hosts == []


def test_image_hosts_are_read_comma_separated_and_shared(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_IMAGE_HOSTS", " Images.Example.org, wiki.example ,, ")
    get_settings.cache_clear()
    try:
        assert Settings().image_hosts == ["images.example.org", "wiki.example"]
        assert image_hosts() == frozenset({"images.example.org", "wiki.example"})
    finally:
        get_settings.cache_clear()


@pytest.mark.parametrize("bad", ["https://images.example.org", "images.example.org/path", "host:8080", "*",
                                 "*.example.org"])
def test_a_host_with_a_scheme_path_or_port_is_refused(clean_env: None, bad: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None, image_hosts=bad)  # type: ignore[call-arg]
    assert caught.value.errors()[0]["loc"] == ("image_hosts",)
