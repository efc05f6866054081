"""`main`: parse the command line, read the settings once, run the command, turn errors into exit codes."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from typing import TextIO

from pydantic import ValidationError

from webapp.cli.check import cmd_check
from webapp.cli.common import EXIT_FAILED, EXIT_USAGE, UsageError, say_error
from webapp.cli.debate import cmd_debate, cmd_rematch, cmd_resume
from webapp.cli.hooks import cmd_webhooks
from webapp.cli.migrate import cmd_migrate_store
from webapp.cli.parser import build_parser
from webapp.cli.ratings import cmd_judges, cmd_leaderboard
from webapp.cli.reference import cmd_diagram, cmd_formats
from webapp.cli.stored import cmd_delete, cmd_export, cmd_list, cmd_show
from webapp.cli.tokens import cmd_tokens
from webapp.cli.tournaments import cmd_tournament
from webapp.cli.users import cmd_users
from webapp.cli.worker import cmd_worker
from webapp.engine.engine import DebateNotFound
from webapp.engine.public import TransitionNotAllowed
from webapp.hygiene import strip_controls
from webapp.settings import get_settings
from webapp.store import StoreError
from webapp.terminal import terminal_output

COMMANDS = {"debate": cmd_debate, "rematch": cmd_rematch, "resume": cmd_resume,
            "list": cmd_list, "show": cmd_show, "export": cmd_export,
            "judges": cmd_judges, "leaderboard": cmd_leaderboard, "delete": cmd_delete, "users": cmd_users,
            "tournament": cmd_tournament, "worker": cmd_worker, "webhooks": cmd_webhooks, "tokens": cmd_tokens}


def settings_problem(exc: ValidationError) -> str:
    """A bad ROSTRUM_* setting, named as the variable a person sets."""
    parts = []
    for err in exc.errors():
        name = "ROSTRUM_" + "_".join(str(p) for p in err["loc"][:1]).upper()
        parts.append(f"{name}: {err['msg'].removeprefix('Value error, ')}")
    return "invalid setting: " + "; ".join(parts)


def dash_topic_problem(args: argparse.Namespace, extra: list[str]) -> str | None:
    """A topic starting with `-` reads as an unknown option: say so, naming it, and how to pass it."""
    if getattr(args, "command", None) != "debate" or args.topic is not None:
        return None
    topic = next((arg for arg in extra if arg.startswith("-")), None)
    if topic is None:
        return None
    return (f"topic: {topic!r} starts with '-', so it was read as an option; put -- before the topic, after "
            f"every option: python -m webapp debate [options] -- {shlex.quote(topic)}")


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = terminal_output(out or sys.stdout)  # no control characters reach the terminal (JSON: exact_output)
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        problem = dash_topic_problem(args, extra)
        if problem is None:
            parser.error(strip_controls(f"unrecognized arguments: {' '.join(extra)}"))
        say_error(f"error: {problem}")
        return EXIT_USAGE
    try:  # a bad setting is reported here, not as a traceback from deep inside the engine
        if args.command in COMMANDS:
            settings = get_settings()  # one settings object for the command and its engine, even with --db
            args.settings = settings
            args.db = args.db or str(settings.db)
    except ValidationError as exc:
        say_error(f"error: {settings_problem(exc)}")
        return EXIT_USAGE
    try:
        if args.command == "formats":
            return cmd_formats(args, out)
        if args.command == "diagram":
            return cmd_diagram(args, out)
        if args.command == "migrate-store":
            return asyncio.run(cmd_migrate_store(args, out))
        if args.command == "check":
            return asyncio.run(cmd_check(args, out))
        return asyncio.run(COMMANDS[args.command](args, out))
    except UsageError as exc:
        say_error(f"error: {exc}")
        return EXIT_USAGE
    except DebateNotFound as exc:
        say_error(f"error: {exc}")
        return EXIT_USAGE
    except StoreError as exc:  # corrupt, locked by another process, read-only, disk full, unwritable directory
        say_error(f"error: {exc}")
        say_error(f"hint: {exc.advice}")
        return EXIT_FAILED
    except TransitionNotAllowed as exc:
        say_error(f"error: {exc}")
        return EXIT_FAILED
