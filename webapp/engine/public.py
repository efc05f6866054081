"""Everything the UI, the CLI, the terminal renderer and the live broadcast may import from the engine.

The engine's machinery (the runner's mixins, the fold's handlers, the state machine's declaration and
context, the broadcaster) stays inside `webapp.engine`; what callers need of it is named here, once:

- the session handle, `DebateSession`: its commands (`send`, `allowed_commands`), its read model
  (`view()`, a frozen `SessionView`, and `state`, the fold of the log: `DebateState`) and its stream
  (`subscribe`);
- the status and position vocabulary (`State`, `Position`, the state sets) and the one error a command
  can raise when the machine refuses it (`TransitionNotAllowed`);
- the messages of the live stream (`LiveEvent`, `LiveChunk`, …) and the typed payloads of the log;
- the diagram of the machine, generated from its declaration (`to_mermaid`).

The import-linter contract `engine-api` (pyproject.toml) lets `webapp.ui` (the live broadcast included),
`webapp.cli` and `webapp.terminal` import this module, `engine.api` and `engine.engine`, never the
machinery's modules; `tests/unit/test_architecture.py` also refuses a reach through the handle into the
machine (`.machine`) or a private name from outside the engine.
"""

from __future__ import annotations

from webapp.engine.api import *  # noqa: F403 - the commands and read model are part of this surface
from webapp.engine.api import __all__ as _api_names
from webapp.engine.machine import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    WAITING_STATES,
    Position,
    State,
    TransitionNotAllowed,
)
from webapp.engine.mermaid import to_mermaid
from webapp.engine.runner import DebateSession
from webapp.engine.state import SYSTEM_ACTOR, DebateState
from webapp.engine.stream import (
    Listener,
    LiveChunk,
    LiveEvent,
    LiveMessage,
    LiveStatus,
    LiveTurn,
    LiveTurnAborted,
    LiveTurnStarted,
)

__all__ = [
    *_api_names,
    "ACTIVE_STATES",
    "SYSTEM_ACTOR",
    "TERMINAL_STATES",
    "WAITING_STATES",
    "DebateSession",
    "DebateState",
    "Listener",
    "LiveChunk",
    "LiveEvent",
    "LiveMessage",
    "LiveStatus",
    "LiveTurn",
    "LiveTurnAborted",
    "LiveTurnStarted",
    "Position",
    "State",
    "TransitionNotAllowed",
    "to_mermaid",
]
