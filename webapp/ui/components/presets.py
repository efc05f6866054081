"""Form presets: "Quick demo" (offline, a minute) and one per built-in format, as form dictionaries.

The new-debate form works on a plain dictionary (`blank_form`) so that nothing a user typed is lost
when validation fails; `form_to_config` turns it into the `DebateConfig` the engine validates,
sending only what the form shows (`format_options` says which settings a format reads), so a value
left in a hidden field can never block a start.
"""

from __future__ import annotations

from typing import Any

from webapp.engine.formats import FORMATS, Format
from webapp.models import DEFAULT_CRITERIA, PALETTE, ContextPolicy, DebateConfig, Timeouts
from webapp.settings import Settings, get_settings

QUICK_DEMO_TOPIC = "Should cities ban private cars from their centres?"
SAMPLE_TOPICS = {
    "classic": "Should governments introduce a universal basic income?",
    "six-phase": "Should social media platforms be liable for the content they recommend?",
    "oxford": "This house believes that remote work is better for society.",
    "lincoln-douglas": "Resolved: privacy ought to be valued above security.",
    "roundtable": "How should schools respond to AI writing assistants?",
    "structured": "Should nuclear power be central to decarbonisation?",
    "round-limited": "Is open-source AI safer than closed AI?",
    "free-form": "Should voting be compulsory?",
    "convergence": "How much should a city spend on cycling infrastructure?",
    "collaborative": "Design a plan to cut a mid-size company's cloud bill by 30% in six months.",
}
DEFAULT_MODELS = {"demo": "demo", "openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5",
                  "compatible": "llama3.1", "human": "human"}


def judge_row(provider: str = "demo", model: str | None = None) -> dict[str, Any]:
    """The provider part every model row has (participant, judge, fallback judge)."""
    return {"provider": provider, "model": model or DEFAULT_MODELS[provider], "preset": None, "base_url": ""}


def participant_row(name: str, position: str, index: int, provider: str = "demo",
                    model: str | None = None) -> dict[str, Any]:
    return {
        **judge_row(provider, model), "name": name, "position": position, "persona": "", "temperature": None,
        "max_tokens": 1024, "context_tokens": None, "concurrency": None, "color": PALETTE[index % len(PALETTE)],
    }


def cast_rows(fmt: Format, model: str | None = "demo", provider: str = "demo") -> list[dict[str, Any]]:
    return [participant_row(seat.name, seat.position, i, provider, model) for i, seat in enumerate(fmt.cast)]


def format_options(fmt: Format | None) -> list[str]:
    """The `DebateConfig` fields this format actually reads; the form shows (and sends) only these.

    Mirrors the engine: `termination.decide` uses `convergence_threshold` for convergence formats and,
    where the format leaves the evaluation open (collaborative), `evaluation` with `quality_threshold`;
    clarification needs `Format.clarification`.
    """
    if fmt is None:
        return []
    names: list[str] = []
    if fmt.has_rounds and fmt.termination.kind == "convergence":
        names.append("convergence_threshold")
    if fmt.termination.configurable:
        names += ["evaluation", "quality_threshold"]
    if fmt.clarification:
        names += ["clarification", "clarification_questions", "clarification_iterations"]
    if any(phase.repeat == "questions" for phase in fmt.phases):
        names.append("questions")
    if any(phase.optional == "show_preparation" for phase in fmt.phases):
        names.append("show_preparation")
    return names


# Format-dependent options, prefilled from the model so the form and the engine share one default.
FORMAT_OPTIONS = ("convergence_threshold", "evaluation", "quality_threshold", "clarification",
                  "clarification_questions", "clarification_iterations", "questions", "show_preparation")


def blank_form(defaults: dict[str, Any] | None = None, settings: Settings | None = None) -> dict[str, Any]:
    """A new form, from the saved defaults (Settings page) where there are any, and the process
    settings (`ROSTRUM_MAX_RETRIES`); `settings` defaults to the process-wide object."""
    d = defaults or {}
    settings = settings or get_settings()
    fmt = FORMATS.get(d.get("format") or "classic", FORMATS["classic"])
    model = d.get("demo_model") or "demo"
    fields = DebateConfig.model_fields
    timeouts = Timeouts().model_dump()
    timeouts["turn"] = d.get("turn_timeout") or timeouts["turn"]
    return {
        "topic": "",
        "tags": "",
        "format": fmt.id,
        "rounds": d.get("rounds") if fmt.has_rounds else None,
        "participants": cast_rows(fmt, model),
        "judge": {"enabled": True, "judges": [judge_row("demo", model)], "use_fallback": False,
                  "fallback": judge_row("demo", "demo-instant"), "criteria": list(DEFAULT_CRITERIA),
                  "frequency": "end", "swap_sides": False},
        "budget": {"warn_at": d.get("warn_at"), "cost_limit": d.get("cost_limit")},
        "timeouts": timeouts,
        "max_retries": settings.max_retries,
        "word_limit": d.get("word_limit"),
        "word_limit_action": fields["word_limit_action"].default,
        "strict": fields["strict"].default,
        "context": ContextPolicy().model_dump(),
        "seed": fields["seed"].default,
        **{name: fields[name].default for name in FORMAT_OPTIONS},
    }


def apply_preset(form: dict[str, Any], preset: str, fill_topic: bool = True) -> None:
    """Fill `form` in place. A topic the user already typed is kept; an empty one gets the preset's
    sample topic unless `fill_topic` is false (the form shows the sample as a placeholder instead)."""
    if preset == "quick-demo":
        fmt = FORMATS["oxford"]
        form.update(format="oxford", rounds=1, word_limit=60, participants=cast_rows(fmt, "demo"))
        form["judge"].update(enabled=True, judges=[judge_row("demo")], use_fallback=False)
        form["budget"].update(warn_at=None, cost_limit=None)
        if fill_topic and not form["topic"].strip():
            form["topic"] = QUICK_DEMO_TOPIC
        return
    fmt = FORMATS[preset]
    form.update(format=fmt.id, rounds=fmt.termination.default_rounds if fmt.has_rounds else None,
                participants=cast_rows(fmt), word_limit=None)
    if fill_topic and not form["topic"].strip():
        form["topic"] = SAMPLE_TOPICS.get(fmt.id, "")


def _num(value: Any, kind: type = float) -> Any:
    if value in (None, ""):
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return value  # let pydantic name the field and the problem


def _given(values: dict[str, Any], kinds: dict[str, type]) -> dict[str, Any]:
    """The numbers the user filled in; an emptied field falls back to the model's default."""
    return {k: _num(values.get(k), kind) for k, kind in kinds.items() if values.get(k) not in (None, "")}


def _shown(form: dict[str, Any], name: str) -> bool:
    """Whether a format setting is on screen: some only matter when another one enables them."""
    if name == "quality_threshold":
        return form.get("evaluation") != "fixed"
    if name in ("clarification_questions", "clarification_iterations"):
        return bool(form.get("clarification"))
    return True


def model_spec(row: dict[str, Any]) -> dict[str, Any]:
    """Provider, model and (for compatible servers) preset and base URL of a participant or judge row,
    and the calls at once its endpoint takes when the row sets it (empty: the default for its kind)."""
    spec: dict[str, Any] = {"provider": row["provider"], "model": (row.get("model") or "").strip()}
    if row["provider"] == "compatible":
        spec["preset"] = row.get("preset") or None
        spec["base_url"] = (row.get("base_url") or "").strip() or None
    if row["provider"] == "human":  # a human seat: who takes it (empty: whoever takes it first)
        spec["seat"] = (row.get("seat") or "").strip() or None
    concurrency = _num(row.get("concurrency"), int)
    if concurrency is not None:
        spec["concurrency"] = concurrency
    return spec


def _judge_config(judge: dict[str, Any]) -> dict[str, Any]:
    if not judge["enabled"]:
        return {"enabled": False}
    return {"enabled": True, "judges": [model_spec(r) for r in judge["judges"]],
            "fallback": model_spec(judge["fallback"]) if judge.get("use_fallback") else None,
            "criteria": list(judge["criteria"] or []), "frequency": judge.get("frequency") or "end",
            "swap_sides": bool(judge.get("swap_sides"))}


def _context_config(context: dict[str, Any]) -> dict[str, Any]:
    strategy = context.get("strategy") or "truncate"
    return {"strategy": strategy, **(_given(context, {"window": int}) if strategy == "sliding-window" else {})}


def form_to_config(form: dict[str, Any], settings: Settings | None = None) -> dict[str, Any]:
    """The form as `DebateConfig` input (validated by pydantic, then by the engine). An emptied retries
    field means `ROSTRUM_MAX_RETRIES` (from `settings`, by default the process-wide object)."""
    fmt = FORMATS.get(form["format"])
    max_retries = _num(form.get("max_retries"), int)
    # What the form hides (a disabled judge, an unused window…) is not sent: it cannot block a start.
    data: dict[str, Any] = {
        "topic": form["topic"] or "",
        "tags": form.get("tags") or "",  # "ethics, AI policy": the config splits and normalises them
        "format": form["format"],
        "rounds": _num(form.get("rounds"), int) if fmt is None or fmt.has_rounds else None,
        "participants": [],
        "judge": _judge_config(form["judge"]),
        "budget": {"warn_at": _num(form["budget"].get("warn_at")),
                   "cost_limit": _num(form["budget"].get("cost_limit"))},
        "timeouts": _given(form.get("timeouts") or {}, {"connect": float, "first_token": float, "turn": float}),
        "word_limit": _num(form.get("word_limit"), int),
        "word_limit_action": form.get("word_limit_action") or "truncate",
        "strict": bool(form.get("strict")),
        "context": _context_config(form.get("context") or {}),
        "seed": _num(form.get("seed"), int) or 0,
        "max_retries": (settings or get_settings()).max_retries if max_retries is None else max_retries,
    }
    for name in filter(lambda name: _shown(form, name), format_options(fmt)):
        value = form.get(name)
        if isinstance(value, bool | str):
            data[name] = value
        elif value not in (None, ""):
            data[name] = _num(value, int)
    for row in form["participants"]:
        data["participants"].append({
            **model_spec(row),
            "name": (row.get("name") or "").strip(),
            "position": (row.get("position") or "").strip(),
            "persona": row.get("persona") or "",
            "temperature": _num(row.get("temperature")),
            "max_tokens": _num(row.get("max_tokens"), int) or 1024,
            "context_tokens": _num(row.get("context_tokens"), int),
            "color": row.get("color") or None,
        })
    return data


def quick_demo_config(topic: str | None = None, settings: Settings | None = None) -> DebateConfig:
    form = blank_form(settings=settings)
    if topic:
        form["topic"] = topic
    apply_preset(form, "quick-demo")
    return DebateConfig.model_validate(form_to_config(form, settings))


def _model_row(spec: Any) -> dict[str, Any]:
    """A form model row from a stored `Participant` or `JudgeSpec` (the inverse of `model_spec`)."""
    row = {"provider": spec.provider, "model": spec.model, "preset": spec.preset,
           "base_url": spec.base_url or "", "concurrency": spec.concurrency}
    if getattr(spec, "seat", None):  # a human seat given to someone
        row["seat"] = spec.seat
    return row


def config_to_form(config: DebateConfig, defaults: dict[str, Any] | None = None,
                   settings: Settings | None = None) -> dict[str, Any]:
    """A form filled from a stored debate's config (the inverse of `form_to_config`): "Clone" opens the
    new-debate form with it. What the config does not hold (a fallback judge it had none of, a window
    of a strategy it did not use) comes from `blank_form`; the series and the rematch link do not carry
    over, the clone is a debate of its own."""
    form = blank_form(defaults, settings)
    fmt = FORMATS.get(config.format)
    timeouts = config.timeouts
    form.update(
        topic=config.topic, tags=", ".join(config.tags), format=config.format,
        rounds=config.rounds if fmt is None or fmt.has_rounds else None,
        participants=[{**_model_row(p), "name": p.name, "position": p.position, "persona": p.persona,
                       "temperature": p.temperature, "max_tokens": p.max_tokens,
                       "context_tokens": p.context_tokens, "color": p.color or PALETTE[i % len(PALETTE)]}
                      for i, p in enumerate(config.participants)],
        budget={"warn_at": config.budget.warn_at, "cost_limit": config.budget.cost_limit},
        timeouts={name: getattr(timeouts, name) if name in timeouts.model_fields_set else None
                  for name in type(timeouts).model_fields},
        max_retries=config.max_retries, word_limit=config.word_limit,
        word_limit_action=config.word_limit_action, strict=config.strict, seed=config.seed,
        context={**form["context"], **config.context.model_dump()},
        **{name: getattr(config, name) for name in FORMAT_OPTIONS},
    )
    judge = config.judge
    form["judge"].update(enabled=judge.enabled, criteria=list(judge.criteria), frequency=judge.frequency,
                         swap_sides=judge.swap_sides)
    if judge.enabled:
        form["judge"]["judges"] = [_model_row(j) for j in judge.judges]
        if judge.fallback is not None:
            form["judge"].update(use_fallback=True, fallback=_model_row(judge.fallback))
    return form
