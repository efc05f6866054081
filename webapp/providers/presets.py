"""The known OpenAI-compatible servers (local and hosted), as data.

Kept apart from the provider so that pages and the registry can list them without importing the
OpenAI SDK and its HTTP stack at start-up.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

DUMMY_KEY = "not-needed"


class Preset(BaseModel):
    """A known OpenAI-compatible server."""

    model_config = ConfigDict(frozen=True)

    name: str
    title: str
    default_url: str
    key_env: str | None = None
    usage_in_stream: bool = True
    local: bool = False
    supports_json_mode: bool = True


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(name="ollama", title="Ollama", default_url="http://localhost:11434/v1", local=True),
        Preset(name="vllm", title="vLLM", default_url="http://localhost:8000/v1", local=True),
        Preset(name="llamacpp", title="llama.cpp server", default_url="http://localhost:8080/v1", local=True),
        Preset(
            name="lmstudio",
            title="LM Studio",
            default_url="http://localhost:1234/v1",
            local=True,
            usage_in_stream=False,
            supports_json_mode=False,
        ),
        Preset(
            name="openrouter",
            title="OpenRouter",
            default_url="https://openrouter.ai/api/v1",
            key_env="OPENROUTER_API_KEY",
        ),
        Preset(
            name="groq", title="Groq", default_url="https://api.groq.com/openai/v1", key_env="GROQ_API_KEY"
        ),
        Preset(
            name="mistral",
            title="Mistral",
            default_url="https://api.mistral.ai/v1",
            key_env="MISTRAL_API_KEY",
        ),
        Preset(
            name="gemini",
            title="Google Gemini",
            default_url="https://generativelanguage.googleapis.com/v1beta/openai",
            key_env="GEMINI_API_KEY",
        ),
    )
}


def get_preset(name: str | None) -> Preset | None:
    """The preset called `name` (case-insensitive), or None."""
    return PRESETS.get(name.strip().lower()) if name else None
