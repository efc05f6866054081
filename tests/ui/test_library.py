"""Saved profiles and templates through the pages: a participant saved as a profile is offered on every
row and fills the row it is used on; a form saved as a template fills the whole form; teammates see
them; only the author or an admin deletes one (a forged click included); names are checked."""

from __future__ import annotations

import asyncio

import pytest
from nicegui.testing import User

from tests.ui.helpers import engine, one
from tests.ui.test_access import add_users, browser, click_forged, signed_in
from webapp.settings import get_settings
from webapp.store.accounts import Accounts
from webapp.store.library import NAME_MAX_CHARS, Library
from webapp.ui.components.presets import participant_row


@pytest.fixture
def auth_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_AUTH", "on")
    get_settings.cache_clear()


async def library() -> Library:
    return Library((await engine()).store)


async def save_from_dialog(user: User, kind: str, name: str) -> None:
    await user.should_see(marker=f"{kind}-new-name")
    user.find(marker=f"{kind}-new-name").clear().type(name)
    user.find(marker=f"save-{kind}").click()


async def test_a_profile_saved_from_a_row_is_offered_on_another_and_fills_it(user: User) -> None:
    await user.open("/new")
    user.find(marker="field-participants[1].persona").type("A careful sceptic who cites sources.")
    with user:
        one(user, "field-participants[1].temperature").value = 0.3
        one(user, "field-participants[1].max_tokens").value = 700
    user.find(marker="save-profile-1").click()
    await save_from_dialog(user, "profile", "Careful sceptic")
    await user.should_see("Saved as profile: Careful sceptic")
    (saved,) = await (await library()).items("profile")
    assert saved.created_by == "local" and saved.data["persona"] == "A careful sceptic who cites sources."

    name_before = one(user, "field-participants[0].name").value
    user.find(marker="use-profile-0").click()
    await user.should_see(marker="profile-item")
    assert [e.text for e in user.find(marker="profile-name").elements] == ["Careful sceptic"]
    user.find(marker="use-profile").click()
    await user.should_see("Profile applied: Careful sceptic")
    assert one(user, "field-participants[0].persona").value == "A careful sceptic who cites sources."
    assert one(user, "field-participants[0].temperature").value == 0.3
    assert one(user, "field-participants[0].max_tokens").value == 700
    assert one(user, "field-participants[0].name").value == name_before  # the seat stays


async def test_a_template_fills_the_whole_form(user: User) -> None:
    await user.open("/new")
    user.find(marker="preset-quick-demo").click()
    user.find(marker="add-participant").click()
    await user.should_see("Participants (3)")
    user.find(marker="field-participants[2].name").clear().type("Moderator Mo")
    user.find(marker="templates").click()
    await user.should_see(marker="no-templates")
    await save_from_dialog(user, "template", "Three-way Oxford")
    await user.should_see("Saved as template: Three-way Oxford")

    user.find(marker="reset-form").click()
    await user.should_see("Participants (2)")
    user.find(marker="field-topic").type("Kept topic?")
    user.find(marker="templates").click()
    await user.should_see(marker="template-item")
    user.find(marker="use-template").click()
    await user.should_see("Template applied: Three-way Oxford")
    await user.should_see("Participants (3)")
    assert one(user, "field-format").value == "oxford"
    assert one(user, "field-participants[2].name").value == "Moderator Mo"
    assert one(user, "field-word_limit").value == 60
    assert one(user, "field-topic").value == "Kept topic?"  # the template had none: what was typed stays


async def test_names_are_checked_where_they_are_typed(user: User) -> None:
    await (await library()).save("profile", "Taken", participant_row("A", "pro", 0), "someone")
    await user.open("/new")
    user.find(marker="save-profile-0").click()
    for name, error in (("   ", "Give it a name"), ("x" * (NAME_MAX_CHARS + 1), "too long"),
                        ("  TAKEN ", "already exists")):
        await save_from_dialog(user, "profile", name)
        await user.should_see(error)
        assert error in one(user, "profile-new-name").error
    assert [i.name for i in await (await library()).items()] == ["Taken"]


async def test_teammates_see_them_and_only_the_author_or_an_admin_deletes(user: User, auth_on: None) -> None:
    await add_users(("ada", "operator"), ("bob", "operator"), ("root", "admin"))
    await signed_in(user, "ada", page="/new")
    user.find(marker="save-profile-0").click()
    await save_from_dialog(user, "profile", "Ada's first")
    await user.should_see("Saved as profile: Ada's first")

    await user.open("/settings")  # the author renames it
    await user.should_see(marker="library-item")
    user.find(marker="library-rename").click()
    await user.should_see(marker="rename-dialog")
    user.find(marker="library-new-name").clear().type("Ada's debater")
    user.find(marker="library-rename-confirm").click()
    await user.should_see("Renamed to Ada's debater")
    assert [i.name for i in await (await library()).items()] == ["Ada's debater"]

    bob = browser()
    await signed_in(bob, "bob", page="/new")
    bob.find(marker="use-profile-1").click()
    await bob.should_see("Ada's debater")
    await bob.open("/settings")
    await bob.should_see(marker="library-item")
    assert not one(bob, "library-delete").enabled and not one(bob, "library-rename").enabled
    click_forged(bob, "library-delete")
    await bob.should_see("Not done: only ada")
    click_forged(bob, "library-rename")  # a forged rename reaches the store, which refuses it
    await bob.should_see(marker="rename-dialog")
    bob.find(marker="library-new-name").clear().type("Bob's now")
    bob.find(marker="library-rename-confirm").click()
    refusals: set[tuple[str, str]] = set()
    for _ in range(100):  # the refusal is audited as the rename's click is handled
        rows, _ = await Accounts((await engine()).store).audit_page(actor="bob")
        refusals = {(r.action, r.outcome) for r in rows if r.action != "sign_in"}
        if len(refusals) == 2:
            break
        await asyncio.sleep(0.05)
    assert refusals == {("profile_deleted", "refused"), ("profile_renamed", "refused")}
    assert [i.name for i in await (await library()).items()] == ["Ada's debater"]

    root = browser()
    await signed_in(root, "root", page="/settings")
    await root.should_see(marker="library-item")
    root.find(marker="library-delete").click()
    await root.should_see(marker="delete-item-dialog")
    assert len(await (await library()).items()) == 1  # nothing is deleted before it is confirmed
    root.find(marker="library-delete-confirm").click()
    await root.should_see(marker="library-empty")
    assert await (await library()).items() == []


async def test_a_judge_row_uses_and_saves_profiles_too(user: User) -> None:
    # a profile a teammate saved from a participant: a judge takes its provider and model
    await (await library()).save("profile", "Instant demo", participant_row("A", "pro", 0, model="demo-instant"),
                                 "someone")
    await user.open("/new")
    assert one(user, "field-judge.judges[0].model").value != "demo-instant"
    user.find(marker="judge-use-profile-0").click()
    await user.should_see("A judge takes the profile's provider and model.")
    assert [e.text for e in user.find(marker="profile-name").elements] == ["Instant demo"]
    user.find(marker="use-profile").click()
    await user.should_see("Profile applied: Instant demo")
    assert one(user, "field-judge.judges[0].provider").value == "demo"
    assert one(user, "field-judge.judges[0].model").value == "demo-instant"
    assert one(user, "field-participants[0].model").value != "demo-instant"  # only the judge changed

    # and a judge's model saved as a profile is offered to the participants
    user.find(marker="judge-save-profile-0").click()
    await save_from_dialog(user, "profile", "The judge's model")
    await user.should_see("Saved as profile: The judge's model")
    saved = {item.name: item for item in await (await library()).items("profile")}
    assert saved["The judge's model"].data["model"] == "demo-instant"
    assert saved["The judge's model"].data["persona"] == ""

    # the fallback judge has the menu too (both profiles now name demo-instant)
    with user:
        one(user, "field-judge.use_fallback").value = True
    await user.should_see(marker="fallback-use-profile-0")
    with user:
        one(user, "field-judge.fallback.model").value = "demo"
    user.find(marker="fallback-use-profile-0").click()
    await user.should_see("Use a profile for the fallback judge")
    assert len(user.find(marker="profile-item").elements) == 2
    user.find(marker="use-profile").click()
    await user.should_see("Profile applied: ")
    assert one(user, "field-judge.fallback.model").value == "demo-instant"
