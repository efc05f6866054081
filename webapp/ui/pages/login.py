"""Sign in `/login`: username and password, the same message for an unknown user and a wrong
password, and throttling after repeated attempts per username and per client address
(`webapp.access.throttle`). A right password ends in `/login/finish`, which gives the browser its
session (`webapp.ui.sign_in.finish_sign_in`)."""

from __future__ import annotations

import asyncio
import logging

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from nicegui import ui

from webapp.access.passwords import MAX_PASSWORD_LENGTH, verify_password
from webapp.access.throttle import address_key
from webapp.access.throttle import user_key as throttle_user_key
from webapp.settings import get_settings
from webapp.store.accounts import Accounts
from webapp.ui import runtime
from webapp.ui.auth import principal_for
from webapp.ui.layout import PRODUCT, frame, heading
from webapp.ui.sign_in import begin_sign_in, client_address, safe_next

log = logging.getLogger("rostrum.access")

FAILED = "Wrong username or password."


class LoginForm:
    """One tab's sign-in form."""

    def __init__(self, request: Request, address: str, next_page: str) -> None:
        self.request = request
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
        self.button.disable()
        try:
            await self._check(name, password)
        finally:
            if not self.button.is_deleted:
                self.button.enable()

    async def _check(self, name: str, password: str) -> None:
        rt = runtime.current()
        accounts = Accounts((await rt.engine()).store)
        throttle = await rt.throttle()
        # A name no account can have (too long, other characters) is counted per address only and
        # never looked up or stored.
        user_key, addr_key = throttle_user_key(name), address_key(self.address)
        wait = await throttle.reserve(*(k for k in (user_key, addr_key) if k is not None))
        if wait:  # counted before any password is checked: simultaneous attempts cannot all slip through
            self.message.text = f"Too many failed sign-ins. Try again in {wait} s."
            return
        user = await accounts.user(name) if user_key is not None else None
        ok = len(password) <= MAX_PASSWORD_LENGTH and await asyncio.to_thread(
            verify_password, user.password_hash if user else None, password)
        if not ok or user is None or user.disabled:
            if user is None:
                log.warning("failed sign-in for an unknown name from %s", self.address or "?")
                await accounts.audit_unknown_sign_in(self.address)
            else:
                log.warning("failed sign-in for %r from %s", user.username, self.address or "?")
                await accounts.audit(user.username, "sign_in", outcome="refused", detail={"address": self.address})
            self.password.value = ""
            self.message.text = FAILED
            return
        await throttle.succeeded(user_key, addr_key)
        await accounts.touch_login(user.username)
        await accounts.audit(user.username, "sign_in", detail={"address": self.address})
        ui.navigate.to(await begin_sign_in(user, self.request, self.address, self.next_page))


async def page(request: Request, next: str = "/") -> Response | None:
    target = safe_next(next)
    if not get_settings().auth_enabled:
        return RedirectResponse(target, status_code=303)  # nothing to sign in to
    if await principal_for(request) is not None:
        return RedirectResponse(target, status_code=303)
    with frame("/login"):
        LoginForm(request, client_address(request), target)
    return None
