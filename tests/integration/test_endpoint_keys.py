"""Server-held keys go only to their own hosts (issue 20, part 1): a listener standing where an operator
points a preset proves that no key reaches an unregistered URL by any path (the engine's start, the CLI,
a saved template, a tournament plan); a registered endpoint gets its own key; `api_key_env` names only
key variables; metadata, link-local and (when hosted) private addresses are refused; a host is resolved
once and connected to at that address; a model server's redirect to another host is not followed."""

from __future__ import annotations

import asyncio
import re
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.child_env import child_env
from tests.fakellm import FakeLLMServer
from tests.keytrap import KeyTrap
from tests.provider_helpers import open_engine, use_fake_keys
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.schedule import ConfigError
from webapp.models import DebateConfig, JudgeConfig, Participant
from webapp.providers.base import ErrorKind, Message, ProviderError, ProviderRequest
from webapp.providers.endpoints import Endpoint, EndpointPolicy
from webapp.providers.netguard import BlockedAddress, guarded_client
from webapp.providers.registry import EndpointBook, ProviderCache, spec_problem
from webapp.settings import Settings
from webapp.store.endpoints import EndpointStore
from webapp.store.library import Library
from webapp.tournament.commands import TournamentUsage, check_debates
from webapp.tournament.plan import Contender, Tournament

ROOT = Path(__file__).resolve().parents[2]
# Key-shaped canaries made at run time: if one reaches a listener, the test says which.
CANARY = "canary-openrouter-" + "7" * 24
TEAM_KEY = "canary-team-" + "5" * 24
KEPT_HOME = re.escape("OPENROUTER_API_KEY is only sent to openrouter.ai")


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_fake_keys(monkeypatch, tmp_path, OPENROUTER_API_KEY=CANARY, TEAM_VLLM_KEY=TEAM_KEY,
                  ROSTRUM_DEMO_SPEED="0", ROSTRUM_STORAGE_SECRET="not-a-provider-key-" + "1" * 20)


@pytest.fixture
def trap() -> Any:
    with KeyTrap() as listener:
        yield listener


@pytest.fixture
async def engine(tmp_path: Path) -> Any:
    eng = await open_engine(tmp_path)
    try:
        yield eng
    finally:
        await eng.close()


def stolen(trap: KeyTrap) -> list[str | None]:
    return [seen.authorization for seen in trap.requests]


def debate(*people: Participant, judge: JudgeConfig | None = None) -> DebateConfig:
    cast = list(people) + [Participant(name=f"Demo {n}", position=pos)
                           for n, pos in enumerate(("pro", "con")[len(people):])]
    return DebateConfig(topic="Should keys travel?", format="oxford", rounds=1, participants=cast,
                        judge=judge or JudgeConfig(enabled=False))


def openrouter_at(url: str, **fields: Any) -> Participant:
    return Participant(name="Thief", position="pro", provider="compatible", preset="openrouter",
                       model="openai/gpt-4o-mini", base_url=f"{url}/v1", **fields)


# --- a key stays with its host -------------------------------------------------------------------------


async def test_a_preset_key_is_not_sent_to_a_typed_url_the_start_is_refused_at_the_base_url(
        engine: Engine, trap: KeyTrap) -> None:
    with pytest.raises(ConfigError) as refused:
        await engine.start(debate(openrouter_at(trap.url)))
    assert refused.value.field == "participants[0].base_url"
    assert "OPENROUTER_API_KEY is only sent to openrouter.ai" in refused.value.message
    assert "ask an admin to register this endpoint" in refused.value.message
    assert CANARY not in str(refused.value)
    assert stolen(trap) == [] and engine.sessions == {}


async def test_a_debate_stored_before_the_rule_is_refused_before_its_first_call(
        engine: Engine, trap: KeyTrap) -> None:
    """A debate created when the URL was allowed (here: stored directly) is checked again when it runs."""
    config = debate(openrouter_at(trap.url))
    await engine.store.create_debate("old1", config.topic, config.format, config.model_dump(mode="json"),
                                     {"status": "idle"})
    session = await engine.session("old1")
    session.ensure_running()
    assert await session.join() is State.ERROR
    assert "OPENROUTER_API_KEY is only sent to openrouter.ai" in session.state.machine.context.error.message
    assert stolen(trap) == []


async def test_another_key_variable_named_over_a_url_is_refused(engine: Engine, trap: KeyTrap) -> None:
    thief = Participant(name="Thief", position="pro", provider="compatible", model="m",
                        base_url=f"{trap.url}/v1", api_key_env="OPENROUTER_API_KEY")
    with pytest.raises(ConfigError, match=KEPT_HOME):
        await engine.start(debate(thief))
    assert stolen(trap) == []


@pytest.mark.parametrize("name", ["PATH", "ROSTRUM_STORAGE_SECRET", "AWS_SECRET_ACCESS_KEY"])
async def test_api_key_env_names_only_key_variables(engine: Engine, trap: KeyTrap, name: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-" + "9" * 30)
    spec = Participant(name="Thief", position="pro", provider="compatible", model="m",
                       base_url=f"{trap.url}/v1", api_key_env=name)
    with pytest.raises(ConfigError) as refused:
        await engine.start(debate(spec))
    assert refused.value.field == "participants[0].api_key_env"
    assert f"api_key_env {name} is not a provider key variable" in refused.value.message
    assert stolen(trap) == []


def test_the_cli_refuses_a_preset_key_at_a_typed_url(tmp_path: Path, trap: KeyTrap) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "webapp", "debate", "Should keys travel?", "--rounds", "1", "--no-judge",
         "--participant", f"name=Ada,provider=compatible,preset=openrouter,base_url={trap.url}/v1,"
                          "model=openai/gpt-4o-mini,position=pro",
         "--participant", "name=Bo,position=con", "--db", str(tmp_path / "cli.sqlite3")],
        cwd=ROOT, env=child_env(OPENROUTER_API_KEY=CANARY), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "participants[0].base_url: OPENROUTER_API_KEY is only sent to openrouter.ai" in result.stderr
    assert stolen(trap) == [] and CANARY not in result.stdout + result.stderr


async def test_a_saved_template_cannot_carry_a_key_elsewhere(engine: Engine, trap: KeyTrap) -> None:
    item = await Library(engine.store).save("template", "Borrowed key", debate(openrouter_at(trap.url))
                                            .model_dump(mode="json"), "op1")
    with pytest.raises(ConfigError, match=KEPT_HOME):
        await engine.start(item.config().model_copy(update={"topic": "From a template"}))
    assert stolen(trap) == []


async def test_a_tournament_plan_cannot_carry_a_key_elsewhere(engine: Engine, trap: KeyTrap) -> None:
    tournament = Tournament(
        name="Borrowed", topics=["Should keys travel?"], format="classic",
        models=[Contender(provider="compatible", preset="openrouter", model="x/y", base_url=f"{trap.url}/v1"),
                Contender(provider="demo", model="demo")])
    with pytest.raises(TournamentUsage, match=KEPT_HOME):
        check_debates(engine, tournament)
    assert stolen(trap) == []


async def test_a_registered_endpoint_gets_its_own_key_and_only_it_does(
        engine: Engine, fake_llm: FakeLLMServer, trap: KeyTrap) -> None:
    await EndpointStore(engine.store).add(
        Endpoint(name="Team vLLM", base_url=fake_llm.openai_url, key_env="TEAM_VLLM_KEY"), "admin")
    speaker = Participant(name="Ada", position="pro", provider="compatible", model="team-model",
                          base_url=fake_llm.openai_url)
    session = await engine.start(debate(speaker))
    assert await session.join() is State.COMPLETED, session.state.machine.context.error
    assert {r.headers["authorization"] for r in fake_llm.model_requests} == {f"Bearer {TEAM_KEY}"}
    # the team's variable is a key variable now, but only for its own endpoint
    elsewhere = Participant(name="Thief", position="pro", provider="compatible", model="m",
                            base_url=f"{trap.url}/v1", api_key_env="TEAM_VLLM_KEY")
    with pytest.raises(ConfigError, match=r"TEAM_VLLM_KEY is only sent to 127\.0\.0\.1"):
        await engine.start(debate(elsewhere))
    assert stolen(trap) == []


async def test_an_endpoint_registered_in_another_process_counts_at_once(
        engine: Engine, fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    speaker = Participant(name="Ada", position="pro", provider="compatible", model="team-model",
                          base_url=fake_llm.openai_url, api_key_env="TEAM_VLLM_KEY")
    with pytest.raises(ConfigError, match="api_key_env TEAM_VLLM_KEY is not a provider key variable"):
        engine.validate(debate(speaker))
    other = await open_engine(tmp_path)  # the admin's web process, on the same database
    try:
        await EndpointStore(other.store).add(
            Endpoint(name="Team vLLM", base_url=fake_llm.openai_url, key_env="TEAM_VLLM_KEY"), "admin")
    finally:
        await other.close()
    session = await engine.start(debate(speaker))
    assert await session.join() is State.COMPLETED


# --- addresses that must not be called ---------------------------------------------------------------


HOSTED = {"host": "0.0.0.0", "auth": "on"}


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest", "http://[fd00:ec2::254]/v1",
                                 "http://100.100.100.200/v1", "http://[::ffff:169.254.169.254]/v1",
                                 "http://[fe80::1]:8080/v1"])
@pytest.mark.parametrize("hosted", [False, True], ids=["single-user", "hosted"])
def test_metadata_and_link_local_addresses_are_always_refused(url: str, hosted: bool) -> None:
    policy = EndpointPolicy.build(Settings(_env_file=None, allow_free_urls="on", **(HOSTED if hosted else {})))
    problem = spec_problem(Participant(provider="compatible", model="m", base_url=url), policy)
    assert problem is not None and problem.field == "base_url"
    assert "link-local or cloud-metadata address" in problem.message


@pytest.mark.parametrize("url", ["http://127.0.0.1:11434/v1", "http://localhost:8080/v1", "http://10.1.2.3/v1",
                                 "http://192.168.1.20:1234/v1", "http://[::1]:8000/v1"])
def test_private_addresses_need_a_registered_endpoint_when_hosted(url: str) -> None:
    spec = Participant(provider="compatible", model="m", base_url=url)
    hosted = Settings(_env_file=None, allow_free_urls="on", **HOSTED)
    problem = spec_problem(spec, EndpointPolicy.build(hosted))
    assert problem is not None and "only endpoints an admin registered may be there" in problem.message
    registered = EndpointPolicy.build(hosted, [Endpoint(name="Local", base_url=url)])
    assert spec_problem(spec, registered) is None
    # on this machine without sign-in (`make run`), local servers are the point
    assert spec_problem(spec, EndpointPolicy.build(Settings(_env_file=None))) is None
    ollama = Participant(provider="compatible", preset="ollama", model="llama3.2")
    assert spec_problem(ollama, EndpointPolicy.build(Settings(_env_file=None))) is None


def test_free_urls_only_where_an_admin_allowed_them() -> None:
    spec = Participant(provider="compatible", model="m", base_url="https://llm.example.org/v1")
    hosted = Settings(_env_file=None, **HOSTED)
    problem = spec_problem(spec, EndpointPolicy.build(hosted))
    assert problem is not None and problem.field == "base_url" and "not a registered endpoint" in problem.message
    assert spec_problem(spec, EndpointPolicy.build(hosted.model_copy(update={"allow_free_urls": "on"}))) is None
    # a provider's own host needs no registration: the missing key is the only problem left
    groq = spec_problem(Participant(provider="compatible", preset="groq", model="m"), EndpointPolicy.build(hosted))
    assert groq is not None and groq.message == "groq needs an API key: set GROQ_API_KEY in the environment or .env"


async def test_a_hosted_instance_does_not_connect_to_a_name_resolving_to_a_private_address(
        fake_llm: FakeLLMServer) -> None:
    """The check happens on the resolved address, at connection time: a public-looking name pointing at
    this machine is refused without a registered endpoint, and the request never leaves."""

    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    async with guarded_client(f"http://models.example.test:{fake_llm.port}/v1", False, resolver=resolver) as client:
        with pytest.raises(BlockedAddress, match="an address on this machine or a private network"):
            await client.get(f"http://models.example.test:{fake_llm.port}/v1/models")
    assert fake_llm.requests == []

    async def metadata(host: str, port: int) -> list[str]:
        return ["169.254.169.254"]

    async with guarded_client("http://meta.example.test/v1", True, resolver=metadata) as client:
        with pytest.raises(BlockedAddress, match="link-local or cloud-metadata"):
            await client.get("http://meta.example.test/v1/models")


async def test_a_host_is_resolved_once_and_connected_to_at_that_address(fake_llm: FakeLLMServer) -> None:
    """DNS rebinding: the name answers 127.0.0.1 once, then the metadata address; the connection is made to
    the first answer (checked), keeps the name in its Host header, and is reused without asking again."""
    answers = [["127.0.0.1"], ["169.254.169.254"]]
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked) - 1, 1)]

    base = f"http://rebind.example.test:{fake_llm.port}/v1"
    async with guarded_client(base, True, resolver=resolver) as client:
        first = await client.get(f"{base}/models")
        second = await client.get(f"{base}/models")
    assert first.status_code == second.status_code == 200
    assert asked == ["rebind.example.test"]
    assert [r.headers["host"] for r in fake_llm.requests] == [f"rebind.example.test:{fake_llm.port}"] * 2


async def test_a_redirect_to_another_host_is_not_followed(fake_llm: FakeLLMServer) -> None:
    with KeyTrap() as elsewhere, KeyTrap(redirect_to=elsewhere.url) as redirecting:
        cache = ProviderCache(endpoints=EndpointBook(Settings(_env_file=None)))
        try:
            provider = cache.get(Participant(provider="compatible", model="m", base_url=f"{redirecting.url}/v1"))
            request = ProviderRequest(model="m", messages=[Message(role="user", content="hi")], max_tokens=64,
                                      first_token_timeout=5)
            with pytest.raises(ProviderError) as failed:
                async for _ in provider.stream(request):
                    pass
        finally:
            await cache.aclose()
        assert [seen.path for seen in redirecting.requests] == ["/v1/chat/completions"]
        assert elsewhere.requests == []
        assert failed.value.kind is ErrorKind.FATAL
    # and the guarded client refuses any other origin outright, redirect or not
    async with guarded_client(fake_llm.openai_url, True) as client:
        with pytest.raises(BlockedAddress, match="only calls its own endpoint"):
            await client.get(f"http://localhost:{fake_llm.port}/v1/models")
        redirect = await client.get(f"{fake_llm.openai_url}/models", follow_redirects=False)
        assert redirect.status_code == 200 and isinstance(redirect, httpx2.Response)


async def test_a_pinned_https_connection_still_verifies_the_certificate_of_the_name(tmp_path: Path) -> None:
    """Connected to the resolved address, the TLS handshake still names the host (SNI) and the certificate
    is checked against the name, not the address."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=tls.example.test", "-addext", "subjectAltName=DNS:tls.example.test",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    names: list[str | None] = []
    server_side.sni_callback = lambda _sock, name, _ctx: names.append(name)  # type: ignore[assignment,misc]
    hosts: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        hosts.extend(line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                     if line.lower().startswith(b"host:"))
        body = b'{"data": []}'
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_side)
    port = server.sockets[0].getsockname()[1]

    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    trusting = ssl.create_default_context(cafile=str(cert))
    base = f"https://tls.example.test:{port}/v1"
    async with server:
        async with guarded_client(base, True, resolver=resolver, ssl_context=trusting) as client:
            response = await client.get(f"{base}/models")
        assert response.status_code == 200 and names == ["tls.example.test"]
        assert hosts == [f"tls.example.test:{port}"]
        # a name the certificate does not carry is refused, though it resolves to the same address
        other = f"https://other.example.test:{port}/v1"
        async with guarded_client(other, True, resolver=resolver, ssl_context=trusting) as client:
            with pytest.raises(httpx2.ConnectError, match=r"certificate|hostname"):
                await client.get(f"{other}/models")


async def test_a_hosted_engine_calls_this_machine_only_for_a_registered_endpoint(
        tmp_path: Path, fake_llm: FakeLLMServer, trap: KeyTrap) -> None:
    db = tmp_path / "hosted.sqlite3"
    hosted = await open_engine(tmp_path, Settings(_env_file=None, db=db, host="0.0.0.0", auth="on"))
    try:
        local = Participant(name="Ada", position="pro", provider="compatible", model="m",
                            base_url=fake_llm.openai_url)
        with pytest.raises(ConfigError, match="is not a registered endpoint") as refused:
            await hosted.start(debate(local))
        assert refused.value.field == "participants[0].base_url"
        with pytest.raises(ConfigError, match=KEPT_HOME):  # the key's own reason comes first
            await hosted.start(debate(openrouter_at(trap.url)))
        await EndpointStore(hosted.store).add(Endpoint(name="Box", base_url=fake_llm.openai_url), "admin")
        session = await hosted.start(debate(local))
        assert await session.join() is State.COMPLETED
    finally:
        await hosted.close()
    assert stolen(trap) == [] and fake_llm.model_requests
