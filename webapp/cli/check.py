"""`check`: whether OpenAI-compatible servers answer, and which structured-output mode they accept."""

from __future__ import annotations

import argparse
import json
import re
from typing import TextIO

from webapp.cli.common import EXIT_FAILED, EXIT_OK, UsageError
from webapp.terminal import exact_output


async def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    """Check servers like Settings' "Check": their /models, then one tiny structured-output probe."""
    # late: only `check` probes servers; the other commands never load the probe
    from webapp.providers.presets import PRESETS, get_preset
    from webapp.providers.probe import check_server, probe_structured

    targets = args.targets or [p.name for p in PRESETS.values() if p.local]
    ok, reports = True, []
    for target in targets:
        preset = get_preset(target)
        if preset is None and not re.match(r"^https?://", target):
            raise UsageError(f"check: {target!r} is neither a URL (http://…) nor a preset "
                             f"({', '.join(PRESETS)})")
        url = preset.default_url if preset is not None else target
        server = await check_server(url)
        model = args.model or (server.models[0] if server.models else None)
        found = None
        if server.answers and model and not server.problem:
            found = await probe_structured(url, model, preset=preset)
        ok = ok and found is not None and found.mode is not None
        reports.append({"target": target, "server": server.model_dump(mode="json"),
                        "structured": found.model_dump(mode="json") if found else None})
        if not args.json:
            out.write(f"{target}: {server.describe()}\n")
            if found is not None:
                out.write(f"  {found.describe()}\n")
    if args.json:
        exact_output(out).write(json.dumps(reports, indent=2) + "\n")
    return EXIT_OK if ok else EXIT_FAILED
