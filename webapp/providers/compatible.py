"""OpenAI-compatible servers: presets for the common local and hosted ones, and the provider itself.

A local preset needs no key (any dummy key is sent) and defaults to a price of $0. Servers that do
not report usage in streams (LM Studio) get estimated usage. A structured answer is asked for with
`response_format` json_schema (grammar-constrained on llama.cpp's llama-server, vLLM, LM Studio,
Ollama), then `{"type": "json_object", "schema": …}` (llama-cpp-python's grammar), then bare
`json_object`, then in the prompt only — each step down only after the server refused the one above
(remembered per endpoint, see `webapp.providers.structured`); a preset without JSON mode skips both
json_object rungs.
"""

from __future__ import annotations

from webapp.providers.openai import OpenAIProvider
from webapp.providers.presets import DUMMY_KEY, PRESETS, Preset, get_preset

__all__ = ["DUMMY_KEY", "PRESETS", "CompatibleProvider", "Preset", "get_preset"]

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
            json_mode = preset.supports_json_mode if preset else True  # a refusal is remembered
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
