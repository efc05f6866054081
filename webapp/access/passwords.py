"""Password hashing with argon2id (argon2-cffi's defaults), and share-link tokens.

Verification of an unknown username still runs one argon2 verification against a dummy hash, so the
time a failed sign-in takes does not reveal whether the account exists.
"""

from __future__ import annotations

import hashlib
import secrets
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024

_hasher = PasswordHasher()


class WeakPassword(ValueError):
    """A password refused before hashing."""


def check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise WeakPassword(f"the password must have at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise WeakPassword(f"the password must have at most {MAX_PASSWORD_LENGTH} characters")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(check_password(password))


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return _hasher.hash(secrets.token_urlsafe(16))


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether `password` matches; False (after the same work) for a missing hash."""
    try:
        return _hasher.verify(password_hash or _dummy_hash(), password) and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


# Letters and digits that cannot be misread for one another (no 0/O, 1/l/I): a generated password is
# read off a screen and typed once.
PASSWORD_ALPHABET = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def generate_password(groups: int = 4, size: int = 5) -> str:
    """A new account's first password, from the OS's CSPRNG: `groups` of `size` characters joined by
    dashes (4 × 5 of 57 characters: about 117 bits)."""
    return "-".join("".join(secrets.choice(PASSWORD_ALPHABET) for _ in range(size)) for _ in range(groups))


def new_token() -> str:
    """A share-link token: 256 bits from the OS's CSPRNG, URL-safe."""
    return secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """What is stored of a token. The token is random and long, so a plain SHA-256 suffices (a slow
    password hash protects guessable secrets; this one cannot be guessed)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
