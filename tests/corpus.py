"""A stored corpus of verdicts with chosen rulings, whose judge-health figures are worked out by hand
(`EXPECTED`): used by the judge-health tests of the engine, the CLI and the /judges page."""

from __future__ import annotations

from typing import Any

from webapp.models import EventKind, JudgeRuling, Verdict
from webapp.store import Store

ALPHA, BETA, GAMMA = "x:alpha", "x:beta", "x:gamma"
CAST = [{"id": "a", "position": "pro"}, {"id": "b", "position": "con"}]


def ruling(judge: str, winner: str | None, order: list[str], **extra: Any) -> JudgeRuling:
    return JudgeRuling(judge=judge, winner=winner, order=order, **extra)


# debate id -> its verdicts' rulings, in the order stored (only the last verdict of a debate counts)
CORPUS: dict[str, list[list[JudgeRuling]]] = {
    "d1": [[ruling(ALPHA, "a", ["a", "b"], flipped=False, swap_winner="a"),
            ruling(BETA, "a", ["b", "a"], flipped=True, swap_winner="b")]],
    "d2": [[ruling(ALPHA, "b", ["b", "a"], parse_failures=1),
            ruling(BETA, "a", ["b", "a"])]],
    "d3": [[ruling(ALPHA, None, ["a", "b"]),
            ruling(BETA, None, ["a", "b"], error="the reply contains no JSON object"),
            ruling(GAMMA, "b", ["a", "b"])]],
    "d4": [[ruling(GAMMA, "b", ["a", "b"], parse_failures=3)],  # replaced by the later verdict below
           [ruling(ALPHA, "a", ["a", "b"]), ruling(GAMMA, "a", ["b", "a"])]],
    "d5": [],  # no verdict: not counted
}

# Worked out by hand from CORPUS (kappa over the winners' positions pro / con / tie):
#   alpha vs others: (pro,pro) (con,pro) (tie,con) (pro,pro): po = 2/4, pe = (2·3 + 1·1 + 1·0)/16 = 7/16
#   beta  vs alpha:  (pro,pro) (pro,con):                     po = 1/2, pe = (2·1)/4 = 1/2 -> 0
#   gamma vs alpha:  (con,tie) (pro,pro):                     po = 1/2, pe = (1·1)/4 = 1/4 -> 1/3
EXPECTED: dict[str, dict[str, Any]] = {
    ALPHA: {"debates": 4, "rulings": 4, "failed": 1, "ordered": 3, "picked_first": 3, "picked_second": 0,
            "ties": 1, "rejudged": 1, "flipped": 0, "compared": 4, "agreed": 2,
            "kappa": (0.5 - 7 / 16) / (1 - 7 / 16)},
    BETA: {"debates": 3, "rulings": 3, "failed": 1, "ordered": 2, "picked_first": 0, "picked_second": 2,
           "ties": 0, "rejudged": 1, "flipped": 1, "compared": 2, "agreed": 1, "kappa": 0.0},
    GAMMA: {"debates": 2, "rulings": 2, "failed": 0, "ordered": 2, "picked_first": 0, "picked_second": 2,
            "ties": 0, "rejudged": 0, "flipped": 0, "compared": 2, "agreed": 1, "kappa": 1 / 3},
}
EXPECTED_PAIRS = {(ALPHA, BETA): (2, 1, 0.0), (ALPHA, GAMMA): (2, 1, 1 / 3)}  # debates, agreed, kappa


async def store_corpus(store: Store) -> None:
    for debate_id, verdicts in CORPUS.items():
        config = {"topic": f"Topic {debate_id}", "participants": CAST}
        await store.create_debate(debate_id, f"Topic {debate_id}", "classic", config,
                                  {"status": "completed", "participants": CAST})
        for rulings in verdicts:
            verdict = Verdict(winner=rulings[0].winner, rulings=rulings)
            await store.append(debate_id, EventKind.VERDICT, {"verdict": verdict.model_dump(mode="json")})
