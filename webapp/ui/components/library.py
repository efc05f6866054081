"""Saved profiles and templates on the pages: the new-debate form's "Templates" button (use one, save
the form as one), each participant and judge row's profile menu ("Use profile…", "Save as profile"), and the
Settings section where they are listed, renamed and deleted.

The form is a plain dictionary (`components.presets`): applying a profile updates one row of it,
applying a template replaces the whole of it (`config_to_form`), and the form then re-renders itself,
as a preset or a clone does. What is saved is validated by `webapp.store.library` (never a key).
The lists are read when a dialog opens, so what a teammate saved a moment ago is offered.
"""

from __future__ import annotations

from typing import Any, Protocol

from nicegui import app, ui
from pydantic import ValidationError

from webapp.access.gate import Gate
from webapp.access.roles import Action, actor_label
from webapp.store.accounts import Accounts
from webapp.store.library import (
    NAME_MAX_CHARS,
    PROFILE_FIELDS,
    Library,
    LibraryError,
    LibraryItem,
    NotAuthor,
    UnknownItem,
    may_change,
)
from webapp.ui.components.presets import config_to_form, form_to_config


class FormView(Protocol):
    """What the library needs of the new-debate form (`ui.form.debate_form.DebateForm`)."""

    form: dict[str, Any]
    gate: Gate
    errors: dict[str, str]
    topic: Any

    def render(self) -> None: ...


def library_of(gate: Gate) -> Library:
    return Library(gate.engine.store)


def is_admin(gate: Gate) -> bool:
    return gate.principal.can(Action.MANAGE_USERS)


def apply_profile(row: dict[str, Any], item: LibraryItem) -> None:
    """Fill a participant row from a profile; its seat (name, position, colour) stays."""
    row.update({name: item.data.get(name) for name in PROFILE_FIELDS})
    row["base_url"] = row.get("base_url") or ""


def apply_profile_to_judge(row: dict[str, Any], item: LibraryItem) -> None:
    """Fill a judge row from a profile: the fields a judge has (provider, model, its server)."""
    row.update({name: item.data.get(name) for name in PROFILE_FIELDS if name in row})
    row["base_url"] = row.get("base_url") or ""


def apply_template(form: dict[str, Any], item: LibraryItem, defaults: dict[str, Any] | None = None) -> None:
    """Replace the whole form with a template's configuration; a template without a topic keeps the
    topic already typed."""
    typed = str(form.get("topic") or "")
    filled = config_to_form(item.config(), defaults)
    filled["topic"] = item.topic or typed
    form.clear()
    form.update(filled)


async def _audit(gate: Gate, action: str, item: LibraryItem) -> None:
    await Accounts(gate.engine.store).audit(gate.principal.actor, action,
                                            detail={"kind": item.kind, "name": item.name, "id": item.id})


def _item_line(item: LibraryItem) -> None:
    with ui.column().classes("gap-0 grow min-w-0"):
        ui.label(item.name).classes("font-medium").mark(f"{item.kind}-name")
        ui.label(f"{item.summary()} · by {actor_label(item.created_by)}").classes("text-xs text-grey-7")


class LibraryTools:
    """The form's library actions. Made where the form's top bar is built (the Templates button);
    `row_actions` is called from each participant row."""

    def __init__(self, view: FormView) -> None:
        self.view = view
        self.library = library_of(view.gate)
        self.dialogs = ui.element("div")  # dialogs are made when first used, in here
        ui.button("Templates", icon="bookmarks", on_click=self.open_templates).props("outline no-caps") \
            .mark("templates")

    # --- dialogs --------------------------------------------------------------------------------

    def _dialog(self, title: str, marker: str) -> tuple[ui.dialog, ui.column]:
        self.dialogs.clear()
        with self.dialogs, ui.dialog() as dialog, ui.card().classes("w-[36rem] max-w-full gap-3").mark(marker):
            with ui.row().classes("w-full items-center justify-between"):
                ui.label(title).classes("text-lg font-semibold")
                ui.button(icon="close", on_click=dialog.close).props('flat round dense aria-label="Close"')
            body = ui.column().classes("w-full gap-2")
        dialog.open()
        return dialog, body

    def _save_box(self, kind: str, save: Any) -> None:
        with ui.row().classes("w-full items-start gap-2"):
            name = ui.input(f"Name of the new {kind}").props(f'outlined dense maxlength="{NAME_MAX_CHARS}" counter') \
                .classes("grow").mark(f"{kind}-new-name")
            ui.button(f"Save as {kind}", icon="save", on_click=lambda: save(name)) \
                .props("unelevated no-caps").mark(f"save-{kind}")

    async def open_templates(self) -> None:
        templates = await self.library.items("template")
        dialog, body = self._dialog("Templates", "templates-dialog")
        with body:
            ui.label("A template fills the whole form. Templates are shared with everyone on this server.") \
                .classes("text-sm text-grey-7")
            if not templates:
                ui.label("No template saved yet.").classes("text-sm").mark("no-templates")
            for item in templates:
                with ui.row().classes("w-full items-center gap-2 no-wrap").mark("template-item"):
                    _item_line(item)
                    ui.button("Use", icon="input", on_click=lambda i=item: self.use_template(i, dialog)) \
                        .props("flat dense no-caps").mark("use-template")
            ui.separator()
            self._save_box("template", lambda name: self.save_template(name, dialog))
            ui.link("Rename or delete them in Settings", "/settings").classes("text-sm")

    def use_template(self, item: LibraryItem, dialog: ui.dialog) -> None:
        view = self.view
        try:
            apply_template(view.form, item, app.storage.general.get("defaults"))
        except ValidationError as exc:  # saved by a Rostrum whose configuration differed
            ui.notify(f"This template no longer fits the form ({exc.error_count()} problem(s)); save it again.",
                      type="warning")
            return
        view.topic.value = view.form["topic"]
        view.errors.clear()
        view.render()
        dialog.close()
        ui.notify(f"Template applied: {item.name}")

    async def save_template(self, name: ui.input, dialog: ui.dialog) -> None:
        data = form_to_config(self.view.form)
        if await self._save("template", name, data):
            dialog.close()

    async def _save(self, kind: str, name: ui.input, data: dict[str, Any]) -> LibraryItem | None:
        gate = self.view.gate
        try:
            await gate.authorize(Action.CREATE, detail=f"save a {kind}")
            item = await self.library.save(kind, str(name.value or ""), data, gate.principal.actor)  # type: ignore[arg-type]
        except LibraryError as exc:
            name.error = str(exc)
            return None
        except PermissionError as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return None
        await _audit(gate, f"{kind}_saved", item)
        ui.notify(f"Saved as {kind}: {item.name}", type="positive")
        return item

    # --- a participant row ----------------------------------------------------------------------

    def _rows(self, group: str) -> list[dict[str, Any]]:
        """The form's rows of `group`: "participants", "judges" (the judge panel's judges) or
        "fallback" (the fallback judge alone)."""
        form = self.view.form
        if group == "fallback":
            return [form["judge"]["fallback"]]
        return form["judge"]["judges"] if group == "judges" else form["participants"]

    @staticmethod
    def _who(group: str, index: int, row: dict[str, Any]) -> str:
        if group == "fallback":
            return "the fallback judge"
        if group == "judges":
            return f"judge {index + 1}"
        return row.get("name") or f"participant {index + 1}"

    def row_actions(self, index: int, row: dict[str, Any], group: str = "participants") -> None:
        """The profile menu of one participant row, or (`group` "judges", "fallback") of a judge's: a
        judge takes a profile's provider and model (it has no persona or temperature of its own)."""
        label = self._who(group, index, row)
        mark = {"participants": "", "judges": "judge-", "fallback": "fallback-"}[group]
        with ui.button(icon="badge").props("flat round dense").mark(f"{mark}profile-menu-{index}") as button, \
                ui.menu():
            button.props["aria-label"] = f"Profiles for {label}"  # a value: a quote in a name stays a quote
            ui.menu_item("Use profile…", on_click=lambda: self.open_profiles(index, use=True, group=group)) \
                .mark(f"{mark}use-profile-{index}")
            ui.menu_item("Save as profile", on_click=lambda: self.open_profiles(index, use=False, group=group)) \
                .mark(f"{mark}save-profile-{index}")
        what = "this participant's settings" if group == "participants" else "this judge's model"
        button.props["title"] = f"Profiles: use a saved one, or save {what}"

    async def open_profiles(self, index: int, use: bool, group: str = "participants") -> None:
        rows = self._rows(group)
        if index >= len(rows):
            return
        row = rows[index]
        who = self._who(group, index, row)
        if not use:
            dialog, body = self._dialog(f"Save {who}'s settings as a profile", "profiles-dialog")
            with body:
                kept = ("the persona, temperature and limits (not the name, side or colour)" if group == "participants"
                        else "(a participant using it gets the default persona and temperature)")
                ui.label(f"Saves {row.get('provider')}:{row.get('model')}, {kept}, for everyone on this server.") \
                    .classes("text-sm text-grey-7")
                self._save_box("profile", lambda name: self.save_profile(index, name, dialog, group))
            return
        profiles = await self.library.items("profile")
        dialog, body = self._dialog(f"Use a profile for {who}", "profiles-dialog")
        with body:
            if group != "participants":
                ui.label("A judge takes the profile's provider and model.").classes("text-sm text-grey-7")
            if not profiles:
                ui.label("No profile saved yet: use “Save as profile” on a participant.").classes("text-sm") \
                    .mark("no-profiles")
            for item in profiles:
                with ui.row().classes("w-full items-center gap-2 no-wrap").mark("profile-item"):
                    _item_line(item)
                    ui.button("Use", icon="input", on_click=lambda i=item: self.use_profile(index, i, dialog, group)) \
                        .props("flat dense no-caps").mark("use-profile")

    def use_profile(self, index: int, item: LibraryItem, dialog: ui.dialog, group: str = "participants") -> None:
        rows = self._rows(group)
        if index < len(rows):
            if group != "participants":
                apply_profile_to_judge(rows[index], item)
                prefix = "judge.fallback" if group == "fallback" else f"judge.judges[{index}]"
            else:
                apply_profile(rows[index], item)
                prefix = f"participants[{index}]"
            self.view.errors = {k: v for k, v in self.view.errors.items() if not k.startswith(prefix)}
            self.view.render()
            ui.notify(f"Profile applied: {item.name}")
        dialog.close()

    async def save_profile(self, index: int, name: ui.input, dialog: ui.dialog, group: str = "participants") -> None:
        rows = self._rows(group)
        if index < len(rows) and await self._save("profile", name, rows[index]):
            dialog.close()


class LibrarySection:
    """The Settings section: every saved profile and template, with rename and delete for their author
    and admins (checked again by the store: a hidden button is no protection)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.library = library_of(gate)
        with ui.card().classes("w-full").mark("library"):
            ui.label("Saved profiles and templates").classes("text-xl font-semibold")
            ui.label("Shared with everyone on this server. Use them from the new-debate form; their author or "
                     "an admin can rename or delete them.").classes("text-sm text-grey-7")
            self.body = ui.column().classes("w-full gap-1")
            self.dialogs = ui.element("div")

    async def refresh(self) -> None:
        items = await self.library.items()
        self.body.clear()
        with self.body:
            if not items:
                ui.label("Nothing saved yet.").classes("text-sm").mark("library-empty")
            for kind in ("profile", "template"):
                mine = [i for i in items if i.kind == kind]
                if not mine:
                    continue
                ui.label(f"{kind.capitalize()}s ({len(mine)})").classes("font-medium mt-2")
                for item in mine:
                    self._row(item)

    def _row(self, item: LibraryItem) -> None:
        allowed = may_change(item, self.gate.principal.actor, is_admin(self.gate))
        with ui.row().classes("w-full items-center gap-2 no-wrap").mark("library-item"):
            _item_line(item)
            rename = ui.button(icon="edit", on_click=lambda: self.ask_rename(item)) \
                .props(f'flat round dense aria-label="Rename {item.name}"').mark("library-rename")
            delete = ui.button(icon="delete", on_click=lambda: self.ask_delete(item)) \
                .props(f'flat round dense color=negative aria-label="Delete {item.name}"').mark("library-delete")
            for button in (rename, delete):
                button.ignores_events_when_disabled = False  # a forged click reaches the store, which refuses
                if not allowed:
                    button.disable()

    def ask_rename(self, item: LibraryItem) -> None:
        self.dialogs.clear()
        with self.dialogs, ui.dialog() as dialog, ui.card().mark("rename-dialog"):
            ui.label(f"Rename the {item.kind} “{item.name}”").classes("text-lg font-semibold")
            name = ui.input("New name", value=item.name).props(f'outlined dense maxlength="{NAME_MAX_CHARS}"') \
                .classes("w-80").mark("library-new-name")
            with ui.row().classes("w-full justify-end gap-2"):
                ui.button("Cancel", on_click=dialog.close).props("flat no-caps")
                ui.button("Rename", on_click=lambda: self.rename(item, name, dialog)) \
                    .props("unelevated no-caps").mark("library-rename-confirm")
        dialog.open()

    async def rename(self, item: LibraryItem, name: ui.input, dialog: ui.dialog) -> None:
        try:
            renamed = await self.library.rename(item.id, str(name.value or ""), self.gate.principal.actor,
                                                is_admin(self.gate))
        except LibraryError as exc:
            name.error = str(exc)
            return
        except (NotAuthor, UnknownItem) as exc:  # audited like every other refusal
            await Accounts(self.gate.engine.store).audit(self.gate.principal.actor, f"{item.kind}_renamed",
                                                         outcome="refused", detail=str(exc))
            ui.notify(f"Not done: {exc}", type="negative")
            dialog.close()
            await self.refresh()
            return
        await _audit(self.gate, f"{item.kind}_renamed", renamed)
        dialog.close()
        ui.notify(f"Renamed to {renamed.name}", type="positive")
        await self.refresh()

    async def ask_delete(self, item: LibraryItem) -> None:
        """Confirm first: the item is the team's, not only this person's. A click that may not delete
        goes straight to the store, which refuses it (and the refusal is audited)."""
        if not may_change(item, self.gate.principal.actor, is_admin(self.gate)):
            await self.delete(item)
            return
        self.dialogs.clear()
        with self.dialogs, ui.dialog() as dialog, ui.card().mark("delete-item-dialog"):
            ui.label(f"Delete the {item.kind} “{item.name}”?").classes("text-lg font-semibold")
            ui.label("It is removed for everyone on this server. Debates started from it are not affected.") \
                .classes("text-sm")
            with ui.row().classes("w-full justify-end gap-2"):
                ui.button("Cancel", on_click=dialog.close).props("flat no-caps")

                async def confirmed() -> None:
                    dialog.close()
                    await self.delete(item)

                ui.button("Delete", on_click=confirmed).props("unelevated no-caps color=negative") \
                    .mark("library-delete-confirm")
        dialog.open()

    async def delete(self, item: LibraryItem) -> None:
        try:
            await self.library.delete(item.id, self.gate.principal.actor, is_admin(self.gate))
        except (NotAuthor, UnknownItem) as exc:
            await Accounts(self.gate.engine.store).audit(self.gate.principal.actor, f"{item.kind}_deleted",
                                                         outcome="refused", detail=str(exc))
            ui.notify(f"Not done: {exc}", type="negative")
            return
        await _audit(self.gate, f"{item.kind}_deleted", item)
        ui.notify(f"Deleted the {item.kind} “{item.name}”", type="positive")
        await self.refresh()
