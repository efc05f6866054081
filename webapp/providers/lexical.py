"""A cheap lexical test of whether a text is about a topic: do they share a content word?

The offline demo judge answers on-topic checks with it; it needs no model and no network.
"""

from __future__ import annotations

import re

_STOPWORD_TEXT = """
a an the of to in on for and or but is are was were be been it this that these those with as by at from
should would could will can we you they he she i our your their not no do does did have has had than
then there what which who whom whose why how all any each more most other some such only own same so
too very just also into over under about against between through during before after above below
up down out off again further once here when where both few nor
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _stem(word: str) -> str:
    """A very light stemmer: enough for "cities"/"city" or "cars"/"car" to meet in the lexical check."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return word[:-2]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    if word.endswith("s") and len(word) >= 4 and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """Lower-cased, lightly stemmed content words (stop words removed)."""
    return {_stem(w) for w in re.findall(r"[a-z][a-z'-]{2,}", text.lower()) if w not in _STOPWORDS}


def lexical_on_topic(topic: str, text: str) -> bool:
    """Does the text share at least one content word with the topic?"""
    return bool(content_words(text) & content_words(topic))
