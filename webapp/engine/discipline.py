"""Discipline of each turn: word limits (truncate, at a sentence boundary where one is close enough, or
reject and re-ask once).

The runner applies the debate's `word_limit_action`; the notes below are what it records on the turn,
so the transcript says exactly what happened to an over-long answer.
"""

from __future__ import annotations

import re

from webapp.providers.base import Message, ProviderRequest

# A sentence ends with . ! or ? (optionally followed by closing quotes or brackets) before a space or the end.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s|$)")


def word_count(text: str) -> int:
    return len(text.split())


def truncate_to_words(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` words, ending at the last sentence boundary when there is one.

    The original spacing (paragraphs, line breaks) is kept. When the last complete sentence would
    leave less than a third of the allowed text, the cut is made at the word limit and marked "…".
    """
    words = list(re.finditer(r"\S+", text))
    if len(words) <= limit:
        return text
    clipped = text[: words[limit - 1].end()] if limit > 0 else ""
    ends = [m.end() for m in _SENTENCE_END.finditer(clipped)]
    if ends and ends[-1] >= len(clipped) // 3:
        return clipped[: ends[-1]]
    return clipped.rstrip(",;:–—- ") + "…"


def rejection_note(words: int, limit: int) -> str:
    return f"rejected: {words} words against the {limit}-word limit; asked once more for a shorter answer"


def truncation_note(words: int, limit: int, cut: str | None = None) -> str:
    """What happened to an over-long turn. `cut` (what `truncate_to_words` kept) says where the cut
    fell; without it the note claims no sentence boundary, since a cut may fall mid-sentence."""
    if cut is None:
        where = ""
    elif cut.endswith("…"):
        where = " mid-sentence (marked …)"
    else:
        where = " at a sentence boundary"
    return f"truncated{where} to the {limit}-word limit (was {words} words)"


def truncate(text: str, limit: int) -> tuple[str, str | None]:
    """`text` cut to `limit` words and the note that says how (None when it already fits)."""
    cut = truncate_to_words(text, limit)
    if cut == text:
        return text, None
    return cut, truncation_note(word_count(text), limit, cut)


def shorter_request(request: ProviderRequest, reply: str, limit: int) -> ProviderRequest:
    """Ask once more, for the same turn in fewer words (the "reject" word-limit action)."""
    return request.model_copy(update={
        "messages": [
            *request.messages,
            Message(role="assistant", content=reply),
            Message(role="user", content=f"That was {word_count(reply)} words; the limit is {limit}. "
                                         "Say it again in fewer words."),
        ],
        "context": {**request.context, "word_limit": limit, "retry_shorter": True},
    })

