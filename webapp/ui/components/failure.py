"""What happened to a debate that stopped or failed, in words: who failed, on which provider and model,
and what to do about it; and who stopped it, where.

Pure functions of the engine's read model (`DebateState`: its recorded errors, their position, the
transitions with their actor) and the providers' error mapping (`ProviderError.reason`: auth,
rate_limit, quota, …; see `webapp.providers.base` and `sdk.status_error`), so they are tested without
a page. The error panel, the Retry buttons and the stopped note (`banners`, `controls`) show them.
"""

from __future__ import annotations

from dataclasses import dataclass

from webapp.access.roles import actor_label
from webapp.engine.public import SYSTEM_ACTOR, DebateState, ErrorInfo, State, TransitionRecord
from webapp.models import JudgeSpec, Participant
from webapp.providers.presets import get_preset
from webapp.providers.registry import DEFAULT_KEY_ENVS, TITLES, base_url_for, key_env_for


@dataclass(frozen=True)
class Failure:
    """An error explained: `headline` says what happened to whom, `advice` what to do next."""

    headline: str
    advice: str
    who: str | None  # the participant (or "the judge") whose call failed, when known
    spec: str | None  # "provider:model" of that call
    retry_label: str


def _title(spec: Participant | JudgeSpec) -> str:
    """"Anthropic", "OpenAI", "Ollama" (a compatible preset), or "The compatible server"."""
    if spec.provider == "compatible":
        preset = get_preset(spec.preset)
        return preset.title if preset else "compatible server"
    return TITLES.get(spec.provider, spec.provider)


def _failed_call(state: DebateState, error: ErrorInfo) -> tuple[str | None, Participant | JudgeSpec | None]:
    """Who made the call that failed: the participant whose turn it was, or the judge."""
    recorded = state.errors[-1] if state.errors else None
    if recorded is not None and recorded.state is State.JUDGING:
        judges = state.config.judge.judges
        match = [j for j in judges if j.provider == error.provider] or judges
        return "the judge", match[0] if match else None
    recorded_at = recorded.position if recorded is not None else None
    speaker = (recorded_at.speaker if recorded_at is not None else None) or state.position.speaker
    by_provider = [p for p in state.config.participants if p.provider == error.provider]
    try:
        participant = state.config.participant(speaker) if speaker else None
    except (KeyError, ValueError):
        participant = None
    if participant is not None and by_provider and participant not in by_provider and len(by_provider) == 1:
        participant = by_provider[0]  # a parallel phase notes the last speaker; the provider tells which
    if participant is None and len(by_provider) == 1:
        participant = by_provider[0]
    return (participant.name, participant) if participant is not None else (None, None)


def retry_label(who: str | None, left: int) -> str:
    """"Retry Opposition's turn (3 left)": the button says whose call runs again, and how many
    automatic retries remain."""
    what = "the judge's verdict" if who == "the judge" else f"{who}'s turn" if who else "the failed step"
    return f"Retry {what} ({left} left)"


def explain_error(state: DebateState, error: ErrorInfo | None, left: int) -> Failure:
    """The error the debate stopped on (else the last one recorded), in words, with the advice its kind
    calls for."""
    error = error or (state.errors[-1] if state.errors else ErrorInfo())
    reason = error.reason or "error"
    message = (error.message or "unknown error").strip()
    who, spec = _failed_call(state, error)
    label = retry_label(who, left)
    provider = error.provider
    if provider == "rostrum" or (spec is None and provider not in TITLES):
        if reason == "config":
            return Failure(f"The debate could not start its calls: {message}.",
                           "Set what is missing (a key goes in the environment or .env), then Retry; or Re-run "
                           "with edits to pick another provider.", who, None, label)
        return Failure(f"The debate stopped on an error: {message}.",
                       "Retry; if it happens again, Re-run with edits.", who, None, label)
    if spec is not None:
        title, model, env, url = _title(spec), f"{spec.provider}:{spec.model}", key_env_for(spec), base_url_for(spec)
        model_name = spec.model
    else:  # whose call it was is not recorded (e.g. two participants on that provider in a parallel phase)
        title, model, env, url = TITLES[provider], provider, DEFAULT_KEY_ENVS.get(provider), None
        model_name = "its model"
    name = who or "a participant"
    url = url or ""
    status = f" (HTTP {error.status})" if error.status else ""
    if reason == "auth":
        if env:
            return Failure(f"The {title} API rejected the key for {name} ({model}){status}.",
                           f"Set {env} (in the environment or .env) to a valid key, then Retry.", who, model, label)
        return Failure(f"The {title} server refused the request for {name} ({model}){status}.",
                       "Check the server's access settings, then Retry.", who, model, label)
    if reason == "quota":
        return Failure(f"The {title} account has no credit or quota left for {name} ({model}){status}.",
                       f"Add credit to the account{f' whose key is in {env}' if env else ''}, or set another key, "
                       "then Retry.", who, model, label)
    if reason == "rate_limit":
        return Failure(f"The {title} API is rate-limiting {name} ({model}){status}.",
                       "Wait a minute and Retry.", who, model, label)
    if reason in ("overloaded", "server"):
        what = "is overloaded" if reason == "overloaded" else "had a server error"
        return Failure(f"The {title} API {what} during {name}'s call ({model}){status}.",
                       "Wait a little and Retry.", who, model, label)
    if reason in ("timeout", "connection"):
        where = f" at {url}" if url else ""
        what = "did not answer in time" if reason == "timeout" else "could not be reached"
        return Failure(f"{title}{where} {what} for {name} ({model}).",
                       "Check that the server is running and reachable, then Retry.", who, model, label)
    if reason == "not_found":
        return Failure(f"{title} does not know the model “{model_name}” used by {name}{status}.",
                       "Re-run with edits to pick another model (or fix its name).", who, model, label)
    if reason == "bad_request":
        return Failure(f"The {title} API refused the request for {name} ({model}){status}: {message}",
                       "Re-run with edits to change the settings it refused.", who, model, label)
    if reason in ("cut_stream", "bad_stream"):
        return Failure(f"The answer from {title} broke off during {name}'s call ({model}).",
                       "Retry: the turn is asked again.", who, model, label)
    return Failure(f"{title} failed for {name} ({model}){status}: {message}",
                   "Retry; if it happens again, Re-run with edits.", who, model, label)


STAGES = {State.JUDGING.value: "during the verdict", State.CLARIFYING.value: "during the clarifying questions",
          State.AWAITING_CLARIFICATION.value: "while waiting for answers to the clarifying questions",
          State.INITIALIZING.value: "before the first turn", State.PREPARATION.value: "during preparation",
          State.IDLE.value: "before it started"}


def _stopped_in(state: DebateState, stop: TransitionRecord) -> State:
    """The state a debate was stopped in, looking through a pause (or a cost warning) to what it paused."""
    index = next(i for i, t in enumerate(state.transitions) if t is stop)
    origin = stop.from_
    for earlier in reversed(state.transitions[:index]):
        if origin not in (State.PAUSED, State.AWAITING_ACK):
            break
        origin = earlier.from_
    return origin


def explain_stop(state: DebateState, names: bool = True) -> str | None:
    """"Stopped by ada at Rebuttal, round 2" for a debate a person (or a limit) stopped; None otherwise."""
    stop = next((t for t in reversed(state.transitions) if t.event == "STOP"), None)
    if stop is None:
        return None
    params = stop.params
    position = params.position or state.position
    where = ""
    phase_id = position.phase
    if phase_id:
        try:
            phase = state.format.phase(phase_id)
            where = f" at {phase.title}"
        except (KeyError, ValueError):
            where = f" at {phase_id}"
        if state.format.has_rounds and position.round:
            where += f", round {position.round}"
    # The position still names the last phase debated once the debate has moved on to its verdict (or
    # has not reached a phase yet): the state it was stopped in says where it really was.
    stage = STAGES.get(_stopped_in(state, stop).value)
    if stage:
        where = f" {stage}" + (f" (after{where.removeprefix(' at')})" if where and "verdict" in stage else "")
    actor = stop.actor or SYSTEM_ACTOR
    if not names and actor != SYSTEM_ACTOR:
        actor = "a team member"  # a share link shows the debate, not who is on the team
    text = f"Stopped automatically{where}" if actor == SYSTEM_ACTOR else f"Stopped by {actor_label(actor)}{where}"
    reason = params.reason
    if reason and reason != "stopped by user":
        text += f" ({reason})"
    return text + "."
