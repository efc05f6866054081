"""Judge health on a stored corpus with known answers (`tests.corpus`): every figure per judge and per
pair, Cohen's kappa, the cache that a new verdict invalidates, and `python -m webapp judges`."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from tests.corpus import ALPHA, CAST, EXPECTED, EXPECTED_PAIRS, GAMMA, ruling, store_corpus
from webapp.cli import EXIT_OK, main
from webapp.engine.judge_health import JudgeHealth, cohen_kappa, judge_health
from webapp.models import EventKind, Verdict
from webapp.store import Store


def test_cohen_kappa_known_values() -> None:
    # The textbook example: 50 items, yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> kappa 0.4.
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("pro", "pro"), ("con", "con")]) == pytest.approx(1.0)
    assert cohen_kappa([("pro", "con"), ("con", "pro")]) == pytest.approx(-1.0)
    assert cohen_kappa([("pro", "pro"), ("pro", "pro")]) is None  # one label throughout: chance explains it
    assert cohen_kappa([]) is None


@pytest.fixture
async def store(tmp_path: Path):
    store = await Store.open(tmp_path / "db.sqlite3")
    await store_corpus(store)
    yield store
    await store.close()


async def test_every_figure_of_every_judge_matches_the_worked_answers(store: Store) -> None:
    report = await JudgeHealth(store).report()
    assert report.debates == 4
    assert [j.judge for j in report.judges] == [ALPHA, "x:beta", GAMMA]  # most rulings first
    for stats in report.judges:
        expected = EXPECTED[stats.judge]
        got = stats.model_dump()
        assert {k: got[k] for k in expected if k != "kappa"} == {k: v for k, v in expected.items() if k != "kappa"}, \
            stats.judge
        assert stats.kappa == pytest.approx(expected["kappa"]), stats.judge
    alpha = report.judges[0]
    assert (alpha.failure_rate, alpha.first_rate, alpha.second_rate) == (0.25, 1.0, 0.0)
    assert (alpha.flip_rate, alpha.agreement) == (0.0, 0.5)
    beta = report.judges[1]
    assert (beta.failure_rate, beta.first_rate, beta.flip_rate) == (pytest.approx(1 / 3), 0.0, 1.0)
    pairs = {p.judges: (p.debates, p.agreed, p.kappa) for p in report.pairs}
    assert pairs.keys() == EXPECTED_PAIRS.keys()
    for key, (debates, agreed, kappa) in EXPECTED_PAIRS.items():
        assert pairs[key][:2] == (debates, agreed)
        assert pairs[key][2] == pytest.approx(kappa)


async def test_the_report_is_cached_until_a_new_verdict_is_stored(store: Store) -> None:
    health = judge_health(store)
    assert judge_health(store) is health  # one per store
    first = await health.report()
    assert await health.report() is first  # nothing new: not recomputed
    await store.create_debate("d6", "Topic d6", "classic", {"topic": "t", "participants": CAST},
                              {"participants": CAST})
    assert await health.report() is first  # a debate without a verdict changes nothing
    verdict = Verdict(winner="b", rulings=[ruling(GAMMA, "b", ["b", "a"])])
    await store.append("d6", EventKind.VERDICT, {"verdict": verdict.model_dump(mode="json")})
    second = await health.report()
    assert second is not first
    gamma = next(j for j in second.judges if j.judge == GAMMA)
    assert (gamma.rulings, gamma.picked_first) == (3, 1)
    await store.delete_debate("d6")
    assert (await health.report()).judges == first.judges  # a deleted debate no longer counts


def test_cli_judges_prints_the_figures_and_json(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"

    async def build() -> None:
        store = await Store.open(db)
        await store_corpus(store)
        await store.close()

    asyncio.run(build())
    out = io.StringIO()
    assert main(["judges", "--json", "--db", str(db)], out=out) == EXIT_OK
    data = json.loads(out.getvalue())
    assert data["debates"] == 4
    alpha = next(j for j in data["judges"] if j["judge"] == ALPHA)
    assert (alpha["rulings"], alpha["failed"], alpha["failure_rate"]) == (4, 1, 0.25)
    assert (alpha["first_rate"], alpha["second_rate"], alpha["agreement"]) == (1.0, 0.0, 0.5)
    assert alpha["kappa"] == pytest.approx(EXPECTED[ALPHA]["kappa"])
    assert [p["judges"] for p in data["pairs"]] == [[ALPHA, "x:beta"], [ALPHA, GAMMA]]
    out = io.StringIO()
    assert main(["judges", "--db", str(db)], out=out) == EXIT_OK
    text = out.getvalue()
    assert "Judge health over 4 judged debates" in text
    line = next(row for row in text.splitlines() if row.startswith(ALPHA))
    assert "1 (25%)" in line and "100% / 0% (3)" in line and "0 of 1 (0%)" in line and "50% (4)" in line
    assert line.rstrip().endswith("0.11")
    assert f"{ALPHA} + {GAMMA}: 2 debates, identical winners 50%, kappa 0.33" in text


async def test_verdict_queries_read_only_the_verdict_index(store: Store) -> None:
    from webapp.store.verdicts import MARKER_SQL, VERDICTS_SQL

    for sql in (MARKER_SQL, VERDICTS_SQL):
        steps = [row[3] for row in await store.fetchall(f"EXPLAIN QUERY PLAN {sql}")]
        assert "USING INDEX events_verdicts" in steps[0], steps
