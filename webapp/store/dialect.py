"""Where SQLite's and PostgreSQL's SQL differ, in one place: reaching into the JSON text columns
(`config`, `participants`, an event's `data`), a few functions, and the tie-break of orders.

Each store class names its `Dialect` (`SQLITE`, `POSTGRES`); the queries of `webapp.store` are written
once, with these fragments put in. On PostgreSQL, `->>` on `config::jsonb` is what the expression
indexes (`debates_series`, `debates_tournament_slot`) are built on, so the queries use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from webapp.store import pg_migrations, sqlite_schema


def _sqlite_path(column: str, path: tuple[str, ...]) -> str:
    return f"json_extract({column}, '$.{'.'.join(path)}')"


def _pg_path(column: str, path: tuple[str, ...]) -> str:
    if len(path) == 1:
        return f"({column}::jsonb ->> '{path[0]}')"
    return f"({column}::jsonb #>> '{{{','.join(path)}}}')"


@dataclass(frozen=True)
class Dialect:
    """The SQL fragments of one database."""

    name: Literal["sqlite", "postgresql"]
    greatest: str  # the two-argument maximum: `max(a, b)` / `greatest(a, b)`
    tournaments_newest: str  # newest first, ties broken (PostgreSQL's tournaments have no rowid)
    all_models: str  # every participant model ("provider:model") of the stored debates, once, sorted
    all_tags: str  # every topic tag of the stored debates, once, sorted
    search_tags: str  # a condition: one of the debate's tags contains the `?` pattern
    has_model: str  # a condition: a participant uses the `?` "provider:model"
    has_tag: str  # a condition: the debate carries the `?` tag
    tags_json: str  # the config's tags as JSON text of an array, or NULL ("{column}": the config column)
    tournament_id: str  # the config's tournament id as text, or NULL ("{column}": the config column)
    digest_backfill: str  # (re)fills `verdict_digests` from the verdict events

    def text(self, column: str, *path: str) -> str:
        """The text at `path` in the JSON of `column` (NULL when absent)."""
        return _sqlite_path(column, path) if self.name == "sqlite" else _pg_path(column, path)

    def number(self, column: str, *path: str) -> str:
        """The number at `path` in the JSON of `column` (NULL when absent)."""
        if self.name == "sqlite":
            return _sqlite_path(column, path)
        return f"({column}::jsonb #>> '{{{','.join(path)}}}')::double precision"

    def flag(self, column: str, *path: str) -> str:
        """The boolean at `path` in the JSON of `column`, true when absent (as 1/0 or true/false)."""
        if self.name == "sqlite":
            return f"coalesce({_sqlite_path(column, path)}, 1)"
        return f"coalesce(({column}::jsonb #> '{{{','.join(path)}}}') NOT IN ('false'::jsonb, '0'::jsonb), true)"

    def tags(self, column: str) -> str:
        """The tags of the config in `column` as JSON text of an array (or NULL)."""
        return self.tags_json.format(column=column)

    def tournament(self, column: str) -> str:
        """The tournament id of the config in `column` as text (or NULL)."""
        return self.tournament_id.format(column=column)


_MODEL_LABEL = "json_extract(p.value, '$.provider') || ':' || json_extract(p.value, '$.model')"
_PG_MODEL_LABEL = "(p.value ->> 'provider') || ':' || (p.value ->> 'model')"
# A debate's tags as a JSON array (an empty one when the config has none, or not a list).
_PG_TAGS = "CASE WHEN jsonb_typeof(config::jsonb -> 'tags') = 'array' THEN config::jsonb -> 'tags' ELSE '[]'::jsonb END"

SQLITE = Dialect(
    name="sqlite", greatest="max", tournaments_newest="created_at DESC, rowid DESC",
    all_models=f"SELECT DISTINCT {_MODEL_LABEL} FROM debates, json_each(debates.participants) p ORDER BY 1",
    all_tags="SELECT DISTINCT t.value FROM debates, json_each(debates.config, '$.tags') t ORDER BY 1",
    search_tags="EXISTS (SELECT 1 FROM json_each(debates.config, '$.tags') t WHERE lower(t.value) LIKE ? ESCAPE '\\')",
    has_model=f"EXISTS (SELECT 1 FROM json_each(debates.participants) p WHERE {_MODEL_LABEL} = ?)",
    has_tag="EXISTS (SELECT 1 FROM json_each(debates.config, '$.tags') t WHERE t.value = ?)",
    tags_json="json_extract({column}, '$.tags')",
    tournament_id="json_extract({column}, '$.tournament')",
    digest_backfill=sqlite_schema.DIGEST_BACKFILL,
)
POSTGRES = Dialect(
    name="postgresql", greatest="greatest", tournaments_newest="created_at DESC, id DESC",
    all_models=(f"SELECT DISTINCT {_PG_MODEL_LABEL} FROM debates, jsonb_array_elements(participants::jsonb) p "
                "ORDER BY 1"),
    all_tags=f"SELECT DISTINCT t FROM debates, jsonb_array_elements_text({_PG_TAGS}) t ORDER BY 1",
    search_tags=f"EXISTS (SELECT 1 FROM jsonb_array_elements_text({_PG_TAGS}) t WHERE lower(t) LIKE ? ESCAPE '\\')",
    has_model=f"EXISTS (SELECT 1 FROM jsonb_array_elements(participants::jsonb) p WHERE {_PG_MODEL_LABEL} = ?)",
    has_tag="coalesce(config::jsonb -> 'tags', '[]'::jsonb) @> jsonb_build_array(?::text)",
    tags_json="({column}::jsonb -> 'tags')::text",
    tournament_id="{column}::jsonb ->> 'tournament'",
    digest_backfill=pg_migrations.DIGEST_BACKFILL,
)
