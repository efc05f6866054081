"""`DebateForm`: one tab's new-debate form, the dictionary it edits and the parts built from it.

The form has two levels. The essentials fit one 1440×900 screen: topic, format (with its phases as
pills), the participants as compact rows (name, provider and model, position), the judge and the
budget; everything else sits in each card's "Advanced" expansion. A sticky action bar keeps the
debate's estimated cost range and Start in view; Ctrl+Enter starts from anywhere.

The form edits a plain dictionary (see `components.presets`); every element is bound to it, so an
error never loses what was typed, and re-rendering a section (add a participant, change provider)
shows the same values. Errors from pydantic and from `Engine.validate` (`ConfigError.field`) are
mapped back to the element that caused them. The tab keeps a copy of the dictionary
(`app.storage.tab`), so a reload shows what was typed.
"""

from __future__ import annotations

import json
from typing import Any

from nicegui import app, ui

from webapp.access.gate import Gate
from webapp.engine.formats import FORMATS, Format
from webapp.engine.schedule import ConfigError
from webapp.models import TOPIC_MAX_CHARS
from webapp.store import StoreError
from webapp.ui.components.debate_options import limits_card
from webapp.ui.components.form_errors import reword
from webapp.ui.components.form_fields import FormFields
from webapp.ui.components.judge_panel import JudgePanel
from webapp.ui.components.library import LibraryTools
from webapp.ui.components.presets import QUICK_DEMO_TOPIC, SAMPLE_TOPICS, apply_preset, blank_form
from webapp.ui.form.cost_bar import TOPIC_PLACEHOLDER, ActionBar, DebateCost
from webapp.ui.form.families import SelfPreference, debater_models
from webapp.ui.form.feedback import Feedback
from webapp.ui.form.format_card import FormatCard
from webapp.ui.form.kept import copy_into, shape, value_at
from webapp.ui.form.participants import ParticipantsEditor
from webapp.ui.form.validation import FIELD_FOR, collect_errors
from webapp.ui.layout import heading
from webapp.wording import counted

# What a format preset changes, said once above the list (each item says what its format is).
PRESETS_NOTE = ("A format preset sets the format, its usual number of rounds and its cast of demo "
                "participants. Your topic, tags, judge and budget stay.")
# Where a tab keeps its form (`app.storage.tab`): a reload shows what was typed.
STORAGE_KEY = "new_debate_form"
# Ctrl/Cmd+Enter anywhere on the page presses Start. Caught on the way down (capture): a select or a
# menu that handles Enter itself would otherwise keep it from ever reaching a handler on the form.
CTRL_ENTER_JS = """
window.rostrumStartId = %r;
if (!window.rostrumCtrlEnter) {
  window.rostrumCtrlEnter = true;
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey) || e.repeat) return;
    const start = document.getElementById(window.rostrumStartId);
    if (!start) return;
    e.preventDefault();
    e.stopPropagation();
    start.click();
  }, {capture: true});
}
"""


def preset_summary(fmt: Format) -> str:
    """'Opening statements from everyone, … 2 participants, 3 rounds.': what a format preset starts from."""
    size = counted(len(fmt.cast), "participant")
    if fmt.has_rounds:
        size += f", {counted(fmt.termination.default_rounds, 'round')}"
    return f"{fmt.description} {size}."


class DebateForm(FormFields):
    """One tab's form: the dictionary, the elements bound to it and the errors shown on them."""

    def __init__(self, form: dict[str, Any], gate: Gate) -> None:
        super().__init__()
        self.form = form
        self.gate = gate
        self.submitting = False
        self.tab_storage: dict[str, Any] | None = None  # app.storage.tab, once the tab is connected
        self.bar: ActionBar | None = None
        self.families = SelfPreference(self, form)

    # --- building ---------------------------------------------------------------------------

    def build(self) -> None:
        # Ctrl+Enter (Cmd+Enter on a Mac) starts the debate from any field of the form, or anywhere else.
        with ui.column().classes("w-full gap-3").mark("debate-form") as root:
            # The page's listener (CTRL_ENTER_JS) takes the key first in a browser and presses Start; these
            # handlers are the form's own way to start, for a client that sends the key event itself.
            root.on("keydown.ctrl.enter", self.submit).on("keydown.meta.enter", self.submit)
            self._build()
        ui.run_javascript(CTRL_ENTER_JS % self.start_button.html_id)

    def _build(self) -> None:
        with ui.row().classes("w-full items-center justify-between"):
            heading("New debate")
            with ui.row().classes("items-center gap-1"):
                ui.label("Presets:").classes("text-sm text-grey-8")
                ui.button("Quick demo", icon="bolt", on_click=lambda: self.preset("quick-demo")) \
                    .props("unelevated no-caps").mark("preset-quick-demo")
                with ui.button("Format presets", icon="list").props("outline no-caps"), \
                        ui.menu().props('max-width="30rem"').mark("format-presets"):
                    ui.label(PRESETS_NOTE).classes("text-sm text-grey-8 px-4 py-2")
                    for fmt in FORMATS.values():
                        with ui.menu_item(on_click=lambda f=fmt.id: self.preset(f)).mark(f"preset-{fmt.id}"), \
                                ui.item_section():
                            ui.item_label(fmt.title)
                            ui.item_label(preset_summary(fmt)).props("caption")
                self.library = LibraryTools(self)  # "Templates": use one, or save the form as one
        self.feedback = Feedback(self)
        # Level one, the essentials, fit one screen (1440×900): topic beside format, then the cast, then
        # judge beside budget; each card keeps the rest under its own "Advanced" expansion.
        with ui.element("div").classes("w-full grid grid-cols-1 lg:grid-cols-5 gap-3"):
            # The topic is built once, outside the re-rendered parts: text typed while a preset or another
            # edit re-renders the form can never land in an element that is being replaced.
            self._topic_card()
            self.format_box = ui.column().classes("w-full min-w-0 lg:col-span-2")
        self.body = ui.column().classes("w-full gap-3")
        self.bar = ActionBar(DebateCost(self.form), self.submit, ("Start debate", "play_arrow"), self.reset)
        self.start_button = self.bar.start_button
        self.render()

    def render(self) -> None:
        self.fields = {"topic": self.topic}
        self.anchors = {"topic": self.topic}
        self.model_inputs = {}
        self.topic.error = self.errors.get("topic")
        self.format_box.clear()
        with self.format_box:
            FormatCard(self, self.form, self.topic).build()
        self.body.clear()
        with self.body:
            ParticipantsEditor(self, self.form, self.library.row_actions).build()
            with ui.element("div").classes("w-full grid grid-cols-1 lg:grid-cols-2 gap-3"):
                with ui.column().classes("w-full min-w-0 gap-3"):
                    JudgePanel(self, self.form["judge"], lambda: debater_models(self.form)).build()
                    self.families.build()
                limits_card(self, self.form)
            self._tags_field()  # optional: below the essentials
        self.models_changed()
        self.feedback.show()
        self.save()
        self.update_estimate()

    def _topic_card(self) -> None:
        with ui.card().classes("w-full lg:col-span-3 gap-1 p-3"):
            heading("Topic", 2)
            topic = ui.textarea(
                label="What should they debate? *", placeholder=TOPIC_PLACEHOLDER,
                validation={f"The topic is too long (at most {TOPIC_MAX_CHARS} characters)":
                            lambda v: len(v or "") <= TOPIC_MAX_CHARS},
            ).props(f'outlined autogrow autofocus counter maxlength="{TOPIC_MAX_CHARS}"').classes("w-full")
            topic.bind_value(self.form, "topic")
            self.topic = self.field("topic", topic)
            self._show_sample_topic()

    def _tags_field(self) -> None:
        """Topic tags (comma-separated): the leaderboard and the dashboard filter debates by them."""
        tags = ui.input("Topic tags", placeholder="e.g. ethics, ai-policy").props(
            'outlined dense clearable hint="Comma-separated, at most 10; the leaderboard and the dashboard '
            'filter by them"').classes("w-full")
        tags.bind_value(self.form, "tags")
        self.field("tags", tags)

    def _show_sample_topic(self) -> None:
        """A preset's sample topic is the topic's placeholder, taken when the topic is left empty: a
        preset never writes a topic in (Quick demo empties it, as it empties the rest of the form)."""
        sample = self.form.get("sample_topic")
        self.topic.props["placeholder"] = sample or TOPIC_PLACEHOLDER
        self.topic.props["hint"] = ("Left empty, the debate takes the preset's sample topic shown here; "
                                    "Ctrl+Enter starts it") if sample else "Ctrl+Enter starts the debate"
        self.topic.update()

    # --- what the parts call back -------------------------------------------------------------

    def models_changed(self) -> None:
        self.families.refresh()

    def judge_row_actions(self, index: int | None, row: dict[str, Any]) -> None:
        if index is None:
            self.library.row_actions(0, row, group="fallback")
        else:
            self.library.row_actions(index, row, group="judges")

    def changed(self) -> None:
        self.save()
        self.update_estimate()

    def update_estimate(self) -> None:
        if self.bar is not None:
            self.bar.update()

    # --- kept in the tab ----------------------------------------------------------------------

    async def keep_in_tab(self) -> None:
        """Once the tab is connected (`app.storage.tab` needs it): show what this tab's form held before
        a reload, then keep every change there. A clone (`?from=ID`) replaces it, except on a reload of
        the same clone, which keeps what was changed since."""
        try:
            await ui.context.client.connected(timeout=30)  # a slow connection still gets its form kept
        except TimeoutError:  # never connected (a plain HTTP request): nothing to keep
            return
        self.tab_storage = app.storage.tab  # this tab's dictionary: later handlers may run outside its context
        stored = self.tab_storage.get(STORAGE_KEY)
        clone = self.form.get("cloned_from")
        if isinstance(stored, dict) and (clone is None or stored.get("cloned_from") == clone):
            restored = json.loads(json.dumps(stored))  # a plain copy, detached from the storage
            if restored != self.form:
                self._restore(restored)
        self.save()
        if self.bar is not None:
            with self.bar.kept_note:
                ui.label("Kept in this tab: a reload shows it again.").classes("text-sm text-grey-7") \
                    .mark("form-kept")

    def _restore(self, restored: dict[str, Any]) -> None:
        """Show the kept form: in the elements on screen where its shape is the same (a click already on
        its way lands where it was aimed), else in a rebuilt form."""
        same = shape(restored) == shape(self.form)
        copy_into(self.form, restored)
        self.topic.value = self.form["topic"]
        self._show_sample_topic()
        if not same:
            self.render()
            return
        for path, element in self.fields.items():
            found, value = value_at(self.form, path)
            if found and not element.is_deleted and element.value != value:
                element.value = value
        self.models_changed()
        self.update_estimate()

    def save(self) -> None:
        """Put a copy of the form in this tab's storage (after every change, once the tab is connected)."""
        if self.tab_storage is not None:
            self.tab_storage[STORAGE_KEY] = json.loads(json.dumps(self.form))

    # --- editing ----------------------------------------------------------------------------

    def preset(self, name: str) -> None:
        typed = [what for what in ("topic", "tags") if str(self.form.get(what) or "").strip()]
        if name == "quick-demo":  # the demo as it comes: nothing left over from the form (a topic, tags…)
            self._blank()
        apply_preset(self.form, name, fill_topic=False)
        self.form["sample_topic"] = QUICK_DEMO_TOPIC if name == "quick-demo" else SAMPLE_TOPICS.get(name)
        self._show_sample_topic()
        self.errors.clear()
        self.render()
        if name != "quick-demo":
            ui.notify(f"Preset applied: {FORMATS[name].title}")
        else:
            cleared = f" ({' and '.join(typed)} cleared)" if typed else ""
            ui.notify(f"Preset applied: Quick demo, on a fresh form{cleared}")

    def reset(self) -> None:
        self._blank()
        self._show_sample_topic()
        self.errors.clear()
        self.render()
        ui.notify("The form is back to the defaults")

    def _blank(self) -> None:
        """The form as a new tab gets it (with the saved defaults), the topic emptied too."""
        self.form.clear()
        self.form.update(blank_form(app.storage.general.get("defaults")))
        self.topic.value = self.form["topic"]

    # --- submitting -------------------------------------------------------------------------

    def _set_errors(self, errors: dict[str, str]) -> None:
        self.errors = errors
        for path, element in self.fields.items():
            if not element.is_deleted:
                element.error = errors.get(path)
        self.render()

    async def submit(self) -> None:
        if self.submitting:  # a double click must not start two debates
            return
        self.submitting = True
        self.start_button.props("loading")
        try:
            config, errors = collect_errors(self.form)
            if config is not None:
                try:
                    session = await self.gate.start(config)
                except ConfigError as exc:
                    errors = {FIELD_FOR.get(exc.field, exc.field): reword(exc.message, sentence=False)}
                except PermissionError as exc:
                    ui.notify(f"Not done: {exc}", type="negative", multi_line=True)
                    return
                except StoreError as exc:  # nothing was stored; what was typed stays in the form
                    self.feedback.store_error(exc)
                    return
                else:  # dashboards hear of it from the debate's first transition
                    ui.navigate.to(f"/debate/{session.id}")
                    return
            self._set_errors(errors)
            first = self.feedback.error_order()[0]
            self.feedback.focus(first)
            more = len(errors) - 1
            ui.notify(errors[first] + (f" (and {counted(more, 'more problem')})" if more else ""),
                      type="negative")
        finally:
            self.submitting = False
            self.start_button.props(remove="loading")
