"""`python main.py` refuses unsafe hosting settings before serving, and tells how to create the first
admin when sign-in is on and there is none. The server runs as a real subprocess (as in the e2e
suite: no `PYTEST_CURRENT_TEST`, no `NICEGUI_*`, its own working directory and database)."""

from __future__ import annotations

import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
CREATE_ADMIN = "    python -m webapp users add NAME --role admin"
NO_ADMIN = "rostrum: sign-in is on and there is no admin account yet. Create one with:"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(workdir: Path, **settings: str) -> dict[str, str]:
    env = child_env(("NICEGUI_", "ROSTRUM_", "OPENAI_", "ANTHROPIC_"),
                    ROSTRUM_DB=str(workdir / "data" / "rostrum.sqlite3"), ROSTRUM_PORT=str(free_port()),
                    PYTHONUNBUFFERED="1", **settings)
    return env


def start(workdir: Path, merge_output: bool = False, **settings: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(ROOT / "main.py")], cwd=workdir, env=server_env(workdir, **settings),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_output else subprocess.PIPE,
                            text=True)


class Lines:
    """The lines a stream produces, read by a thread so that waiting for one keeps a deadline."""

    def __init__(self, stream) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in iter(stream.readline, ""):
            self.queue.put(line.rstrip("\n"))
        self.queue.put(None)

    def until(self, wanted: str, timeout: float = 60) -> list[str]:
        """Every line up to and including the first one containing `wanted`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{wanted!r} not seen within {timeout} s:\n" + "\n".join(self.seen)) from None
            if line is None:
                raise AssertionError(f"the output ended before {wanted!r}:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if wanted in line:
                return self.seen


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def test_sign_in_off_on_a_public_address_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "main.py")], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env=server_env(tmp_path, ROSTRUM_HOST="0.0.0.0", ROSTRUM_AUTH="off"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("rostrum: refusing to start: ")
    assert "ROSTRUM_AUTH=off" in done.stderr and "ROSTRUM_HOST=0.0.0.0" in done.stderr
    assert "ROSTRUM_HOST=127.0.0.1" in done.stderr  # and says how to fix it
    assert not (tmp_path / "data" / "rostrum.sqlite3").exists()  # refused before touching anything


def test_an_identity_header_without_trusted_proxies_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "main.py")], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env=server_env(tmp_path, ROSTRUM_AUTH_HEADER="X-Forwarded-Email"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("rostrum: refusing to start: ")
    assert "ROSTRUM_AUTH_HEADER=X-Forwarded-Email" in done.stderr and "ROSTRUM_TRUSTED_PROXIES" in done.stderr


def test_an_invalid_trusted_proxy_list_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "main.py")], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env=server_env(tmp_path, ROSTRUM_AUTH_HEADER="X-Forwarded-Email",
                                                     ROSTRUM_TRUSTED_PROXIES="127.0.0.1,proxy.internal"))
    assert done.returncode != 0
    assert "trusted_proxies" in done.stderr.lower()
    assert "'proxy.internal' is not an IP address or network" in done.stderr


@pytest.mark.parametrize("settings", [
    {"ROSTRUM_AUTH": "on", "ROSTRUM_HOST": "127.0.0.1"},
    {"ROSTRUM_HOST": "0.0.0.0"},  # auto: a public address turns sign-in on
    {"ROSTRUM_HOST": "127.0.0.1", "ROSTRUM_AUTH_HEADER": "X-Forwarded-Email", "ROSTRUM_TRUSTED_PROXIES": "127.0.0.1"},
], ids=["on", "auto-public", "auto-proxy-header"])
def test_sign_in_without_an_admin_says_how_to_create_one(
    tmp_path: Path, processes: list[subprocess.Popen[str]], settings: dict[str, str]
) -> None:
    process = start(tmp_path, **settings)
    processes.append(process)
    lines = Lines(process.stderr).until(CREATE_ADMIN)
    assert CREATE_ADMIN in lines  # the whole line, exactly: it can be copied
    assert lines[lines.index(CREATE_ADMIN) - 1] == NO_ADMIN
    assert process.poll() is None  # a warning, not a refusal: the server goes on to serve


def test_no_admin_hint_once_an_admin_exists_or_sign_in_is_off(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    env = server_env(tmp_path)
    added = subprocess.run([sys.executable, "-m", "webapp", "users", "add", "ada", "--role", "admin"],
                           input="a long enough password\n", capture_output=True, text=True, cwd=tmp_path,
                           env={**env, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert added.returncode == 0, added.stderr
    # Sign-in on with the admin's database; then a fresh database on loopback (sign-in off: no admin needed).
    for workdir, settings in ((tmp_path, {"ROSTRUM_AUTH": "on"}), (tmp_path / "local", {})):
        workdir.mkdir(exist_ok=True)
        # stdout and stderr in one pipe, in order: the start-up checks print before NiceGUI's banner.
        process = start(workdir, merge_output=True, **settings)
        processes.append(process)
        lines = Lines(process.stdout).until("NiceGUI ready to go")
        assert not any("no admin account" in line or "users add" in line for line in lines), lines
        process.terminate()
        process.wait(10)
