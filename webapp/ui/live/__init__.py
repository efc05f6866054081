"""The live layer of the web app: one broadcast per watched debate, fanned out to a socket.io room.

`LiveHub` (one per process) keeps a `DebateChannel` for each debate some page or API stream watches;
the channel buffers what the engine (or the live bus, for a debate another process runs) says about
it (`buffer.py`), flushes it every 0.15 s as one batch for the pages and one list of compact wire
items (`wire.py`, format in `static/live/index.js`) serialised once for every browser in the room.
How often each of them acts is in `pace.py`.
"""

from __future__ import annotations

from webapp.ui.live.buffer import Aborted, Batch, ChunkDelta, FlushItem
from webapp.ui.live.channel import AUDIENCE, DebateChannel, Watcher
from webapp.ui.live.hub import LiveHub

__all__ = ["AUDIENCE", "Aborted", "Batch", "ChunkDelta", "DebateChannel", "FlushItem", "LiveHub", "Watcher"]
