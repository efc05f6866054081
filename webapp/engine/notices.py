"""What happened in this process beside a debate's own messages, for whoever passes it on.

A layer above the engine (a tournament, say) announces something that other parts of the process may
want to act on (the webhook relay queues `tournament.completed`) without importing them: it emits a
notice on `Engine.notices`, and they subscribe there when the process starts. The engine only carries
notices and knows none of their kinds; each is a small object its emitter defines.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

NoticeListener = Callable[[object], None]


class Notices:
    """Fan-out of notices to listeners, synchronously; a failing listener is logged and never breaks the
    emitter (a tournament that has completed stays completed whatever its listeners do)."""

    def __init__(self) -> None:
        self._listeners: list[NoticeListener] = []

    def subscribe(self, listener: NoticeListener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def emit(self, notice: object) -> None:
        for listener in list(self._listeners):
            try:
                listener(notice)
            except Exception:
                log.exception("a notice listener failed on %s", type(notice).__name__)
