"""Self-preference in the new-debate form: a warning when a judge shares a model family with a
debater (judges tend to prefer answers of their own family), and a button that swaps such judges for
ones of another family where a usable provider has one. A warning only: it never blocks a start.
"""

from __future__ import annotations

from typing import Any

from nicegui import ui

from webapp.engine.families import SharedFamily, find_shared, pick_judge
from webapp.ui.components.form_fields import FormFields

MODERATORS = ("moderator", "mod")  # a moderator does not argue: its family is not judged


def is_debater(row: dict[str, Any]) -> bool:
    return str(row.get("position") or "").strip().lower() not in MODERATORS


def debater_models(form: dict[str, Any]) -> list[str]:
    return [str(r.get("model") or "") for r in form["participants"] if is_debater(r)]


def shared_families(form: dict[str, Any]) -> list[SharedFamily]:
    """Each judge (of the panel, and the fallback when used) that shares a family with a debater."""
    judge = form["judge"]
    debaters = [(str(r.get("name") or f"#{i + 1}"), str(r.get("model") or ""))
                for i, r in enumerate(form["participants"]) if is_debater(r)]
    judges = [(f"judge.judges[{i}]", f"{r['provider']}:{r.get('model') or ''}", str(r.get("model") or ""))
              for i, r in enumerate(judge["judges"])]
    if judge.get("use_fallback"):
        fallback = judge["fallback"]
        judges.append(("judge.fallback", f"{fallback['provider']}:{fallback.get('model') or ''}",
                       str(fallback.get("model") or "")))
    return find_shared(debaters, judges)


class SelfPreference:
    """The warning's box, shown below the judge card and redrawn only when what it says changes."""

    def __init__(self, fields: FormFields, form: dict[str, Any]) -> None:
        self.fields = fields
        self.form = form
        self.box: ui.column | None = None
        self._signature: tuple[SharedFamily, ...] | None = None

    def build(self) -> None:
        """A new, empty box in the current container (the form re-renders it with the judge card)."""
        self.box = ui.column().classes("w-full").bind_visibility_from(self.form["judge"], "enabled")
        self._signature = None  # the new box shows nothing yet

    def refresh(self) -> None:
        """Re-check the judges against the debaters' families."""
        box = self.box
        if box is None or box.is_deleted:
            return
        shared = shared_families(self.form)
        signature = tuple(shared)
        if self._signature == signature:
            return
        self._signature = signature
        box.clear()
        if not shared:
            return
        with box, ui.card().classes("w-full bg-amber-50 dark:bg-amber-950").props("flat bordered") \
                .mark("self-preference"):
            with ui.row().classes("items-center gap-2"):
                ui.icon("warning").classes("text-warning text-xl")
                ui.label("A judge shares a model family with a debater").classes("font-medium")
            for item in shared:
                ui.label(f"{item.judge} ({item.family.title}) judges {', '.join(item.debaters)}: judges tend to "
                         "prefer answers of their own family.").classes("text-sm").mark("self-preference-item")
            with ui.row().classes("items-center gap-2"):
                ui.label("You can still start the debate.").classes("text-sm text-grey-8")
                ui.button("Use judges from other families", icon="swap_horiz", on_click=self.other_families) \
                    .props("flat dense no-caps").mark("other-families")

    def other_families(self) -> None:
        """Replace each panel judge of a debater's family with one of another family, where there is one."""
        judges = self.form["judge"]["judges"]
        missing_keys = self.fields.missing_keys
        left: list[str] = []
        for item in shared_families(self.form):
            if not item.field.startswith("judge.judges["):
                left.append(item.judge)
                continue
            index = int(item.field.removeprefix("judge.judges[").rstrip("]"))
            row = judges[index]
            others = [str(j.get("model") or "") for k, j in enumerate(judges) if k != index]
            picked = pick_judge(debater_models(self.form), others, row["provider"],
                                lambda p: p not in missing_keys and p != "compatible")
            if picked is None:
                left.append(item.judge)
                continue
            if picked[0] != row["provider"]:
                row.update(preset=None, base_url="")
            row.update(provider=picked[0], model=picked[1])
        self.fields.drop_errors("judge.")
        self.fields.render()
        if left:
            ui.notify(f"No judge of another family is available for {', '.join(left)}: set another provider's "
                      "key, or name a model yourself.", type="warning", multi_line=True)
