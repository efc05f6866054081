"""What the store's own modules run their SQL on, written once for both stores.

Every SQL statement of Rostrum is in `webapp.store`. The public protocol (`EventStore`) offers domain
methods only; the modules here that keep their own tables (accounts, share links, audit, tournaments,
leases, verdict digests …) reach the database through `SqlRunner`: a write `transaction()`, and
`fetchall`/`fetchone` on committed data. They write SQL both databases accept with `?` placeholders;
the PostgreSQL store numbers them (`numbered`: `$1`, `$2`…). Where the two databases' SQL differs (JSON,
a few functions) the text comes from the store's `Dialect` (`webapp.store.dialect`), the one place
that knows the difference.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from webapp.store.dialect import Dialect

M = TypeVar("M", bound=BaseModel)


class Executed(Protocol):
    """What a statement run in a transaction reports."""

    @property
    def rowcount(self) -> int: ...


class WriteTransaction(Protocol):
    """One write transaction (`SqlRunner.transaction()`)."""

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> Executed: ...


@runtime_checkable
class SqlRunner(Protocol):
    """Raw SQL on one store: for `webapp.store`'s own modules only (no module outside it runs SQL;
    tests/unit/test_architecture.py checks that)."""

    @property
    def dialect(self) -> Dialect: ...

    def transaction(self) -> AbstractAsyncContextManager[WriteTransaction]: ...

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]: ...

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None: ...


def runner(store: object) -> SqlRunner:
    """The SQL side of a store handed in as an `EventStore` (both real stores are `SqlRunner`s)."""
    if not isinstance(store, SqlRunner):
        raise TypeError(f"{type(store).__name__} is not a SQL store")
    return store


@lru_cache(maxsize=512)
def numbered(sql: str) -> str:
    """`sql` with each `?` placeholder (outside quotes) replaced by `$1`, `$2`… in order."""
    out: list[str] = []
    count = 0
    quote: str | None = None
    for char in sql:
        if quote is not None:
            if char == quote:
                quote = None  # a doubled quote closes and reopens: same result
            out.append(char)
        elif char in ("'", '"'):
            quote = char
            out.append(char)
        elif char == "?":
            count += 1
            out.append(f"${count}")
        else:
            out.append(char)
    return "".join(out)


def marks(values: Sequence[Any]) -> str:
    """The placeholders of an `IN (…)` list of `values` ("NULL" for none: `IN (NULL)` matches nothing)."""
    return ",".join("?" * len(values)) or "NULL"


def like_escaped(text: str) -> str:
    """`text` matched literally by `LIKE … ESCAPE '\\'`."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def model_row(model: type[M], columns: Sequence[str], values: Iterable[Any], json_columns: Iterable[str] = ()) -> M:
    """A row's `values` (selected in the order of `columns`) as the pydantic `model`; the `json_columns`
    hold JSON text, decoded here."""
    fields = dict(zip(columns, values, strict=True))
    for name in json_columns:
        fields[name] = json.loads(fields[name])
    return model.model_validate(fields)


class Where:
    """The conditions of a filtered listing, with their parameters in order."""

    def __init__(self) -> None:
        self.conditions: list[str] = ["1=1"]
        self.params: list[Any] = []

    def add(self, condition: str, *params: Any) -> None:
        self.conditions.append(condition)
        self.params.extend(params)

    @property
    def clause(self) -> str:
        return " AND ".join(self.conditions)


async def page(db: SqlRunner, select: str, source: str, where: Where, order: str, offset: int,
               limit: int) -> tuple[list[tuple[Any, ...]], int]:
    """One page of `SELECT {select} FROM {source}` filtered by `where` in `order`, and how many rows
    match in all (for paging)."""
    total = await db.fetchone(f"SELECT count(*) FROM {source} WHERE {where.clause}", where.params)
    rows = await db.fetchall(f"SELECT {select} FROM {source} WHERE {where.clause} ORDER BY {order} LIMIT ? OFFSET ?",
                             (*where.params, limit, offset))
    return rows, int(total[0]) if total else 0
