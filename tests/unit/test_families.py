"""Model families (a data table) and the self-preference warning and judge choice built on them."""

from __future__ import annotations

import pytest

from webapp.engine.families import FAMILIES, family_of, pick_judge, self_preference_notes, shared_families
from webapp.models import DebateConfig


@pytest.mark.parametrize(("model", "family"), [
    ("gpt-4o-mini", "openai"), ("GPT-4.1", "openai"), ("o1", "openai"), ("o3-mini", "openai"), ("o4-mini", "openai"),
    ("chatgpt-4o-latest", "openai"), ("openai/gpt-oss-20b", "openai"),
    ("claude-sonnet-4-5", "anthropic"), ("anthropic/claude-3.5-haiku", "anthropic"),
    ("gemini-2.5-pro", "google"), ("gemma2:9b", "gemma"), ("hf.co/unsloth/gemma-3-4b-it-GGUF", "gemma"),
    ("llama3.1", "meta"), ("meta-llama/Meta-Llama-3.1-8B-Instruct", "meta"), ("codellama:7b", "meta"),
    ("mistral-large-latest", "mistral"), ("mixtral-8x7b", "mistral"), ("codestral-latest", "mistral"),
    ("qwen2.5:7b", "qwen"), ("Qwen/QwQ-32B", "qwen"), ("deepseek-r1:8b", "deepseek"), ("deepseek-chat", "deepseek"),
])
def test_model_names_map_to_their_family(model: str, family: str) -> None:
    found = family_of(model)
    assert found is not None and found.id == family


@pytest.mark.parametrize("model", ["demo", "demo-instant", "my-finetune", "o10-lookalike", "phi3", "gem"])
def test_unknown_names_have_no_family(model: str) -> None:
    assert family_of(model) is None


def test_families_are_data_with_unique_ids() -> None:
    ids = [f.id for f in FAMILIES]
    assert len(ids) == len(set(ids)) >= 8
    assert all(f.patterns for f in FAMILIES)


def config(debaters: list[tuple[str, str]], judges: list[str], fallback: str | None = None,
           moderator: str | None = None) -> DebateConfig:
    people = [{"name": name, "provider": "compatible", "model": model, "base_url": "http://127.0.0.1:9/v1",
               "position": "pro" if i == 0 else "con"} for i, (name, model) in enumerate(debaters)]
    if moderator:
        people.append({"name": "Mod", "provider": "compatible", "model": moderator, "position": "moderator",
                       "base_url": "http://127.0.0.1:9/v1"})
    judge: dict = {"judges": [{"provider": "compatible", "model": m, "base_url": "http://127.0.0.1:9/v1"}
                              for m in judges]}
    if fallback:
        judge["fallback"] = {"provider": "compatible", "model": fallback, "base_url": "http://127.0.0.1:9/v1"}
    return DebateConfig.model_validate({"topic": "t", "participants": people, "judge": judge})


def test_a_judge_sharing_a_debaters_family_is_named_with_the_debaters() -> None:
    cfg = config([("Ada", "llama3.1"), ("Bo", "qwen2.5")], ["llama3.2:3b", "gemma2"], fallback="qwen2.5:14b")
    shared = shared_families(cfg)
    assert [(s.field, s.family.id, s.debaters) for s in shared] == [
        ("judge.judges[0]", "meta", ("Ada",)), ("judge.fallback", "qwen", ("Bo",))]
    notes = self_preference_notes(cfg)
    assert notes[0].startswith("judge.judges[0]: the judge compatible:llama3.2:3b is of the Meta Llama family, "
                               "like Ada")


def test_no_warning_for_other_families_a_moderator_or_a_disabled_judge() -> None:
    assert self_preference_notes(config([("Ada", "llama3.1"), ("Bo", "qwen2.5")], ["gemma2"])) == []
    assert self_preference_notes(config([("Ada", "llama3.1"), ("Bo", "qwen2.5")], ["mistral"],
                                        moderator="mistral-small")) == []
    cfg = config([("Ada", "llama3.1"), ("Bo", "llama3.2")], ["llama3.3"])
    assert self_preference_notes(cfg.model_copy(update={"judge": cfg.judge.model_copy(update={"enabled": False})})) \
        == []


def test_pick_judge_avoids_the_debaters_and_the_panels_families() -> None:
    # Same provider first when it offers another family...
    assert pick_judge(["llama3.1", "llama3.2"], [], "compatible") == ("compatible", "qwen2.5")
    assert pick_judge(["qwen2.5"], ["llama3.1"], "compatible") == ("compatible", "gemma2")
    # ...else the first usable provider of another family.
    assert pick_judge(["gpt-4o", "gpt-4.1"], [], "openai") == ("anthropic", "claude-sonnet-4-5")
    assert pick_judge(["gpt-4o"], [], "openai", usable=lambda p: p == "openai") is None
    assert pick_judge(["claude-opus-4"], [], "anthropic") == ("openai", "gpt-4o-mini")
