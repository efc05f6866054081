"""A debate's configuration from the command line: `--config` files, `key=value` specs and the flags."""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from webapp.cli.common import UsageError, format_validation
from webapp.models import DebateConfig
from webapp.settings import Settings

SPEC_SPLIT = re.compile(r",(?=\s*[A-Za-z_]+\s*=)")


def parse_spec(text: str, what: str) -> dict[str, Any]:
    """`name=Ada,provider=demo,persona=calm, but firm` → dict (commas inside values are kept)."""
    out: dict[str, Any] = {}
    for part in SPEC_SPLIT.split(text.strip()):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise UsageError(f"{what}: expected key=value pairs separated by commas, got {part.strip()!r}")
        key = key.strip().replace("-", "_")
        if key in out:
            raise UsageError(f"{what}: {key!r} given twice")
        out[key] = value.strip()
    return out


def load_config_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--config: cannot read {path}: {exc.strerror}") from None
    try:
        if path.suffix.lower() == ".toml":
            return tomllib.loads(raw.decode("utf-8"))
        if path.suffix.lower() == ".json":
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise UsageError("--config: the JSON file must hold an object")
            return data
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"--config: {path} is not valid {path.suffix[1:].upper()}: {exc}") from None
    raise UsageError("--config: use a .toml or .json file")


def build_config(args: argparse.Namespace, settings: Settings | None = None) -> DebateConfig:
    """The debate config from `--config` and the flags; what neither gives comes from `settings`
    (`ROSTRUM_MAX_RETRIES`), then from the model's defaults."""
    data: dict[str, Any] = load_config_file(Path(args.config)) if args.config else {}
    if settings is not None:
        data.setdefault("max_retries", settings.max_retries)
    if args.topic is not None:
        data["topic"] = args.topic
    for flag, key in (("format", "format"), ("rounds", "rounds"), ("seed", "seed"), ("questions", "questions"),
                      ("word_limit", "word_limit")):
        value = getattr(args, flag, None)
        if value is not None:
            data[key] = value
    if args.participant:
        data["participants"] = [parse_spec(s, f"--participant #{i + 1}") for i, s in enumerate(args.participant)]
    judge = dict(data.get("judge") or {})
    if args.judge:
        judge["judges"] = [parse_spec(s, f"--judge #{i + 1}") for i, s in enumerate(args.judge)]
    if args.no_judge:
        judge["enabled"] = False
    if args.judge_swap_sides:
        judge["swap_sides"] = True
    if judge:
        data["judge"] = judge
    budget = dict(data.get("budget") or {})
    if args.cost_limit is not None:
        budget["cost_limit"] = args.cost_limit
    if args.warn_at is not None:
        budget["warn_at"] = args.warn_at
    if budget:
        data["budget"] = budget
    if args.timeout is not None:
        data["timeouts"] = {**dict(data.get("timeouts") or {}), "turn": args.timeout}
    if args.no_clarification:
        data["clarification"] = False
    if getattr(args, "human_turn_seconds", None) is not None:
        data["human_turn_seconds"] = args.human_turn_seconds
    if getattr(args, "tag", None):
        given = data.get("tags") or []
        data["tags"] = [*(given.split(",") if isinstance(given, str) else given), *args.tag]
    if "topic" not in data:
        raise UsageError("topic: give the debate topic as an argument or in --config")
    try:
        return DebateConfig.model_validate(data)
    except ValidationError as exc:
        raise UsageError(format_validation(exc)) from None
