"""The `tokens` command of the CLI: personal API tokens for the HTTP API.

    python -m webapp tokens create --user NAME [--role viewer|operator|admin] [--expires DAYS] [--name LABEL]
    python -m webapp tokens list [--user NAME] [--json]
    python -m webapp tokens revoke ID

`create` prints the token once, as a line `token: rst_…` (only its digest is stored). Every change is
audited with the actor `cli`, like the `users` commands.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from webapp.access import tokens
from webapp.access.roles import CLI, PermissionDenied, Role
from webapp.engine.engine import Engine
from webapp.store.accounts import UnknownUser
from webapp.store.tokens import ApiTokens, TokenRow


class TokenUsage(ValueError):
    """A bad command line; the message names the option."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    parser = sub.add_parser("tokens", help="personal API tokens for the HTTP API")
    tokens_sub = parser.add_subparsers(dest="tokens_command", required=True, metavar="COMMAND")
    create = tokens_sub.add_parser("create", parents=[common], help="make a token (printed once)")
    create.add_argument("--user", required=True, help="whose token it is (an existing account)")
    create.add_argument("--role", choices=[r.value for r in Role],
                        help="the most it may do (default: the user's role; never more)")
    create.add_argument("--expires", type=float, metavar="DAYS", help="days until it stops working (default: never)")
    create.add_argument("--name", default="", metavar="LABEL", help="what it is for (shown in lists)")
    lst = tokens_sub.add_parser("list", parents=[common], help="tokens (never the tokens themselves)")
    lst.add_argument("--user", help="only this user's")
    lst.add_argument("--json", action="store_true")
    revoke = tokens_sub.add_parser("revoke", parents=[common], help="stop a token from working, at once")
    revoke.add_argument("id", help="the token's id (see: tokens list)")


def _line(row: TokenRow) -> str:
    expires = f"expires {row.expires_at:%Y-%m-%d %H:%M}" if row.expires_at else "no expiry"
    used = f"used {row.last_used_at:%Y-%m-%d %H:%M}" if row.last_used_at else "never used"
    return (f"{row.id}  {row.username:<16} {row.role:<8} …{row.suffix}  {row.status():<7}  {expires:<23} {used:<22}"
            f" {row.name}").rstrip()


async def run(engine: Engine, args: argparse.Namespace, out: TextIO) -> None:
    store = engine.store
    command = args.tokens_command
    try:
        if command == "create":
            issued = await tokens.issue(store, args.user.strip(), Role(args.role) if args.role else None,
                                        args.expires, args.name, actor=CLI.actor)
            row = issued.row
            out.write(f"Created API token {row.id} for {row.username} ({row.role}"
                      f"{', expires ' + row.expires_at.strftime('%Y-%m-%d %H:%M UTC') if row.expires_at else ''}).\n")
            out.write("It is shown only now; keep it somewhere safe:\n")
            out.write(f"token: {issued.token}\n")
        elif command == "list":
            rows = await ApiTokens(store).list(args.user.strip() if args.user else None)
            if args.json:
                out.write(json.dumps([r.public() for r in rows], indent=2) + "\n")
            elif not rows:
                out.write("No API tokens. Make one: python -m webapp tokens create --user NAME\n")
            else:
                for row in rows:
                    out.write(_line(row) + "\n")
        elif command == "revoke":
            row = await tokens.revoke(store, args.id.strip(), CLI)
            out.write(f"Revoked API token {row.id} of {row.username} (…{row.suffix}).\n")
    except UnknownUser as exc:
        raise TokenUsage(f"--user: {exc} (see: python -m webapp users list)") from None
    except KeyError as exc:
        raise TokenUsage(f"tokens revoke: {exc.args[0]} (see: python -m webapp tokens list)") from None
    except (ValueError, PermissionDenied) as exc:
        message = str(exc)
        field = message.split(":", 1)[0]
        raise TokenUsage(f"--{field}: {message.split(':', 1)[1].strip()}" if field in ("role", "expires", "name")
                         else f"tokens {command}: {message}") from None
