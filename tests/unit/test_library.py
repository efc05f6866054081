"""The library of saved profiles and templates: validation (names, content, no keys), names unique per
kind whatever their case, authors and admins alone change an item, and the table a migration adds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pg_fixtures import STORE_KINDS, opened_store
from webapp.models import DebateConfig
from webapp.store import Store
from webapp.store.library import (
    NAME_MAX_CHARS,
    Library,
    LibraryError,
    NameTaken,
    NotAuthor,
    UnknownItem,
    check_name,
    profile_data,
    template_data,
)
from webapp.ui.components.presets import blank_form, form_to_config, participant_row

ROW = {**participant_row("Opposition", "con", 1, "anthropic", "claude-sonnet-4-5"), "persona": "A sceptic",
       "temperature": 0.4}


@pytest.fixture(params=STORE_KINDS)
async def library(request: pytest.FixtureRequest, tmp_path: Path):
    """The library on each store in turn (SQLite, PostgreSQL)."""
    async with opened_store(request.param, request, tmp_path) as store:
        yield Library(store)


def test_names_are_trimmed_and_limited():
    assert check_name("  Careful   sceptic ") == "Careful sceptic"
    assert check_name("x" * NAME_MAX_CHARS) == "x" * NAME_MAX_CHARS
    with pytest.raises(LibraryError, match="too long"):
        check_name("x" * (NAME_MAX_CHARS + 1))
    with pytest.raises(LibraryError, match="name"):
        check_name("   ")


def test_a_profile_keeps_the_model_and_voice_not_the_seat():
    data = profile_data(ROW)
    assert data["provider"] == "anthropic" and data["model"] == "claude-sonnet-4-5"
    assert data["persona"] == "A sceptic" and data["temperature"] == 0.4
    assert not {"name", "position", "color"} & set(data)


@pytest.mark.parametrize(("change", "message"), [
    ({"temperature": 3}, "temperature"),
    ({"provider": "nonsense"}, "provider"),
    ({"persona": "use " + "-".join(("sk", "x" * 24))}, "API key"),  # key-shaped, built here
    ({"provider": "compatible", "base_url": "http://me:secret@localhost:1234/v1"}, "credentials"),
])
def test_a_profile_the_engine_would_refuse_or_holding_a_key_is_refused(change, message):
    with pytest.raises(LibraryError, match=message):
        profile_data({**ROW, **change})


def test_a_template_is_a_debate_config_with_an_optional_topic():
    form = blank_form()
    data = template_data(form_to_config(form))
    assert data["topic"] == ""
    assert "series" not in data and "rematch_of" not in data
    with pytest.raises(LibraryError, match="rounds"):
        template_data({**form_to_config(form), "rounds": 999})
    config = DebateConfig(topic="Kept?", format="oxford", series="abc")
    assert template_data(config)["topic"] == "Kept?"


async def test_save_list_rename_delete_with_authors_and_admins(library: Library):
    profile = await library.save("profile", "Sceptic", ROW, "ada")
    template = await library.save("template", "Sceptic", form_to_config(blank_form()), "ada")  # another kind
    assert [i.name for i in await library.items("profile")] == ["Sceptic"]
    assert {i.id for i in await library.items()} == {profile.id, template.id}
    assert (await library.get(profile.id)).data["persona"] == "A sceptic"
    with pytest.raises(NameTaken):
        await library.save("profile", "  sceptic ", ROW, "bob")  # case and spaces aside
    with pytest.raises(NotAuthor, match="ada"):
        await library.delete(profile.id, "bob", admin=False)
    with pytest.raises(NotAuthor):
        await library.rename(profile.id, "Mine now", "bob", admin=False)
    renamed = await library.rename(profile.id, "Careful sceptic", "ADA", admin=False)
    assert renamed.name == "Careful sceptic" and (await library.get(profile.id)).name == "Careful sceptic"
    await library.delete(template.id, "root", admin=True)
    with pytest.raises(UnknownItem):
        await library.get(template.id)
    await library.delete(profile.id, "ada", admin=False)
    assert await library.items() == []


async def test_a_database_from_before_the_library_gets_it_on_open(tmp_path: Path):
    import sqlite3

    from webapp.store.migrations import NAMES, applied_migrations, migrate

    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path, isolation_level=None)
    migrate(old, only=[n for n in NAMES if n != "008_library"])
    assert "008_library" not in applied_migrations(old)
    old.close()
    store = await Store.open(path)
    try:
        library = Library(store)
        await library.save("profile", "Works", ROW, "ada")
        assert [i.name for i in await library.items()] == ["Works"]
    finally:
        await store.close()
    assert NAMES.index("008_library") == NAMES.index("007_verdict_events") + 1  # appended: none moved

