"""The new-tournament form (`/tournaments/new`), in the new-debate form's style and with its parts: the
same provider and model inputs with the model picker for each model and judge, the format with its
rounds (the default in sight) and phases, and the sticky bar with the number of debates and the
estimated cost range of them all (`tournament.plan.estimate_range`) before anything starts.

It edits a plain dictionary as the debate form does; errors are shown at their fields (the
`Tournament` model's paths: `models[1].model`, `judge.judges[0].provider`, `topics`) and in one line
above Start.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from nicegui import ui
from pydantic import ValidationError

from webapp.access.gate import Gate
from webapp.engine.estimate import DebateEstimate
from webapp.engine.formats import FORMATS
from webapp.engine.schedule import ConfigError
from webapp.settings import get_settings
from webapp.store import StoreError
from webapp.tournament.plan import MAX_MODELS, RangeMemo, Tournament, estimate_debate, estimate_range, schedule
from webapp.ui import runtime
from webapp.ui.components.badges import money
from webapp.ui.components.form_errors import reword
from webapp.ui.components.form_fields import FormFields, number
from webapp.ui.components.judge_panel import MAX_JUDGES
from webapp.ui.components.presets import judge_row, model_spec
from webapp.ui.form.cost_bar import ActionBar, estimate_basis
from webapp.ui.form.format_card import fit_rounds, rounds_field, rounds_hint, shape
from webapp.ui.form.validation import error_path
from webapp.ui.layout import heading
from webapp.wording import counted

# What a field's error names, for the line above Start ("Model #2: …").
TITLES = {"name": "Name", "topics": "Topics", "models": "Models", "format": "Format", "rounds": "Rounds",
          "budget_usd": "Total budget", "concurrency": "Debates at once", "judge.judges": "Judges"}
ROWS = {"models": "Model", "judge.judges": "Judge"}


def blank_tournament() -> dict[str, Any]:
    """Three demo models, one demo judge, classic, each pairing played twice."""
    return {"name": "", "topics": "", "format": "classic", "rounds": None, "swap_sides": True,
            "models": [judge_row("demo", model) for model in ("alpha", "beta", "gamma")],
            "judges": [judge_row("demo", "demo")], "budget_usd": None, "concurrency": 2}


def lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def titled(path: str, message: str) -> str:
    """'models[1].model' and its message -> 'Model #2: …'; a path of the form's own -> its field's title."""
    for prefix, title in ROWS.items():
        if path.startswith(prefix + "["):
            index = int(path[len(prefix) + 1:].split("]", 1)[0])
            return f"{title} #{index + 1}: {message}"
    field = TITLES.get(path)
    return f"{field}: {message}" if field else message


def budget_note(tournament: Tournament, estimate: DebateEstimate) -> str:
    """What the budget means for this tournament: checked before each debate against its longest case."""
    budget = tournament.budget_usd
    if budget is None:
        return ""
    longest = [estimate_debate(tournament, slot, get_settings()) or 0.0 for slot in schedule(tournament)]
    worst = max(longest, default=0.0)
    checked = f"the budget is checked before each debate against its longest case (up to {money(worst)})"
    if longest and longest[0] > budget:  # what the runner holds back for the first debate does not fit
        return (f" · {money(budget)} is less than the first debate's longest case ({money(longest[0])}): "
                "no debate would start")
    if estimate.free_models and worst > 0:
        # The demo models are free in the estimate but count against a budget at their simulated prices
        # (that is what the check before each debate weighs): say so, or the two figures disagree.
        checked += "; the demo models cost nothing but count against it at their simulated prices"
    if estimate.low_usd > budget:
        return f" · {money(budget)} will not pay for every debate even at the low figure; {checked}"
    if estimate.high_usd > budget or (estimate.free_models and sum(longest) > budget):
        return f" · {money(budget)} may run out before the last debate; {checked}"
    return f" · {checked}"


class TournamentForm(FormFields):
    """The new-tournament form: a plain dictionary bound to the inputs, checked into a `Tournament`."""

    def __init__(self, gate: Gate) -> None:
        super().__init__()
        self.gate = gate
        self.form = blank_tournament()
        self.submitting = False
        self.bar: ActionBar | None = None
        self._memo: RangeMemo = {}
        self._memo_key = ""  # what the memo's estimates hold for: everything but the topics

    # --- building ---------------------------------------------------------------------------

    def build(self) -> None:
        with ui.column().classes("w-full gap-3").mark("tournament-form"):
            with ui.element("div").classes("w-full grid grid-cols-1 lg:grid-cols-5 gap-3"):
                self._topics_card()  # built once: what is typed there never lands in a replaced element
                self.format_box = ui.column().classes("w-full min-w-0 lg:col-span-2")
            self.body = ui.column().classes("w-full gap-3")
            self.error = ui.label("").classes("text-negative").props('role="alert"').mark("t-error")
            self.error.set_visibility(False)
            self.bar = ActionBar(self.estimate, self.submit, ("Start tournament", "emoji_events"))
        self.render()

    def render(self) -> None:
        self.fields = {path: self.fields[path] for path in ("name", "topics") if path in self.fields}
        self.anchors = dict(self.fields)
        self.model_inputs = {}
        self.format_box.clear()
        with self.format_box:
            self._format_card()
        self.body.clear()
        with self.body:
            self._rows_card("models", "Models", "Add model", MAX_MODELS, "t-models")
            with ui.element("div").classes("w-full grid grid-cols-1 lg:grid-cols-2 gap-3"):
                self._rows_card("judge.judges", "Judges", "Add judge", MAX_JUDGES, "t-judges")
                self._budget_card()
        self.changed()

    def _topics_card(self) -> None:
        with ui.card().classes("w-full lg:col-span-3 gap-1 p-3"):
            heading("Topics", 2)
            topics = ui.textarea("Topics, one per line *", placeholder="e.g. Should cities ban private cars?") \
                .props('outlined autogrow hint="Every pair of models debates each topic"').classes("w-full")
            self.field("topics", topics.bind_value(self.form, "topics"))
            name = ui.input("Name (optional)", placeholder="e.g. Small models, spring").props(
                'outlined dense maxlength=120 hint="Empty: named after its size, e.g. 3 models × 2 topics"') \
                .classes("w-full")
            self.field("name", name.bind_value(self.form, "name"))

    def _format_card(self) -> None:
        fmt = FORMATS.get(self.form["format"], FORMATS["classic"])
        with ui.card().classes("w-full gap-1 p-3").mark(f"format-card-{fmt.id}"):
            heading("Format", 2)
            with ui.row().classes("w-full gap-2 items-start no-wrap"):
                select = ui.select({f.id: f.title for f in FORMATS.values()}, label="Format", value=fmt.id,
                                   on_change=lambda e: self.change_format(e.value)) \
                    .props("outlined dense").classes("grow")
                self.field("format", select)
                if fmt.has_rounds:
                    rounds = rounds_field(fmt, "w-28").props(f'hint="{rounds_hint(fmt)}"')
                    self.field("rounds", rounds.bind_value(self.form, "rounds"))
            shape(fmt)
            swap = ui.checkbox("Play each pairing twice, sides swapped").bind_value(self.form, "swap_sides")
            self.field("swap_sides", swap)

    def _rows_card(self, group: str, title: str, add_text: str, most: int, marker: str) -> None:
        """The models, or the judges: a row each with the debate form's provider and model inputs."""
        rows = self._rows(group)
        with ui.card().classes("w-full gap-1 p-3").mark(marker):
            with ui.row().classes("w-full items-center justify-between"):
                heading(f"{title} ({len(rows)})", 2)
                add = ui.button(add_text, icon="add", on_click=lambda: self.add_row(group)) \
                    .props("outline dense no-caps").mark(f"add-{marker}")
                if len(rows) >= most:
                    add.disable()
            if group == "judge.judges":
                ui.label("Several judges make a panel: the mean of their scores.").classes("text-sm text-grey-8")
            self.group_error(group)
            least = 2 if group == "models" else 1
            for index, row in enumerate(rows):
                prefix = f"{group}[{index}]"
                with ui.element("div").classes("w-full rostrum-form-row").mark(f"row-{prefix}"):
                    with ui.row().classes("w-full items-center gap-2"):
                        ui.label(f"#{index + 1}").classes("text-grey-8 font-mono rostrum-row-head")
                        self.provider_inputs(prefix, row)
                        ui.space()
                        remove = ui.button(icon="delete", on_click=lambda i=index: self.remove_row(group, i)) \
                            .props("flat round dense color=negative").classes("rostrum-row-tools") \
                            .mark(f"remove-{prefix}")
                        remove.props["aria-label"] = f"Remove {title.lower()[:-1]} #{index + 1}"
                        remove.tooltip("Remove")
                        if len(rows) <= least:
                            remove.disable()
                        ui.element("div").classes("rostrum-row-break")
                    self.provider_extras(prefix, row)

    def _budget_card(self) -> None:
        with ui.card().classes("w-full gap-1 p-3"):
            heading("Budget", 2)
            with ui.row().classes("w-full items-start gap-2"):
                # No min/max: the browser would clamp what was typed; a value out of range is reported.
                budget = ui.number("Total budget (USD)", step=0.5) \
                    .props('outlined dense prefix="$" hint="optional; checked before each debate"').classes("w-56")
                self.field("budget_usd", budget.bind_value(self.form, "budget_usd"))
                at_once = number("Debates at once", "1–16", "w-44", precision=0)
                self.field("concurrency", at_once.bind_value(self.form, "concurrency"))

    def _rows(self, group: str) -> list[dict[str, Any]]:
        return self.form["models"] if group == "models" else self.form["judges"]

    # --- editing ----------------------------------------------------------------------------

    async def change_format(self, format_id: str) -> None:
        await asyncio.sleep(0)  # let the select finish its own update before the form is re-rendered
        if format_id == self.form["format"] or format_id not in FORMATS:
            return
        self.form["format"] = format_id
        fit_rounds(self.form, FORMATS[format_id])
        self.errors.pop("format", None)
        self.render()

    def add_row(self, group: str) -> None:
        rows = self._rows(group)
        last = rows[-1] if rows else judge_row()
        taken = {str(r.get("model") or "") for r in rows}
        model = str(last.get("model") or "")
        if last["provider"] == "demo":  # a new demo model, not a second one of the same name
            model = next(m for m in (f"demo-{n}" for n in range(2, 99)) if m not in taken)
        rows.append({**last, "model": model})
        self.drop_errors(group)
        self.render()

    def remove_row(self, group: str, index: int) -> None:
        rows = self._rows(group)
        if len(rows) > (2 if group == "models" else 1):
            rows.pop(index)
            self.drop_errors(group)
            self.render()

    def changed(self) -> None:
        if self.bar is not None:
            self.bar.update()

    # --- checking and starting --------------------------------------------------------------

    def tournament(self) -> Tournament:
        judges = [model_spec(row) for row in self.form["judges"]]
        data: dict[str, Any] = {
            "name": (self.form["name"] or "").strip(),
            "models": [model_spec(row) for row in self.form["models"]],
            "topics": lines(self.form["topics"]),
            "format": self.form["format"],
            "rounds": self.form["rounds"] if self.form["rounds"] not in (None, "") else None,
            "swap_sides": bool(self.form["swap_sides"]),
            "judge": {"judges": judges},
            "budget_usd": self.form["budget_usd"] if self.form["budget_usd"] not in (None, "") else None,
            "concurrency": self.form["concurrency"] if self.form["concurrency"] not in (None, "") else 1,
        }
        return Tournament.model_validate(data)

    def estimate(self) -> tuple[str, str]:
        """'12 debates · estimated cost $0.40 – $2.10' and what that counts, as the debate form says it."""
        try:
            tournament = self.tournament()
        except (ValidationError, KeyError, ValueError):
            return "Estimated cost: shown once the form is valid (topics, models)", ""
        key = json.dumps(tournament.model_dump(exclude={"topics", "name", "created_at"}), sort_keys=True,
                         default=str)
        if key != self._memo_key:  # other models, format or judges: the estimates kept no longer apply
            self._memo, self._memo_key = {}, key
        estimate = estimate_range(tournament, get_settings(), self._memo)
        debates = counted(len(schedule(tournament)), "debate")
        return (f"{debates} · estimated cost {estimate.label}",
                f"In all: {estimate_basis(estimate)}{budget_note(tournament, estimate)}")

    def show_error(self, text: str) -> None:
        self.error.text = text
        self.error.set_visibility(True)
        ui.notify(text, type="negative", multi_line=True)

    def _invalid(self, exc: ValidationError) -> None:
        """Each error at its field; the first one also above Start."""
        self.errors = {}
        for item in exc.errors():
            path = error_path(tuple(p for p in item["loc"] if p != "__root__"))
            self.errors.setdefault(path, reword(item["msg"]))
        for path, element in self.fields.items():  # the topics and the name are not re-rendered
            element.error = self.errors.get(path)
        self.render()
        path, message = next(iter(self.errors.items()))
        self.show_error(titled(path, message))

    async def submit(self) -> None:
        if self.submitting:  # a double click must not start two tournaments
            return
        self.submitting = True
        try:
            try:
                tournament = self.tournament()
            except ValidationError as exc:
                self._invalid(exc)
                return
            except (KeyError, ValueError) as exc:
                self.show_error(str(exc))
                return
            try:
                stored = await self.gate.start_tournament(tournament, await runtime.current().tournaments())
            except ConfigError as exc:
                self.show_error(f"{exc.field}: {reword(exc.message, sentence=False)}")
                return
            except PermissionError as exc:
                self.show_error(f"Not done: {exc}")
                return
            except StoreError as exc:
                self.show_error(f"Not stored: {exc}")
                return
            ui.navigate.to(f"/tournaments/{stored.id}")
        finally:
            self.submitting = False
