"""Bradley-Terry ratings with bootstrap intervals, and the style-controlled variant.

The model: side A beats side B with probability σ(θ_A − θ_B (+ β·style)), θ one strength per model.
A debate's outcome is A's score s ∈ [0, 1] (1 a win, 0 a loss, ½ a tie; a side-swapped series rated
as one pair gives the mean of its debates), and its log-likelihood is s·log p + (1 − s)·log(1 − p), the
"ties as half wins" reading. The fit maximises that likelihood with `scipy.optimize.minimize`
(L-BFGS-B, analytic gradient) under a weak Gaussian prior on θ, which keeps the strength of a model
that won (or lost) every debate finite and pins the scale's origin (the strengths are then centred).

Speed: debates with the same pair, outcome and style covariate (rounded to 0.1) are one *cell* with a weight
(its count), so a fit costs in proportion to the number of cells (a few hundred), not debates. The
bootstrap resamples debates with replacement, which is a multinomial draw of the cells' counts: each
replicate is a fit on reweighted cells.

Ratings are shown on the familiar Elo-like scale: 1000 + 400·θ / ln 10 (a 400-point gap: 10 to 1 odds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

SCALE = 400 / math.log(10)
BASE = 1000.0
PRIOR = 0.05  # precision of the Gaussian prior on each strength (≈ a twentieth of a debate's information)
# The style covariate is rounded to this step (21 values), so that debates merge into cells: the rounding
# error (±0.05) is small against the covariate's spread, which shrinks the effect by ~2% at most.
STYLE_STEP = 0.1


@dataclass(frozen=True)
class Comparison:
    """One rated unit (a debate, or a side-swapped series rated as a pair): A's score against B."""

    a: int
    b: int
    score: float
    style: float = 0.0  # A's normalised word-count difference, (words_A − words_B) / (words_A + words_B)


@dataclass(frozen=True)
class Fit:
    """Ratings (Elo-like scale) per model index with their 95% intervals; `style` is the fitted
    coefficient of the covariate (in θ units per unit of normalised length difference), with its interval."""

    ratings: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    style: float | None = None
    style_low: float | None = None
    style_high: float | None = None
    # beats[i, j]: the share of bootstrap replicates in which model i is rated above model j (None: no
    # replicates were drawn).
    beats: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class Cells:
    """Distinct comparisons (a, b, score, style) and, for each input comparison, its cell (`of`)."""

    a: NDArray[np.int64]
    b: NDArray[np.int64]
    s: NDArray[np.float64]
    x: NDArray[np.float64]
    of: NDArray[np.int64]

    def weights(self, upto: int | None = None) -> NDArray[np.float64]:
        """How many of the first `upto` comparisons (all by default) fall in each cell."""
        return np.bincount(self.of[:upto], minlength=len(self.a)).astype(np.float64)


def cells(comparisons: Sequence[Comparison], with_style: bool = False) -> Cells:
    rows = np.array([(c.a, c.b, c.score, round(c.style / STYLE_STEP) * STYLE_STEP if with_style else 0.0)
                     for c in comparisons], dtype=np.float64).reshape(-1, 4)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    return Cells(unique[:, 0].astype(np.int64), unique[:, 1].astype(np.int64), unique[:, 2], unique[:, 3],
                 inverse.reshape(-1).astype(np.int64))


def _objective(params: NDArray[np.float64], a: NDArray[np.int64], b: NDArray[np.int64], s: NDArray[np.float64],
               x: NDArray[np.float64], w: NDArray[np.float64], n: int,
               with_style: bool) -> tuple[float, NDArray[np.float64]]:
    """Negative penalised log-likelihood and its gradient."""
    theta = params[:n]
    z = theta[a] - theta[b]
    if with_style:
        z = z + params[n] * x
    # log σ(z) and log σ(−z), stably
    log_p = -np.logaddexp(0.0, -z)
    log_q = -np.logaddexp(0.0, z)
    loss = -float(np.sum(w * (s * log_p + (1 - s) * log_q))) + 0.5 * PRIOR * float(theta @ theta)
    resid = w * (1.0 / (1.0 + np.exp(-z)) - s)  # d loss / d z
    grad = np.zeros_like(params)
    grad[:n] = np.bincount(a, resid, n) - np.bincount(b, resid, n) + PRIOR * theta
    if with_style:
        grad[n] = float(resid @ x)
    return loss, grad


def _solve(a: NDArray[np.int64], b: NDArray[np.int64], s: NDArray[np.float64], x: NDArray[np.float64],
           w: NDArray[np.float64], n: int, with_style: bool,
           start: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    size = n + (1 if with_style else 0)
    x0 = np.zeros(size) if start is None else start
    result = minimize(_objective, x0, args=(a, b, s, x, w, n, with_style), jac=True, method="L-BFGS-B",
                      options={"maxiter": 500, "gtol": 1e-8})
    params = np.asarray(result.x, dtype=np.float64)
    params[:n] -= params[:n].mean()  # the likelihood sees differences only: centre the strengths
    return params


def point_ratings(grid: Cells, n: int, upto: int | None = None) -> NDArray[np.float64]:
    """Ratings (Elo-like scale, no intervals) from the first `upto` comparisons of `grid`: a trend line."""
    w = grid.weights(upto)
    with threadpool_limits(limits=1, user_api="blas"):
        return BASE + SCALE * _solve(grid.a, grid.b, grid.s, grid.x, w, n, False)[:n]


def fit(comparisons: Sequence[Comparison], n: int, *, with_style: bool = False, reps: int = 100,
        seed: int = 0, level: float = 0.95) -> Fit:
    """Ratings of `n` models from `comparisons`, with percentile intervals from `reps` bootstrap
    replicates (comparisons resampled with replacement; a fixed `seed`, so the same data always gives
    the same board)."""
    if not comparisons:
        zeros = np.full(n, BASE)
        return Fit(zeros, zeros.copy(), zeros.copy())
    # Hundreds of fits of a dozen parameters each: BLAS threads would only contend (10x slower measured).
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit(cells(comparisons, with_style), n, with_style, reps, seed, level)


def _fit(grid: Cells, n: int, with_style: bool, reps: int, seed: int, level: float) -> Fit:
    a, b, s, x, w = grid.a, grid.b, grid.s, grid.x, grid.weights()
    point = _solve(a, b, s, x, w, n, with_style)
    total = int(w.sum())
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(total, w / w.sum(), size=reps) if reps > 0 else np.empty((0, len(w)))
    replicates = np.array([_solve(a, b, s, x, draw.astype(np.float64), n, with_style, start=point)
                           for draw in draws]).reshape(-1, point.size)
    tail = (1 - level) / 2 * 100
    if len(replicates):
        low_q, high_q = np.percentile(replicates, [tail, 100 - tail], axis=0)
    else:
        low_q, high_q = point.copy(), point.copy()
    ratings = BASE + SCALE * point[:n]
    low = BASE + SCALE * np.minimum(low_q[:n], point[:n])
    high = BASE + SCALE * np.maximum(high_q[:n], point[:n])
    beats = None
    if len(replicates):
        strengths = replicates[:, :n]
        beats = (strengths[:, :, None] > strengths[:, None, :]).mean(axis=0)
    if not with_style:
        return Fit(ratings, low, high, beats=beats)
    return Fit(ratings, low, high, float(point[n]), float(low_q[n]), float(high_q[n]), beats=beats)
