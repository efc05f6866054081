"""The Redis channel names web processes and workers ring each other on (all under `rostrum:`).

Their own module so that the worker (which rings results and plays tournaments through a client) and
the client (which rings commands) both import them without importing each other.
"""

from __future__ import annotations

COMMANDS_PATTERN = "rostrum:commands:*"


def commands_channel(debate_id: str) -> str:
    """Where a web process rings the worker of a debate after leaving it a job."""
    return f"rostrum:commands:{debate_id}"


def tournament_channel(tournament_id: str) -> str:
    """Where a web process rings the workers after asking for a tournament to be played or stopped
    (under the commands pattern, so it wakes the jobs loop, which also looks at tournaments)."""
    return f"rostrum:commands:tournament:{tournament_id}"


def results_channel(debate_id: str) -> str:
    """Where a worker says it answered a job of a debate (the message is the job's id)."""
    return f"rostrum:results:{debate_id}"
