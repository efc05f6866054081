"""What a transition carries, as the engine names it: its typed parameters (`TransitionParams`) and the
records inside them (`ErrorInfo`, `Position`, `SeatTurn`), and `Sparse`, a model stored with only the
fields it was given.

The models are the stored ones (`webapp.models.params`, below the engine, since the log's payloads in
`webapp.models.payloads` carry them); the machine, the fold and their callers name them here.
"""

from __future__ import annotations

from webapp.models.params import ErrorInfo, Position, SeatTurn, Sparse, TransitionParams, typed_params

__all__ = ["ErrorInfo", "Position", "SeatTurn", "Sparse", "TransitionParams", "typed_params"]
