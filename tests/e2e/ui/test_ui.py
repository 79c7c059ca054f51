"""The web UI in a real headless Chromium against a real cluster (issue 14).

Signing in with the cluster's admin token, every page and what it shows, a job followed to
FINISHED and one cancelled from its page, the overview kept open across a leader SIGKILL; a
wrong token and a page without the cookie land on the login form. The tests run in this order
on one cluster: the last one kills the leader.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from e2e.ticking import write_pipeline
from e2e.ui.browser import expect, new_page, sign_in
from steward.testing.processes import Proc, ProcessCluster
from steward.wire.states import JobState
from support import wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.zookeeper


def test_login_form_is_public_and_fixed(ui_cluster: ProcessCluster, standby: Proc) -> None:
    answer = httpx.get(standby.address + "/ui/login", timeout=5)
    assert answer.status_code == 200
    assert 'name="token"' in answer.text
    assert ui_cluster.settings["high-availability.cluster-id"] not in answer.text
    policy = answer.headers["content-security-policy"]
    assert "script-src" not in policy  # default-src 'none': no script at all
    assert "default-src 'none'" in policy


def test_pages_are_served_with_a_strict_policy(
    ui_cluster: ProcessCluster, standby: Proc, token: str
) -> None:
    with httpx.Client(base_url=standby.address, timeout=5) as http:
        # Without a credential: a page goes to the login form, the API answers 401.
        assert http.get("/ui/jobs").headers["location"] == "/ui/login"
        assert http.get("/ui/static/js/common.js").status_code == 303
        login = http.post("/ui/login", data={"token": token})
        assert login.status_code == 303
        assert login.headers["location"] == "/ui/"
        cookie = login.headers["set-cookie"].lower()
        assert "httponly" in cookie
        assert "samesite=strict" in cookie
        assert "path=/" in cookie
        script = http.get("/ui/static/js/common.js")
        assert script.status_code == 200
        assert script.headers["content-type"].startswith("text/javascript")
        page = http.get("/ui/")
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy
        assert "script-src 'self';" in policy
        assert "unsafe-inline" not in policy
        assert "<script" not in page.text.replace('<script type="module" src=', "")
        assert http.get("/ui/static/../login.py").status_code == 404
        assert http.get("/ui/nothing").status_code == 404
        # A write with the cookie alone is refused: another site's form could send it.
        refused = http.post("/v1/jobs/some-job/cancel")
        assert refused.status_code == 403
        # The UI is not part of the API's document.
        assert not [p for p in http.get("/openapi.json").json()["paths"] if p.startswith("/ui")]


def test_wrong_token_and_no_cookie_get_the_login_form(browser: Browser, standby: Proc) -> None:
    page = new_page(browser)
    page.goto(standby.address + "/ui/taskmanagers")
    assert page.url == standby.address + "/ui/login"
    page.fill("#token", "stw_000000000000_not-a-real-secret")
    page.click("button[type=submit]")
    expect(page.get_by_role("alert")).to_have_text("invalid or expired token")
    assert page.url == standby.address + "/ui/login"
    page.goto(standby.address + "/ui/")
    assert page.url == standby.address + "/ui/login"  # no cookie was set


def test_every_page_shows_the_cluster(
    browser: Browser, ui_cluster: ProcessCluster, standby: Proc, token: str
) -> None:
    leader = ui_cluster.leader()
    assert leader is not None
    page = sign_in(browser, standby.address, token)
    expect(page.locator("#stat-leader")).to_contain_text(leader.id)
    expect(page.locator("#jobmanagers")).to_contain_text(standby.id)
    expect(page.locator("#taskmanagers")).to_contain_text("tm-1")
    expect(page.locator("#served-by")).to_contain_text(f"served by {standby.id}")
    expect(page.locator("[data-state=RUNNING]")).to_be_visible()

    page.click("nav >> text=TaskManagers")
    expect(page.locator("#tm-list")).to_contain_text("tm-1")
    expect(page.locator("#tm-list")).to_contain_text("2")
    expect(page.locator("#queue-list")).to_contain_text("default")  # the leader's, forwarded

    # Heartbeats are the leader's figure (the cookie is the host's: signed in there too).
    page.goto(leader.address + "/ui/taskmanagers")
    expect(page.locator("#tm-list [data-heartbeat]")).to_contain_text("ago")
    page.goto(standby.address + "/ui/")

    page.click("nav >> text=HA")
    expect(page.locator("#ha-leader")).to_contain_text(leader.id)
    expect(page.locator("#ha-jobmanagers")).to_contain_text(standby.id)
    # The leader's term is in the history, the doctor finds nothing, the server is described
    expect(page.locator("#ha-history")).to_contain_text(leader.id)
    expect(page.locator("#doctor-ok")).to_contain_text("every invariant holds")
    page.click("#doctor-again")  # asked again on request (never on a timer)
    expect(page.locator("#doctor-ok")).to_contain_text("every invariant holds")
    expect(page.locator("#ha-zookeeper")).to_contain_text("3.9.5")

    page.click("nav >> text=Jobs")
    expect(page.locator("#job-count")).to_contain_text("job(s)")

    # Signing out clears the cookie: the next page is the login form again.
    page.click("text=Sign out")
    # The URL, retried: a navigation of the page still under way when the click came (the jobs
    # page's) can abort the first try, which wait_for_url would fail on (a loaded run's flake).
    expect(page).to_have_url(standby.address + "/ui/login")
    page.goto(standby.address + "/ui/jobs")
    assert page.url == standby.address + "/ui/login"
    assert not [c for c in page.context.cookies() if c["name"] == "steward_token"]


# Prints a line per tick, so the job page's log, followed, grows while the attempt runs.
# Ticks, held after the second one until the gate file exists: the test sees the job's log
# while it runs whatever the machine's load, then lets it finish.
PRINTING = """
import os
import time

def main(ctx):
    ticks, pause, gate = int(ctx.args[0]), float(ctx.args[1]), ctx.args[2]
    for tick in range(1, ticks + 1):
        print(f"ui tick {tick}", flush=True)
        while tick == 2 and not os.path.exists(gate):
            time.sleep(0.05)
        time.sleep(pause)
    return {"ticks": ticks}
"""


def test_a_job_followed_to_finished(
    browser: Browser, ui_cluster: ProcessCluster, standby: Proc, token: str, tmp_path: Path
) -> None:
    pipeline, gate = tmp_path / "printing.py", tmp_path / "gate"
    pipeline.write_text(PRINTING)
    with ui_cluster.client() as client:
        client.submit(
            pipeline, args=["12", "0.2", str(gate)], job_id="ui-finishes", name="ui finishes",
            labels={"team": "ui"}, timeout="10m",
            env={"GREETING": "hi", "DB_PASSWORD": "pw-ui-5e1c"},
        )  # fmt: skip
    page = sign_in(browser, standby.address, token)
    page.goto(standby.address + "/ui/jobs?name=ui%20fin")
    expect(page.locator("#job-list")).to_contain_text("ui finishes")
    page.click("#job-list >> text=ui-finishes")
    expect(page.locator("#job-title")).to_have_text("ui finishes")
    # Its timeout, and its env as the API shows it: the secret one redacted.
    expect(page.locator("#job-facts")).to_contain_text("10 min 0 s (until ")
    expect(page.locator("#job-facts")).to_contain_text("DB_PASSWORD=*********(redacted)")
    expect(page.locator("#job-facts")).to_contain_text("GREETING=hi")
    assert "pw-ui-5e1c" not in page.content()
    # The log, followed from a standby, shows the first lines while the job still runs and
    # the last one when it has ended, without a reload.
    expect(page.locator("#log")).to_contain_text("ui tick 2", timeout=30_000)
    assert "ui tick 12" not in page.locator("#log").inner_text()
    gate.touch()
    expect(page.locator("#job-state")).to_have_text("FINISHED", timeout=60_000)
    expect(page.locator("#log")).to_contain_text("ui tick 12")
    expect(page.locator("#job-result")).to_contain_text('"ticks": 12')
    expect(page.locator("#attempts")).to_contain_text("tm-1")
    expect(page.locator("#timeline .seg.FINISHED")).to_have_count(1)
    expect(page.locator("#cancel")).to_be_hidden()
    # The log's tail: the last 3 lines only.
    page.fill("#log-tail", "3")
    page.press("#log-tail", "Enter")
    expect(page.locator("#log")).to_contain_text("ui tick 12")
    expect(page.locator("#log")).not_to_contain_text("ui tick 2\n")
    # The label filter: by key=value, and a value that differs hides it.
    page.goto(standby.address + "/ui/jobs?label=team%3Dui")
    expect(page.locator("#job-list")).to_contain_text("ui-finishes")
    page.fill("#filter-label", "team=other")
    expect(page.locator("#job-list")).not_to_contain_text("ui-finishes")
    # The state filter: FINISHED shows it, RUNNING does not.
    page.goto(standby.address + "/ui/jobs?state=FINISHED")
    expect(page.locator("#job-list")).to_contain_text("ui-finishes")
    page.select_option("#filter-state", "RUNNING")
    expect(page.locator("#job-list")).not_to_contain_text("ui-finishes")
    assert re.search(r"state=RUNNING", page.url)


QUICK = "def main(ctx):\n    return 1\n"


def test_the_jobs_page_pages_and_searches_through_the_api(
    browser: Browser, ui_cluster: ProcessCluster, standby: Proc, token: str, tmp_path: Path
) -> None:
    pipeline = tmp_path / "quick.py"
    pipeline.write_text(QUICK)
    names = ["paging alpha", "paging beta", "paging gamma"]
    with ui_cluster.client() as client:
        for n, name in enumerate(names):
            client.submit(pipeline, job_id=f"ui-page-{n}", name=name, labels={"team": "paging"})
    page = sign_in(browser, standby.address, token)
    page.goto(standby.address + "/ui/jobs?label=team%3Dpaging&limit=2")
    # Newest first, two a page; the standby's index has all three once its watches fired.
    expect(page.locator("#job-count")).to_contain_text("jobs 1 to 2", timeout=15_000)
    expect(page.locator("#job-list")).to_contain_text("ui-page-2")
    expect(page.locator("#job-list")).to_contain_text("ui-page-1")
    expect(page.locator("#job-list")).not_to_contain_text("ui-page-0")
    expect(page.locator("#page-newer")).to_be_disabled()
    page.click("#page-older")
    expect(page.locator("#job-list")).to_contain_text("ui-page-0")
    expect(page.locator("#job-list")).not_to_contain_text("ui-page-2")
    expect(page.locator("#job-count")).to_contain_text("jobs 3 to 3")
    expect(page.locator("#page-older")).to_be_disabled()
    page.click("#page-newer")
    expect(page.locator("#job-list")).to_contain_text("ui-page-2")
    # A search by name prefix goes to the API and starts again from the newest page.
    page.fill("#filter-name", "paging b")
    expect(page.locator("#job-list")).to_contain_text("ui-page-1")
    expect(page.locator("#job-list")).not_to_contain_text("ui-page-2")
    expect(page.locator("#page-older")).to_be_disabled()
    assert re.search(r"name=paging\+b", page.url), page.url
    page.fill("#filter-label", "team")
    expect(page.locator("#job-list")).to_contain_text("A label filter is key=value.")


@pytest.mark.parametrize("where", ["leader", pytest.param("standby", marks=pytest.mark.slow)])
def test_cancel_from_the_page(
    browser: Browser, ui_cluster: ProcessCluster, token: str, tmp_path: Path, where: str
) -> None:
    leader = ui_cluster.leader()
    assert leader is not None
    served_by = (
        leader
        if where == "leader"
        else next(p for p in ui_cluster.jobmanagers() if p.alive() and p is not leader)
    )
    job_id = f"ui-cancelled-on-{where}"
    with ui_cluster.client() as client:
        client.submit(
            write_pipeline(tmp_path),
            args=[str(tmp_path / "truth"), "100000", "0.2"],
            job_id=job_id,
        )
        page = sign_in(browser, served_by.address, token)
        page.goto(f"{served_by.address}/ui/jobs/{job_id}")
        expect(page.locator("#job-state")).to_have_text("RUNNING", timeout=30_000)
        page.click("#cancel")
        expect(page.locator("#cancel")).to_have_text("Confirm cancel")
        page.click("#cancel")
        expect(page.locator("#cancel-outcome")).to_contain_text("Cancel requested")
        expect(page.locator("#job-state")).to_have_text("CANCELED", timeout=30_000)
        assert client.job(job_id).state == JobState.CANCELED


def test_overview_survives_a_leader_sigkill(
    browser: Browser, ui_cluster: ProcessCluster, standby: Proc, token: str
) -> None:
    old = ui_cluster.leader()
    assert old is not None
    page = sign_in(browser, standby.address, token)
    expect(page.locator("#stat-leader")).to_contain_text(old.id)
    # Record every "no leader" notice the page shows, however briefly (the window between
    # the old leader's session expiring and the standby's election may be short).
    page.evaluate(
        """() => {
          window.noLeader = [];
          new MutationObserver(() => {
            const notice = document.querySelector('[data-notice=no-leader]');
            if (notice) window.noLeader.push(notice.textContent);
          }).observe(document.body, {subtree: true, childList: true, characterData: true});
        }"""
    )
    on_old = sign_in(browser, old.address, token)
    expect(on_old.locator("#stat-leader")).to_contain_text(old.id)
    old.signal(signal.SIGKILL)
    # A page of the killed JobManager says so, and links to the UI of the other.
    down = on_old.locator("[data-notice=down]")
    expect(down).to_contain_text("Cannot read the cluster", timeout=30_000)
    expect(down.locator("a")).to_have_attribute("href", standby.address + "/ui/")
    # The standby is the only JobManager left: it becomes the leader, and the page, never
    # reloaded, says so.
    expect(page.locator("#stat-leader")).to_contain_text(standby.id, timeout=60_000)
    expect(page.locator("[data-notice=no-leader]")).to_have_count(0)
    assert page.url == standby.address + "/ui/"
    wait_until(lambda: ui_cluster.leader() is standby, 30, "the standby leads")
    for notice in page.evaluate("window.noLeader"):
        assert notice.startswith(f"No leader - reads still served by {standby.id}"), notice
