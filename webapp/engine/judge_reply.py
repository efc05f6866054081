"""Reading a judge's reply: the JSON object in it (`extract_json`), the ruling it gives once validated
against the debate's verdict model (`parse_ruling`), and the one repair request that quotes what was
wrong (`repair_request`). `VerdictInvalid` says why a reply was refused.

The judge (`webapp.engine.judge`) and the per-round checks (`webapp.engine.termination`) read replies
through these; small models wrap their JSON in prose or code fences, so the object is searched for.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from webapp.engine.answers import AnswerInvalid, validate, verdict_model
from webapp.models import CriterionScore, JudgeRuling
from webapp.providers.base import Message, ProviderRequest


class VerdictInvalid(ValueError):
    """The judge's answer was not a valid verdict; the message says why."""



def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in a reply: bare, inside a code fence, or inside surrounding prose."""
    candidates: list[str] = []
    for match in re.finditer(r"```(?:json)?\s*(.*?)```", text, flags=re.DOTALL | re.IGNORECASE):
        candidates.append(match.group(1))
    candidates.append(text)
    start = text.find("{")
    while start != -1:
        depth, in_str, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                escape = not escape and ch == "\\"
                if ch == '"' and not escape:
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    candidates.append(text[start : i + 1])
                    break
        start = text.find("{", start + 1) if len(candidates) < 20 else -1
    for candidate in candidates:
        try:
            # strict=False: a raw line break inside a string is not JSON, but small models under a
            # grammar write one (llama-cpp-python's grammar lets control characters through); refusing
            # it threw away a complete verdict and fell back to an inner object.
            value = json.loads(candidate.strip(), strict=False)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, dict):
            return value
    raise VerdictInvalid("the reply contains no JSON object")


def parse_ruling(text: str, labels: dict[str, str], criteria: list[str], judge: str) -> JudgeRuling:
    """Validate a judge's reply with the debate's verdict model and map labels back to participant ids;
    raises `VerdictInvalid` naming the field that failed."""
    data = extract_json(text)
    model = verdict_model(list(labels), criteria)
    try:
        answer = validate(model, data)
    except AnswerInvalid as exc:
        raise VerdictInvalid(str(exc)) from None
    dumped = answer.model_dump(by_alias=True)
    winner = None if dumped["winner"] == "tie" else labels[dumped["winner"]]
    scores = {pid: float(dumped["scores"][lab]) for lab, pid in labels.items()}
    per_criterion = {
        criterion: {pid: CriterionScore(score=dumped["criteria"][criterion][lab]["score"],
                                        note=dumped["criteria"][criterion][lab]["note"])
                    for lab, pid in labels.items()}
        for criterion in criteria
    }
    try:
        return JudgeRuling(judge=judge, winner=winner, scores=scores, criteria=per_criterion,
                           reasoning=dumped["reasoning"], confidence=dumped["confidence"], order=list(labels.values()))
    except ValidationError as exc:
        raise VerdictInvalid(str(exc)) from None


def repair_request(original: ProviderRequest, reply: str, error: str) -> ProviderRequest:
    """The one repair request (for a verdict or any judge JSON): the bad reply, what was wrong with
    it, and a request for the fix."""
    return original.model_copy(
        update={
            "messages": [
                *original.messages,
                Message(role="assistant", content=reply[:4000] or "(empty reply)"),
                Message(role="user", content=f"That reply was not valid: {error}. "
                        "Reply again with the corrected JSON object only."),
            ],
            "context": {**original.context, "repair": True, "validation_error": error},
        }
    )
