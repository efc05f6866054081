"""What each role is asked in each phase: builds the provider request for a turn.

Every speaker sees the topic, its own position and persona, the phase's instruction and word
limit, and the visible transcript so far (which is how a rebuttal sees the opponent's opening and a
closing sees every earlier statement). Private preparation notes are shown only to their author.
"""

from __future__ import annotations

from typing import Any

from webapp.engine.formats import Format, Phase
from webapp.engine.schedule import TurnSlot
from webapp.models import DebateConfig, Participant, Turn
from webapp.providers.base import Message, ProviderRequest

POSITION_WORDS = {
    "pro": "for the motion (affirmative)",
    "con": "against the motion (negative)",
    "moderator": "the neutral moderator",
}

ACT_GUIDANCE = {
    "prepare": "These are private preparation notes; your opponent will not see them.",
    "ask": "Ask exactly one question of your opponent. Do not answer it yourself.",
    "answer": "Answer the question just put to you, directly, then defend your case.",
    "propose": "Write a concrete proposal.",
    "critique": "Critique each other participant's latest proposal, naming its author.",
    "refine": "Revise your own proposal in the light of the critiques; say what changed.",
    "synthesize": "Summarise the debate fairly; do not take sides.",
    "speak": "",
}


def describe_position(participant: Participant) -> str:
    return POSITION_WORDS.get(participant.position, f"the {participant.position} perspective")


def speaker_label(participant: Participant) -> str:
    return f"{participant.name} ({describe_position(participant)})"


def effective_word_limit(phase: Phase, config: DebateConfig) -> int | None:
    return config.word_limit or phase.word_limit


def visible_history(turns: list[Turn], viewer: str) -> list[Turn]:
    """Turns the viewer may see: every public turn plus its own private ones. Preparation notes stay
    private to their author even when `show_preparation` shows them to the spectators."""
    return [t for t in turns if t.speaker == viewer or (t.visible and t.act != "prepare")]


def opponent_last(turns: list[Turn], speaker: Participant, config: DebateConfig,
                  questions: bool = False) -> Turn | None:
    """The latest visible turn by someone with another position (or anyone else for seats).

    Unless `questions` is set, cross-examination questions are skipped: a speaker answers the
    opponent's arguments, and only an answer is about the question just asked."""
    for turn in reversed(turns):
        if not turn.visible or turn.speaker == speaker.id:
            continue
        if turn.act == "ask" and not questions:
            continue
        try:
            other = config.participant(turn.speaker)
        except KeyError:
            continue
        if other.position != speaker.position or speaker.position not in ("pro", "con"):
            return turn
    return None


def render_history(turns: list[Turn], config: DebateConfig, fmt: Format) -> str:
    titles = {p.id: p.title for p in fmt.phases}
    lines: list[str] = []
    for turn in turns:
        try:
            who = speaker_label(config.participant(turn.speaker))
        except KeyError:
            who = turn.speaker
        if turn.phase == "summary":
            lines.append(f"[Summary of earlier turns]\n{turn.text}")
            continue
        title = titles.get(turn.phase, turn.phase)
        lines.append(f"[{title}, round {turn.round}] {who}:\n{turn.text}")
    return "\n\n".join(lines)


def system_prompt(participant: Participant, config: DebateConfig, fmt: Format) -> str:
    parts = [
        f"You are {participant.name}, taking part in a {fmt.title} debate.",
        f"The topic is: {config.topic}",
        f"Your position: {describe_position(participant)}. Argue from it consistently.",
    ]
    if participant.persona:
        parts.append(f"Persona: {participant.persona}")
    parts.append("Write plain prose (no headings). Refer to what the others actually said.")
    return "\n".join(parts)


def turn_request(
    *,
    slot: TurnSlot,
    participant: Participant,
    config: DebateConfig,
    fmt: Format,
    history: list[Turn],
    turn_number: int,
    round_total: int,
    extra_context: dict[str, Any] | None = None,
) -> ProviderRequest:
    """The request for one debate turn. `history` is already filtered and compressed."""
    phase = fmt.phase(slot.phase)
    limit = effective_word_limit(phase, config)
    transcript = render_history(history, config, fmt)
    round_note = f" (round {slot.round} of {round_total})" if phase.scope == "round" else ""
    instruction = [
        f"Topic: {config.topic}",
        f"Your position: {describe_position(participant)}.",
        "",
        "Transcript so far:" if transcript else "No one has spoken yet.",
        transcript,
        "",
        *([f"What the user told us when asked:\n{extra_context['brief']}", ""]
          if extra_context and extra_context.get("brief") else []),
        f"Phase: {phase.title}{round_note}. {phase.instruction}",
        ACT_GUIDANCE.get(slot.act, ""),
        *([str(extra_context["guidance"])] if extra_context and extra_context.get("guidance") else []),
    ]
    if limit:
        instruction.append(f"Use at most {limit} words.")
    last = opponent_last(history, participant, config, questions=slot.act == "answer")
    context: dict[str, Any] = {
        "topic": config.topic,
        "position": participant.position,
        "persona": participant.persona,
        "act": slot.act,
        "phase": phase.id,
        "phase_title": phase.title,
        "round": slot.round,
        "turn_key": slot.key,
        "turn_number": turn_number,
        "seed": config.seed,
        "word_limit": limit,
        "speaker": participant.id,
        "seen_turns": [t.key for t in history],
    }
    if last is not None:
        context["opponent_last"] = {
            "name": config.participant(last.speaker).name,
            "text": last.text,
            "key": last.key,
        }
    if extra_context:
        context.update(extra_context)
    return ProviderRequest(
        model=participant.model,
        system=system_prompt(participant, config, fmt),
        messages=[Message(role="user", content="\n".join(s for s in instruction if s is not None).strip())],
        max_tokens=participant.max_tokens,
        temperature=participant.temperature,
        purpose="turn",
        context=context,
        connect_timeout=config.timeouts.connect,
        first_token_timeout=config.timeouts.first_token,
    )
