"""Exports of a debate: Markdown, plain text and JSON, all built from its `DebateState`.

Used by the web app's download buttons and by the CLI (`show --json` prints `to_json`). The words
are kept as written, but made inert where the file lands (`webapp.hygiene`): Markdown shows raw HTML
(`<script>`, `<img onerror=…>`) as text and keeps code verbatim, the text export has no control
characters (ESC sequences, NUL, bidi overrides), and JSON stays exact (it escapes what it must).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from webapp.engine.panel import SPLIT_RULE, PanelDecision, panel_decision
from webapp.engine.state import DebateState
from webapp.hygiene import code_fence, escape_markdown, escape_markdown_inline, strip_controls
from webapp.models import Participant, Turn
from webapp.store.comments import REACTIONS, TurnTalk

# turn key -> what people said about it (`webapp.store.comments`): comments and reaction counts
Talk = Mapping[str, TurnTalk]
NO_TALK = TurnTalk()

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


def _winner_line(decision: PanelDecision, name: Callable[[str | None], str]) -> str:
    """"Ada", "Ada (majority of judges (2–1))", "no winner (judges split 1–1: no winner)": by the panel rule."""
    if decision.how == "single":
        return name(decision.winner)
    if decision.winner is None and decision.how in ("split", "undecided"):
        return f"no winner ({decision.words})"
    return f"{name(decision.winner)} ({decision.words})"


def to_dict(state: DebateState, talk: Talk | None = None, people: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `show --json` shape (plus a few extra keys); each turn with its comments and reaction counts.
    `people`: the audience vote and the people's verdicts (`webapp.engine.audience.summary`), which live
    beside the log, not in it."""
    talk = talk or {}
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
             "color": p.color, "persona": p.persona}
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
                **talk.get(turn.key, NO_TALK).public(),
                # a human seat's turn: who wrote it, the model that drafted it, whether the time ran out
                **({"by": turn.by} if turn.by else {}),
                **({"assisted_by": turn.assisted_by} if turn.assisted_by else {}),
                **({"skipped": True} if turn.skipped else {}),
            }
            for seq, turn in enumerate(state.turns, start=1)
        ],
        "transitions": [
            {key: value for key, value in t.to_data().items() if key != "params"} for t in state.transitions
        ],
        "actions": [a.to_data() for a in state.actions],
        "verdict": None if verdict is None else {
            "available": verdict.available,
            # The winner by the one panel rule (`webapp.engine.panel`), and how it was decided.
            "winner": panel_decision(verdict).winner if verdict.available else None,
            "decision": panel_decision(verdict).public() if verdict.available else None,
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
            {"round": r.round, "scores": dict(r.scores)} for r in state.round_scores
        ],
        "ended_because": state.ended_because,
        "cost": {key: ledger[key] for key in COST_KEYS},
        "tokens": ledger["tokens_by_model"],
        **(people or {}),
    }


SOMEONE = "a team member"  # who did something, in what a share link's holder exports


def without_people(data: dict[str, Any]) -> dict[str, Any]:
    """`to_dict`'s data without the team's usernames (who created, paused, shared…): a share link
    shows the debate, not who is on the team. The engine's own steps stay `system`."""
    def anonymous(actor: Any) -> Any:
        return actor if actor in (None, "", "system") else SOMEONE

    return data | {
        "created_by": anonymous(data.get("created_by")),
        "transitions": [t | {"actor": anonymous(t.get("actor"))} for t in data.get("transitions", [])],
        "actions": [a | {"actor": anonymous(a.get("actor"))} for a in data.get("actions", [])],
        "turns": [turn | {"comments": [c | {"author": SOMEONE} for c in turn.get("comments", [])]}
                  for turn in data.get("turns", [])],
    } | people_without_names(data)


def people_without_names(people: dict[str, Any]) -> dict[str, Any]:
    """The people's verdicts without who gave them (the rest of `people` unchanged; {} when it has none)."""
    if "human_verdicts" not in people:
        return {}
    return {"human_verdicts": [v | {"by": SOMEONE} for v in people.get("human_verdicts") or []]}


def talk_without_people(talk: Talk) -> Talk:
    """Comments with their authors' names replaced (`without_people`, for a share link's downloads)."""
    return {key: entry.model_copy(update={"comments": [c.model_copy(update={"author": SOMEONE})
                                                       for c in entry.comments]})
            for key, entry in talk.items()}


def to_json(state: DebateState, talk: Talk | None = None, people: dict[str, Any] | None = None,
            names: bool = True) -> str:
    """The JSON export, each turn with its comments, and what the people said; without `names`, with no
    team member's username (`without_people`)."""
    data = to_dict(state, talk, people)
    return json.dumps(data if names else without_people(data), indent=2, ensure_ascii=False)


def _reaction_line(entry: TurnTalk) -> str:
    """"👍 2 · ❓ 1", or "" when nobody reacted."""
    return " · ".join(f"{emoji} {entry.reactions[emoji]}" for emoji in REACTIONS if entry.reactions.get(emoji))


def _people_lines(state: DebateState, people: dict[str, Any] | None) -> list[str]:
    """The audience vote and the people's verdict as plain lines (for Markdown, escaped by the caller)."""
    if not people:
        return []
    lines: list[str] = []
    vote = people.get("audience")
    if vote:
        for stage in ("before", "after"):
            counts = vote[stage]
            lines.append(f"{stage.capitalize()}: for {counts['for']}, against {counts['against']}, "
                         f"undecided {counts['undecided']}")
        if vote.get("winner"):
            swing = vote["swing"]
            lines.append(f"Swing (points): for {swing['for']:+g}, against {swing['against']:+g}, "
                         f"undecided {swing['undecided']:+g}; the room: {vote['winner']}")
    verdicts = people.get("human_verdicts") or []
    majority = (people.get("people_verdict") or {}).get("winner")
    if verdicts:
        who = "a tie" if majority == "tie" else _name(state, majority)
        lines.append(f"People's verdict: {who} ({len(verdicts)} verdict{'s' if len(verdicts) != 1 else ''})")
        for v in verdicts:
            winner = "tie" if v["winner"] is None else _name(state, v["winner"])
            note = f": {v['note']}" if v.get("note") else ""
            lines.append(f"- {v['by']}: {winner}{note}")
    return lines


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


def to_markdown(state: DebateState, talk: Talk | None = None, people: dict[str, Any] | None = None) -> str:
    config = state.config
    talk = talk or {}
    md, inline = escape_markdown, escape_markdown_inline  # every value from a model or a person

    def name(pid: str | None) -> str:
        return inline(_name(state, pid))

    lines = [f"# {inline(config.topic)}", "", f"- **Format:** {state.format.title}",
             f"- **Status:** {state.status.value}"]
    lines.append("- **Participants:** " + ", ".join(inline(_who(p)) for p in config.participants))
    lines += [f"- **Persona of {inline(p.name)}:** {inline(p.persona)}" for p in config.participants if p.persona]
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
            entry = talk.get(turn.key, NO_TALK)
            if entry.reactions and _reaction_line(entry):
                lines += [f"Reactions: {_reaction_line(entry)}", ""]
            lines += [f"- **{inline(c.author)}:** {inline(c.body)}" for c in entry.comments]
            if entry.comments:
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
            decision = panel_decision(verdict)
            lines += [f"**Winner:** {_winner_line(decision, name)}", ""]
            if decision.judges >= 2:
                lines += [f"_{inline(SPLIT_RULE)}_", ""]
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
    extra = _people_lines(state, people)
    if extra:
        lines += ["## The people", ""] + [("- " + inline(x[2:])) if x.startswith("- ") else inline(x) + "  "
                                          for x in extra] + [""]
    return "\n".join(lines).rstrip() + "\n"


def to_text(state: DebateState, talk: Talk | None = None, people: dict[str, Any] | None = None) -> str:
    config = state.config
    talk = talk or {}
    lines = [config.topic, "=" * min(len(config.topic), 78), "",
             f"Format: {state.format.title}", f"Status: {state.status.value}", f"Cost: {_cost_line(state)}"]
    for p in config.participants:
        lines.append(f"Participant: {_who(p)}")
        if p.persona:
            lines.append(f"  Persona: {' '.join(p.persona.split())}")
    if state.ended_because:
        lines.append(f"Ended because: {state.ended_because}")
    lines.append("")
    for title, turns in _grouped(state):
        lines += [title.upper(), "-" * min(len(title), 78), ""]
        for turn in turns:
            lines += [f"{_name(state, turn.speaker)}:", turn.text, ""]
            lines += [f"  [{note}]" for note in _turn_notes(turn)]
            entry = talk.get(turn.key, NO_TALK)
            if _reaction_line(entry):
                lines.append(f"  Reactions: {_reaction_line(entry)}")
            lines += [f"  {c.author}: {c.body}" for c in entry.comments]
    verdict = state.verdict
    if verdict is not None:
        lines += ["VERDICT", "-------", ""]
        if not verdict.available:
            lines += ["Verdict unavailable.", verdict.reasoning]
        else:
            decision = panel_decision(verdict)
            lines.append(f"Winner: {_winner_line(decision, lambda pid: _name(state, pid))}")
            if decision.judges >= 2:
                lines.append(SPLIT_RULE)
            lines += [f"  {_name(state, pid)}: {score:g}/100" for pid, score in verdict.scores.items()]
            lines += ["", verdict.reasoning]
            if verdict.synthesis:
                lines += ["", "Final solution:", verdict.synthesis]
    extra = _people_lines(state, people)
    if extra:
        lines += ["", "THE PEOPLE", "----------", "", *extra]
    return strip_controls("\n".join(lines)).rstrip() + "\n"  # the words as written, minus ESC, NUL…


class Writer(Protocol):
    """An export: the debate, and what people said about its turns (none: an export without them)."""

    def __call__(self, state: DebateState, talk: Talk | None = None, people: dict[str, Any] | None = None) -> str:
        ...


# file extension -> (writer, media type): the one table behind the page's downloads and the CLI.
FORMATS: dict[str, tuple[Writer, str]] = {
    "md": (to_markdown, "text/markdown"),
    "json": (to_json, "application/json"),
    "txt": (to_text, "text/plain"),
}
ALIASES = {"markdown": "md", "text": "txt"}


def writer_for(extension: str) -> Writer | None:
    """The export function for a file extension (`.md`, `md`, `markdown`, …), or None."""
    ext = extension.lower().lstrip(".")
    entry = FORMATS.get(ALIASES.get(ext, ext))
    return entry[0] if entry else None
