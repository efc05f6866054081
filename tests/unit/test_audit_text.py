"""The audit trail in words: every action the code records has its own sentence, an unknown action
still reads as words, refusals say why, and no sentence shows JSON."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from webapp.access.audit_text import SENTENCES, describe
from webapp.access.roles import actor_label
from webapp.store.accounts import AuditRow

ROOT = Path(__file__).resolve().parents[2]


def row(action: str, detail: str | dict[str, Any] = "", debate_id: str | None = None,
        outcome: str = "ok", actor: str = "ada") -> AuditRow:
    text = detail if isinstance(detail, str) else json.dumps(detail, sort_keys=True)
    return AuditRow(id=1, at=datetime(2026, 11, 27, tzinfo=UTC), actor=actor, action=action, debate_id=debate_id,
                    outcome=outcome, detail=text)  # type: ignore[arg-type]


def test_the_examples_read_as_sentences() -> None:
    assert describe(row("user_set_role", {"user": "bo", "role": "operator", "from": "viewer"})) == (
        "Role of bo changed from viewer to operator")
    assert describe(row("share", {"link": "3f2a", "comments": True, "expires_at": "2026-12-04T09:00:00+00:00"},
                        debate_id="d1"), topic="Tea or coffee?") == (
        "Share link 3f2a created for debate “Tea or coffee?”, expires 2026-12-04 09:00 UTC; holders may comment")
    assert describe(row("share", {"link": "3f2a", "comments": False}, debate_id="d1")) == (
        "Share link 3f2a created for debate d1, never expires")  # a deleted debate: its id
    assert describe(row("pause", "role viewer", debate_id="d1", outcome="refused"), topic="T") == (
        "Pause of debate “T” refused: the role viewer may not do this")
    assert describe(row("sign_in", {"address": "10.0.0.7", "attempts": 3, "since": "2026-11-27T06:00:00+00:00"},
                        outcome="refused", actor="(unknown name)")) == (
        "3 sign-in attempts from 10.0.0.7 since 2026-11-27 06:00 UTC")
    assert describe(row("template_saved", {"kind": "template", "name": "Lunch", "id": "x"})) == (
        "Template “Lunch” saved")


def test_an_unknown_action_still_reads_as_words() -> None:
    said = describe(row("widget_frobbed", {"colour_name": "blue", "sizes": [1, 2], "none": None}))
    assert said == "Widget frobbed: colour name blue; sizes 1, 2"
    assert describe(row("widget_frobbed", "it wobbled", outcome="failed")) == "Widget frobbed failed: it wobbled"
    assert describe(row("widget_frobbed")) == "Widget frobbed"


def recorded_actions() -> set[str]:
    """Every action name the code passes to `audit(…)` as a literal, or as `Action.X.value`."""
    found: set[str] = set()
    for path in (ROOT / "webapp").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r"audit\([^,]+,\s*\"([a-z_]+)\"", text))
        found |= {name.lower() for name in re.findall(r"audit\([^,]+,\s*Action\.([A-Z_]+)\.value", text)}
    return found


def test_every_recorded_action_has_a_sentence() -> None:
    actions = recorded_actions()
    assert {"user_add", "user_set_role", "share", "delete", "webhook_add", "token_create"} <= actions
    assert actions - set(SENTENCES) == set()


@pytest.mark.parametrize("action", sorted(SENTENCES))
def test_no_sentence_shows_json_or_code_names(action: str) -> None:
    for detail in ({}, {"user": "bo", "role": "viewer", "link": "l1", "topic": "T", "tournament": "t1"}):
        said = describe(row(action, detail, debate_id="d1"))
        assert said and said[0].isupper() and not re.search(r"[{}\[\]\"]", said), said
        assert "_" not in said and "  " not in said and not said.endswith(" as"), said


def test_actors_that_are_not_people_are_named_for_what_they_are() -> None:
    assert actor_label("local") == "this computer (no sign-in)"
    assert actor_label("cli") == "the command line"
    assert actor_label("ada") == "ada"
    assert actor_label("ada (token …f3a9)") == "ada (token …f3a9)"
