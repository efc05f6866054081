"""Parts of a page built only once the browser is connected, so the libraries they need (ECharts is
about a megabyte) load after the page is shown rather than before it."""

from __future__ import annotations

from collections.abc import Callable

from nicegui import context, ui


def after_connect(build: Callable[[], object], classes: str = "w-full") -> ui.element:
    """Build in place now if this page's socket is connected (no holder: one element less on every
    open page), else into a holder when it first connects. Returns the element built into."""
    client = context.client
    if client.has_socket_connection:
        build()
        return context.slot.parent
    holder = ui.element("div").classes(classes)
    built = False

    def run() -> None:
        nonlocal built
        if built or holder.is_deleted:
            return
        built = True
        with holder:
            build()

    client.on_connect(run)
    return holder
