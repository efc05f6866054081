"""Text from models and people made inert where it lands: a terminal, a Markdown or a text file.

- `strip_controls`: what a terminal (or a plain-text file) must not receive. ESC sequences (colour,
  window title, clear screen) are removed whole; other control characters (BEL, NUL, DEL, the C1
  range) and the bidirectional overrides and isolates that reorder what is shown are dropped.
  Newlines and tabs are kept; a carriage return becomes a newline (it could overwrite a line).
- `escape_markdown`: raw HTML made visible text (`<` becomes `&lt;`) outside code spans and fenced
  code, where a Markdown renderer shows it literally anyway; the words stay exactly as written.
- `has_visible_text`: whether a string shows anything at all (a topic of zero-width spaces does not).

JSON exports stay exact: JSON escapes control characters itself, and tools want the real text.
"""

from __future__ import annotations

import re
import unicodedata

# ECMA-48: CSI sequences, then strings (OSC, DCS, SOS, PM, APC) up to their terminator, then the
# two-character escapes (charset selection, reset, …). Order matters: `[` and `]` are finals too.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x1b][\]PX^_].*?(?:\x07|\x1b\\|\x9c)"
    r"|[\x90\x98\x9d\x9e\x9f].*?(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]",
    re.DOTALL,
)
# C0 except tab and newline, DEL, C1, the bidi embeddings/overrides (U+202A–U+202E) and isolates
# (U+2066–U+2069). Carriage returns and line/paragraph separators are turned into newlines first.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NEWLINES = re.compile(r"\r\n?|[\u2028\u2029]")

# Letters and symbols that render as blank space although Unicode does not call them spaces.
_BLANK_GLYPHS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp", "Mn", "Me"})


def strip_controls(text: str) -> str:
    """`text` safe to write to a terminal or a plain-text file (newlines and tabs kept)."""
    if text.isprintable():  # the common case (no control, format or separator characters): as is
        return text
    return _CONTROLS.sub("", _ESCAPES.sub("", _NEWLINES.sub("\n", text)))


def has_visible_text(text: str) -> bool:
    """Whether `text` holds at least one character that shows (not only spaces, zero-width
    characters, byte-order marks, control characters or lone combining marks)."""
    return any(ch not in _BLANK_GLYPHS and unicodedata.category(ch) not in _INVISIBLE_CATEGORIES for ch in text)


# --- Markdown ----------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ENTITY = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9A-Fa-f]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
_BACKTICKS = re.compile(r"`+")


def _escape_html(text: str) -> str:
    # `&` only where it would start an entity, so "R&D" stays as written and "&lt;" stays visible.
    return _ENTITY.sub("&amp;", text).replace("<", "&lt;")


def _escape_line(line: str) -> str:
    """One line outside fenced code: HTML escaped, code spans (`…`, ``…``) left as they are."""
    out: list[str] = []
    pos = 0
    while True:
        opening = _BACKTICKS.search(line, pos)
        if opening is None:
            out.append(_escape_html(line[pos:]))
            return "".join(out)
        run = opening.group()
        closing = next((m for m in _BACKTICKS.finditer(line, opening.end()) if m.group() == run), None)
        if closing is None:  # an unmatched run is literal text, not a code span
            out.append(_escape_html(line[pos:opening.end()]))
            pos = opening.end()
            continue
        out.append(_escape_html(line[pos:opening.start()]))
        out.append(line[opening.start():closing.end()])
        pos = closing.end()


def escape_markdown(text: str) -> str:
    """`text` (Markdown from a model or a person) with raw HTML made inert and control characters
    removed. Code is kept verbatim, and a fence left open is closed so that it cannot swallow what
    follows in the document."""
    out: list[str] = []
    fence: str | None = None
    for line in strip_controls(text).splitlines(keepends=True):
        match = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line[match.end():].strip():
                fence = None
            continue
        if match and not (match.group(1)[0] == "`" and "`" in line[match.end():]):
            fence = match.group(1)
            out.append(line)
            continue
        out.append(_escape_line(line))
    if fence is not None:
        if out and not out[-1].endswith("\n"):
            out.append("\n")
        out.append(fence)
    return "".join(out)


def escape_markdown_inline(text: str) -> str:
    """A single-line value (topic, name, note, criterion) for a heading, a list item or a table cell:
    escaped, on one line, with `|` escaped so it cannot split a table row."""
    flat = " ".join(strip_controls(text).split("\n"))
    return _escape_line(flat).replace("|", "\\|")


def code_fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`, so the text cannot close it."""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=0)
    return "`" * max(3, longest + 1)
