"""The people's card of a debate page: the audience vote (For / Against / Undecided, before and after,
with the Oxford swing beside the judges' verdict) and, once the debate has ended, "Your verdict" and
the people's verdict beside the AI's.

Votes and verdicts go through the gate (checked, audited) into the store; the hub then tells every page
of the debate, in this process and through the bus in others (`LiveHub.audience_changed`), and each
page re-reads the counts. Pages of one process that hear the same change share one read of the store.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from html import escape
from typing import Any

from nicegui import app, background_tasks, ui

from webapp.access.gate import Gate
from webapp.access.roles import Action
from webapp.engine import audience
from webapp.engine.public import DebateSession, LiveEvent, LiveStatus
from webapp.settings import get_settings
from webapp.store.audience import AudienceStore, Choice, HumanVerdict, Stage, Tally
from webapp.ui.components.html_parts import shared_text
from webapp.ui.live import AUDIENCE, Batch, LiveHub

CHOICE_LABELS: dict[Choice, str] = {"for": "For", "against": "Against", "undecided": "Undecided"}
STAGE_LABELS: dict[Stage, str] = {"before": "Before", "after": "After"}

# One read of the store per debate and change, however many pages of this process hear it: the batch
# that carried the change is the same object for every page (kept here so its id is not reused).
_reads: dict[str, tuple[object, asyncio.Task[tuple[dict[Stage, Tally], list[HumanVerdict], float | None]]]] = {}


async def _read(store: AudienceStore, debate_id: str) -> tuple[dict[Stage, Tally], list[HumanVerdict], float | None]:
    return await store.tally(debate_id), await store.verdicts(debate_id), await store.after_closes(debate_id)


def _shared_read(store: AudienceStore, debate_id: str, key: object
                 ) -> asyncio.Task[tuple[dict[Stage, Tally], list[HumanVerdict], float | None]]:
    held = _reads.get(debate_id)
    if held is not None and held[0] is key:
        return held[1]
    task = background_tasks.create(_read(store, debate_id), name=f"audience-read-{debate_id}")
    _reads[debate_id] = (key, task)
    task.add_done_callback(lambda _: _reads.pop(debate_id, None) if _reads.get(debate_id, (None,))[0] is key
                           else None)
    return task


def _distribution(tally: dict[str, int]) -> str:
    total = sum(tally.values())
    parts = []
    for choice, label in CHOICE_LABELS.items():
        n = tally[choice]
        share = f" ({100 * n / total:.0f}%)" if total else ""
        parts.append(f"{label} {n}{share}")
    return " · ".join(parts)


class AudienceCard:
    """One page's audience card (built synchronously with the page; its data read right after). The
    page hands it every live batch (`on_batch`): it is not a watcher of its own."""

    def __init__(self, session: DebateSession, gate: Gate, hub: LiveHub) -> None:
        self.session = session
        self.gate = gate
        self.hub = hub
        self.store = AudienceStore(gate.engine.store)
        self.after_minutes = get_settings().after_vote_minutes
        self.browser_id: str | None = None
        try:
            self.browser_id = str(app.storage.browser.get("id") or "") or None
        except (RuntimeError, AssertionError):  # no browser storage (no request): only users vote
            self.browser_id = None
        principal = gate.principal
        self.voter: str | None = None
        try:
            self.voter = gate.voter(principal, self.browser_id)
        except ValueError:
            pass
        self.tallies: dict[Stage, Tally] = {s: Tally() for s in ("before", "after")}
        self.verdicts: list[HumanVerdict] = []
        self.override: float | None = None
        self._mine: dict[str, str] = {}
        self.loaded = False
        self.signature: Any = None
        self.boxes: dict[str, ui.column] = {}  # the vote, the people's summary, "Your verdict"
        self.timer: ui.timer | None = None
        self.card = ui.card().classes("w-full gap-2 rostrum-audience").mark("audience-card")
        self.card.visible = False
        background_tasks.create(self.reload(), name=f"audience-{session.id}")

    # --- data ----------------------------------------------------------------------------------

    async def reload(self, key: object | None = None) -> None:
        task = _shared_read(self.store, self.session.id, key if key is not None else object())
        self.tallies, self.verdicts, self.override = await asyncio.shield(task)
        if self.voter is not None:  # another tab of this person may have changed their vote
            self._mine = {str(k): str(v) for k, v in (await self.store.votes_of(self.session.id, self.voter)).items()}
        self.loaded = True
        self.render()

    def on_batch(self, batch: Batch) -> None:
        if any(isinstance(item, LiveStatus) and item.change == AUDIENCE for item in batch):
            background_tasks.create(self.reload(batch), name=f"audience-{self.session.id}")
        elif any(isinstance(item, LiveEvent) for item in batch):
            self.render()

    # --- rendering -----------------------------------------------------------------------------

    def _now(self) -> float:
        return time.time()

    def render(self) -> None:
        """Rebuild only the parts whose data changed: the vote and the people's summary follow every
        count, while "Your verdict" is rebuilt only when this person's own verdict or its window
        changes (someone else's vote must not wipe a form being filled in)."""
        if not self.loaded or self.card.is_deleted:
            return
        state = self.session.state
        now = self._now()
        stage = audience.open_stage(state, self.override, now, self.after_minutes)
        ended = audience.ended_at(state) is not None
        mine = self._my_votes()
        my_verdict = next((v for v in self.verdicts if v.by == self.voter), None)
        show_vote = audience.has_vote(state)
        closes = audience.after_closes_at(state, self.override, self.after_minutes)
        parts = {
            "vote": (show_vote, stage, ended, {s: t.public() for s, t in self.tallies.items()}, mine,
                     self.override, audience.ai_winner(state)),
            "people": (ended, [v.model_dump() for v in self.verdicts], audience.ai_winner(state)),
            "form": (ended, my_verdict.model_dump() if my_verdict else None,
                     closes is not None and now >= closes),
        }
        if parts == self.signature:
            return
        before = self.signature or {}
        self.signature = parts
        self.card.visible = show_vote or ended
        if not self.boxes:
            with self.card:
                self.boxes = {name: ui.column().classes("w-full gap-2") for name in parts}
        if parts["vote"] != before.get("vote"):
            self.boxes["vote"].clear()
            if show_vote:
                with self.boxes["vote"]:
                    self._render_vote(state, stage, mine)
        if parts["people"] != before.get("people"):
            self.boxes["people"].clear()
            if ended:
                with self.boxes["people"]:
                    self._render_people_summary(state)
        if parts["form"] != before.get("form"):
            self.boxes["form"].clear()
            if ended:
                with self.boxes["form"]:
                    self._render_verdict_form(state, my_verdict)
        if self.timer is not None and not self.timer.is_deleted:
            self.timer.delete()  # the closing time may have moved: armed again below
        self.timer = None
        self._arm_timer(state, now)

    def _my_votes(self) -> dict[str, str]:
        return dict(self._mine)

    def _arm_timer(self, state: Any, now: float) -> None:
        """Re-render when the after vote closes (the server refuses late votes either way)."""
        closes = audience.after_closes_at(state, self.override, self.after_minutes)
        if closes is not None and closes > now:
            with self.card:
                self.timer = ui.timer(closes - now + 0.5, self._closed, once=True)

    def _closed(self) -> None:
        self.signature = None
        self.render()

    def _render_vote(self, state: Any, stage: Stage | None, mine: dict[str, str]) -> None:
        ui.label("Audience vote").classes("text-lg font-semibold").mark("audience-title")
        if stage == "before":
            status = "Before the debate: vote now; this vote closes when the first rebuttal begins."
        elif stage == "after":
            closes = audience.after_closes_at(state, self.override, self.after_minutes) or 0
            at = datetime.fromtimestamp(closes, UTC).strftime("%H:%M UTC")
            status = f"The debate has ended: vote again. The after vote is open until {at}."
        elif audience.ended_at(state) is None:
            status = "The before vote is closed; the after vote opens when the debate ends."
        else:
            status = "Voting is closed."
        ui.label(status).classes("text-xs text-grey-8").mark("audience-status")
        if stage is not None and self.gate.principal.can(Action.VOTE, state.id) and self.voter is not None:
            with ui.row().classes("gap-1").mark("audience-buttons"):
                for choice, label in CHOICE_LABELS.items():
                    chosen = mine.get(stage) == choice
                    ui.button(label, on_click=lambda c=choice, s=stage: self.vote(s, c)) \
                        .props(f"{'unelevated' if chosen else 'outline'} no-caps dense "
                               f'aria-pressed="{str(chosen).lower()}"') \
                        .mark(f"vote-{choice}")
        res = audience.result(self.tallies)
        pair = audience.sides(state)
        names = {p.id: p.name or p.id for p in state.config.participants}
        pro, con = (names[pair[0]], names[pair[1]]) if pair else ("the proposition", "the opposition")
        lines = [f"<div data-stage='before'><b>Before</b>: {escape(_distribution(res.before))}</div>",
                 f"<div data-stage='after'><b>After</b>: {escape(_distribution(res.after))}</div>"]
        if res.winner is not None:
            swing = ", ".join(f"{CHOICE_LABELS[k]} {v:+.0f}" for k, v in res.swing.items())  # type: ignore[index]
            lines.append(f"<div>Swing (points): {escape(swing)}</div>")
            lines.append(f"<div class='font-medium' data-testid='audience-verdict'>"
                         f"{escape(res.sentence(pro, con))}</div>")
            room = audience.audience_winner_id(state, res)
            ai = audience.ai_winner(state)
            if ai is not None:
                judges = "a tie" if ai == audience.TIE else names.get(ai, ai)
                lines.append(f"<div>The judges: {escape(judges)}</div>")
                if (room or audience.TIE) != ai:
                    lines.append("<div class='text-warning font-medium' data-testid='audience-disagree'>"
                                 "The audience and the judges disagree.</div>")
        ui.html(shared_text("".join(lines)), sanitize=False).classes("text-sm").mark("audience-counts")
        if audience.ended_at(state) is not None and self.gate.principal.can(Action.MANAGE_VOTE, state.id):
            open_now = stage == "after"
            ui.button("Close the after vote" if open_now else "Reopen the after vote",
                      on_click=lambda: self.set_after(not open_now)) \
                .props("flat dense no-caps").mark("after-vote-toggle")

    def _render_people_summary(self, state: Any) -> None:
        names = {p.id: p.name or p.id for p in state.config.participants}
        majority, count = audience.people_majority(self.verdicts)
        ai = audience.ai_winner(state)
        ui.label("People's verdict").classes("text-lg font-semibold").mark("people-title")
        if majority is None:
            text = "No one has given a verdict yet."
        else:
            who = "a tie" if majority == audience.TIE else names.get(majority, majority)
            text = f"{who} (majority of {count} verdict{'s' if count != 1 else ''})"
            if ai is not None:
                text += " — agrees with the AI judges" if majority == ai else " — the AI judges disagree"
        ui.label(text).classes("text-sm").mark("people-verdict")

    def _render_verdict_form(self, state: Any, my_verdict: HumanVerdict | None) -> None:
        names = {p.id: p.name or p.id for p in state.config.participants}
        if not self.gate.principal.can(Action.JUDGE, state.id) or self.voter is None:
            return
        closes = audience.after_closes_at(state, self.override, self.after_minutes)
        if my_verdict is not None and closes is not None and self._now() >= closes:
            ui.label("Your verdict is recorded.").classes("text-xs text-grey-8").mark("your-verdict-done")
            return
        with ui.expansion("Your verdict", value=False).classes("w-full").mark("your-verdict"):
            options = {p.id: names[p.id] for p in state.config.participants if p.position != "moderator"}
            options[audience.TIE] = "Tie"
            current = (my_verdict.winner or audience.TIE) if my_verdict else None
            winner = ui.select(options, value=current, label="Winner").props("outlined dense") \
                .classes("w-full").mark("verdict-winner")
            scores: dict[str, ui.number] = {}
            for criterion in state.config.judge.criteria:
                value = my_verdict.scores.get(criterion) if my_verdict else None
                scores[criterion] = ui.number(f"{criterion} (0–100)", value=value, min=0, max=100, step=1) \
                    .props("outlined dense").classes("w-full").mark(f"verdict-score-{criterion}")
            note = ui.textarea("Note (optional)", value=my_verdict.note if my_verdict else "") \
                .props("outlined dense maxlength=2000").classes("w-full").mark("verdict-note")
            ui.button("Save my verdict", on_click=lambda: self.judge(winner.value, {
                k: n.value for k, n in scores.items() if n.value is not None}, note.value or "")) \
                .props("unelevated no-caps").mark("verdict-save")

    # --- actions -------------------------------------------------------------------------------

    async def vote(self, stage: Stage, choice: Choice) -> None:
        try:
            await self.gate.vote(self.session, stage, choice, self.browser_id, self.after_minutes)
        except (PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        self._mine = {**self._my_votes(), stage: choice}
        self.hub.audience_changed(self.session)

    async def judge(self, winner: str | None, scores: dict[str, Any], note: str) -> None:
        if winner is None:
            ui.notify("Not done: winner: choose a side or a tie", type="negative")
            return
        try:
            await self.gate.judge(self.session, winner, scores, note, self.browser_id, self.after_minutes)
        except (PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        ui.notify("Your verdict is saved", type="positive")
        self.hub.audience_changed(self.session)

    async def set_after(self, open_: bool) -> None:
        try:
            await self.gate.set_after_vote(self.session, open_, self.after_minutes)
        except (PermissionError, ValueError) as exc:
            ui.notify(f"Not done: {exc}", type="negative")
            return
        self.hub.audience_changed(self.session)
