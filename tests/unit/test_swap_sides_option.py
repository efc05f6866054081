""""Judge twice, sides swapped" can be asked for from the form and from the command line."""

from __future__ import annotations

from webapp.cli import build_config, build_parser
from webapp.ui.components.presets import blank_form, form_to_config


def test_the_form_switch_reaches_the_config() -> None:
    form = blank_form()
    form["topic"] = "Is a hot dog a sandwich?"
    assert form_to_config(form)["judge"]["swap_sides"] is False
    form["judge"]["swap_sides"] = True
    assert form_to_config(form)["judge"]["swap_sides"] is True


def test_the_cli_flag_reaches_the_config() -> None:
    parser = build_parser()
    plain = build_config(parser.parse_args(["debate", "Is a hot dog a sandwich?"]))
    swapped = build_config(parser.parse_args(["debate", "Is a hot dog a sandwich?", "--judge-swap-sides"]))
    assert plain.judge.swap_sides is False and swapped.judge.swap_sides is True
