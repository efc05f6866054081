"""A real PostgreSQL for the tests: one server per test session, one fresh database per test.

The server is Debian's `postgresql` 15 (`make test` installs it, like Chromium): `initdb` into a temporary
directory owned by the `postgres` user (initdb refuses to run as root), then `pg_ctl start` on a free
loopback port with `fsync=off` (the tests need no durability, and it makes them fast). A test that asks
for `pg_dsn` gets an empty, just-created database; each is made from a template database that holds
nothing, which PostgreSQL copies in milliseconds.

Where the binaries are missing and cannot be installed, the tests that need the server are skipped,
saying why; nothing else is.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.services import unavailable
from webapp.store import Store
from webapp.store.postgres import PostgresStore
from webapp.store.protocol import EventStore

PG_BIN = Path(os.environ.get("ROSTRUM_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_USER = "postgres"
EMPTY_TEMPLATE = "rostrum_empty"  # what `pg_dsn` copies: a database as an administrator creates it
MIGRATED_TEMPLATE = "rostrum_migrated"  # what the store fixtures copy: the current schema, no rows


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    """`args` run as the `postgres` user when this process is root (initdb and postgres refuse root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", PG_USER, "--", *args]
    return args


def _unavailable() -> str | None:
    """Why no test server can be started here, or None."""
    if not (PG_BIN / "initdb").exists():
        return f"PostgreSQL 15 is not installed ({PG_BIN / 'initdb'} is missing): run `make postgres`"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(PG_USER)
        except KeyError:
            return f"no {PG_USER!r} user to run PostgreSQL as (root may not)"
        if shutil.which("runuser") is None:
            return "runuser is missing: cannot start PostgreSQL as the postgres user"
    return None


@contextlib.contextmanager
def running_server(*, durable: bool = False) -> Iterator[str]:
    """A throwaway PostgreSQL server in a temporary directory, on a free loopback port; yields the DSN of
    its `postgres` database, and stops it (and removes its files) afterwards. `durable`: PostgreSQL's
    default settings (`fsync`, `synchronous_commit`, `full_page_writes` on: what the benchmarks measure);
    otherwise they are off, which the tests need no durability from. Check `_unavailable()` first."""
    root = Path(tempfile.mkdtemp(prefix="rostrum-pg-"))
    data = root / "data"
    data.mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam(PG_USER)
        for path in (root, data):
            os.chown(path, user.pw_uid, user.pw_gid)
    port = _free_port()
    log = root / "server.log"
    options = "" if durable else " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    try:
        subprocess.run(
            _as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", PG_USER, "--auth=trust", "-E", "UTF8",
                          "--locale=C.UTF-8", "--no-sync"]),
            check=True, capture_output=True, timeout=120,
        )
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o",
                          f"-p {port} -k {root} -c listen_addresses=127.0.0.1{options}", "start"]),
            check=True, capture_output=True, timeout=120,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        details = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        stderr = getattr(exc, "stderr", b"") or b""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"could not start the test PostgreSQL: {exc}\n{stderr.decode(errors='replace')}\n"
                           f"{details}") from exc
    try:
        yield f"postgresql://{PG_USER}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                       capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def create_database(admin_dsn: str, name: str) -> str:
    """Create the database `name` on the server of `admin_dsn` (with psql: no event loop needed);
    returns its DSN."""
    host_port = admin_dsn.split("@", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    subprocess.run(
        [str(PG_BIN / "psql"), "-h", host, "-p", port, "-U", PG_USER, "-d", "postgres", "-q",
         "-c", f"CREATE DATABASE {name}"],
        check=True, capture_output=True, timeout=60,
    )
    return _with_database(admin_dsn, name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server for this test session; yields the DSN of its (empty) template database."""
    reason = _unavailable()
    if reason is not None:
        unavailable("postgres", reason)
    with running_server() as admin:
        server = create_database(admin, EMPTY_TEMPLATE)
        create_database(admin, MIGRATED_TEMPLATE)
        # Migrated once here, copied for each store test (the tests' event loop may be running: a thread).
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, _migrate(_with_database(server, MIGRATED_TEMPLATE))).result()
        yield server


def _with_database(dsn: str, name: str) -> str:
    return dsn.rsplit("/", 1)[0] + "/" + name


async def _migrate(dsn: str) -> None:
    store = await PostgresStore.open(dsn)
    await store.close()


@contextlib.asynccontextmanager
async def fresh_database(server: str, migrated: bool = False) -> AsyncIterator[str]:
    """A new database on `server` (the `pg_server` DSN) for the block, empty or (`migrated`) with the
    current schema; dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    template = MIGRATED_TEMPLATE if migrated else EMPTY_TEMPLATE
    admin = await asyncpg.connect(_with_database(server, "postgres"))
    try:
        await admin.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    finally:
        await admin.close()
    try:
        yield _with_database(server, name)
    finally:
        admin = await asyncpg.connect(_with_database(server, "postgres"))
        try:
            await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        finally:
            await admin.close()


@pytest.fixture
async def pg_dsn(pg_server: str) -> AsyncIterator[str]:
    """The DSN of a fresh, empty database of the session's server (dropped after the test)."""
    async with fresh_database(pg_server) as dsn:
        yield dsn


STORE_KINDS = ("sqlite", "postgresql")


@contextlib.asynccontextmanager
async def opened_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    """A new, empty store of `kind` (one of `STORE_KINDS`), closed (and its database dropped) afterwards."""
    if kind == "sqlite":
        store: EventStore = await Store.open(tmp_path / "db.sqlite3")
        try:
            yield store
        finally:
            await store.close()
        return
    server = request.getfixturevalue("pg_server")  # skips the test where PostgreSQL cannot be had
    async with fresh_database(server, migrated=True) as dsn:
        store = await PostgresStore.open(dsn)
        try:
            yield store
        finally:
            await store.close()


@pytest.fixture(params=STORE_KINDS)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventStore]:
    """Each store in turn, new and empty: the SQLite file store and the PostgreSQL store. The tests that
    use it are the store conformance suite: what they assert holds for both."""
    async with opened_store(request.param, request, tmp_path) as store:
        yield store
