"""The kill -9 soak: debates run by the real process (`python -m webapp debate …`), SIGKILLed at random
points mid-debate and resumed (`python -m webapp resume ID`) until they end, then checked against the
same debates run without interruption.

    .venv/bin/python -m bench.soak --store sqlite --debates 50 --kills 30
    .venv/bin/python -m bench.soak --store postgresql --db postgresql://user@127.0.0.1:5432/db --debates 50 --kills 30

(or `make soak`, SQLite). The PostgreSQL database is one you name, as for `bench/postgres.py`; it may
hold other debates (the soak only reads its own). Each debate is a demo debate of its own topic, format
and seed, given to the CLI as a `--config` file. The same config is first run once, uninterrupted and
at full speed, into a scratch SQLite file: that is the reference. Then the soak runs the debates against
the store under test at a paced demo speed (`--speed` tokens per second, so kills land mid-turn),
`--parallel` processes at a time. The kills are dealt out to random debates (a debate may be killed
more than once); each killed process is killed after a random number of streamed words of what it had
left to say, or, now and then, as soon as it reaches judging. After each kill the stored turns are
noted, and the debate is resumed by a new process.

A debate passes when it ended `completed`; its log is numbered 1..n with no gap; no turn key appears
twice; every turn stored before each kill is still there, byte for byte, at the same place; it holds
one verdict; and its config, turns (speaker, phase, text, usage, …) and verdict equal the reference's.
The summary goes through `bench/run.py`'s `report`; the exit code is 1 when any debate differs, any
kill was not delivered, or any process failed.

`tests/integration/test_soak.py` runs the same code with small numbers on both stores.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.models import DebateEvent, EventKind
from webapp.store.protocol import EventStore, is_postgres_url, open_store, redacted

ROOT = Path(__file__).resolve().parents[1]
TOPICS = (
    "Should cities ban private cars from their centres?",
    "Is nuclear power the best path to a low-carbon grid?",
    "Should voting be compulsory?",
    "<b>Bold</b> & <script>alert('x')</script>: should HTML be allowed in topics?",
    "Should homework be abolished in primary schools?",
    "Is remote work better for productivity than the office?",
    "Should public transport be free at the point of use?",
)
# Formats with sequential turns, parallel turns (structured), cross-examination and hidden preparation
# turns (classic); small round counts keep a debate to a few seconds at the soak's pace.
FORMATS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("classic", {}),
    ("oxford", {"rounds": 2}),
    ("structured", {}),
    ("lincoln-douglas", {}),
)
# The fields of a turn that make up the transcript: not its clock times or which attempt it was.
TURN_FIELDS = ("key", "phase", "round", "speaker", "act", "index", "text", "visible", "model", "provider",
               "finish_reason", "notes", "usage", "cost_usd")
MAX_KILLS_PER_DEBATE = 3
JUDGING_SHARE = 8  # about one kill in this many lands at judging rather than mid-turn
ID_LINE = re.compile(r"^(?:Debate|Resuming) ([0-9a-f]{12})\b", re.M)
# Lines the terminal view prints around the turns' text: not words of a turn.
FRAME_LINE = re.compile(r"^(?:Debate [0-9a-f]|Topic: |Participants: |Resuming |Continuing |It is running|===)")
SPEAKER_LINE = re.compile(r"^\S.* \([^()]*, [^()]*:[^()]*\):$")


class SoakError(RuntimeError):
    """The soak could not be run as asked (a reference failed, the database is unusable)."""


@dataclass
class Kill:
    """One SIGKILL: which debate, where, and what was stored when it landed."""

    debate: int
    at_judging: bool
    mid_turn: bool
    turns_stored: int


@dataclass
class DebateResult:
    """One soak debate from start to end: its processes, its kills, and what differs from the reference."""

    index: int
    debate_id: str = ""
    processes: int = 0
    kills: list[Kill] = field(default_factory=list)
    turns: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass
class SoakResult:
    """The whole soak: per-debate results, and how long it took on how loaded a machine."""

    debates: list[DebateResult]
    kills_asked: int
    wall_s: float
    load_before: str
    load_after: str

    @property
    def kills(self) -> list[Kill]:
        return [k for d in self.debates for k in d.kills]

    @property
    def problems(self) -> list[str]:
        return [f"debate #{d.index} ({d.debate_id or 'no id'}): {p}" for d in self.debates for p in d.problems]

    @property
    def ok(self) -> bool:
        return not self.problems and len(self.kills) == self.kills_asked

    def figures(self) -> dict[str, float]:
        """The figures `bench/run.py`'s `report` prints (and checks: `TARGETS`)."""
        kills = self.kills
        return {
            "debates": len(self.debates),
            "processes": sum(d.processes for d in self.debates),
            "kills": len(kills),
            "kills_mid_turn": sum(k.mid_turn for k in kills),
            "kills_at_judging": sum(k.at_judging for k in kills),
            "debates_killed": sum(bool(d.kills) for d in self.debates),
            "turns_checked": sum(d.turns for d in self.debates),
            "differences": len(self.problems),
            "wall_s": self.wall_s,
            "load_1m_before": float(self.load_before.split()[0]),
            "load_1m_after": float(self.load_after.split()[0]),
        }


def debate_configs(count: int) -> list[dict[str, Any]]:
    """`count` demo debate configs, each with its own topic, format and seed."""
    configs = []
    for i in range(count):
        name, extra = FORMATS[i % len(FORMATS)]
        configs.append({"topic": TOPICS[i % len(TOPICS)], "format": name, "seed": 1000 + i, **extra})
    return configs


def deal_kills(debates: int, kills: int, rng: random.Random) -> list[int]:
    """How many times each debate is killed: `kills` dealt to random debates, at most
    `MAX_KILLS_PER_DEBATE` each."""
    if kills > debates * MAX_KILLS_PER_DEBATE:
        raise SoakError(f"{kills} kills over {debates} debates: at most {MAX_KILLS_PER_DEBATE} per debate")
    dealt = [0] * debates
    for _ in range(kills):
        dealt[rng.choice([i for i, n in enumerate(dealt) if n < MAX_KILLS_PER_DEBATE])] += 1
    return dealt


def child_env(speed: float, db: str | Path) -> dict[str, str]:
    """The environment of a CLI process: none of this shell's Rostrum settings (no Redis, no workers,
    no injected failures), the demo at `speed`, and the database (in the environment, not on the
    command line where `ps` shows a password)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROSTRUM_") and k != "PYTEST_CURRENT_TEST"}
    env["ROSTRUM_DEMO_SPEED"] = f"{speed:g}"
    env["ROSTRUM_DB"] = str(db)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class StreamReader:
    """Counts the words of turn text a CLI process has printed so far (the frame lines — headers,
    speaker lines, the resume banner — are not counted), and keeps the text of the turn it printed last."""

    def __init__(self) -> None:
        self.text = ""
        self.words = 0
        self.judging = False
        self.last_turn = ""  # the text after the last speaker line
        self._line = ""

    def feed(self, chunk: str) -> None:
        self.text += chunk
        self._line += chunk
        *complete, self._line = self._line.split("\n")
        for line in complete:
            if line.startswith("=== Judging"):
                self.judging = True
            if SPEAKER_LINE.match(line) or FRAME_LINE.match(line):
                self.last_turn = ""
                continue
            self.words += len(line.split())
            self.last_turn += line + "\n"

    @property
    def words_so_far(self) -> int:
        """Counted words, including those of the line still being printed."""
        partial = self._line
        if FRAME_LINE.match(partial) or partial.endswith("):"):
            return self.words
        return self.words + len(partial.split())

    @property
    def turn_so_far(self) -> str:
        partial = "" if FRAME_LINE.match(self._line) else self._line
        return " ".join((self.last_turn + partial).split())


async def run_cli(args: Sequence[str], env: dict[str, str], log: Path, kill_after_words: int | None = None,
                  kill_at_judging: bool = False) -> tuple[int | None, StreamReader]:
    """Run `python -m webapp ARGS`; SIGKILL it once it has printed `kill_after_words` words of turn text,
    or as soon as it reaches judging. Returns its exit code (None when it was killed) and its output."""
    with log.open("ab") as errors:
        errors.write(f"$ python -m webapp {' '.join(args)}\n".encode())
        errors.flush()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webapp", *args, cwd=ROOT, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=errors,
        )
        reader = StreamReader()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a chunk may end mid-character
        assert proc.stdout is not None
        killed = False
        try:
            while chunk := await proc.stdout.read(4096):
                reader.feed(decoder.decode(chunk))
                due = (kill_after_words is not None and reader.words_so_far >= kill_after_words) or (
                    kill_at_judging and reader.judging)
                if due:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
                    break
            code = await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            errors.write(f"--- its output{' (killed)' if killed else ''}:\n{reader.text}\n".encode())
    return (None if killed and code == -signal.SIGKILL else code), reader


def debate_id_of(reader: StreamReader) -> str | None:
    match = ID_LINE.search(reader.text)
    return match.group(1) if match else None


def transcript(state: DebateState) -> dict[str, Any]:
    """What must be equal to the uninterrupted run: the config, each turn's words and the verdict."""
    config = state.config.model_dump(mode="json")
    return {
        "config": config,
        "turns": [{name: getattr(t, name) for name in TURN_FIELDS} for t in state.turns],
        "verdict": state.verdict.model_dump(mode="json") if state.verdict else None,
    }


def turn_events(events: list[DebateEvent]) -> list[dict[str, Any]]:
    """The turns of a log, as stored (each TURN event's `turn` object)."""
    return [e.data["turn"] for e in events if e.kind is EventKind.TURN]


async def reference_run(index: int, config_file: Path, db: Path, work: Path) -> DebateState:
    """One debate's reference: its config run once, uninterrupted, at full speed."""
    code, reader = await run_cli(["debate", "--config", str(config_file)], child_env(0, db),
                                 work / f"reference-{index:03d}.log")
    debate_id = debate_id_of(reader)
    if code != 0 or debate_id is None:
        raise SoakError(f"the reference run of debate #{index} ended with exit code {code}: "
                        f"{reader.text[-500:]} (see {work})")
    store = await open_store(db)
    try:
        return DebateState.from_events(await store.events(debate_id))
    finally:
        await store.close()


def _normal(text: str) -> str:
    return " ".join(text.split())


def _mid_turn(printed: str, stored: list[dict[str, Any]], reference: DebateState) -> bool:
    """Whether a kill landed while a turn was being written: the process had printed words of a turn
    that was not stored, or the turns being written were a parallel phase's (printed only once stored)."""
    if printed and all(_normal(t["text"]) != printed for t in stored):
        return True
    keys = {t["key"] for t in stored}
    to_come = [t for t in reference.turns if t.key not in keys]
    return bool(to_come) and reference.format.phase(to_come[0].phase).parallel


async def soak_debate(index: int, config_file: Path, kills: int, reference: DebateState, store: EventStore,
                      db: str | Path, speed: float, work: Path, rng: random.Random) -> DebateResult:
    """Run one debate, killing its process `kills` times and resuming it each time, then check it."""
    result = DebateResult(index)
    env = child_env(speed, db)
    log = work / f"debate-{index:03d}.log"
    reference_words = {t.key: len(t.text.split()) for t in reference.turns if t.visible}
    snapshots: list[list[dict[str, Any]]] = []
    args = ["debate", "--config", str(config_file)]
    stored: list[dict[str, Any]] = []
    while True:
        left = sum(n for key, n in reference_words.items() if key not in {t["key"] for t in stored})
        kill_after: int | None = None
        at_judging = False
        if len(result.kills) < kills:
            point = rng.randint(1, left + left // JUDGING_SHARE + 1)
            at_judging = point >= left
            kill_after = None if at_judging else point
            if left == 0:  # every turn is stored: it resumes straight into judging, with no header
                kill_after = 0
        code, reader = await run_cli(args, env, log, kill_after, at_judging)
        result.processes += 1
        result.debate_id = result.debate_id or (debate_id_of(reader) or "")
        if not result.debate_id:
            result.problems.append(f"no debate id in the output (exit code {code}; see {log})")
            return result
        if code is not None:  # the process ended by itself: this was the last run
            if kill_after is not None or at_judging:
                result.problems.append(f"a kill was not delivered: the process ended first (exit code {code})")
            if code != 0:
                result.problems.append(f"the last process ended with exit code {code} (see {log})")
            break
        stored = turn_events(await store.events(result.debate_id))
        snapshots.append(stored)
        mid_turn = not at_judging and _mid_turn(reader.turn_so_far, stored, reference)
        result.kills.append(Kill(index, at_judging, mid_turn, len(stored)))
        args = ["resume", result.debate_id]
    await check(result, await store.events(result.debate_id), snapshots, reference)
    return result


async def check(result: DebateResult, events: list[DebateEvent], snapshots: list[list[dict[str, Any]]],
                reference: DebateState) -> None:
    """Add to `result.problems` each way the stored debate differs from an uninterrupted run."""
    problems = result.problems
    if [e.seq for e in events] != list(range(1, len(events) + 1)):
        problems.append("its log is not numbered 1..n")
    turns = turn_events(events)
    keys = [t["key"] for t in turns]
    if len(keys) != len(set(keys)):
        problems.append(f"a turn was stored twice: {sorted(k for k in set(keys) if keys.count(k) > 1)}")
    for n, before in enumerate(snapshots, 1):
        if turns[: len(before)] != before:
            problems.append(f"the turns stored before kill {n} changed or went missing")
    verdicts = sum(e.kind is EventKind.VERDICT for e in events)
    if verdicts != 1:
        problems.append(f"{verdicts} verdicts stored")
    state = DebateState.from_events(events)
    result.turns = len(state.turns)
    if state.status is not State.COMPLETED:
        problems.append(f"it ended {state.status.value}, not completed")
    got, want = transcript(state), transcript(reference)
    for part in ("config", "verdict"):
        if got[part] != want[part]:
            problems.append(f"its {part} differs from the uninterrupted run's")
    # Turns of a parallel phase are stored in the order they finish, which depends on timing: the
    # transcript is compared turn by turn, by key (phase, round, speaker, index).
    mine, theirs = {t["key"]: t for t in got["turns"]}, {t["key"]: t for t in want["turns"]}
    if mine.keys() != theirs.keys():
        problems.append(f"turns missing: {sorted(theirs.keys() - mine.keys())}; "
                        f"turns the uninterrupted run does not have: {sorted(mine.keys() - theirs.keys())}")
    for key in sorted(mine.keys() & theirs.keys()):
        if mine[key] != theirs[key]:
            fields = [name for name in TURN_FIELDS if mine[key][name] != theirs[key][name]]
            problems.append(f"turn {key} differs from the uninterrupted run's ({', '.join(fields)})")


async def soak(db: str | Path, work: Path, debates: int = 50, kills: int = 30, speed: float = 400.0,
               parallel: int = 3, seed: int = 1) -> SoakResult:
    """Run the soak against the store `db` (a SQLite path or a `postgresql://` URL), with scratch
    files (configs, references, process logs) in `work`."""
    rng = random.Random(seed)
    dealt = deal_kills(debates, kills, rng)
    configs = debate_configs(debates)
    files = []
    for i, config in enumerate(configs):
        path = work / f"config-{i:03d}.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        files.append(path)
    slots = asyncio.Semaphore(parallel)

    async def reference(i: int) -> DebateState:
        async with slots:
            return await reference_run(i, files[i], work / "reference.sqlite3", work)

    # The scratch reference database is made before the processes race to create it.
    await (await open_store(work / "reference.sqlite3")).close()
    references = await asyncio.gather(*(reference(i) for i in range(debates)))

    load_before = Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").exists() else "0"
    started = time.perf_counter()
    store = await open_store(db)  # made (and migrated) here, before the CLI processes open it
    try:
        async def one(i: int) -> DebateResult:
            async with slots:
                return await soak_debate(i, files[i], dealt[i], references[i], store, db, speed, work,
                                         random.Random(f"{seed}/{i}"))

        results = await asyncio.gather(*(one(i) for i in range(debates)))
    finally:
        await store.close()
    wall = time.perf_counter() - started
    load_after = Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").exists() else "0"
    return SoakResult(list(results), kills, wall, load_before, load_after)


TARGETS = {"differences": ("<", 0.5)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--db", help="the PostgreSQL URL (required for --store postgresql); for SQLite a file "
                                     "path (default: a new file in the scratch directory)")
    parser.add_argument("--debates", type=int, default=50)
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--speed", type=float, default=400.0, help="demo tokens per second (default 400)")
    parser.add_argument("--parallel", type=int, default=3, help="CLI processes at a time (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="picks the kills and their points")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, references)")
    args = parser.parse_args(argv)
    if args.store == "postgresql" and not (args.db and is_postgres_url(args.db)):
        parser.error("--store postgresql needs --db postgresql://… (an existing database, as for bench/postgres.py)")
    if args.store == "sqlite" and args.db and is_postgres_url(args.db):
        parser.error("--store sqlite takes a file path as --db")

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import report  # type: ignore[import-not-found]  # bench/run.py, as bench/postgres.py uses it

    work = Path(tempfile.mkdtemp(prefix="rostrum-soak-"))
    db = args.db or work / "soak.sqlite3"
    print(f"Kill -9 soak: {args.debates} debates, {args.kills} kills, {args.store} store at {redacted(db)}, "
          f"demo at {args.speed:g} tokens/s, {args.parallel} at a time; scratch files in {work}")
    result = asyncio.run(soak(db, work, args.debates, args.kills, args.speed, args.parallel, args.seed))
    for problem in result.problems:
        print(f"DIFFERENCE {problem}")
    if len(result.kills) != args.kills:
        print(f"only {len(result.kills)} of {args.kills} kills were delivered")
    print(f"load average before: {result.load_before}; after: {result.load_after}")
    code = report(result.figures(), TARGETS)
    if result.ok and not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if result.ok and code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
