"""Discipline of each turn: word-limit truncation (and notes that say where the cut fell) and the offline
on-topic check."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from webapp.engine.discipline import rejection_note, truncate, truncate_to_words, truncation_note, word_count
from webapp.engine.termination import content_words, lexical_on_topic


def test_text_within_the_limit_is_unchanged() -> None:
    text = "One two three.\n\nFour five."
    assert truncate_to_words(text, 5) == text
    assert truncate_to_words(text, 50) == text


def test_truncation_ends_at_the_last_complete_sentence() -> None:
    text = "Cars pollute the air. Shops need deliveries though. Buses could carry most people instead of cars."
    assert truncate_to_words(text, 10) == "Cars pollute the air. Shops need deliveries though."
    assert word_count(truncate_to_words(text, 10)) <= 10


def test_truncation_keeps_paragraphs_and_closing_quotes() -> None:
    text = 'First point.\n\nShe said "enough!" Then more words follow here without end'
    assert truncate_to_words(text, 6) == 'First point.\n\nShe said "enough!"'


def test_without_a_usable_sentence_boundary_the_cut_is_marked() -> None:
    text = "Short. " + " ".join(["word"] * 40) + "."
    out = truncate_to_words(text, 20)
    assert out.endswith("…")
    assert word_count(out) == 20
    assert truncate_to_words("alpha, beta, gamma, delta", 2) == "alpha, beta…"


@given(st.lists(st.sampled_from(["cars", "pollute.", "air!", "Shops", "need?", "deliveries", "x"]),
                min_size=0, max_size=60), st.integers(min_value=1, max_value=40))
def test_truncation_never_exceeds_the_limit(words: list[str], limit: int) -> None:
    text = " ".join(words)
    out = truncate_to_words(text, limit)
    assert word_count(out) <= limit
    assert text.startswith(out.removesuffix("…"))


def test_notes_say_what_happened() -> None:
    assert rejection_note(312, 220) == (
        "rejected: 312 words against the 220-word limit; asked once more for a shorter answer")
    # not knowing where the cut fell, the note claims no sentence boundary
    assert truncation_note(250, 220) == "truncated to the 220-word limit (was 250 words)"


def test_the_truncation_note_says_where_the_cut_fell() -> None:
    sentences = "Cars pollute the air. Shops need deliveries though. Buses could carry most people instead of cars."
    cut, note = truncate(sentences, 10)
    assert cut == "Cars pollute the air. Shops need deliveries though."
    assert note == "truncated at a sentence boundary to the 10-word limit (was 16 words)"
    cut, note = truncate("alpha, beta, gamma, delta", 2)  # no sentence boundary: cut mid-sentence
    assert cut == "alpha, beta…"
    assert note == "truncated mid-sentence (marked …) to the 2-word limit (was 4 words)"
    assert "sentence boundary" not in (note or "")
    assert truncate("Short enough.", 10) == ("Short enough.", None)


def test_lexical_on_topic_check() -> None:
    topic = "Should cities ban cars from their centres?"
    assert lexical_on_topic(topic, "One car fewer is one car fewer.")  # 'cars' / 'car' meet
    assert lexical_on_topic(topic, "A car-free centre is calmer.")  # 'centres' / 'centre' meet
    assert lexical_on_topic(topic, "Every city thrives when people walk.")  # 'cities' / 'city' meet
    assert not lexical_on_topic(topic, "My favourite recipe is a lemon tart with almonds.")
    assert not lexical_on_topic(topic, "It is what it is, and that should be that.")  # stop words only
    assert "the" not in content_words("the cars")
