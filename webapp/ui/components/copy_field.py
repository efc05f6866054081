"""A read-only field with a Copy button, for what is shown once (a share link, a token, a password,
a signing secret) or should be easy to pass on.

The copy happens in the browser, on the click itself: the Clipboard API where the page may use it
(HTTPS or this computer), otherwise the field's text is selected and copied the old way, and where
neither works it stays selected with a message saying to press Ctrl+C. The server hears only whether
it worked, to say so.
"""

from __future__ import annotations

import json

from nicegui import events, ui

# `{field}`: the field's element id; `{value}`: the text as a JavaScript string.
COPY_JS = """async () => {{
  const box = document.getElementById('c{field}')?.querySelector('input');
  let done = false;
  try {{ await navigator.clipboard.writeText({value}); done = true; }}
  catch (error) {{
    if (box) {{ box.focus(); box.select(); try {{ done = document.execCommand('copy'); }} catch (e) {{}} }}
  }}
  emit(done);
}}"""


def copy_field(value: str, label: str, marker: str, what: str = "Text") -> ui.input:
    """The field (marked `marker`) and its Copy button (marked `marker`-copy). `what` names the thing
    in the message after copying ("Link copied")."""
    # On a phone the button goes below a field that would otherwise be too narrow to read.
    with ui.row().classes("w-full items-center gap-x-2 gap-y-1"):
        field = ui.input(label, value=value).props("readonly outlined dense") \
            .classes("grow min-w-[14rem] font-mono text-sm").mark(marker)

        def copied(event: events.GenericEventArguments) -> None:
            if event.args is False:
                ui.notify("This browser did not let the page copy: the text is selected, press Ctrl+C "
                          "(⌘C on a Mac).", type="warning", multi_line=True)
            else:
                ui.notify(f"{what} copied", type="positive")

        ui.button("Copy", icon="content_copy").props(f'flat no-caps aria-label="Copy {label.lower()}"') \
            .on("click", copied, js_handler=COPY_JS.format(field=field.id, value=json.dumps(value))) \
            .mark(f"{marker}-copy")
    return field
