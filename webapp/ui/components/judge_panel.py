"""The judge section of the new-debate form: a panel of 1–5 judges, an optional fallback judge (asked
when every judge of the panel fails), the criteria and how often scores are given.

It edits `form["judge"]` (see `presets.blank_form`); each judge row uses the same provider inputs as a
participant (`FormFields.provider_inputs`), so errors map to paths like `judge.judges[1].provider`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nicegui import ui

from webapp.engine.families import pick_judge
from webapp.models import JudgeConfig
from webapp.providers.demo import DEMO_MODELS
from webapp.ui.components.form_fields import FormFields
from webapp.ui.components.presets import judge_row
from webapp.ui.layout import heading

JUDGE_FREQUENCIES = {"end": "Once, at the end", "round": "After every round", "mid": "At mid-debate and end"}
# What the judge card keeps under "Advanced" (an error there opens it).
ADVANCED_JUDGE = ("judge.fallback", "judge.use_fallback", "judge.swap_sides", "judge.frequency", "judge.criteria")
MAX_JUDGES: int = next(m.max_length for m in JudgeConfig.model_fields["judges"].metadata if hasattr(m, "max_length"))


class JudgePanel:
    """Builds the judge card into the current container; edits re-render the whole form."""

    def __init__(self, form: FormFields, judge: dict[str, Any],
                 debater_models: Callable[[], list[str]] = list) -> None:
        self.form = form
        self.judge = judge
        self.debater_models = debater_models  # the models of the debaters, as the form has them now

    def build(self) -> None:
        judge, judges = self.judge, self.judge["judges"]
        with ui.card().classes("w-full gap-1 p-3"):
            with ui.row().classes("w-full items-center gap-2"):
                heading("Judge", 2)  # the one "Judge" heading of the form
                title = "" if len(judges) == 1 else f"Panel of {len(judges)} judges: the mean of their scores"
                ui.label(title).classes("text-sm text-grey-8").mark("judge-count") \
                    .bind_visibility_from(judge, "enabled")
                ui.space()
                ui.switch("Judge the debate", on_change=self.form.changed).bind_value(judge, "enabled") \
                    .mark("field-judge.enabled")  # judge calls are part of the cost estimate
                add = ui.button("Add judge", icon="add", on_click=self.add).props("outline no-caps dense") \
                    .mark("add-judge").bind_visibility_from(judge, "enabled")
                if len(judges) >= MAX_JUDGES:
                    add.disable()
            with ui.column().classes("w-full gap-1").bind_visibility_from(judge, "enabled"):
                self.form.group_error("judge.judges")
                for index, row in enumerate(judges):
                    self._judge_row(f"judge.judges[{index}]", row, index, len(judges))
                with self.form.section("Advanced: fallback, sides, scores, criteria", "tune", ADVANCED_JUDGE,
                                       "section-judge"):
                    self._advanced()

    def _advanced(self) -> None:
        judge = self.judge
        fallback = ui.switch("Fallback judge, asked when every judge above fails") \
            .bind_value(judge, "use_fallback")
        self.form.field("judge.use_fallback", fallback)
        with ui.column().classes("w-full gap-1").bind_visibility_from(judge, "use_fallback"):
            self._judge_row("judge.fallback", judge["fallback"], None, 0)
        swap = ui.switch("Judge twice, sides swapped (a judge whose winner flips with the order "
                         "counts as undecided)").bind_value(judge, "swap_sides").mark("judge-swap-sides")
        self.form.field("judge.swap_sides", swap)
        with ui.row().classes("w-full items-start gap-2"):
            frequency = ui.select(JUDGE_FREQUENCIES, label="Scores").props("outlined dense") \
                .classes("w-56")
            self.form.field("judge.frequency", frequency.bind_value(judge, "frequency"))
            criteria = ui.input_chips("Criteria (type and press Enter)", new_value_mode="add-unique") \
                .props("outlined dense").classes("grow")
            self.form.field("judge.criteria", criteria.bind_value(judge, "criteria"))

    def _judge_row(self, prefix: str, row: dict[str, Any], index: int | None, count: int) -> None:
        with ui.element("div").classes("w-full rostrum-form-row").mark(f"judge-row-{prefix}"):
            with ui.row().classes("w-full items-center gap-2"):
                ui.label("Fallback" if index is None else f"#{index + 1}") \
                    .classes("text-grey-8 font-mono rostrum-row-head")
                self.form.provider_inputs(prefix, row)
                self.form.judge_row_actions(index, row)  # "Use profile…", "Save as profile"
                if index is not None:
                    ui.space()
                    # Stays on the judge's first line on a phone too (styles.css, `rostrum-row-tools`).
                    remove = ui.button(icon="delete", on_click=lambda i=index: self.remove(i)) \
                        .props("flat round dense color=negative").classes("rostrum-row-tools") \
                        .mark(f"remove-judge-{index}")
                    ui.element("div").classes("rostrum-row-break")
                    remove.tooltip("Remove judge")
                    remove.props('aria-label="Remove judge"')
                    if count <= 1:
                        remove.disable()
            self.form.provider_extras(prefix, row)

    def add(self) -> None:
        judges = self.judge["judges"]
        if len(judges) < MAX_JUDGES:
            last = judges[-1] if judges else judge_row()
            judges.append(_another_opinion(last, judges, self.debater_models(),
                                           lambda p: p not in self.form.missing_keys))
            self.form.drop_errors("judge.judges")
            self.form.render()

    def remove(self, index: int) -> None:
        judges = self.judge["judges"]
        if len(judges) > 1:
            judges.pop(index)
            self.form.drop_errors("judge.judges")
            self.form.render()


DEMO_JUDGE_MODELS = (*DEMO_MODELS, *(f"demo-{n}" for n in range(2, 8)))


def _another_opinion(last: dict, judges: list[dict], debater_models: list[str] | None = None,
                     usable: Callable[[str], bool] = lambda provider: True) -> dict:
    """A new panel seat: the same kind of provider as the last one (a second opinion usually comes
    from there) but, for the demo, a model the panel does not have yet, since a panel needs
    different models. For a real provider, a model of a family that no debater and no judge has yet
    (self-preference), from the same provider if it has one, else from another usable provider."""
    seat = {**last}
    if seat.get("provider") == "demo":
        used = {j.get("model") for j in judges if j.get("provider") == "demo"}
        seat["model"] = next((m for m in DEMO_JUDGE_MODELS if m not in used), seat.get("model"))
        return seat
    panel = [str(j.get("model") or "") for j in judges]
    picked = pick_judge(debater_models or [], panel, seat.get("provider"),
                        lambda p: usable(p) and p != "compatible")  # a compatible seat needs its server's address
    if picked is not None:
        provider, model = picked
        if provider != seat.get("provider"):
            seat.update(preset=None, base_url="")
        seat.update(provider=provider, model=model)
    return seat
