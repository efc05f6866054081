"""Values that every page of a debate holds once (`shared_text`, `shared_options`, `shared_prop`).

Many pages of one debate build identical HTML, chart options and props at the same moment (when it
ends, or when a dozen spectators open it); each page keeps a reference to one shared object instead of
its own copy. Below the page frame (`ui.layout`, its header) and the components alike, so both use it.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any, TypeVar, cast

from nicegui.observables import ObservableDict, ObservableList

T = TypeVar("T")


class _Shared:
    """The same value, once: many pages of one debate build identical card HTML and chart options at
    the same moment (when it ends); each page keeps a reference to one shared object instead of its own
    copy. Bounded (least recently used goes first); values are never changed in place."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self.values: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str, value: T) -> T:
        found = self.values.get(key)
        if found is not None:
            self.values.move_to_end(key)
            return cast(T, found)
        self.values[key] = value
        if len(self.values) > self.size:
            self.values.popitem(last=False)
        return value


_SHARED = _Shared()


def shared_text(text: str) -> str:
    """`text`, as the one string object every page with the same text holds."""
    return _SHARED.get(text, text)


def shared_options(options: dict[str, Any]) -> dict[str, Any]:
    """Chart options (plain JSON data), as one object shared by every page showing the same chart."""
    return _SHARED.get("options:" + json.dumps(options, sort_keys=True, default=str), options)


def shared_prop(value: T) -> T:
    """`value` (plain JSON data) as one observable collection that every page's element holds.

    NiceGUI copies a dict or list given as a prop into observable collections of the element's own
    (every page had its own copy of a debate's stepper, cast, status and transcript snapshot), but
    keeps a collection that is already observable. Props are replaced, never edited in place, so
    sharing one is safe. Anything else is returned as it is."""
    if not isinstance(value, (dict, list)):
        return value
    key = "prop:" + hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()
    found = _SHARED.values.get(key)
    if found is None:
        found = ObservableDict(value) if isinstance(value, dict) else ObservableList(value)
    return cast(T, _SHARED.get(key, found))
