"""A panel's tally counts only judges that decided: failed judges and judges whose winner flipped
when the order was reversed are left out."""

from __future__ import annotations

from webapp.models import JudgeRuling, Verdict
from webapp.ui.components.verdict import panel_tally


def test_an_undecided_judge_does_not_vote() -> None:
    verdict = Verdict(winner="pro", scores={"pro": 70, "con": 60}, undecided_judges=["b"], rulings=[
        JudgeRuling(judge="a", winner="pro"),
        JudgeRuling(judge="b", winner="con", swap_winner="pro", flipped=True),
        JudgeRuling(judge="c", winner="pro"),
        JudgeRuling(judge="d", error="no JSON"),
    ])
    tally = panel_tally(verdict)
    assert tally is not None
    assert tally.judges == 2 and tally.picks == (("pro", 2),)


def test_a_judge_that_held_its_winner_on_swap_votes() -> None:
    verdict = Verdict(winner="con", rulings=[JudgeRuling(judge="a", winner="con", flipped=False),
                                             JudgeRuling(judge="b", winner="pro", flipped=False)])
    tally = panel_tally(verdict)
    assert tally is not None and tally.judges == 2 and dict(tally.picks) == {"con": 1, "pro": 1}
