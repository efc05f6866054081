"""What every section of the new-debate form shares: fields that show their error inline, sections that
open when they hold an error, and the provider / model / server inputs of any model row.

A model row is a participant, a judge of the panel or the fallback judge: the same dictionary keys
(`presets.judge_row`) and the same inputs, so a provider without a key reads the same everywhere.
The model is typed freely; a picker beside it offers the models `genai-prices` knows for the row's
provider with their prices, and a compatible server's own list once "Test connection" has asked it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nicegui import ui

from webapp.models import TEMPERATURE_IGNORED_BY
from webapp.providers.catalog import ServerAnswer, genai_provider, list_server_models, priced_models, server_url
from webapp.providers.endpoints import EndpointPolicy
from webapp.providers.presets import PRESETS, get_preset
from webapp.providers.registry import TITLES, provider_status
from webapp.settings import read_env_var
from webapp.ui import runtime
from webapp.ui.components.badges import safe_color
from webapp.ui.components.presets import DEFAULT_MODELS

# The participants' colours: each at least 3:1 against the light and the dark page (WCAG non-text contrast).
SWATCHES = {"#2563eb": "Blue", "#dc2626": "Red", "#16a34a": "Green", "#9333ea": "Purple", "#ea580c": "Orange",
            "#0891b2": "Teal", "#d97706": "Amber", "#db2777": "Pink", "#64748b": "Slate"}
# A select's options reach the browser as labels only ("Blue · #2563eb"): the swatch takes its colour
# from after the last " · ", which is always a checked #rgb/#rrggbb (`swatch_label`).
SWATCH_SLOT = """
<q-item v-bind="props.itemProps">
  <q-item-section side>
    <span class="rostrum-dot" :style="{background: props.opt.label.split(' · ').pop()}"></span>
  </q-item-section>
  <q-item-section>
    <q-item-label>{{ props.opt.label.slice(0, props.opt.label.lastIndexOf(' · ')) }}</q-item-label>
  </q-item-section>
</q-item>
"""
SWATCH_SELECTED = """
<span class="row items-center no-wrap" style="gap: 0.4rem">
  <span class="rostrum-dot" :style="{background: props.opt.label.split(' · ').pop()}"></span>
  {{ props.opt.label.slice(0, props.opt.label.lastIndexOf(' · ')) }}
</span>
"""


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


# The fields that draw an error below themselves (Quasar's QField: a textarea is an input).
FIELD_KINDS = (ui.input, ui.number, ui.select, ui.input_chips)
HUMAN_OPTION = {"human": "Human (a person takes the seat)"}
ENDPOINT_OPTION = "endpoint:"  # a preset select's option for a registered endpoint: "endpoint:<name>"


def preset_options(status_rows: list[dict[str, Any]], policy: EndpointPolicy | None = None) -> dict[str, str]:
    """The compatible-server picker: the endpoints an admin registered, then the presets; "Custom base URL"
    is offered only where free URLs are allowed (or kept as the choice a row already has)."""
    rows = {row["preset"]: row for row in status_rows if row["preset"]}
    options = {"": "Custom base URL" if policy is None or policy.allow_free_urls
               else "Custom base URL (only a registered endpoint's)"}
    for endpoint in policy.endpoints if policy is not None else ():
        options[f"{ENDPOINT_OPTION}{endpoint.name}"] = f"Registered: {endpoint.name} ({endpoint.base_url})"
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
        self.model_inputs: dict[str, Any] = {}  # row prefix -> its model input, for the pickers
        self.server_answers: dict[str, ServerAnswer] = {}  # row prefix -> what its server said last
        status = provider_status()  # reads the environment and .env: once per form, not per select
        self.providers, self.missing_keys = provider_options(status)
        self.policy = runtime.known_policy()
        self.presets = preset_options(status, self.policy)

    def render(self) -> None:
        raise NotImplementedError

    def changed(self) -> None:
        """Called after any field's value changed (a form may keep a copy of itself)."""

    def models_changed(self) -> None:
        """Called when a model name is edited (a form may re-check what depends on the models)."""

    def judge_row_actions(self, index: int | None, row: dict[str, Any]) -> None:
        """Extra buttons on judge row `index` (None: the fallback judge); the new-debate form adds its
        profile menu."""

    def field(self, path: str, element: Any) -> Any:
        """Register `element` as the input for the config path `path`: it shows (and clears) its error."""
        self.fields[path] = element
        self.anchors[path] = element
        if isinstance(element, FIELD_KINDS):
            # Quasar draws a field's error in a one-line strip laid over what follows; a long message in a
            # narrow field ran over the next row ("Advanced: …"). This lets the strip grow with its text.
            element.props("hide-bottom-space")
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
        with ui.expansion(title, icon=icon).bind_value(self.opened, marker).props("dense") \
                .classes("w-full").mark(marker) as expansion:
            yield expansion

    def drop_errors(self, prefix: str) -> None:
        """Row errors point at indexes that just changed: drop them rather than show them on the wrong row."""
        self.errors = {k: v for k, v in self.errors.items() if not k.startswith(prefix)}
        self.server_answers = {k: v for k, v in self.server_answers.items() if not k.startswith(prefix)}

    # --- model rows -------------------------------------------------------------------------

    def provider_inputs(self, prefix: str, row: dict[str, Any]) -> None:
        """Provider select, model input and the model picker, inline in the caller's row."""
        # A participant may be a person (a human seat); a judge is always a model.
        options = {**self.providers, **HUMAN_OPTION} if prefix.startswith("participants") else self.providers
        provider = ui.select(options, label="Provider", value=row["provider"],
                             on_change=lambda e: self.change_provider(row, e.value, prefix)) \
            .props("outlined dense options-dense").classes("w-56")
        self.field(f"{prefix}.provider", provider)
        model = ui.input("Model", autocomplete=[m.id for m in self.catalog(prefix, row)]) \
            .props("outlined dense").classes("w-48")
        self.field(f"{prefix}.model", model.bind_value(row, "model"))
        model.on_value_change(lambda: self.models_changed())
        self.model_inputs[prefix] = model
        self._model_picker(prefix, row)

    def catalog(self, prefix: str, row: dict[str, Any]) -> list[Any]:
        """The models to offer a row: those genai-prices prices for its provider (with prices), or the
        ones its compatible server listed when asked."""
        provider_id = genai_provider(row["provider"], row.get("preset"))
        priced = list(priced_models(provider_id)) if provider_id else []
        answer = self.server_answers.get(prefix)
        listed = [m for m in answer.models if m not in {p.id for p in priced}] if answer else []
        return [*priced, *(_Listed(m) for m in listed)]

    def _model_picker(self, prefix: str, row: dict[str, Any]) -> None:
        """A button opening the row's list of models: filled when opened (a provider knows a hundred)."""
        title = TITLES.get(row["provider"], row["provider"])
        button = ui.button(icon="arrow_drop_down_circle").props(
            f'flat round dense aria-label="Pick a model of {title}"').mark(f"pick-model-{prefix}")
        button.tooltip("Pick a model (with its price per million tokens)")
        with button:  # opened by `fill` only (not by any click on the row around it)
            menu = ui.menu().props('no-parent-event max-height="24rem"')

        def fill() -> None:
            menu.clear()
            offered = self.catalog(prefix, row)
            with menu:
                if not offered:
                    ui.menu_item("No list for this provider: type the model's name").props("disable")
                for item in offered:
                    ui.menu_item(item.label, on_click=lambda m=item.id: self.pick_model(prefix, m)) \
                        .mark(f"model-option-{prefix}-{item.id}")
            menu.open()

        button.on_click(fill)

    def pick_model(self, prefix: str, model: str) -> None:
        element = self.model_inputs.get(prefix)
        if element is not None and not element.is_deleted:
            element.value = model  # its binding writes the row; its handlers clear an error

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
        if row["provider"] == "human":
            with ui.row().classes("w-full items-center gap-2"):
                row["seat"] = row.get("seat") or ""
                seat = ui.input("Who takes the seat", placeholder="a username; empty: whoever takes it first") \
                    .props("outlined dense").classes("w-96")
                self.field(f"{prefix}.seat", seat.bind_value(row, "seat"))
                ui.label("A person writes this participant's turns on the debate page; it costs nothing.") \
                    .classes("text-sm text-grey-8")
        if row["provider"] == "compatible":
            with ui.row().classes("w-full items-center gap-2"):
                row["preset"] = row.get("preset") or ""
                preset = ui.select(self.presets, label="Server preset or registered endpoint") \
                    .props("outlined dense options-dense").classes("w-96")
                self.field(f"{prefix}.preset", preset.bind_value(row, "preset"))
                preset.on_value_change(lambda e: self.pick_endpoint(row, e.value))
                hint = "empty = the preset's URL" if self.policy.allow_free_urls else \
                    "empty = the preset's URL; any other must be a registered endpoint"
                url = ui.input("Base URL", placeholder="http://localhost:11434/v1") \
                    .props(f'outlined dense hint="{hint}"').classes("grow")
                self.field(f"{prefix}.base_url", url.bind_value(row, "base_url"))
                ui.button("Test connection", icon="lan", on_click=lambda: self.test_connection(prefix, row)) \
                    .props("outline dense no-caps").mark(f"test-connection-{prefix}")
            endpoint = self.policy.endpoint_for(row["base_url"]) if row.get("base_url") else None
            if endpoint is not None:
                with ui.row().classes("items-center gap-1 text-grey-8 text-sm").mark(f"endpoint-note-{prefix}"):
                    ui.icon("verified").props('aria-hidden="true"')
                    ui.label(f"Registered endpoint {endpoint.name}"
                             + (": the server's key for it is sent there." if endpoint.key_env else "."))
            self._server_answer(prefix, row)

    def _server_answer(self, prefix: str, row: dict[str, Any]) -> None:
        """What the row's server said to "Test connection", and its models to pick from."""
        answer = self.server_answers.get(prefix)
        if answer is None:
            return
        ok = answer.answers and answer.models
        with ui.row().classes(f"w-full items-center gap-1 text-sm {'text-positive' if ok else 'text-negative'}") \
                .props('role="status"').mark(f"connection-{prefix}"):
            ui.icon("check_circle" if ok else "error").props('aria-hidden="true"')
            ui.label(answer.message)
        if answer.models:
            with ui.row().classes("w-full items-center gap-1"):
                ui.label("Its models:").classes("text-sm text-grey-8")
                for name in answer.models[:12]:
                    use = ui.button(name, on_click=lambda m=name: self.pick_model(prefix, m)) \
                        .props("flat dense no-caps").mark(f"server-model-{prefix}-{name}")
                    use.props["aria-label"] = f"Use the model {name}"  # a server's text: set, never parsed
                if len(answer.models) > 12:
                    ui.label(f"and {len(answer.models) - 12} more in the model picker").classes("text-sm text-grey-8")

    async def pick_endpoint(self, row: dict[str, Any], value: str | None) -> None:
        """A registered endpoint picked in the preset select: its URL becomes the row's base URL (the
        endpoint is known by its URL wherever the debate is checked; its key goes with it)."""
        if not (value or "").startswith(ENDPOINT_OPTION):
            return
        await asyncio.sleep(0)  # let the select finish its own update before the form is re-rendered
        endpoint = self.policy.endpoint_named(str(value)[len(ENDPOINT_OPTION):])
        row["preset"] = ""
        if endpoint is not None:
            row["base_url"] = endpoint.base_url
        self.render()

    async def test_connection(self, prefix: str, row: dict[str, Any]) -> None:
        """Ask the row's server for its models (from this server, never the browser: a key stays here),
        through the same guard as a debate's calls."""
        preset = get_preset(row.get("preset"))
        url = server_url(row.get("preset"), row.get("base_url"))
        policy = await runtime.endpoint_policy()
        endpoint = policy.endpoint_for(url) if url else None
        env = endpoint.key_env if endpoint is not None and endpoint.key_env else (preset.key_env if preset else None)
        # A key goes only where it is bound: its provider's own host, or the endpoint registered with it.
        key = read_env_var(env) if env and policy.key_may_go(env, url) else None
        self.server_answers[prefix] = await list_server_models(url, key, policy=policy)
        self.render()

    async def change_provider(self, row: dict[str, Any], provider: str, prefix: str = "") -> None:
        await asyncio.sleep(0)  # let the select finish its own update before the form is re-rendered
        previous = row.get("provider")
        if provider == previous:
            return
        row["provider"] = provider
        # Replace a model the form chose (the old provider's default), never one typed; a demo model's name
        # (a tournament's "alpha", "beta"…) is only a label, which no other provider has.
        chosen = row.get("model") == DEFAULT_MODELS.get(previous or "", "") or previous == "demo"
        if not row.get("model") or chosen:
            row["model"] = DEFAULT_MODELS[provider]
        self.server_answers.pop(prefix, None)  # another provider: the old server's answer no longer applies
        self.render()


class _Listed:
    """A model a server listed: no price is known for it."""

    def __init__(self, model: str) -> None:
        self.id = model
        self.label = f"{model} — listed by the server"


class ColourSelect(ui.select):
    """A select of named swatches that keeps a colour it does not list (an older debate's, saved
    defaults', or a bad one to be reported at this field) as a "Custom" option rather than dropping it."""

    def _handle_value_change(self, value: Any) -> None:
        if isinstance(value, str) and value and isinstance(self.options, dict) and value not in self.options:
            self.options[value] = swatch_label(value)
            self._update_values_and_labels()
        super()._handle_value_change(value)


def swatch_label(color: str) -> str:
    """'Blue · #2563eb'; a colour off the palette is 'Custom: <what it is> · <it, or grey if no colour>'."""
    if color in SWATCHES:
        return f"{SWATCHES[color]} · {color}"
    return f"Custom: {color} · {safe_color(color)}"


def colour_select(values: dict[str, Any]) -> ui.select:
    """The palette of a participant's colour: named swatches, each an accessible contrast."""
    current = values.get("color")
    options = {hex_: swatch_label(hex_) for hex_ in SWATCHES}
    if isinstance(current, str) and current and current not in options:
        options[current] = swatch_label(current)
    select = ColourSelect(options, label="Colour").props("outlined dense options-dense").classes("w-40")
    select.add_slot("option", SWATCH_SLOT)
    select.add_slot("selected-item", SWATCH_SELECTED)
    return select


def number(label: str, hint: str, width: str = "w-40", **kwargs: Any) -> ui.number:
    """A dense number input. No min/max: an out-of-range value is reported at the field, never clamped."""
    return ui.number(label, **kwargs).props(f'outlined dense hint="{hint}"').classes(width)
