"""`LiveHub`: every live channel of this process, and the dashboards' throttled signal.

The hub keeps one `DebateChannel` per debate some page or API stream watches (created on the first,
closed with the last), listens to the engine's all-debates stream and to the bus's dashboard signal, and
turns them into a `dashboard` event at most every `DASHBOARD_INTERVAL` seconds, however busy the
debates are. Changes kept beside a debate's log (comments, reactions, votes) are signalled through it
to this process's pages and, over the bus, to the other processes'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from nicegui import Event, background_tasks

from webapp.bus import InProcessBus, LiveBus
from webapp.engine.engine import Engine
from webapp.engine.public import DebateSession, LiveEvent, LiveMessage, LiveStatus
from webapp.ui.live import pace
from webapp.ui.live.channel import AUDIENCE, DebateChannel, Watcher


class LiveHub:
    """Every live channel of this process, and the throttled dashboard signal."""

    def __init__(self, engine: Engine, bus: LiveBus | None = None) -> None:
        self.engine = engine
        self.bus: LiveBus = bus if bus is not None else InProcessBus()
        self.channels: dict[str, DebateChannel] = {}
        self.dashboard: Event[set[str]] = Event()
        self._changed: set[str] = set()
        self._dashboard_task: asyncio.Task[None] | None = None
        self._unsubscribe_all = engine.subscribe_all(self._on_any_event)
        self._marker: tuple[int, str] | None = None
        self._follow_task = background_tasks.create(self._follow_dashboards(), name="live-follow-dashboards")
        self._unwatch_dashboard = self.bus.watch_dashboard(self.debates_changed)  # changes made elsewhere
        # change signal -> what a channel does when another process says so (`side_change`)
        self.side_listeners: dict[str, Callable[[DebateChannel], None]] = {}

    async def _follow_dashboards(self) -> None:
        """Notice debates other processes create or change, and tell open dashboards. The marker is
        one cheap query, read every time so that a change made before a dashboard opened is not
        mistaken for the baseline."""
        while True:
            marker: tuple[int, str] | None
            try:
                marker = await self.engine.store.last_change()
            except Exception:  # the store is closing, or busy: look again next time
                marker = self._marker
            if self._marker is not None and marker != self._marker and self.dashboard.callbacks:
                self.dashboard.emit(set())
            self._marker = marker
            await asyncio.sleep(pace.FOLLOW_INTERVAL)

    def channel(self, session: DebateSession) -> DebateChannel:
        channel = self.channels.get(session.id)
        if channel is None:
            channel = self.channels[session.id] = DebateChannel(self, session)
        return channel

    def watch(self, session: DebateSession, callback: Watcher,
              since_turns: Callable[[], int] = lambda: 0) -> DebateChannel:
        """Call in the same synchronous block as rendering the snapshot (no `await` between)."""
        channel = self.channel(session)
        channel.watch(callback, since_turns)
        return channel

    def side_change(self, debate_id: str, change: str) -> None:
        """Something kept beside a debate's log changed (comments and reactions: `change` names it): tell
        the other processes over the bus, and this process's channel of the debate, if any page watches it."""
        self.bus.publish(LiveStatus(debate_id, change))
        channel = self.channels.get(debate_id)
        listener = self.side_listeners.get(change)
        if channel is not None and listener is not None:
            listener(channel)

    def audience_changed(self, session: DebateSession) -> None:
        """Someone voted or judged on this debate (stored already): every page of it re-reads the counts,
        here through the session's listeners, in other processes through the bus."""
        session.broadcaster.emit(LiveStatus(session.id, AUDIENCE))
        if self.bus.carries:
            self.bus.publish(LiveStatus(session.id, AUDIENCE))

    def _on_any_event(self, message: LiveMessage) -> None:
        if isinstance(message, LiveEvent | LiveStatus):
            self.debates_changed(message.debate_id)

    def debates_changed(self, debate_id: str) -> None:
        """Note a change for the dashboards (also for ones the engine does not broadcast, like creation)."""
        self._changed.add(debate_id)
        if self._dashboard_task is None or self._dashboard_task.done():
            self._dashboard_task = background_tasks.create(self._signal_dashboard(), name="live-dashboard")

    async def _signal_dashboard(self) -> None:
        await asyncio.sleep(pace.DASHBOARD_INTERVAL)
        changed, self._changed = self._changed, set()
        if changed:
            self.dashboard.emit(changed)

    def close(self) -> None:
        self._unsubscribe_all()
        self._unwatch_dashboard()
        self._follow_task.cancel()
        for channel in list(self.channels.values()):
            channel.close()
        if self._dashboard_task is not None:
            self._dashboard_task.cancel()
