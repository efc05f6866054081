"""New debate `/new`: the full configuration form, presets, inline errors, and starting the debate.

The form has two levels. The essentials fit one 1440×900 screen: topic, format (with its phases as
pills), the participants as compact rows (name, provider and model, position), the judge and the
budget; everything else sits in each card's "Advanced" expansion. A sticky action bar keeps the
debate's estimated cost range (`engine.estimate`) and Start in view; Ctrl+Enter starts from anywhere.

The form edits a plain dictionary (see `components.presets`); every element is bound to it, so an
error never loses what was typed, and re-rendering a section (add a participant, change provider)
shows the same values. Errors from pydantic and from `Engine.validate` (`ConfigError.field`) are
mapped back to the element that caused them. The judge panel (`components.judge_panel`) and the option
groups (`components.debate_options`) are built from here and share `components.form_fields`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from nicegui import app, ui
from pydantic import ValidationError

from webapp.access.gate import Gate
from webapp.access.roles import Action, Principal
from webapp.engine.engine import DebateNotFound
from webapp.engine.estimate import LOW_TURN_TOKENS, estimate_debate
from webapp.engine.families import SharedFamily, find_shared, pick_judge
from webapp.engine.formats import FORMATS, Format
from webapp.engine.schedule import ConfigError
from webapp.models import MAX_PARTICIPANTS, PALETTE, TOPIC_MAX_CHARS, DebateConfig
from webapp.store import StoreError
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.badges import safe_color
from webapp.ui.components.debate_options import format_settings, limits_card
from webapp.ui.components.form_errors import plain, reword
from webapp.ui.components.form_fields import SWATCHES, FormFields, colour_select, number
from webapp.ui.components.judge_panel import JudgePanel
from webapp.ui.components.library import LibraryTools
from webapp.ui.components.presets import (
    QUICK_DEMO_TOPIC,
    SAMPLE_TOPICS,
    apply_preset,
    blank_form,
    cast_rows,
    config_to_form,
    form_to_config,
    format_options,
    participant_row,
)
from webapp.ui.layout import frame, heading
from webapp.wording import counted, noun

POSITION_SUGGESTIONS = ["pro", "con", "moderator"]
# A participant's settings kept under "Advanced" (the compact row has name, provider, model, position).
ADVANCED_PARTICIPANT = ("persona", "temperature", "color", "max_tokens", "context_tokens", "concurrency")
# Errors of a whole model land on the input that can fix them.
FIELD_FOR = {"budget": "budget.cost_limit"}
# Where a tab keeps its form (`app.storage.tab`): a reload shows what was typed.
STORAGE_KEY = "new_debate_form"
TOPIC_PLACEHOLDER = "e.g. Should cities ban private cars?"
# Scroll the element with this id to the middle of the window and focus its input (or the element itself).
# The scroll is instant and comes first: a smooth scroll left the field focused under the sticky action
# bar for as long as it ran (seconds on a busy machine), and the page's scroll-padding (styles.css) keeps
# the bar's strip out of what "the middle" means.
FOCUS_JS = """
requestAnimationFrame(() => requestAnimationFrame(() => {
  const el = document.getElementById(%r);
  if (!el) return;
  el.scrollIntoView({block: 'center', behavior: 'instant'});
  const input = el.matches('input, textarea') ? el : el.querySelector('input, textarea, [tabindex]');
  (input || el).focus({preventScroll: true});
}));
"""


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
# Put the cursor back in a field rebuilt under it (a new format re-renders its card), without scrolling.
REFOCUS_JS = """
requestAnimationFrame(() => {
  const el = document.getElementById(%r);
  const input = el && el.querySelector('input, textarea, [tabindex]');
  if (input) input.focus({preventScroll: true});
});
"""


def error_path(loc: tuple[Any, ...]) -> str:
    """('judge', 'judges', 1, 'provider') -> 'judge.judges[1].provider': the form's fields use config paths
    (the same paths `ConfigError.field` names)."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return FIELD_FOR.get(path, path)


def duplicate_names(rows: list[dict[str, Any]]) -> dict[str, str]:
    """An error on every participant whose name an earlier one already has (case and spaces aside)."""
    seen: set[str] = set()
    errors: dict[str, str] = {}
    for index, row in enumerate(rows):
        name = " ".join(str(row.get("name") or "").split())
        if not name:
            continue  # named after its position when the debate starts
        if name.casefold() in seen:
            errors[f"participants[{index}].name"] = (f"Two participants are called '{name}'; give each a "
                                                     "different name")
        seen.add(name.casefold())
    return errors


class DebateForm(FormFields):
    """One tab's form: the dictionary, the elements bound to it and the errors shown on them."""

    def __init__(self, form: dict[str, Any], gate: Gate) -> None:
        super().__init__()
        self.form = form
        self.gate = gate
        self.submitting = False
        self.tab_storage: dict[str, Any] | None = None  # app.storage.tab, once the tab is connected
        self._family_signature: tuple[SharedFamily, ...] | None = None
        self.row_boxes: dict[int, ui.element] = {}  # participant index -> its row (its colour stripe)

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
                with ui.button("Format presets", icon="list").props("outline no-caps"), ui.menu():
                    for fmt in FORMATS.values():
                        ui.menu_item(fmt.title, on_click=lambda f=fmt.id: self.preset(f)) \
                                .mark(f"preset-{fmt.id}")
                self.library = LibraryTools(self)  # "Templates": use one, or save the form as one
        self.banner = ui.column().classes("w-full")
        # Level one, the essentials, fit one screen (1440×900): topic beside format, then the cast, then
        # judge beside budget; each card keeps the rest under its own "Advanced" expansion.
        with ui.element("div").classes("w-full grid grid-cols-1 lg:grid-cols-5 gap-3"):
            # The topic is built once, outside the re-rendered parts: text typed while a preset or another
            # edit re-renders the form can never land in an element that is being replaced.
            self._topic_card()
            self.format_box = ui.column().classes("w-full min-w-0 lg:col-span-2")
        self.body = ui.column().classes("w-full gap-3")
        self._action_bar()
        self.render()

    def render(self) -> None:
        self.fields = {"topic": self.topic}
        self.anchors = {"topic": self.topic}
        self.model_inputs = {}
        self.row_boxes = {}
        self.topic.error = self.errors.get("topic")
        self.format_box.clear()
        with self.format_box:
            self._format_card()
        self.body.clear()
        with self.body:
            self._participants_card()
            with ui.element("div").classes("w-full grid grid-cols-1 lg:grid-cols-2 gap-3"):
                with ui.column().classes("w-full min-w-0 gap-3"):
                    JudgePanel(self, self.form["judge"], self.debater_models).build()
                    self.family_box = ui.column().classes("w-full").bind_visibility_from(self.form["judge"],
                                                                                         "enabled")
                limits_card(self, self.form)
            self._tags_field()  # optional: below the essentials
        self._family_signature = None  # the new box shows nothing yet
        self.models_changed()
        self._show_banner()
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
        preset never writes into the topic, so it can never replace what is being typed."""
        sample = self.form.get("sample_topic")
        self.topic.props["placeholder"] = sample or TOPIC_PLACEHOLDER
        self.topic.props["hint"] = ("Left empty, the debate takes the preset's sample topic shown here; "
                                    "Ctrl+Enter starts it") if sample else "Ctrl+Enter starts the debate"
        self.topic.update()

    def _format_card(self) -> None:
        fmt = FORMATS.get(self.form["format"], FORMATS["classic"])
        with ui.card().classes("w-full gap-1 p-3"):
            heading("Format", 2)
            with ui.row().classes("w-full gap-2 items-start no-wrap"):
                select = ui.select({f.id: f.title for f in FORMATS.values()}, label="Format", value=fmt.id,
                                   on_change=lambda e: self.change_format(e.value)).props("outlined dense") \
                    .classes("grow")
                self.field("format", select)
                if fmt.has_rounds:
                    term = fmt.termination
                    hint = (f"{term.min_rounds}–{term.max_rounds}; empty = "
                            + (f"{term.default_rounds}" if term.kind == "fixed" else f"up to {term.max_rounds}"))
                    rounds = ui.number(label="Rounds", precision=0, placeholder=hint) \
                        .props(f'outlined dense aria-description="{hint}"').classes("w-28")
                    rounds.bind_value(self.form, "rounds")
                    rounds.tooltip(hint)
                    self.field("rounds", rounds)
            self._format_shape(fmt)
            with self.section("Advanced: about this format", "tune", tuple(format_options(fmt)),
                              "section-format"):
                self._format_description(fmt)
                format_settings(self, self.form, fmt)

    @staticmethod
    def _format_shape(fmt: Format) -> None:
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

    @staticmethod
    def _format_description(fmt: Format) -> None:
        with ui.column().classes("gap-1 w-full").mark("format-description"):
            ui.label(fmt.description).classes("text-grey-8")
            term = fmt.termination
            endings = {"fixed": "a fixed number of rounds", "judge": "the judge decides when to stop",
                       "convergence": "it ends when the sides converge", "quality": "it ends when the "
                       "solution is good enough"}
            if fmt.has_rounds:
                ui.label(f"Rounds: {endings[term.kind]} (at most {term.max_rounds}).").classes("text-sm text-grey-8")
            if fmt.clarification:
                ui.label("Participants may first ask you clarifying questions.").classes("text-sm text-grey-8")

    def _participants_card(self) -> None:
        rows = self.form["participants"]
        with ui.card().classes("w-full gap-1 p-3"):
            with ui.row().classes("w-full items-center justify-between"):
                heading(f"Participants ({len(rows)})", 2)
                add = ui.button("Add participant", icon="person_add", on_click=self.add_participant) \
                    .props("outline dense no-caps").mark("add-participant")
                if len(rows) >= MAX_PARTICIPANTS:
                    add.disable()
            self.group_error("participants")
            for index, row in enumerate(rows):
                self._participant_row(index, row, len(rows))
            advanced = tuple(f"participants[{i}].{leaf}" for i in range(len(rows)) for leaf in ADVANCED_PARTICIPANT)
            with self.section("Advanced: persona, temperature, colour, tokens", "tune", advanced,
                              "section-participants"):
                for index, row in enumerate(rows):
                    self._participant_advanced(index, row)

    def _participant_row(self, index: int, row: dict[str, Any], count: int) -> None:
        """One compact row: name, provider and model, position, and moving or removing it."""
        prefix = f"participants[{index}]"
        with ui.element("div").classes("w-full rostrum-turn rostrum-form-row") \
                .style(f"--turn-color:{safe_color(row.get('color'))}").mark(f"participant-{index}") as box:
            self.row_boxes[index] = box
            with ui.row().classes("w-full items-center gap-2"):
                ui.label(f"#{index + 1}").classes("text-grey-8 font-mono")
                name = ui.input("Name", placeholder="auto from position").props("outlined dense").classes("w-44")
                self.field(f"{prefix}.name", name.bind_value(row, "name"))
                self.provider_inputs(prefix, row)
                position = ui.input("Position", autocomplete=POSITION_SUGGESTIONS) \
                    .props('outlined dense').classes("w-36")
                position.tooltip("pro, con, moderator or any perspective")
                self.field(f"{prefix}.position", position.bind_value(row, "position"))
                position.on_value_change(lambda: self.models_changed())  # a moderator is not a debater
                self.library.row_actions(index, row)  # "Use profile…", "Save as profile"
                ui.space()
                who = row.get("name") or f"participant {index + 1}"
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
                for button, label in ((up, f"Move {who} up"), (down, f"Move {who} down"), (remove, f"Remove {who}")):
                    button.props["aria-label"] = label
                if index == 0:
                    up.disable()
                if index == count - 1:
                    down.disable()
                if count <= 2:
                    remove.disable()
            self.provider_extras(prefix, row)

    def _participant_advanced(self, index: int, row: dict[str, Any]) -> None:
        """The settings of a participant that most debates leave as they are."""
        prefix = f"participants[{index}]"
        with ui.column().classes("w-full gap-1").mark(f"participant-advanced-{index}"):
            heading(f"#{index + 1} {row.get('name') or 'participant ' + str(index + 1)}", 3)
            with ui.row().classes("w-full items-start gap-2"):
                persona = ui.textarea("Persona / system prompt", placeholder="optional: voice, expertise, style") \
                    .props("outlined dense autogrow").classes("grow min-w-[16rem]")
                self.field(f"{prefix}.persona", persona.bind_value(row, "persona"))
                temperature = ui.number("Temperature", step=0.1, format="%.1f") \
                    .props('outlined dense hint="0–2; empty = model default"').classes("w-36")
                self.field(f"{prefix}.temperature", temperature.bind_value(row, "temperature"))
                colour = self.field(f"{prefix}.color", colour_select(row).bind_value(row, "color"))
                colour.on_value_change(lambda e, i=index: self._recolour(i, e.value))
                max_tokens = number("Max tokens", "16–64000", "w-32", precision=0)
                self.field(f"{prefix}.max_tokens", max_tokens.bind_value(row, "max_tokens"))
                budget = number("Context budget (tokens)", "empty = model's window; ≥ 500", "w-52",
                                precision=0)
                self.field(f"{prefix}.context_tokens", budget.bind_value(row, "context_tokens"))
                row.setdefault("concurrency", None)  # rows saved as defaults before the field existed
                at_once = number("Calls at once", "its server; empty = 1 if local, else no limit", "w-52",
                                 precision=0)
                self.field(f"{prefix}.concurrency", at_once.bind_value(row, "concurrency"))

    def _recolour(self, index: int, color: Any) -> None:
        """The row's stripe takes the colour just picked (a colour that is not one stays grey)."""
        box = self.row_boxes.get(index)
        if box is not None and not box.is_deleted:
            box.style(f"--turn-color:{safe_color(color)}")

    # --- the action bar: what the debate may cost, and starting it --------------------------------

    def _action_bar(self) -> None:
        """Sticky at the bottom of the window: the estimated cost of the whole debate and Start."""
        with ui.row().classes("w-full items-center gap-2 no-wrap rostrum-action-bar") \
                .props('role="region" aria-label="Cost and start"').mark("action-bar"):
            with ui.column().classes("gap-0 min-w-0 shrink"):
                self.estimate_label = ui.label("Estimated cost: …").classes("font-medium").mark("cost-estimate")
                self.estimate_note = ui.label("").classes("text-xs text-grey-8 rostrum-collapse-sm") \
                    .mark("cost-estimate-note")
            ui.space()
            self.kept_note = ui.row().classes("items-center rostrum-collapse-sm")
            ui.button("Reset form", icon="restart_alt", on_click=self.reset) \
                .props('flat dense no-caps no-wrap aria-label="Reset form"').classes("rostrum-icon-sm shrink-0") \
                .mark("reset-form")
            self.start_button = ui.button("Start debate", icon="play_arrow", on_click=self.submit) \
                .props("unelevated no-caps no-wrap").classes("shrink-0").mark("start")
        self._estimate_key = ""

    def update_estimate(self) -> None:
        """Re-estimate when what the cost depends on changed (participants, format, rounds, judge,
        limits): not on every keystroke in the topic."""
        label = getattr(self, "estimate_label", None)
        if label is None or label.is_deleted:
            return
        data = form_to_config(self.form)
        key = json.dumps({k: v for k, v in data.items() if k != "topic"}, sort_keys=True, default=str)
        if key == self._estimate_key:
            return
        self._estimate_key = key
        data["topic"] = data["topic"] or self.form.get("sample_topic") or TOPIC_PLACEHOLDER
        try:
            estimate = estimate_debate(DebateConfig.model_validate(data))
        except (ValidationError, KeyError, ValueError):
            label.text = "Estimated cost: shown once the form is valid"
            self.estimate_note.text = ""
            return
        label.text = f"Estimated cost: {estimate.label}"
        turns = (f"{estimate.turns_high}" if estimate.turns_low == estimate.turns_high
                 else f"{estimate.turns_low}–{estimate.turns_high}")
        calls = (f"{estimate.judge_calls_high}" if estimate.judge_calls_low == estimate.judge_calls_high
                 else f"{estimate.judge_calls_low}–{estimate.judge_calls_high}")
        counts = f"{turns} {noun(estimate.turns_high, 'turn')}, {calls} {noun(estimate.judge_calls_high, 'judge call')}"
        basis = (f"{counts}; from short "
                 f"answers ({LOW_TURN_TOKENS} tokens) to full ones (each turn's max tokens or word limit)")
        if estimate.free:
            basis = f"{counts}; demo and local models cost nothing"
        self.estimate_note.text = basis

    # --- self-preference: judges of a debater's family ----------------------------------------

    def debater_models(self) -> list[str]:
        return [str(r.get("model") or "") for r in self.form["participants"]
                if str(r.get("position") or "").strip().lower() not in ("moderator", "mod")]

    def shared_families(self) -> list[SharedFamily]:
        judge = self.form["judge"]
        debaters = [(str(r.get("name") or f"#{i + 1}"), str(r.get("model") or ""))
                    for i, r in enumerate(self.form["participants"])
                    if str(r.get("position") or "").strip().lower() not in ("moderator", "mod")]
        judges = [(f"judge.judges[{i}]", f"{r['provider']}:{r.get('model') or ''}", str(r.get("model") or ""))
                  for i, r in enumerate(judge["judges"])]
        if judge.get("use_fallback"):
            fallback = judge["fallback"]
            judges.append(("judge.fallback", f"{fallback['provider']}:{fallback.get('model') or ''}",
                           str(fallback.get("model") or "")))
        return find_shared(debaters, judges)

    def judge_row_actions(self, index: int | None, row: dict[str, Any]) -> None:
        if index is None:
            self.library.row_actions(0, row, group="fallback")
        else:
            self.library.row_actions(index, row, group="judges")

    def models_changed(self) -> None:
        """Re-check the judges against the debaters' families (a warning: it never blocks a start)."""
        box = getattr(self, "family_box", None)
        if box is None or box.is_deleted:
            return
        shared = self.shared_families()
        signature = tuple(shared)
        if self._family_signature == signature:
            return
        self._family_signature = signature
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
        left: list[str] = []
        for item in self.shared_families():
            if not item.field.startswith("judge.judges["):
                left.append(item.judge)
                continue
            index = int(item.field.removeprefix("judge.judges[").rstrip("]"))
            row = judges[index]
            others = [str(j.get("model") or "") for k, j in enumerate(judges) if k != index]
            picked = pick_judge(self.debater_models(), others, row["provider"],
                                lambda p: p not in self.missing_keys and p != "compatible")
            if picked is None:
                left.append(item.judge)
                continue
            if picked[0] != row["provider"]:
                row.update(preset=None, base_url="")
            row.update(provider=picked[0], model=picked[1])
        self.drop_errors("judge.")
        self.render()
        if left:
            ui.notify(f"No judge of another family is available for {', '.join(left)}: set another provider's "
                      "key, or name a model yourself.", type="warning", multi_line=True)

    def _show_banner(self) -> None:
        self.banner.clear()
        if not self.errors:
            return
        with self.banner, ui.card().classes("w-full bg-red-50 text-negative").props("flat bordered role=alert") \
                .mark("form-errors"):
            count = len(self.errors)
            ui.label(f"Please fix {counted(count, 'problem')}:").classes("font-medium")
            for path in self.error_order():
                ui.button(self.errors[path], icon="arrow_downward", on_click=lambda p=path: self.focus(p)) \
                    .props("flat dense no-caps align=left color=negative").classes("text-sm") \
                    .mark(f"error-link-{path}")

    def error_order(self) -> list[str]:
        """The paths with an error, in the order their fields appear on the page."""
        order = {path: index for index, path in enumerate(self.anchors)}
        return sorted(self.errors, key=lambda path: order.get(path, len(order)))

    def focus(self, path: str) -> None:
        """Scroll the field of `path` into view and put the cursor in it (the summary's links, and the
        first error after a failed start)."""
        element = self.anchors.get(path)
        if element is None or element.is_deleted:
            element = self.banner
        ui.run_javascript(FOCUS_JS % element.html_id)

    def _show_store_error(self, exc: StoreError) -> None:
        self.banner.clear()
        with self.banner, ui.card().classes("w-full bg-red-50 text-negative").props('flat bordered role=alert') \
                .mark("store-error"):
            ui.label("The debate could not be saved, so it did not start.").classes("font-medium")
            ui.label(f"{exc} ({exc.advice}).").classes("text-sm")
        ui.notify(f"Not started: {exc}", type="negative", multi_line=True)

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
                self.form.clear()
                self.form.update(restored)
                self.topic.value = self.form["topic"]
                self._show_sample_topic()
                self.render()
        self.save()
        with self.kept_note:
            ui.label("Kept in this tab: a reload shows it again.").classes("text-sm text-grey-7") \
                .mark("form-kept")

    def save(self) -> None:
        """Put a copy of the form in this tab's storage (after every change, once the tab is connected)."""
        if self.tab_storage is not None:
            self.tab_storage[STORAGE_KEY] = json.loads(json.dumps(self.form))

    def changed(self) -> None:
        self.save()
        self.update_estimate()

    # --- editing ----------------------------------------------------------------------------

    def preset(self, name: str) -> None:
        apply_preset(self.form, name, fill_topic=False)
        self.form["sample_topic"] = QUICK_DEMO_TOPIC if name == "quick-demo" else SAMPLE_TOPICS.get(name)
        self._show_sample_topic()
        self.errors.clear()
        self.render()
        ui.notify(f"Preset applied: {'Quick demo' if name == 'quick-demo' else FORMATS[name].title}")

    def reset(self) -> None:
        self.form.clear()
        self.form.update(blank_form(app.storage.general.get("defaults")))
        self.topic.value = self.form["topic"]
        self._show_sample_topic()
        self.errors.clear()
        self.render()
        ui.notify("The form is back to the defaults")

    async def change_format(self, format_id: str) -> None:
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
        term = new.termination
        rounds = self.form.get("rounds")
        if not new.has_rounds or (rounds is not None and not term.min_rounds <= rounds <= term.max_rounds):
            self.form["rounds"] = None
        self.errors.pop("format", None)
        self.render()
        # the select that had the focus is gone: its handler has no page to run in, the topic does
        self.topic.client.run_javascript(REFOCUS_JS % self.fields["format"].html_id)

    def _new_position(self) -> str:
        """A position the format gives turns to: any ('free') where every position speaks, else the
        format's side with the fewest participants so far."""
        fmt = FORMATS.get(self.form.get("format") or "")
        if fmt is None or any(slot.side == "*" for phase in fmt.phases for slot in phase.speakers):
            return "free"
        taken = [str(r.get("position") or "") for r in self.form["participants"]]
        return min(sorted(fmt.sides), key=taken.count, default="free")

    def add_participant(self) -> None:
        rows = self.form["participants"]
        if len(rows) >= MAX_PARTICIPANTS:
            return
        template = rows[-1]  # never empty: a debate has at least two participants
        used = {r.get("color") for r in rows}
        color = next((c for c in SWATCHES if c not in used), PALETTE[len(rows) % len(PALETTE)])
        new = participant_row(f"Participant {len(rows) + 1}", self._new_position(), len(rows),
                              template["provider"], template["model"])
        new.update(color=color, base_url=template.get("base_url", ""), preset=template.get("preset"))
        rows.append(new)
        self.drop_errors("participants[")
        self.render()

    def remove(self, index: int) -> None:
        rows = self.form["participants"]
        if len(rows) > 2:
            rows.pop(index)
            self.drop_errors("participants[")
            self.render()

    def move(self, index: int, delta: int) -> None:
        rows = self.form["participants"]
        target = index + delta
        if 0 <= target < len(rows):
            rows[index], rows[target] = rows[target], rows[index]
            self.drop_errors("participants[")
            self.render()

    # --- submitting -------------------------------------------------------------------------

    def _set_errors(self, errors: dict[str, str]) -> None:
        self.errors = errors
        for path, element in self.fields.items():
            if not element.is_deleted:
                element.error = errors.get(path)
        self.render()

    def _rounds_error(self) -> dict[str, str]:
        fmt = FORMATS.get(self.form.get("format") or "")
        rounds = self.form.get("rounds")
        if fmt is None or not fmt.has_rounds or rounds in (None, ""):
            return {}
        term = fmt.termination
        if isinstance(rounds, int | float) and not term.min_rounds <= rounds <= term.max_rounds:
            return {"rounds": f"{fmt.title} takes {term.min_rounds} to {term.max_rounds} rounds; "
                              f"{rounds:g} is out of range"}
        return {}

    def collect_errors(self) -> tuple[DebateConfig | None, dict[str, str]]:
        """Every problem the form can see at once: the topic, the rounds, duplicate names, and what the
        model refuses; each in plain words, keyed by the path of its field."""
        errors: dict[str, str] = {}
        data = form_to_config(self.form)
        if not data["topic"].strip() and self.form.get("sample_topic"):
            data["topic"] = self.form["sample_topic"]
        if not data["topic"].strip():
            errors["topic"] = "The topic is required"
        errors.update(self._rounds_error())
        errors.update(duplicate_names(self.form["participants"]))
        names = {i: str(r.get("name") or "").strip() for i, r in enumerate(self.form["participants"])}
        try:
            config = DebateConfig.model_validate(data)
        except ValidationError as exc:
            for item in exc.errors():
                path = error_path(tuple(item["loc"]))
                errors.setdefault(path, plain(path, dict(item), names))
            return None, errors
        return (None, errors) if errors else (config, {})

    async def submit(self) -> None:
        if self.submitting:  # a double click must not start two debates
            return
        self.submitting = True
        self.start_button.props("loading")
        try:
            config, errors = self.collect_errors()
            if config is not None:
                try:
                    session = await self.gate.start(config)
                except ConfigError as exc:
                    errors = {FIELD_FOR.get(exc.field, exc.field): reword(exc.message, sentence=False)}
                except PermissionError as exc:
                    ui.notify(f"Not done: {exc}", type="negative", multi_line=True)
                    return
                except StoreError as exc:  # nothing was stored; what was typed stays in the form
                    self._show_store_error(exc)
                    return
                else:  # dashboards hear of it from the debate's first transition
                    ui.navigate.to(f"/debate/{session.id}")
                    return
            self._set_errors(errors)
            first = self.error_order()[0]
            self.focus(first)
            more = len(errors) - 1
            ui.notify(errors[first] + (f" (and {counted(more, 'more problem')})" if more else ""),
                      type="negative")
        finally:
            self.submitting = False
            self.start_button.props(remove="loading")


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
