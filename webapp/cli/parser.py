"""The command line's grammar: every command, its options and help text, in the order `--help` lists them."""

from __future__ import annotations

import argparse

from webapp.access import token_commands
from webapp.access.roles import Role
from webapp.engine.formats import FORMATS
from webapp.tournament import commands as tournament_commands
from webapp.webhooks.events import EVENTS as WEBHOOK_EVENTS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m webapp", description="Rostrum: debates between LLMs.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=None,
                        help="database file or postgresql:// URL (default: ROSTRUM_DB or data/rostrum.sqlite3)")
    sub = parser.add_subparsers(dest="command", required=True)

    debate = sub.add_parser("debate", parents=[common], help="run a debate, streaming it live")
    debate.add_argument("topic", nargs="?")
    debate.add_argument("--format", help=f"one of: {', '.join(FORMATS)}")
    debate.add_argument("--rounds", type=int)
    debate.add_argument("--questions", type=int, help="cross-examination questions per side")
    debate.add_argument("--config", help="a .toml or .json file with the debate config")
    debate.add_argument("--participant", action="append", metavar="SPEC",
                        help="name=Ada,provider=demo,model=demo,position=pro,persona=… (repeatable)")
    debate.add_argument("--judge", action="append", metavar="SPEC", help="provider=demo,model=demo (repeatable)")
    debate.add_argument("--no-judge", action="store_true", help="skip the verdict")
    debate.add_argument("--judge-swap-sides", action="store_true",
                        help="judge twice, the second time with the order reversed (a flipped judge is undecided)")
    debate.add_argument("--cost-limit", type=float, metavar="USD")
    debate.add_argument("--warn-at", type=float, metavar="USD")
    debate.add_argument("--stop-at-warning", action="store_true", help="stop instead of continuing at warn-at")
    debate.add_argument("--seed", type=int)
    debate.add_argument("--word-limit", type=int)
    debate.add_argument("--timeout", type=float, metavar="S",
                        help="turn timeout in seconds (default 120; 900 for local servers)")
    debate.add_argument("--no-clarification", action="store_true", help="collaborative: skip the questions")
    debate.add_argument("--human-turn-seconds", type=int, metavar="S",
                        help="a human seat's time per turn in seconds (default 600; 0: no limit)")
    debate.add_argument("--tag", action="append", metavar="TAG", help="a topic tag (repeatable)")
    debate.add_argument("--export", metavar="PATH", help="write the transcript (.md, .json, .txt) at the end")

    rematch = sub.add_parser("rematch", parents=[common],
                             help="run a finished or stopped debate again with the participants' positions exchanged")
    rematch.add_argument("id")
    rematch.add_argument("--swap-sides", action="store_true",
                         help="each debater takes the other's position and place in the speaking order")
    rematch.add_argument("--export", metavar="PATH")
    rematch.add_argument("--stop-at-warning", action="store_true")

    resume = sub.add_parser("resume", parents=[common], help="continue a paused, failed or interrupted debate")
    resume.add_argument("id")
    resume.add_argument("--export", metavar="PATH")
    resume.add_argument("--stop-at-warning", action="store_true")

    lst = sub.add_parser("list", parents=[common], help="stored debates")
    lst.add_argument("--json", action="store_true")
    lst.add_argument("--limit", type=int, default=50)

    show = sub.add_parser("show", parents=[common], help="print a debate")
    group = show.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true")
    group.add_argument("--markdown", action="store_true")
    group.add_argument("--text", action="store_true")
    show.add_argument("id")

    export = sub.add_parser("export", parents=[common], help="write a debate to a file")
    export.add_argument("id")
    export.add_argument("path")

    formats = sub.add_parser("formats", help="the built-in formats")
    formats.add_argument("--json", action="store_true")

    diagram = sub.add_parser("diagram", help="the state machine as Mermaid")
    diagram.add_argument("--format")

    move = sub.add_parser("migrate-store", help="copy everything to another store (e.g. SQLite to PostgreSQL)")
    move.add_argument("--from", dest="source", required=True, metavar="SOURCE",
                      help="sqlite:PATH (or a path), or a postgresql:// URL")
    move.add_argument("--to", dest="target", required=True, metavar="TARGET",
                      help="a postgresql:// URL, or sqlite:PATH; must hold no debates or accounts yet")

    judges = sub.add_parser("judges", parents=[common],
                            help="judge health: parse failures, order bias, flips on swap, agreement")
    judges.add_argument("--json", action="store_true")

    board = sub.add_parser("leaderboard", parents=[common],
                           help="Bradley-Terry ratings per model (95%% intervals), head-to-head records")
    board.add_argument("--json", action="store_true")
    board.add_argument("--format", help=f"only debates of this format ({', '.join(FORMATS)})")
    board.add_argument("--tag", help="only debates with this topic tag")
    board.add_argument("--judge", metavar="MODEL", help="only debates this judge model ruled on (provider:model)")
    board.add_argument("--since", metavar="DATE", help="only debates created on or after this date (YYYY-MM-DD)")
    board.add_argument("--until", metavar="DATE", help="only debates created on or before this date (YYYY-MM-DD)")
    board.add_argument("--series", action="store_true",
                       help="only side-swapped series, each rated once as a pair")
    board.add_argument("--by", choices=("judges", "audience", "people"), default="judges",
                       help="who decides each debate: the AI judges (default), the audience's swing, or the "
                            "people's verdicts")

    delete = sub.add_parser("delete", parents=[common], help="remove a debate with its log and share links")
    delete.add_argument("id")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    users = sub.add_parser("users", help="accounts for signing in to the web app")
    users_sub = users.add_subparsers(dest="users_command", required=True, metavar="COMMAND")
    roles = [r.value for r in Role]
    add = users_sub.add_parser("add", parents=[common], help="create an account (password from stdin or a prompt)")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=roles)
    add.add_argument("--no-password", action="store_true",
                     help="no password: the account signs in only through the proxy's identity header")
    users_list = users_sub.add_parser("list", parents=[common], help="every account (never a password hash)")
    users_list.add_argument("--json", action="store_true")
    set_role = users_sub.add_parser("set-role", parents=[common], help="change an account's role")
    set_role.add_argument("name")
    set_role.add_argument("role", choices=roles)
    for name, text in (("disable", "stop an account from signing in"), ("enable", "let a disabled account in again"),
                       ("passwd", "set a new password (from stdin or a prompt)")):
        users_sub.add_parser(name, parents=[common], help=text).add_argument("name")
    tournament_commands.add_parser(sub, common)
    check = sub.add_parser("check", help="whether OpenAI-compatible servers answer, and their structured-output mode")
    check.add_argument("targets", nargs="*", metavar="URL|PRESET",
                       help="a server's OpenAI-compatible URL (…/v1) or a preset name (default: every local preset)")
    check.add_argument("--model", help="the model to probe (default: the first the server lists)")
    check.add_argument("--json", action="store_true")
    hooks = sub.add_parser("webhooks", help="signed HTTP notifications of debate and tournament events")
    hooks_sub = hooks.add_subparsers(dest="webhooks_command", required=True, metavar="COMMAND")
    hook_add = hooks_sub.add_parser("add", parents=[common], help="register an endpoint (prints its secret once)")
    hook_add.add_argument("url")
    hook_add.add_argument("--events", required=True, help=f"comma-separated: {', '.join(WEBHOOK_EVENTS)}")
    hook_add.add_argument("--slack", action="store_true", help="send Slack-compatible messages ({\"text\": …})")
    hooks_sub.add_parser("list", parents=[common], help="the endpoints (never a secret)") \
        .add_argument("--json", action="store_true")
    hooks_sub.add_parser("remove", parents=[common], help="remove an endpoint and its deliveries").add_argument("id")
    hook_log = hooks_sub.add_parser("deliveries", parents=[common], help="recent deliveries, newest first")
    hook_log.add_argument("--json", action="store_true")
    hook_log.add_argument("--limit", type=int, default=20)
    hooks_sub.add_parser("redeliver", parents=[common], help="send a delivery again").add_argument("id")
    token_commands.add_parser(sub, common)
    worker = sub.add_parser("worker", parents=[common], help="run debates for web processes (leases, jobs)")
    worker.add_argument("--lease", type=float, default=15.0,
                        help="seconds a debate stays this worker's without renewal (default 15)")
    worker.add_argument("--poll", type=float, default=1.0,
                        help="seconds between reads of the jobs table when no ring comes (default 1)")
    return parser
