"""A share link `/s/{token}`: one debate, live and exportable, without an account.

The link is the only credential: it is checked on every load and every export, and a tab open on it is
cut off the moment it is revoked or expires (`webapp.ui.cutoff`: its stream stops, its content and
export go); a later load answers HTTP 410 with a clear page (an unknown link is a 404). A page opened
through a link can watch and export that debate, react to its turns and, where the link allows it,
comment on them (`webapp.access.comments`), and nothing else: its gate refuses every command.
"""

from __future__ import annotations

import logging

from fastapi import Request

from webapp.access.passwords import token_digest
from webapp.access.roles import Principal, Role
from webapp.engine.engine import DebateNotFound
from webapp.store.accounts import Accounts
from webapp.ui import runtime
from webapp.ui.pages.debate import not_found, show_debate

log = logging.getLogger("rostrum.access")

MAX_TOKEN_CHARS = 200


async def page(request: Request, token: str) -> None:
    engine = await runtime.current().engine()
    link = None
    if 0 < len(token) <= MAX_TOKEN_CHARS:
        link = await Accounts(engine.store).link_by_hash(token_digest(token))
    if link is None:
        not_found(None, "This share link does not exist. Check that it was copied whole.")
        return
    status = link.status()
    if status != "active":
        what = "was revoked" if status == "revoked" else "has expired"
        not_found(None, f"This share link {what}. Ask whoever shared it for a new one.", status=410)
        return
    principal = Principal(name=f"share link {link.id}", role=Role.VIEWER, kind="share-link",
                          debate_id=link.debate_id, link_id=link.id, link_comments=link.comments)
    try:
        session = await engine.session(link.debate_id)
    except DebateNotFound:
        not_found(None, "The debate behind this share link no longer exists.", status=410)
        return
    await show_debate(session, principal, str(request.base_url))
