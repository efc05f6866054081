"""The README documents the two commands first and carries the current generated diagram."""

from pathlib import Path

from webapp.engine.machine import to_mermaid

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_readme_diagram_is_the_generated_one() -> None:
    assert to_mermaid() in README, "regenerate the README diagram with: python -m webapp diagram"


def test_readme_opens_with_the_two_commands() -> None:
    first_block = README.split("```bash", 1)[1].split("```", 1)[0]
    assert "make run" in first_block and "make test" in first_block


def test_ci_runs_the_readme_test_command() -> None:
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci
