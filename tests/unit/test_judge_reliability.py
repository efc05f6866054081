"""Small models, honestly: a judge is called unreliable above 20 % parse failures or 50 % flips on the side
swap, with the figure — and only with enough data (3 debates; 5 rulings / 3 re-judgings), so one bad
debate does not brand a judge."""

from __future__ import annotations

from webapp.engine.judge_health import HealthReport, JudgeStats


def stats(**figures: int) -> JudgeStats:
    return JudgeStats(judge="compatible:gemma", **figures)


def test_a_parse_failure_rate_over_20_percent_is_unreliable_with_its_figure() -> None:
    assert stats(debates=5, rulings=5, failed=2).unreliable() == [
        "40% of its rulings failed to parse or needed a repair (2 of 5)"]
    assert stats(debates=5, rulings=5, failed=1).unreliable() == []  # 20 % is not over 20 %
    assert stats(debates=10, rulings=10, failed=3).unreliable_note() == (
        "Unreliable judge: 30% of its rulings failed to parse or needed a repair (3 of 10)")


def test_a_flip_rate_over_half_is_unreliable_with_its_figure() -> None:
    assert stats(debates=3, rulings=3, rejudged=3, flipped=2).unreliable() == [
        "its winner flipped when the sides were swapped in 67% of re-judged debates (2 of 3)"]
    assert stats(debates=4, rulings=4, rejudged=4, flipped=2).unreliable() == []  # 50 % is not over 50 %
    both = stats(debates=6, rulings=6, failed=6, rejudged=6, flipped=6).unreliable_note()
    assert both is not None and "100% of its rulings" in both and "; its winner flipped" in both


def test_too_little_data_brands_nobody() -> None:
    assert stats(debates=1, rulings=1, failed=1, rejudged=1, flipped=1).unreliable() == []  # one debate
    assert stats(debates=2, rulings=10, failed=10).unreliable() == []  # a panel of one model, two debates
    assert stats(debates=4, rulings=4, failed=4).unreliable() == []  # four rulings: not yet five
    assert stats(debates=3, rulings=3, rejudged=2, flipped=2).unreliable() == []  # two re-judgings
    report = HealthReport(debates=6, judges=[stats(debates=1, rulings=1, failed=1),
                                             JudgeStats(judge="x:bad", debates=5, rulings=5, failed=5)], pairs=[])
    assert list(report.unreliable_notes()) == ["x:bad"]
    assert report.public()["judges"][1]["unreliable"] == [
        "100% of its rulings failed to parse or needed a repair (5 of 5)"]
