"""What ROSTRUM_DB names: a PostgreSQL URL or a SQLite file, and how it may be shown (no password).

Apart from `webapp.store.protocol` so that the PostgreSQL store can use it without importing the
module that loads that store (late, on purpose: asyncpg is imported only for a `postgresql://` URL).
"""

from __future__ import annotations

import re
from pathlib import Path

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | Path) -> bool:
    """Whether `target` (ROSTRUM_DB) names a PostgreSQL database rather than a SQLite file."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def redacted(target: str | Path) -> str:
    """`target` as it may be shown or logged: a URL without its password (a secret)."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", str(target))
