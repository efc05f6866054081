"""New debate `/new`: the page around the form (`ui.form.debate_form.DebateForm`): who may start
debates, a person's daily spending limit, and a clone's source (`?from=ID`) filling the form.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response
from nicegui import app, ui

from webapp.access.gate import Gate
from webapp.access.roles import Action, Principal
from webapp.engine.engine import DebateNotFound
from webapp.models import DebateConfig
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.presets import blank_form, config_to_form
from webapp.ui.form.debate_form import DebateForm
from webapp.ui.layout import frame


async def _daily_limit_note(gate: Gate) -> None:
    """The person's daily spending limit, what today's debates have used of it, and what is left."""
    if not gate.daily_limit_applies() or gate.daily_usd is None:
        return
    spent = await gate.daily_spend()
    left = max(0.0, gate.daily_usd - spent)
    with ui.row().classes("w-full items-center gap-2 text-sm").mark("daily-limit"):
        ui.icon("account_balance_wallet").classes("text-grey-7")
        ui.label(f"Your daily limit: ${gate.daily_usd:.2f} · spent or reserved today: ${spent:.2f} · "
                 f"left: ${left:.2f}. Every debate needs a hard limit that fits in what is left.")


async def page(request: Request) -> Response | None:
    await runtime.current().engine()
    admitted = await admit(request, Action.CREATE, "start debates")
    if not isinstance(admitted, Principal):
        return admitted
    gate = auth_gate(admitted)
    defaults = app.storage.general.get("defaults")
    clone_of = request.query_params.get("from")
    config = await _clone_source(gate, clone_of) if clone_of else None
    form = {**config_to_form(config, defaults), "cloned_from": clone_of} if config else blank_form(defaults)
    with frame("/new", admitted):
        await _daily_limit_note(gate)
        view = DebateForm(form, gate)
        view.build()
    await view.keep_in_tab()
    return None


async def _clone_source(gate: Gate, debate_id: str) -> DebateConfig | None:
    """The config of the debate to clone, if it exists and this person may see it."""
    engine = await runtime.current().engine()
    try:
        session = await engine.session(debate_id)
    except DebateNotFound:
        session = None
    if session is None or not await gate.allowed(Action.WATCH, session.id):
        ui.notify(f"No debate with id {debate_id!r} to copy: the form starts empty.", type="warning")
        return None
    ui.notify(f"A copy of “{session.state.config.topic}”: change what you like, then start it.")
    return session.state.config
