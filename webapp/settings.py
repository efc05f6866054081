"""Application settings, read from the environment or `.env` with the `ROSTRUM_` prefix.

Provider keys are read from their conventional variables (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …)
and stay in this process: they are never written to the database, logged, or sent to a browser.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from webapp.endpoints import Endpoint, parse_endpoints, read_endpoints_file

AuthMode = Literal["auto", "on", "off"]
FreeUrls = Literal["auto", "on", "off"]
WorkersMode = Literal["local", "external"]
HeaderRole = Literal["admin", "operator", "viewer"]
SECRET_FILE_NAME = ".rostrum-storage-secret"
# A host name for ROSTRUM_IMAGE_HOSTS: no scheme, path, port or wildcard (matched exactly, here and in
# the browser's transcript renderer alike).
HOST_PATTERN = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


class PriceOverride(BaseModel):
    """Price per million tokens for a model that genai-prices does not know (local or custom).

    A plain model, filled only from `ROSTRUM_PRICE_OVERRIDES`: as a `BaseSettings` it read the
    environment itself, and an unrelated `INPUT_PER_MTOK` variable overrode every price."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key would otherwise price a model at $0

    input_per_mtok: float = Field(default=0.0, ge=0)
    output_per_mtok: float = Field(default=0.0, ge=0)


class Settings(BaseSettings):
    """Everything configurable about a Rostrum process."""

    model_config = SettingsConfigDict(env_prefix="ROSTRUM_", env_file=".env", extra="ignore")

    db: Path | str = Field(
        default=Path("data/rostrum.sqlite3"),
        description="SQLite database file, or a postgresql://… URL for the PostgreSQL store",
    )
    redis_url: str | None = Field(
        default=None,
        description="redis://… URL of the live bus between processes (unset: live traffic stays in-process)",
        repr=False,  # it may hold a password
    )
    workers: WorkersMode = Field(
        default="local",
        description="where the web app's debates run: local (in the web process) or external (on "
                    "`python -m webapp worker` processes sharing the database)",
    )
    host: str = Field(default="127.0.0.1", description="address the web app listens on")
    port: int = Field(default=8080, ge=1, le=65535, description="port the web app listens on")
    demo_speed: float | None = Field(
        default=None, ge=0, description="tokens per second for demo models (0 = instant)"
    )
    storage_secret: str | None = Field(
        default=None, description="secret signing browser sessions (default: generated beside the database)"
    )
    auth: AuthMode = Field(default="auto", description="sign-in: auto (on unless bound to loopback), on, off")
    session_hours: float = Field(default=12.0, gt=0, le=24 * 365, description="hours a sign-in lasts")
    auth_header: str | None = Field(
        default=None, description="identity header set by a trusted reverse proxy (e.g. X-Forwarded-Email)"
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="addresses or networks allowed to set the identity header"
    )
    auth_header_role: HeaderRole = Field(default="viewer", description="role of a new user seen in the header")
    user_daily_usd: float | None = Field(
        default=None, ge=0, description="most a non-admin may commit to debates started per day (USD)"
    )
    api_rate_per_minute: int = Field(
        default=60, ge=1, le=100_000, description="HTTP API requests each API token may make per minute"
    )
    after_vote_minutes: float = Field(
        default=10.0, gt=0, le=7 * 24 * 60,
        description="minutes the audience's after vote stays open once a debate ends",
    )
    max_retries: int = Field(default=3, ge=0, le=20, description="retries per debate after errors")
    retry_after_cap: float = Field(default=30.0, ge=0, description="longest Retry-After honoured, seconds")
    # JSON object: {"model-name": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}
    price_overrides: dict[str, PriceOverride] = Field(default_factory=dict)
    reload: bool = Field(default=False, description="auto-reload the web app on code changes (dev)")
    # Comma-separated host names whose images model output may show inline (e.g. `upload.wikimedia.org`),
    # matched exactly; any other image is shown as a link, never fetched.
    image_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="hosts whose images model output may show inline (default: none)"
    )
    # Webhooks: links in deliveries point here; endpoints on this machine or a private network are refused
    # (no server-side request forgery) unless allowed.
    public_url: str | None = Field(
        default=None, description="the address people open the web app at, for links in webhook deliveries "
                                  "(default http://HOST:PORT)")
    webhook_allow_private: bool = Field(
        default=False, description="let webhooks go to loopback and private addresses (trusted networks only)")

    # JSON list: [{"name": "Team vLLM", "base_url": "http://10.0.0.5:8000/v1", "key_env": "VLLM_KEY"}]
    endpoints: list[Endpoint] = Field(
        default_factory=list, description="endpoints registered by configuration (name, base_url, key_env)")
    endpoints_file: Path | None = Field(
        default=None, description="a TOML file of [[endpoints]] tables (name, base_url, key_env)")
    allow_free_urls: FreeUrls = Field(
        default="auto", description="whether operators may type a base URL that is not a registered endpoint "
                                    "(never with a server key): auto = only on this machine without sign-in")

    @field_validator("endpoints", mode="before")
    @classmethod
    def _endpoints(cls, value: object) -> object:
        if isinstance(value, list):
            return parse_endpoints(value, "ROSTRUM_ENDPOINTS")
        return value

    @model_validator(mode="after")
    def _endpoints_file_readable(self) -> Settings:
        """A missing or broken endpoints file stops the start with its own message."""
        if self.endpoints_file is not None:
            read_endpoints_file(self.endpoints_file)
        return self

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list):
            for item in value:
                try:
                    ipaddress.ip_network(str(item), strict=False)
                except ValueError:
                    raise ValueError(f"{item!r} is not an IP address or network (e.g. 10.0.0.0/8)") from None
        return value

    @field_validator("image_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list):
            hosts = []
            for item in value:
                host = str(item).strip().lower().rstrip(".")
                if not host:
                    continue
                if not HOST_PATTERN.fullmatch(host):
                    raise ValueError(f"{item!r} is not a host name (e.g. upload.wikimedia.org)")
                hosts.append(host)
            value = hosts
        return value

    @field_validator("db", mode="before")
    @classmethod
    def _database(cls, value: object) -> object:
        """A postgresql:// URL stays as it is; anything else is a SQLite file's path."""
        if isinstance(value, str) and not value.startswith(("postgresql://", "postgres://")):
            return Path(value)
        return value

    @field_validator("auth_header", mode="before")
    @classmethod
    def _blank_header(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def loopback(self) -> bool:
        """Whether the web app listens only on this machine."""
        return is_loopback(self.host)

    @property
    def base_url(self) -> str:
        """Where the web app's pages are reached (`ROSTRUM_PUBLIC_URL`, else the address it listens on)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    @property
    def auth_enabled(self) -> bool:
        """Whether pages and commands need a signed-in user (or a trusted identity header)."""
        if self.auth == "auto":  # a proxy on this machine forwarding to loopback still means hosted
            return not self.loopback or self.auth_header is not None
        return self.auth == "on"

    def auth_problem(self) -> str | None:
        """Why this combination must not start, or None."""
        if self.auth == "off" and not self.loopback:
            return (
                f"ROSTRUM_AUTH=off with ROSTRUM_HOST={self.host} would let anyone who can reach this port "
                "watch, stop and start debates and spend the API keys. Set ROSTRUM_AUTH=on (or auto) to "
                "require sign-in, or ROSTRUM_HOST=127.0.0.1 to serve only this machine."
            )
        if self.auth_header and not self.trusted_proxies:
            return (
                f"ROSTRUM_AUTH_HEADER={self.auth_header} needs ROSTRUM_TRUSTED_PROXIES: the addresses of the "
                "reverse proxy allowed to set it (anyone else could claim any identity)."
            )
        return None

    def trusts(self, address: str | None) -> bool:
        """Whether a request from `address` may assert an identity through `auth_header`."""
        if not address or not self.trusted_proxies:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in ipaddress.ip_network(net, strict=False) for net in self.trusted_proxies)


def is_loopback(host: str) -> bool:
    """`127.0.0.1`, `::1`, `localhost`: only this machine can connect."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def storage_secret(settings: Settings) -> str:
    """The secret that signs browser sessions: `ROSTRUM_STORAGE_SECRET`, else one generated on first
    start and kept beside the database (mode 0600), so it survives restarts but is never a constant."""
    if settings.storage_secret:
        return settings.storage_secret
    # Beside a SQLite file; with PostgreSQL, in the data directory a SQLite file would have used.
    folder = settings.db.parent if isinstance(settings.db, Path) else Path("data")
    path = folder / SECRET_FILE_NAME
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        # O_EXCL: of two processes starting together, the second keeps the first one's secret.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        secret = path.read_text(encoding="utf-8").strip()
        if secret:
            return secret
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC, 0o600)  # an empty file (a crash while writing)
        os.chmod(path, 0o600)
    secret = secrets.token_urlsafe(48)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(secret + "\n")
    return secret


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; call `get_settings.cache_clear()` after changing the env)."""
    return Settings()


def image_hosts() -> frozenset[str]:
    """Hosts whose images model output may show inline (`ROSTRUM_IMAGE_HOSTS`); every other image in
    model output is rendered as a link, so no spectator's browser fetches a URL a model chose. Shared by
    the server-side Markdown (`safe_markdown`) and any client-side renderer."""
    return frozenset(get_settings().image_hosts)


def read_env_var(name: str) -> str | None:
    """A secret from the environment or `.env`, without copying it anywhere else."""
    value = os.environ.get(name)
    if value:
        return value
    env_file = Path(".env")
    try:
        stamp = env_file.stat().st_mtime_ns
    except OSError:
        return None
    return _dotenv(env_file.resolve(), stamp).get(name) or None


@lru_cache(maxsize=4)
def _dotenv(path: Path, mtime_ns: int) -> dict[str, str | None]:
    """The parsed `.env`, read again only when the file changes (keys are looked up on every call)."""
    return dotenv_values(path)
