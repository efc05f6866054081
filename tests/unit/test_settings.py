"""Settings: keys from the environment first, then `.env`; the generated storage secret; when sign-in
is on; which addresses are loopback; which proxies may assert an identity."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from webapp.settings import SECRET_FILE_NAME, PriceOverride, Settings, is_loopback, read_env_var, storage_secret


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ROSTRUM_* variable and no `.env` from whoever runs the tests."""
    for name in list(os.environ):
        if name.startswith("ROSTRUM_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)


def test_env_wins_then_dotenv_and_dotenv_changes_are_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROSTRUM_TEST_KEY", raising=False)
    assert read_env_var("ROSTRUM_TEST_KEY") is None  # no .env at all
    env = tmp_path / ".env"
    env.write_text('ROSTRUM_TEST_KEY="from-file-1"\n', encoding="utf-8")
    assert read_env_var("ROSTRUM_TEST_KEY") == "from-file-1"
    env.write_text("export ROSTRUM_TEST_KEY=from-file-2\n", encoding="utf-8")
    os.utime(env, ns=(env.stat().st_atime_ns, env.stat().st_mtime_ns + 1_000_000))  # a later write
    assert read_env_var("ROSTRUM_TEST_KEY") == "from-file-2"
    monkeypatch.setenv("ROSTRUM_TEST_KEY", "from-environment")
    assert read_env_var("ROSTRUM_TEST_KEY") == "from-environment"


def test_defaults_serve_only_this_machine_without_sign_in() -> None:
    s = Settings()  # the real sources: environment (cleared) and a `.env` (none here)
    assert s.host == "127.0.0.1" and s.auth == "auto" and s.loopback and not s.auth_enabled
    assert s.storage_secret is None and s.session_hours == 12 and s.auth_header_role == "viewer"
    assert s.auth_problem() is None


# --- the storage secret ---------------------------------------------------------------------


def test_the_storage_secret_is_generated_once_beside_the_database_with_mode_0600(tmp_path: Path) -> None:
    s = settings(db=tmp_path / "data" / "rostrum.sqlite3")
    path = tmp_path / "data" / SECRET_FILE_NAME
    assert not path.exists()
    first = storage_secret(s)
    assert path.exists() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text(encoding="utf-8").strip() == first
    assert len(first) >= 40 and first != "rostrum-local"
    assert storage_secret(s) == first  # reused, so sign-ins survive a restart
    assert storage_secret(settings(db=tmp_path / "data" / "other.sqlite3")) == first  # one per directory
    assert storage_secret(settings(db=tmp_path / "elsewhere" / "db.sqlite3")) != first  # never a constant


def test_an_empty_secret_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / SECRET_FILE_NAME
    path.write_text("", encoding="utf-8")
    secret = storage_secret(settings(db=tmp_path / "db.sqlite3"))
    assert secret and path.read_text(encoding="utf-8").strip() == secret
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_rostrum_storage_secret_wins_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_STORAGE_SECRET", "from-the-environment")
    s = Settings(_env_file=None, db=tmp_path / "db.sqlite3")
    assert storage_secret(s) == "from-the-environment"
    assert not (tmp_path / SECRET_FILE_NAME).exists()


# --- when sign-in is on ---------------------------------------------------------------------


@pytest.mark.parametrize(("auth", "host", "header", "enabled"), [
    ("auto", "127.0.0.1", None, False),
    ("auto", "localhost", None, False),
    ("auto", "::1", None, False),
    ("auto", "0.0.0.0", None, True),
    ("auto", "192.168.1.5", None, True),
    ("auto", "127.0.0.1", "X-Forwarded-Email", True),  # a proxy on this machine still means hosted
    ("on", "127.0.0.1", None, True),
    ("on", "0.0.0.0", None, True),
    ("off", "127.0.0.1", None, False),
    ("off", "0.0.0.0", None, False),  # (refused at start: see auth_problem)
])
def test_auth_enabled(auth: str, host: str, header: str | None, enabled: bool) -> None:
    assert settings(auth=auth, host=host, auth_header=header).auth_enabled is enabled


def test_auth_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_HOST", "0.0.0.0")
    assert Settings(_env_file=None).auth_enabled
    monkeypatch.setenv("ROSTRUM_AUTH", "off")
    assert not Settings(_env_file=None).auth_enabled
    monkeypatch.setenv("ROSTRUM_AUTH", "sometimes")
    with pytest.raises(ValidationError, match="auth"):
        Settings(_env_file=None)


def test_auth_problem_refuses_sign_in_off_on_a_public_address_and_an_untrusted_header() -> None:
    problem = settings(auth="off", host="0.0.0.0").auth_problem()
    assert problem is not None and "ROSTRUM_AUTH=off" in problem and "ROSTRUM_HOST=0.0.0.0" in problem
    assert settings(auth="off", host="127.0.0.1").auth_problem() is None
    assert settings(auth="on", host="0.0.0.0").auth_problem() is None
    problem = settings(auth_header="X-Forwarded-Email").auth_problem()
    assert problem is not None and "ROSTRUM_TRUSTED_PROXIES" in problem
    assert settings(auth_header="X-Forwarded-Email", trusted_proxies="127.0.0.1").auth_problem() is None
    assert settings(auth_header="   ").auth_header is None  # a blank header setting is no header


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True), ("LOCALHOST", True),
    ("127.0.0.2", True), ("0.0.0.0", False), ("::", False), ("192.168.1.5", False), ("example.com", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    assert settings(host=host).loopback is loopback


# --- trusted proxies ------------------------------------------------------------------------


def test_trusts_single_addresses_and_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_TRUSTED_PROXIES", " 127.0.0.1, 10.0.0.0/8 ,fd00::/8,")
    s = Settings(_env_file=None)
    assert s.trusted_proxies == ["127.0.0.1", "10.0.0.0/8", "fd00::/8"]
    assert s.trusts("127.0.0.1") and s.trusts("10.0.0.1") and s.trusts("10.255.3.4") and s.trusts("fd00::1")
    assert not s.trusts("127.0.0.2") and not s.trusts("11.0.0.1") and not s.trusts("192.168.1.5")
    assert not s.trusts("::1") and not s.trusts(None) and not s.trusts("") and not s.trusts("proxy.internal")


def test_nothing_is_trusted_without_a_list() -> None:
    s = settings()
    assert s.trusted_proxies == [] and not s.trusts("127.0.0.1")


@pytest.mark.parametrize("value", ["proxy.internal", "10.0.0.0/8,nonsense", "10.0.0.300", "10.0.0.0/40"])
def test_an_invalid_trusted_proxy_is_a_clear_validation_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ROSTRUM_TRUSTED_PROXIES", value)
    with pytest.raises(ValidationError) as exc:
        Settings(_env_file=None)
    (error,) = exc.value.errors()
    assert error["loc"] == ("trusted_proxies",)
    bad = next(part for part in value.split(",") if part != "10.0.0.0/8")
    assert f"{bad!r} is not an IP address or network" in error["msg"]


# --- price overrides are data, not settings of their own ----------------------------------------


def test_unrelated_environment_variables_do_not_change_price_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INPUT_PER_MTOK", "99")  # as a BaseSettings, PriceOverride read these
    monkeypatch.setenv("OUTPUT_PER_MTOK", "77")
    monkeypatch.setenv("ROSTRUM_PRICE_OVERRIDES", '{"llama3.2": {"input_per_mtok": 0.5}, "mine": {}}')
    overrides = Settings(_env_file=None).price_overrides
    assert (overrides["llama3.2"].input_per_mtok, overrides["llama3.2"].output_per_mtok) == (0.5, 0.0)
    assert (overrides["mine"].input_per_mtok, overrides["mine"].output_per_mtok) == (0.0, 0.0)
    assert PriceOverride().input_per_mtok == 0.0


def test_a_misspelt_or_negative_price_override_is_refused() -> None:
    with pytest.raises(ValidationError):
        settings(price_overrides={"m": {"input_per_mtoken": 1.0}})  # would have priced the model at $0
    with pytest.raises(ValidationError):
        settings(price_overrides={"m": {"input_per_mtok": -1.0}})
