"""What a person can do to the whole debate from its page, beside the commands that steer it: download
it (Export: Markdown, JSON or text, with its comments and audience) and delete it for good.

Both make their menu or dialog on first use, not with the page: every element costs each open page
(and each spectator's) memory, and most visitors never export or delete.
"""

from __future__ import annotations

from functools import partial

from nicegui import ui

from webapp.access.gate import Gate
from webapp.access.roles import Action
from webapp.engine import audience
from webapp.engine.public import DebateSession
from webapp.export import FORMATS as EXPORT_FORMATS
from webapp.export import Talk, people_without_names, talk_without_people, to_json
from webapp.store.comments import CommentStore


class ExportMenu:
    """The Export button; its menu of formats is made on the first click."""

    def __init__(self, session: DebateSession, gate: Gate) -> None:
        self.session = session
        self.gate = gate
        self.menu: ui.menu | None = None
        self.button = ui.button("Export", icon="download", on_click=self.open) \
            .props('flat dense no-caps aria-haspopup="menu"').mark("export")

    def open(self) -> None:
        if self.menu is None:
            with self.button, ui.menu() as self.menu:
                for label, kind in (("Markdown", "md"), ("JSON", "json"), ("Text", "txt")):
                    ui.menu_item(f"{label} (.{kind})", on_click=lambda k=kind: self.export(k)).mark(f"export-{kind}")
        self.menu.open()

    async def export(self, kind: str) -> None:
        try:
            await self.gate.authorize(Action.EXPORT, self.session.id)
        except PermissionError as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        state = self.session.state
        content, media = EXPORT_FORMATS[kind]
        talk: Talk = await CommentStore(self.session.store).for_debate(state.id)  # comments, reaction counts
        people = await audience.read_people(self.gate.engine.store, state)  # votes and people's verdicts
        if self.gate.principal.kind == "share-link":  # a link shows the debate, not who is on the team
            talk = talk_without_people(talk)
            people = people | people_without_names(people) if people else people
            if kind == "json":
                content = partial(to_json, names=False)
        ui.download.content(content(state, talk, people).encode("utf-8"), f"rostrum-{state.id}.{kind}",
                            f"{media}; charset=utf-8")


class DeleteButton:
    """"Delete debate", asking first in a dialog made (in `dialogs`, the page body) on the first click."""

    def __init__(self, session: DebateSession, gate: Gate, dialogs: ui.element) -> None:
        self.session = session
        self.gate = gate
        self.dialogs = dialogs
        self.dialog: ui.dialog | None = None
        ui.button("Delete debate", icon="delete", on_click=self.confirm).props("flat no-caps color=negative") \
            .mark("delete")

    def confirm(self) -> None:
        if self.dialog is None:
            with self.dialogs, ui.dialog() as dialog, ui.card().mark("delete-dialog"):
                ui.label("Delete this debate?").classes("text-lg font-semibold")
                ui.label("Its transcript, verdict, costs and share links are removed for good. "
                         "This cannot be undone.").classes("text-sm")
                with ui.row().classes("w-full justify-end gap-2"):
                    ui.button("Cancel", on_click=dialog.close).props("flat no-caps")
                    ui.button("Delete for good", on_click=self.delete) \
                        .props("unelevated color=negative no-caps").mark("delete-confirm")
            self.dialog = dialog
        self.dialog.open()

    async def delete(self) -> None:
        if self.dialog is not None:
            self.dialog.close()
        try:
            await self.gate.delete(self.session.id)
        except (PermissionError, KeyError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        ui.notify("Debate deleted", type="positive")
        ui.navigate.to("/")
