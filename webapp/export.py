"""Exports of a debate: Markdown, plain text and JSON, all built from its `DebateState`.

Used by the web app's download buttons and by the CLI (`show --json` prints `to_json`). The words
are kept as written, but made inert where the file lands (`webapp.hygiene`): Markdown shows raw HTML
(`<script>`, `<img onerror=…>`) as text and keeps code verbatim, the text export has no control
characters (ESC sequences, NUL, bidi overrides), and JSON stays exact (it escapes what it must).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from webapp.engine.state import DebateState
from webapp.hygiene import code_fence, escape_markdown, escape_markdown_inline, strip_controls
from webapp.models import Participant, Turn

# The ledger's totals an export shows (tokens are listed on their own).
COST_KEYS = ("total_usd", "by_model", "by_participant", "by_round", "unpriced_models", "simulated",
             "estimated_usage")
# Said of a turn whose server reported no usage (its token counts were estimated from the text).
ESTIMATED_NOTE = "token counts estimated (the server reported no usage)"


def _name(state: DebateState, participant_id: str | None) -> str:
    if participant_id is None:
        return "tie"
    try:
        return state.config.participant(participant_id).name
    except KeyError:
        return participant_id


def _who(p: Participant) -> str:
    return f"{p.name} ({p.position}, {p.provider}:{p.model})"


def to_dict(state: DebateState) -> dict[str, Any]:
    """The `show --json` shape (plus a few extra keys)."""
    verdict = state.verdict
    ledger = state.ledger.to_dict()
    return {
        "id": state.id,
        "topic": state.config.topic,
        "format": state.config.format,
        "status": state.status.value,
        "created_at": state.created_at.isoformat(),
        "created_by": state.created_by or None,
        "participants": [
            {"id": p.id, "name": p.name, "role": p.position, "provider": p.provider, "model": p.model,
             "color": p.color}
            for p in state.config.participants
        ],
        "turns": [
            {
                "seq": seq,
                "key": turn.key,
                "phase": turn.phase,
                "round": turn.round,
                "speaker": turn.speaker,
                "act": turn.act,
                "text": turn.text,
                "usage": {"input_tokens": turn.usage.input_tokens, "output_tokens": turn.usage.output_tokens,
                          "estimated": turn.usage.estimated},
                "cost_usd": turn.cost_usd,
                "visible": turn.visible,
                "notes": list(turn.notes),
                # a human seat's turn: who wrote it, the model that drafted it, whether the time ran out
                **({"by": turn.by} if turn.by else {}),
                **({"assisted_by": turn.assisted_by} if turn.assisted_by else {}),
                **({"skipped": True} if turn.skipped else {}),
            }
            for seq, turn in enumerate(state.turns, start=1)
        ],
        "transitions": [
            {"from": t["from"], "to": t["to"], "event": t["event"], "at": t["at"], "actor": t["actor"]}
            for t in state.transitions
        ],
        "actions": [dict(a) for a in state.actions],
        "verdict": None if verdict is None else {
            "available": verdict.available,
            "winner": verdict.winner,
            "scores": dict(verdict.scores),
            "criteria": {
                criterion: {pid: {"score": s.score, "note": s.note} for pid, s in by_pid.items()}
                for criterion, by_pid in verdict.criteria.items()
            },
            "reasoning": verdict.reasoning,
            "confidence": verdict.confidence,
            "disagreement": verdict.disagreement,
            "rulings": [r.model_dump(mode="json") for r in verdict.rulings],
            "synthesis": verdict.synthesis,
            "raw_text": verdict.raw_text,
        },
        "round_scores": [
            {"round": r.get("round"), "scores": dict(r.get("scores") or {})} for r in state.round_scores
        ],
        "ended_because": state.ended_because,
        "cost": {key: ledger[key] for key in COST_KEYS},
        "tokens": ledger["tokens_by_model"],
    }


def to_json(state: DebateState) -> str:
    return json.dumps(to_dict(state), indent=2, ensure_ascii=False)


def _grouped(state: DebateState) -> list[tuple[str, list[Turn]]]:
    """Visible turns grouped by (phase, round) in the order they happened."""
    groups: dict[tuple[str, int], tuple[str, list[Turn]]] = {}
    multi_round = state.total_rounds > 1
    for turn in state.turns:
        if not turn.visible:
            continue
        key = (turn.phase, turn.round)
        if key not in groups:
            try:
                phase = state.format.phase(turn.phase)
            except KeyError:
                title = turn.phase
            else:
                title = phase.title
                if multi_round and phase.scope == "round":
                    title += f" — round {turn.round}"
            groups[key] = (title, [])
        groups[key][1].append(turn)
    return list(groups.values())


def _cost_line(state: DebateState) -> str:
    ledger = state.ledger
    line = f"${ledger.total_usd:.4f}"
    if ledger.unpriced_models:
        line += f" (unpriced: {', '.join(sorted(ledger.unpriced_models))})"
    if ledger.simulated:
        line += " (simulated prices)"
    if ledger.estimated_usage:
        line += " (some token counts estimated)"
    return line


def _turn_notes(turn: Turn) -> list[str]:
    """A turn's notes as exports show them (estimated usage included)."""
    return [*turn.notes, *([ESTIMATED_NOTE] if turn.usage.estimated else [])]


def to_markdown(state: DebateState) -> str:
    config = state.config
    md, inline = escape_markdown, escape_markdown_inline  # every value from a model or a person

    def name(pid: str | None) -> str:
        return inline(_name(state, pid))

    lines = [f"# {inline(config.topic)}", "", f"- **Format:** {state.format.title}",
             f"- **Status:** {state.status.value}"]
    lines.append("- **Participants:** " + ", ".join(inline(_who(p)) for p in config.participants))
    lines.append(f"- **Cost:** {inline(_cost_line(state))}")
    if state.ended_because:
        lines.append(f"- **Ended because:** {inline(state.ended_because)}")
    lines.append("")
    for title, turns in _grouped(state):
        lines += [f"## {inline(title)}", ""]
        for turn in turns:
            lines += [f"### {name(turn.speaker)}", "", md(turn.text), ""]
            notes = _turn_notes(turn)
            lines += [f"> _{inline(note)}_" for note in notes]
            if notes:
                lines.append("")
    verdict = state.verdict
    if verdict is not None:
        lines += ["## Verdict", ""]
        if not verdict.available:
            lines += ["Verdict unavailable.", "", md(verdict.reasoning), ""]
            if verdict.raw_text:
                raw = strip_controls(verdict.raw_text)
                fence = code_fence(raw)  # longer than any run of backticks inside: it cannot be closed early
                lines += [fence, raw, fence, ""]
        else:
            lines += [f"**Winner:** {name(verdict.winner)}", ""]
            if verdict.confidence is not None:
                lines += [f"**Confidence:** {verdict.confidence:.0%}", ""]
            pids = list(verdict.scores)
            if pids:
                lines.append("| Criterion | " + " | ".join(name(p) for p in pids) + " |")
                lines.append("|---|" + "---|" * len(pids))
                for criterion, by_pid in verdict.criteria.items():
                    cells = [f"{by_pid[p].score:g}" if p in by_pid else "–" for p in pids]
                    lines.append(f"| {inline(criterion)} | " + " | ".join(cells) + " |")
                lines.append("| **Overall** | " + " | ".join(f"**{verdict.scores[p]:g}**" for p in pids) + " |")
                lines.append("")
            if verdict.reasoning:
                lines += [md(verdict.reasoning), ""]
            if verdict.synthesis:
                lines += ["### Final solution", "", md(verdict.synthesis), ""]
    return "\n".join(lines).rstrip() + "\n"


def to_text(state: DebateState) -> str:
    config = state.config
    lines = [config.topic, "=" * min(len(config.topic), 78), "",
             f"Format: {state.format.title}", f"Status: {state.status.value}", f"Cost: {_cost_line(state)}"]
    lines += [f"Participant: {_who(p)}" for p in config.participants]
    if state.ended_because:
        lines.append(f"Ended because: {state.ended_because}")
    lines.append("")
    for title, turns in _grouped(state):
        lines += [title.upper(), "-" * min(len(title), 78), ""]
        for turn in turns:
            lines += [f"{_name(state, turn.speaker)}:", turn.text, ""]
            lines += [f"  [{note}]" for note in _turn_notes(turn)]
    verdict = state.verdict
    if verdict is not None:
        lines += ["VERDICT", "-------", ""]
        if not verdict.available:
            lines += ["Verdict unavailable.", verdict.reasoning]
        else:
            lines.append(f"Winner: {_name(state, verdict.winner)}")
            lines += [f"  {_name(state, pid)}: {score:g}/100" for pid, score in verdict.scores.items()]
            lines += ["", verdict.reasoning]
            if verdict.synthesis:
                lines += ["", "Final solution:", verdict.synthesis]
    return strip_controls("\n".join(lines)).rstrip() + "\n"  # the words as written, minus ESC, NUL…


# file extension -> (writer, media type): the one table behind the page's downloads and the CLI.
FORMATS: dict[str, tuple[Callable[[DebateState], str], str]] = {
    "md": (to_markdown, "text/markdown"),
    "json": (to_json, "application/json"),
    "txt": (to_text, "text/plain"),
}
ALIASES = {"markdown": "md", "text": "txt"}


def writer_for(extension: str) -> Callable[[DebateState], str] | None:
    """The export function for a file extension (`.md`, `md`, `markdown`, …), or None."""
    ext = extension.lower().lstrip(".")
    entry = FORMATS.get(ALIASES.get(ext, ext))
    return entry[0] if entry else None
