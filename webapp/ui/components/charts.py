"""Charts (ECharts) that read well in both themes: `chart(options)` makes the element, drawn as SVG, and
has `static/charts.js` colour its text, lines and series for the page's theme now and whenever the theme
changes (ECharts' own grey labels on a dark card were about 2.4:1).

The script is added to every page's head once, when this module is imported (at start-up, with the
pages that draw charts): a chart is built after its page is shown, too late to add a script then.
"""

from __future__ import annotations

from typing import Any

from nicegui import Client, ui

HEAD = '<script src="/static/charts.js" defer></script>'
if HEAD not in Client.shared_head_html:
    ui.add_head_html(HEAD, shared=True)

# A time axis names days and times plainly ("3 Feb", "14:00"), never a bare day number, and drops a
# label that would print over its neighbour.
TIME_LABELS: dict[str, Any] = {
    "hideOverlap": True,
    "formatter": {"year": "{yyyy}", "month": "{MMM} {yyyy}", "day": "{d} {MMM}", "hour": "{HH}:{mm}",
                  "minute": "{HH}:{mm}", "second": "{HH}:{mm}:{ss}", "millisecond": "{HH}:{mm}:{ss}",
                  "none": "{d} {MMM} {HH}:{mm}"},
}


def chart(options: dict[str, Any]) -> ui.echart:
    """An ECharts element for `options`, coloured for the page's theme (class `rostrum-chart`)."""
    element = ui.echart({"backgroundColor": "transparent", **options}, renderer="svg").classes("rostrum-chart")
    ui.run_javascript(f"window.rostrumCharts?.watch({element.id})")
    return element
