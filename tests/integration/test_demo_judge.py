"""The offline demo judge works out what it answers from the request, like any model: the engine
treats it as a judge like the others (no branch on the demo provider), so its on-topic checks are
asked, answered from the messages, and charged (at its simulated price)."""

from __future__ import annotations

from pathlib import Path

from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig, Participant
from webapp.providers.base import ProviderRequest
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.settings import Settings

TOPIC = "Should cities ban private cars from their centres?"
OFF_TOPIC = "My favourite recipe is a lemon tart with almonds and a little honey."


class OffTopicBob(RecordingDemoProvider):
    """The demo model, except that Bob talks about dessert."""

    def compose(self, request: ProviderRequest) -> str:
        if request.purpose == "turn" and request.context.get("speaker") == "bob":
            return OFF_TOPIC
        return super().compose(request)


async def test_strict_mode_asks_the_demo_judge_which_answers_from_the_messages(tmp_path: Path) -> None:
    provider = OffTopicBob("demo-instant", speed=0, failures={})
    db = tmp_path / "db.sqlite3"
    engine = await Engine.open(db, settings=Settings(_env_file=None, db=db), providers=OneProvider(provider))
    try:
        session = await engine.start(DebateConfig(
            topic=TOPIC, format="round-limited", rounds=1, strict=True,
            participants=[Participant(name="Ann", position="pro"), Participant(name="Bob", position="con")]))
        assert await session.join() is State.COMPLETED
    finally:
        await engine.close()
    state = session.state
    notes = {t.speaker: t.notes for t in state.turns}
    assert notes["bob"] == ["off-topic: shares no key words with the topic (lexical check)"]
    assert notes["ann"] == []
    checks = [r for r in provider.received if r.purpose == "on_topic"]
    assert len(checks) == 2 and OFF_TOPIC in checks[1].messages[-1].content
    charged = [n for n in state.notes if n.type == "on_topic"]
    assert len(charged) == 2 and all(n.calls[0].cost_source == "simulated" for n in charged)
    assert state.ledger.tokens_by_participant["judge"]["calls"] == 3  # two on-topic checks and the verdict
