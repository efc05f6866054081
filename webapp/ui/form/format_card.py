"""The format card of the new-debate form: the format, its rounds, its phases as pills and, under
"Advanced", what the format is and the settings only it reads.

Changing the format re-renders the form: a cast left as the old format gave it becomes the new
format's cast (same provider and model), and rounds outside the new format's range are emptied.
"""

from __future__ import annotations

import asyncio
from typing import Any

from nicegui import ui

from webapp.engine.formats import FORMATS, Format
from webapp.ui.components.debate_options import format_settings
from webapp.ui.components.form_fields import FormFields
from webapp.ui.components.presets import cast_rows, format_options
from webapp.ui.layout import heading

# Put the cursor back in a field rebuilt under it (a new format re-renders its card), without scrolling.
REFOCUS_JS = """
requestAnimationFrame(() => {
  const el = document.getElementById(%r);
  const input = el && el.querySelector('input, textarea, [tabindex]');
  if (input) input.focus({preventScroll: true});
});
"""
ENDINGS = {"fixed": "a fixed number of rounds", "judge": "the judge decides when to stop",
           "convergence": "it ends when the sides converge", "quality": "it ends when the solution is good enough"}


def rounds_default(fmt: Format) -> str:
    """What an empty Rounds field plays (`schedule.total_rounds`): the format's count, or its cap where
    the judge or the sides' agreement ends the debate earlier."""
    term = fmt.termination
    return f"{term.default_rounds}" if term.kind == "fixed" else f"up to {term.max_rounds}"


def rounds_hint(fmt: Format) -> str:
    """What the Rounds field takes, and what an empty one plays."""
    term = fmt.termination
    return f"{term.min_rounds}–{term.max_rounds}; empty = {rounds_default(fmt)}"


def rounds_field(fmt: Format, width: str) -> ui.number:
    """Rounds, its label whole and its default in sight: shown greyed in the empty field (stack-label keeps
    the label above it), the range in its tooltip and for screen readers."""
    hint = rounds_hint(fmt)
    rounds = ui.number(label="Rounds", precision=0, placeholder=rounds_default(fmt)) \
        .props(f'outlined dense stack-label aria-description="{hint}"').classes(width)
    rounds.tooltip(hint)
    return rounds


class FormatCard:
    """Builds the format card into the current container; `topic` is the form's topic input (built once,
    so it outlives every re-render: a handler whose element is gone runs its script through it)."""

    def __init__(self, fields: FormFields, form: dict[str, Any], topic: ui.element) -> None:
        self.fields = fields
        self.form = form
        self.topic = topic

    def build(self) -> None:
        fmt = FORMATS.get(self.form["format"], FORMATS["classic"])
        with ui.card().classes("w-full gap-1 p-3"):
            heading("Format", 2)
            with ui.row().classes("w-full gap-2 items-start no-wrap"):
                select = ui.select({f.id: f.title for f in FORMATS.values()}, label="Format", value=fmt.id,
                                   on_change=lambda e: self.change(e.value)).props("outlined dense") \
                    .classes("grow")
                self.fields.field("format", select)
                if fmt.has_rounds:
                    self.fields.field("rounds", rounds_field(fmt, "w-28").bind_value(self.form, "rounds"))
            shape(fmt)
            with self.fields.section("Advanced: about this format", "tune", tuple(format_options(fmt)),
                                     "section-format"):
                description(fmt)
                format_settings(self.fields, self.form, fmt)

    async def change(self, format_id: str) -> None:
        await asyncio.sleep(0)  # let the select finish its own update before the form is re-rendered
        old = FORMATS.get(self.form["format"])
        new = FORMATS.get(format_id)
        if new is None or format_id == self.form["format"]:
            return
        untouched = old is not None and [(r["name"], r["position"]) for r in self.form["participants"]] == [
            (s.name, s.position) for s in old.cast]
        self.form["format"] = format_id
        if untouched:  # the old format's cast as it came: the new format's cast, same provider and model
            template = self.form["participants"][0]
            self.form["participants"] = cast_rows(new, template["model"], template["provider"])
        fit_rounds(self.form, new)
        self.fields.errors.pop("format", None)
        self.fields.render()
        # the select that had the focus is gone: its handler has no page to run in, the topic does
        self.topic.client.run_javascript(REFOCUS_JS % self.fields.fields["format"].html_id)


def fit_rounds(form: dict[str, Any], fmt: Format) -> None:
    """Empty the form's rounds where the format `fmt` has none, or not that many."""
    term, rounds = fmt.termination, form.get("rounds")
    if not fmt.has_rounds or (rounds is not None and not term.min_rounds <= rounds <= term.max_rounds):
        form["rounds"] = None


def shape(fmt: Format) -> None:
    """The phases in order, as pills: the shape of the debate at a glance."""
    with ui.row().classes("gap-1 items-center").mark("format-shape"):
        for step, phase in enumerate(fmt.phases, start=1):
            tags = []
            if phase.scope == "round":
                tags.append("each round")
            if phase.parallel:
                tags.append("parallel")
            if phase.private:
                tags.append("private")
            text = f"{step}. {phase.title}" + (f" ({', '.join(tags)})" if tags else "")
            ui.label(text).classes("rostrum-phase-pill rostrum-phase-todo text-xs")


def description(fmt: Format) -> None:
    with ui.column().classes("gap-1 w-full").mark("format-description"):
        ui.label(fmt.description).classes("text-grey-8")
        if fmt.has_rounds:
            ui.label(f"Rounds: {ENDINGS[fmt.termination.kind]} (at most {fmt.termination.max_rounds}).") \
                .classes("text-sm text-grey-8")
        if fmt.clarification:
            ui.label("Participants may first ask you clarifying questions.").classes("text-sm text-grey-8")
