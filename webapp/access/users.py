"""Managing accounts through the gate: adding a user, changing a role, disabling, setting a password.

Every change needs `Action.MANAGE_USERS` (asked of the gate's `authorize`), is audited (a failure with its
reason, never a password), and never leaves the instance without an active admin. `Gate.add_user`,
`set_role`, `set_disabled` and `set_password` hand over to `UserAdmin`. What can be a username
(`check_username`) is said here too: the sign-in page, the CLI and the sign-in throttle use it.
"""

from __future__ import annotations

import asyncio
import re

from webapp.access.passwords import hash_password
from webapp.access.roles import Action, Authorize, Role
from webapp.store.accounts import Accounts, UnknownUser, UserExists, UserRow

USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
RESERVED_NAMES = {"cli", "system", "share-link", "local"}  # actors that are not people


def check_username(name: str) -> str:
    name = name.strip()
    if not USERNAME.match(name):
        raise ValueError("username: use 1-64 letters, digits and . _ @ + - (starting with a letter or digit)")
    if name.lower() in RESERVED_NAMES:
        raise ValueError(f"username: {name!r} is reserved for actions that are not a person's")
    return name


class UserAdmin:
    """The account changes one principal may make, checked by its gate and audited."""

    def __init__(self, authorize: Authorize, accounts: Accounts) -> None:
        self.authorize = authorize
        self.accounts = accounts

    async def add_user(self, username: str, role: Role, password: str | None) -> UserRow:
        """A new account (`password` None: it signs in only through the proxy's identity header).
        A bad or taken name or a weak password raises ValueError naming the field; audited either way."""
        principal = await self.authorize(Action.MANAGE_USERS)
        try:
            username = check_username(username)
            hashed = await asyncio.to_thread(hash_password, password) if password is not None else None
            try:
                row = await self.accounts.add_user(username, role.value, hashed)
            except UserExists as exc:  # names are compared without case: name the account that has it
                existing = await self.accounts.user(username)
                raise UserExists(f"username: a user named {existing.username!r} already exists" if existing
                                 else f"username: {exc}") from None
        except ValueError as exc:  # the reason only: never the password
            await self.accounts.audit(principal.actor, "user_add", outcome="failed", detail=str(exc)[:300])
            raise
        await self.accounts.audit(principal.actor, "user_add", detail={"user": username, "role": role.value})
        return row

    async def _existing(self, username: str) -> UserRow:
        row = await self.accounts.user(username)
        if row is None:
            raise UnknownUser(username)
        return row

    async def _keep_an_admin(self, row: UserRow, what: str) -> None:
        if row.role == Role.ADMIN.value and not row.disabled and await self.accounts.count_admins() <= 1:
            raise ValueError(f"{row.username} is the only active admin: {what} would leave nobody to manage "
                             "users. Make another admin first.")

    async def set_role(self, username: str, role: Role) -> None:
        principal = await self.authorize(Action.MANAGE_USERS)
        row = await self._existing(username)
        if role is not Role.ADMIN:
            await self._keep_an_admin(row, "demoting them")
        await self.accounts.set_role(row.username, role.value)
        await self.accounts.audit(principal.actor, "user_set_role",
                                  detail={"user": row.username, "role": role.value, "from": row.role})

    async def set_disabled(self, username: str, disabled: bool) -> None:
        principal = await self.authorize(Action.MANAGE_USERS)
        row = await self._existing(username)
        if disabled:
            await self._keep_an_admin(row, "disabling them")
        await self.accounts.set_disabled(row.username, disabled)
        await self.accounts.audit(principal.actor, "user_disable" if disabled else "user_enable",
                                  detail={"user": row.username})

    async def set_password(self, username: str, password: str) -> None:
        principal = await self.authorize(Action.MANAGE_USERS)
        row = await self._existing(username)
        await self.accounts.set_password_hash(row.username, await asyncio.to_thread(hash_password, password))
        await self.accounts.audit(principal.actor, "user_passwd", detail={"user": row.username})
