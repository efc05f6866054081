"""SQL written once for both stores: SQLite's `?` placeholders, numbered (`$1`, `$2`…) for PostgreSQL.

The repositories that keep their own queries (accounts, share links, audit, judge health) write them
in the SQL both databases accept, with `?` placeholders; the PostgreSQL store numbers them here. Only
placeholders outside quoted text and identifiers are numbered, so a `?` inside a string literal stays.
"""

from __future__ import annotations

from functools import lru_cache


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
