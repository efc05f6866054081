"""`tournament`: run or resume a tournament (the work is in `webapp.tournament.commands`)."""

from __future__ import annotations

import argparse
from typing import TextIO

from webapp.cli.common import ACTOR, EXIT_OK, EXIT_STOPPED, UsageError, opened, settings_of
from webapp.tournament import commands as tournament_commands


async def cmd_tournament(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, settings_of(args), runs=True) as engine:
        try:
            row = await tournament_commands.run(engine, args, ACTOR, out)
        except tournament_commands.TournamentUsage as exc:
            raise UsageError(str(exc)) from None
    return EXIT_OK if row.status == "completed" else EXIT_STOPPED
