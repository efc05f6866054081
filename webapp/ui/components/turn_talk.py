"""Comments and reactions under each finished turn: one small element per page (`TurnTalkHub`) and the
live path that keeps every spectator's page current.

The transcript draws a `<turn-talk>` under each finished turn (`static/talk/index.js`); they share one
store per page, filled from the snapshot this element carries, and send what the person does through
this element to the server, where `CommentDesk` checks it at the gate.

Live: after a change is stored, `talk_changed` publishes a `comments` signal on the live bus (other
processes) and tells this process's channel of the debate; each process that has pages on the debate
reads its comments from the store once and sends them as one socket.io event ("rt") to each of the
debate's two talk rooms: the team's, with authors' names, and share-link holders', where a team
member is "a team member" (a shared page shows the debate, not who is on the team). A page's snapshot
says the same as its room. A page joins its room each time its socket (re)connects and is then sent
the current state on its own, so a gap lasts only until then; it leaves the room when it is taken
down (a share link revoked).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from nicegui import app, background_tasks, context, core, ui
from nicegui.events import GenericEventArguments

from webapp.access.comments import CommentDesk, person_key
from webapp.access.gate import Gate
from webapp.access.roles import Action, Principal
from webapp.engine.public import DebateSession
from webapp.store.comments import CommentStore, TurnTalk
from webapp.ui.live import DebateChannel, LiveHub

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parents[3] / "static"
ESM = {"rostrum-talk": str(STATIC / "talk")}
TALK_EVENT = "rt"  # the socket.io event carrying a debate's comments and reaction counts
CHANGE = "comments"  # the live bus's change signal for them


def wire(debate_id: str, talk: dict[str, TurnTalk], names: bool = True) -> dict[str, Any]:
    """What a spectator's page is sent: turn key -> visible comments and reaction counts; without `names`
    (a share link's holder), no team member's name."""
    return {"d": debate_id, "turns": {key: entry.public(names) for key, entry in talk.items()}}


def talk_room(debate_id: str, names: bool) -> str:
    """The socket.io room of the debate's pages that see authors' names (the team), or not (share links)."""
    return f"rostrum-talk:{debate_id}:{'team' if names else 'link'}"


def sees_names(principal: Principal) -> bool:
    """Whether a page shows who on the team wrote a comment: not a share link's (README, "Threat model")."""
    return principal.kind != "share-link"


class _Broadcaster:
    """Reads a debate's comments and sends them to its room, one read at a time per debate (a change
    meanwhile asks for one more read, so the last state always goes out)."""

    def __init__(self) -> None:
        self.running: dict[str, asyncio.Task[None]] = {}
        self.again: set[str] = set()

    def __call__(self, channel: DebateChannel) -> None:
        debate_id = channel.session.id
        task = self.running.get(debate_id)
        if task is not None and not task.done():
            self.again.add(debate_id)
            return
        self.running[debate_id] = background_tasks.create(self._send(channel), name=f"talk-{debate_id}")

    async def _send(self, channel: DebateChannel) -> None:
        debate_id = channel.session.id
        try:
            while True:
                self.again.discard(debate_id)
                try:
                    talk = await CommentStore(channel.hub.engine.store).for_debate(debate_id)
                    for names in (True, False):
                        await core.sio.emit(TALK_EVENT, wire(debate_id, talk, names), room=talk_room(debate_id, names))
                except Exception:  # the next change, or a reconnect, sends it again
                    log.exception("sending the comments of %s failed", debate_id)
                if debate_id not in self.again:
                    return
        finally:
            self.running.pop(debate_id, None)


BROADCAST = _Broadcaster()


def install(hub: LiveHub) -> None:
    """Let `hub`'s channels answer the bus's `comments` signal from other processes."""
    hub.side_listeners.setdefault(CHANGE, BROADCAST)


def talk_changed(hub: LiveHub, debate_id: str) -> None:
    """Comments or reactions of a debate changed (stored already): tell every spectator, here and elsewhere."""
    install(hub)
    hub.side_change(debate_id, CHANGE)


def browser_id() -> str:
    """This browser's id (NiceGUI's signed browser storage): a person when nobody signs in."""
    try:
        return str(app.storage.browser.get("id") or "")
    except (AssertionError, RuntimeError, KeyError):  # no request (tests building pages directly)
        return ""


class TurnTalkHub(ui.element, component="turn_talk.js", esm=ESM):
    """The page's comment and reaction channel to the server (invisible)."""

    def __init__(self, session: DebateSession, desk: CommentDesk, hub: LiveHub, talk: dict[str, TurnTalk],
                 mine: dict[str, list[str]], gate: Gate) -> None:
        super().__init__()
        self.session = session
        self.desk = desk
        self.hub = hub
        principal = gate.principal
        self.names = sees_names(principal)
        self.room = talk_room(session.id, self.names)
        self._props["debate"] = session.id
        self._props["turns"] = wire(session.id, talk, self.names)["turns"]
        self._props["mine"] = mine
        self._props["can"] = {"comment": principal.can(Action.COMMENT, session.id),
                              "react": principal.can(Action.REACT, session.id),
                              "moderate": principal.can(Action.MODERATE_COMMENTS, session.id)}
        self.on("comment", self._comment)
        self.on("react", self._react)
        self.on("delete", self._delete)
        install(hub)
        client = context.client
        client.on_connect(lambda: background_tasks.create(self._resync(), name="talk-resync"))
        if client.has_socket_connection:
            background_tasks.create(self._resync(), name="talk-resync")
        self.mark("turn-talk-hub")

    def _sockets(self) -> list[str]:
        try:
            client = self.client
        except RuntimeError:  # its page is gone already: so are its sockets
            return []
        return [sid for sid in list(client._socket_to_document_id) if not sid.startswith("test-")]

    async def _resync(self) -> None:
        """Join the room (first: a change stored from here on is sent to it), then send the current state."""
        if self.is_deleted:
            return
        for sid in self._sockets():
            await core.sio.enter_room(sid, self.room)
        talk = await CommentStore(self.hub.engine.store).for_debate(self.session.id)
        if not self.is_deleted:
            self.run_method("replace", wire(self.session.id, talk, self.names)["turns"])

    def _handle_delete(self) -> None:
        for sid in self._sockets():  # a page taken down (a link revoked) hears no more comments
            background_tasks.create(core.sio.leave_room(sid, self.room), name="talk-leave")
        super()._handle_delete()

    def _answer(self, turn: str, **result: Any) -> None:
        if not self.is_deleted:
            self.run_method("answer", {"turn": turn, **result})

    async def _comment(self, e: GenericEventArguments) -> None:
        turn, text = str(e.args.get("turn") or ""), str(e.args.get("text") or "")
        try:
            await self.desk.comment(self.session, turn, text)
        except (PermissionError, ValueError) as exc:
            self._answer(turn, error=f"Not sent: {exc}")
            return
        self._answer(turn)

    async def _react(self, e: GenericEventArguments) -> None:
        turn, emoji = str(e.args.get("turn") or ""), str(e.args.get("emoji") or "")
        try:
            await self.desk.react(self.session, turn, emoji)
        except (PermissionError, ValueError) as exc:
            self._answer(turn, error=f"Not done: {exc}")
            return
        self._answer(turn, mine=(await self.desk.mine(self.session.id)).get(turn, []))

    async def _delete(self, e: GenericEventArguments) -> None:
        turn, comment_id = str(e.args.get("turn") or ""), str(e.args.get("id") or "")
        try:
            await self.desk.delete(self.session, comment_id)
        except (PermissionError, ValueError) as exc:
            self._answer(turn, error=f"Not deleted: {exc}")
            return
        self._answer(turn)


async def talk_hub(session: DebateSession, gate: Gate, hub: LiveHub) -> tuple[CommentDesk, dict[str, TurnTalk],
                                                                                dict[str, list[str]]]:
    """What a page needs before it is built (the awaits): the person's desk, the debate's comments, and
    the person's own reactions."""
    desk = CommentDesk(gate, person_key(gate.principal, browser_id()),
                       changed=lambda debate_id: talk_changed(hub, debate_id))
    talk = await desk.store.for_debate(session.id)
    return desk, talk, await desk.mine(session.id)
