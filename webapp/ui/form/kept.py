"""Restoring a form kept in the tab without rebuilding it where its shape is the same.

A reload shows the form the tab kept (`app.storage.tab`), which is only known once the browser has
connected: after the page is on screen. Rebuilding the form then replaced the elements under the
person's first click (a Format menu opened and closed at once). Where the kept form has the same
shape as the one shown (the same format, rows, providers and names), its values are copied into the
shown dictionary in place and into the fields, and nothing is rebuilt.
"""

from __future__ import annotations

import json
import re
from typing import Any

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
ROW_SHAPE = ("provider", "preset", "base_url", "name", "color")  # what a row's elements are built from


def shape(form: dict[str, Any]) -> str:
    """What decides which elements the form has and how they are labelled (not their values)."""
    judge = form.get("judge") or {}
    rows = [*form.get("participants", []), *judge.get("judges", []), judge.get("fallback") or {}]
    return json.dumps([form.get("format"), [[row.get(key) for key in ROW_SHAPE] for row in rows]], default=str)


def copy_into(target: Any, source: Any) -> Any:
    """`source`'s values written into `target`'s dictionaries and lists, keeping them (and so what is
    bound to them); returns what the caller should hold (`source` where the two are not alike)."""
    if isinstance(target, dict) and isinstance(source, dict):
        for key in [k for k in target if k not in source]:
            del target[key]
        for key, value in source.items():
            target[key] = copy_into(target.get(key), value)
        return target
    if isinstance(target, list) and isinstance(source, list) and len(target) == len(source):
        for index, value in enumerate(source):
            target[index] = copy_into(target[index], value)
        return target
    return source


def value_at(form: dict[str, Any], path: str) -> tuple[bool, Any]:
    """The value at a field's path ('participants[1].name', 'budget.warn_at'), and whether it exists."""
    node: Any = form
    for name, index in _STEP.findall(path):
        try:
            node = node[int(index)] if index else node[name]
        except (KeyError, IndexError, TypeError):
            return False, None
    return True, node
