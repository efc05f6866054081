"""Named, forward-only schema migrations of the PostgreSQL store. Never edit a released migration: add
a new one at the END of the list, with a unique name.

The same scheme as SQLite's (`webapp.store.migrations`): a database records the names it has applied in
`_rostrum_migrations`, and opening it applies, in list order, every migration it has not applied yet; a
database with a name this code does not know was migrated by a newer Rostrum and is refused
(`StoreTooNew`). The steps mirror SQLite's one for one (same names), written in PostgreSQL's SQL: text
columns hold the same ISO timestamps and JSON text as SQLite's, so the two stores answer the same
queries with the same values, and `rowid` is a column here (SQLite's implicit row number) so that
"in insertion order" means the same in both.

Everything happens in one transaction that first takes an advisory lock: processes opening a fresh
database together wait for each other, and only the first migrates (DDL is transactional here).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from webapp.models import utcnow
from webapp.store.errors import StoreTooNew
from webapp.store.sqlite_schema import Migration

# Any fixed number: the advisory lock the migrating process holds ("rostrum" in ASCII, as a bigint).
MIGRATION_LOCK = 0x726F737472756D

# The digest of a verdict event's data, as SQLite's `VERDICT_DIGEST` makes it: the same keys and values
# (JSON text; key order and spacing may differ, readers parse it). Text that is not JSON has no digest
# (SQLite: `json_valid`), so `rostrum_jsonb` reads it as NULL instead of failing the insert.
DIGEST_FUNCTIONS = """
CREATE FUNCTION rostrum_jsonb(doc TEXT) RETURNS JSONB LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
    RETURN doc::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$fn$;
CREATE FUNCTION rostrum_verdict_digest(data JSONB) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $fn$
    SELECT jsonb_build_object(
        'available', coalesce(v -> 'available' NOT IN ('false'::jsonb, '0'::jsonb), true),
        'winner', coalesce(v -> 'winner', 'null'::jsonb),
        'word_counts', coalesce(nullif(v -> 'word_counts', 'null'::jsonb), '{}'::jsonb),
        'undecided_judges', coalesce(nullif(v -> 'undecided_judges', 'null'::jsonb), '[]'::jsonb),
        'synthesis', coalesce(v -> 'synthesis', 'null'::jsonb) <> 'null'::jsonb,
        'rulings', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'judge', coalesce(r -> 'judge', 'null'::jsonb), 'winner', coalesce(r -> 'winner', 'null'::jsonb),
                'error', coalesce(r -> 'error', 'null'::jsonb) <> 'null'::jsonb,
                'flipped', coalesce(r -> 'flipped' IN ('true'::jsonb, '1'::jsonb), false)) ORDER BY n)
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(v -> 'rulings') = 'array' THEN v -> 'rulings'
                                      ELSE '[]'::jsonb END) WITH ORDINALITY AS x(r, n)), '[]'::jsonb)
    )::text
    FROM (SELECT CASE WHEN jsonb_typeof(data -> 'verdict') = 'object' THEN data -> 'verdict'
                 ELSE '{}'::jsonb END AS v) AS verdict
$fn$;
CREATE FUNCTION rostrum_keep_verdict_digest() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    parsed JSONB := rostrum_jsonb(NEW.data);
BEGIN
    IF parsed IS NOT NULL THEN
        INSERT INTO verdict_digests (debate_id, seq, digest)
        VALUES (NEW.debate_id, NEW.seq, rostrum_verdict_digest(parsed))
        ON CONFLICT (debate_id) DO UPDATE SET seq = excluded.seq, digest = excluded.digest
        WHERE excluded.seq > verdict_digests.seq;
    END IF;
    RETURN NULL;
END
$fn$;
"""
# Every debate's last verdict, digested (the back-fill, and a rebuild after the table was emptied).
DIGEST_BACKFILL = """INSERT INTO verdict_digests (debate_id, seq, digest)
    SELECT e.debate_id, e.seq, rostrum_verdict_digest(rostrum_jsonb(e.data)) FROM events e
    WHERE e.kind = 'verdict' AND rostrum_jsonb(e.data) IS NOT NULL
    AND e.seq = (SELECT max(seq) FROM events WHERE debate_id = e.debate_id AND kind = 'verdict');"""

MIGRATIONS: list[Migration] = [
    Migration("001_debates_and_events", """
    CREATE TABLE debates (
        rowid BIGSERIAL UNIQUE,
        id TEXT PRIMARY KEY,
        topic TEXT NOT NULL,
        format TEXT NOT NULL,
        config TEXT NOT NULL,
        status TEXT NOT NULL,
        phase TEXT,
        round INTEGER NOT NULL DEFAULT 0,
        total_rounds INTEGER NOT NULL DEFAULT 0,
        cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
        turn_count INTEGER NOT NULL DEFAULT 0,
        participants TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE events (
        rowid BIGSERIAL UNIQUE,
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
    """),
    Migration("002_status_index_and_unpriced", """
    CREATE INDEX debates_status ON debates (status, created_at DESC);
    ALTER TABLE debates ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
    """),
    Migration("003_topic_search", """
    ALTER TABLE debates ADD COLUMN topic_search TEXT NOT NULL DEFAULT '';
    UPDATE debates SET topic_search = lower(topic);
    """),
    Migration("004_interrupted", """
    ALTER TABLE debates ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
    UPDATE debates SET interrupted = 1 WHERE status = 'paused' AND coalesce((
        SELECT e.data::jsonb #>> '{params,interrupted}' FROM events e
        WHERE e.debate_id = debates.id AND e.kind = 'transition' ORDER BY e.seq DESC LIMIT 1), '') IN ('true', '1');
    """),
    # Usernames compare without case (SQLite: COLLATE NOCASE): citext, a trusted extension since 13.
    Migration("005_team_access", """
    CREATE EXTENSION IF NOT EXISTS citext;
    CREATE TABLE users (
        username CITEXT PRIMARY KEY,
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
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
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
    """),
    Migration("006_debate_series", """
    CREATE INDEX debates_series ON debates ((config::jsonb ->> 'series'));
    """),
    Migration("007_verdict_events", """
    CREATE INDEX events_verdicts ON events (at) WHERE kind = 'verdict';
    """),
    Migration("008_library", """
    CREATE TABLE library (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('profile', 'template')),
        name CITEXT NOT NULL,
        data TEXT NOT NULL,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (kind, name)
    );
    """),
    Migration("009_tournaments", """
    CREATE TABLE tournaments (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        spec TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'planned',
        stop_reason TEXT,
        created_by TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        owner TEXT,
        lease_until TEXT
    );
    CREATE INDEX tournaments_created ON tournaments (created_at DESC);
    CREATE UNIQUE INDEX debates_tournament_slot ON debates (
        (config::jsonb ->> 'tournament'), (config::jsonb ->> 'tournament_slot'))
        WHERE (config::jsonb ->> 'tournament') IS NOT NULL;
    """),
    # The digest of each debate's last verdict, kept by a trigger as SQLite's is (same JSON; see
    # `webapp.store.sqlite_schema.VERDICT_DIGEST`), and back-filled from the stored verdicts.
    Migration("010_verdict_digests", f"""
    CREATE TABLE verdict_digests (
        debate_id TEXT PRIMARY KEY REFERENCES debates(id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        digest TEXT NOT NULL
    );
    {DIGEST_FUNCTIONS}
    CREATE TRIGGER verdict_digest AFTER INSERT ON events FOR EACH ROW WHEN (NEW.kind = 'verdict')
        EXECUTE FUNCTION rostrum_keep_verdict_digest();
    {DIGEST_BACKFILL}
    """),
    # Debate workers (`python -m webapp worker`): who runs each debate, until when (a lease its worker
    # renews), and the jobs web processes leave for workers ("run debate X", a person's command) with
    # their outcome. Times are seconds since the epoch, as each worker's clock reads them.
    Migration("011_worker_leases", """
    CREATE TABLE debate_leases (
        debate_id TEXT PRIMARY KEY REFERENCES debates(id) ON DELETE CASCADE,
        owner TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE worker_jobs (
        id TEXT PRIMARY KEY,
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        args TEXT NOT NULL DEFAULT '{}',
        actor TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        done_at DOUBLE PRECISION,
        ok INTEGER,
        message TEXT
    );
    CREATE INDEX worker_jobs_pending ON worker_jobs(created_at) WHERE done_at IS NULL;
    """),
    # Endpoints admins registered in Settings (`webapp.store.endpoints`): a name operators pick, the base
    # URL, and the variable whose key goes to it and nowhere else. `name_key` is the name without case.
    Migration("012_endpoints", """
    CREATE TABLE endpoints (
        name_key TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        base_url TEXT NOT NULL,
        key_env TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    """),
    # Sign-in state shared by every web process (`webapp.store.sign_ins`): browser sessions (the cookie
    # holds a token whose digest is `token_hash`; `ticket_hash` is the one-time ticket that turns a checked
    # password into a session, bound to the browser that asked), so sign-out, a new password or role end
    # them everywhere; and the sign-in throttle's counters per username and per address (seconds since the
    # epoch), pruned by age.
    Migration("013_login_throttle", """
    CREATE TABLE login_sessions (
        id TEXT PRIMARY KEY,
        username CITEXT NOT NULL,
        token_hash TEXT UNIQUE,
        ticket_hash TEXT UNIQUE,
        browser TEXT NOT NULL DEFAULT '',
        address TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        ended_at TEXT,
        ended_why TEXT
    );
    CREATE INDEX login_sessions_user ON login_sessions (username) WHERE ended_at IS NULL;
    CREATE INDEX login_sessions_expiry ON login_sessions (expires_at);
    CREATE TABLE login_throttle (
        key TEXT PRIMARY KEY,
        attempts INTEGER NOT NULL,
        last_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX login_throttle_last ON login_throttle (last_at);
    """),
    # Personal API tokens (`webapp/access/tokens.py`): only a SHA-256 digest of each token is kept, with
    # its last four characters so people can tell their tokens apart; a token acts with the lesser of its
    # own role and its user's role at the time of each request.
    Migration("014_api_tokens", """
    CREATE TABLE api_tokens (
        id TEXT PRIMARY KEY,
        username TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        role TEXT NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
        token_hash TEXT NOT NULL UNIQUE,
        suffix TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        last_used_at TEXT,
        revoked_at TEXT,
        revoked_by TEXT
    );
    CREATE INDEX api_tokens_user ON api_tokens (username, created_at);
    """),
    # Webhooks: the same tables as SQLite's (see `webapp.store.migrations`).
    Migration("016_webhooks", """
    CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        events TEXT NOT NULL,
        secret TEXT NOT NULL,
        format TEXT NOT NULL DEFAULT 'json' CHECK (format IN ('json', 'slack')),
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
        event TEXT NOT NULL,
        event_key TEXT NOT NULL,
        subject TEXT NOT NULL DEFAULT '',
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at DOUBLE PRECISION NOT NULL,
        next_attempt_at DOUBLE PRECISION NOT NULL,
        give_up_at DOUBLE PRECISION NOT NULL,
        lease_owner TEXT,
        lease_until DOUBLE PRECISION,
        last_attempt_at DOUBLE PRECISION,
        last_status INTEGER,
        last_error TEXT,
        delivered_at DOUBLE PRECISION,
        UNIQUE (endpoint_id, event_key)
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at DESC);
    """),
    # The audience's votes (one per person per stage: the key), people's verdicts (one per person per
    # debate) and operators' changes to when a debate's "after" vote closes (`webapp.store.audience`).
    Migration("018_audience", """
    CREATE TABLE audience_votes (
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        stage TEXT NOT NULL CHECK (stage IN ('before', 'after')),
        voter TEXT NOT NULL,
        choice TEXT NOT NULL CHECK (choice IN ('for', 'against', 'undecided')),
        at TEXT NOT NULL,
        PRIMARY KEY (debate_id, stage, voter)
    );
    CREATE TABLE human_verdicts (
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        voter TEXT NOT NULL,
        winner TEXT,
        scores TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        at TEXT NOT NULL,
        PRIMARY KEY (debate_id, voter)
    );
    CREATE TABLE audience_windows (
        debate_id TEXT PRIMARY KEY REFERENCES debates(id) ON DELETE CASCADE,
        after_closes_at DOUBLE PRECISION NOT NULL,
        changed_by TEXT NOT NULL
    );
    """),
    # As in SQLite: comments and reactions on finished turns (`webapp.store.comments`), and whether a share
    # link lets its holders comment (links made before default to no). `person` is who counts once (a user, a share-link
    # holder's browser session, a browser); `author` is the name shown. A deleted comment keeps its row
    # (`deleted_at`, `deleted_by`) for the audit trail and is shown to nobody. Times: seconds since the epoch
    # (the per-person rate limit compares them).
    Migration("019_comments", """
    CREATE TABLE comments (
        id TEXT PRIMARY KEY,
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        turn_key TEXT NOT NULL,
        person TEXT NOT NULL,
        author TEXT NOT NULL,
        body TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        deleted_at DOUBLE PRECISION,
        deleted_by TEXT
    );
    CREATE INDEX comments_debate ON comments (debate_id, at);
    CREATE INDEX comments_person ON comments (person, at);
    CREATE TABLE reactions (
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        turn_key TEXT NOT NULL,
        person TEXT NOT NULL,
        emoji TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (debate_id, turn_key, person, emoji)
    );
    ALTER TABLE share_links ADD COLUMN comments INTEGER NOT NULL DEFAULT 0;
    """),
]

NAMES: tuple[str, ...] = tuple(m.name for m in MIGRATIONS)
assert len(set(NAMES)) == len(NAMES), "migration names must be unique"

RECORD_TABLE = """CREATE TABLE IF NOT EXISTS _rostrum_migrations (
    position BIGSERIAL, name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"""


async def applied_migrations(conn: Any) -> list[str]:
    """The names recorded in a database, in the order applied (empty for a new database)."""
    exists = await conn.fetchval("SELECT to_regclass('_rostrum_migrations') IS NOT NULL")
    if not exists:
        return []
    return [r[0] for r in await conn.fetch("SELECT name FROM _rostrum_migrations ORDER BY position")]


def _refuse_unknown(recorded: Iterable[str], where: str) -> None:
    unknown = [name for name in recorded if name not in NAMES]
    if unknown:
        raise StoreTooNew(f"{where}: the database schema is newer than this Rostrum: it has migration(s) "
                          f"{', '.join(unknown)} that this version does not know; it was left untouched")


async def migrate(conn: Any, only: Iterable[str] | None = None, where: str = "database") -> list[str]:
    """Apply every migration this database has not applied yet (or only those named in `only`: tests
    use it to build an older database), in one transaction; returns the names applied. `conn` is an
    asyncpg connection outside any transaction. Raises `StoreTooNew` for a database a newer Rostrum
    migrated, changing nothing."""
    wanted = None if only is None else set(only)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        done = await applied_migrations(conn)
        _refuse_unknown(done, where)
        pending = [m for m in MIGRATIONS if m.name not in done and (wanted is None or m.name in wanted)]
        if not pending:
            return []
        await conn.execute(RECORD_TABLE)
        now = utcnow().isoformat()
        for migration in pending:
            await conn.execute(migration.sql)  # a script: the simple query protocol runs it whole
            await conn.execute("INSERT INTO _rostrum_migrations (name, applied_at) VALUES ($1, $2)",
                               migration.name, now)
    return [m.name for m in pending]
