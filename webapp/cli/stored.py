"""`list`, `show`, `export` and `delete`: the stored debates."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from webapp import export
from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.cli.common import EXIT_FAILED, EXIT_OK, UsageError, opened, settings_of
from webapp.engine import audience
from webapp.engine.engine import DebateNotFound
from webapp.engine.public import DebateState
from webapp.store.comments import CommentStore
from webapp.terminal import exact_output


def write_export(state: DebateState, path: Path, talk: export.Talk | None = None,
                 people: dict[str, Any] | None = None) -> None:
    exporter = export.writer_for(path.suffix)
    if exporter is None:
        raise UsageError(f"export: unknown file type {path.suffix or '(none)'}; use .md, .json or .txt")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(exporter(state, talk, people), encoding="utf-8")


async def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, settings_of(args)) as engine:
        rows, total = await engine.list_debates(limit=args.limit)
    if args.json:
        exact_output(out).write(json.dumps([r.model_dump(mode="json") for r in rows], indent=2) + "\n")
        return EXIT_OK
    if not rows:
        out.write("No debates yet. Start one: python -m webapp debate \"Your topic\"\n")
        return EXIT_OK
    for r in rows:
        out.write(f"{r.id}  {r.created_at:%Y-%m-%d %H:%M}  {r.status:<24} {r.format:<16} ${r.cost_usd:<8.4f} "
                  f"{r.topic[:60]}\n")
    if total > len(rows):
        out.write(f"… {total - len(rows)} more (use --limit)\n")
    return EXIT_OK


async def _load_state(args: argparse.Namespace) -> tuple[DebateState, export.Talk, dict[str, Any]]:
    """The debate, its comments and reaction counts per turn (`webapp.store.comments`), and its audience
    vote and people's verdicts (`webapp.engine.audience`): both kept beside the log."""
    async with opened(args.db, settings_of(args)) as engine:
        state = (await engine.session(args.id)).state
        talk = await CommentStore(engine.store).for_debate(state.id)
        return state, talk, await audience.read_people(engine.store, state)


async def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    state, talk, people = await _load_state(args)
    writer = export.writer_for("json" if args.json else "txt" if args.text else "md")
    assert writer is not None  # these three are always known
    text = writer(state, talk, people)
    (exact_output(out) if args.json else out).write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


async def cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    state, talk, people = await _load_state(args)
    write_export(state, Path(args.path), talk, people)
    out.write(f"Exported {state.id} to {args.path}\n")
    return EXIT_OK


def _confirm(question: str, out: TextIO) -> bool:
    out.write(f"{question} [y/N] ")
    out.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


async def cmd_delete(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, settings_of(args)) as engine:
        debate_id = await engine.store.find_id(args.id)
        row = await engine.store.get_row(debate_id) if debate_id else None
        if debate_id is None or row is None:
            raise DebateNotFound(args.id)
        if not args.yes:
            if sys.stdin is None or not sys.stdin.isatty():
                raise UsageError(f"delete: not deleting {debate_id} without confirmation; stdin is not a terminal, "
                                 "so pass --yes")
            if not _confirm(f"Delete debate {debate_id} ({row.status}: {row.topic[:60]!r}) with its whole log and "
                            "share links? This cannot be undone.", out):
                out.write("Not deleted.\n")
                return EXIT_FAILED
        await Gate(engine, CLI).delete(debate_id)
    out.write(f"Deleted {debate_id} ({row.topic[:60]}).\n")
    return EXIT_OK
