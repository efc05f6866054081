"""Form presets: "Quick demo" (offline, a minute) and one per built-in format, as form dictionaries.

The new-debate form works on a plain dictionary (`blank_form`) so that nothing a user typed is lost
when validation fails; `form_to_config` turns it into the `DebateConfig` the engine validates.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from webapp.engine.formats import FORMATS, Format
from webapp.models import DEFAULT_CRITERIA, PALETTE, DebateConfig

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
                  "compatible": "llama3.1"}


def participant_row(name: str, position: str, index: int, provider: str = "demo",
                    model: str | None = None) -> dict[str, Any]:
    return {
        "name": name, "provider": provider, "model": model or DEFAULT_MODELS[provider], "preset": None,
        "base_url": "", "position": position, "persona": "", "temperature": None, "max_tokens": 1024,
        "color": PALETTE[index % len(PALETTE)],
    }


def cast_rows(fmt: Format, model: str = "demo") -> list[dict[str, Any]]:
    return [participant_row(seat.name, seat.position, i, model=model) for i, seat in enumerate(fmt.cast)]


def blank_form(defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new form, from the saved defaults (Settings page) where there are any."""
    d = defaults or {}
    fmt = FORMATS.get(d.get("format") or "classic", FORMATS["classic"])
    model = d.get("demo_model") or "demo"
    return {
        "topic": "",
        "format": fmt.id,
        "rounds": d.get("rounds") if fmt.has_rounds else None,
        "participants": cast_rows(fmt, model),
        "judge": {"enabled": True, "provider": "demo", "model": model, "criteria": list(DEFAULT_CRITERIA),
                  "frequency": "end"},
        "budget": {"warn_at": d.get("warn_at"), "cost_limit": d.get("cost_limit")},
        "turn_timeout": d.get("turn_timeout") or 120,
        "word_limit": d.get("word_limit"),
        "clarification": True,
        "strict": False,
        "show_preparation": False,
        "context_strategy": "truncate",
        "seed": 0,
    }


def apply_preset(form: dict[str, Any], preset: str) -> None:
    """Fill `form` in place. A topic the user already typed is kept."""
    if preset == "quick-demo":
        fmt = FORMATS["oxford"]
        form.update(format="oxford", rounds=1, word_limit=60, participants=cast_rows(fmt, "demo"))
        form["judge"].update(enabled=True, provider="demo", model="demo")
        form["budget"].update(warn_at=None, cost_limit=None)
        if not form["topic"].strip():
            form["topic"] = QUICK_DEMO_TOPIC
        return
    fmt = FORMATS[preset]
    form.update(format=fmt.id, rounds=fmt.termination.default_rounds if fmt.has_rounds else None,
                participants=cast_rows(fmt), word_limit=None)
    if not form["topic"].strip():
        form["topic"] = SAMPLE_TOPICS.get(fmt.id, "")


def _num(value: Any, kind: type = float) -> Any:
    if value in (None, ""):
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return value  # let pydantic name the field and the problem


def form_to_config(form: dict[str, Any]) -> dict[str, Any]:
    """The form as `DebateConfig` input (validated by pydantic, then by the engine)."""
    fmt = FORMATS.get(form["format"])
    judge = form["judge"]
    spec: dict[str, Any] = {"provider": judge["provider"], "model": (judge["model"] or "").strip() or "demo"}
    data: dict[str, Any] = {
        "topic": form["topic"] or "",
        "format": form["format"],
        "rounds": _num(form.get("rounds"), int) if fmt is None or fmt.has_rounds else None,
        "participants": [],
        "judge": {"enabled": bool(judge["enabled"]), "judges": [spec], "criteria": list(judge["criteria"] or []),
                  "frequency": judge.get("frequency") or "end"},
        "budget": {"warn_at": _num(form["budget"].get("warn_at")),
                   "cost_limit": _num(form["budget"].get("cost_limit"))},
        "timeouts": {"turn": _num(form.get("turn_timeout")) or 120.0},
        "word_limit": _num(form.get("word_limit"), int),
        "clarification": bool(form.get("clarification", True)),
        "strict": bool(form.get("strict")),
        "show_preparation": bool(form.get("show_preparation")),
        "context": {"strategy": form.get("context_strategy") or "truncate"},
        "seed": _num(form.get("seed"), int) or 0,
    }
    for row in form["participants"]:
        item: dict[str, Any] = {
            "name": (row.get("name") or "").strip(),
            "provider": row["provider"],
            "model": (row.get("model") or "").strip(),
            "position": (row.get("position") or "").strip(),
            "persona": row.get("persona") or "",
            "temperature": _num(row.get("temperature")),
            "max_tokens": _num(row.get("max_tokens"), int) or 1024,
            "color": row.get("color") or None,
        }
        if row["provider"] == "compatible":
            item["preset"] = row.get("preset") or None
            item["base_url"] = (row.get("base_url") or "").strip() or None
        data["participants"].append(item)
    return data


def quick_demo_config(topic: str | None = None) -> DebateConfig:
    form = blank_form()
    if topic:
        form["topic"] = topic
    apply_preset(form, "quick-demo")
    return DebateConfig.model_validate(form_to_config(form))


def copy_form(form: dict[str, Any]) -> dict[str, Any]:
    return deepcopy(form)
