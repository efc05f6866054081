"""`show --json` and `export` from the CLI carry each turn's comments and reaction counts, read from the
same database the web app writes them to."""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path

import pytest

from webapp.cli import EXIT_OK, main
from webapp.store import Store
from webapp.store.comments import CommentStore


@pytest.fixture(autouse=True)
def _instant_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    monkeypatch.delenv("ROSTRUM_DEMO_FAIL", raising=False)


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


async def _talk(db: Path, debate_id: str, key: str) -> None:
    store = await Store.open(db)
    try:
        comments = CommentStore(store)
        await comments.add(debate_id, key, "user:vic", "vic", "Good point <3")
        gone = await comments.add(debate_id, key, "user:vic", "vic", "deleted later")
        await comments.delete(gone.id, "olga")
        await comments.toggle(debate_id, key, "user:vic", "⚠️")
    finally:
        await store.close()


def test_show_json_and_export_list_comments_and_reactions_per_turn(tmp_path: Path) -> None:
    db = tmp_path / "talk.sqlite3"
    code, out = run("debate", "Is tea better than coffee?", "--format", "round-limited", "--rounds", "1",
                    "--participant", "name=Ada,provider=demo,model=demo,position=pro",
                    "--participant", "name=Bo,provider=demo,model=demo,position=con", "--db", str(db))
    assert code == EXIT_OK
    match = re.search(r"Debate ([0-9a-f]{12})", out)
    assert match, out[:400]
    debate_id = match.group(1)
    _, shown = run("show", debate_id, "--json", "--db", str(db))
    key = json.loads(shown)["turns"][0]["key"]
    asyncio.run(_talk(db, debate_id, key))

    _, shown = run("show", debate_id, "--json", "--db", str(db))
    turns = json.loads(shown)["turns"]
    assert [c["text"] for c in turns[0]["comments"]] == ["Good point <3"] and turns[0]["comments"][0]["author"] == "vic"
    assert turns[0]["reactions"] == {"👍": 0, "❓": 0, "⚠️": 1}
    assert all(t["comments"] == [] for t in turns[1:])
    code, _ = run("export", debate_id, str(tmp_path / "out.md"), "--db", str(db))
    assert code == EXIT_OK
    markdown = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert "- **vic:** Good point &lt;3" in markdown and "Reactions: ⚠️ 1" in markdown
    assert "deleted later" not in markdown
