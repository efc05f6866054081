"""The local-server check (`webapp.providers.probe`) reports what it found in one plain sentence."""

from __future__ import annotations

from webapp.models import utcnow
from webapp.providers.probe import ServerCheck


def test_a_server_check_says_what_it_found_in_words():
    now = utcnow()
    url = "http://localhost:11434/v1"
    assert ServerCheck(url=url, answers=True, status=200, models=["a", "b"], checked_at=now).describe() == \
        f"Answers at {url}: 2 models (a, b)"
    assert "pull or load one" in ServerCheck(url=url, answers=True, status=200, checked_at=now).describe()
    odd = ServerCheck(url=url, answers=True, status=404, problem="no route", checked_at=now).describe()
    assert odd.startswith(f"Answers at {url}, but") and "HTTP 404: no route" in odd
    down = ServerCheck(url=url, answers=False, problem="no answer within 3 s", checked_at=now).describe()
    assert down.startswith(f"Does not answer at {url}: no answer within 3 s")
