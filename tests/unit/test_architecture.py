"""ARCHITECTURE.md stays a map a newcomer can read: at most 300 lines, a Mermaid diagram of the layers,
every package of webapp/ named, every crossing the import contracts allow listed as a debt, and the
README's Architecture section pointing to it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
MAX_LINES = 300


def text() -> str:
    return ARCHITECTURE.read_text(encoding="utf-8")


def test_it_exists_with_a_mermaid_diagram_of_the_layers_and_is_short() -> None:
    lines = text().splitlines()
    assert len(lines) <= MAX_LINES, f"ARCHITECTURE.md has {len(lines)} lines: keep it to {MAX_LINES}"
    assert "```mermaid" in text()


def test_it_names_every_top_level_package_of_webapp() -> None:
    packages = sorted(p.name for p in (ROOT / "webapp").iterdir() if (p / "__init__.py").exists())
    modules = sorted(p.name for p in (ROOT / "webapp").glob("*.py") if p.name != "__init__.py")
    assert packages and modules
    missing = [name for name in packages if f"webapp/{name}/" not in text()]
    missing += [name for name in modules if f"webapp/{name}" not in text()]
    assert not missing, f"ARCHITECTURE.md does not say what these own: {missing}"


def test_every_crossing_the_import_contracts_allow_is_listed_as_a_debt() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    debts = text().split("## Known crossings to remove", 1)[1]
    lines = debts.splitlines()
    unlisted = []
    for contract in contracts:
        for entry in contract.get("ignore_imports", []):
            importer, imported = (part.strip().removeprefix("webapp.") for part in entry.split("->"))
            # `a` → `b`, or `a` → `b.c`, `b.d` (the entries of one importer on one line)
            if not any(f"`{importer}` →" in line and f"`{imported}`" in line for line in lines):
                unlisted.append(f"{contract['id']}: {entry}")
    assert not unlisted, f"list these under 'Known crossings to remove': {unlisted}"


def test_the_readme_points_to_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"\]\(ARCHITECTURE\.md\)", section)
