"""How a judge panel's rulings make one result: the one rule every page, export and command states.

A panel's winner is the debater most of its counting judges picked (a judge that failed, or whose
winner flipped when the presentation order was reversed, does not count). When they split evenly there
is no winner: the debate counts as a tie. Mean scores are shown beside the picks but never pick a
winner, so "Judges split 1–1" and "Winner: X" cannot both be said of one debate.

Verdicts stored before this rule gave an even split to the higher mean score; `panel_decision` reads
any verdict by the rule, so an old verdict reads the same as a new one everywhere.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from webapp.models import Verdict

SPLIT_RULE = ("A panel's winner is the debater most of its judges picked; when the judges split evenly there is "
              "no winner and the debate counts as a tie. Mean scores are shown, but never pick the winner.")
DISAGREEMENT_MEANING = ("how far apart the judges' scores are: for each debater, the spread (standard deviation) "
                        "of the scores the judges gave it, averaged over the debaters, in points out of 100; "
                        "0 means every judge gave the same scores")


@dataclass(frozen=True)
class PanelDecision:
    """Who won by the rule, and how it was decided."""

    winner: str | None  # participant id; None for a tie or a split
    how: str  # single | unanimous | majority | split | undecided
    judges: int  # judges whose pick counted
    picks: tuple[tuple[str | None, int], ...] = ()  # picks per winner (None: a tie), most first

    @property
    def split(self) -> str:
        """"2–1", "1–1", "3–0"; empty for one judge."""
        if self.judges < 2:
            return ""
        counts = [str(n) for _, n in self.picks]
        return "–".join(counts if len(counts) > 1 else [*counts, "0"])

    @property
    def words(self) -> str:
        """How it was decided, in words: "majority of judges (2–1)", "judges split 1–1: no winner"."""
        return {"single": "one judge", "unanimous": f"judges agree {self.split}",
                "majority": f"majority of judges ({self.split})",
                "split": f"judges split {self.split}: no winner",
                "undecided": "every judge was undecided: no winner"}[self.how]

    def public(self) -> dict[str, object]:
        """For `show --json` and the JSON export."""
        return {"winner": self.winner, "decided_by": self.how, "judges": self.judges, "split": self.split or None,
                "words": self.words, "rule": SPLIT_RULE}


def panel_decision(verdict: Verdict) -> PanelDecision:
    """The winner of an available verdict by the rule (one judge: that judge's verdict)."""
    if len(verdict.rulings) < 2:
        return PanelDecision(verdict.winner, "single", len(verdict.rulings) or 1)
    undecided = set(verdict.undecided_judges)
    good = [r for r in verdict.rulings if r.error is None and not r.flipped and r.judge not in undecided]
    if not good:
        return PanelDecision(None, "undecided", 0)
    picks = tuple(Counter(r.winner for r in good).most_common())
    if len(good) == 1:
        return PanelDecision(picks[0][0], "single", 1, picks)
    if len(picks) == 1:
        return PanelDecision(picks[0][0], "unanimous", len(good), picks)
    if picks[0][1] > picks[1][1]:
        return PanelDecision(picks[0][0], "majority", len(good), picks)
    return PanelDecision(None, "split", len(good), picks)


def decided_winner(verdict: Verdict | None) -> str | None:
    """The winner by the rule, None for a tie, a split, or no usable verdict."""
    if verdict is None or not verdict.available:
        return None
    return panel_decision(verdict).winner
