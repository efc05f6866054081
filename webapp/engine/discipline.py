"""Discipline of each turn: word limits (truncate at a sentence boundary, or reject and re-ask)."""

from __future__ import annotations

import re


def word_count(text: str) -> int:
    return len(text.split())


def truncate_to_words(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` words, ending at the last sentence boundary when there is one."""
    words = text.split()
    if len(words) <= limit:
        return text
    clipped = " ".join(words[:limit])
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", clipped)]
    if ends and ends[-1] >= len(clipped) // 3:
        return clipped[: ends[-1]]
    return clipped.rstrip(",;:") + "…"
