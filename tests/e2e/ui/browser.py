"""Headless Chromium for the UI tests, driven by playwright: Debian's binary, the flags that
work on a closed network (no background connections, no component updates), a fresh profile.

playwright is imported where it is used, not at the top: every xdist worker imports this
module (through the UI and OIDC tests) at collection, whether or not it runs them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 20_000

__all__ = ["CHROMIUM", "expect", "launch", "new_page", "sign_in"]


@contextmanager
def launch() -> Iterator[Browser]:
    """A browser for a module's tests (each test opens a context of its own: its own cookies);
    the tests are skipped where Debian's chromium is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (Debian's chromium package: scripts/setup.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser: Browser) -> Page:
    page = browser.new_context().new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return page


def sign_in(browser: Browser, address: str, token: str) -> Page:
    """A page of a fresh context, signed in on ``address`` with ``token``, at the overview."""
    page = new_page(browser)
    page.goto(address + "/ui/login")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url(address + "/ui/")
    return page


def expect(target: Any) -> Any:
    """playwright's ``expect`` (imported on first use: see the module's docstring)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)
