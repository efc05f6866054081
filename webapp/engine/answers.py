"""The answers the judge side asks for, as pydantic models, and the JSON schemas derived from them.

Each model is the one truth about an answer: its JSON schema goes to the provider's structured-output
mechanism (OpenAI `response_format` json_schema, an Anthropic forced tool, a compatible server's
grammar), and the reply is validated by the same model. Schemas are made strict-compatible: every
object lists all its properties as required and allows no others, `$ref`s are inlined, and only
keywords every mechanism understands are kept (type, properties, required, additionalProperties,
enum, minimum, maximum, items, maxItems, description).

The verdict's model is built per debate (`verdict_model`): every participant label is a required
property of `scores` and of each criterion, and the winner is an enum of the labels plus "tie", so a
grammar-constrained model cannot leave a debater out. Validation is a little more forgiving than the
schema (a percent confidence, "Debater A" as the winner, a criterion's name in another case, extra
keys): a model asked in plain JSON mode gets the benefit of the doubt, never a default.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    create_model,
    model_validator,
)

from webapp.wording import counted

SCHEMA_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "enum", "minimum",
                             "maximum", "items", "maxItems", "description"})


class AnswerInvalid(ValueError):
    """A reply that does not fit its answer model; the message names the field that failed."""


class Answer(BaseModel):
    """Base of every answer model: extra keys are ignored (the schema forbids them), and keys are
    matched without regard to case or surrounding spaces."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _match_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = {(f.alias or name): name for name, f in cls.model_fields.items()}
        by_folded = {key.strip().casefold(): key for key in known}
        out: dict[Any, Any] = {}
        for key, value in data.items():
            wanted = by_folded.get(str(key).strip().casefold()) if key not in known else key
            if wanted is not None and wanted not in out:
                out[wanted] = value
            elif wanted is None:
                out[key] = value
        return out


def _number(value: Any) -> Any:
    """A score given as a float or a numeric string is rounded to a whole number; a bool is no number."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true/false")
    if isinstance(value, str):
        try:
            value = float(value.strip().rstrip("%"))
        except ValueError:
            raise ValueError(f"must be a number from 0 to 100, got {value!r}") from None
    if isinstance(value, float):
        return round(value)
    return value


def _fraction(value: Any) -> Any:
    """0–1; a confidence given in percent (e.g. 85 or "85%") is understood as 0.85. A number that is no
    confidence at all (below 0, above 100) is dropped, not the verdict: the confidence is the judge's own
    aside, and a local server's grammar enforces the schema's types but not its bounds (Gemma 3 270M on
    llama-cpp-python wrote 257319 in an otherwise complete verdict, and its repair the same)."""
    if isinstance(value, bool):
        raise ValueError("must be a number from 0 to 1, not true/false")
    if isinstance(value, str):
        try:
            value = float(value.strip().rstrip("%"))
        except ValueError:
            raise ValueError(f"must be a number from 0 to 1, got {value!r}") from None
    if isinstance(value, int | float):
        if 1 < value <= 100:
            return value / 100
        if not 0 <= value <= 100:
            return None
    return value


def _not_empty(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


def _one_line(value: str) -> str:
    return " ".join(value.split())[:300]


Score = Annotated[int, Field(ge=0, le=100), BeforeValidator(_number)]
# The schema asks for a number from 0 to 1; what is accepted also covers percent and a dropped aside (None).
Confidence = Annotated[float | None, BeforeValidator(_fraction),
                       WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})]
Text = Annotated[str, AfterValidator(_not_empty)]
Note = Annotated[str, AfterValidator(_one_line)]


def _winner_value(labels: list[str]) -> Any:
    def normalise(value: Any) -> Any:
        if value is None:
            return "tie"
        raw = str(value).strip()
        if raw.casefold() in ("tie", "draw", "none", "null", "", "no winner"):
            return "tie"
        label = re.sub(r"^(debater|participant)\s+", "", raw, flags=re.IGNORECASE).strip().upper()
        return label if label in labels else raw

    return BeforeValidator(normalise)


# --- the verdict (per debate) -------------------------------------------------------------------


class CriterionEntry(Answer):
    """One debater's score and note on one criterion."""

    score: Score = Field(description="the score on this criterion, 0 to 100")
    note: Note = Field(description="one line saying why")


def verdict_model(labels: list[str], criteria: list[str]) -> type[Answer]:
    """The verdict answer for these labels (in the order shown) and criteria."""
    scores = create_model(  # type: ignore[call-overload]
        "Scores", __base__=Answer, __doc__="Each debater's overall score, 0 to 100.",
        **{lab: (Score, Field(description=f"Debater {lab}'s overall score, 0 to 100")) for lab in labels})
    entry = create_model(  # type: ignore[call-overload]
        "CriterionScores", __base__=Answer, __doc__="Each debater's score and note on this criterion.",
        **{lab: (CriterionEntry, Field(description=f"Debater {lab}")) for lab in labels})
    per_criterion = create_model(  # type: ignore[call-overload]
        "Criteria", __base__=Answer, __doc__="One entry per judging criterion.",
        **{f"criterion_{i}": (entry, Field(alias=name, description=f"the criterion {name!r}"))
           for i, name in enumerate(criteria)})
    winner: Any = Annotated[Literal[tuple([*labels, "tie"])], _winner_value(labels)]
    return create_model(
        "Verdict", __base__=Answer, __doc__="The judge's verdict on the debate.",
        criteria=(per_criterion, Field(description="per criterion, each debater's score and a one-line note")),
        reasoning=(Text, Field(description="a paragraph explaining the decision, naming debaters as "
                                           "\"Debater A\", \"Debater B\"")),
        scores=(scores, Field(description="each debater's overall score, 0 to 100")),
        winner=(winner, Field(description="the label of the debater who argued better, or \"tie\"")),
        confidence=(Confidence, Field(description="how sure you are of the winner, 0 to 1")),
    )


# --- judge-side answers between turns -----------------------------------------------------------


class ContinueAnswer(Answer):
    """Free-form: whether another round would add anything."""

    reason: Text = Field(description="one sentence")
    continue_: bool = Field(alias="continue", description="true to hold another round, false to stop")


class ConvergenceAnswer(Answer):
    """Convergence: how far the participants now agree."""

    reason: Text = Field(description="one sentence")
    agreement: Score = Field(description="agreement from 0 (opposed) to 100 (full agreement)")
    irreconcilable: bool = Field(description="true when the positions cannot be reconciled")


class QualityAnswer(Answer):
    """Collaborative evaluation: the quality of the latest refined proposals."""

    reason: Text = Field(description="one sentence")
    score: Score = Field(description="quality from 0 to 100")


class OnTopicAnswer(Answer):
    """Strict mode: whether a turn is on topic."""

    reason: Text = Field(description="one sentence")
    on_topic: bool = Field(description="true when the turn addresses the topic")


def questions_model(most: int) -> type[Answer]:
    """Clarification questions: a list of at most `most` questions (possibly none)."""
    return create_model(
        "Questions", __base__=Answer, __doc__="Questions for the user.",
        questions=(Annotated[list[Annotated[str, AfterValidator(str.strip)]], Field(max_length=most)],
                   Field(description=f"at most {counted(most, 'question')}, each a full sentence; empty if none")),
    )


# --- schemas -------------------------------------------------------------------------------------


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs)
        if "allOf" in node and len(node["allOf"]) == 1:  # pydantic wraps a described $ref this way
            merged = {**node["allOf"][0], **{k: v for k, v in node.items() if k != "allOf"}}
            return _inline(merged, defs)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":
                out[key] = {name: _inline(sub, defs) for name, sub in value.items()}
            elif key in SCHEMA_KEYWORDS:
                out[key] = _inline(value, defs)
        if out.get("type") == "object" or "properties" in out:
            out["type"] = "object"
            out["required"] = list(out.get("properties", {}))
            out["additionalProperties"] = False
        if "enum" in out and "type" not in out:
            out["type"] = "string"
        return out
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    return node


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict JSON schema of an answer model: `$ref`s inlined, every property required, no others."""
    raw = model.model_json_schema(by_alias=True)
    schema: dict[str, Any] = _inline(raw, raw.get("$defs", {}))
    return schema


def describe(schema: dict[str, Any], indent: str = "") -> str:
    """The schema's fields in words, one line each (for the prompt: no example object to copy)."""
    lines: list[str] = []
    for name, sub in schema.get("properties", {}).items():
        kind = sub.get("type", "value")
        what = sub.get("description", "")
        if "enum" in sub:
            kind = "one of " + ", ".join(f'"{v}"' for v in sub["enum"])
        elif kind in ("integer", "number") and "minimum" in sub:
            kind = f"{'a whole number' if kind == 'integer' else 'a number'} from {sub['minimum']:g} to " \
                   f"{sub['maximum']:g}"
        elif kind == "boolean":
            kind = "true or false"
        elif kind == "array":
            kind = "a list of strings" + (f" (at most {sub['maxItems']})" if "maxItems" in sub else "")
        elif kind == "object":
            kind = "an object with " + ", ".join(f'"{k}"' for k in sub.get("properties", {}))
        lines.append(f'{indent}- "{name}": {kind}' + (f" — {what}" if what and what not in kind else ""))
        if sub.get("type") == "object" and indent.count("  ") < 1 and len(sub.get("properties", {})) <= 8:
            first: dict[str, Any] = next(iter(sub["properties"].values()), {})
            if first.get("type") == "object":
                inner = ", ".join(f'"{k}"' for k in first.get("properties", {}))
                lines.append(f"{indent}  each of them an object with {inner}")
    return "\n".join(lines)


def validate(model: type[Answer], data: Any) -> Answer:
    """The reply validated by its model; raises `AnswerInvalid` naming each field that failed."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise AnswerInvalid(explain(exc)) from None


def explain(exc: ValidationError) -> str:
    """A validation error in words that name the field: "'scores' is missing B", "scores.A: …"."""
    parts: list[str] = []
    for error in exc.errors(include_url=False)[:4]:
        loc = [str(p) for p in error["loc"]]
        path = ".".join(loc) or "the reply"
        got = repr(error.get("input"))[:60]
        ctx = error.get("ctx") or {}
        if error["type"] == "missing":
            parent = ".".join(loc[:-1])
            parts.append(f"'{parent}' is missing '{loc[-1]}'" if parent else f"the field '{loc[-1]}' is missing")
        elif error["type"] in ("model_type", "model_attributes_type", "dict_type"):
            parts.append(f"'{path}' must be an object, got {got}")
        elif error["type"] == "literal_error":
            parts.append(f"'{path}' {error['msg'].replace('Input should be', 'must be')}, got {got}")
        elif error["type"] in ("less_than_equal", "greater_than_equal"):
            bound = ctx.get("le", ctx.get("ge"))
            parts.append(f"{path} must be {'at most' if 'le' in ctx else 'at least'} {bound}, got {got}")
        elif error["type"] == "value_error":
            parts.append(f"{path} {error['msg'].removeprefix('Value error, ')}")
        else:
            parts.append(f"{path}: {error['msg']} (got {got})")
    more = len(exc.errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
