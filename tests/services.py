"""What a test does when a service it needs (PostgreSQL, Redis, axe-core) is not on the machine.

By default it is skipped, with the reason and the `make` target that installs it. `make test` installs
those services first and then names, in ROSTRUM_REQUIRE_SERVICES, the ones that are there (a
comma-separated list, e.g. `postgres,redis,axe`): for those, a missing or unusable service fails the
test instead, so half the conformance suite cannot drop out of a run with only a count in the summary.
Chromium is always required (tests/e2e/conftest.py fails without it).
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_ENV = "ROSTRUM_REQUIRE_SERVICES"
SERVICES = ("postgres", "redis", "axe")


def required() -> frozenset[str]:
    """The services this run must not skip (from ROSTRUM_REQUIRE_SERVICES)."""
    names = {name.strip() for name in os.environ.get(REQUIRE_ENV, "").split(",") if name.strip()}
    unknown = names - set(SERVICES)
    if unknown:
        raise pytest.UsageError(f"{REQUIRE_ENV} names unknown services {sorted(unknown)}; known: {SERVICES}")
    return frozenset(names)


def unavailable(service: str, reason: str) -> NoReturn:
    """Skip the test for want of `service`, or fail it when this run requires the service."""
    if service not in SERVICES:
        raise ValueError(f"unknown service {service!r}")
    if service in required():
        pytest.fail(f"{reason} ({REQUIRE_ENV} requires {service}: `make test` installed it, so it must work)",
                    pytrace=False)
    pytest.skip(reason)
