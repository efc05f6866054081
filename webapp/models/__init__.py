"""Pydantic models at the boundaries: a debate's configuration and records (`debate.py`), the words of
its life cycle (`lifecycle.py`), what a transition carries (`params.py`), and its log's events with their typed
payloads (`payloads.py`).

Everything that enters the engine (a form, a CLI spec, a config file) is validated into a
`DebateConfig`; everything the engine records is a `DebateEvent` whose payload is one of the models
of `payloads.py`. The package is one layer, below the store, the providers and the engine (see
ARCHITECTURE.md): nothing here imports them.
"""

from __future__ import annotations

# Every public name of debate.py (a model added there is importable from `webapp.models` at once).
from webapp.models.debate import *  # noqa: F403
from webapp.models.payloads import DebateEvent as DebateEvent
