"""The SQLite store's schema, as its named, forward-only migrations, in the order they apply. Never edit a
released migration: add a new one (with a name of its own; `webapp.store.migrations` records and applies
them, and `webapp.store.pg_migrations` mirrors each, name for name, in PostgreSQL's SQL).

Each step says why its tables, columns or indexes exist; the verdict digest (`VERDICT_DIGEST`) is here
because migration 010 builds its trigger and back-fill from it and the dialect rebuilds the table with it.
"""

from __future__ import annotations

from dataclasses import dataclass

# The digest of a verdict event's data (`%` the column holding it): the parts of the verdict a leaderboard
# result needs, as a small JSON object (never change it: migration 010 uses it; add a new migration).
VERDICT_DIGEST = """json_object(
    'available', json(CASE WHEN json_extract(%(data)s, '$.verdict.available') = 0 THEN 'false' ELSE 'true' END),
    'winner', json_extract(%(data)s, '$.verdict.winner'),
    'word_counts', json(coalesce(json_extract(%(data)s, '$.verdict.word_counts'), '{}')),
    'undecided_judges', json(coalesce(json_extract(%(data)s, '$.verdict.undecided_judges'), '[]')),
    'synthesis', json(CASE WHEN json_extract(%(data)s, '$.verdict.synthesis') IS NULL THEN 'false' ELSE 'true' END),
    'rulings', (SELECT json_group_array(json_object(
        'judge', json_extract(r.value, '$.judge'), 'winner', json_extract(r.value, '$.winner'),
        'error', json(CASE WHEN json_extract(r.value, '$.error') IS NULL THEN 'false' ELSE 'true' END),
        'flipped', json(CASE json_extract(r.value, '$.flipped') WHEN 1 THEN 'true' ELSE 'false' END)))
        FROM json_each(%(data)s, '$.verdict.rulings') r))"""
# Every debate's last verdict, digested (the back-fill, and a rebuild after the table was emptied).
DIGEST_BACKFILL = f"""INSERT INTO verdict_digests (debate_id, seq, digest)
    SELECT e.debate_id, e.seq, {VERDICT_DIGEST % {"data": "e.data"}} FROM events e
    WHERE e.kind = 'verdict' AND json_valid(e.data)
    AND e.seq = (SELECT max(seq) FROM events WHERE debate_id = e.debate_id AND kind = 'verdict');"""


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str


MIGRATIONS: list[Migration] = [
    # 1: debates (a projection kept for listing) and the append-only event log (the truth).
    Migration("001_debates_and_events", """
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
    """),
    # 2: listing by status and whether any turn was unpriced.
    Migration("002_status_index_and_unpriced", """
    CREATE INDEX debates_status ON debates (status, created_at DESC);
    ALTER TABLE debates ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
    """),
    # 3: a lower-cased topic column so topic search does not scan JSON.
    Migration("003_topic_search", """
    ALTER TABLE debates ADD COLUMN topic_search TEXT NOT NULL DEFAULT '';
    UPDATE debates SET topic_search = lower(topic);
    """),
    # 4: whether a paused debate was interrupted by a restart (the dashboard shows it), backfilled
    # from each debate's last transition.
    Migration("004_interrupted", """
    ALTER TABLE debates ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
    UPDATE debates SET interrupted = 1 WHERE status = 'paused' AND coalesce((
        SELECT json_extract(e.data, '$.params.interrupted') FROM events e
        WHERE e.debate_id = debates.id AND e.kind = 'transition' ORDER BY e.seq DESC LIMIT 1), 0) = 1;
    """),
    # 5: team access. Accounts (argon2 hashes; NULL for users known only through a proxy's identity
    # header), read-only share links (only a hash of each token is kept), the audit trail of control
    # actions (no foreign key: the record of a deletion outlives the debate), and who created each debate
    # (per-person daily spending).
    Migration("005_team_access", """
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
    """),
    # Side-swapped rematches form a series (`DebateConfig.series`: the first debate's id); a debate page
    # lists its series, so the config's series id is indexed (an expression index: nothing stored twice).
    Migration("006_debate_series", """
    CREATE INDEX debates_series ON debates (json_extract(config, '$.series'));
    """),
    # Judge health reads every verdict event (and, to know whether its cache is stale, their count, last
    # row and time): a partial index holds just those rows.
    Migration("007_verdict_events", """
    CREATE INDEX events_verdicts ON events (at) WHERE kind = 'verdict';
    """),
    # Saved participant profiles and whole-form templates, shared by the team (`webapp.store.library`):
    # a name is unique per kind whatever its case; `data` is validated JSON and never holds a key.
    Migration("008_library", """
    CREATE TABLE library (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('profile', 'template')),
        name TEXT NOT NULL COLLATE NOCASE,
        data TEXT NOT NULL,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (kind, name)
    );
    """),
    # Tournaments: the plan (a JSON `Tournament`), where it stands, why it stopped, and which process
    # plays it (`owner`, until `lease_until` unless renewed: one player at a time). Its debates are
    # ordinary debates whose config names the tournament and the slot; the unique index is what makes
    # "one debate per slot" hold even when two processes (or a rerun after a crash) try to create one.
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
        json_extract(config, '$.tournament'), json_extract(config, '$.tournament_slot'))
        WHERE json_extract(config, '$.tournament') IS NOT NULL;
    """),
    # The leaderboard rates thousands of debates: parsing each verdict event (reasoning and all) would take
    # seconds, so a trigger keeps a digest of each debate's last verdict (what a result needs: winner,
    # word counts, each ruling's judge, winner, error and flip), back-filled here from the stored events.
    # Derived from the log and rebuildable from it (`webapp.results.records.rebuild_digests`). Data that is
    # not JSON (never written by the store) is skipped, so the trigger can never make an append fail.
    Migration("010_verdict_digests", f"""
    CREATE TABLE verdict_digests (
        debate_id TEXT PRIMARY KEY REFERENCES debates(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        digest TEXT NOT NULL
    );
    CREATE TRIGGER verdict_digest AFTER INSERT ON events WHEN NEW.kind = 'verdict' AND json_valid(NEW.data) BEGIN
        INSERT INTO verdict_digests (debate_id, seq, digest)
        VALUES (NEW.debate_id, NEW.seq, {VERDICT_DIGEST % {"data": "NEW.data"}})
        ON CONFLICT (debate_id) DO UPDATE SET seq = excluded.seq, digest = excluded.digest
        WHERE excluded.seq > verdict_digests.seq;
    END;
    {DIGEST_BACKFILL}
    """),
    # Debate workers (`python -m webapp worker`): who runs each debate, until when (a lease its worker
    # renews), and the jobs web processes leave for workers ("run debate X", a person's command) with
    # their outcome. Times are seconds since the epoch, as each worker's clock reads them.
    Migration("011_worker_leases", """
    CREATE TABLE debate_leases (
        debate_id TEXT PRIMARY KEY REFERENCES debates(id) ON DELETE CASCADE,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    CREATE TABLE worker_jobs (
        id TEXT PRIMARY KEY,
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        args TEXT NOT NULL DEFAULT '{}',
        actor TEXT NOT NULL,
        created_at REAL NOT NULL,
        done_at REAL,
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
        username TEXT NOT NULL COLLATE NOCASE,
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
        last_at REAL NOT NULL
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
    # Webhooks (`webapp.webhooks`): the endpoints admins registered (the signing secret is kept because
    # the sender signs with it; it is shown once and never listed), and the delivery queue and log: one
    # row per endpoint and event (`event_key`: unique per endpoint, so an event is queued once however
    # many processes see it), claimed by a sender with a lease (`lease_owner` until `lease_until`), retried
    # at `next_attempt_at` until `give_up_at`. Times are seconds since the epoch, as leases' are.
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
        created_at REAL NOT NULL,
        next_attempt_at REAL NOT NULL,
        give_up_at REAL NOT NULL,
        lease_owner TEXT,
        lease_until REAL,
        last_attempt_at REAL,
        last_status INTEGER,
        last_error TEXT,
        delivered_at REAL,
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
        after_closes_at REAL NOT NULL,
        changed_by TEXT NOT NULL
    );
    """),
    # Comments and reactions on finished turns (`webapp.store.comments`), and whether a share link lets its
    # holders comment (links made before default to no). `person` is who counts once (a user, a share-link
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
        at REAL NOT NULL,
        deleted_at REAL,
        deleted_by TEXT
    );
    CREATE INDEX comments_debate ON comments (debate_id, at);
    CREATE INDEX comments_person ON comments (person, at);
    CREATE TABLE reactions (
        debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
        turn_key TEXT NOT NULL,
        person TEXT NOT NULL,
        emoji TEXT NOT NULL,
        at REAL NOT NULL,
        PRIMARY KEY (debate_id, turn_key, person, emoji)
    );
    ALTER TABLE share_links ADD COLUMN comments INTEGER NOT NULL DEFAULT 0;
    """),
]
