"""Application settings, read from the environment or `.env` with the `ROSTRUM_` prefix.

Provider keys are read from their conventional variables (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …)
and stay in this process: they are never written to the database, logged, or sent to a browser.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from dotenv import dotenv_values
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class PriceOverride(BaseSettings):
    """Price per million tokens for a model that genai-prices does not know (local or custom)."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0


class Settings(BaseSettings):
    """Everything configurable about a Rostrum process."""

    model_config = SettingsConfigDict(env_prefix="ROSTRUM_", env_file=".env", extra="ignore")

    db: Path = Field(default=Path("data/rostrum.sqlite3"), description="SQLite database file")
    host: str = Field(default="0.0.0.0", description="address the web app listens on")
    port: int = Field(default=8080, ge=1, le=65535, description="port the web app listens on")
    demo_speed: float | None = Field(
        default=None, ge=0, description="tokens per second for demo models (0 = instant)"
    )
    storage_secret: str = Field(default="rostrum-local", description="secret for NiceGUI's user storage")
    max_retries: int = Field(default=3, ge=0, le=20, description="retries per debate after errors")
    retry_after_cap: float = Field(default=30.0, ge=0, description="longest Retry-After honoured, seconds")
    # JSON object: {"model-name": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}
    price_overrides: dict[str, PriceOverride] = Field(default_factory=dict)
    reload: bool = Field(default=False, description="auto-reload the web app on code changes (dev)")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; call `get_settings.cache_clear()` after changing the env)."""
    return Settings()


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
