"""Saved participant profiles and debate templates, shared by the team, in the store's database.

A *profile* is one participant's model settings (provider, model, persona, temperature…) without the
seat it takes (name, position, colour); a *template* is a whole debate configuration. Both are
validated with the engine's own `DebateConfig` before they are stored, so applying one can never put
the form in a state the engine would refuse for a reason the library let through. Keys are never part
of either: only the name of an environment variable may be, and anything that looks like a key is
refused (keys stay in the environment, where the operator put them).

Names are unique per kind whatever their case, at most `NAME_MAX_CHARS` characters. Everyone who is
signed in lists them; their author or an admin renames or deletes them (`may_change`).
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from webapp.models import DebateConfig, Participant, utcnow
from webapp.store.errors import DuplicateKey
from webapp.store.protocol import EventStore
from webapp.store.sql import model_row, runner

Kind = Literal["profile", "template"]
KINDS: tuple[Kind, ...] = ("profile", "template")
NAME_MAX_CHARS = 80
# What a profile keeps of a participant: the model and the voice, not the seat.
PROFILE_FIELDS = ("provider", "model", "preset", "base_url", "persona", "temperature", "max_tokens",
                  "context_tokens", "concurrency")
# A template validated without a topic gets this one, and is stored with an empty topic again.
_PLACEHOLDER_TOPIC = "Template topic"
# Shapes of hosted providers' keys (OpenAI/Anthropic "sk-…", Groq "gsk_…", Google "AIza…"), and a URL
# with credentials in it: a saved profile must not carry a secret by accident.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|gsk_[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_\-]{20,})")
_URL_CREDENTIALS = re.compile(r"^https?://[^/\s]*@")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COLUMNS = ("id", "kind", "name", "data", "created_by", "created_at", "updated_at")


class LibraryError(ValueError):
    """A name or content the library refuses, in words meant for the person who typed it."""


class NameTaken(LibraryError):
    """Another item of the same kind already has this name (case aside)."""


class UnknownItem(KeyError):
    """No saved item with that id (deleted meanwhile, perhaps by someone else)."""

    def __str__(self) -> str:
        return f"no saved profile or template with id {self.args[0]!r}"


class NotAuthor(PermissionError):
    """Only an item's author or an admin may rename or delete it."""


class LibraryItem(BaseModel):
    """One saved profile or template as stored: `data` is a profile's fields or a template's config."""

    id: str
    kind: Kind
    name: str
    data: dict[str, Any]
    created_by: str
    created_at: datetime
    updated_at: datetime

    def config(self) -> DebateConfig:
        """A template's configuration (an empty topic validated with a placeholder, so check `topic`)."""
        return DebateConfig.model_validate({**self.data, "topic": self.data.get("topic") or _PLACEHOLDER_TOPIC})

    @property
    def topic(self) -> str:
        return str(self.data.get("topic") or "")

    def summary(self) -> str:
        """One line saying what it holds: provider and model, or format and cast."""
        if self.kind == "profile":
            text = f"{self.data.get('provider')}:{self.data.get('model')}"
            if self.data.get("temperature") is not None:
                text += f" · temperature {self.data['temperature']:g}"
            return text + (" · with a persona" if self.data.get("persona") else "")
        participants = self.data.get("participants") or []
        models = ", ".join(f"{p.get('provider')}:{p.get('model')}" for p in participants)
        return f"{self.data.get('format')} · {len(participants)} participants ({models})"


def check_name(name: str) -> str:
    """The name as stored (spaces collapsed), or `LibraryError` saying what is wrong with it."""
    clean = " ".join(str(name or "").split())
    if not clean:
        raise LibraryError("Give it a name")
    if len(clean) > NAME_MAX_CHARS:
        raise LibraryError(f"The name is too long: at most {NAME_MAX_CHARS} characters, this one has {len(clean)}")
    return clean


def _refuse_secrets(data: Any) -> None:
    """Refuse content that holds a key (anywhere) or a URL with credentials."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "api_key_env" and value not in (None, "") and not _ENV_NAME.match(str(value)):
                raise LibraryError("api_key_env must name an environment variable (like MY_API_KEY), not hold a key")
            if key == "base_url" and isinstance(value, str) and _URL_CREDENTIALS.match(value):
                raise LibraryError("The base URL holds credentials: keys stay in the environment, never in a "
                                   "saved profile or template")
            _refuse_secrets(value)
    elif isinstance(data, list):
        for item in data:
            _refuse_secrets(item)
    elif isinstance(data, str) and _KEY_SHAPES.search(data):
        raise LibraryError("This looks like an API key: keys stay in the environment (.env), they are never saved")


def _plain(exc: ValidationError) -> LibraryError:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return LibraryError(f"{where}: {first['msg']}" if where else str(first["msg"]))


def profile_data(row: dict[str, Any]) -> dict[str, Any]:
    """A profile's fields from a participant (a form row or a `Participant` dump), validated as a
    participant of a `DebateConfig`; the seat (name, position, colour) is left out."""
    picked = {name: row.get(name) for name in PROFILE_FIELDS if name in row}
    for name in ("base_url", "preset"):
        if picked.get(name) in ("", None):
            picked.pop(name, None)
    _refuse_secrets(picked)
    try:
        config = DebateConfig(topic=_PLACEHOLDER_TOPIC, participants=[Participant.model_validate(picked)])
    except ValidationError as exc:
        raise _plain(exc) from None
    participant = config.participants[0].model_dump(mode="json")
    return {name: participant[name] for name in PROFILE_FIELDS}


def template_data(config: dict[str, Any] | DebateConfig) -> dict[str, Any]:
    """A template's content: a `DebateConfig` (an empty topic allowed), without the series and the
    rematch link of the debate it may come from."""
    raw = config.model_dump(mode="json") if isinstance(config, DebateConfig) else dict(config)
    _refuse_secrets(raw)
    topic = str(raw.get("topic") or "").strip()
    try:
        checked = DebateConfig.model_validate({**raw, "topic": topic or _PLACEHOLDER_TOPIC})
    except ValidationError as exc:
        raise _plain(exc) from None
    data = checked.model_dump(mode="json", exclude={"series", "rematch_of"})
    data["topic"] = topic
    return data


def may_change(item: LibraryItem, actor: str, admin: bool) -> bool:
    """Whether `actor` may rename or delete `item`: its author, or an admin."""
    return admin or item.created_by.casefold() == actor.casefold()


class Library:
    """The saved profiles and templates of one store."""

    def __init__(self, store: EventStore) -> None:
        self.store = runner(store)

    @staticmethod
    def _item(row: tuple[Any, ...]) -> LibraryItem:
        return model_row(LibraryItem, _COLUMNS, row, json_columns=("data",))

    async def save(self, kind: Kind, name: str, data: dict[str, Any], created_by: str) -> LibraryItem:
        """Store a new item; `data` is validated for its kind. Raises `NameTaken` or `LibraryError`."""
        if kind not in KINDS:
            raise LibraryError(f"unknown kind {kind!r}")
        clean = profile_data(data) if kind == "profile" else template_data(data)
        now = utcnow()
        item = LibraryItem(id=uuid.uuid4().hex[:12], kind=kind, name=check_name(name), data=clean,
                           created_by=created_by, created_at=now, updated_at=now)
        try:
            async with self.store.transaction() as db:
                await db.execute(
                    f"INSERT INTO library ({', '.join(_COLUMNS)}) VALUES (?,?,?,?,?,?,?)",
                    (item.id, kind, item.name, json.dumps(clean, sort_keys=True), created_by,
                     now.isoformat(), now.isoformat()))
        except DuplicateKey:
            raise NameTaken(f"A {kind} called “{item.name}” already exists: choose another name") from None
        return item

    async def items(self, kind: Kind | None = None) -> list[LibraryItem]:
        """Every item (of one kind), by name."""
        where, params = ("WHERE kind = ?", (kind,)) if kind else ("", ())
        # `name` sorts without case on both stores (SQLite: COLLATE NOCASE; PostgreSQL: citext).
        rows = await self.store.fetchall(
            f"SELECT {', '.join(_COLUMNS)} FROM library {where} ORDER BY kind, name", params)
        return [self._item(r) for r in rows]

    async def get(self, item_id: str) -> LibraryItem:
        row = await self.store.fetchone(f"SELECT {', '.join(_COLUMNS)} FROM library WHERE id = ?", (item_id,))
        if row is None:
            raise UnknownItem(item_id)
        return self._item(row)

    async def _changeable(self, item_id: str, actor: str, admin: bool) -> LibraryItem:
        item = await self.get(item_id)
        if not may_change(item, actor, admin):
            raise NotAuthor(f"only {item.created_by} (who saved “{item.name}”) or an admin can change it")
        return item

    async def rename(self, item_id: str, name: str, actor: str, admin: bool) -> LibraryItem:
        item = await self._changeable(item_id, actor, admin)
        clean = check_name(name)
        now = utcnow()
        try:
            async with self.store.transaction() as db:
                await db.execute("UPDATE library SET name = ?, updated_at = ? WHERE id = ?",
                                 (clean, now.isoformat(), item_id))
        except DuplicateKey:
            raise NameTaken(f"A {item.kind} called “{clean}” already exists: choose another name") from None
        return item.model_copy(update={"name": clean, "updated_at": now})

    async def delete(self, item_id: str, actor: str, admin: bool) -> LibraryItem:
        item = await self._changeable(item_id, actor, admin)
        async with self.store.transaction() as db:
            await db.execute("DELETE FROM library WHERE id = ?", (item_id,))
        return item
