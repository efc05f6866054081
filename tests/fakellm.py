"""A local fake LLM server speaking the OpenAI chat-completions and Anthropic messages wire protocols.

The real SDKs talk to it over real sockets (they use httpx2, which request mocks cannot see), so the
tests exercise exactly what production does: SSE parsing, status codes, headers, cut connections.

    with FakeLLMServer() as server:                   # or `async with`, or start()/stop()
        server.enqueue(Script.rate_limited(retry_after=2), Script(text="Hello there"))
        client = AsyncOpenAI(base_url=server.openai_url, api_key="test")   # Anthropic: server.url
        ...
        server.requests[-1].body["model"]

Each model request (POST /v1/chat/completions or /v1/messages) takes the next queued `Script`; when
the queue is empty the default responder answers (a deterministic echo of the last user message, or
`json_reply` when the request asks for JSON). Every request is recorded with its headers and JSON body.

Run it standalone for CLI tests: `python -m tests.fakellm --port 0` prints `FAKELLM_URL=http://…` and
serves until killed; scripts can then be queued over HTTP with `POST /_fake/scripts` (a JSON object or
list with `Script` fields), recorded requests read with `GET /_fake/requests`, reset with
`POST /_fake/reset`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import itertools
import json
import random
import re
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

WireProtocol = Literal["openai", "anthropic"]
Responder = Callable[["RecordedRequest"], str]

# Default error bodies per protocol and status: (type, code, message). `{model}` is filled in.
_OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request (fake server)."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided (fake server)."),
    403: ("permission_error", None, "You are not allowed to use this model (fake server)."),
    404: ("invalid_request_error", "model_not_found", "The model `{model}` does not exist (fake server)."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for {model} (fake server)."),
    500: ("server_error", None, "The server had an error while processing your request (fake server)."),
    503: ("server_error", None, "The engine is currently overloaded (fake server)."),
    529: ("overloaded_error", None, "Overloaded (fake server)"),
}
_ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request (fake server)."),
    401: ("authentication_error", "invalid x-api-key (fake server)"),
    403: ("permission_error", "Your API key does not have permission to use this model (fake server)."),
    404: ("not_found_error", "model: {model} (fake server)"),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit (fake server)."),
    500: ("api_error", "Internal server error (fake server)"),
    529: ("overloaded_error", "Overloaded (fake server)"),
}
_STREAM_ERROR_MESSAGES = {
    "overloaded_error": "Overloaded (fake server)",
    "api_error": "Internal server error",
}
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    529: "Overloaded",
}


@dataclass
class Script:
    """How the server answers one model request: a reply (with optional stream faults) or an error.

    `cut_after=N` closes the socket after N text chunks; `no_terminal` ends the body cleanly without
    the finish reason, usage, `[DONE]` / `message_delta`, `message_stop`; `stream_error` sends an
    in-stream error event after `stream_error_after` text chunks; `first_token_delay` (seconds) or
    `hold` (an event the test sets) delays the first text chunk; `usage=False` omits usage. While a
    `hold` waits the server's `holding` event is set; a client that leaves meanwhile ends the stream
    and sets `client_left`. `matches` (a predicate on the request) keeps the script for the first request
    it matches, whatever comes before it (a retried call does not take a script meant for another turn).
    """

    text: str | None = None
    chunks: list[str] | None = None
    status: int = 200
    error_type: str | None = None
    error_message: str | None = None
    error_code: str | None = None
    retry_after: str | float | None = None
    retry_after_ms: float | None = None
    cut_after: int | None = None
    no_terminal: bool = False
    no_finish_reason: bool = False
    stream_error: str | None = None
    stream_error_after: int = 0
    usage: bool | None = None
    first_token_delay: float = 0.0
    chunk_delay: float = 0.0
    hold: threading.Event | None = None
    matches: Callable[[RecordedRequest], bool] | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int = 0
    request_id: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def reply(cls, text: str, **kwargs: Any) -> Script:
        return cls(text=text, **kwargs)

    @classmethod
    def rate_limited(cls, retry_after: str | float | None = 1, message: str | None = None) -> Script:
        return cls(status=429, retry_after=retry_after, error_message=message)

    @classmethod
    def server_error(cls, message: str | None = None, status: int = 500) -> Script:
        return cls(status=status, error_message=message)

    @classmethod
    def overloaded(cls, message: str | None = None, retry_after: str | float | None = None) -> Script:
        return cls(status=529, error_type="overloaded_error", error_message=message, retry_after=retry_after)

    @classmethod
    def unauthorized(cls, message: str | None = None) -> Script:
        return cls(status=401, error_message=message)

    @classmethod
    def model_not_found(cls, message: str | None = None) -> Script:
        return cls(status=404, error_message=message)

    @classmethod
    def bad_request(cls, message: str | None = None) -> Script:
        return cls(status=400, error_message=message)

    @classmethod
    def cut(cls, after: int = 2, text: str | None = None) -> Script:
        return cls(text=text, cut_after=after)

    @classmethod
    def without_terminal(cls, text: str | None = None) -> Script:
        return cls(text=text, no_terminal=True)

    @classmethod
    def in_stream_error(
        cls, error_type: str = "overloaded_error", after: int = 1, message: str | None = None
    ) -> Script:
        return cls(stream_error=error_type, stream_error_after=after, error_message=message)

    @classmethod
    def slow(cls, delay: float, text: str | None = None) -> Script:
        return cls(text=text, first_token_delay=delay)

    @classmethod
    def held(cls, gate: threading.Event, text: str | None = None) -> Script:
        return cls(text=text, hold=gate)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Script:
        """A script from JSON (the control endpoint); unknown keys are errors."""
        names = {f.name for f in fields(cls)} - {"hold", "matches"}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown script fields: {sorted(unknown)}")
        return cls(**data)


@dataclass
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    protocol: WireProtocol | None = None
    peer: str = ""  # client address and port: equal for requests sent over the same connection

    @property
    def model(self) -> str:
        return str(self.body.get("model", "")) if isinstance(self.body, dict) else ""

    @property
    def prompt_text(self) -> str:
        """System prompt and every message's text, joined."""
        if not isinstance(self.body, dict):
            return ""
        parts = [_text_of(self.body.get("system"))]
        parts += [_text_of(m.get("content")) for m in self.body.get("messages", []) if isinstance(m, dict)]
        return "\n".join(p for p in parts if p)

    @property
    def last_user_text(self) -> str:
        if not isinstance(self.body, dict):
            return ""
        users = [m for m in self.body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
        return _text_of(users[-1].get("content")) if users else ""

    @property
    def wants_json(self) -> bool:
        if not isinstance(self.body, dict):
            return False
        fmt = self.body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
            return True
        return "JSON" in self.prompt_text

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body,
            "protocol": self.protocol,
            "peer": self.peer,
        }


def _text_of(content: Any) -> str:
    """Text of a message content (a string, or a list of text blocks / parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def default_reply(request: RecordedRequest) -> str:
    """Deterministic text: an echo of the first words of the last user message."""
    words = request.last_user_text.split()[:12]
    return "Fake reply: " + " ".join(words) + "." if words else "Fake reply."


def _split_words(text: str) -> list[str]:
    return re.findall(r"\s*\S+", text) or ([text] if text else [])


def _estimate(text: str) -> int:
    return max(1, (len(text) + 3) // 4) if text else 0



# --- grammar mode ---------------------------------------------------------------------------------
# Like llama.cpp's grammar-constrained sampling: a request carrying `response_format` json_schema, or
# json_object with a `schema` (OpenAI wire), or a forced tool (Anthropic wire) is answered with JSON
# generated from the schema, so it always validates (enums pick a value, numbers stay within their
# bounds, every required property is present). `refuse_json_schema` makes the server answer json_schema
# with a 400, like an old server, and `refuse_object_schema` json_object with a `schema` key (a server
# that validates `response_format` strictly), so a client's fallbacks can be tested.
#
# "llama-cpp-python" mode (`llama_cpp_python = True`, `--llama-cpp-python`): like that server (0.3.x),
# json_schema is refused with an HTTP 500 (a pydantic validation error: "Input should be 'text' or
# 'json_object'"), `{"type": "json_object", "schema": …}` is honoured as a grammar (only schema-valid
# output), and json_object without a schema is answered with `{}` — some JSON object, which is what a
# small model constrained only to "an object" writes at best.

GRAMMAR_REFUSAL = "response_format: json_schema is not supported by this server (fake server)"
OBJECT_SCHEMA_REFUSAL = "response_format: unknown field 'schema' for type json_object (fake server)"
LLAMA_CPP_PYTHON_REFUSAL = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or "
    "'json_object' [type=literal_error, input_value='json_schema', input_type=str] (fake server)")


def schema_instance(schema: Any, rng: random.Random, name: str = "value") -> Any:
    """A value valid against `schema` (the subset structured outputs use), chosen with `rng`."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema:
        return rng.choice(list(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return schema_instance(schema[key][0], rng, name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {key: schema_instance(sub, rng, key) for key, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        low = int(schema.get("minItems", 0))
        high = max(low, min(int(schema.get("maxItems", 3)), 3))
        items = schema.get("items", {"type": "string"})
        return [schema_instance(items, rng, name) for _ in range(rng.randint(low, high))]
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 100)))
    if kind == "number":
        return round(rng.uniform(float(schema.get("minimum", 0)), float(schema.get("maximum", 100))), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return f"Grammar-constrained {name} ({rng.randint(1, 999)})?" if "question" in name else \
        f"Grammar-constrained {name} ({rng.randint(1, 999)})."


def requested_schema(request: RecordedRequest) -> tuple[str, str, dict[str, Any]] | None:
    """(mechanism, name, schema) of a structured request: ("json_schema", …) for an OpenAI
    `response_format` json_schema, ("json_object+schema", …) for json_object carrying a `schema`,
    ("tool", …) for an Anthropic forced tool; None for anything else."""
    body = request.body if isinstance(request.body, dict) else {}
    fmt = body.get("response_format")
    if request.protocol == "openai" and isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        return "json_schema", str(spec.get("name", "answer")), dict(spec.get("schema") or {})
    if (request.protocol == "openai" and isinstance(fmt, dict) and fmt.get("type") == "json_object"
            and isinstance(fmt.get("schema"), dict)):
        return "json_object+schema", "answer", dict(fmt["schema"])
    choice = body.get("tool_choice")
    if request.protocol == "anthropic" and isinstance(choice, dict) and choice.get("type") == "tool":
        for tool in body.get("tools") or []:
            if isinstance(tool, dict) and tool.get("name") == choice.get("name"):
                return "tool", str(tool["name"]), dict(tool.get("input_schema") or {})
    return None


def prompt_schema(request: RecordedRequest) -> tuple[str, str, dict[str, Any]] | None:
    """("prompt", name, schema) when the prompt spells out a JSON schema ("… this JSON schema (name):"
    followed by the schema), as Rostrum does when no structured-output mechanism is available."""
    text = request.prompt_text
    match = re.search(r"JSON schema \(([\w-]+)\):\s*", text)
    if match is None:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(text, match.end())
    except json.JSONDecodeError:
        return None
    return ("prompt", match.group(1), schema) if isinstance(schema, dict) else None


class GrammarMode:
    """The fake server's grammar mode, its refusal switches and its llama-cpp-python mode (mixed into
    `FakeLLMServer`)."""

    grammar: bool = False  # answer structured requests with schema-valid JSON
    refuse_json_schema: bool = False  # answer `response_format` json_schema with a 400, like an old server
    refuse_object_schema: bool = False  # answer json_object with a `schema` key with a 400
    llama_cpp_python: bool = False  # json_schema → 500; json_object+schema → grammar; bare json_object → {}
    _grammar_count: int = 0

    def grammar_refusal(self, request: RecordedRequest) -> tuple[int, dict[str, Any]] | None:
        """(status, body) refusing a structured request a switch says this server refuses (else None)."""
        found = requested_schema(request)
        mechanism = found[0] if found is not None else None

        def error(message: str, etype: str) -> dict[str, Any]:
            return {"error": {"message": message, "type": etype, "param": "response_format", "code": None}}

        if mechanism == "json_schema" and self.llama_cpp_python:
            return 500, error(LLAMA_CPP_PYTHON_REFUSAL, "internal_server_error")
        if mechanism == "json_schema" and self.refuse_json_schema:
            return 400, error(GRAMMAR_REFUSAL, "invalid_request_error")
        if mechanism == "json_object+schema" and self.refuse_object_schema:
            return 400, error(OBJECT_SCHEMA_REFUSAL, "invalid_request_error")
        return None

    def grammar_reply(self, request: RecordedRequest) -> str | None:
        """Schema-valid JSON for a structured request in grammar mode (else None). Varied from call to
        call but reproducible: seeded by the prompt and the request's number.

        A request without a mechanism (`json_object`, or none) whose prompt spells out a JSON schema is
        answered from that schema too: a model that follows what it was shown (JSON mode keeps it to
        JSON, the prompt gives the shape), as the client's fallback expects. Not in llama-cpp-python
        mode: there only a schema sent inside json_object constrains the answer, and a bare json_object
        gets `{}` (the small model's "some object")."""
        if self.llama_cpp_python:
            found = requested_schema(request)
            if found is None:
                fmt = request.body.get("response_format") if isinstance(request.body, dict) else None
                return "{}" if isinstance(fmt, dict) and fmt.get("type") == "json_object" else None
        else:
            found = requested_schema(request) or prompt_schema(request)
            if not self.grammar:
                return None
        if found is None:
            return None
        self._grammar_count += 1
        digest = hashlib.sha256(f"{request.prompt_text}|{self._grammar_count}".encode()).hexdigest()
        return json.dumps(schema_instance(found[2], random.Random(int(digest[:16], 16))))

    @staticmethod
    def forced_tool(request: RecordedRequest) -> str | None:
        """The name of the tool an Anthropic request forces (its answer is a `tool_use` block)."""
        found = requested_schema(request)
        return found[1] if found is not None and found[0] == "tool" else None


class FakeLLMServer(GrammarMode):
    """The fake server, running its own event loop in a background thread."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        usage_in_stream: bool = True,
        reply: str | Responder | None = None,
        json_reply: str | None = None,
        chunk_delay: float = 0.0,
        one_at_a_time: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.usage_in_stream = usage_in_stream
        self.reply = reply
        self.json_reply = json_reply
        self.chunk_delay = chunk_delay
        self._lock = threading.Lock()
        self._scripts: deque[Script] = deque()
        self._requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        # Set from the server's thread: a held script is waiting for its gate; a client left a held
        # stream (its request was abandoned, e.g. on a timeout or a cancel). Tests wait on them.
        self.holding = threading.Event()
        self.client_left = threading.Event()
        self._one_at_a_time_init(one_at_a_time)

    # --- public API -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Root URL (the Anthropic SDK's base_url)."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_url(self) -> str:
        """The OpenAI SDK's base_url."""
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        return self.url

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """Only the chat-completions / messages requests."""
        return [r for r in self.requests if r.protocol is not None]

    @property
    def last_request(self) -> RecordedRequest:
        requests = self.model_requests
        if not requests:
            raise AssertionError("the fake LLM server received no model request")
        return requests[-1]

    @property
    def pending_scripts(self) -> int:
        with self._lock:
            return len(self._scripts)

    def enqueue(self, *scripts: Script) -> None:
        """Queue scripts; each model request consumes one, in order."""
        with self._lock:
            self._scripts.extend(scripts)

    def reset(self) -> None:
        """Forget queued scripts and recorded requests, and clear `holding` and `client_left`."""
        with self._lock:
            self._scripts.clear()
            self._requests.clear()
        self.holding.clear()
        self.client_left.clear()

    def start(self) -> FakeLLMServer:
        """Start serving in a background thread; returns once the port is bound."""
        if self._thread is not None:
            return self
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name="fakellm", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake LLM server did not start")
        if self._startup_error is not None:
            self._thread = None
            raise RuntimeError(f"fake LLM server failed to start: {self._startup_error}")
        return self

    def stop(self) -> None:
        """Stop serving, close every connection and join the thread."""
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None or loop is None or stopping is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(stopping.set)
        thread.join(10)
        self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeLLMServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    def wait_forever(self) -> None:
        """Block until the server stops (used by the command-line entry point)."""
        if self._thread is not None:
            self._thread.join()

    # --- event loop -------------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start()
            self._startup_error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while await self._serve_one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:  # server stopping; end quietly (asyncio logs cancelled handlers)
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    # --- HTTP ---------------------------------------------------------------------------------

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read one request and answer it; False when the connection must close."""
        line = await reader.readline()
        if not line.strip():
            return False
        method, target, _version = line.decode("latin-1").split(maxsplit=2)
        headers: dict[str, str] = {}
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            key, _, value = raw.decode("latin-1").partition(":")
            headers[key.strip().lower()] = value.strip()
        body_bytes = await self._read_body(reader, headers)
        try:
            body: Any = json.loads(body_bytes) if body_bytes else None
        except json.JSONDecodeError:
            body = body_bytes.decode("utf-8", "replace")
        path = target.split("?", 1)[0]
        protocol: WireProtocol | None = None
        if method == "POST" and path.endswith("/chat/completions"):
            protocol = "openai"
        elif method == "POST" and path.endswith("/messages"):
            protocol = "anthropic"
        peer = writer.get_extra_info("peername") or ("", 0)
        request = RecordedRequest(method, path, headers, body, protocol, f"{peer[0]}:{peer[1]}")
        if not path.startswith("/_fake/"):
            with self._lock:
                self._requests.append(request)
        keep = headers.get("connection", "").lower() != "close"
        if protocol is not None:
            return await self._model_response(request, reader, writer) and keep
        await self._other_response(request, writer)
        return keep

    @staticmethod
    async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            data = b""
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    await reader.readline()
                    return data
                data += await reader.readexactly(size)
                await reader.readline()
        length = int(headers.get("content-length", "0") or 0)
        return await reader.readexactly(length) if length else b""

    async def _send(
        self, writer: asyncio.StreamWriter, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        head = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            "content-type: application/json",
            f"content-length: {len(data)}",
        ]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()

    async def _other_response(self, request: RecordedRequest, writer: asyncio.StreamWriter) -> None:
        path = request.path
        if path == "/_fake/scripts" and request.method == "POST":
            items = request.body if isinstance(request.body, list) else [request.body]
            try:
                self.enqueue(*(Script.from_json(item) for item in items))
            except (TypeError, ValueError) as exc:
                await self._send(writer, 400, {"error": str(exc)})
                return
            await self._send(writer, 200, {"queued": self.pending_scripts})
        elif path == "/_fake/requests":
            await self._send(writer, 200, [r.to_dict() for r in self.requests])
        elif path == "/_fake/reset" and request.method == "POST":
            self.reset()
            await self._send(writer, 200, {"ok": True})
        elif path.endswith("/models") and request.method == "GET":
            await self._send(
                writer, 200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
            )
        elif path == "/health":
            await self._send(writer, 200, {"ok": True})
        else:
            await self._send(writer, 404, {"error": {"message": f"no route {request.method} {path}"}})

    # --- model responses ----------------------------------------------------------------------

    def _next_script(self, request: RecordedRequest) -> Script:
        with self._lock:
            for script in self._scripts:
                if script.matches is None or script.matches(request):
                    self._scripts.remove(script)
                    return script
            return Script()

    def _reply_text(self, script: Script, request: RecordedRequest) -> str:
        if script.text is not None:
            return script.text
        constrained = self.grammar_reply(request)
        if constrained is not None:
            return constrained
        if request.wants_json:
            return (
                self.json_reply
                if self.json_reply is not None
                else json.dumps({"reply": default_reply(request)})
            )
        if isinstance(self.reply, str):
            return self.reply
        return (self.reply or default_reply)(request)

    async def _model_response(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        refusal = self.grammar_refusal(request)
        if refusal is not None:  # refused before any script is taken, like a server that cannot
            await self._send(writer, *refusal)
            return True
        script = self._next_script(request)
        protocol = request.protocol or "openai"
        request_id = script.request_id or f"req_fake_{next(self._ids):04d}"
        headers = {"x-request-id" if protocol == "openai" else "request-id": request_id, **script.headers}
        if script.retry_after is not None:
            headers["retry-after"] = (
                f"{script.retry_after:g}"
                if isinstance(script.retry_after, float)
                else str(script.retry_after)
            )
        if script.retry_after_ms is not None:
            headers["retry-after-ms"] = f"{script.retry_after_ms:g}"
        if script.status != 200:
            await self._send(
                writer, script.status, self._error_body(protocol, script, request, request_id), headers
            )
            return True
        text = self._reply_text(script, request)
        chunks = script.chunks if script.chunks is not None else _split_words(text)
        text = "".join(chunks)
        usage = {
            "input": script.input_tokens
            if script.input_tokens is not None
            else _estimate(request.prompt_text),
            "output": script.output_tokens if script.output_tokens is not None else max(1, len(chunks)),
            "cached": script.cached_tokens,
        }
        body = request.body if isinstance(request.body, dict) else {}
        if not body.get("stream"):
            await self._send(writer, 200, self._full_body(protocol, request, text, usage, script), headers)
            return True
        head = [
            "HTTP/1.1 200 OK",
            "content-type: text/event-stream",
            "cache-control: no-cache",
            "transfer-encoding: chunked",
        ] + [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        stream = self._stream_openai if protocol == "openai" else self._stream_anthropic
        self._one_at_a_time_enter(writer, protocol)
        try:
            return await stream(reader, writer, request, script, chunks, usage)
        except ConnectionError:
            # A client that went before a held first token is a client that left the hold, even when the
            # head or the role chunk written before the hold began is what found the connection gone.
            if script.hold is not None and not script.hold.is_set():
                self.client_left.set()
            raise
        finally:
            self._one_at_a_time_leave(writer)

    def _error_body(self, protocol: WireProtocol, script: Script, request: RecordedRequest, rid: str) -> Any:
        if protocol == "openai":
            etype, code, message = _OPENAI_ERRORS.get(
                script.status, ("api_error", None, "Error (fake server).")
            )
            return {
                "error": {
                    "message": (script.error_message or message).format(model=request.model),
                    "type": script.error_type or etype,
                    "param": None,
                    "code": script.error_code or code,
                }
            }
        etype, message = _ANTHROPIC_ERRORS.get(script.status, ("api_error", "Error (fake server)."))
        return {
            "type": "error",
            "request_id": rid,
            "error": {
                "type": script.error_type or etype,
                "message": (script.error_message or message).format(model=request.model),
            },
        }

    @staticmethod
    def _full_body(
        protocol: WireProtocol, request: RecordedRequest, text: str, usage: dict[str, int], script: Script
    ) -> dict[str, Any]:
        if protocol == "openai":
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 1700000000,
                "model": request.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": script.finish_reason or "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": usage["input"],
                    "completion_tokens": usage["output"],
                    "total_tokens": usage["input"] + usage["output"],
                },
            }
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": script.finish_reason or "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage["input"],
                "output_tokens": usage["output"],
                "cache_read_input_tokens": usage["cached"],
            },
        }

    @staticmethod
    async def _chunk(writer: asyncio.StreamWriter, data: str) -> None:
        raw = data.encode()
        writer.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        await writer.drain()

    @staticmethod
    async def _end(writer: asyncio.StreamWriter) -> None:
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, gate: threading.Event) -> bool:
        """Wait for a held script's gate; False (and `client_left` set) if the client goes first."""
        if gate.is_set():
            return True
        self.holding.set()
        while not gate.is_set():
            if reader.at_eof() or writer.transport.is_closing():
                self.client_left.set()
                return False
            await asyncio.sleep(0.005)  # the gate is a thread's Event: nothing to await
        return True

    async def _pieces(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        script: Script,
        chunks: Sequence[str],
        piece: Callable[[str], str],
        error: Callable[[str, str], str],
    ) -> bool | None:
        """Send the text chunks (as `piece` events) with the script's waits and faults.

        Returns False when the connection was cut (keep-alive ends), True when an `error` event
        ended the stream, None when every chunk went out and the terminal events are due.
        """
        for index in range(len(chunks) + 1):
            if self._one_at_a_time_cut(writer):
                return await self._one_at_a_time_end(writer)
            if index == 0:
                if script.first_token_delay:
                    await asyncio.sleep(script.first_token_delay)
                if script.hold is not None and not await self._hold(reader, writer, script.hold):
                    return False
            elif script.chunk_delay or self.chunk_delay:
                await asyncio.sleep(script.chunk_delay or self.chunk_delay)
            if script.cut_after is not None and index >= script.cut_after:
                writer.close()  # no terminating chunk: the client sees an incomplete body
                return False
            if script.stream_error is not None and index >= script.stream_error_after:
                etype = script.stream_error
                message = script.error_message or _STREAM_ERROR_MESSAGES.get(etype, f"Stream error: {etype}")
                await self._chunk(writer, error(etype, message))
                await self._end(writer)
                return True
            if index < len(chunks):
                await self._chunk(writer, piece(chunks[index]))
        return None

    async def _stream_openai(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: RecordedRequest,
        script: Script,
        chunks: Sequence[str],
        usage: dict[str, int],
    ) -> bool:
        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": request.model,
        }

        def data(obj: Any) -> str:
            return f"data: {json.dumps(obj)}\n\n"

        def choice(delta: dict[str, Any], finish: str | None = None) -> str:
            return data({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        await self._chunk(writer, choice({"role": "assistant", "content": ""}))
        ended = await self._pieces(
            reader,
            writer,
            script,
            chunks,
            lambda text: choice({"content": text}),
            lambda etype, message: data({"error": {"message": message, "type": etype, "code": None}}),
        )
        if ended is not None:
            return ended
        if script.no_terminal:
            await self._end(writer)
            return True
        finish = None if script.no_finish_reason else (script.finish_reason or "stop")
        await self._chunk(writer, choice({}, finish))
        options = request.body.get("stream_options") or {}
        wants_usage = self.usage_in_stream and bool(options.get("include_usage"))
        if script.usage if script.usage is not None else wants_usage:
            await self._chunk(
                writer,
                data(
                    {
                        **base,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": usage["input"],
                            "completion_tokens": usage["output"],
                            "total_tokens": usage["input"] + usage["output"],
                            "prompt_tokens_details": {"cached_tokens": usage["cached"]},
                        },
                    }
                ),
            )
        await self._chunk(writer, "data: [DONE]\n\n")
        await self._end(writer)
        return True

    async def _stream_anthropic(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: RecordedRequest,
        script: Script,
        chunks: Sequence[str],
        usage: dict[str, int],
    ) -> bool:
        def event(name: str, obj: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps({'type': name, **obj})}\n\n"

        start_usage = {
            "input_tokens": usage["input"],
            "output_tokens": 1,
            "cache_read_input_tokens": usage["cached"],
            "cache_creation_input_tokens": 0,
        }
        await self._chunk(
            writer,
            event(
                "message_start",
                {
                    "message": {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": request.model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": start_usage,
                    }
                },
            ),
        )
        tool = self.forced_tool(request)
        block = ({"type": "tool_use", "id": "toolu_fake", "name": tool, "input": {}} if tool
                 else {"type": "text", "text": ""})
        await self._chunk(writer, event("content_block_start", {"index": 0, "content_block": block}))
        await self._chunk(writer, event("ping", {}))
        ended = await self._pieces(
            reader,
            writer,
            script,
            chunks,
            lambda text: event("content_block_delta", {"index": 0, "delta": (
                {"type": "input_json_delta", "partial_json": text} if tool else {"type": "text_delta", "text": text})}),
            lambda etype, message: event("error", {"error": {"type": etype, "message": message}}),
        )
        if ended is not None:
            return ended
        await self._chunk(writer, event("content_block_stop", {"index": 0}))
        if script.no_terminal:
            await self._end(writer)
            return True
        stop = None if script.no_finish_reason else (script.finish_reason or ("tool_use" if tool else "end_turn"))
        await self._chunk(
            writer,
            event(
                "message_delta",
                {
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output"]},
                },
            ),
        )
        await self._chunk(writer, event("message_stop", {}))
        await self._end(writer)
        return True

    # --- "one at a time" mode -------------------------------------------------------------------
    # Like llama-cpp-python's server: it generates for one request at a time, and a new request
    # interrupts the stream in progress — which ends at once, without a finish reason or usage (OpenAI:
    # `data: [DONE]` right away; Anthropic: no `message_delta` / `message_stop`). Clients see a cut
    # stream. `interrupted` counts the streams cut so; `most_at_once` is the most streams that were
    # in progress together (1 when the clients queue properly).

    def _one_at_a_time_init(self, enabled: bool) -> None:
        self.one_at_a_time = enabled
        self.interrupted = 0
        self.most_at_once = 0
        self._streaming: dict[asyncio.StreamWriter, WireProtocol] = {}
        self._cut_streams: set[asyncio.StreamWriter] = set()

    def _one_at_a_time_enter(self, writer: asyncio.StreamWriter, protocol: WireProtocol) -> None:
        """A stream starts: in one-at-a-time mode, every stream in progress is to be cut."""
        if self.one_at_a_time:
            self._cut_streams.update(self._streaming)
        self._streaming[writer] = protocol
        self.most_at_once = max(self.most_at_once, len(self._streaming))

    def _one_at_a_time_leave(self, writer: asyncio.StreamWriter) -> None:
        self._streaming.pop(writer, None)
        self._cut_streams.discard(writer)

    def _one_at_a_time_cut(self, writer: asyncio.StreamWriter) -> bool:
        """Whether a newer request has interrupted this stream."""
        return writer in self._cut_streams

    async def _one_at_a_time_end(self, writer: asyncio.StreamWriter) -> bool:
        """End an interrupted stream the way llama-cpp-python does; the connection stays usable."""
        protocol = self._streaming.get(writer, "openai")
        self._cut_streams.discard(writer)
        with self._lock:
            self.interrupted += 1
        if protocol == "openai":
            await self._chunk(writer, "data: [DONE]\n\n")
        await self._end(writer)
        return True


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tests.fakellm --port N`: serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m tests.fakellm", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    parser.add_argument("--no-usage", action="store_true", help="never send usage (like LM Studio)")
    parser.add_argument("--reply", default=None, help="fixed reply text instead of the echo")
    parser.add_argument("--json-reply", default=None, help="reply text for requests asking for JSON")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between text chunks")
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="a new request interrupts the stream in progress (like llama-cpp-python)")
    parser.add_argument("--grammar", action="store_true", help="answer json_schema / forced-tool requests "
                        "with schema-valid JSON (like llama.cpp)")
    parser.add_argument("--refuse-json-schema", action="store_true", help="answer json_schema with a 400")
    parser.add_argument("--refuse-object-schema", action="store_true",
                        help="answer json_object with a `schema` key with a 400")
    parser.add_argument("--llama-cpp-python", action="store_true", help="like llama-cpp-python's server: "
                        "json_schema → HTTP 500, json_object+schema → schema-valid JSON, bare json_object → {}")
    args = parser.parse_args(argv)
    server = FakeLLMServer(
        args.host,
        args.port,
        usage_in_stream=not args.no_usage,
        reply=args.reply,
        json_reply=args.json_reply,
        chunk_delay=args.chunk_delay,
        one_at_a_time=args.one_at_a_time,
    )
    server.grammar, server.refuse_json_schema = args.grammar, args.refuse_json_schema
    server.refuse_object_schema, server.llama_cpp_python = args.refuse_object_schema, args.llama_cpp_python
    server.start()
    print(f"FAKELLM_URL={server.url}", flush=True)
    try:
        server.wait_forever()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
