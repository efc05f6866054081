"""The HTTP API (`/api/v1`) over real HTTP against `python main.py` in a subprocess, with sign-in on and
personal API tokens made with the real CLI (`python -m webapp tokens create`): a debate created
through the API and followed over Server-Sent Events to its end (the streamed text is the stored
turns), a reconnect with `Last-Event-ID` in the middle of a turn (nothing lost, nothing twice),
commands and the state machine's refusals, 401/403/404/409/422/429, revoked tokens and demoted or
disabled people, exports, rematches, results and tournaments, and the OpenAPI document."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from tests.child_env import child_env
from tests.e2e.conftest import ROOT, launch_server

RATE = 40  # requests a minute per token on the test server (the 429 test spends one token's minute)
TIMEOUT = httpx.Timeout(10.0, read=90.0)
CONFIG = {"topic": "Trains beat planes for trips under 800 km", "format": "classic",
          "clarification": False}


def cli(db: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "webapp", *args, "--db", str(db)], cwd=ROOT, capture_output=True,
                          text=True, env=child_env(("NICEGUI_", "ROSTRUM_")), timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def make_token(db: Path, user: str, *extra: str) -> str:
    out = cli(db, "tokens", "create", "--user", user, *extra)
    return next(line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("token: rst_"))


@dataclass
class Server:
    base: str
    db: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, who: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens.get(who, who)}"} if who else {}
        return httpx.Client(base_url=self.base + "/api/v1", headers=headers, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("api")
    db = workdir / "api.sqlite3"
    cli(db, "users", "add", "root", "--role", "admin", "--no-password")
    cli(db, "users", "add", "ada", "--role", "operator", "--no-password")
    cli(db, "users", "add", "vic", "--role", "viewer", "--no-password")
    server = Server("", db)
    server.tokens = {"root": make_token(db, "root"), "ada": make_token(db, "ada", "--name", "tests"),
                     "vic": make_token(db, "vic")}
    with launch_server(workdir, db, {"ROSTRUM_AUTH": "on", "ROSTRUM_DEMO_SPEED": "120",
                                     "ROSTRUM_API_RATE_PER_MINUTE": str(RATE)}, log_name="api-server.log") as base:
        server.base = base
        yield server


# --- Server-Sent Events -----------------------------------------------------------------------------


@dataclass
class Message:
    id: str
    event: str
    data: dict[str, Any]


def read_events(response: httpx.Response) -> Iterator[Message]:
    """Parse a `text/event-stream` body into its messages (comments and `retry:` skipped)."""
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if line == "":
            if "data" in fields:
                yield Message(fields.get("id", ""), fields.get("event", "message"), json.loads(fields["data"]))
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


@dataclass
class Transcript:
    """What a client rebuilds from the stream: committed events by seq, streamed text by turn key."""

    seqs: list[int] = field(default_factory=list)
    committed: dict[str, str] = field(default_factory=dict)  # turn key -> the committed text
    streamed: dict[str, str] = field(default_factory=dict)  # turn key -> text of its current attempt
    final_streams: dict[str, str] = field(default_factory=dict)  # turn key -> what was streamed at commit
    aborted: set[str] = field(default_factory=set)  # turns with an attempt cut off (redone from the start)
    last_id: str = ""
    ended: bool = False

    def take(self, m: Message) -> None:
        self.last_id = m.id
        if m.event == "event":
            self.seqs.append(m.data["seq"])
            if m.data["kind"] == "turn":
                key = m.data["data"]["turn"]["key"]
                self.committed[key] = m.data["data"]["turn"]["text"]
                if key in self.streamed:
                    self.final_streams[key] = self.streamed.pop(key)
        elif m.event == "turn_started":
            self.streamed[m.data["key"]] = ""
        elif m.event == "delta":
            have = self.streamed.get(m.data["key"], "")
            assert m.data["offset"] == len(have), f"a gap or an overlap in {m.data['key']} at {m.id}"
            self.streamed[m.data["key"]] = have + m.data["text"]
        elif m.event == "turn_aborted":
            self.streamed.pop(m.data["key"], None)
            self.aborted.add(m.data["key"])
        elif m.event == "end":
            self.ended = True


def follow(client: httpx.Client, debate_id: str, transcript: Transcript, last_event_id: str | None = None,
           stop_when: Any = None) -> None:
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    with client.stream("GET", f"/debates/{debate_id}/events", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for m in read_events(response):
            transcript.take(m)
            if m.event == "end" or (stop_when is not None and stop_when(m, transcript)):
                return


def stored_turns(client: httpx.Client, debate_id: str) -> dict[str, str]:
    document = client.get(f"/debates/{debate_id}").json()
    return {t["key"]: t["text"] for t in document["turns"]}


def create(client: httpx.Client, **changes: Any) -> str:
    response = client.post("/debates", json=CONFIG | changes)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["url"].endswith(f"/debate/{body['id']}")
    return str(body["id"])


def test_a_debate_created_through_the_api_streams_to_its_end_as_stored(server: Server) -> None:
    with server.client("ada") as ada:
        debate_id = create(ada)
        transcript = Transcript()
        follow(ada, debate_id, transcript)
        assert transcript.ended
        stored = stored_turns(ada, debate_id)
        document = ada.get(f"/debates/{debate_id}").json()
    assert document["status"] == "completed"
    assert transcript.seqs == sorted(set(transcript.seqs)) and transcript.seqs[0] == 1  # all, once, in order
    assert transcript.committed == stored and len(stored) >= 4
    streamed = {key: text for key, text in transcript.final_streams.items() if key in stored}
    assert streamed and all(stored[key] == text for key, text in streamed.items())
    suffix = server.tokens["ada"][-4:]
    assert document["created_by"] == f"ada (token …{suffix})"  # the audit trail's actor, too
    # A finished debate streams its log and ends; the same with a Last-Event-ID sends only the rest.
    with server.client("vic") as vic:
        again = Transcript()
        follow(vic, debate_id, again)
        later = Transcript()
        follow(vic, debate_id, later, last_event_id=str(transcript.seqs[-3]))
    assert again.ended and again.seqs == transcript.seqs and again.committed == stored
    assert later.seqs == transcript.seqs[-2:]


def test_a_reconnect_in_the_middle_of_a_turn_loses_and_repeats_nothing(server: Server) -> None:
    with server.client("ada") as ada:
        debate_id = create(ada, topic="Cities should ban cars from their centres")

        def mid_turn(m: Message, t: Transcript) -> bool:
            # well into some turn's text, which is still being streamed
            return m.event == "delta" and len(t.streamed.get(m.data["key"], "")) > 40

        first = Transcript()
        follow(ada, debate_id, first, stop_when=mid_turn)
        assert "." in first.last_id and not first.ended
        cut_key = next(key for key, text in first.streamed.items() if len(text) > 40)
        second = Transcript(streamed=dict(first.streamed))
        follow(ada, debate_id, second, last_event_id=first.last_id)
        stored = stored_turns(ada, debate_id)
    assert second.ended
    seqs = first.seqs + second.seqs
    assert seqs == list(range(1, len(seqs) + 1))  # every committed event exactly once
    assert {**first.committed, **second.committed} == stored
    # the turn cut in the middle was continued from its character: its pieces add up to what is stored.
    # Unless the attempt itself was cut off meanwhile (a slow first token under load is timed out and the
    # turn redone): then the client was told to drop it, and the redone turn arrives whole at its commit.
    if cut_key in second.aborted:
        assert second.committed[cut_key] == stored[cut_key]
    else:
        assert second.final_streams[cut_key] == stored[cut_key]


def test_commands_go_through_the_state_machine_and_the_roles(server: Server) -> None:
    with server.client("ada") as ada, server.client("vic") as vic, server.client("root") as root:
        debate_id = create(ada, topic="Homework should be abolished")
        refused = vic.post(f"/debates/{debate_id}/commands/pause")
        assert refused.status_code == 403 and "vic (viewer) cannot pause" in refused.json()["detail"]
        paused = ada.post(f"/debates/{debate_id}/commands/pause")
        assert paused.status_code == 200, paused.text
        assert paused.json()["status"] == "paused"
        with sqlite3.connect(server.db) as db:  # the same audit trail as the pages, naming the token
            audited = db.execute("SELECT actor, outcome FROM audit WHERE action = 'pause' AND debate_id = ?",
                                 (debate_id,)).fetchall()
        ada_actor, vic_actor = (f"{who} (token …{server.tokens[who][-4:]})" for who in ("ada", "vic"))
        assert set(audited) == {(ada_actor, "ok"), (vic_actor, "refused")}
        twice = ada.post(f"/debates/{debate_id}/commands/pause")
        assert twice.status_code == 409 and "not allowed while the debate is paused" in twice.json()["detail"]
        assert ada.post(f"/debates/{debate_id}/commands/explode").status_code == 422
        assert ada.post(f"/debates/{debate_id}/commands/resume").json()["status"] != "paused"
        stopped = ada.post(f"/debates/{debate_id}/commands/stop", json={"verdict": False, "reason": "enough"})
        assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
        assert ada.post(f"/debates/{debate_id}/commands/resume").status_code == 409
        assert ada.post("/debates/000000000000/commands/pause").status_code == 404
        assert vic.get("/debates/nope").status_code == 404
        # exports and the rematch of the stopped debate, sides swapped
        assert ada.get(f"/debates/{debate_id}/export.md").text.startswith("#")
        assert ada.get(f"/debates/{debate_id}/export.json").json()["id"] == debate_id
        assert "Homework should be abolished" in vic.get(f"/debates/{debate_id}/export.txt").text
        rematch = ada.post(f"/debates/{debate_id}/rematch")
        assert rematch.status_code == 201
        new_id = rematch.json()["id"]
        assert ada.post(f"/debates/{new_id}/rematch").status_code in (409, 201)  # 409 while it runs
        ada.post(f"/debates/{new_id}/commands/stop", json={"verdict": False})
        before = {p["id"]: p["role"] for p in ada.get(f"/debates/{debate_id}").json()["participants"]}
        after = {p["id"]: p["role"] for p in ada.get(f"/debates/{new_id}").json()["participants"]}
        assert before != after and sorted(before.values()) == sorted(after.values())
        # deleting is for admins
        assert ada.delete(f"/debates/{new_id}").status_code == 403
        assert root.delete(f"/debates/{new_id}").status_code == 204
        assert root.get(f"/debates/{new_id}").status_code == 404
        # the listing: the dashboard's filters, sorting and paging
        page = vic.get("/debates", params={"status": "stopped", "q": "homework", "order": "oldest", "limit": 1})
        assert page.status_code == 200
        assert page.json()["total"] == 1 and page.json()["items"][0]["id"] == debate_id
        assert vic.get("/debates", params={"order": "sideways"}).status_code == 422


def test_bad_configurations_are_refused_naming_the_field(server: Server) -> None:
    with server.client("ada") as ada:
        unknown_format = ada.post("/debates", json=CONFIG | {"format": "shouting"})
        extra = ada.post("/debates", json=CONFIG | {"colour": "red"})
        no_topic = ada.post("/debates", json={"format": "classic"})
    assert unknown_format.status_code == 422 and unknown_format.json()["detail"][0]["loc"] == ["body", "format"]
    assert "shouting" in unknown_format.json()["detail"][0]["msg"]
    assert extra.status_code == 422 and extra.json()["detail"][0]["loc"] == ["body", "colour"]
    assert no_topic.status_code == 422 and no_topic.json()["detail"][0]["loc"] == ["body", "topic"]


def test_without_a_valid_token_nothing_is_answered(server: Server) -> None:
    with server.client(None) as anonymous, server.client("rst_not-a-real-token") as forged:
        for client in (anonymous, forged):
            response = client.get("/debates")
            assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
    with httpx.Client(base_url=server.base, timeout=TIMEOUT) as plain:
        assert plain.get("/api/v1/debates", headers={"Authorization": "Basic YWRhOng="}).status_code == 401


def test_revoked_tokens_and_demoted_or_disabled_people(server: Server) -> None:
    cli(server.db, "users", "add", "bea", "--role", "admin", "--no-password")
    token = make_token(server.db, "bea", "--role", "operator")
    with server.client(token) as bea:
        assert bea.get("/debates").status_code == 200
        listed = json.loads(cli(server.db, "tokens", "list", "--user", "bea", "--json"))
        assert [(t["role"], t["suffix"], t["status"]) for t in listed] == [("operator", token[-4:], "active")]
        # the token is capped at operator although bea is an admin
        assert bea.delete("/debates/whatever").status_code == 403
        cli(server.db, "users", "set-role", "bea", "viewer")  # a demoted person's token loses rights at once
        assert bea.post("/debates", json=CONFIG).status_code == 403
        cli(server.db, "users", "disable", "bea")
        assert bea.get("/debates").status_code == 401
        cli(server.db, "users", "enable", "bea")
        assert bea.get("/debates").status_code == 200
        cli(server.db, "tokens", "revoke", listed[0]["id"])
        assert bea.get("/debates").status_code == 401
    expired = make_token(server.db, "vic", "--expires", "0.00001")  # about a second
    with server.client(expired) as late:
        import time

        time.sleep(1.2)  # the expiry is a point in time: nothing to await but the clock
        assert late.get("/debates").status_code == 401


def test_each_token_has_a_rate_limit(server: Server) -> None:
    token = make_token(server.db, "vic", "--name", "hammer")
    with server.client(token) as vic:
        codes = [vic.get("/judges").status_code for _ in range(RATE)]
        over = vic.get("/judges")
    with server.client("vic") as other:
        assert other.get("/judges").status_code == 200  # another token has its own minute
    assert codes == [200] * RATE
    assert over.status_code == 429 and 1 <= int(over.headers["retry-after"]) <= 60


def test_results_and_tournaments(server: Server) -> None:
    with server.client("vic") as vic, server.client("ada") as ada:
        board = vic.get("/leaderboard", params={"format": "classic"})
        assert board.status_code == 200 and board.json()["filters"]["format"] == "classic"
        assert vic.get("/leaderboard", params={"format": "nope"}).status_code == 422
        assert vic.get("/leaderboard/head-to-head", params={"a": "demo:x", "b": "demo:y"}).status_code == 404
        assert vic.get("/judges").status_code == 200
        spec = {"name": "API cup", "models": [{"provider": "demo", "model": "one"},
                                               {"provider": "demo", "model": "two"}],
                "topics": ["Tea beats coffee"], "format": "classic"}
        assert vic.post("/tournaments", json=spec).status_code == 403
        created = ada.post("/tournaments", json=spec)
        assert created.status_code == 201, created.text
        tournament_id = created.json()["id"]
        view = vic.get(f"/tournaments/{tournament_id}")
        assert view.status_code == 200 and view.json()["total"] >= 1
        assert vic.post(f"/tournaments/{tournament_id}/stop").status_code == 403
        assert ada.post(f"/tournaments/{tournament_id}/stop").status_code == 200
        assert vic.get("/tournaments/nope").status_code == 404


def test_the_openapi_document_validates_and_the_docs_are_served(server: Server) -> None:
    with httpx.Client(base_url=server.base, timeout=TIMEOUT) as plain:
        document = plain.get("/api/v1/openapi.json").json()
        docs = plain.get("/api/docs")
    validate(document)
    assert "/debates/{debate_id}/events" in document["paths"]
    assert "DebateConfig" in document["components"]["schemas"]  # the form's and --config's model, not a copy
    assert docs.status_code == 200 and "/api/v1/openapi.json" in docs.text


def test_api_requests_pass_none_of_the_pages_middlewares(server: Server) -> None:
    """No browser session, no per-visitor storage for a script's requests (a page still gets its cookie)."""
    with server.client("vic") as vic, httpx.Client(base_url=server.base, timeout=TIMEOUT) as plain:
        answer = vic.get("/debates")
        page = plain.get("/login")
    assert answer.status_code == 200 and "set-cookie" not in answer.headers
    assert page.status_code == 200 and "set-cookie" in page.headers
