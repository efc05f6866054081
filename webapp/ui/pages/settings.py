"""Settings `/settings`: which providers are ready (never a key, only whether one is set), the endpoints
admins registered (where a key may go besides its provider's own host), the compatible-server presets
(local ones checked on demand: does the server answer now, and which structured-output mode does it
accept?), the defaults the new-debate form starts from, and the team's saved profiles and templates.

Defaults live in NiceGUI's general storage (a JSON file beside the app), shared by every user of
this server; keys stay in the environment or `.env`, where the operator put them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from nicegui import app, ui

from webapp.access.gate import Gate
from webapp.access.roles import Action, Principal
from webapp.engine.formats import FORMATS
from webapp.engine.limits import endpoint_key, limit_for
from webapp.models import JudgeSpec
from webapp.providers.demo import DEMO_MODELS
from webapp.providers.endpoints import Endpoint, EndpointPolicy
from webapp.providers.presets import PRESETS, Preset
from webapp.providers.probe import (
    CHECK_TIMEOUT_S,
    PROBE_TIMEOUT_S,
    ServerCheck,
    StructuredCheck,
    check_server,
    probe_structured,
)
from webapp.providers.registry import provider_status
from webapp.settings import get_settings
from webapp.store.endpoints import EndpointStore, EndpointTaken, UnknownEndpoint
from webapp.store.protocol import redacted
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.library import LibrarySection
from webapp.ui.layout import frame, heading

DEFAULT_KEYS = ("format", "rounds", "demo_model", "warn_at", "cost_limit", "turn_timeout", "word_limit")


def _providers_card() -> None:
    rows = provider_status()
    with ui.card().classes("w-full"):
        heading("Providers", 2)
        ui.label("Keys are read from the environment or .env when a debate starts. They are never stored, "
                 "logged or shown here.").classes("text-sm text-grey-7")
        columns = [
            {"name": "title", "label": "Provider", "field": "title", "align": "left"},
            {"name": "kind", "label": "Kind", "field": "kind", "align": "left"},
            {"name": "key_env", "label": "Key variable", "field": "key_env", "align": "left"},
            {"name": "status", "label": "Status", "field": "status", "align": "left"},
            {"name": "url", "label": "Default URL", "field": "url", "align": "left"},
        ]
        table_rows = []
        for row in rows:
            if row["preset"]:
                kind = "compatible preset" + (" (local)" if row["local"] else "")
            else:
                kind = "built-in" if row["provider"] != "demo" else "offline demo"
            if not row["needs_key"] and row["preset"] and row["local"]:
                status = "no key needed (check below)"  # a local server is ready only when it answers
            elif not row["needs_key"]:
                status = "ready (no key needed)"
            else:
                status = "key configured" if row["configured"] else "not configured"
            table_rows.append({"id": f"{row['provider']}:{row['preset'] or ''}", "title": row["title"],
                               "kind": kind, "key_env": row["key_env"] or "—", "status": status,
                               "url": row["default_url"] or "—"})
        table = ui.table(columns=columns, rows=table_rows, row_key="id").classes("w-full").props("flat dense")
        table.mark("providers")
        table.add_slot("body-cell-status", r'''
            <q-td :props="props">
              <q-badge :color="props.value.startsWith('not') ? 'grey-6'
                               : props.value.startsWith('no key') ? 'blue-grey-8' : 'positive'">
                {{ props.value }}
              </q-badge>
            </q-td>
        ''')


PROBE_WAIT_S = 120.0  # for a debate's call to the same server to end, and the probe itself
# Readable on the light and the dark page (AA contrast), unlike Quasar's positive/negative text colours.
RESULT_COLOURS = {"answers": "text-green-800 dark:text-green-300", "odd": "text-amber-800 dark:text-amber-300",
                  "down": "text-red-700 dark:text-red-300"}


class LocalServers:
    """The local presets (Ollama, vLLM, llama.cpp, LM Studio): no key needed, and whether the server
    answers right now and which structured-output mode it accepts, checked only when asked (a "Check" per
    server, "Check all"), from this server. The mode found is remembered for the endpoint like a refusal,
    so the next verdict asks for it straight away."""

    def __init__(self) -> None:
        self.results: dict[str, ui.label] = {}
        self.modes: dict[str, ui.label] = {}
        self.buttons: dict[str, ui.button] = {}
        local = [p for p in PRESETS.values() if p.local]
        with ui.card().classes("w-full").mark("local-servers"):
            with ui.row().classes("w-full items-center justify-between"):
                heading("Local servers", 2)
                ui.button("Check all", icon="network_check", on_click=self.check_all).props("outline no-caps") \
                    .mark("check-all")
            ui.label("These need no key. Whether one answers is only known once checked: Rostrum asks its "
                     f"/models address (at most {CHECK_TIMEOUT_S:g} s) when you press Check, then asks its first "
                     "model for a tiny JSON answer to learn which structured-output mode it accepts "
                     f"(at most {PROBE_TIMEOUT_S:g} s).").classes("text-sm text-grey-7")
            for preset in local:
                with ui.row().classes("w-full items-center gap-x-3 gap-y-1").mark(f"local-{preset.name}"):
                    with ui.column().classes("gap-0 w-56"):
                        ui.label(preset.title).classes("font-medium")
                        ui.label(preset.default_url).classes("font-mono text-xs text-grey-7")
                    ui.badge("no key needed", color="blue-grey-8")
                    with ui.column().classes("gap-0 grow"):
                        self.results[preset.name] = ui.label("Not checked yet.").classes("text-sm") \
                            .mark(f"check-result-{preset.name}")
                        self.modes[preset.name] = ui.label("").classes("text-xs text-grey-8") \
                            .mark(f"check-mode-{preset.name}")
                    self.buttons[preset.name] = ui.button(
                        "Check", icon="network_check", on_click=lambda p=preset: self.check(p)) \
                        .props("flat dense no-caps").mark(f"check-{preset.name}")

    async def check(self, preset: Preset) -> ServerCheck:
        label, mode, button = self.results[preset.name], self.modes[preset.name], self.buttons[preset.name]
        button.props("loading")
        label.text = f"Checking {preset.default_url} …"
        mode.text = ""
        try:  # through the same guard as a debate's calls (hosted: only registered endpoints)
            policy = await runtime.endpoint_policy()
            result = await check_server(preset.default_url, policy=policy)
            at = result.checked_at.strftime("%H:%M:%S UTC")
            label.text = f"{result.describe()} (checked {at})"
            label.classes(remove=" ".join(RESULT_COLOURS.values()))
            label.classes(RESULT_COLOURS["answers" if result.answers and not result.problem
                                         else "odd" if result.answers else "down"])
            if result.answers and result.models and not result.problem:
                mode.text = f"Asking {result.models[0]} for a tiny structured answer …"
                try:
                    found = await asyncio.wait_for(self._probe(preset, result.models[0], mode, policy), PROBE_WAIT_S)
                    mode.text = found.describe()
                except TimeoutError:
                    mode.text = (f"Structured output not checked: {preset.title} was still busy after "
                                 f"{PROBE_WAIT_S:g} s (a debate's call, or a slow model). Check again later.")
        finally:
            button.props(remove="loading")
        return result

    @staticmethod
    async def _probe(preset: Preset, model: str, words: ui.label, policy: EndpointPolicy) -> StructuredCheck:
        """The structured-output probe, queued behind this process's debates on the same endpoint (a
        server that serves one request at a time would otherwise have a running turn interrupted)."""
        engine = runtime.current().engine_
        spec = JudgeSpec(provider="compatible", preset=preset.name, model=model)

        def waiting() -> None:
            words.text = f"Waiting for a debate's call to {preset.title} to finish before asking {model} …"

        def queue() -> Any:
            assert engine is not None
            return engine.limiter.slot(endpoint_key(spec), limit_for(spec), waiting)

        return await probe_structured(preset.default_url, model, preset=preset, policy=policy,
                                      queue=queue if engine is not None else None)

    async def check_all(self) -> None:
        await asyncio.gather(*(self.check(PRESETS[name]) for name in self.results if name in PRESETS))


class EndpointsCard:
    """Admins register endpoints here: a name, a base URL and optionally the variable whose key goes to
    it (never the key itself). Each addition and removal is audited; those from the configuration
    (`ROSTRUM_ENDPOINTS`, `ROSTRUM_ENDPOINTS_FILE`) are listed but changed only there."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.values: dict[str, str] = {"name": "", "base_url": "", "key_env": ""}
        with ui.card().classes("w-full").mark("endpoints"):
            heading("Endpoints", 2)
            policy = runtime.known_policy()
            ui.label("A provider key is sent only to its provider's own host, or to an endpoint registered here "
                     "with that key variable. Operators pick these endpoints on the new-debate form; "
                     + ("they may also type other base URLs (never with a server key)."
                        if policy.allow_free_urls else "other base URLs are refused (ROSTRUM_ALLOW_FREE_URLS)."))\
                .classes("text-sm text-grey-7")
            self.list = ui.column().classes("w-full gap-1")
            with ui.row().classes("w-full items-start gap-2"):
                ui.input("Name").props("outlined dense").classes("w-48").bind_value(self.values, "name") \
                    .mark("endpoint-name")
                ui.input("Base URL", placeholder="http://10.0.0.5:8000/v1").props("outlined dense") \
                    .classes("grow").bind_value(self.values, "base_url").mark("endpoint-url")
                ui.input("Key variable (optional)", placeholder="TEAM_VLLM_KEY").props("outlined dense") \
                    .classes("w-56").bind_value(self.values, "key_env").mark("endpoint-key-env")
                ui.button("Register", icon="add_link", on_click=self.add).props("unelevated no-caps") \
                    .mark("endpoint-add")
            self.problem = ui.label().classes("text-negative text-sm").mark("endpoint-problem")

    async def refresh(self) -> None:
        policy = await runtime.endpoint_policy()
        self.list.clear()
        with self.list:
            if not policy.endpoints:
                ui.label("No endpoint is registered.").classes("text-sm text-grey-7")
            for endpoint in policy.endpoints:
                with ui.row().classes("w-full items-center gap-3").mark(f"endpoint-{endpoint.name}"):
                    ui.label(endpoint.name).classes("font-medium w-48")
                    ui.label(endpoint.base_url).classes("font-mono text-xs grow")
                    ui.label(endpoint.key_env or "no key").classes("font-mono text-xs w-48")
                    if endpoint.source == "config":
                        ui.badge("configuration", color="blue-grey-8")
                    else:
                        ui.button(icon="delete", on_click=lambda e=endpoint: self.remove(e)) \
                            .props(f'flat round dense aria-label="Remove the endpoint {endpoint.name}"') \
                            .mark(f"endpoint-remove-{endpoint.name}")

    async def add(self) -> None:
        try:  # checked on the server: a hidden card is no protection
            await self.gate.authorize(Action.SERVER_SETTINGS, detail="register endpoint")
        except PermissionError as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        actor = self.gate.principal.actor
        try:
            endpoint = Endpoint(name=self.values["name"], base_url=self.values["base_url"],
                                key_env=self.values["key_env"] or None)
            policy = await runtime.endpoint_policy()
            if policy.endpoint_named(endpoint.name) is not None:
                raise EndpointTaken(f"an endpoint called “{endpoint.name}” is registered already")
            await EndpointStore(self.gate.engine.store).add(endpoint, actor)
        except (ValueError, EndpointTaken) as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ") if hasattr(exc, "errors") else str(exc)
            self.problem.text = message
            await self.gate.accounts.audit(actor, "endpoint_add", outcome="refused",
                                           detail={"name": self.values["name"][:60], "problem": message[:300]})
            return
        self.problem.text = ""
        await self.gate.accounts.audit(actor, "endpoint_add", detail=endpoint.model_dump(exclude={"source"}))
        self.values.update(name="", base_url="", key_env="")
        ui.notify(f"Endpoint {endpoint.name} registered", type="positive")
        await self.refresh()

    async def remove(self, endpoint: Endpoint) -> None:
        try:
            await self.gate.authorize(Action.SERVER_SETTINGS, detail="remove endpoint")
        except PermissionError as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        try:
            removed = await EndpointStore(self.gate.engine.store).remove(endpoint.name)
        except UnknownEndpoint as exc:
            ui.notify(str(exc), type="warning")
        else:
            await self.gate.accounts.audit(self.gate.principal.actor, "endpoint_remove",
                                           detail=removed.model_dump(exclude={"source"}))
            ui.notify(f"Endpoint {removed.name} removed", type="positive")
        await self.refresh()


def _defaults_card(gate: Gate) -> None:
    stored: dict[str, Any] = dict(app.storage.general.get("defaults") or {})
    values = {key: stored.get(key) for key in DEFAULT_KEYS}
    values["format"] = values["format"] or "classic"
    values["demo_model"] = values["demo_model"] or "demo"
    with ui.card().classes("w-full"):
        heading("Defaults for new debates", 2)
        with ui.row().classes("w-full gap-2 items-start"):
            ui.select({f.id: f.title for f in FORMATS.values()}, label="Format").props("outlined dense") \
                .classes("w-56").bind_value(values, "format")
            ui.number("Rounds", min=1, max=50, precision=0).props('outlined dense hint="empty = format default"') \
                .classes("w-40").bind_value(values, "rounds")
            demo_models = {m: f"{m} (≈{speed:g} tokens/s)" if speed else f"{m} (no delay)"
                           for m, speed in DEMO_MODELS.items()}
            ui.select(demo_models, label="Demo model").props("outlined dense").classes("w-56") \
                .bind_value(values, "demo_model")
        with ui.row().classes("w-full gap-2 items-start"):
            ui.number("Warn at (USD)", min=0, step=0.01).props('outlined dense prefix="$"').classes("w-44") \
                .bind_value(values, "warn_at")
            ui.number("Hard limit (USD)", min=0, step=0.01).props('outlined dense prefix="$"').classes("w-44") \
                .bind_value(values, "cost_limit")
            ui.number("Turn timeout (s)", min=1, max=3600, precision=0).props("outlined dense").classes("w-40") \
                .bind_value(values, "turn_timeout")
            ui.number("Word limit", min=20, max=5000, precision=0).props("outlined dense").classes("w-40") \
                .bind_value(values, "word_limit")
        problem = ui.label().classes("text-negative text-sm")
        editable = gate.principal.can(Action.SERVER_SETTINGS)

        async def save() -> None:
            try:  # checked on the server: a hidden button is no protection
                await gate.authorize(Action.SERVER_SETTINGS, detail="save defaults")
            except PermissionError as exc:
                ui.notify(f"Not done: {exc}", type="negative")
                return
            warn, limit = values.get("warn_at"), values.get("cost_limit")
            if warn is not None and limit is not None and limit < warn:
                problem.text = "The hard limit must be at least the warning threshold."
                return
            problem.text = ""
            clean = {k: (int(v) if k in ("rounds", "turn_timeout", "word_limit") and v is not None else v)
                     for k, v in values.items()}
            app.storage.general["defaults"] = clean
            await gate.accounts.audit(gate.principal.actor, Action.SERVER_SETTINGS.value, detail=clean)
            ui.notify("Defaults saved", type="positive")

        button = ui.button("Save defaults", icon="save", on_click=save).props("unelevated no-caps") \
            .mark("save-defaults")
        button.ignores_events_when_disabled = False  # a forged click reaches `save`, which refuses and logs
        if not editable:
            button.disable()
            ui.label("Only an admin can change the server's defaults.").classes("text-sm text-grey-7") \
                .mark("defaults-readonly")


def _server_card() -> None:
    settings = get_settings()
    with ui.card().classes("w-full"):
        heading("This server", 2)
        with ui.grid(columns="auto minmax(0, 1fr)").classes("w-full gap-x-6 gap-y-1 text-sm"):
            for label, value in (
                ("Database", redacted(settings.db)),  # never a PostgreSQL password
                ("Listening on", f"{settings.host}:{settings.port}"),
                ("Sign-in", "required" if settings.auth_enabled else "off (this machine only)"),
                ("Identity header", settings.auth_header or "none"),
                ("Demo speed", "model default" if settings.demo_speed is None else f"{settings.demo_speed:g} tokens/s"),
                ("Retries per debate", str(settings.max_retries)),
                ("Longest Retry-After honoured", f"{settings.retry_after_cap:g} s"),
                ("Price overrides", ", ".join(settings.price_overrides) or "none"),
                ("Images shown inline from", ", ".join(settings.image_hosts) or "no host (images are links)"),
                ("Free base URLs", "allowed (never with a server key)" if runtime.known_policy().allow_free_urls
                 else "refused: registered endpoints only"),
            ):
                ui.label(label).classes("text-grey-7")
                ui.label(value).classes("font-mono min-w-0 break-all")


async def page(request: Request) -> Response | None:
    admitted = await admit(request, Action.LIST, "see settings")
    if not isinstance(admitted, Principal):
        return admitted
    gate = auth_gate(admitted)
    admin = admitted.can(Action.SERVER_SETTINGS)
    with frame("/settings", admitted):
        heading("Settings")
        endpoints = None
        if admin:  # which keys are set and where the database lives are for admins only
            _providers_card()
            endpoints = EndpointsCard(gate)
        if admitted.can(Action.CREATE):  # those who pick models for debates
            LocalServers()
        _defaults_card(gate)
        library = LibrarySection(gate)
        if admin:
            _server_card()
    await library.refresh()
    if endpoints is not None:
        await endpoints.refresh()
    return None
