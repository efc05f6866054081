"""Signing secrets and the signature of a delivery.

Each delivery carries two headers:

    X-Rostrum-Timestamp: 1764210000                  (seconds since the epoch, when it was sent)
    X-Rostrum-Signature: sha256=<hex>                (HMAC-SHA256)

where `<hex>` is the lowercase hex HMAC-SHA256, keyed with the endpoint's whole secret as UTF-8 (the
`whsec_…` string, prefix included), of the bytes `<timestamp>.<body>`: the timestamp header's value, a
full stop, and the raw request body exactly as received. Signing the timestamp with the body is what
makes a replay detectable: a receiver refuses a timestamp too far from its own clock (`TOLERANCE`), and
an attacker cannot change the timestamp without breaking the signature.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SECRET_PREFIX = "whsec_"
SIGNATURE_HEADER = "X-Rostrum-Signature"
TIMESTAMP_HEADER = "X-Rostrum-Timestamp"
EVENT_HEADER = "X-Rostrum-Event"
DELIVERY_HEADER = "X-Rostrum-Delivery"
TOLERANCE = 300  # seconds a receiver should accept between the timestamp and its own clock


def new_secret() -> str:
    """A fresh signing secret (`whsec_` and 32 random bytes, URL-safe base64)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Rostrum-Signature` value for `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(secret: str, timestamp: str, body: bytes, header: str, now: float | None = None,
           tolerance: float = TOLERANCE) -> bool:
    """What a receiver checks: the signature matches (compared in constant time) and the timestamp is
    within `tolerance` seconds of now."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - sent) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), header)
