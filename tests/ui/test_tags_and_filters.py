"""Topic tags on the new-debate form (and back through Clone), and the dashboard's model and tag filters."""

from __future__ import annotations

from nicegui.testing import User

from tests.leaderboard_corpus import ALPHA, BETA, GAMMA, store_result
from tests.ui.helpers import engine, one
from webapp.engine.events import CreatedPayload
from webapp.models import DebateConfig
from webapp.ui.components.presets import config_to_form, form_to_config


async def test_the_form_stores_topic_tags_and_refuses_bad_ones(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-topic").type("Are tags useful?")
    user.find(marker="field-tags").type("Bad<tag>")
    user.find(marker="start").click()
    await user.should_see("use letters, digits and - _ . + only", retries=50)
    assert "use letters, digits" in one(user, "field-tags").error
    with user:
        one(user, "field-tags").value = "Ethics, AI policy"
    user.find(marker="start").click()
    await user.should_see(marker="transcript", retries=100)
    rows, _ = await (await engine()).list_debates()
    created = (await (await engine()).events(rows[0].id))[0].payload
    assert isinstance(created, CreatedPayload) and created.config.tags == ["ethics", "ai-policy"]


def test_tags_survive_a_clone() -> None:
    config = DebateConfig(topic="Clone me", tags=["ethics", "ai-policy"])
    form = config_to_form(config)
    assert form["tags"] == "ethics, ai-policy"
    assert DebateConfig.model_validate(form_to_config(form)).tags == ["ethics", "ai-policy"]


async def test_the_dashboard_filters_by_model_and_by_tag(user: User) -> None:
    store = (await engine()).store
    await store_result(store, "d1", ALPHA, BETA, "a", tags=("ethics",))
    await store_result(store, "d2", BETA, GAMMA, "a", tags=("science", "ethics"))
    await store_result(store, "d3", GAMMA, ALPHA, "b")
    await user.open("/")
    await user.should_see(marker="debate-d3", retries=50)
    assert list(one(user, "model-filter").options) == [ALPHA, BETA, GAMMA]
    assert list(one(user, "tag-filter").options) == ["ethics", "science"]
    with user:
        one(user, "model-filter").value = GAMMA
    await user.should_not_see(marker="debate-d1", retries=50)
    await user.should_see(marker="debate-d2", retries=50)
    await user.should_see(marker="debate-d3", retries=50)
    with user:
        one(user, "tag-filter").value = "ethics"
    await user.should_not_see(marker="debate-d3", retries=50)
    assert one(user, "debate-count").text == "1 debate"
    with user:
        one(user, "model-filter").value = None
    await user.should_see(marker="debate-d1", retries=50)
    assert one(user, "debate-count").text == "2 debates"


async def test_tags_show_on_the_dashboard_row_and_the_search_matches_them(user: User) -> None:
    store = (await engine()).store
    await store_result(store, "d1", ALPHA, BETA, "a", tags=("ethics", "ai-policy"), topic="Cats or dogs")
    await store_result(store, "d2", BETA, GAMMA, "a", topic="Ethics of tea")
    await store_result(store, "d3", GAMMA, ALPHA, "b", topic="Untagged")
    await user.open("/")
    await user.should_see(marker="debate-d3", retries=50)
    assert one(user, "tags-d1").text == "#ethics #ai-policy"
    await user.should_not_see(marker="tags-d3")  # no tags: no line for them
    user.find(marker="search").type("policy")  # in a tag only
    await user.should_not_see(marker="debate-d3", retries=50)
    assert one(user, "debate-count").text == "1 debate"
    await user.should_see(marker="debate-d1")
    with user:
        one(user, "search").value = "ethics"  # a tag of one, the topic of the other
    await user.should_see(marker="debate-d2", retries=50)
    assert one(user, "debate-count").text == "2 debates"


async def test_the_debate_page_shows_its_tags_in_the_status_line(user: User) -> None:
    store = (await engine()).store
    await store_result(store, "d1", ALPHA, BETA, "a", tags=("ethics", "ai-policy"))
    await store_result(store, "d2", ALPHA, BETA, "a")
    await user.open("/debate/d1")
    await user.should_see(marker="format", retries=50)
    content = one(user, "format").content
    assert "#ethics</span>" in content and "#ai-policy</span>" in content and 'aria-label="Topic tags"' in content
    await user.open("/debate/d2")
    await user.should_see(marker="format", retries=50)
    assert "Topic tags" not in one(user, "format").content
