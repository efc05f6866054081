"""`formats` and `diagram`: the built-in formats and the state machine; no database needed."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from webapp.cli.common import EXIT_OK, UsageError
from webapp.engine.formats import FORMATS, get_format
from webapp.engine.public import to_mermaid
from webapp.terminal import exact_output


def cmd_formats(args: argparse.Namespace, out: TextIO) -> int:
    if args.json:
        data = [
            {
                "id": f.id,
                "title": f.title,
                "description": f.description,
                "termination": f.termination.model_dump(),
                "phases": [
                    {"id": p.id, "title": p.title, "speakers": [s.side if s.act == "speak" else f"{s.side}:{s.act}"
                                                               for s in p.speakers],
                     "turns_per_speaker": p.turns_per_speaker, "repeat": p.repeat, "parallel": p.parallel,
                     "scope": p.scope, "word_limit": p.word_limit}
                    for p in f.phases
                ],
            }
            for f in FORMATS.values()
        ]
        exact_output(out).write(json.dumps(data, indent=2) + "\n")
        return EXIT_OK
    for f in FORMATS.values():
        rounds = ""
        if f.has_rounds:
            t = f.termination
            rounds = f" — rounds {t.min_rounds}–{t.max_rounds} (default {t.default_rounds}, {t.kind})"
        out.write(f"{f.id}: {f.title}{rounds}\n  {f.description}\n")
        for p in f.phases:
            mode = "parallel" if p.parallel else "in turn"
            who = ", ".join(s.side if s.act == "speak" else f"{s.side} {s.act}s" for s in p.speakers)
            scope = " [each round]" if p.scope == "round" else ""
            out.write(f"    - {p.title}: {who} ({mode}){scope}\n")
    return EXIT_OK


def cmd_diagram(args: argparse.Namespace, out: TextIO) -> int:
    phases = None
    if args.format:
        try:
            fmt = get_format(args.format)
        except KeyError as exc:
            raise UsageError(f"--format: {exc}") from None
        phases = [(p.id, p.title) for p in fmt.phases]
    out.write(to_mermaid(phases) + "\n")
    return EXIT_OK
