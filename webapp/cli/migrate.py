"""`migrate-store`: copy everything from one store to another, verifying counts and checksums."""

from __future__ import annotations

import argparse
from typing import TextIO

from webapp.cli.common import EXIT_FAILED, EXIT_OK, say_error


async def cmd_migrate_store(args: argparse.Namespace, out: TextIO) -> int:
    # late: only `migrate-store` opens two stores and copies between them
    from webapp.store.protocol import redacted
    from webapp.store.transfer import TransferError, migrate_store, parse_target

    try:
        source, target = parse_target(args.source), parse_target(args.target)
        out.write(f"copying {redacted(source)} to {redacted(target)}\n")

        def progress(line: str) -> None:
            out.write(f"  {line}\n")

        report = await migrate_store(source, target, progress=progress)
    except TransferError as exc:
        say_error(f"error: {exc}")
        return EXIT_FAILED
    out.write(report.summary() + "\n")
    return EXIT_OK
