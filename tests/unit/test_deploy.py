"""`deploy/compose.yaml` (documentation-grade: no container runtime here) says what the README says:
PostgreSQL, Redis, two web instances behind a proxy with sticky cookies, two workers, one shared
configuration; and its image installs from the lock."""

from __future__ import annotations

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_the_compose_file_runs_two_web_instances_and_two_workers_on_shared_servers() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))["services"]
    assert {"db", "redis", "web-a", "web-b", "worker-a", "worker-b", "proxy"} <= set(services)
    assert services["db"]["image"].startswith("postgres:15") and services["redis"]["image"].startswith("redis:7")
    for name in ("web-a", "web-b", "worker-a", "worker-b"):
        env = services[name]["environment"]
        assert env["ROSTRUM_DB"].startswith("postgresql://") and "@db:5432/" in env["ROSTRUM_DB"]
        assert env["ROSTRUM_REDIS_URL"] == env["NICEGUI_REDIS_URL"] == "redis://redis:6379/0"
        assert env["ROSTRUM_WORKERS"] == "external" and "ROSTRUM_STORAGE_SECRET" in env
    for name in ("worker-a", "worker-b"):
        assert services[name]["command"][:4] == ["python", "-m", "webapp", "worker"]
    labels = services["web-a"]["labels"]
    assert labels["traefik.http.services.rostrum.loadbalancer.sticky.cookie"] == "true"  # pages stay put
    assert services["web-b"]["labels"] == labels


def test_the_image_installs_from_the_lock() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert "uv sync --frozen" in dockerfile and "COPY pyproject.toml uv.lock" in dockerfile
