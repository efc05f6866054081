"""The new-debate form: validation messages at the field, nothing typed is lost, presets, starting."""

from __future__ import annotations

import pytest
from nicegui import ui
from nicegui.testing import User

from tests.ui.helpers import assert_nowhere_on_page, engine, one, start_by_clicking
from webapp.engine.formats import FORMATS
from webapp.engine.machine import State
from webapp.models import TOPIC_MAX_CHARS, DebateConfig
from webapp.settings import get_settings
from webapp.ui.components.presets import QUICK_DEMO_TOPIC


async def test_empty_topic_is_reported_at_the_field_and_typed_values_survive(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-participants[0].name").clear().type("Alice the Bold")
    user.find(marker="field-participants[0].persona").type("A careful economist.")
    user.find(marker="start").click()
    await user.should_see("The topic is required")
    assert one(user, "field-topic").error == "The topic is required"
    await user.should_see(marker="form-errors")
    # the re-rendered form still holds what was typed
    assert one(user, "field-participants[0].name").value == "Alice the Bold"
    assert one(user, "field-participants[0].persona").value == "A careful economist."
    assert (await engine()).sessions == {}


async def _refused_for_missing_key(user: User, marker: str, env: str) -> None:
    """Start is refused: the variable to set is named at the field `marker`, and no debate begins."""
    user.find(marker="start").click()
    await user.should_see(f"needs an API key: set {env}")
    assert env in one(user, marker).error
    assert (await engine()).sessions == {}


async def test_too_long_topic_is_refused(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("x" * (TOPIC_MAX_CHARS + 1))
    user.find(marker="start").click()
    await user.should_see(f"at most {TOPIC_MAX_CHARS} characters")
    assert "2000" in one(user, "field-topic").error
    assert len(one(user, "field-topic").value) == TOPIC_MAX_CHARS + 1  # kept, not truncated


async def test_bad_base_url_budget_and_missing_key_errors_name_their_fields(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("Is tea better than coffee?")
    provider = one(user, "field-participants[0].provider")
    assert provider.options["openai"] == "OpenAI — unavailable: set OPENAI_API_KEY"
    with user:
        provider.value = "compatible"
    await user.should_see(marker="field-participants[0].base_url")
    user.find(marker="field-participants[0].base_url").type("localhost:11434")
    user.find(marker="field-budget.warn_at").type("2")
    user.find(marker="field-budget.cost_limit").type("1")
    user.find(marker="start").click()
    await user.should_see("The base URL must start with http:// or https://")
    assert "http://" in one(user, "field-participants[0].base_url").error
    assert one(user, "field-budget.cost_limit").error == "The cost limit must be at least the warn-at amount"
    assert one(user, "field-participants[0].base_url").value == "localhost:11434"

    # fix those; pick OpenAI for the second speaker without a key configured
    with user:
        one(user, "field-participants[0].base_url").value = "http://localhost:11434/v1"
        one(user, "field-budget.cost_limit").value = 5
        one(user, "field-participants[1].provider").value = "openai"
    await user.should_see("Unavailable: set OPENAI_API_KEY in the environment or .env and restart, or pick another "
                          "provider.")
    await _refused_for_missing_key(user, "field-participants[1].provider", "OPENAI_API_KEY")


async def test_participant_editor_adds_reorders_and_removes(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-participants[0].name").clear().type("First")
    user.find(marker="add-participant").click()
    await user.should_see("Participants (3)")
    assert one(user, "field-participants[2].name").value == "Participant 3"
    assert not one(user, "move-up-0").enabled and not one(user, "move-down-2").enabled
    user.find(marker="move-down-0").click()
    assert [one(user, f"field-participants[{i}].name").value for i in range(3)] == [
        "Negative", "First", "Participant 3"]
    user.find(marker="remove-participant-2").click()
    await user.should_see("Participants (2)")
    # two participants is the minimum: both remove buttons are disabled now
    assert not one(user, "remove-participant-0").enabled
    assert not one(user, "remove-participant-1").enabled
    assert one(user, "field-participants[1].name").value == "First"


async def test_quick_demo_preset_starts_a_debate_and_opens_its_page(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("A topic left from before")
    user.find(marker="field-tags").type("ethics, policy")
    user.find(marker="field-participants[0].name").clear().type("Ada")
    user.find(marker="preset-quick-demo").click()
    # The demo as it comes: what it does not use (a topic, tags, names typed before) is not carried into it.
    assert one(user, "field-topic").value == ""
    assert one(user, "field-topic").props["placeholder"] == QUICK_DEMO_TOPIC
    assert one(user, "field-tags").value == ""
    assert one(user, "field-participants[0].name").value == FORMATS["oxford"].cast[0].name
    await user.should_see("Preset applied: Quick demo, on a fresh form (topic and tags cleared)")
    assert one(user, "field-format").value == "oxford"
    user.find(marker="field-topic").type("Should homework be abolished?")
    session = await start_by_clicking(user)
    assert session.state.config.topic == "Should homework be abolished?"
    assert session.state.config.tags == []
    assert all(p.provider == "demo" for p in session.state.config.participants)
    assert await session.join() is State.COMPLETED
    await user.should_see(marker="winner", retries=20)


@pytest.mark.parametrize("format_id", ["roundtable", "collaborative"])
async def test_format_presets_fill_a_cast_that_validates(user: User, format_id: str) -> None:
    await user.open("/new")
    user.find(marker=f"preset-{format_id}").click()
    assert one(user, "field-format").value == format_id
    assert (await start_by_clicking(user)).state.config.format == format_id


async def test_key_never_reaches_the_page(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "fake-key-NEVER-SHOW-THIS-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    get_settings.cache_clear()
    await user.open("/new")
    assert one(user, "field-participants[0].provider").options["openai"] == "OpenAI"  # available now
    assert_nowhere_on_page(user, secret)


async def _started_config(user: User) -> DebateConfig:
    """Start from the form; the debate page opens; the config the engine stored for that debate."""
    return (await start_by_clicking(user)).state.config


def _set(user: User, marker: str, value: object) -> None:
    """Change an input as the browser would: the value arrives, its change handlers run."""
    with user:
        one(user, marker).value = value


# --- judge panel ---------------------------------------------------------------------------------


async def test_a_panel_of_two_judges_and_a_fallback_reaches_the_debate_and_its_rulings(user: User) -> None:
    await user.open("/new")
    user.find(marker="preset-quick-demo").click()
    user.find(marker="add-judge").click()
    await user.should_see(marker="field-judge.judges[1].model")
    assert "Panel of 2 judges" in one(user, "judge-count").text
    _set(user, "field-judge.judges[1].model", "demo-instant")
    await user.should_not_see(marker="field-judge.fallback.model")  # hidden until asked for
    _set(user, "field-judge.use_fallback", True)
    await user.should_see(marker="field-judge.fallback.model")
    assert one(user, "field-judge.fallback.model").value == "demo-instant"  # prefilled
    session = await start_by_clicking(user)
    judge = session.state.config.judge
    assert [j.label for j in judge.judges] == ["demo:demo", "demo:demo-instant"]
    assert judge.fallback is not None and judge.fallback.label == "demo:demo-instant"
    assert await session.join() is State.COMPLETED
    await user.should_see(marker="rulings", retries=20)
    (table,) = [e for e in one(user, "rulings").descendants() if isinstance(e, ui.table)]
    assert [row["judge"] for row in table.rows] == ["demo:demo", "demo:demo-instant", "Mean"]


async def test_judges_can_be_added_up_to_five_and_removed_down_to_one(user: User) -> None:
    await user.open("/new")
    assert not one(user, "remove-judge-0").enabled  # a debate needs at least one judge
    for _ in range(4):
        user.find(marker="add-judge").click()
    await user.should_see(marker="field-judge.judges[4].provider")
    assert not one(user, "add-judge").enabled
    _set(user, "field-judge.judges[2].model", "demo-instant")
    user.find(marker="remove-judge-0").click()
    user.find(marker="remove-judge-0").click()
    await user.should_not_see(marker="field-judge.judges[3].provider")
    # the judge typed as #3 is now #1: rows move, values move with them
    assert one(user, "field-judge.judges[0].model").value == "demo-instant"
    assert one(user, "add-judge").enabled


async def test_missing_key_on_a_judge_or_the_fallback_is_shown_at_that_judge(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("Is chess a sport?")
    user.find(marker="add-judge").click()
    await user.should_see(marker="field-judge.judges[1].provider")
    provider = one(user, "field-judge.judges[1].provider")
    assert provider.options["openai"] == "OpenAI — unavailable: set OPENAI_API_KEY"
    _set(user, "field-judge.judges[1].provider", "openai")
    await user.should_see(marker="missing-key-judge.judges[1]")
    missing = one(user, "missing-key-judge.judges[1]")
    assert any("set OPENAI_API_KEY" in getattr(e, "text", "") for e in missing.descendants())
    assert one(user, "field-judge.judges[1].model").value == "gpt-4o-mini"
    await _refused_for_missing_key(user, "field-judge.judges[1].provider", "OPENAI_API_KEY")
    assert one(user, "field-judge.judges[0].provider").error is None
    assert one(user, "field-judge.judges[1].provider").value == "openai"  # kept

    # the fallback judge is checked too, and its error lands on its own provider
    _set(user, "field-judge.judges[1].provider", "demo")
    _set(user, "field-judge.judges[1].model", "demo-instant")  # a panel needs different models
    _set(user, "field-judge.use_fallback", True)
    _set(user, "field-judge.fallback.provider", "anthropic")
    await user.should_see(marker="missing-key-judge.fallback")
    await _refused_for_missing_key(user, "field-judge.fallback.provider", "ANTHROPIC_API_KEY")


# --- format-dependent settings -------------------------------------------------------------------


async def test_convergence_threshold_is_offered_only_for_convergence_and_reaches_the_config(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("How many bike lanes?")
    await user.should_not_see(marker="field-convergence_threshold")
    _set(user, "field-format", "convergence")
    await user.should_see(marker="field-convergence_threshold")
    assert one(user, "field-convergence_threshold").value == 85
    _set(user, "field-convergence_threshold", 70)
    _set(user, "field-format", "oxford")
    await user.should_not_see(marker="field-convergence_threshold")
    _set(user, "field-format", "convergence")
    await user.should_see(marker="field-convergence_threshold")
    assert one(user, "field-convergence_threshold").value == 70  # not lost by switching formats
    config = await _started_config(user)
    assert (config.format, config.convergence_threshold) == ("convergence", 70)


async def test_collaborative_evaluation_and_clarification_settings_reach_the_config(user: User) -> None:
    await user.open("/new")
    await user.should_not_see(marker="field-evaluation")
    user.find(marker="preset-collaborative").click()
    await user.should_see(marker="field-evaluation")
    assert one(user, "field-evaluation").value == "quality"
    assert one(user, "field-quality_threshold").value == 80
    _set(user, "field-evaluation", "fixed")
    await user.should_not_see(marker="field-quality_threshold")  # a fixed count has no threshold
    _set(user, "field-evaluation", "convergence")
    await user.should_see(marker="field-quality_threshold")
    _set(user, "field-quality_threshold", 90)
    _set(user, "field-clarification", False)
    await user.should_not_see(marker="field-clarification_questions")  # only asked when questions are on
    _set(user, "field-clarification", True)
    _set(user, "field-clarification_questions", 2)
    _set(user, "field-clarification_iterations", 1)
    config = await _started_config(user)
    assert (config.evaluation, config.quality_threshold) == ("convergence", 90)
    assert (config.clarification, config.clarification_questions, config.clarification_iterations) == (
        True, 2, 1)


async def test_settings_the_form_hides_never_block_a_start(user: User) -> None:
    await user.open("/new")
    user.find(marker="preset-collaborative").click()
    _set(user, "field-quality_threshold", 500)  # out of range, but unused with fixed rounds
    _set(user, "field-evaluation", "fixed")
    await user.should_not_see(marker="field-quality_threshold")
    _set(user, "field-context.strategy", "sliding-window")
    await user.should_see(marker="field-context.window")
    _set(user, "field-context.window", 0)  # out of range, but only used by a sliding window
    _set(user, "field-context.strategy", "summarize")
    _set(user, "field-judge.judges[0].model", "")
    _set(user, "field-judge.enabled", False)
    await user.should_not_see(marker="field-judge.judges[0].model")
    config = await _started_config(user)
    assert (config.evaluation, config.quality_threshold) == ("fixed", 80)
    assert (config.context.strategy, config.context.window) == ("summarize", 6)
    assert config.judge.enabled is False


# --- discipline, context, timeouts ---------------------------------------------------------------


async def test_discipline_context_and_timeout_settings_reach_the_config(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("Should exams be open-book?")
    assert one(user, "field-word_limit_action").value == "truncate"
    _set(user, "section-discipline", True)  # the user opens it ...
    assert one(user, "section-discipline").value is True
    user.find(marker="add-judge").click()  # ... and a re-rendered form keeps it open
    await user.should_see(marker="field-judge.judges[1].provider")
    assert one(user, "section-discipline").value is True
    user.find(marker="remove-judge-1").click()
    await user.should_not_see(marker="field-judge.judges[1].provider")
    _set(user, "field-word_limit", 80)
    _set(user, "field-word_limit_action", "reject")
    _set(user, "field-strict", True)
    await user.should_not_see(marker="field-context.window")
    _set(user, "field-context.strategy", "sliding-window")
    await user.should_see(marker="field-context.window")
    _set(user, "field-context.window", 4)
    _set(user, "field-timeouts.connect", 5)
    _set(user, "field-timeouts.first_token", 30)
    _set(user, "field-timeouts.turn", 200)
    _set(user, "field-max_retries", 0)
    _set(user, "field-participants[1].context_tokens", 4000)
    config = await _started_config(user)
    assert (config.word_limit, config.word_limit_action, config.strict) == (80, "reject", True)
    assert (config.context.strategy, config.context.window) == ("sliding-window", 4)
    assert (config.timeouts.connect, config.timeouts.first_token, config.timeouts.turn) == (5, 30, 200)
    assert config.max_retries == 0
    assert [p.context_tokens for p in config.participants] == [None, 4000]


async def test_out_of_range_retries_timeout_and_context_budget_are_reported_at_their_fields(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("Should exams be open-book?")
    assert one(user, "section-timeouts").value is False  # advanced settings start folded
    _set(user, "field-max_retries", 50)
    _set(user, "field-timeouts.first_token", 1000)
    _set(user, "field-participants[0].context_tokens", 100)
    _set(user, "field-judge.judges[0].model", "")
    user.find(marker="start").click()
    await user.should_see(marker="form-errors")
    assert "20" in one(user, "field-max_retries").error
    assert "900" in one(user, "field-timeouts.first_token").error
    assert "500" in one(user, "field-participants[0].context_tokens").error
    assert one(user, "field-judge.judges[0].model").error
    links = [one(user, f"error-link-{path}").props["label"] for path in (
        "participants[0].context_tokens", "judge.judges[0].model", "timeouts.first_token", "max_retries")]
    assert links == ["The context budget of participant 1 (Affirmative) must be at least 500",
                     "The model of judge 1 is required", "The first-token timeout must be at most 900",
                     "The number of retries must be at most 20"]
    banner = " ".join(str(e.props.get("label") or getattr(e, "text", "")) for e in one(user, "form-errors")
                      .descendants())
    assert "." not in banner.replace("Please fix 4 problems:", "")  # no internal paths
    assert one(user, "section-timeouts").value is True  # opened so the errors are in sight
    assert one(user, "field-max_retries").value == 50  # what was typed is kept, not clamped
    assert one(user, "field-timeouts.first_token").value == 1000
    assert (await engine()).sessions == {}
    # fixing a field clears its error at once
    _set(user, "field-max_retries", 5)
    assert one(user, "field-max_retries").error is None


# --- what the form says about settings that have no effect, and the process settings it uses --------


async def test_an_anthropic_participant_is_told_its_temperature_is_not_sent(user: User) -> None:
    await user.open("/new")
    await user.should_not_see(marker="temperature-note-participants[0]")
    _set(user, "field-participants[0].provider", "anthropic")
    await user.should_see(marker="temperature-note-participants[0]")
    await user.should_see("Anthropic does not accept a temperature: the Temperature field is not sent")
    await user.should_not_see(marker="temperature-note-participants[1]")  # the other row is still demo
    await user.should_not_see(marker="temperature-note-judge.judges[0]")  # a judge row has no temperature field
    _set(user, "field-participants[0].provider", "openai")
    await user.should_not_see(marker="temperature-note-participants[0]")


async def test_rostrum_max_retries_fills_the_retries_field_and_an_emptied_field_means_it(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROSTRUM_MAX_RETRIES", "6")
    get_settings.cache_clear()
    await user.open("/new")
    user.find(marker="field-topic").type("Should exams be open-book?")
    assert one(user, "field-max_retries").value == 6  # not the literal 3
    _set(user, "field-max_retries", None)  # emptied: the setting, not the model's default
    config = await _started_config(user)
    assert config.max_retries == 6


async def test_a_silent_participant_a_bad_colour_and_an_invisible_topic_are_refused_at_their_fields(
    user: User,
) -> None:
    await user.open("/new")  # classic: only pro and con ever speak
    user.find(marker="field-topic").type("\u200b\ufeff")
    user.find(marker="start").click()
    await user.should_see("the topic has no visible text")
    assert "visible" in one(user, "field-topic").error
    _set(user, "field-topic", "Should exams be open-book?")
    user.find(marker="add-participant").click()
    await user.should_see("Participants (3)")
    assert one(user, "field-participants[2].position").value == "con"  # a new seat gets a side that speaks
    _set(user, "field-participants[2].position", "moderator")
    user.find(marker="start").click()
    await user.should_see("would never speak")
    assert "Classic gives turns only to the positions 'con' and 'pro'" in one(
        user, "field-participants[2].position").error
    _set(user, "field-participants[2].position", "con")
    _set(user, "field-participants[1].color", "notacolor")
    user.find(marker="start").click()
    await user.should_see("'notacolor' is not a colour")
    assert "#rrggbb" in one(user, "field-participants[1].color").error
    assert (await engine()).sessions == {}
    _set(user, "field-participants[1].color", "#16a34a")
    config = await _started_config(user)
    assert [p.position for p in config.participants] == ["pro", "con", "con"]


async def test_a_database_that_cannot_be_written_shows_on_the_form_and_keeps_the_input(
        user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    from webapp.store import StoreBusy

    eng = await engine()

    async def locked(*args: object, **kwargs: object) -> None:
        raise StoreBusy(f"database {eng.store.path} is locked by another process", eng.store.path)

    monkeypatch.setattr(eng.store, "create_debate", locked)
    await user.open("/new")
    _set(user, "field-topic", "Should libraries lend tools?")
    user.find(marker="start").click()
    await user.should_see(marker="store-error")
    await user.should_see("another process holds the database")
    assert one(user, "field-topic").value == "Should libraries lend tools?"
    assert eng.sessions == {}


async def test_money_fields_keep_a_fraction_of_a_cent_as_typed(user: User) -> None:
    await user.open("/new")
    for marker, typed in (("field-budget.warn_at", 0.005), ("field-budget.cost_limit", 0.0125)):
        field = one(user, marker)
        with user:
            field.value = typed
            field.sanitize()  # what leaving the field does
        assert field.value == typed  # not rounded to the field's step or to cents


async def test_format_presets_say_what_each_preset_sets(user: User) -> None:
    await user.open("/new")
    note = one(user, "format-presets")
    assert "sets the format, its usual number of rounds and its cast" in " ".join(
        str(e.text) for e in note.descendants() if isinstance(e, ui.label))
    for fmt in FORMATS.values():
        item = one(user, f"preset-{fmt.id}")
        said = [str(e.text) for e in item.descendants() if isinstance(e, ui.item_label)]
        assert said[0] == fmt.title
        assert said[1].startswith(fmt.description)  # what the format is, then its size
        assert "participant" in said[1]
