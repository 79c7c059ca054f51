"""The web UI's one router, for ``jobmanager/app.py``: the login first (``/ui/login`` must not be
taken for a page named "login"), then the pages and their files."""

from __future__ import annotations

from fastapi import APIRouter

from . import login, pages, sign_on

router = APIRouter(include_in_schema=False)
router.include_router(login.router)
router.include_router(sign_on.router)
router.include_router(pages.router)
