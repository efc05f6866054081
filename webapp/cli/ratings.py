"""`judges` and `leaderboard`: judge health and Bradley-Terry ratings, derived from stored verdicts."""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from pydantic import ValidationError

from webapp.cli.common import EXIT_OK, UsageError, format_validation, opened, settings_of
from webapp.engine.formats import FORMATS
from webapp.engine.judge_health import RELIABILITY_RULE, judge_health
from webapp.hygiene import strip_controls
from webapp.terminal import exact_output
from webapp.wording import counted


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def _kappa(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


async def cmd_judges(args: argparse.Namespace, out: TextIO) -> int:
    async with opened(args.db, settings_of(args)) as engine:
        report = await judge_health(engine.store).report()
    if args.json:
        exact_output(out).write(json.dumps(report.public(), indent=2) + "\n")
        return EXIT_OK
    if not report.judges:
        out.write("No verdicts yet: judge health is computed from the stored verdicts.\n")
        return EXIT_OK
    out.write(f"Judge health over {counted(report.debates, 'judged debate')}\n\n")
    out.write(f"{'judge':<32} {'rulings':>7}  {'parse failures':<15} {'picked 1st / 2nd':<18} "
              f"{'flipped on swap':<16} {'agreement':<15} kappa\n")
    for j in report.judges:
        failures = f"{j.failed} ({_pct(j.failure_rate)})"
        order = f"{_pct(j.first_rate)} / {_pct(j.second_rate)} ({j.ordered})" if j.ordered else "–"
        swap = f"{j.flipped} of {j.rejudged} ({_pct(j.flip_rate)})" if j.rejudged else "–"
        agreement = f"{_pct(j.agreement)} ({j.compared})" if j.compared else "–"
        out.write(f"{j.judge[:32]:<32} {j.rulings:>7}  {failures:<15} {order:<18} {swap:<16} {agreement:<15} "
                  f"{_kappa(j.kappa)}\n")
    notes = report.unreliable_notes()
    if notes:
        out.write(f"\nUnreliable judges ({RELIABILITY_RULE})\n")
        for judge, note in notes.items():
            out.write(f"  {judge}: {note}\n")
    with_people = [j for j in report.judges if j.people_debates]
    if with_people:
        out.write("\nAgreement with the people's verdicts (their majority)\n")
        for j in with_people:
            out.write(f"  {j.judge}: {counted(j.people_debates, 'debate')}, identical winners "
                      f"{_pct(j.people_agreement)}, kappa {_kappa(j.people_kappa)}\n")
    if report.pairs:
        out.write("\nPairs of judges on the same debates\n")
        for pair in report.pairs:
            out.write(f"  {pair.judges[0]} + {pair.judges[1]}: {counted(pair.debates, 'debate')}, identical winners "
                      f"{_pct(pair.agreement)}, kappa {_kappa(pair.kappa)}\n")
    return EXIT_OK


def _leaderboard_filters(args: argparse.Namespace) -> Any:
    # late: the leaderboard (numpy/scipy behind it) only for the commands that rate
    from webapp.results.leaderboard import LeaderboardFilters

    if args.format is not None and args.format not in FORMATS:
        raise UsageError(f"--format: unknown format {args.format!r}; choose one of: {', '.join(FORMATS)}")
    try:
        return LeaderboardFilters(format=args.format, tag=args.tag, judge=args.judge, since=args.since,
                                  until=args.until, series_only=args.series, rated_by=args.by)
    except ValidationError as exc:
        raise UsageError(format_validation(exc).replace("since:", "--since:").replace("until:", "--until:")) from None


async def cmd_leaderboard(args: argparse.Namespace, out: TextIO) -> int:
    # Imported here: numpy and scipy load only for this command, not for every `python -m webapp`.
    from webapp.results.leaderboard import leaderboard

    filters = _leaderboard_filters(args)
    async with opened(args.db, settings_of(args)) as engine:
        board = await leaderboard(engine.store, filters)
    if args.json:
        exact_output(out).write(json.dumps(board.public(), indent=2) + "\n")
        return EXIT_OK
    if not board.ratings:
        out.write("No rated debates: the leaderboard counts completed, judged debates between two models"
                  f"{' (with these filters)' if filters != type(filters)() else ''}.\n")
        return EXIT_OK
    out.write(f"Leaderboard over {counted(board.comparisons, board.unit)} ({counted(board.debates, 'debate')}), "
              "Bradley-Terry ratings "
              "with 95% bootstrap intervals; avg cost is the whole debate's (both sides and the judges)\n\n")

    def table(lines: Any) -> None:
        out.write(f"{'#':>3} {'model':<36} {'rating':>7} {'95% interval':>15} {'debates':>7}  {'W-L-T':<10} avg cost\n")
        for r in lines:
            interval = f"{r.low:.0f}–{r.high:.0f}"
            out.write(f"{r.rank:>3} {strip_controls(r.model)[:36]:<36} {r.rating:>7.0f} {interval:>15} {r.debates:>7}  "
                      f"{f'{r.wins}-{r.losses}-{r.ties}':<10} ${r.avg_cost_usd:.4f}\n")

    table(board.ratings)
    for line in board.words:  # in words, for each pair of neighbours
        out.write(f"  {strip_controls(line.words)}\n")
    style = board.style
    if style.length_effect is not None:
        out.write(f"\nStyle-controlled (word-count difference as a covariate): length effect "
                  f"{style.length_effect:+.2f} "
                  f"(95% {style.length_low:+.2f} to {style.length_high:+.2f}; > 0: the longer side wins more)\n")
    else:
        out.write(f"\nStyle-controlled (word-count difference as a covariate): length effect: too few debates "
                  f"(n = {board.comparisons})\n")
    table(style.ratings)
    if board.pairs:
        out.write("\nHead to head (wins-losses-ties of the first; panel split)\n")
        for p in board.pairs:
            out.write(f"  {strip_controls(p.a)} vs {strip_controls(p.b)}: {p.wins}-{p.losses}-{p.ties}, "
                      f"split {_pct(p.split_share)}\n")
    return EXIT_OK
