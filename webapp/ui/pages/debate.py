"""Debate `/debate/{id}`: the live view of one debate.

The page renders a snapshot of the session (its folded state plus the text of turns in flight) and
subscribes to the debate's live channel in the same synchronous block — no `await` in between — so
a late joiner or a reload sees the whole history and then the stream, with nothing missed or
duplicated (chunks carry offsets, committed events carry sequence numbers, and every section is
re-rendered from the session's current state, which is idempotent). Export and Delete are `debate_actions`.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from nicegui import background_tasks, context, ui

from webapp.access.gate import COMMANDS, Gate
from webapp.access.roles import Action, Principal, actor_label
from webapp.engine.api import Command, SessionView
from webapp.engine.engine import DebateNotFound
from webapp.engine.judge_health import unreliable_judges
from webapp.engine.public import ActionRecord, DebateSession, DebateState, LiveEvent, LiveStatus, State
from webapp.ui import runtime
from webapp.ui.auth import admit
from webapp.ui.auth import gate as auth_gate
from webapp.ui.components.audience import AudienceCard
from webapp.ui.components.badges import money, status_badge_html
from webapp.ui.components.banners import (
    banner_signature,
    last_cost_warning,
    render_banners,
    render_past_clarifications,
)
from webapp.ui.components.controls import Controls
from webapp.ui.components.diagram import DiagramSection
from webapp.ui.components.html_parts import shared_text
from webapp.ui.components.outcome import outcome_signature, render_outcome
from webapp.ui.components.participants import ParticipantsPanel
from webapp.ui.components.seat import SEAT_OWN
from webapp.ui.components.series import RematchButton, SeriesCard
from webapp.ui.components.share_links import ShareLinks
from webapp.ui.components.stepper import Stepper
from webapp.ui.components.transcript import LiveStatusView, TranscriptView, aux_notes_signature, render_aux_notes
from webapp.ui.components.turn_talk import TurnTalkHub, talk_hub
from webapp.ui.components.verdict import render_round_scores, render_verdict
from webapp.ui.layout import frame, heading
from webapp.ui.live import AUDIENCE, Batch, DebateChannel, LiveHub, wire
from webapp.ui.pages.debate_actions import DeleteButton, ExportMenu


def unasked_cost_warning(state: DebateState) -> str | None:
    """The cost warning in words when the debate could not stop to ask about it — spending crossed warn-at
    during the verdict, which is not interrupted (without this, a tinted badge was its only sign)."""
    warn_at, spent = state.config.budget.warn_at, state.ledger.total_usd
    if warn_at is None or any(t.event == "COST_WARNING" for t in state.transitions):
        return None  # no threshold, or the debate waited for it (the acknowledgement panel and dialog said it)
    warning = last_cost_warning(state)
    if warning is None and spent < warn_at:
        return None
    debated = sum(t.cost_usd or 0.0 for t in state.turns)
    during = " during the verdict" if state.verdict is not None and debated < warn_at else ""
    return (f"Spending warning: spending reached {money(spent)}{during}, at or above the {money(warn_at)} "
            "warning threshold" + ("; the verdict was not interrupted." if during else "."))


def render_cost_warning(state: DebateState) -> None:
    budget = state.config.budget
    if state.cost_warned or (budget.warn_at is not None and state.ledger.total_usd >= budget.warn_at):
        ui.badge("warning threshold reached", color="orange-9").mark("cost-warning")
    said = unasked_cost_warning(state)
    if said:  # a warning panel like the one a debate stops for, in the page's text colour (readable)
        with ui.card().classes("w-full bg-orange-50 dark:bg-orange-950 p-3").props('flat bordered role="alert"') \
                .mark("cost-warning-note"), ui.row().classes("items-start gap-2 no-wrap"):
            ui.icon("warning").classes("text-xl shrink-0 text-orange-8").props('aria-hidden="true"')
            ui.label(said).classes("text-sm min-w-0")


ACTION_WORDS = {
    "pause": "paused", "resume": "resumed", "stop": "stopped", "retry": "retried",
    "acknowledge_warning": "accepted the spending warning", "clarification_answered": "answered the questions",
    "start": "started", "share_link_created": "created a share link", "share_link_revoked": "revoked a share link",
}


# Who did something, as a share link's holder sees it: a link shows the debate, not who is on the team.
SOMEONE = "a team member"


def describe_action(action: ActionRecord, names: bool = True) -> str:
    """'paused by ada' — one line of the debate's activity timeline (without `names`: 'paused by a
    team member'; the engine's own steps stay 'system')."""
    verb = ACTION_WORDS.get(action.action, action.action.replace("_", " "))
    actor = action.actor
    actor = SOMEONE if not names and actor != "system" else actor_label(actor)  # "this computer (no sign-in)"
    if verb.startswith(("created", "revoked", "accepted", "answered")):
        return f"{actor} {verb}"
    return f"{verb} by {actor}"


def activity_html(state: DebateState, names: bool = True) -> str:
    """Who did what, as a collapsed `<details>`: one element, however long the debate's history."""
    if not state.actions and not state.created_by:
        return ""
    items = []
    if state.created_by:
        items.append(f"{state.created_at:%H:%M:%S} · created by {actor_label(state.created_by) if names else SOMEONE}")
    items += [f"{action.at:%H:%M:%S} · {describe_action(action, names)}" for action in state.actions]
    lines = "".join(f'<li class="text-sm">{escape(item)}</li>' for item in items)
    return (f'<details class="rostrum-activity"><summary class="text-base font-medium">Activity</summary>'
            f'<ul>{lines}</ul></details>')


class DebateView:
    """Everything one tab shows of one debate, and how it follows the live stream."""

    def __init__(self, session: DebateSession, gate: Gate, base_url: str = "") -> None:
        self.session = session
        self.gate = gate
        self.base_url = base_url
        self.signatures: dict[str, Any] = {}
        self.sections: dict[str, ui.element] = {}
        self.answers: dict[int, dict[str, list[str]]] = {}
        self.seen_seq = 0
        self.acknowledged_warning = -1
        self.rerun: ui.link | None = None
        # judge → "Unreliable judge: …" from judge health, for the verdict card: read when there is a verdict
        # (before the page is built, or once one arrives); None until then.
        self.unreliable: dict[str, str] | None = None
        self.reading_unreliable = False

    @property
    def state(self):
        return self.session.state

    # --- building (synchronous: the snapshot and the subscription must not be split) ------------

    def build(self, hub: LiveHub, channel: DebateChannel) -> None:
        state = self.state
        principal = self.gate.principal
        # Dialogs are made when first needed (each element costs every open page memory), in the page body.
        self.dialogs = context.slot.parent
        with ui.card().classes("w-full gap-2") as self.top_card:
            heading(state.config.topic).classes("text-2xl font-semibold rostrum-topic").mark("topic")
            # The format, the status and when it was made: one element, re-written when the status changes.
            self.status_view = ui.html("", sanitize=False).classes("row w-full items-center gap-3")
            if state.config.tournament and principal.kind != "share-link":
                ui.link("part of a tournament", f"/tournaments/{state.config.tournament}") \
                    .classes("text-xs").mark("tournament-link")
            # Fewest elements here: each one costs every spectator's page memory (menus are made on click).
            with ui.row().classes("w-full items-center gap-2").mark("page-actions"):
                self.exports = ExportMenu(self.session, self.gate)
                self.rematch = RematchButton(self.session, self.gate)
                if principal.kind != "share-link" and principal.can(Action.CREATE):
                    # One action (it was "Clone" and "Re-run with edits", the same form twice): the
                    # new-debate form filled in from this debate, at any stage.
                    self.rerun = ui.link("Re-run with edits", f"/new?from={state.id}") \
                        .classes("rostrum-clone q-px-sm").props(
                            'aria-label="Re-run with edits: the new-debate form filled in from this debate"') \
                        .mark("rerun")
        # Sections that are often empty (the outcome, banners, what follows the transcript) are rendered
        # straight into their place when they have something to show (`_place`): no holder element.
        # name -> (parent, anchor, whether the section goes after the anchor or before it)
        self.places: dict[str, tuple[ui.element, ui.element, bool]] = {}
        self.placed: dict[str, list[ui.element]] = {}  # what each placed section shows now
        self.places["outcome"] = (context.slot.parent, self.top_card, True)
        self.series = SeriesCard(self.session, self.gate, lambda render: self._place("series", render))
        # The compact bar that stays in view: phase stepper, round, who speaks, cost.
        with ui.element("div").classes("w-full rostrum-sticky").mark("sticky-bar") as sticky:
            self.stepper = Stepper(state)
            self.livebar = LiveStatusView(wire.status(self.session), "bar").classes("w-full").mark("livebar")
            # Pause and Stop stay in reach while following the live turn (a share link gets none).
            self.controls = Controls(self.session, self.gate, after=self.sync)
        with self.top_card:
            self.controls.read_only_note()
        self.places["banners"] = (context.slot.parent, sticky, True)
        self.places["series"] = (context.slot.parent, sticky, False)  # before the bar: after the outcome
        with ui.element("div").classes("w-full grid grid-cols-1 lg:grid-cols-[minmax(0,1fr)_22rem] gap-4 items-start"):
            with ui.column().classes("min-w-0 gap-3 w-full"):
                self.left = context.slot.parent  # the clarifications answered go first, once there are any
                self.transcript = TranscriptView(self.session, channel.kid, follow=bool(self.session.live_turns)
                                                 or self.session.running, cut=channel.cut_turns)
                self.transcript.on("resync", lambda: background_tasks.create(
                    channel.resync(context.client, self.transcript.finished_turns), name="live-resync"))
                # Notes on retries, round scores and the verdict: one section, re-rendered when any changes.
                self.places["after"] = (self.left, self.transcript, True)
            with ui.column().classes("w-full gap-3 lg:sticky lg:top-36"):
                self.participants = ParticipantsPanel(state)
                self.right = context.slot.parent
                LiveStatusView(wire.status(self.session), "cost").classes("w-full q-card q-pa-md") \
                    .mark("cost-meter cost")
                self.audience = AudienceCard(self.session, self.gate, hub)  # votes, people's verdicts
                self.activity = ui.html("", sanitize=False).classes("w-full").mark("activity")
                if principal.can(Action.SHARE, state.id):
                    ShareLinks(self.session, self.gate, self.base_url)
                if principal.can(Action.DELETE, state.id):
                    DeleteButton(self.session, self.gate, self.dialogs)
        self.diagram = DiagramSection(self.session)
        self.dialog: ui.dialog | None = None
        self.sync()

    def _ack_dialog(self) -> ui.dialog:
        if self.dialog is None:
            with self.dialogs, ui.dialog().props("persistent") as self.dialog, ui.card().mark("ack-dialog"):
                ui.label("Spending warning").classes("text-lg font-semibold")
                self.dialog_text = ui.label()
                with ui.row().classes("w-full justify-end gap-2"):
                    ui.button("Decide later", on_click=self.dismiss_dialog).props("flat no-caps")
                    ui.button("Stop and judge", on_click=lambda: self.command("stop", verdict=True)) \
                        .props("flat color=negative no-caps").mark("dialog-stop")
                    ui.button("Continue", on_click=lambda: self.command("acknowledge_warning")) \
                        .props("unelevated no-caps").mark("dialog-acknowledge")
        return self.dialog

    def _section(self, name: str, signature: Any, render: Callable[[], None]) -> None:
        if self.signatures.get(name) == signature:
            return
        self.signatures[name] = signature
        if name in self.places:
            self._place(name, render)
            return
        container = self.sections[name]
        container.clear()
        with container:
            render()

    def _place(self, name: str, render: Callable[[], None]) -> None:
        """Section `name` rendered straight into its parent, right after its anchor (or right before it,
        for a place marked so), replacing what it rendered before: no holder element (each one costs
        every spectator's page memory)."""
        parent, anchor, after = self.places[name]
        for element in self.placed.pop(name, []):
            parent.remove(element)
        before = {id(child) for child in parent.default_slot.children}
        with parent:
            render()
        made = [child for child in parent.default_slot.children if id(child) not in before]
        at = parent.default_slot.children.index(anchor) + (1 if after else 0)
        for offset, element in enumerate(made):
            element.move(parent, at + offset)
        if made:
            self.placed[name] = made

    def sync(self) -> None:
        """Bring every part of the page up to the session's current state (idempotent)."""
        state, live, view = self.state, self.session.live_turns, self.session.view()
        status = (view.status.value, view.interrupted, state.ended_because)
        if self.signatures.get("status") != status:
            self.signatures["status"] = status
            # Why it ended beside the badge, except for a stop: the outcome card says who stopped it and where.
            note = state.ended_because if state.status is State.COMPLETED else None
            badge, marker = status_badge_html(view.status.value, view.interrupted, note)
            # The topic tags go into this one element's HTML (escaped): no element of their own, since
            # every element costs each spectator's memory.
            tags = "".join(f'<span class="q-badge flex inline items-center bg-grey-3 text-grey-9 px-2 py-1 '
                           f'rostrum-tag">#{escape(tag)}</span>' for tag in state.config.tags)
            self.status_view.mark("format", marker).set_content(shared_text(
                f'<span class="q-badge flex inline items-center bg-indigo-1 text-indigo-9 px-2 py-1">'
                f'{escape(state.format.title)}</span>'
                + (f'<span class="row items-center gap-1" aria-label="Topic tags">{tags}</span>' if tags else "")
                + f'<span class="row items-center gap-2">{badge}</span>'
                f'<span class="text-xs text-grey-7">created {state.created_at.strftime("%Y-%m-%d %H:%M UTC")} · '
                f'id {escape(state.id)}</span>'))
        names = self.gate.principal.kind != "share-link"  # a share link shows the debate, not the team
        self._section("outcome", outcome_signature(state, names), lambda: render_outcome(state, names))
        self._section("banners", banner_signature(view, state),
                      lambda: self._render_banners(view, state))
        if state.answers and "past" not in self.sections:
            with self.left:
                self.sections["past"] = ui.column().classes("w-full").move(self.left, 0)
        if "past" in self.sections:
            self._section("past", len(state.answers), lambda: render_past_clarifications(state))
        if state.verdict is not None and self.unreliable is None and not self.reading_unreliable:
            self.reading_unreliable = True
            background_tasks.create(self._read_unreliable(), name="judge-health")
        self._section("after", (aux_notes_signature(state, live), len(state.round_scores), state.verdict,
                                state.ended_because, self.unreliable),
                      lambda: self._render_after(state, live, self.unreliable))
        unasked = unasked_cost_warning(state)
        if "cost-warning" not in self.sections and (state.cost_warned or state.warnings or unasked):
            with self.right:  # made when first needed, above the cost card
                self.sections["cost-warning"] = ui.element("div").move(self.right, 1)
        if "cost-warning" in self.sections:
            self._section("cost-warning", (state.cost_warned, len(state.warnings), unasked),
                          lambda: render_cost_warning(state))
        activity = (len(state.actions), state.created_by)
        if self.signatures.get("activity") != activity:
            self.signatures["activity"] = activity
            names = self.gate.principal.kind != "share-link"
            self.activity.set_content(shared_text(activity_html(state, names)))
        self.controls.update()
        self.rematch.update()
        self.series.update()
        self.diagram.update()
        self._sync_dialog(state)
        self.seen_seq = state.last_seq

    @property
    def operates(self) -> bool:
        """Whether this principal may send any command to this debate (else the page is read-only)."""
        # Sending a human seat's turn is not operating the debate (a viewer may hold a seat).
        return any(self.gate.principal.can(action, self.session.id) for command, action in COMMANDS.items()
                   if command is not Command.SEND_TURN)

    def _render_banners(self, view: SessionView, state: DebateState) -> None:
        principal = self.gate.principal
        clone = principal.kind != "share-link" and principal.can(Action.CREATE)
        names = principal.kind != "share-link"
        seat = (principal.actor, self.session.seat_holder(),
                lambda model, show: self.gate.draft_turn(self.session, model, show), self.session.draft_models())
        if self.operates:
            render_banners(view, state, self.command, self.answers, clone=clone, names=names, seat=seat)
            return
        with ui.column().classes("w-full gap-2") as banners:
            render_banners(view, state, self.command, self.answers, clone=clone, names=names, seat=seat)
        for element in banners.descendants():  # the gate refuses them anyway; do not offer them
            if isinstance(element, ui.button | ui.input | ui.textarea) and SEAT_OWN not in element.classes:
                element.disable()

    async def _read_unreliable(self) -> None:
        """The verdict arrived while the page was open: read which judges are unreliable, then show it."""
        engine = await runtime.current().engine()
        self.unreliable = await unreliable_judges(engine.store)
        if not self.top_card.is_deleted:
            self.sync()

    @staticmethod
    def _render_after(state: DebateState, live: Any, unreliable: dict[str, str] | None = None) -> None:
        render_aux_notes(state, live)
        render_round_scores(state)
        render_verdict(state, unreliable)

    def _sync_dialog(self, state) -> None:
        if (state.status is State.AWAITING_ACK and self.acknowledged_warning != len(state.warnings)
                and self.operates):
            warning = last_cost_warning(state)
            self._ack_dialog()
            assert self.dialog is not None
            self.dialog_text.text = (warning.message if warning is not None and warning.message
                                     else "The warning threshold was reached.") + \
                " Continue spending, or stop and get a verdict on what was said?"
            self.dialog.open()
        elif state.status is not State.AWAITING_ACK and self.dialog is not None and self.dialog.value:
            self.dialog.close()

    # --- live stream ------------------------------------------------------------------------------

    def on_batch(self, batch: Batch) -> None:
        if self.transcript.is_deleted:
            return
        if self.session.deleted:
            self._show_deleted()
            return
        self.audience.on_batch(batch)
        # Streamed text never reaches here: the browser grows the transcript from the live stream.
        if any((isinstance(item, LiveEvent) and item.event.seq > self.seen_seq)
               or (isinstance(item, LiveStatus) and item.change != AUDIENCE)  # votes: the audience card's
               for item in batch):
            self.sync()  # a committed event, or storage lost or back (banners and badge change)

    # --- commands ---------------------------------------------------------------------------------

    async def command(self, name: str, **kwargs: Any) -> None:
        if name in ("acknowledge_warning", "stop"):
            self.dismiss_dialog()
        await self.controls.run(name, **kwargs)

    def dismiss_dialog(self) -> None:
        self.acknowledged_warning = len(self.state.warnings)
        if self.dialog is not None:
            self.dialog.close()

    def _show_deleted(self) -> None:
        if "deleted" in self.sections:
            return
        self.controls.busy = True
        self.controls.update()
        parent, anchor, _ = self.places["banners"]
        with parent:
            self.sections["deleted"] = ui.label("An admin deleted this debate; what is shown here is no longer "
                                                "stored.").classes("text-negative font-medium").mark("deleted")
        self.sections["deleted"].move(parent, parent.default_slot.children.index(anchor) + 1)



def not_found(principal: Principal | None, message: str, status: int = 404, title: str | None = None,
              back: bool = False) -> None:
    """A clear page for a debate, link or page that is not there, with the right HTTP status, and a
    link back to the debates (for whoever may list them, or with `back`)."""
    context.client.status_code = status
    if title is None:
        title = "Not found" if status == 404 else "No longer available"
    with frame("", principal), ui.card().classes("w-full items-center py-10 gap-3").mark("not-found"):
        ui.icon("search_off" if status == 404 else "link_off").classes("text-5xl text-grey-8")
        heading(title).mark("not-found-title")
        ui.label(message).classes("text-lg text-center rostrum-topic").mark("not-found-message")
        if back or (principal is not None and principal.kind != "share-link"):
            with ui.link(target="/").classes("rostrum-back-link").mark("back-to-debates"):
                ui.icon("arrow_back")
                ui.label("Back to Debates")


async def show_debate(session: DebateSession, principal: Principal, base_url: str) -> None:
    """Render the debate for `principal` and follow it live (also used by share links)."""
    hub = await runtime.current().hub()
    unreliable = None
    if session.state.verdict is not None:  # a judged debate: its card says which judges are unreliable
        unreliable = await unreliable_judges((await runtime.current().engine()).store)
    gate = auth_gate(principal)
    desk, talk, mine = await talk_hub(session, gate, hub)  # comments and reactions (a resync covers a gap)
    # From here to `watch` nothing awaits: the snapshot and the subscription see the same moment.
    with frame("", principal):
        view = DebateView(session, gate, base_url)
        view.unreliable = unreliable
        channel = hub.channel(session)
        view.build(hub, channel)
        TurnTalkHub(session, desk, hub, talk, mine, gate)
        stop = channel.watch(view.on_batch, lambda: view.transcript.finished_turns)
        runtime.current().cutoff.on_cut(stop)  # a sign-in or link that ends stops the stream at once


async def page(request: Request, debate_id: str) -> Response | None:
    rt = runtime.current()
    engine = await rt.engine()
    admitted = await admit(request, Action.WATCH, "watch debates")
    if not isinstance(admitted, Principal):
        return admitted
    try:
        session = await engine.session(debate_id)
    except DebateNotFound:
        not_found(admitted, f"No debate with id {debate_id!r}.")
        return None
    await show_debate(session, admitted, str(request.base_url))
    return None
