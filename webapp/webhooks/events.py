"""Which committed log events are webhook events, and the JSON a delivery carries.

A webhook event is read off a committed event of a debate's log (`webhook_event`): the start, the end
(completed or stopped), a failure, a spending warning, the end of a round. `tournament.completed` comes
from the tournament runner's notice (`Engine.notices`) when a tournament has played every debate. The
payload is made when the event is queued, from the debate's state right after that event (so a
redelivery sends the same body), and is one flat JSON object:

    {"event": "debate.completed", "occurred_at": "2026-…Z", "debate_id": "…", "url": "http://…/debate/…",
     "topic": "…", "status": "completed", "round": 3, "total_rounds": 3,
     "outcome": {"winner": "pro", "winner_name": "Proposition", "headline": "Proposition wins"},
     "cost_usd": 0.0123, "unpriced": false, "detail": {…}}

`detail` says more about the event: the error (`debate.error`), the warning's message (`debate.warning`),
the round (`debate.round`). `format_slack` turns it into a Slack incoming-webhook message.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from webapp.engine.events import TransitionPayload
from webapp.engine.machine import Event, State
from webapp.engine.state import DebateState
from webapp.models import DebateEvent, EventKind

DEBATE_STARTED = "debate.started"
DEBATE_COMPLETED = "debate.completed"
DEBATE_ERROR = "debate.error"
DEBATE_WARNING = "debate.warning"
DEBATE_ROUND = "debate.round"
TOURNAMENT_COMPLETED = "tournament.completed"
EVENTS: tuple[str, ...] = (DEBATE_STARTED, DEBATE_COMPLETED, DEBATE_ERROR, DEBATE_WARNING, DEBATE_ROUND,
                           TOURNAMENT_COMPLETED)
EVENT_HELP = {
    DEBATE_STARTED: "a debate started",
    DEBATE_COMPLETED: "a debate ended (completed, or stopped: see `status`)",
    DEBATE_ERROR: "a debate stopped on an error and waits for a person",
    DEBATE_WARNING: "a debate reached its spending warning (warn-at) or its hard limit",
    DEBATE_ROUND: "a round of a debate ended",
    TOURNAMENT_COMPLETED: "a tournament played all its debates",
}


def parse_events(text: str | list[str]) -> list[str]:
    """The event names of `--events a,b` (or a list), checked; raises ValueError naming a bad one."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    if not names:
        raise ValueError(f"events: name at least one of {', '.join(EVENTS)}")
    unknown = [n for n in names if n not in EVENTS]
    if unknown:
        raise ValueError(f"events: unknown event {unknown[0]!r}; choose from {', '.join(EVENTS)}")
    return list(dict.fromkeys(names))


def webhook_event(event: DebateEvent) -> str | None:
    """The webhook event a committed log event is, or None (most events are none)."""
    if event.kind is EventKind.WARNING:
        return DEBATE_WARNING
    if event.kind is not EventKind.TRANSITION:
        return None
    payload = event.payload
    assert isinstance(payload, TransitionPayload)
    if payload.event is Event.START:
        return DEBATE_STARTED
    if payload.event is Event.ROUND_COMPLETE:
        return DEBATE_ROUND
    if payload.to in (State.COMPLETED, State.STOPPED):
        return DEBATE_COMPLETED
    if payload.to is State.ERROR:
        return DEBATE_ERROR
    return None


def page_url(base: str, path: str) -> str:
    return base.rstrip("/") + path


def _when(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def outcome(state: DebateState) -> dict[str, Any] | None:
    """What an ended debate came to: its verdict's winner (None with `tie`), or why it ended without
    one; None while it has not ended."""
    if state.status not in (State.COMPLETED, State.STOPPED):
        return None
    names = {p.id: p.name for p in state.config.participants}
    verdict = state.verdict
    if verdict is None:
        why = state.ended_because
        return {"winner": None, "verdict": False, "headline": f"Ended without a verdict: {why}" if why else
                "Ended without a verdict"}
    if not verdict.available:
        return {"winner": None, "verdict": False, "headline": "Verdict unavailable"}
    if verdict.synthesis and state.format.judge_synthesis:  # a collaborative debate: a solution, no winner
        return {"winner": None, "verdict": True, "headline": "Final solution",
                "synthesis": " ".join(verdict.synthesis.split())[:500]}
    if verdict.winner is None:
        return {"winner": None, "winner_name": None, "verdict": True, "tie": True, "headline": "Tie"}
    name = names.get(verdict.winner, verdict.winner)
    return {"winner": verdict.winner, "winner_name": name, "verdict": True, "tie": False,
            "headline": f"{name} wins", "scores": dict(verdict.scores)}


def _detail(name: str, event: DebateEvent, state: DebateState) -> dict[str, Any]:
    data = event.data
    if name == DEBATE_WARNING:
        return {k: data[k] for k in ("type", "message", "spent_usd", "warn_at", "limit_usd") if k in data}
    if name == DEBATE_ROUND:
        return {"round": (data.get("params") or {}).get("round")}
    if name == DEBATE_ERROR:
        recorded = state.error.model_dump(exclude_unset=True) if state.error is not None else {}
        error = (data.get("params") or {}).get("error") or recorded
        return {"error": {k: error[k] for k in ("kind", "provider", "message", "status") if k in error}}
    if name == DEBATE_COMPLETED:
        return {"ended_because": state.ended_because}
    return {}


def debate_payload(name: str, event: DebateEvent, state: DebateState, base_url: str) -> dict[str, Any]:
    """The body of a debate's webhook delivery, from its state right after `event`."""
    summary = state.summary()
    return {
        "event": name,
        "occurred_at": _when(event.at),
        "debate_id": state.id,
        "url": page_url(base_url, f"/debate/{state.id}"),
        "topic": state.config.topic,
        "format": state.config.format,
        "status": state.status.value,
        "round": summary["round"],
        "total_rounds": summary["total_rounds"],
        "outcome": outcome(state),
        "cost_usd": summary["cost_usd"],
        "unpriced": bool(summary["unpriced"]),
        "detail": _detail(name, event, state),
    }


def tournament_payload(tournament_id: str, name: str, status: str, at: datetime, base_url: str,
                       debates: int, cost_usd: float, leader: str | None) -> dict[str, Any]:
    """The body of `tournament.completed`."""
    return {
        "event": TOURNAMENT_COMPLETED,
        "occurred_at": _when(at),
        "tournament_id": tournament_id,
        "url": page_url(base_url, f"/tournaments/{tournament_id}"),
        "topic": name,
        "status": status,
        "outcome": {"leader": leader, "headline": f"{leader} leads" if leader else "No standings"},
        "cost_usd": round(cost_usd, 6),
        "detail": {"debates": debates},
    }


def _slack_escape(text: str) -> str:
    """Slack's three control characters in message text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def format_slack(payload: dict[str, Any]) -> dict[str, Any]:
    """A Slack incoming-webhook message (`text`, mrkdwn) for a delivery's payload."""
    event = str(payload.get("event", ""))
    topic = _slack_escape(str(payload.get("topic") or "")[:200])
    link = f"<{payload.get('url')}|{topic}>" if payload.get("url") else topic
    parts = [f"*{event}* · {link}", f"status: {payload.get('status')}"]
    result = payload.get("outcome")
    if isinstance(result, dict) and result.get("headline"):
        parts.append(_slack_escape(str(result["headline"])))
    detail = payload.get("detail") or {}
    if isinstance(detail.get("error"), dict) and detail["error"].get("message"):
        parts.append("error: " + _slack_escape(str(detail["error"]["message"])[:300]))
    if detail.get("message"):
        parts.append(_slack_escape(str(detail["message"])[:300]))
    if detail.get("round") is not None:
        parts.append(f"round {detail['round']}")
    parts.append(f"cost ${float(payload.get('cost_usd') or 0):.4f}")
    return {"text": " · ".join(parts)}
