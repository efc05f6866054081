"""`webhooks`: register, list and remove endpoints, read and redo deliveries."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.cli.common import EXIT_OK, UsageError, opened, settings_of
from webapp.settings import get_settings
from webapp.terminal import exact_output
from webapp.webhooks.guard import WebhookRefused
from webapp.webhooks.manage import UnknownWebhook, WebhookAdmin


async def cmd_webhooks(args: argparse.Namespace, out: TextIO) -> int:
    settings = settings_of(args) or get_settings()
    async with opened(args.db, settings) as engine:
        admin = WebhookAdmin(Gate(engine, CLI), settings.webhook_allow_private)  # audited as `cli`
        command = args.webhooks_command
        try:
            if command == "add":
                done = await admin.add(args.url, args.events, "slack" if args.slack else "json")
                out.write(f"Added webhook {done.endpoint.id}: {done.endpoint.url} "
                          f"({', '.join(done.endpoint.events)}{', Slack format' if args.slack else ''})\n")
                out.write(f"secret: {done.secret}\n")
                out.write("Keep the secret: it signs every delivery and is not shown again.\n")
            elif command == "list":
                endpoints = await admin.endpoints()
                if args.json:
                    exact_output(out).write(json.dumps([e.public() for e in endpoints], indent=2) + "\n")
                elif not endpoints:
                    out.write("No webhooks. Add one: python -m webapp webhooks add URL --events debate.completed\n")
                for e in [] if args.json else endpoints:
                    out.write(f"{e.id}  {e.url}  {','.join(e.events)}  {e.format}  by {e.created_by}\n")
            elif command == "remove":
                removed = await admin.remove(args.id)
                out.write(f"Removed webhook {removed.id} ({removed.url})\n")
            elif command == "deliveries":
                rows, total = await admin.deliveries(limit=args.limit)
                if args.json:
                    exact_output(out).write(json.dumps([r.model_dump(mode="json") for r in rows], indent=2) + "\n")
                else:
                    out.write(f"{total} deliver{'y' if total == 1 else 'ies'}\n")
                    for r in rows:
                        code = r.last_status if r.last_status is not None else "—"
                        error = f"  last error: {r.last_error}" if r.last_error else ""
                        out.write(f"{r.id}  {r.event}  {r.subject}  {r.status}  attempts {r.attempts}  "
                                  f"HTTP {code}{error}\n")
            else:
                again = await admin.redeliver(args.id)
                out.write(f"Delivery {again.id} ({again.event}) will be sent again\n")
        except (WebhookRefused, UnknownWebhook, ValueError) as exc:
            raise UsageError(f"webhooks {command}: {exc}") from None
    return EXIT_OK
