"""OpenAI-compatible servers: presets for the common local and hosted ones, and the provider itself.

A local preset needs no key (any dummy key is sent) and defaults to a price of $0. Servers that do
not report usage in streams (LM Studio) get estimated usage; servers without JSON mode are asked for
JSON in the prompt only.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from webapp.providers.openai import OpenAIProvider

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


class CompatibleProvider(OpenAIProvider):
    """An OpenAI-compatible server: the OpenAI adapter with `max_tokens` and per-server switches."""

    name: str = "compatible"
    max_tokens_field: str = "max_tokens"

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        connect_timeout: float = 10.0,
        *,
        preset: Preset | None = None,
        json_mode: bool | None = None,
        usage_in_stream: bool | None = None,
    ) -> None:
        self.preset = preset
        if json_mode is None:
            json_mode = preset.supports_json_mode if preset else False
        if usage_in_stream is None:
            usage_in_stream = preset.usage_in_stream if preset else True
        super().__init__(
            api_key or DUMMY_KEY,
            base_url,
            connect_timeout,
            json_mode=json_mode,
            usage_in_stream=usage_in_stream,
        )

    @classmethod
    def from_preset(
        cls,
        preset: Preset,
        api_key: str | None = None,
        base_url: str | None = None,
        connect_timeout: float = 10.0,
    ) -> CompatibleProvider:
        """A provider for a preset, optionally at another URL than its default."""
        return cls(base_url or preset.default_url, api_key, connect_timeout, preset=preset)
