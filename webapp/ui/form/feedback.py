"""How the new-debate form reports problems: the summary at the top (every error, each a link to its
field, in page order), focusing a field so that it is in view and clear of the sticky action bar,
and the card shown when the store could not save the debate.
"""

from __future__ import annotations

from nicegui import ui

from webapp.store import StoreError
from webapp.ui.components.form_fields import FormFields
from webapp.wording import counted

# Scroll the element with this id to the middle of the window and focus its input (or the element itself).
# The scroll is instant and comes first: a smooth scroll left the field focused under the sticky action
# bar for as long as it ran (seconds on a busy machine), and the page's scroll-padding (styles.css) keeps
# the bar's strip out of what "the middle" means.
FOCUS_JS = """
requestAnimationFrame(() => requestAnimationFrame(() => {
  const el = document.getElementById(%r);
  if (!el) return;
  el.scrollIntoView({block: 'center', behavior: 'instant'});
  const input = el.matches('input, textarea') ? el : el.querySelector('input, textarea, [tabindex]');
  (input || el).focus({preventScroll: true});
}));
"""


class Feedback:
    """The banner above the form and the focusing of fields, for the form `fields`."""

    def __init__(self, fields: FormFields) -> None:
        self.fields = fields
        self.banner = ui.column().classes("w-full")

    def show(self) -> None:
        """The summary of the form's errors, or nothing when there is none."""
        self.banner.clear()
        errors = self.fields.errors
        if not errors:
            return
        with self.banner, ui.card().classes("w-full bg-red-50 text-negative").props("flat bordered role=alert") \
                .mark("form-errors"):
            ui.label(f"Please fix {counted(len(errors), 'problem')}:").classes("font-medium")
            for path in self.error_order():
                ui.button(errors[path], icon="arrow_downward", on_click=lambda p=path: self.focus(p)) \
                    .props("flat dense no-caps align=left color=negative").classes("text-sm") \
                    .mark(f"error-link-{path}")

    def error_order(self) -> list[str]:
        """The paths with an error, in the order their fields appear on the page."""
        order = {path: index for index, path in enumerate(self.fields.anchors)}
        return sorted(self.fields.errors, key=lambda path: order.get(path, len(order)))

    def focus(self, path: str) -> None:
        """Scroll the field of `path` into view and put the cursor in it (the summary's links, and the
        first error after a failed start)."""
        element = self.fields.anchors.get(path)
        if element is None or element.is_deleted:
            element = self.banner
        ui.run_javascript(FOCUS_JS % element.html_id)

    def store_error(self, exc: StoreError) -> None:
        self.banner.clear()
        with self.banner, ui.card().classes("w-full bg-red-50 text-negative").props('flat bordered role=alert') \
                .mark("store-error"):
            ui.label("The debate could not be saved, so it did not start.").classes("font-medium")
            ui.label(f"{exc} ({exc.advice}).").classes("text-sm")
        ui.notify(f"Not started: {exc}", type="negative", multi_line=True)
