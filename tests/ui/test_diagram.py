"""The "How this debate runs" section: collapsed, in words with the format's phase titles, fitted to its
card on light and dark pages, and re-rendered only when the picture changes."""

from __future__ import annotations

import uuid

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import one, start_demo
from webapp.engine.machine import Event, State
from webapp.ui.components.diagram import MERMAID_CONFIG, DiagramSection, diagram_source


async def test_the_section_is_collapsed_in_words_and_follows_the_debate(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "3:auth")
    session = await start_demo("Draw it", format="structured", rounds=None)
    assert await session.join() is State.ERROR
    sections: list[DiagramSection] = []
    path = f"/test-diagram/{uuid.uuid4().hex}"

    @ui.page(path)
    def _page() -> None:
        sections.append(DiagramSection(session))

    await user.open(path)
    (section,) = sections
    expansion = one(user, "diagram-section")
    assert expansion.value is False and expansion.props.get("label") == "How this debate runs"
    await user.should_not_see(marker="diagram")  # Mermaid is not loaded until the reader asks for it
    expansion.value = True  # the reader opens the section
    mermaid = one(user, "diagram")
    text = mermaid.content
    for phase in session.state.format.phases:
        assert f'"{phase.title}"' in text
    for event in Event:  # engine names give way to words
        assert f": {event.value}" not in text
    assert "class error current" in text
    assert "Asking you questions" not in text  # a state this debate never visits is left out
    assert mermaid.props["config"] == MERMAID_CONFIG and MERMAID_CONFIG["theme"] != "default"
    wrapper = mermaid.parent_slot.parent
    assert "rostrum-diagram-fit" in wrapper.classes and "bg-white" not in wrapper.classes
    assert "overflow-x-auto" not in wrapper.classes  # nothing to scroll sideways (the SVG scales down)

    await session.retry()
    assert await session.join() is State.COMPLETED
    section.update()
    assert mermaid.content == diagram_source(session.state) != text
    assert "class completed current" in mermaid.content
