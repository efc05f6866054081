"""The environment of a process a test starts (`python main.py`, `python -m webapp`): this one's,
without `PYTEST_CURRENT_TEST` (NiceGUI would think it runs under test) and without the variables
whose names start with any of `drop`, plus `updates`."""

from __future__ import annotations

import os


def child_env(drop: tuple[str, ...] = ("ROSTRUM_",), **updates: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST" and not k.startswith(drop)}
    env.update(updates)
    return env
