"""`tokens`: personal API tokens (the work is in `webapp.access.token_commands`)."""

from __future__ import annotations

import argparse
from typing import TextIO

from webapp.access import token_commands
from webapp.cli.common import EXIT_OK, UsageError, opened, settings_of
from webapp.terminal import exact_output


async def cmd_tokens(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, settings_of(args)) as engine:
        try:
            await token_commands.run(engine, args, exact_output(out) if getattr(args, "json", False) else out)
        except token_commands.TokenUsage as exc:
            raise UsageError(str(exc)) from None
    return EXIT_OK
