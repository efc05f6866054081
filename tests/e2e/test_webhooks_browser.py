"""The Webhooks admin page in a real browser against `python main.py`: an admin registers the test's
receiver (private addresses allowed for this server), sees the secret once, a demo debate started from
the form is delivered (signed), and the Redeliver button of the delivery log sends it again."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import launch_server, start_from_form
from tests.webhook_receiver import Receiver, receiving, verify_signature

pytestmark = pytest.mark.e2e


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as made:  # (its queue is not used here: the test waits on `wait_for_count`)
        yield made


def test_an_admin_registers_an_endpoint_and_redelivers_from_the_page(browser: Browser, receiver: Receiver,
                                                                      tmp_path: Path) -> None:
    extra = {"ROSTRUM_WEBHOOK_ALLOW_PRIVATE": "1", "ROSTRUM_PUBLIC_URL": "https://rostrum.example"}
    with launch_server(tmp_path, extra_env=extra, log_name="e2e-webhooks.log") as base:
        page = browser.new_page()
        try:
            page.goto(base + "/admin")
            page.get_by_role("link", name="Endpoints and deliveries").click()
            expect(page.get_by_role("heading", name="Webhooks", level=1)).to_be_visible()
            page.get_by_label("Endpoint URL").fill(receiver.url)
            page.get_by_role("button", name="Add endpoint").click()
            secret_box = page.get_by_role("textbox", name="Signing secret")
            expect(secret_box).to_have_value(re.compile(r"^whsec_\S{40,}$"))
            secret = secret_box.input_value()
            expect(page.get_by_text(receiver.url, exact=True)).to_be_visible()

            debate_url = start_from_form(page, base, "Should webhooks be signed?")
            [done] = receiver.wait_for_count(1)
            assert done.json["event"] == "debate.completed" and verify_signature(secret, done.headers, done.body)
            assert done.json["url"] == "https://rostrum.example/debate/" + debate_url.rsplit("/", 1)[1]

            page.goto(base + "/admin/webhooks")
            table = page.get_by_role("table")
            # the receiver has the request before the sender has recorded its answer: the log follows it
            expect(table.get_by_text("delivered")).to_be_visible(timeout=30_000)
            table.get_by_role("button", name="Redeliver").click()
            expect(page.get_by_text("debate.completed will be sent again")).to_be_visible()
            again = receiver.wait_for_count(2)[1]
            assert again.headers["X-Rostrum-Delivery"] == done.headers["X-Rostrum-Delivery"]
            assert verify_signature(secret, again.headers, again.body)
        finally:
            page.close()
