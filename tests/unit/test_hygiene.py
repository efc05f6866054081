"""Input and output hygiene: control characters never reach a terminal or a text export, Markdown
exports keep raw HTML inert (and the words faithful), JSON stays exact, and what the engine refuses
or warns about before a debate starts (invisible topics, bad colours, silent participants, an
ignored temperature)."""

from __future__ import annotations

import asyncio
import io
import json
import os
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from webapp import export
from webapp.engine.events import ClarificationQuestionsPayload
from webapp.engine.schedule import ConfigError, config_notes, prepare_config
from webapp.engine.state import DebateState
from webapp.engine.stream import LiveChunk, LiveTurnStarted
from webapp.hygiene import code_fence, escape_markdown, has_visible_text, strip_controls
from webapp.models import DebateConfig, JudgeSpec, Participant, Turn, Verdict
from webapp.terminal import LineReader, TerminalOutput, TerminalView, ask_answers, exact_output, terminal_output

T0 = datetime(2025, 1, 1, tzinfo=UTC)
# What a hostile model (or person) can put in text: colour, window title, clear screen, terminal
# reset, BEL, NUL, DEL, an 8-bit CSI, and a right-to-left override that reorders what is shown.
NASTY = ("red \x1b[31mALERT\x1b[0m title\x1b]0;pwned\x07 clear\x1b[2J\x1b[H reset\x1bc bell\x07 nul\x00 "
         "del\x7f c1\x9b31m rtl\u202eevil\u202c iso\u2066x\u2069")
SHOWN = "red ALERT title clear reset bell nul del c1 rtlevil isox"


def test_strip_controls_removes_escape_sequences_and_control_characters_keeping_the_words() -> None:
    assert strip_controls(NASTY) == SHOWN
    assert strip_controls("line one\n\tindented\r\nwindows\rreturn") == "line one\n\tindented\nwindows\nreturn"
    plain = "Ordinary text, ünïcödé, 日本語, עברית and emoji 🎉 stay as they are."
    assert strip_controls(plain) is plain
    assert strip_controls("split \x1b[3") == "split 3"  # an escape cut by streaming loses its ESC: inert


@pytest.mark.parametrize("text", ["\u200b", "\ufeff", "\x00", "\u200b\ufeff\u200d \u2060", "\u3164", " \u0301 ",
                                  "\u202e\u2066"])
def test_invisible_only_text_has_no_visible_text(text: str) -> None:
    assert not has_visible_text(text)


@pytest.mark.parametrize("text", ["a", "\u200bx", "日本", "مرحبا", "🎉", "?", "-"])
def test_visible_text(text: str) -> None:
    assert has_visible_text(text)


def test_markdown_escaping_keeps_code_and_closes_an_open_fence() -> None:
    text = "Try <b>bold</b> & R&D &lt;ok&gt; `<kbd>` and ``a ` <i>``\n```html\n<img src=x onerror=alert(1)>\n```\nafter"
    escaped = escape_markdown(text)
    assert escaped == ("Try &lt;b>bold&lt;/b> & R&D &amp;lt;ok&amp;gt; `<kbd>` and ``a ` <i>``\n```html\n"
                       "<img src=x onerror=alert(1)>\n```\nafter")
    assert escape_markdown("```\nopen <x>") == "```\nopen <x>\n```"  # cannot swallow the rest of the file
    assert code_fence("a ```` b") == "`````"


# --- exports -----------------------------------------------------------------------------------

HOSTILE = ("<script>alert(1)</script> Look: <img src=x onerror=alert(2)> and `<code>` stays.\x1b]0;title\x07\x00"
           "\u202e end")


def hostile_state() -> DebateState:
    config = prepare_config(DebateConfig(
        topic="Tabs <script>alert(0)</script>\x1b[2J?", format="classic",
        participants=[Participant(name="Ada <img src=x onerror=alert(3)>", position="pro"),
                      Participant(name="Bo\x1b[31m", position="con")]))
    state = DebateState("d1", config, T0)
    for index, speaker in enumerate(p.id for p in config.participants):
        state.turns.append(Turn(key=f"opening/r1/{speaker}/{index}", phase="opening", round=1, speaker=speaker,
                                index=index, text=HOSTILE, started_at=T0, finished_at=T0,
                                notes=["note <svg onload=alert(4)>\x07"]))
    state.verdict = Verdict(available=False, reasoning="judge said <script>x</script>",
                            raw_text="```\n</pre><script>alert(5)</script>")
    return state


def test_markdown_export_escapes_raw_html_and_strips_control_characters() -> None:
    md = export.to_markdown(hostile_state())
    raw_fence = "````\n```\n</pre><script>alert(5)</script>\n````"
    outside_code = md.replace("`<code>`", "").replace(raw_fence, "")
    for tag in ("<script", "<img", "<svg", "</script", "<"):
        assert tag not in outside_code, tag  # no raw HTML anywhere but in code
    assert "&lt;script>alert(1)&lt;/script>" in md and "&lt;img src=x onerror=alert(2)>" in md  # faithful words
    assert "`<code>`" in md  # code spans are shown literally by any renderer: kept as written
    assert not any(ch in md for ch in "\x1b\x07\x00\u202e")
    # the judge's raw output sits in a fence its own backticks cannot close
    assert raw_fence in md


def test_text_export_strips_control_characters_and_keeps_the_words() -> None:
    txt = export.to_text(hostile_state())
    assert not any(ch in txt for ch in "\x1b\x07\x00\u202e")
    # the window title set by the OSC sequence is not text anyone was shown: it goes with the sequence
    assert "<script>alert(1)</script> Look: <img src=x onerror=alert(2)> and `<code>` stays. end" in txt


def test_json_export_stays_exact() -> None:
    data = json.loads(export.to_json(hostile_state()))
    assert data["turns"][0]["text"] == HOSTILE
    assert data["topic"] == "Tabs <script>alert(0)</script>\x1b[2J?"


# --- the terminal ------------------------------------------------------------------------------


def test_the_terminal_view_strips_control_characters_from_streamed_and_finished_text() -> None:
    config = prepare_config(DebateConfig(topic="T", format="oxford", participants=[
        Participant(name="Ada\x1b]0;x\x07", position="pro"), Participant(name="Bo", position="con")]))
    state = DebateState("d1", config, T0)
    out = io.StringIO()
    view = TerminalView(SimpleNamespace(state=state), out)  # type: ignore[arg-type]
    speaker = config.participants[0].id
    view(LiveTurnStarted(debate_id="d1", key="k", speaker=speaker, phase="opening", round=1, act="speak",
                         attempt=1))
    view(LiveChunk(debate_id="d1", key="k", speaker=speaker, text=NASTY))
    view.end_stream()  # public: the CLI finishes the streamed line through the view's API
    printed = out.getvalue()
    assert SHOWN in printed and "Ada (pro, demo:demo):" in printed
    assert not any(ch in printed for ch in "\x1b\x07\x00\x7f\x9b\u202e\u2066")


def test_terminal_output_filters_and_exact_output_does_not() -> None:
    raw = io.StringIO()
    out = terminal_output(raw)
    assert terminal_output(out) is out and isinstance(out, TerminalOutput)
    out.write("a\x1b[31mb\n")
    exact_output(out).write('{"x": "\u202e"}\n')
    assert raw.getvalue() == 'ab\n{"x": "\u202e"}\n'


async def test_clarification_answers_are_none_when_stdin_is_closed_or_empty() -> None:
    config = prepare_config(DebateConfig(topic="Plan", format="collaborative"))
    state = DebateState("d1", config, T0)
    pid = config.participants[0].id
    state.clarifications.append(ClarificationQuestionsPayload(iteration=1, questions={pid: ["When?", "Who?"]}))
    out = io.StringIO()
    assert await ask_answers(state, out, LineReader(None)) is None  # stdin closed (sys.stdin is None)
    assert await ask_answers(state, out, LineReader(io.StringIO(""))) is None  # at its end already
    closed = io.StringIO("x\n")
    closed.close()
    assert await ask_answers(state, out, LineReader(closed)) is None
    # ending after the first answer: the rest are skipped, as if Enter was pressed
    assert await ask_answers(state, out, LineReader(io.StringIO("Soon\n"))) == {pid: ["Soon", ""]}


async def test_a_pipe_is_read_on_the_loop_and_a_cancelled_wait_leaves_nothing_behind() -> None:
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    with open(read_fd, encoding="utf-8") as reader:  # a real descriptor, as a piped or terminal stdin has
        lines = LineReader(reader)
        assert lines.fd == read_fd
        waiting = asyncio.ensure_future(lines.readline())
        await asyncio.sleep(0)
        assert not waiting.done()  # the loop is free while nothing is typed (a blocking read would hang here)
        waiting.cancel()  # what Ctrl-C does to the wait
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert not loop.remove_reader(read_fd)  # nothing left registered
        pending = asyncio.ensure_future(lines.readline())
        os.write(write_fd, "première\r\nsecond".encode())
        assert await pending == "première"
        os.close(write_fd)
        assert await lines.readline() == "second"
        assert await lines.readline() is None


# --- refused or noted before a debate starts ---------------------------------------------------


@pytest.mark.parametrize("topic", ["\u200b", "\ufeff\u200b", "\x00\x00", "\u200d\u2060\u180e", "\u3164"])
def test_a_topic_of_invisible_characters_is_refused_naming_the_field(topic: str) -> None:
    with pytest.raises(ConfigError) as info:
        prepare_config(DebateConfig(topic=topic))
    assert info.value.field == "topic" and "visible" in info.value.message


def test_an_invisible_topic_stored_before_the_check_still_loads() -> None:
    config = DebateConfig(topic="\u200b", participants=[Participant(position="pro", color="notacolor"),
                                                         Participant(position="con")])
    assert DebateConfig.model_validate(config.model_dump(mode="json")).topic == "\u200b"


@pytest.mark.parametrize("color", ["notacolor", "#12345", "red", "#ggg", "#2563eb;background:url(x)"])
def test_a_bad_colour_is_refused_naming_the_field(color: str) -> None:
    with pytest.raises(ConfigError) as info:
        prepare_config(DebateConfig(topic="T", participants=[Participant(position="pro"),
                                                             Participant(position="con", color=color)]))
    assert info.value.field == "participants[1].color" and repr(color) in info.value.message


def test_good_colours_are_accepted() -> None:
    config = prepare_config(DebateConfig(topic="T", participants=[Participant(position="pro", color="#2563EB"),
                                                                  Participant(position="con", color="#abc")]))
    assert [p.color for p in config.participants] == ["#2563EB", "#abc"]


def test_anthropic_temperature_is_a_note_not_an_error() -> None:
    config = prepare_config(DebateConfig(
        topic="T",
        participants=[Participant(provider="anthropic", model="claude-sonnet-4-5", position="pro", temperature=0.7),
                      Participant(provider="openai", model="gpt-4o-mini", position="con", temperature=0.7),
                      ],
        judge={"judges": [JudgeSpec(provider="anthropic", model="claude-sonnet-4-5", temperature=0.2)]}))
    notes = config_notes(config)
    assert notes == [
        "participants[0].temperature: Anthropic does not accept a temperature, so 0.7 is not sent "
        "(the model's default is used)",
        "judge.judges[0].temperature: Anthropic does not accept a temperature, so 0.2 is not sent "
        "(the model's default is used)",
    ]
    assert config_notes(prepare_config(DebateConfig(topic="T"))) == []
