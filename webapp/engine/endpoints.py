"""The registered endpoints as the engine hands them to the provider cache.

Admins register endpoints in Settings (kept by `webapp.store.endpoints`); the configuration registers
others. The engine reads the stored ones again before it creates or starts a debate, so every process
sees an endpoint another one registered or removed, and hands the list down to the provider cache's
`EndpointBook`: the providers decide with it where a call may go, and never read the store themselves.
"""

from __future__ import annotations

import logging

from webapp.providers.endpoints import EndpointPolicy
from webapp.providers.registry import EndpointBook
from webapp.settings import Settings
from webapp.store.endpoints import EndpointStore
from webapp.store.protocol import EventStore

log = logging.getLogger(__name__)


class StoredEndpoints(EndpointBook):
    """An `EndpointBook` the engine fills from its store (`refresh`)."""

    def __init__(self, settings: Settings | None, store: EventStore) -> None:
        super().__init__(settings)
        self.store = store

    async def refresh(self) -> EndpointPolicy:
        """Read the registered endpoints again and hand them down; the rules with them."""
        try:
            return self.use(await EndpointStore(self.store).list())
        except Exception as exc:  # a storage fault: the last list read stays (the write that follows reports it)
            log.warning("could not read the registered endpoints, using the last list read: %s", exc)
            return self.policy()
