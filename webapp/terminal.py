"""Terminal output for the CLI: a live view of a debate as it happens, the verdict and cost tables,
and the clarification prompt. Pure presentation: it reads engine state and live messages only.

Everything written to the terminal goes through `TerminalOutput`, which removes control characters
(ESC sequences, BEL, NUL, bidi overrides; newlines and tabs are kept): model output and user input
can neither recolour, retitle or clear the terminal nor reorder what it shows. Answers are read with
`LineReader`, which waits without blocking the event loop, so Ctrl-C still works while it waits.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Sequence
from typing import Any, TextIO, cast

from webapp.engine.api import (
    CostLimit,
    CostWarning,
    RetryNote,
    RoundDecisionPayload,
    SummaryPayload,
    TransitionPayload,
    TurnPayload,
)
from webapp.engine.panel import panel_decision
from webapp.engine.public import (
    DebateSession,
    DebateState,
    LiveChunk,
    LiveEvent,
    LiveMessage,
    LiveTurnAborted,
    LiveTurnStarted,
    State,
)
from webapp.hygiene import strip_controls
from webapp.store.accounts import UserRow


class TerminalOutput:
    """A text stream that removes control characters from everything written through it; anything
    else is the stream underneath. `raw` is that stream, for output that must stay exact (JSON)."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(strip_controls(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding…
        return getattr(self.raw, name)


def terminal_output(out: TextIO) -> TextIO:
    """`out` filtered for a terminal (unchanged if it already is)."""
    return out if isinstance(out, TerminalOutput) else cast(TextIO, TerminalOutput(out))


def exact_output(out: TextIO) -> TextIO:
    """The stream under a `TerminalOutput`, for exact output such as JSON."""
    return out.raw if isinstance(out, TerminalOutput) else out


class TerminalView:
    """Prints a debate as it happens: phase headers, speakers, streamed text, warnings."""

    def __init__(self, session: DebateSession, out: TextIO) -> None:
        self.session = session
        self.out = terminal_output(out)
        self.phase_shown: tuple[str, int] | None = None
        self.streaming: str | None = None
        self.printed: set[str] = set(session.state.turn_keys)

    def _name(self, pid: str) -> str:
        try:
            p = self.session.state.config.participant(pid)
        except KeyError:
            return pid
        return f"{p.name} ({p.position}, {p.provider}:{p.model})"

    def _header(self, phase_id: str, round_no: int) -> None:
        if self.phase_shown == (phase_id, round_no):
            return
        self.phase_shown = (phase_id, round_no)
        state = self.session.state
        phase = state.format.phase(phase_id)
        progress = f" — Round {round_no} of {state.total_rounds}" if phase.scope == "round" else ""
        self.end_stream()
        self.out.write(f"\n=== {phase.title}{progress} ===\n")

    def end_stream(self) -> None:
        """Finish the line of a turn being streamed, if any (before printing anything else)."""
        if self.streaming is not None:
            self.out.write("\n")
            self.streaming = None

    def _parallel(self, phase_id: str) -> bool:
        return self.session.state.format.phase(phase_id).parallel

    def __call__(self, message: LiveMessage) -> None:
        out = self.out
        if isinstance(message, LiveTurnStarted):
            if message.queued or self._parallel(message.phase):  # announced again when it goes out
                return
            self._header(message.phase, message.round)
            self.end_stream()
            retry = f" [attempt {message.attempt}]" if message.attempt > 1 else ""
            out.write(f"\n{self._name(message.speaker)}{retry}:\n")
            self.streaming = message.key
        elif isinstance(message, LiveChunk):
            if self.streaming == message.key:
                out.write(message.text)
        elif isinstance(message, LiveTurnAborted):
            if self.streaming == message.key:
                out.write(f"\n  [cut off: {message.reason}]\n")
                self.streaming = None
        elif isinstance(message, LiveEvent):
            self._event(message)
        out.flush()

    def _event(self, message: LiveEvent) -> None:
        payload, out = message.event.payload, self.out
        if isinstance(payload, TurnPayload):
            turn = payload.turn
            if turn.key in self.printed:
                return
            self.printed.add(turn.key)
            if self.streaming == turn.key:
                self.end_stream()
            elif turn.visible:
                self._header(turn.phase, turn.round)
                out.write(f"\n{self._name(turn.speaker)}:\n{turn.text}\n")
            for note in turn.notes:
                out.write(f"  [{note}]\n")
        elif isinstance(payload, CostWarning | CostLimit):
            self.end_stream()
            out.write(f"\n! {payload.message}\n")
        elif isinstance(payload, RetryNote):
            err = payload.error
            out.write(f"\n  [retrying after: {err.provider}: {err.message}; waiting {payload.wait_s} s]\n")
        elif isinstance(payload, RoundDecisionPayload):
            out.write(f"\n  [judge after round {payload.round}: {payload.reason}]\n")
        elif isinstance(payload, TransitionPayload) and payload.to is State.JUDGING:
            self.end_stream()
            out.write("\n=== Judging ===\n")
        elif isinstance(payload, SummaryPayload):
            out.write(f"\n  [context summarised for {payload.participant}]\n")


def print_verdict(state: DebateState, out: TextIO) -> None:
    out = terminal_output(out)
    verdict = state.verdict
    if verdict is None:
        return
    names = {p.id: p.name for p in state.config.participants}
    out.write("\n=== Verdict ===\n")
    if not verdict.available:
        out.write(f"Verdict unavailable. {verdict.reasoning}\n")
        if verdict.raw_text:
            out.write(f"Raw judge output:\n{verdict.raw_text}\n")
        return
    decision = panel_decision(verdict)
    winner = names.get(decision.winner or "", "tie") if decision.winner else "tie"
    out.write(f"Winner: {winner}" + (f" ({decision.words})" if decision.judges >= 2 else "") + "\n")
    for pid, score in sorted(verdict.scores.items(), key=lambda kv: -kv[1]):
        out.write(f"  {names.get(pid, pid):<24} {score:>5.1f}/100\n")
    for criterion, per in verdict.criteria.items():
        cells = ", ".join(f"{names.get(pid, pid)} {cs.score:g}" for pid, cs in per.items())
        out.write(f"  - {criterion}: {cells}\n")
    if verdict.disagreement is not None:
        out.write(f"Panel of {len(verdict.rulings)} judges; disagreement ±{verdict.disagreement:g}\n")
    if verdict.confidence is not None:
        out.write(f"Judge confidence: {verdict.confidence:.0%}\n")
    out.write(f"\n{verdict.reasoning}\n")
    if verdict.synthesis:
        out.write(f"\n=== Synthesis ===\n{verdict.synthesis}\n")


def print_costs(state: DebateState, out: TextIO) -> None:
    out = terminal_output(out)
    ledger = state.ledger
    out.write("\n=== Cost ===\n")
    out.write(f"{'model':<34}{'calls':>6}{'input':>10}{'output':>10}{'cost (USD)':>14}\n")
    for model, tokens in sorted(ledger.tokens_by_model.items()):
        cost = "unpriced" if model in ledger.unpriced_models else f"{ledger.by_model.get(model, 0.0):.4f}"
        out.write(f"{model:<34}{tokens['calls']:>6}{tokens['input_tokens']:>10}{tokens['output_tokens']:>10}"
                  f"{cost:>14}\n")
    note = " (simulated demo prices)" if ledger.simulated else ""
    out.write(f"{'total':<60}{ledger.total_usd:>14.4f}{note}\n")
    if ledger.unpriced_models:
        out.write(f"unpriced (not counted): {', '.join(sorted(ledger.unpriced_models))}\n")
    if ledger.estimated_usage:
        out.write("some token counts are estimated (the server did not report usage)\n")


def print_users(users: Sequence[UserRow], out: TextIO) -> None:
    """The accounts as a table (times in UTC). Never the password hash: only whether there is one."""
    out = terminal_output(out)
    header = ("username", "role", "status", "signs in with", "created (UTC)", "last sign-in (UTC)")
    rows = [
        (u.username, u.role, "disabled" if u.disabled else "active",
         "password" if u.password_hash else "proxy header", f"{u.created_at:%Y-%m-%d %H:%M}",
         f"{u.last_login_at:%Y-%m-%d %H:%M}" if u.last_login_at else "never")
        for u in users
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n")


class LineReader:
    """Lines of stdin, awaited without blocking the event loop: a terminal or a pipe is watched with
    `loop.add_reader`, so a signal handled on the loop (Ctrl-C) is heard while the CLI waits. A
    regular file, or a stream without a descriptor (a test's StringIO), is read directly: reading it
    never waits. A missing (None) or closed stdin reads as its end."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.fd = self._watchable(stream)
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        self._buffer = b""
        self._eof = False

    @staticmethod
    def _watchable(stream: TextIO | None) -> int | None:
        if stream is None:
            return None
        try:
            fd = stream.fileno()
            mode = os.fstat(fd).st_mode
        except (AttributeError, OSError, ValueError):  # no descriptor (io.UnsupportedOperation), or closed
            return None
        return None if stat.S_ISREG(mode) else fd

    async def readline(self) -> str | None:
        """The next line without its line break; None at the end of input."""
        if self.stream is None:
            return None
        if self.fd is None:
            try:
                line = self.stream.readline()
            except (OSError, ValueError):  # closed, or not readable at all
                return None
            return line.rstrip("\r\n") if line else None
        while b"\n" not in self._buffer and not self._eof:
            chunk = await self._read()
            self._eof = not chunk
            self._buffer += chunk
        if not self._buffer:
            return None
        raw, _, self._buffer = self._buffer.partition(b"\n")
        return raw.decode(self.encoding, errors="replace").rstrip("\r")

    async def _read(self) -> bytes:
        assert self.fd is not None
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        try:
            loop.add_reader(self.fd, readable)
        except (NotImplementedError, OSError, ValueError):  # not pollable (/dev/null…): reading cannot wait
            return self._read_now()
        try:
            await ready  # cancelled (Ctrl-C): the reader is removed and nothing was consumed
        finally:
            loop.remove_reader(self.fd)
        return self._read_now()

    def _read_now(self) -> bytes:
        assert self.fd is not None
        try:
            return os.read(self.fd, 65536)
        except OSError:
            return b""


async def ask_answers(state: DebateState, out: TextIO, lines: LineReader) -> dict[str, list[str]] | None:
    """The latest clarification questions asked on the terminal, one answer per line (an empty line
    skips a question). None when there is nobody to ask: stdin is closed or ends before the first
    answer. If it ends later, the questions left are skipped."""
    out = terminal_output(out)
    asked = state.clarifications[-1]
    names = {p.id: p.name for p in state.config.participants}
    out.write("\n=== Clarification questions (press Enter to skip one) ===\n")
    answers: dict[str, list[str]] = {}
    read_any = False
    for pid, questions in asked.questions.items():
        answers[pid] = []
        for question in questions:
            out.write(f"{names.get(pid, pid)} asks: {question}\n> ")
            out.flush()
            line = await lines.readline()
            if line is None and not read_any:
                out.write("\n")
                return None
            read_any = True
            answers[pid].append((line or "").strip())
    return answers


SEND_MARK = "."  # a line holding only this ends a human seat's turn typed on the terminal


async def ask_turn(state: DebateState, out: TextIO, lines: LineReader) -> str | None:
    """A human seat's turn typed on the terminal, up to a line holding only `.`. None when there is
    nobody to ask (stdin is closed or ends before anything was typed); input that ends after some text
    without the `.` sends that text."""
    out = terminal_output(out)
    seat = state.seat
    participant = state.config.participant(seat.speaker if seat else "")
    phase = state.format.phase(seat.phase).title if seat and seat.phase else "your turn"
    limit = seat.word_limit if seat else None
    seconds = seat.time_limit_s if seat else 0
    rules = [f"at most {limit} words" if limit else "", f"{seconds // 60} min {seconds % 60:02d} s" if seconds else ""]
    out.write(f"\n=== Your turn — {phase} ({participant.name}) ===\n")
    out.write(f"Type the turn ({', '.join(r for r in rules if r) or 'no limit'}); end it with a line holding only "
              f"'{SEND_MARK}'.\n")
    out.flush()
    typed: list[str] = []
    while True:
        line = await lines.readline()
        if line is None:
            break
        if line.strip() == SEND_MARK:
            break
        typed.append(line)
    text = "\n".join(typed).strip()
    return text or None


def print_timing(state: DebateState, out: TextIO) -> None:
    """Active time (paused and waiting time excluded), in total and per phase."""
    out = terminal_output(out)
    titles = {p.id: p.title for p in state.format.phases}
    phases = ", ".join(f"{titles.get(pid, pid)} {seconds:.1f} s" for pid, seconds in state.phase_durations.items())
    out.write(f"\nTime debating: {state.elapsed():.1f} s" + (f" ({phases})" if phases else "") + "\n")
