"""What every section of the new-debate form shares: fields that show their error inline, sections that
open when they hold an error, and the provider / model / server inputs of any model row.

A model row is a participant, a judge of the panel or the fallback judge: the same dictionary keys
(`presets.judge_row`) and the same inputs, so a provider without a key reads the same everywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nicegui import ui

from webapp.models import TEMPERATURE_IGNORED_BY
from webapp.providers.presets import PRESETS
from webapp.providers.registry import TITLES, provider_status
from webapp.ui.components.presets import DEFAULT_MODELS


def provider_options(status_rows: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """Labels for the provider select, and provider -> key variable still to set (unavailable ones)."""
    status = {row["provider"]: row for row in status_rows if row["preset"] is None}
    options: dict[str, str] = {"demo": "Demo (offline)"}
    missing: dict[str, str] = {}
    for name in ("openai", "anthropic"):
        row = status[name]
        if row["configured"]:
            options[name] = row["title"]
        else:
            options[name] = f"{row['title']} — unavailable: set {row['key_env']}"
            missing[name] = row["key_env"]
    options["compatible"] = "OpenAI-compatible server"
    return options, missing


def preset_options(status_rows: list[dict[str, Any]]) -> dict[str, str]:
    rows = {row["preset"]: row for row in status_rows if row["preset"]}
    options = {"": "Custom base URL"}
    for name, preset in PRESETS.items():
        row = rows.get(name, {})
        label = f"{preset.title} ({preset.default_url})"
        if preset.key_env and not row.get("configured"):
            label += f" — unavailable: set {preset.key_env}"
        options[name] = label
    return options


class FormFields:
    """The registry of one form's fields and errors; subclasses rebuild themselves in `render`."""

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.anchors: dict[str, Any] = {}  # config path -> element to focus for its error, in page order
        self.errors: dict[str, str] = {}
        self.opened: dict[str, bool] = {}  # expansion marker -> open
        status = provider_status()  # reads the environment and .env: once per form, not per select
        self.providers, self.missing_keys = provider_options(status)
        self.presets = preset_options(status)

    def render(self) -> None:
        raise NotImplementedError

    def changed(self) -> None:
        """Called after any field's value changed (a form may keep a copy of itself)."""

    def models_changed(self) -> None:
        """Called when a model name is edited (a form may re-check what depends on the models)."""

    def field(self, path: str, element: Any) -> Any:
        """Register `element` as the input for the config path `path`: it shows (and clears) its error."""
        self.fields[path] = element
        self.anchors[path] = element
        if path in self.errors:
            element.error = self.errors[path]

        def clear() -> None:
            if self.errors.pop(path, None) is not None and not element.is_deleted:
                element.error = None
            self.changed()

        element.on_value_change(clear)
        return element.mark(f"field-{path}")

    def group_error(self, path: str) -> None:
        """An error about a whole group (e.g. "participants"), shown as a line inside it."""
        message = self.errors.get(path)
        if message:
            with ui.row().classes("items-center gap-1 text-negative").props('tabindex="-1"') \
                    .mark(f"error-{path}") as row:
                ui.icon("error")
                ui.label(message)
            self.anchors[path] = row

    @contextmanager
    def section(self, title: str, icon: str, prefixes: tuple[str, ...], marker: str) -> Iterator[ui.expansion]:
        """An expansion, collapsed at first; it stays as the user left it when the form re-renders, and
        opens when one of its fields has an error so that the error is in sight."""
        if any(path.startswith(prefixes) for path in self.errors):
            self.opened[marker] = True
        with ui.expansion(title, icon=icon).bind_value(self.opened, marker).classes("w-full").mark(marker) \
                as expansion:
            yield expansion

    def drop_errors(self, prefix: str) -> None:
        """Row errors point at indexes that just changed: drop them rather than show them on the wrong row."""
        self.errors = {k: v for k, v in self.errors.items() if not k.startswith(prefix)}

    # --- model rows -------------------------------------------------------------------------

    def provider_inputs(self, prefix: str, row: dict[str, Any]) -> None:
        """Provider select and model input, inline in the caller's row."""
        provider = ui.select(self.providers, label="Provider", value=row["provider"],
                             on_change=lambda e: self.change_provider(row, e.value)) \
            .props("outlined dense options-dense").classes("w-64")
        self.field(f"{prefix}.provider", provider)
        model = ui.input("Model").props("outlined dense").classes("w-48")
        self.field(f"{prefix}.model", model.bind_value(row, "model"))
        model.on_value_change(lambda: self.models_changed())

    def provider_extras(self, prefix: str, row: dict[str, Any]) -> None:
        """Below the row: which variable a keyless provider needs, that a provider ignores the row's
        temperature, and a compatible server's address."""
        if row["provider"] in self.missing_keys:
            with ui.row().classes("items-center gap-1 text-warning text-sm").mark(f"missing-key-{prefix}"):
                ui.icon("key_off")
                ui.label(f"Unavailable: set {self.missing_keys[row['provider']]} in the environment or .env "
                         "and restart, or pick another provider.")
        if "temperature" in row and row["provider"] in TEMPERATURE_IGNORED_BY:
            with ui.row().classes("items-center gap-1 text-grey-8 text-sm").mark(f"temperature-note-{prefix}"):
                ui.icon("info")
                ui.label(f"{TITLES.get(row['provider'], row['provider'])} does not accept a temperature: the "
                         "Temperature field is not sent (the model's default is used).")
        if row["provider"] == "compatible":
            with ui.row().classes("w-full items-center gap-2"):
                row["preset"] = row.get("preset") or ""
                preset = ui.select(self.presets, label="Server preset") \
                    .props("outlined dense options-dense").classes("w-96")
                self.field(f"{prefix}.preset", preset.bind_value(row, "preset"))
                url = ui.input("Base URL", placeholder="http://localhost:11434/v1") \
                    .props('outlined dense hint="empty = the preset\'s URL"').classes("grow")
                self.field(f"{prefix}.base_url", url.bind_value(row, "base_url"))

    async def change_provider(self, row: dict[str, Any], provider: str) -> None:
        await asyncio.sleep(0)  # let the select finish its own update before the form is re-rendered
        previous = row.get("provider")
        if provider == previous:
            return
        row["provider"] = provider
        # Replace a model the form chose (the old provider's default, or any demo model), never one typed.
        chosen = row.get("model") == DEFAULT_MODELS.get(previous or "", "") or (
            previous == "demo" and str(row.get("model", "")).startswith("demo"))
        if not row.get("model") or chosen:
            row["model"] = DEFAULT_MODELS[provider]
        self.render()


def number(label: str, hint: str, width: str = "w-40", **kwargs: Any) -> ui.number:
    """A dense number input. No min/max: an out-of-range value is reported at the field, never clamped."""
    return ui.number(label, **kwargs).props(f'outlined dense hint="{hint}"').classes(width)
