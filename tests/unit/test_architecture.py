"""ARCHITECTURE.md stays a map a newcomer can read: at most 300 lines, a Mermaid diagram of the layers,
every package of webapp/ named, every crossing the import contracts allow listed as a debt, and the
README's Architecture section pointing to it. Nothing above the engine reads `.machine`."""

from __future__ import annotations

import ast
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


# The layers above the engine read a debate through `DebateState`'s properties and the session's commands;
# `state.machine` (the state machine and its context) is the engine's own.
ABOVE_THE_ENGINE = ("webapp/ui", "webapp/cli", "webapp/terminal.py")  # the live broadcast is webapp/ui/live/


def machine_reaches(source: str) -> list[int]:
    """The lines of `source` that read an attribute named `machine` (`x.machine`, `state.machine.context`)."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr == "machine"]


def test_nothing_above_the_engine_reaches_into_the_machine() -> None:
    files = [path for place in ABOVE_THE_ENGINE
             for path in ((ROOT / place).rglob("*.py") if (ROOT / place).is_dir() else [ROOT / place])]
    assert len(files) > 40
    reaches = [f"{path.relative_to(ROOT)}:{line}" for path in files
               for line in machine_reaches(path.read_text(encoding="utf-8"))]
    assert not reaches, f"read these through DebateState's properties, not `.machine`: {reaches}"


def test_the_machine_check_sees_a_reach_through_the_state() -> None:
    # how diagram.py read the route before `DebateState.skipped_states`
    assert machine_reaches("ctx = state.machine.context\nok = state.return_state\n") == [1]
