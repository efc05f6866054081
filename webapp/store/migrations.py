"""Numbered, forward-only schema migrations. Never edit a released migration: add the next one.

`MIGRATIONS[n]` takes a database at version n to version n+1.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: debates (a projection kept for listing) and the append-only event log (the truth).
    """
    CREATE TABLE debates (
        id TEXT PRIMARY KEY,
        topic TEXT NOT NULL,
        format TEXT NOT NULL,
        config TEXT NOT NULL,
        status TEXT NOT NULL,
        phase TEXT,
        round INTEGER NOT NULL DEFAULT 0,
        total_rounds INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL NOT NULL DEFAULT 0,
        turn_count INTEGER NOT NULL DEFAULT 0,
        participants TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE events (
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        at TEXT NOT NULL,
        data TEXT NOT NULL,
        idem_key TEXT,
        PRIMARY KEY (debate_id, seq),
        UNIQUE (debate_id, idem_key)
    );
    CREATE INDEX debates_created ON debates (created_at DESC);
    """,
    # 2: listing by status and whether any turn was unpriced.
    """
    CREATE INDEX debates_status ON debates (status, created_at DESC);
    ALTER TABLE debates ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: a lower-cased topic column so topic search does not scan JSON.
    """
    ALTER TABLE debates ADD COLUMN topic_search TEXT NOT NULL DEFAULT '';
    UPDATE debates SET topic_search = lower(topic);
    """,
    # 4: whether a paused debate was interrupted by a restart (the dashboard shows it), backfilled
    # from each debate's last transition.
    """
    ALTER TABLE debates ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
    UPDATE debates SET interrupted = 1 WHERE status = 'paused' AND coalesce((
        SELECT json_extract(e.data, '$.params.interrupted') FROM events e
        WHERE e.debate_id = debates.id AND e.kind = 'transition' ORDER BY e.seq DESC LIMIT 1), 0) = 1;
    """,
    # 5: team access. Accounts (argon2 hashes; NULL for users known only through a proxy's identity
    # header), read-only share links (only a hash of each token is kept), the audit trail of control
    # actions (no foreign key: the record of a deletion outlives the debate), and who created each debate
    # (per-person daily spending).
    """
    CREATE TABLE users (
        username TEXT PRIMARY KEY COLLATE NOCASE,
        password_hash TEXT,
        role TEXT NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
        created_at TEXT NOT NULL,
        last_login_at TEXT,
        disabled INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE share_links (
        id TEXT PRIMARY KEY,
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        token_hash TEXT NOT NULL UNIQUE,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT,
        revoked_by TEXT
    );
    CREATE INDEX share_links_debate ON share_links (debate_id, created_at);
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        debate_id TEXT,
        outcome TEXT NOT NULL DEFAULT 'ok',
        detail TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX audit_at ON audit (at DESC, id DESC);
    ALTER TABLE debates ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
    CREATE INDEX debates_creator ON debates (created_by, created_at);
    """,
]

LATEST = len(MIGRATIONS)
