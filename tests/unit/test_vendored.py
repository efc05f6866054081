"""Vendored browser libraries are exactly what their source file says they are."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[2] / "static" / "vendor"


def test_marked_is_the_published_file_unmodified() -> None:
    source = (VENDOR / "marked" / "SOURCE.md").read_text()
    recorded = re.search(r"`index.js` sha256: `([0-9a-f]{64})`", source)
    assert recorded is not None
    actual = hashlib.sha256((VENDOR / "marked" / "index.js").read_bytes()).hexdigest()
    assert actual == recorded.group(1)
    assert (VENDOR / "marked" / "LICENSE").read_text().startswith("# License information")
