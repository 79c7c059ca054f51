"""UI cost: a JobManager's CPU at 1,000 jobs with and without a web UI page open (issue 14).

One namespace holds N jobs (default 1,000) written as a leader leaves them (the writer of
recovery_scaling.py); two JobManagers serve them, with no TaskManager (the jobs wait in
SCHEDULED: nothing runs, so what the JobManagers spend is the control plane's and the UI's).
For each phase, the CPU seconds (user + system) of each JobManager over the same window:

- ``idle``: no page open;
- ``overview``: the overview open on the standby, in Debian's headless Chromium;
- ``jobs``: the jobs page (all N jobs listed) open on the standby;
- ``jobs_polling``: the same page as on a JobManager without ``GET /v1/events`` (the browser
  is answered 404 there), so it re-reads the N jobs every 2 s.

A page reads /v1/cluster every 2 s and the jobs on every job event (every 2 s on a JobManager
without ``GET /v1/events``): the figures say what one open tab costs, and ``requests`` what the
page asked for in each window. Printed as JSON.

    .venv/bin/python benchmarks/ui_cost.py [--quick] [--jobs 1000] [--window 60]
"""

from __future__ import annotations

import sys
import time

import psutil
from playwright.sync_api import Page, sync_playwright

from _cluster import ZK_ROOT, BenchCluster, bench_cluster
from _common import (
    Json,
    cluster_document,
    parser,
    progress,
    run_main,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from recovery_scaling import persist_jobs
from steward.testing.credentials import kit_admin_token
from steward.testing.processes import Proc

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


def cpu_seconds(proc: Proc) -> float:
    times = psutil.Process(proc.pid).cpu_times()
    return float(times.user + times.system)


def window(procs: dict[str, Proc], seconds: float, page: Page | None = None) -> dict[str, float]:
    """CPU seconds each JobManager used over ``seconds`` of wall time (spent in ``page``'s
    event loop when there is one, so that its request events are delivered)."""
    before = {name: cpu_seconds(p) for name, p in procs.items()}
    if page is None:
        time.sleep(seconds)  # a measurement window, not a synchronisation
    else:
        page.wait_for_timeout(seconds * 1000)
    return {name: round(cpu_seconds(p) - before[name], 3) for name, p in procs.items()}


def signed_in(page: Page, address: str) -> None:
    page.goto(address + "/ui/login")
    page.fill("#token", kit_admin_token())
    page.click("button[type=submit]")
    page.wait_for_url(address + "/ui/")


def measure(cluster: BenchCluster, jobs: int, seconds: float) -> Json:
    leader = cluster.start_jobmanager("jm-1")
    wait_until(lambda: cluster.serving_leader(leader), 120 + jobs * 0.05, "the leader recovered")
    standby = cluster.start_jobmanager("jm-2")
    cluster.wait_jobmanagers(2, 60)
    procs = {"leader": leader, "standby": standby}
    time.sleep(5)  # let start-up settle before the first window
    phases: dict[str, dict[str, float]] = {"idle": window(procs, seconds)}
    progress(f"idle: {phases['idle']}")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(60_000)
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url.split("?")[0]))
        signed_in(page, standby.address)
        page.wait_for_selector("#recent-jobs table")
        requests.clear()
        phases["overview"] = window(procs, seconds, page)
        calls = {"overview": _count(requests, standby.address)}
        progress(f"overview: {phases['overview']} {calls['overview']}")
        page.goto(standby.address + "/ui/jobs")
        page.locator("#job-list tbody tr").nth(jobs - 1).wait_for()
        requests.clear()
        phases["jobs"] = window(procs, seconds, page)
        calls["jobs"] = _count(requests, standby.address)
        progress(f"jobs page: {phases['jobs']} {calls['jobs']}")
        # The same page as on a JobManager without the event stream: it polls every 2 s.
        page.route("**/v1/events", lambda route: route.fulfill(status=404))
        page.reload()
        page.locator("#job-list tbody tr").nth(jobs - 1).wait_for()
        requests.clear()
        phases["jobs_polling"] = window(procs, seconds, page)
        calls["jobs_polling"] = _count(requests, standby.address)
        progress(f"jobs page, polling: {phases['jobs_polling']} {calls['jobs_polling']}")
        browser.close()
    return {"jobs": jobs, "window_s": seconds, "cpu_s": phases, "requests": calls}


def _count(urls: list[str], address: str) -> dict[str, int]:
    """The API requests a page made in a window, by path."""
    counts: dict[str, int] = {}
    for url in urls:
        path = url.removeprefix(address)
        counts[path] = counts.get(path, 0) + 1
    return counts


def rows(result: Json) -> list[Json]:
    seconds = result["window_s"]
    idle = result["cpu_s"]["idle"]
    out = []
    for phase in ("overview", "jobs", "jobs_polling"):
        for role in ("standby", "leader"):
            used = result["cpu_s"][phase][role]
            out.append(
                summary_row(
                    f"{role} JobManager CPU, {result['jobs']:,} jobs, {phase} page open",
                    used / seconds * 100,
                    "% of a core",
                    goal="",
                    met=None,
                    note=f"idle (no page): {idle[role] / seconds * 100:.2f} %",
                )
            )
    return out


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--jobs", type=int, default=None, help="jobs in the namespace (1000)")
    cli.add_argument("--window", type=float, default=None, help="seconds per phase (60)")
    args = cli.parse_args()
    jobs = args.jobs or (100 if args.quick else 1000)
    seconds = args.window or (10.0 if args.quick else 60.0)
    parameters: Json = {"jobs": jobs, "window_s": seconds, "taskmanagers": 0, "quick": args.quick}

    def body() -> Json:
        with temp_zookeeper("ui-cost") as zookeeper:
            cluster_id = f"ui-cost-{jobs}"
            with bench_cluster(
                zookeeper.workdir, zookeeper.connect_string, cluster_id, 10.0, verbose=False
            ) as cluster:
                written = persist_jobs(
                    zookeeper.connect_string,
                    f"{ZK_ROOT}/{cluster_id}",
                    cluster.settings["high-availability.storage-dir"],
                    jobs,
                    cluster.zookeeper_access,
                )
                progress(f"{jobs} jobs persisted in {written:.1f}s")
                result = measure(cluster, jobs, seconds)
            return cluster_document("ui_cost", parameters, result, rows(result), zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
