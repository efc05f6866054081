"""The shared page frame: header with the product name, the navigation a principal may use, who is
signed in (with Sign out), dark mode, styles."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from html import escape

from nicegui import Client, app, context, ui

from webapp.access.roles import Action, Principal
from webapp.ui import runtime
from webapp.ui.shared_values import shared_text
from webapp.ui.sign_in import sign_out

PRODUCT = "Rostrum"
# label, target, icon, what the principal must be allowed to do to see it
NAV = [
    ("Debates", "/", "forum", Action.LIST),
    ("New debate", "/new", "add_circle", Action.CREATE),
    ("Leaderboard", "/leaderboard", "leaderboard", Action.LIST),
    ("Tournaments", "/tournaments", "emoji_events", Action.LIST),
    ("Judges", "/judges", "gavel", Action.LIST),
    ("Settings", "/settings", "tune", Action.LIST),
    ("API tokens", "/tokens", "key", Action.LIST),
    ("Admin", "/admin", "admin_panel_settings", Action.VIEW_AUDIT),
]
# A table wider than a phone scrolls sideways inside its card: keyboard users must be able to focus it
# to scroll it (Quasar gives the scrolling element no tabindex, and it has no prop for one).
# The header's height, whatever it is (one row on a phone, taller if a long name wraps), is
# `--rostrum-header`: the debate page's sticky status bar sticks right below it.
FOCUSABLE_TABLES = """
const rostrumHeader = new ResizeObserver(entries => {
  for (const e of entries) document.documentElement.style.setProperty(
    '--rostrum-header', Math.ceil(e.target.getBoundingClientRect().height) + 'px');
});
let rostrumHeaderSeen = null;
new MutationObserver(() => {
  for (const e of document.querySelectorAll('.q-table__middle.scroll:not([tabindex])')) e.tabIndex = 0;
  const header = document.querySelector('.q-header');
  if (header && header !== rostrumHeaderSeen) { rostrumHeaderSeen = header; rostrumHeader.observe(header); }
}).observe(document.documentElement, {childList: true, subtree: true});
document.addEventListener('click', event => {  // the phone's navigation menu closes on a click elsewhere
  for (const menu of document.querySelectorAll('details.rostrum-nav-menu[open]'))
    if (!menu.contains(event.target)) menu.open = false;
});
""".strip()
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
        # The tooltip is not the accessible name: aria-label says the theme too.
        label = DARK_LABELS[dark.value]
        button.props(f'icon={DARK_ICONS[dark.value]} aria-label="{label}" title="{label}"')

    # A `title` instead of a tooltip element: one element less on every page.
    button = ui.button(on_click=cycle, icon=DARK_ICONS[preference]).props("flat round color=white")
    button.props(f'aria-label="{DARK_LABELS[preference]}" title="{DARK_LABELS[preference]}"').mark("theme-toggle")


def _account_menu(principal: Principal) -> None:
    """Who is signed in, their role, and Sign out (a browser sign-in only: a proxy or a link cannot)."""
    async def leave() -> None:
        await sign_out(principal)  # ends this session everywhere (its other tabs are cut off)
        ui.navigate.to("/login")  # which gives this browser a fresh id

    account = ui.button(principal.name, icon="account_circle").props("flat no-caps color=white") \
        .classes("rostrum-icon-sm min-w-0").mark("account")  # on a phone the icon (the name is in its menu)
    with account, ui.menu().mark("account-menu"):
        with ui.column().classes("px-4 py-2 gap-0"):
            ui.label(principal.name).classes("font-medium").mark("account-name")
            ui.label(f"Role: {principal.role.value}").classes("text-sm text-grey-8").mark("account-role")
        ui.separator()
        if principal.kind == "user":
            ui.menu_item("Sign out", on_click=leave).mark("sign-out")
        else:
            ui.menu_item("Signed in by your organisation's proxy").props("disable")


def nav_slug(label: str) -> str:
    return "nav-" + "-".join(label.lower().split())


def nav_link(label: str, target: str, icon: str, current: bool = False, menu: bool = False) -> str:
    """One navigation item as HTML: a real link (focusable, opens in a new tab), the current page
    marked with `aria-current="page"`. `menu`: the copy in the phone's navigation menu (its own marker)."""
    current_attrs = ' aria-current="page"' if current else ""
    classes = "rostrum-nav rostrum-nav-current" if current else "rostrum-nav"
    mark = ("menu-" if menu else "") + nav_slug(label)
    return (f'<a href="{escape(target)}" class="{classes}" aria-label="{escape(label)}"{current_attrs} '
            f'data-mark="{mark}"><i class="q-icon notranslate material-icons rostrum-nav-icon" '
            f'aria-hidden="true">{escape(icon)}</i><span class="rostrum-nav-label">{escape(label)}</span></a>')


HEAD_HTML = f'<link rel="stylesheet" href="/static/styles.css">\n<script>{FOCUSABLE_TABLES}</script>'


def install_head() -> None:
    """The stylesheet and scripts every page needs, added once for all pages (not a copy per page)."""
    if HEAD_HTML not in Client.shared_head_html:
        ui.add_head_html(HEAD_HTML, shared=True)


def header_html(active: str, principal: Principal | None) -> str:
    """The product link and the navigation `principal` may use, as one piece of HTML: a page holds
    one element for it instead of three per link (every element costs each open page memory)."""
    shared = principal is not None and principal.kind == "share-link"
    home = (f'<a href="{"" if shared else "/"}" class="rostrum-home" aria-label="{PRODUCT}" data-mark="home">'
            # The image is decoration: the product name next to it (or the link's label on a phone) names it.
            '<img src="/static/favicon.svg" alt="" class="w-8 h-8">'
            f'<span class="text-xl font-semibold tracking-tight rostrum-collapse-sm">{PRODUCT}</span></a>')
    if shared:
        return home + ('<nav class="row items-center gap-1" aria-label="Main"><span class="text-sm '
                       'rostrum-shared-view" data-mark="shared-view">Shared read-only view</span></nav>')
    if principal is None:  # nobody signed in yet (the sign-in page): no navigation
        return home + '<nav class="row items-center gap-1" aria-label="Main"></nav>'
    items = [(label, target, icon) for label, target, icon, needs in NAV if principal.can(needs)]
    # On a phone the links are in a menu (the header stays one row); elsewhere they are in the header.
    # Only one of the two is displayed at a time (styles.css), so each is the page's one "Main" navigation.
    menu = ('<details class="rostrum-nav-menu" data-mark="nav-menu"><summary class="rostrum-nav" role="button" '
            'aria-label="Menu" title="Menu"><i class="q-icon notranslate material-icons rostrum-nav-icon" '
            'aria-hidden="true">menu</i></summary><nav class="rostrum-nav-menu-list" aria-label="Main">'
            + "".join(nav_link(label, target, icon, current=target == active, menu=True) for label, target, icon
                      in items) + "</nav></details>")
    bar = ('<nav class="row items-center gap-1 rostrum-nav-row" aria-label="Main">'
           + "".join(nav_link(label, target, icon, current=target == active) for label, target, icon in items)
           + "</nav>")
    return f'<span class="row items-center gap-2 no-wrap">{menu}{home}</span>{bar}'



def heading(text: str, level: int = 1) -> ui.label:
    """A real heading element (`h1`…`h6`) with the look of a page or section title."""
    label = ui.label(text).classes("rostrum-heading")
    label.tag = f"h{level}"
    return label


@contextmanager
def section(title: str, marker: str | None = None) -> Iterator[ui.card]:
    """One card of a page, titled with a level-2 heading: `with section("Users"): …`."""
    with ui.card().classes("w-full") as card:
        heading(title, 2)
        if marker:
            card.mark(marker)
        yield card


def columns(*named: tuple[str, str] | tuple[str, str, str]) -> list[dict[str, str]]:
    """A table's columns from (name, label) pairs, left-aligned unless a third item says otherwise;
    the row field is the column's name."""
    return [{"name": c[0], "label": c[1], "field": c[0], "align": c[2] if len(c) == 3 else "left"}
            for c in named]


def log_table(cols: list[dict[str, str]], rows: list[dict[str, object]], marker: str) -> ui.table:
    """A dense table of records whose cells wrap; wider than the screen, it scrolls inside its card
    (styles.css), never the page."""
    return ui.table(columns=cols, row_key="id", rows=rows).props("flat dense wrap-cells").classes("w-full") \
        .mark(marker)


def title_row(title: str, create: tuple[str, str, str] | None = None) -> None:
    """A list page's title, with its "New …" button on the right when `create` = (label, target, marker)
    is given (the caller decides whether this person may create)."""
    with ui.row().classes("w-full items-center justify-between"):
        heading(title)
        if create is not None:
            label, target, marker = create
            ui.button(label, icon="add", on_click=lambda: ui.navigate.to(target)) \
                .props("unelevated no-caps").mark(marker)


@contextmanager
def frame(active: str = "/", principal: Principal | None = None) -> Iterator[ui.element]:
    """Enter the page body (a centred column) below the shared header. The navigation shows what
    `principal` may use (a share link gets none: it may see its one debate only)."""
    # The brand colours are set in styles.css (no `ui.colors` element on every page).
    with ui.header(elevated=False).classes("items-center justify-between no-wrap px-4 py-2 bg-primary text-white"):
        ui.html(shared_text(header_html(active, principal)), sanitize=False) \
            .classes("row items-center justify-between no-wrap grow mr-2 min-w-0").mark("navigation")
        if principal is not None and principal.kind in ("user", "proxy"):
            _account_menu(principal)
        _theme_toggle()
    if principal is not None and (principal.session_id or principal.link_id):
        rt = runtime.current()
        if rt.engine_ is not None:  # a signed-in page: cut off when its sign-in or link ends
            rt.cutoff.guard(principal, rt.engine_.store)
    # The page's own content element is the body (no column of our own: one element less per page).
    body = context.client.content.classes("w-full max-w-7xl mx-auto p-4 gap-4")
    with body:
        yield body


@contextmanager
def titled_frame(active: str, principal: Principal, title: str, intro: str = "",
                 markdown: bool = False) -> Iterator[ui.element]:
    """`frame` with the page's title (its one `h1`) and, if given, a line saying what the page is for
    (`markdown`: the line has links or code)."""
    with frame(active, principal) as body:
        heading(title)
        if intro:
            (ui.markdown(intro) if markdown else ui.label(intro)).classes("text-sm text-grey-8")
        yield body
