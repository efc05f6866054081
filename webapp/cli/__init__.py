"""The command-line interface: `python -m webapp …` runs the same engine headless.

    debate TOPIC [options]   run a debate, streaming it to the terminal
    rematch ID --swap-sides  run a finished or stopped debate again with the positions exchanged
    resume ID                continue a paused, failed or interrupted debate
    list [--json]            stored debates, newest first
    show ID [--json|--markdown|--text]
    export ID PATH           .md, .json or .txt, chosen by the extension
    delete ID [--yes]        remove a debate, its whole log and its share links
    judges [--json]          judge health per judge model, from every stored verdict
    leaderboard [--json] [--format F] [--tag T] [--judge MODEL] [--since DATE] [--until DATE] [--series]
                [--by judges|audience|people]
                             Bradley-Terry ratings per model with 95% intervals, and head-to-head records
    formats [--json]         the built-in format declarations
    diagram [--format F]     the state machine as a Mermaid diagram
    users add NAME --role admin|operator|viewer [--no-password]
    users list [--json]      accounts (never a password hash)
    users set-role NAME ROLE
    users disable NAME | users enable NAME
    users passwd NAME        set a new password
    migrate-store --from sqlite:PATH --to postgresql://…
                             copy every debate, account, share link, audit row, saved profile and
                             template and tournament to another store, verifying counts and checksums
    tournament --models A,B,C --topics FILE [--format F] [--swap-sides] [--budget USD] [--concurrency N]
    tournament --resume ID [--budget USD]   continue a stopped or interrupted tournament
    webhooks add URL --events debate.completed,debate.error [--slack]
                             register an endpoint; prints its signing secret once (`secret: whsec_…`)
    webhooks list [--json] | webhooks remove ID
    webhooks deliveries [--json] [--limit N] | webhooks redeliver ID
    tokens create --user NAME [--role ROLE] [--expires DAYS] [--name LABEL]   a personal API token
                             for the HTTP API, printed once (`token: rst_…`)
    tokens list [--user NAME] [--json] | tokens revoke ID
    worker [--lease S] [--poll S]   run debates for web processes (see README, "Scaling out"), until
                             SIGTERM or Ctrl-C
    check [URL|PRESET ...] [--model M] [--json]
                             whether each OpenAI-compatible server answers, and which structured-output
                             mode it accepts (one tiny probe); default: every local preset

Passwords are read from the first line of stdin when it is not a terminal, otherwise prompted for
twice without echo. Everything the CLI does is recorded with the actor `cli` (in the debate's log
and, for commands, in the audit trail).
"""

# One module per command group; `main` is in `entry`, the grammar in `parser`. What other code and the
# tests import from `webapp.cli` is re-exported here, so `webapp.cli:main` stays the console script.
from webapp.cli.common import (
    ACTOR,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    UsageError,
    opened,
)
from webapp.cli.config import build_config, parse_spec
from webapp.cli.entry import main
from webapp.cli.parser import build_parser

__all__ = ["ACTOR", "EXIT_FAILED", "EXIT_OK", "EXIT_STOPPED", "EXIT_USAGE", "UsageError", "build_config",
           "build_parser", "main", "opened", "parse_spec"]
