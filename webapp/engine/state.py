"""A debate's current state as a fold over its event log.

`DebateState.from_events(events)` rebuilds everything — machine state and context, finished turns,
costs, warnings, verdict — so a restarted process resumes exactly where the log says it stopped.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from webapp.engine.budget import Ledger
from webapp.engine.formats import Format, get_format
from webapp.engine.machine import DebateMachine, MachineContext, State
from webapp.engine.schedule import total_rounds
from webapp.models import DebateConfig, DebateEvent, EventKind, Turn, Usage, Verdict

SYSTEM_ACTOR = "system"  # transitions the runner makes by itself


class DebateState:
    """Everything known about one debate, derived from its events."""

    def __init__(self, debate_id: str, config: DebateConfig, created_at: datetime) -> None:
        self.id = debate_id
        self.config = config
        self.format: Format = get_format(config.format)
        self.created_at = created_at
        self.created_by = ""
        self.machine = DebateMachine(
            MachineContext(
                max_retries=config.max_retries,
                judge_enabled=config.judge.enabled,
                clarification=self.format.clarification and config.clarification,
                preparation=any(s.act == "prepare" for p in self.format.phases for s in p.speakers),
            )
        )
        self.turns: list[Turn] = []
        self.turn_keys: set[str] = set()
        self.transitions: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []  # what people did: commands and other actions, by whom
        self.warnings: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.notes: list[dict[str, Any]] = []
        self.verdict: Verdict | None = None
        self.ledger = Ledger()
        self.round_decisions: dict[int, dict[str, Any]] = {}
        self.round_scores: list[dict[str, Any]] = []
        self.clarifications: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.summaries: dict[str, dict[str, Any]] = {}
        self.phase_marks: set[tuple[str, int]] = set()
        self.round_marks: set[int] = set()
        self.cost_warned = False
        self.last_seq = 0
        self.total_rounds = total_rounds(self.format, config)

    # --- derived views ---------------------------------------------------------------------

    @property
    def status(self) -> State:
        return self.machine.state

    @property
    def ended_because(self) -> str | None:
        if self.verdict and self.verdict.ended_because:
            return self.verdict.ended_because
        if self.machine.context.stop_reason:
            return self.machine.context.stop_reason
        for decision in self.round_decisions.values():
            if decision.get("stop"):
                return decision.get("reason")
        return None

    def summary(self) -> dict[str, Any]:
        """The listing projection stored beside each event."""
        position = self.machine.context.position
        return {
            "status": self.status.value,
            "phase": position.phase,
            "round": position.round,
            "total_rounds": self.total_rounds,
            "cost_usd": round(self.ledger.total_usd, 6),
            "turn_count": len(self.turns),
            "unpriced": int(bool(self.ledger.unpriced_models)),
            "interrupted": int(self.status is State.PAUSED and self.machine.context.interrupted),
        }

    # --- the fold --------------------------------------------------------------------------

    @classmethod
    def from_events(cls, events: list[DebateEvent]) -> DebateState:
        if not events or events[0].kind is not EventKind.CREATED:
            raise ValueError("a debate's log must start with its CREATED event")
        first = events[0]
        state = cls(first.debate_id, DebateConfig.model_validate(first.data["config"]), first.at)
        state.created_by = str(first.data.get("actor") or "")
        for event in events:
            state.apply(event)
        return state

    def apply(self, event: DebateEvent, sent: bool = False) -> None:
        """Fold one event in. `sent=True`: a live transition already applied to the machine."""
        self.last_seq = event.seq
        if event.kind is EventKind.TRANSITION:
            self._on_transition(event, sent)
            return
        handler = getattr(self, f"_on_{event.kind.value}", None)
        if handler is not None:
            handler(event)

    def _on_transition(self, event: DebateEvent, sent: bool = False) -> None:
        data = event.data
        params = dict(data.get("params") or {})
        if not sent:
            self.machine.send(data["event"], at=event.at, **params)
        if data["event"] == "PHASE_COMPLETE" and params.get("phase"):
            self.phase_marks.add((params["phase"], int(params.get("round", 1))))
        if data["event"] == "ROUND_COMPLETE" and params.get("round"):
            self.round_marks.add(int(params["round"]))
        actor = str(data.get("actor") or SYSTEM_ACTOR)
        self.transitions.append(
            {"from": data["from"], "to": data["to"], "event": data["event"], "at": event.at.isoformat(),
             "params": params, "actor": actor}
        )
        if actor != SYSTEM_ACTOR:
            self.actions.append({"action": data["event"].lower(), "actor": actor, "at": event.at.isoformat(),
                                 "params": params})

    def _on_action(self, event: DebateEvent) -> None:
        self.actions.append({"action": event.data.get("action", ""), "actor": event.data.get("actor", ""),
                             "at": event.at.isoformat(), "params": dict(event.data.get("detail") or {})})

    def _on_turn(self, event: DebateEvent) -> None:
        turn = Turn.model_validate(event.data["turn"])
        if turn.key in self.turn_keys:
            return
        self.turns.append(turn)
        self.turn_keys.add(turn.key)
        label = f"{turn.provider}:{turn.model}"
        self.ledger.add(label, turn.speaker, turn.round, turn.usage, turn.cost_usd,
                        event.data.get("cost_source", ""))

    def _on_warning(self, event: DebateEvent) -> None:
        self.warnings.append({**event.data, "at": event.at.isoformat()})
        if event.data.get("type") == "cost_warning":
            self.cost_warned = True

    def _on_error(self, event: DebateEvent) -> None:
        self.errors.append({**event.data, "at": event.at.isoformat()})

    def _on_verdict(self, event: DebateEvent) -> None:
        self.verdict = Verdict.model_validate(event.data["verdict"])
        self._charge(event)

    def _on_round_decision(self, event: DebateEvent) -> None:
        self.round_decisions[int(event.data["round"])] = dict(event.data)
        self._charge(event)

    def _on_round_scores(self, event: DebateEvent) -> None:
        self.round_scores.append(dict(event.data))
        self._charge(event)

    def _on_clarification_questions(self, event: DebateEvent) -> None:
        self.clarifications.append(dict(event.data))
        self._charge(event)

    def _on_clarification_answer(self, event: DebateEvent) -> None:
        self.answers.append(dict(event.data))

    def _on_summary(self, event: DebateEvent) -> None:
        self.summaries[event.data["key"]] = dict(event.data)
        self._charge(event)

    def _on_note(self, event: DebateEvent) -> None:
        self.notes.append({**event.data, "at": event.at.isoformat()})
        self._charge(event)

    def _charge(self, event: DebateEvent) -> None:
        """Auxiliary model calls (judge checks, summaries, questions) cost money too."""
        for call in event.data.get("calls", []):
            self.ledger.add(call["model"], call.get("participant", "judge"), int(event.data.get("round", 0)),
                            Usage.model_validate(call.get("usage") or {}), call.get("cost_usd"),
                            call.get("cost_source", ""))
