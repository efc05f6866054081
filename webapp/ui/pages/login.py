"""Sign in `/login`: username and password, the same message for an unknown user and a wrong
password, and throttling after repeated failures per username and per client address."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import unquote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from nicegui import ui

from webapp.access.passwords import MAX_PASSWORD_LENGTH, verify_password
from webapp.settings import get_settings
from webapp.store.accounts import Accounts
from webapp.ui import runtime
from webapp.ui.auth import client_address, principal_for, sign_in
from webapp.ui.layout import PRODUCT, frame, heading

log = logging.getLogger("rostrum.access")

FAILED = "Wrong username or password."


def safe_next(target: str | None) -> str:
    """Only a path on this server: never an open redirect to another site."""
    target = unquote(target or "/")
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


class LoginForm:
    """One tab's sign-in form."""

    def __init__(self, address: str, next_page: str) -> None:
        self.address = address
        self.next_page = next_page
        with ui.card().classes("w-full max-w-sm mx-auto mt-10 gap-3").mark("login"):
            heading(f"Sign in to {PRODUCT}")
            self.username = ui.input("Username").props("outlined autocomplete=username autofocus") \
                .classes("w-full").mark("username")
            self.password = ui.input("Password", password=True).props("outlined autocomplete=current-password") \
                .classes("w-full").mark("password")
            self.message = ui.label().classes("text-negative text-sm").props('role=alert aria-live="assertive"') \
                .mark("login-error")
            self.button = ui.button("Sign in", on_click=self.submit).props("unelevated no-caps") \
                .classes("w-full").mark("sign-in")
            self.username.on("keydown.enter", self.submit)
            self.password.on("keydown.enter", self.submit)

    async def submit(self) -> None:
        if not self.button.enabled:
            return
        name = (self.username.value or "").strip()
        password = self.password.value or ""
        if not name or not password:
            self.message.text = "Enter your username and password."
            return
        throttle = runtime.current().login_throttle
        keys = (f"user:{name.lower()}", f"addr:{self.address}")
        wait = throttle.wait(*keys)
        if wait:
            self.message.text = f"Too many failed sign-ins. Try again in {wait} s."
            return
        self.button.disable()
        try:
            accounts = Accounts((await runtime.current().engine()).store)
            user = await accounts.user(name[:200])
            ok = len(password) <= MAX_PASSWORD_LENGTH and await asyncio.to_thread(
                verify_password, user.password_hash if user else None, password)
            if not ok or user is None or user.disabled:
                throttle.failed(*keys)
                log.warning("failed sign-in for %r from %s", name[:200], self.address or "?")
                await accounts.audit(name[:200], "sign_in", outcome="refused", detail={"address": self.address})
                self.password.value = ""
                self.message.text = FAILED
                return
            throttle.succeeded(*keys)
            await accounts.touch_login(user.username)
            await accounts.audit(user.username, "sign_in", detail={"address": self.address})
            sign_in(user)
            ui.navigate.to(self.next_page)
        finally:
            if not self.button.is_deleted:
                self.button.enable()


async def page(request: Request, next: str = "/") -> Response | None:
    target = safe_next(next)
    if not get_settings().auth_enabled:
        return RedirectResponse(target, status_code=303)  # nothing to sign in to
    if await principal_for(request) is not None:
        return RedirectResponse(target, status_code=303)
    with frame("/login"):
        LoginForm(client_address(request), target)
    return None
