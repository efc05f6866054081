"""An endpoint an admin registered, and the rules its base URL follows: the model the settings parse
(`ROSTRUM_ENDPOINTS`, `ROSTRUM_ENDPOINTS_FILE`), the store keeps (Settings' rows) and the providers'
endpoint policy decides with (`webapp.providers.endpoints`: which key may go where).

It sits below all three (on the address classes of `webapp.netpolicy` only), so none of them imports
another for it. A base URL is taken apart once (`parse_url`: http(s), no credentials, query or
fragment), compared as scheme, host, port and path (`same_endpoint`), and a host written as an
address is classed before anything resolves it (`literal_reach`: a link-local or metadata address is
refused when the endpoint is registered).
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from webapp.netpolicy import Reach, reach

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENDPOINT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,59}$")
LOCAL_NAMES = ("localhost", "localhost.localdomain")


def literal_reach(host: str) -> Reach | None:
    """The reach of a host written as an address (or `localhost`); None for a name (known once resolved)."""
    host = host.strip("[]").lower().rstrip(".")
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return "private"
    try:
        return reach(ipaddress.ip_address(host))
    except ValueError:
        return None


@dataclass(frozen=True)
class Target:
    """A base URL taken apart: what keys are bound to (scheme, host, port) and the path below it."""

    scheme: str
    host: str
    port: int
    path: str

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def url(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}{'' if self.port == default else f':{self.port}'}{self.path}"

    @property
    def where(self) -> str:
        """The host as a person names it ("openrouter.ai", "127.0.0.1:9911")."""
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def parse_url(url: str) -> Target:
    """Take a base URL apart; raises ValueError with a message naming what is wrong."""
    text = url.strip()
    if any(ord(c) < 33 or c == "\\" for c in text):
        raise ValueError("the base URL must not contain spaces, control characters or backslashes")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ValueError("the base URL must start with http:// or https://")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError("the base URL must not carry credentials (user:password@); keys come from the environment")
    if parts.query or parts.fragment:
        raise ValueError("the base URL must not have a query (?…) or fragment (#…)")
    host = (parts.hostname or "").lower().rstrip(".")
    if not host:
        raise ValueError("the base URL has no host")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise ValueError("the base URL's port is not a number from 1 to 65535") from None
    return Target(scheme, host, port, parts.path.rstrip("/"))


def same_endpoint(a: str, b: str) -> bool:
    """Whether two base URLs name the same endpoint (host, port and path, ignoring case and a final /)."""
    try:
        return parse_url(a) == parse_url(b)
    except ValueError:
        return False


class Endpoint(BaseModel):
    """An endpoint an admin registered: a name people pick it by, its base URL, and optionally the
    variable holding its key (which is then sent to this endpoint and nowhere else)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=60)
    base_url: str = Field(min_length=1, max_length=500)
    key_env: str | None = None
    source: Literal["settings", "config"] = "settings"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not ENDPOINT_NAME.match(value):
            raise ValueError("an endpoint's name is 1 to 60 letters, digits, spaces, dots, dashes or underscores")
        return value

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        target = parse_url(value)
        if literal_reach(target.host) == "blocked":
            raise ValueError(f"{target.where} is a link-local or cloud-metadata address, which is never called")
        return target.url

    @field_validator("key_env")
    @classmethod
    def _key_env(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if not ENV_NAME.match(value):
            raise ValueError("key_env must be the name of an environment variable (like MY_API_KEY), not a key")
        if value.upper().startswith("ROSTRUM_"):
            raise ValueError(f"{value} is one of Rostrum's own settings, not a provider key")
        return value

    @property
    def target(self) -> Target:
        return parse_url(self.base_url)


_ENDPOINT_LIST = TypeAdapter(list[Endpoint])


def parse_endpoints(data: Any, where: str) -> list[Endpoint]:
    """Endpoints from configuration data (a list of {name, base_url, key_env}); ValueError names `where`."""
    if isinstance(data, dict):
        data = data.get("endpoints", [])
    try:
        items = _ENDPOINT_LIST.validate_python(
            [{**item, "source": "config"} if isinstance(item, dict) else item for item in data or []])
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}: endpoint {path}: {first['msg']}") from None
    names = [e.name.lower() for e in items]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise ValueError(f"{where}: two endpoints are called {duplicate!r}")
    return items


@lru_cache(maxsize=4)
def _endpoints_file(path: Path, mtime_ns: int) -> tuple[Endpoint, ...]:
    with path.open("rb") as handle:
        return tuple(parse_endpoints(tomllib.load(handle), str(path)))


def read_endpoints_file(path: Path | str) -> list[Endpoint]:
    """The endpoints of a TOML file of `[[endpoints]]` tables (read again when it changes); ValueError
    names the file and what is wrong with it."""
    path = Path(path)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise ValueError(f"ROSTRUM_ENDPOINTS_FILE {path}: cannot be read ({exc.strerror})") from None
    try:
        return list(_endpoints_file(path.resolve(), stamp))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"ROSTRUM_ENDPOINTS_FILE {path}: not valid TOML ({exc})") from None
