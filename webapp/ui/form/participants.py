"""The participants card of the new-debate form: one compact row per participant (name, provider and
model, position, moving and removing it) and, under "Advanced", the settings most debates leave as
they are (persona, temperature, colour, token limits, calls at once).

It edits `form["participants"]` in place and re-renders the whole form after adding, removing or
moving a row, because the rows' error paths (`participants[2].name`) follow their indexes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nicegui import ui

from webapp.engine.formats import FORMATS
from webapp.models import MAX_PARTICIPANTS, PALETTE
from webapp.ui.components.badges import safe_color
from webapp.ui.components.form_fields import SWATCHES, FormFields, colour_select, number
from webapp.ui.components.presets import participant_row
from webapp.ui.layout import heading

POSITION_SUGGESTIONS = ["pro", "con", "moderator"]
# A participant's settings kept under "Advanced" (the compact row has name, provider, model, position).
ADVANCED_PARTICIPANT = ("persona", "temperature", "color", "max_tokens", "context_tokens", "concurrency")

RowActions = Callable[[int, dict[str, Any]], None]


class ParticipantsEditor:
    """Builds the participants card into the current container; `fields` is the form it belongs to."""

    def __init__(self, fields: FormFields, form: dict[str, Any], row_actions: RowActions) -> None:
        self.fields = fields
        self.form = form
        self.row_actions = row_actions  # the library's "Use profile…" and "Save as profile" on a row
        self.row_boxes: dict[int, ui.element] = {}  # participant index -> its row (its colour stripe)

    def build(self) -> None:
        rows = self.form["participants"]
        with ui.card().classes("w-full gap-1 p-3"):
            with ui.row().classes("w-full items-center justify-between"):
                heading(f"Participants ({len(rows)})", 2)
                add = ui.button("Add participant", icon="person_add", on_click=self.add) \
                    .props("outline dense no-caps").mark("add-participant")
                if len(rows) >= MAX_PARTICIPANTS:
                    add.disable()
            self.fields.group_error("participants")
            for index, row in enumerate(rows):
                self._row(index, row, len(rows))
            advanced = tuple(f"participants[{i}].{leaf}" for i in range(len(rows)) for leaf in ADVANCED_PARTICIPANT)
            with self.fields.section("Advanced: persona, temperature, colour, tokens", "tune", advanced,
                                     "section-participants"):
                for index, row in enumerate(rows):
                    self._advanced(index, row)

    def _row(self, index: int, row: dict[str, Any], count: int) -> None:
        """One compact row: name, provider and model, position, and moving or removing it."""
        prefix = f"participants[{index}]"
        fields = self.fields
        with ui.element("div").classes("w-full rostrum-turn rostrum-form-row") \
                .style(f"--turn-color:{safe_color(row.get('color'))}").mark(f"participant-{index}") as box:
            self.row_boxes[index] = box
            with ui.row().classes("w-full items-center gap-2"):
                ui.label(f"#{index + 1}").classes("text-grey-8 font-mono rostrum-row-head")
                name_input = ui.input("Name", placeholder="auto from position").props("outlined dense") \
                    .classes("w-44")
                fields.field(f"{prefix}.name", name_input.bind_value(row, "name"))
                fields.provider_inputs(prefix, row)
                position = ui.input("Position", autocomplete=POSITION_SUGGESTIONS) \
                    .props('outlined dense').classes("w-36")
                position.tooltip("pro, con, moderator or any perspective")
                fields.field(f"{prefix}.position", position.bind_value(row, "position"))
                position.on_value_change(lambda: fields.models_changed())  # a moderator is not a debater
                self.row_actions(index, row)  # "Use profile…", "Save as profile"
                ui.space()
                with ui.row().classes("items-center gap-2 no-wrap rostrum-row-tools"):
                    self._row_buttons(index, row, count)
                ui.element("div").classes("rostrum-row-break")  # on a phone: the fields start below
            fields.provider_extras(prefix, row)

    def _row_buttons(self, index: int, row: dict[str, Any], count: int) -> None:
        name = row.get("name") or f"participant {index + 1}"
        up = ui.button(icon="arrow_upward", on_click=lambda i=index: self.move(i, -1)) \
            .props("flat round dense").mark(f"move-up-{index}")
        up.tooltip("Move up")
        down = ui.button(icon="arrow_downward", on_click=lambda i=index: self.move(i, 1)) \
            .props("flat round dense").mark(f"move-down-{index}")
        down.tooltip("Move down")
        remove = ui.button(icon="delete", on_click=lambda i=index: self.remove(i)) \
            .props("flat round dense color=negative").mark(f"remove-participant-{index}")
        remove.tooltip("Remove")
        # Typed names: set as values, never parsed as part of a props string (a quote stays a quote).
        for button, label in ((up, f"Move {name} up"), (down, f"Move {name} down"), (remove, f"Remove {name}")):
            button.props["aria-label"] = label
        if index == 0:
            up.disable()
        if index == count - 1:
            down.disable()
        if count <= 2:
            remove.disable()

    def _advanced(self, index: int, row: dict[str, Any]) -> None:
        """The settings of a participant that most debates leave as they are."""
        prefix = f"participants[{index}]"
        field = self.fields.field
        with ui.column().classes("w-full gap-1").mark(f"participant-advanced-{index}"):
            heading(f"#{index + 1} {row.get('name') or 'participant ' + str(index + 1)}", 3)
            with ui.row().classes("w-full items-start gap-2"):
                persona = ui.textarea("Persona / system prompt", placeholder="optional: voice, expertise, style") \
                    .props("outlined dense autogrow").classes("grow min-w-[16rem]")
                field(f"{prefix}.persona", persona.bind_value(row, "persona"))
                temperature = ui.number("Temperature", step=0.1, format="%.1f") \
                    .props('outlined dense hint="0–2; empty = model default"').classes("w-36")
                field(f"{prefix}.temperature", temperature.bind_value(row, "temperature"))
                colour = field(f"{prefix}.color", colour_select(row).bind_value(row, "color"))
                colour.on_value_change(lambda e, i=index: self.recolour(i, e.value))
                max_tokens = number("Max tokens", "16–64000", "w-32", precision=0)
                field(f"{prefix}.max_tokens", max_tokens.bind_value(row, "max_tokens"))
                budget = number("Context budget (tokens)", "empty = model's window; ≥ 500", "w-52",
                                precision=0)
                field(f"{prefix}.context_tokens", budget.bind_value(row, "context_tokens"))
                row.setdefault("concurrency", None)  # rows saved as defaults before the field existed
                at_once = number("Calls at once", "its server; empty = 1 if local, else no limit", "w-52",
                                 precision=0)
                field(f"{prefix}.concurrency", at_once.bind_value(row, "concurrency"))

    def recolour(self, index: int, color: Any) -> None:
        """The row's stripe takes the colour just picked (a colour that is not one stays grey)."""
        box = self.row_boxes.get(index)
        if box is not None and not box.is_deleted:
            box.style(f"--turn-color:{safe_color(color)}")

    # --- editing ----------------------------------------------------------------------------

    def new_position(self) -> str:
        """A position the format gives turns to: any ('free') where every position speaks, else the
        format's side with the fewest participants so far."""
        fmt = FORMATS.get(self.form.get("format") or "")
        if fmt is None or any(slot.side == "*" for phase in fmt.phases for slot in phase.speakers):
            return "free"
        taken = [str(r.get("position") or "") for r in self.form["participants"]]
        return min(sorted(fmt.sides), key=taken.count, default="free")

    def add(self) -> None:
        rows = self.form["participants"]
        if len(rows) >= MAX_PARTICIPANTS:
            return
        template = rows[-1]  # never empty: a debate has at least two participants
        used = {r.get("color") for r in rows}
        color = next((c for c in SWATCHES if c not in used), PALETTE[len(rows) % len(PALETTE)])
        new = participant_row(f"Participant {len(rows) + 1}", self.new_position(), len(rows),
                              template["provider"], template["model"])
        new.update(color=color, base_url=template.get("base_url", ""), preset=template.get("preset"))
        rows.append(new)
        self._rows_changed()

    def remove(self, index: int) -> None:
        rows = self.form["participants"]
        if len(rows) > 2:
            rows.pop(index)
            self._rows_changed()

    def move(self, index: int, delta: int) -> None:
        rows = self.form["participants"]
        target = index + delta
        if 0 <= target < len(rows):
            rows[index], rows[target] = rows[target], rows[index]
            self._rows_changed()

    def _rows_changed(self) -> None:
        self.fields.drop_errors("participants[")
        self.fields.render()
