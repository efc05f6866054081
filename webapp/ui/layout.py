"""The shared page frame: header with the product name and navigation, dark mode, styles."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from nicegui import app, ui

PRODUCT = "Rostrum"
NAV = [("Debates", "/", "forum"), ("New debate", "/new", "add_circle"), ("Settings", "/settings", "tune")]
DARK_CYCLE = {None: True, True: False, False: None}  # auto -> dark -> light -> auto
DARK_ICONS = {None: "brightness_auto", True: "dark_mode", False: "light_mode"}
DARK_LABELS = {None: "Theme: follows the system", True: "Theme: dark", False: "Theme: light"}


def _theme_toggle() -> None:
    try:
        preference = app.storage.user.get("dark")
    except (RuntimeError, AssertionError):  # no storage (should not happen with a storage secret)
        preference = None
    dark = ui.dark_mode(preference)

    def cycle() -> None:
        dark.value = DARK_CYCLE[dark.value]
        app.storage.user["dark"] = dark.value
        button.props(f"icon={DARK_ICONS[dark.value]}")
        tooltip.text = DARK_LABELS[dark.value]

    button = ui.button(on_click=cycle, icon=DARK_ICONS[preference]).props("flat round color=white")
    with button:
        tooltip = ui.tooltip(DARK_LABELS[preference])


@contextmanager
def frame(active: str = "/") -> Iterator[ui.column]:
    """Enter the page body (a centred column) below the shared header."""
    ui.add_head_html('<link rel="stylesheet" href="/static/styles.css">')
    ui.colors(primary="#4f46e5", secondary="#0891b2", accent="#f59e0b", positive="#16a34a",
              negative="#dc2626", warning="#d97706")
    with ui.header(elevated=False).classes("items-center justify-between px-4 py-2 bg-primary text-white"):
        with ui.link(target="/").classes("flex items-center gap-2 no-underline text-white"):
            ui.image("/static/favicon.svg").classes("w-8 h-8")
            ui.label(PRODUCT).classes("text-xl font-semibold tracking-tight")
        with ui.row().classes("items-center gap-1"):
            for label, target, icon in NAV:
                button = ui.button(label, icon=icon, on_click=lambda t=target: ui.navigate.to(t))
                button.props("flat no-caps color=white" + (" outline" if target == active else ""))
            _theme_toggle()
    with ui.column().classes("w-full max-w-7xl mx-auto p-4 gap-4") as body:
        yield body
