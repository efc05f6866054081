"""`users`: accounts for signing in to the web app; every change is audited as `cli`."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import TextIO

from webapp.access.gate import Gate
from webapp.access.passwords import WeakPassword, check_password
from webapp.access.roles import CLI, Role
from webapp.access.users import check_username
from webapp.cli.common import EXIT_OK, UsageError, opened, settings_of
from webapp.store.accounts import Accounts, UnknownUser, UserRow
from webapp.terminal import exact_output, print_users


def read_password(username: str) -> str:
    """A new password: the first line of stdin when it is not a terminal (only the line break is
    removed), otherwise typed twice without echo. Refused here if too short, before any hashing."""
    try:
        if sys.stdin is None:
            raise UsageError("password: stdin is closed; pipe the password as its first line, "
                             f"e.g. printf '%s\\n' \"$PW\" | python -m webapp users … {username}")
        if not sys.stdin.isatty():
            line = sys.stdin.readline()
            if not line:
                raise UsageError("password: stdin is empty; pipe the password as its first line, "
                                 f"e.g. printf '%s\\n' \"$PW\" | python -m webapp users … {username}")
            password = line.removesuffix("\n").removesuffix("\r")
            return check_password(password)
        password = check_password(getpass.getpass(f"New password for {username}: "))
        if getpass.getpass("Repeat it: ") != password:
            raise UsageError("password: the two passwords do not match; nothing was changed")
        return password
    except WeakPassword as exc:
        raise UsageError(f"password: {exc}; nothing was changed") from None
    except (EOFError, KeyboardInterrupt):
        raise UsageError("password: none given; nothing was changed") from None


async def _existing_user(accounts: Accounts, name: str) -> UserRow:
    row = await accounts.user(name.strip())
    if row is None:
        raise UsageError(f"users: no user named {name.strip()!r} (see: python -m webapp users list)")
    return row


async def cmd_users(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, settings_of(args)) as engine:
        gate = Gate(engine, CLI)  # records every change in the audit trail as `cli`
        accounts = gate.accounts
        try:
            return await _users(args, out, gate, accounts)
        except (WeakPassword, UnknownUser, ValueError) as exc:  # bad name, name taken, the last admin
            message = str(exc)
            raise UsageError(message if message.startswith(("username", "password")) else
                             f"users {args.users_command}: {message}") from None


async def _users(args: argparse.Namespace, out: TextIO, gate: Gate, accounts: Accounts) -> int:
    command = args.users_command
    if command == "list":
        users = await accounts.users()
        if args.json:
            exact_output(out).write(json.dumps([u.public() for u in users], indent=2) + "\n")
        elif not users:
            out.write("No users yet. Create the first admin: python -m webapp users add NAME --role admin\n")
        else:
            print_users(users, out)
        return EXIT_OK
    if command == "add":
        name = check_username(args.name)  # a bad or taken name is refused before asking for a password
        existing = await accounts.user(name)  # names are compared without case
        if existing is not None:
            raise UsageError(f"users add: a user named {existing.username!r} already exists")
        password = None if args.no_password else read_password(name)
        row = await gate.add_user(name, Role(args.role), password)
        how = "signs in with a password" if password is not None else "signs in only through the proxy header"
        out.write(f"Added {row.username} ({row.role}); {how}.\n")
        return EXIT_OK
    row = await _existing_user(accounts, args.name)
    if command == "set-role":
        await gate.set_role(row.username, Role(args.role))
        out.write(f"{row.username}: {row.role} → {args.role}\n")
    elif command in ("disable", "enable"):
        await gate.set_disabled(row.username, command == "disable")
        out.write(f"{row.username}: {command}d" + (" (they can no longer sign in)" if command == "disable" else "")
                  + "\n")
    elif command == "passwd":
        await gate.set_password(row.username, read_password(row.username))
        out.write(f"{row.username}: password changed\n")
    return EXIT_OK
