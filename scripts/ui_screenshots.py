"""Screenshots of every page of the web UI, for docs/ui/ (docs/operations.md shows them).

Starts a real cluster in a temporary folder (a managed ZooKeeper, two JobManagers, one
TaskManager with four slots), runs a few jobs (finished, failed, cancelled, running), then
photographs each page in Debian's headless Chromium (/usr/bin/chromium, driven by playwright):

    .venv/bin/python scripts/ui_screenshots.py [--out docs/ui]
"""

from __future__ import annotations

import argparse
import signal
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from steward.testing.credentials import kit_admin_token
from steward.testing.processes import ProcessCluster
from steward.testing.waiting import wait_until
from steward.testing.zookeeper import start_ensemble
from steward.wire.states import JobState

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
VIEWPORT = {"width": 1440, "height": 900}

TICKING = """
import time

def main(ctx):
    ticks, interval = int(ctx.args[0]), float(ctx.args[1])
    for tick in range(ticks):
        print(f"stage {tick // 4 + 1}: processed batch {tick + 1} of {ticks}", flush=True)
        ctx.report_progress(stage=tick // 4 + 1, batches_done=tick + 1, batches=ticks)
        time.sleep(interval)
    return {"rows": 1000 * ticks, "batches": ticks}
"""

FAILING = """
def main(ctx):
    print("reading s3://example-bucket/orders/2026-11-23/", flush=True)
    raise FileNotFoundError("no input files under s3://example-bucket/orders/2026-11-23/")
"""


def run_jobs(cluster: ProcessCluster, folder: Path) -> None:
    ticking = folder / "orders_rollup.py"
    ticking.write_text(TICKING)
    failing = folder / "ingest_orders.py"
    failing.write_text(FAILING)
    with cluster.client() as client:
        for day in ("2026-11-21", "2026-11-22"):
            client.submit(
                ticking,
                args=["6", "0.3"],
                job_id=f"rollup-{day}",
                name=f"orders rollup {day}",
                labels={"team": "data", "day": day},
            )
        client.submit(
            failing,
            job_id="ingest-2026-11-23",
            name="ingest orders",
            restart={"kind": "fixed-delay", "attempts": 1, "delay": 0.5},
            labels={"team": "data"},
        )
        client.submit(ticking, args=["1000", "1"], job_id="backfill-2025", name="backfill 2025")
        client.cancel("backfill-2025")
        client.submit(
            ticking,
            args=["100000", "1.5"],
            job_id="rollup-2026-11-23",
            name="orders rollup 2026-11-23",
            labels={"team": "data"},
        )
        client.submit(
            ticking, args=["100000", "2"], job_id="sessionize-clicks", name="sessionize clicks"
        )
        done = ("rollup-2026-11-21", "rollup-2026-11-22", "ingest-2026-11-23", "backfill-2025")
        wait_until(lambda: all(client.job(j).state.is_terminal for j in done), 120, "jobs ended")
        wait_until(lambda: client.job("rollup-2026-11-23").state == JobState.RUNNING, 60, "running")


def shoot(page: Page, address: str, path: str, out: Path, wait_for: str) -> None:
    page.goto(address + path)
    page.wait_for_selector(wait_for)
    page.wait_for_timeout(1500)  # the pages' first live refresh: a picture, not a test
    page.screenshot(path=str(out), full_page=True)
    print(f"wrote {out}")


def failover(on_standby: Page, on_leader: Page, cluster: ProcessCluster, out: Path) -> None:
    """SIGKILL the leader with a page open on it and one on the standby: the first says its
    JobManager is gone and links to the other; the second shows the new leader, no reload."""
    leader = cluster.leader()
    standby = next(p for p in cluster.jobmanagers() if p is not leader)
    assert leader is not None
    on_standby.goto(standby.address + "/ui/login")
    on_standby.fill("#token", kit_admin_token())
    on_standby.click("button[type=submit]")
    on_standby.wait_for_url(standby.address + "/ui/")
    on_leader.goto(leader.address + "/ui/")
    on_leader.wait_for_selector("#recent-jobs table")
    leader.signal(signal.SIGKILL)
    on_leader.wait_for_selector("[data-notice=down] a", timeout=30_000)
    on_leader.screenshot(path=str(out / "leader-gone.png"))
    print(f"wrote {out / 'leader-gone.png'}")
    on_standby.wait_for_function(
        "id => document.querySelector('#stat-leader').textContent.includes(id)",
        arg=standby.id,
        timeout=60_000,
    )
    on_standby.wait_for_timeout(1500)
    on_standby.screenshot(path=str(out / "after-failover.png"))
    print(f"wrote {out / 'after-failover.png'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/ui"))
    out: Path = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="steward-ui-") as tmp:
        folder = Path(tmp)
        ensemble = start_ensemble(folder / "zookeeper", servers=1)
        (folder / "cluster").mkdir()
        cluster = ProcessCluster(
            folder / "cluster", ensemble.connect_string, "ui-screenshots", verbose=False
        )
        try:
            cluster.start_jobmanager("jm-1")
            cluster.wait_ready(taskmanagers=0)
            cluster.start_jobmanager("jm-2")
            cluster.start_taskmanager("tm-1", slots=4)
            cluster.wait_ready(taskmanagers=1)
            run_jobs(cluster, folder)
            leader = cluster.leader()
            assert leader is not None
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_context(viewport=VIEWPORT).new_page()
                address = leader.address
                shoot(page, address, "/ui/login", out / "login.png", "#token")
                page.fill("#token", kit_admin_token())
                page.click("button[type=submit]")
                page.wait_for_url(address + "/ui/")
                shoot(page, address, "/ui/", out / "overview.png", "#recent-jobs table")
                shoot(page, address, "/ui/jobs", out / "jobs.png", "#job-list table")
                shoot(
                    page,
                    address,
                    "/ui/jobs/rollup-2026-11-23",
                    out / "job-running.png",
                    "#timeline .seg",
                )
                shoot(
                    page,
                    address,
                    "/ui/jobs/ingest-2026-11-23",
                    out / "job-failed.png",
                    "#timeline .seg",
                )
                shoot(page, address, "/ui/taskmanagers", out / "taskmanagers.png", "#tm-list table")
                shoot(page, address, "/ui/ha", out / "ha.png", "#ha-jobmanagers table")
                failover(browser.new_context(viewport=VIEWPORT).new_page(), page, cluster, out)
                browser.close()
        finally:
            cluster.stop()
            ensemble.stop()


if __name__ == "__main__":
    main()
