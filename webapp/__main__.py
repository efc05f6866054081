"""`python -m webapp …` runs the command-line interface."""

from webapp.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
