"""Parts of a page built only once the browser is connected, so the libraries they need (ECharts is
about a megabyte) load after the page is shown rather than before it."""

from __future__ import annotations

from collections.abc import Callable

from nicegui import context, ui


def after_connect(build: Callable[[], None], classes: str = "w-full") -> ui.element:
    """Build into a holder now if this page's socket is connected, else when it first connects."""
    client = context.client
    holder = ui.element("div").classes(classes)
    built = False

    def run() -> None:
        nonlocal built
        if built or holder.is_deleted:
            return
        built = True
        with holder:
            build()

    if client.has_socket_connection:
        run()
    else:
        client.on_connect(run)
    return holder
