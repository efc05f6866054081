"""Model families, as data: which vendor's family a model name belongs to.

A judge tends to prefer answers written by its own family (self-preference, arXiv 2406.00050), so the
new-debate form and the CLI warn when a judge shares a family with a debater, and a panel seat the
form fills in itself goes to a model of another family where it can.

A family is matched on the model's own name: lower-cased, the last path segment (OpenRouter's
`anthropic/claude-…`, Hugging Face's `meta-llama/Llama-…`), matched against shell-style patterns
(`fnmatch`). The first family whose pattern matches wins; an unknown name (the demo models, a custom
fine-tune) has no family and is never warned about. Adding a family is adding a row here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from webapp.models import DebateConfig


@dataclass(frozen=True)
class Family:
    id: str
    title: str  # what a person reads: "OpenAI (GPT, o-series)"
    patterns: tuple[str, ...]


FAMILIES: tuple[Family, ...] = (
    Family("openai", "OpenAI", ("gpt-*", "chatgpt-*", "o1", "o1-*", "o3", "o3-*", "o4", "o4-*")),
    Family("anthropic", "Anthropic Claude", ("claude*",)),
    Family("google", "Google Gemini", ("gemini*",)),
    Family("gemma", "Google Gemma", ("gemma*", "codegemma*")),
    Family("meta", "Meta Llama", ("llama*", "meta-llama*", "codellama*")),
    Family("mistral", "Mistral", ("mistral*", "mixtral*", "codestral*", "ministral*", "magistral*", "devstral*",
                                  "pixtral*", "open-mistral*", "open-mixtral*")),
    Family("qwen", "Qwen", ("qwen*", "qwq*")),
    Family("deepseek", "DeepSeek", ("deepseek*",)),
)

# Judges the form may suggest, in order of preference: (provider, model). A compatible server's seat
# keeps the address of the row it is made from.
JUDGE_CANDIDATES: tuple[tuple[str, str], ...] = (
    ("openai", "gpt-4o-mini"),
    ("anthropic", "claude-sonnet-4-5"),
    ("compatible", "llama3.1"),
    ("compatible", "qwen2.5"),
    ("compatible", "gemma2"),
    ("compatible", "mistral"),
    ("compatible", "deepseek-r1"),
)


def model_name(model: str) -> str:
    """The part of a model reference that names the model: `openrouter/anthropic/Claude-X` -> `claude-x`."""
    return model.strip().lower().rsplit("/", 1)[-1]


def family_of(model: str) -> Family | None:
    """The family of a model name, or None when no family's pattern matches."""
    name = model_name(model)
    for family in FAMILIES:
        if any(fnmatchcase(name, pattern) for pattern in family.patterns):
            return family
    return None


@dataclass(frozen=True)
class SharedFamily:
    """A judge (by config path) whose family is also a debater's."""

    field: str  # judge.judges[0] or judge.fallback
    judge: str  # provider:model
    family: Family
    debaters: tuple[str, ...]  # names of the debaters of that family

    @property
    def message(self) -> str:
        who = ", ".join(self.debaters)
        return (f"{self.field}: the judge {self.judge} is of the {self.family.title} family, like {who}; judges "
                "tend to prefer their own family's answers — consider a judge from another family")


def shared_families(config: DebateConfig) -> list[SharedFamily]:
    """Every judge (panel and fallback) sharing a family with a debater (moderators do not count)."""
    if not config.judge.enabled:
        return []
    judges = [(f"judge.judges[{i}]", j.label, j.model) for i, j in enumerate(config.judge.judges)]
    if config.judge.fallback is not None:
        judges.append(("judge.fallback", config.judge.fallback.label, config.judge.fallback.model))
    return find_shared([(p.name, p.model) for p in config.participants if p.position != "moderator"], judges)


def find_shared(debaters: Iterable[tuple[str, str]], judges: Iterable[tuple[str, str, str]]) -> list[SharedFamily]:
    """`shared_families` on plain values (a form being edited): debaters as (name, model), judges as
    (field, label, model)."""
    debater_families = [(name, family_of(model)) for name, model in debaters]
    found: list[SharedFamily] = []
    for field, label, model in judges:
        family = family_of(model)
        if family is None:
            continue
        same = tuple(name for name, theirs in debater_families if theirs == family)
        if same:
            found.append(SharedFamily(field, label, family, same))
    return found


def self_preference_notes(config: DebateConfig) -> list[str]:
    """The warnings, one line per judge (never a reason to refuse the debate)."""
    return [shared.message for shared in shared_families(config)]


def pick_judge(debater_models: Iterable[str], panel_models: Iterable[str], prefer_provider: str | None = None,
               usable: Callable[[str], bool] = lambda provider: True) -> tuple[str, str] | None:
    """A judge (provider, model) from `JUDGE_CANDIDATES` whose family no debater and no judge already on
    the panel has: of `prefer_provider` if it has one, else of the first provider `usable` accepts; None
    when there is none."""
    avoid = {f.id for f in map(family_of, [*debater_models, *panel_models]) if f is not None}
    fitting = [(provider, model) for provider, model in JUDGE_CANDIDATES
               if (family := family_of(model)) is not None and family.id not in avoid]
    for provider, model in fitting:
        if provider == prefer_provider:
            return provider, model
    return next(((provider, model) for provider, model in fitting if usable(provider)), None)
