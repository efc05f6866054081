"""The Bradley-Terry fit (`webapp.results.ratings`): against known strengths, ties, a model seen once."""

from __future__ import annotations

import math
import random

import numpy as np

from webapp.results.ratings import BASE, SCALE, Comparison, fit


def simulate(strengths: list[float], debates: int, rng: random.Random, tie_rate: float = 0.1) -> list[Comparison]:
    """Debates between random pairs, won with the Bradley-Terry probability of the true strengths;
    a share of them tied (ties take nothing from either side's odds)."""
    out = []
    for _ in range(debates):
        i, j = rng.sample(range(len(strengths)), 2)
        if rng.random() < tie_rate:
            out.append(Comparison(i, j, 0.5))
            continue
        p = 1 / (1 + math.exp(-(strengths[i] - strengths[j])))
        out.append(Comparison(i, j, 1.0 if rng.random() < p else 0.0))
    return out


def truth(strengths: list[float]) -> np.ndarray:
    centred = np.array(strengths) - np.mean(strengths)
    return BASE + SCALE * centred


def test_the_fitted_order_matches_the_true_strengths_and_intervals_cover_them_about_95_percent() -> None:
    rng = random.Random(11)
    strengths = [-1.2, -0.6, 0.0, 0.5, 1.1, 1.8]
    covered = total = 0
    for _ in range(8):
        # No ties here: a tie thrown in at random, whatever the strengths, is not this model's data.
        board = fit(simulate(strengths, 1500, rng, tie_rate=0), len(strengths), reps=60, seed=rng.randrange(1 << 30))
        assert list(np.argsort(board.ratings)) == list(range(len(strengths)))  # the true order
        expected = truth(strengths)
        assert np.all(board.low <= board.ratings) and np.all(board.ratings <= board.high)
        covered += int(np.sum((board.low <= expected) & (expected <= board.high)))
        total += len(strengths)
    # 48 intervals at a nominal 95%: 41 or fewer covering would be very unlikely (p < 0.01)
    assert covered / total >= 0.85, f"{covered} of {total} intervals covered the true rating"


def test_intervals_narrow_with_more_debates() -> None:
    rng = random.Random(3)
    strengths = [0.0, 0.7, 1.4]
    few = fit(simulate(strengths, 60, rng), 3, reps=60)
    many = fit(simulate(strengths, 2000, rng), 3, reps=60)
    assert np.all((many.high - many.low) < (few.high - few.low))


def test_ties_count_as_half_wins() -> None:
    tied = [Comparison(0, 1, 0.5)] * 10 + [Comparison(1, 2, 1.0)] * 6 + [Comparison(1, 2, 0.0)] * 2
    split = [Comparison(0, 1, 1.0)] * 5 + [Comparison(0, 1, 0.0)] * 5 + tied[10:]
    a, b = fit(tied, 3, reps=0), fit(split, 3, reps=0)
    assert np.allclose(a.ratings, b.ratings, atol=0.05)
    assert abs(a.ratings[0] - a.ratings[1]) < 2  # nothing but ties: about the same rating (the prior aside)
    assert a.ratings[1] > a.ratings[2]


def test_a_model_with_a_single_debate_gets_a_finite_rating_and_a_wide_interval() -> None:
    rng = random.Random(5)
    comparisons = [*simulate([0.0, 0.5, 1.0], 2000, rng), Comparison(3, 0, 1.0)]  # model 3: one win
    board = fit(comparisons, 4, reps=100)
    assert np.all(np.isfinite(board.ratings)) and np.all(np.isfinite(board.low)) and np.all(np.isfinite(board.high))
    widths = board.high - board.low
    assert widths[3] > 2 * max(widths[:3])
    assert board.ratings[3] > board.ratings[0]  # it beat model 0, once


def test_style_control_finds_a_length_effect_that_is_there_and_none_that_is_not() -> None:
    rng = random.Random(9)
    equal, verbose = [], []
    for _ in range(3000):
        i, j = rng.sample(range(4), 2)
        x = rng.uniform(-0.5, 0.5)  # normalised word-count difference
        won = rng.random() < 1 / (1 + math.exp(-(2.0 * x)))  # equal models; length alone decides
        verbose.append(Comparison(i, j, 1.0 if won else 0.0, x))
        equal.append(Comparison(i, j, 1.0 if rng.random() < 0.5 else 0.0, x))
    found = fit(verbose, 4, with_style=True, reps=30)
    assert found.style is not None and found.style_low is not None and found.style_high is not None
    assert 1.0 < found.style < 3.0 and found.style_low > 0.5  # longer wins, by about the true effect (2.0)
    null = fit(equal, 4, with_style=True, reps=30)
    assert null.style_low is not None and null.style_high is not None
    assert null.style_low < 0 < null.style_high


def test_no_comparisons_gives_the_base_rating() -> None:
    board = fit([], 2)
    assert list(board.ratings) == [BASE, BASE]
