"""The endpoints admins registered in Settings (migration `012_endpoints`), on either store.

An endpoint is a name, a base URL and optionally the name of the environment variable whose key is sent
to it (never the key itself: keys stay in the environment). Names are unique without case. What an
endpoint allows is decided in `webapp.providers.endpoints`; this module only keeps them (the model,
`Endpoint`, is `webapp.endpoints`).
"""

from __future__ import annotations

from webapp.endpoints import Endpoint
from webapp.models import utcnow
from webapp.store.errors import DuplicateKey
from webapp.store.protocol import EventStore
from webapp.store.sql import runner


class EndpointTaken(ValueError):
    """An endpoint with that name (without case) is registered already."""


class UnknownEndpoint(KeyError):
    """No endpoint with that name."""

    def __str__(self) -> str:
        return f"no endpoint named {self.args[0]!r}"


class EndpointStore:
    """The `endpoints` table of one store."""

    def __init__(self, store: EventStore) -> None:
        self.store = runner(store)

    async def list(self) -> list[Endpoint]:
        """Every registered endpoint, by name."""
        rows = await self.store.fetchall("SELECT name, base_url, key_env FROM endpoints ORDER BY name_key")
        return [Endpoint(name=r[0], base_url=r[1], key_env=r[2], source="settings") for r in rows]

    async def add(self, endpoint: Endpoint, created_by: str) -> Endpoint:
        """Register `endpoint` (already validated by its model); raises `EndpointTaken`."""
        try:
            async with self.store.transaction() as db:
                await db.execute(
                    "INSERT INTO endpoints (name_key, name, base_url, key_env, created_by, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (endpoint.name.casefold(), endpoint.name, endpoint.base_url, endpoint.key_env, created_by,
                     utcnow().isoformat()))
        except DuplicateKey:
            raise EndpointTaken(f"an endpoint called “{endpoint.name}” is registered already") from None
        return endpoint.model_copy(update={"source": "settings"})

    async def remove(self, name: str) -> Endpoint:
        """Unregister the endpoint called `name` (without case); raises `UnknownEndpoint`."""
        row = await self.store.fetchone("SELECT name, base_url, key_env FROM endpoints WHERE name_key = ?",
                                        (name.strip().casefold(),))
        if row is None:
            raise UnknownEndpoint(name)
        async with self.store.transaction() as db:
            await db.execute("DELETE FROM endpoints WHERE name_key = ?", (name.strip().casefold(),))
        return Endpoint(name=row[0], base_url=row[1], key_env=row[2], source="settings")
