"""Validation errors of the new-debate form in plain words.

Pydantic and `Engine.validate` name a config path ("budget.cost_limit") and a technical message
("cost_limit must be greater than or equal to warn_at"); the form shows "The cost limit must be at
least the warn-at amount" at the field instead, and the same words in the summary at the top. No
message the form shows names an internal path.
"""

from __future__ import annotations

import re
from typing import Any

LEAVES = {
    "topic": "the topic", "format": "the format", "rounds": "the number of rounds", "name": "name",
    "position": "position", "persona": "persona", "provider": "provider", "model": "model",
    "preset": "server preset", "base_url": "base URL", "temperature": "temperature", "max_tokens": "max tokens",
    "context_tokens": "context budget", "concurrency": "calls at once", "color": "colour",
    "warn_at": "the warn-at amount", "cost_limit": "the cost limit", "connect": "the connect timeout",
    "first_token": "the first-token timeout", "turn": "the turn timeout", "max_retries": "the number of retries",
    "word_limit": "the word limit", "word_limit_action": "what happens over the word limit",
    "strict": "strict mode", "strategy": "the context strategy", "window": "the window",
    "seed": "the seed", "questions": "the number of cross-examination questions",
    "convergence_threshold": "the convergence threshold", "quality_threshold": "the score to stop at",
    "evaluation": "the round evaluation", "clarification_questions": "the questions per participant",
    "clarification_iterations": "the question rounds", "criteria": "the judging criteria",
    "frequency": "how often scores are given", "judges": "the judge panel", "participants": "the participants",
}
# Lists whose length is checked, said as a count ("Give at least one judging criterion", not "The
# judging criteria is required"): the verb, one item, several.
_COUNTED = {"criteria": ("Give", "judging criterion", "judging criteria"), "judges": ("Add", "judge", "judges"),
            "participants": ("Add", "participant", "participants")}
_ROW = re.compile(r"^(participants|judge\.judges)\[(\d+)\]\.(\w+)$")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def subject(path: str, names: dict[int, str] | None = None) -> str:
    """What a config path is called on the form: "participants[1].temperature" -> "the temperature of
    participant 2 (Negative)"; "budget.cost_limit" -> "the cost limit"."""
    match = _ROW.match(path)
    if match:
        group, index, leaf = match.group(1), int(match.group(2)), match.group(3)
        what = LEAVES.get(leaf, leaf.replace("_", " "))
        if group == "participants":
            name = (names or {}).get(index)
            return f"the {what} of participant {index + 1}" + (f" ({name})" if name else "")
        return f"the {what} of judge {index + 1}"
    if path.startswith("judge.fallback."):
        leaf = path.removeprefix("judge.fallback.")
        return f"the {LEAVES.get(leaf, leaf.replace('_', ' '))} of the fallback judge"
    leaf = path.rsplit(".", 1)[-1]
    return LEAVES.get(leaf, leaf.replace("_", " "))


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# Messages of our own validators, and what the form says instead.
_REWORDED: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"cost_limit must be greater than or equal to warn_at"),
     "The cost limit must be at least the warn-at amount"),
    (re.compile(r"base_url must start with http:// or https://"),
     "The base URL must start with http:// or https://"),
    (re.compile(r"judges\[(\d+)\] repeats (\S+); a panel needs different models"),
     "Judge {n} repeats {1}: a panel needs different models"),
    (re.compile(r"at least one judging criterion is required"), "Give at least one judging criterion"),
]


def reword(message: str, sentence: bool = True) -> str:
    """A validator's own message in the form's words (a judge index counted from 1); `sentence`
    capitalises any other message (the engine's messages are kept as they are worded)."""
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    for pattern, text in _REWORDED:
        match = pattern.search(message)
        if match:
            groups = match.groups()
            n = int(groups[0]) + 1 if groups and groups[0].isdigit() else 0
            return text.format(*groups, n=n)
    return _sentence(message) if sentence else message


def plain(path: str, error: dict[str, Any], names: dict[int, str] | None = None) -> str:
    """One pydantic error (an item of `ValidationError.errors()`) at `path`, in plain words."""
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    what = subject(path, names)
    counted = _COUNTED.get(path.rsplit(".", 1)[-1]) if not _ROW.match(path) else None
    if counted is not None and kind in ("too_short", "too_long"):
        verb, one, many = counted
        if kind == "too_long":
            return f"At most {ctx.get('max_length')} {many} are allowed"
        least = ctx.get("min_length") or 1
        return f"{verb} at least {'one ' + one if least == 1 else f'{least} {many}'}"
    if kind == "greater_than_equal":
        return _sentence(f"{what} must be at least {_number(ctx['ge'])}")
    if kind == "greater_than":
        return _sentence(f"{what} must be more than {_number(ctx['gt'])}")
    if kind == "less_than_equal":
        return _sentence(f"{what} must be at most {_number(ctx['le'])}")
    if kind == "less_than":
        return _sentence(f"{what} must be less than {_number(ctx['lt'])}")
    if kind in ("string_too_short", "missing") or (kind == "too_short" and ctx.get("min_length") == 1):
        return _sentence(f"{what} is required")
    if kind == "too_short":
        return _sentence(f"{what} needs at least {ctx.get('min_length')}")
    if kind == "string_too_long":
        return _sentence(f"{what} is too long (at most {ctx.get('max_length')} characters)")
    if kind == "too_long":
        return _sentence(f"{what} allows at most {ctx.get('max_length')}")
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return _sentence(f"{what} must be a whole number")
    if kind in ("float_parsing", "float_type"):
        return _sentence(f"{what} must be a number")
    if kind in ("literal_error", "enum"):
        return _sentence(f"{what} must be one of {ctx.get('expected')}")
    if kind in ("value_error", "assertion_error"):
        return reword(str(error.get("msg", "")))
    return _sentence(f"{what}: {str(error.get('msg', '')).lower()}")
