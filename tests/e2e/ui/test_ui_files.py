"""The UI's files as shipped: each page's shell names only files the package has, no script or
style is inline, and nothing is loaded from another origin (the UI works without internet)."""

from __future__ import annotations

import re

from steward.jobmanager.ui.pages import FILES, PAGES, STATIC

REFERENCE = re.compile(r"""(?:src|href)="([^"]+)\"""")
IMPORT = re.compile(r"""from\s+"(\./[^"]+)";""")
ELSEWHERE = re.compile(r"""(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}[/"']""", re.IGNORECASE)


def test_every_page_has_its_shell_and_script() -> None:
    for shell in [*PAGES.values(), "job.html"]:
        assert shell in FILES, shell
        page = shell.removesuffix(".html")
        assert f"js/{page}.js" in FILES, page


def test_shells_name_only_shipped_files_and_hold_no_inline_code() -> None:
    for name, (body, _kind) in FILES.items():
        if not name.endswith(".html"):
            continue
        text = body.decode()
        for target in REFERENCE.findall(text):
            assert target.startswith("/ui/static/"), (name, target)
            assert target.removeprefix("/ui/static/") in FILES, (name, target)
        assert "<style" not in text, name
        assert re.search(r"<script(?![^>]*\bsrc=)", text) is None, name  # no inline script


def test_modules_import_only_shipped_modules() -> None:
    for name, (body, _kind) in FILES.items():
        if not name.endswith(".js"):
            continue
        for target in IMPORT.findall(body.decode()):
            assert f"js/{target.removeprefix('./')}" in FILES, (name, target)


def test_nothing_comes_from_another_origin() -> None:
    for path in STATIC.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".css", ".js"):
            text = path.read_text()
            assert ELSEWHERE.search(text) is None, (path.name, ELSEWHERE.search(text))
            assert "@import" not in text and "url(" not in text, path.name
