"""What the new-debate form checks before a start, keyed by the config path of the field at fault.

Everything the form can see at once is reported together: an empty topic, rounds out of the format's
range, two participants of one name, and whatever `DebateConfig` refuses, in plain words
(`components.form_errors`). Pure functions of the form's dictionary: no element is touched here.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from webapp.engine.formats import FORMATS
from webapp.models import DebateConfig
from webapp.ui.components.form_errors import plain
from webapp.ui.components.presets import form_to_config

# Errors of a whole model land on the input that can fix them.
FIELD_FOR = {"budget": "budget.cost_limit"}


def error_path(loc: tuple[Any, ...]) -> str:
    """('judge', 'judges', 1, 'provider') -> 'judge.judges[1].provider': the form's fields use config paths
    (the same paths `ConfigError.field` names)."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return FIELD_FOR.get(path, path)


def duplicate_names(rows: list[dict[str, Any]]) -> dict[str, str]:
    """An error on every participant whose name an earlier one already has (case and spaces aside)."""
    seen: set[str] = set()
    errors: dict[str, str] = {}
    for index, row in enumerate(rows):
        name = " ".join(str(row.get("name") or "").split())
        if not name:
            continue  # named after its position when the debate starts
        if name.casefold() in seen:
            errors[f"participants[{index}].name"] = (f"Two participants are called '{name}'; give each a "
                                                     "different name")
        seen.add(name.casefold())
    return errors


def rounds_error(form: dict[str, Any]) -> dict[str, str]:
    """Rounds outside the format's range (the number field does not clamp what was typed)."""
    fmt = FORMATS.get(form.get("format") or "")
    rounds = form.get("rounds")
    if fmt is None or not fmt.has_rounds or rounds in (None, ""):
        return {}
    term = fmt.termination
    if isinstance(rounds, int | float) and not term.min_rounds <= rounds <= term.max_rounds:
        return {"rounds": f"{fmt.title} takes {term.min_rounds} to {term.max_rounds} rounds; "
                          f"{rounds:g} is out of range"}
    return {}


def collect_errors(form: dict[str, Any]) -> tuple[DebateConfig | None, dict[str, str]]:
    """Every problem the form can see at once: the topic, the rounds, duplicate names, and what the
    model refuses; each in plain words, keyed by the path of its field. The config when there is none."""
    errors: dict[str, str] = {}
    data = form_to_config(form)
    if not data["topic"].strip() and form.get("sample_topic"):
        data["topic"] = form["sample_topic"]
    if not data["topic"].strip():
        errors["topic"] = "The topic is required"
    errors.update(rounds_error(form))
    errors.update(duplicate_names(form["participants"]))
    names = {i: str(r.get("name") or "").strip() for i, r in enumerate(form["participants"])}
    try:
        config = DebateConfig.model_validate(data)
    except ValidationError as exc:
        for item in exc.errors():
            path = error_path(tuple(item["loc"]))
            errors.setdefault(path, plain(path, dict(item), names))
        return None, errors
    return (None, errors) if errors else (config, {})
