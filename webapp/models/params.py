"""What a transition carries: its typed parameters (`TransitionParams`) and the records inside them.

The machine (`webapp.engine.machine`) reads these in its guards and its context, the log's payloads
(`webapp.models.payloads`) store them, and the fold (`webapp.engine.state`) keeps them in its records, so
they sit with the stored models, below all three (the engine names them in `webapp.engine.params`): the
provider failure a debate stopped on (`ErrorInfo`), the turn a human seat owes (`SeatTurn`); where the
debate is (`Position`) is a life-cycle word (`webapp.models.lifecycle`).

`Sparse` marks a model stored with only the fields it was given: a transition's parameters are
written to the log as they were passed (no invented defaults), which keeps the stored format exactly
as it was when the parameters were a plain dict.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from webapp.models.lifecycle import Position, TurnPlace

__all__ = ["ErrorInfo", "Position", "SeatTurn", "Sparse", "TransitionParams", "typed_params"]


class Sparse(BaseModel):
    """A model stored with only the fields that were given (no invented defaults)."""


class ErrorInfo(BaseModel):
    """A provider failure as recorded (`ProviderError.to_dict()`; `webapp.engine.events.error_info`): the
    machine keeps the one a debate stopped on (`DebateState.error`, `SessionView.error`), the log the ones
    it met. Frozen: a reader cannot change what the machine remembers."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str = "fatal"  # "retryable" | "fatal"
    provider: str = ""
    message: str = ""
    status: int | None = None
    request_id: str | None = None
    retry_after: float | None = None
    reason: str = "error"


class SeatTurn(TurnPlace):
    """The turn a human seat owes (TURN_DUE): which slot, its word limit and the time allowed."""

    visible: bool = True
    word_limit: int | None = None
    time_limit_s: int = 0  # 0: no limit


class TransitionParams(Sparse):
    """Parameters of a transition, as given to `DebateMachine.send` (only those given are stored).

    Which event reads which: `position` any (where the work since the last event was done), `error`
    ERROR, `interrupted` and `reason` PAUSE, `reason` and `verdict` STOP, `manual` RETRY, `seat`
    TURN_DUE, `phase` and `round` PHASE_COMPLETE / ROUND_COMPLETE."""

    model_config = ConfigDict(extra="allow")

    position: Position | None = None
    interrupted: bool | None = None
    reason: str | None = None
    verdict: bool | None = None
    error: ErrorInfo | None = None
    phase: str | None = None
    round: int | None = None
    manual: bool | None = None  # RETRY: asked for by a person (fresh automatic budget)
    seat: SeatTurn | None = None  # TURN_DUE: the turn a person owes

    def to_data(self) -> dict[str, Any]:
        """The parameters as the JSON they are stored as (only those given)."""
        return self.model_dump(mode="json", exclude_unset=True)


def typed_params(params: TransitionParams | None, given: dict[str, Any]) -> TransitionParams:
    """A transition's parameters as their model: `params` itself, or the keywords `given` validated (a
    bad one raises pydantic's `ValidationError`, a `ValueError`, before anything has changed)."""
    if params is None:
        return TransitionParams.model_validate(given)
    if given:
        raise TypeError("give a transition's parameters as a model or as keywords, not both")
    return params
