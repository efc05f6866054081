from nicegui.testing import User

from webapp.ui import runtime


async def test_dashboard_empty(user: User) -> None:
    await user.open("/")
    await user.should_see("No debates yet")
    user.find(marker="start-demo").click()
    await user.should_see("Opening statements")
    engine = await runtime.current().engine()
    (sid,) = list(engine.sessions)
    await engine.sessions[sid].join()
    await user.should_see("Winner")
    await user.open("/")
    await user.should_see("completed")
    await user.open("/new")
    await user.should_see("Participants")
    await user.open("/settings")
    await user.should_see("Providers")
