"""The endpoint rules alone: addresses and their classes, base URLs taken apart, endpoints registered by
configuration (`ROSTRUM_ENDPOINTS`, `ROSTRUM_ENDPOINTS_FILE`) and what a key is bound to."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from webapp.models import JudgeSpec, Participant
from webapp.providers.endpoints import EndpointPolicy, Route, parse_url, reach
from webapp.settings import Settings


@pytest.mark.parametrize(("address", "kind"), [
    ("169.254.169.254", "blocked"), ("fd00:ec2::254", "blocked"), ("100.100.100.200", "blocked"),
    ("::ffff:169.254.169.254", "blocked"), ("64:ff9b::a9fe:a9fe", "blocked"), ("fe80::1", "blocked"),
    ("0.0.0.0", "blocked"), ("224.0.0.1", "blocked"),
    ("127.0.0.1", "private"), ("::1", "private"), ("10.9.8.7", "private"), ("172.20.0.1", "private"),
    ("192.168.0.10", "private"), ("100.64.1.1", "private"), ("fd12::1", "private"), ("::ffff:10.0.0.1", "private"),
    ("8.8.8.8", "public"), ("2606:4700::1111", "public"),
])
def test_every_address_has_its_class(address: str, kind: str) -> None:
    assert reach(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(("url", "problem"), [
    ("ftp://host/v1", "http:// or https://"), ("http://user:pw@host/v1", "credentials"),
    ("http://host/v1?x=1", "query"), ("http://ho st/v1", "spaces"), ("http://host:99999/v1", "port"),
    ("http:///v1", "no host"), ("http://a\\@b/v1", "backslashes"),
])
def test_a_bad_base_url_is_refused_with_its_reason(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_url(url)


def test_base_urls_compare_by_scheme_host_port_and_path() -> None:
    a, b = parse_url("HTTPS://OpenRouter.AI:443/api/v1/"), parse_url("https://openrouter.ai/api/v1")
    assert a == b and a.where == "openrouter.ai" and a.url == "https://openrouter.ai/api/v1"
    assert parse_url("http://[::1]:8000/v1").where == "[::1]:8000"


def test_endpoints_from_the_environment_and_a_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_ENDPOINTS", json.dumps([{"name": "Gateway", "base_url": "https://gw.example/v1",
                                                         "key_env": "OPENAI_API_KEY"}]))
    file = tmp_path / "endpoints.toml"
    file.write_text('[[endpoints]]\nname = "Team vLLM"\nbase_url = "http://10.0.0.5:8000/v1"\n'
                    'key_env = "TEAM_VLLM_KEY"\n', encoding="utf-8")
    monkeypatch.setenv("ROSTRUM_ENDPOINTS_FILE", str(file))
    policy = EndpointPolicy.build(Settings(_env_file=None, host="0.0.0.0"))
    assert [(e.name, e.source) for e in policy.endpoints] == [("Gateway", "config"), ("Team vLLM", "config")]
    assert policy.key_may_go("OPENAI_API_KEY", "https://gw.example/v1")
    assert policy.key_may_go("OPENAI_API_KEY", "https://api.openai.com/v1")
    assert not policy.key_may_go("OPENAI_API_KEY", "https://gw.example/other")
    assert not policy.key_may_go("TEAM_VLLM_KEY", "https://api.openai.com/v1")
    team = Participant(provider="compatible", model="m", base_url="http://10.0.0.5:8000/v1")
    route = policy.route(team)
    assert isinstance(route, Route) and route.key_env == "TEAM_VLLM_KEY" and route.allow_private
    judge = JudgeSpec(provider="openai", model="gpt-4o", base_url="https://gw.example/v1")
    assert policy.check(judge) is None


@pytest.mark.parametrize(("entry", "problem"), [
    ({"name": "x", "base_url": "http://169.254.169.254/"}, "cloud-metadata"),
    ({"name": "x", "base_url": "http://h/v1", "key_env": "ROSTRUM_STORAGE_SECRET"}, "Rostrum's own settings"),
    ({"name": "x", "base_url": "http://h/v1", "key_env": "sk-abc def"}, "name of an environment variable"),
    ({"name": "x", "base_url": "http://h/v1", "secret": "sk-123"}, "Extra inputs"),
    ({"name": "", "base_url": "http://h/v1"}, "name"),
])
def test_a_bad_configured_endpoint_stops_the_start_with_its_reason(entry: dict, problem: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_ENDPOINTS", json.dumps([entry]))
    with pytest.raises(ValidationError, match=problem):
        Settings(_env_file=None)


def test_two_endpoints_with_one_name_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_ENDPOINTS", json.dumps([{"name": "A", "base_url": "http://h/v1"},
                                                        {"name": "a", "base_url": "http://g/v1"}]))
    with pytest.raises(ValidationError, match="two endpoints are called 'a'"):
        Settings(_env_file=None)


def test_free_urls_follow_the_hosting_mode_unless_set() -> None:
    assert EndpointPolicy.build(Settings(_env_file=None)).allow_free_urls  # `make run`: this machine only
    assert not EndpointPolicy.build(Settings(_env_file=None, auth="on")).allow_free_urls
    assert not EndpointPolicy.build(Settings(_env_file=None, host="0.0.0.0")).allow_free_urls
    assert EndpointPolicy.build(Settings(_env_file=None, host="0.0.0.0", allow_free_urls="on")).allow_free_urls
    assert not EndpointPolicy.build(Settings(_env_file=None, allow_free_urls="off")).allow_free_urls
