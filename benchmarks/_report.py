"""Turning the collected foundation figures into docs/performance.md and one PNG plot.

:func:`write_section` replaces only the "## Foundation layer" section of the performance page
(up to the next "## " heading), so sections written by hand or by other suites stay. The plot
needs matplotlib, which Steward does not depend on: :func:`draw_plot` returns False without it.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

from _common import Json
from steward.zookeeper.layout import SERVER_SETTINGS

SECTION = "## Foundation layer"
PAGE_HEADER = """# Performance

Figures measured by the scripts in `benchmarks/`, and how to reproduce them. Each script
measures one thing, starts (and stops) its own ZooKeeper, and prints one JSON document;
`benchmarks/run_all.py` runs a suite, stores the JSON under `benchmarks/results/` and
regenerates that suite's section below: edit `benchmarks/_report.py`, not the section.
"""
_NEXT_SECTION = re.compile(r"^## ", re.MULTILINE)


# ------------------------------------------------------------------------------ page


def write_section(page: Path, results: Json, results_link: str, image_link: str | None) -> None:
    """Create ``page`` if needed and replace its foundation section with ``results``."""
    section = render_section(results, results_link, image_link)
    text = page.read_text(encoding="utf-8") if page.exists() else PAGE_HEADER
    start = text.find(SECTION + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        following = _NEXT_SECTION.search(text, start + len(SECTION))
        end = following.start() if following else len(text)
        text = text[:start] + section + ("\n" + text[end:] if following else "")
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")


def render_section(results: Json, results_link: str, image_link: str | None) -> str:
    benches = results["benchmarks"]
    parts = [
        SECTION,
        _provenance(results, results_link),
        _failover(benches["leader_failover"]),
        _writes([benches[k] for k in ("fenced_writes", "fenced_writes_tmpfs") if k in benches]),
        _job_graphs(benches["job_graph_store"]),
    ]
    if image_link:
        parts.append(f"![The foundation figures]({image_link})")
    return "\n\n".join(parts) + "\n"


def _provenance(results: Json, results_link: str) -> str:
    env = results["benchmarks"]["leader_failover"]["environment"]
    m = results["machine"]
    quick = " **Quick (smoke-sized) run: not figures to quote.**" if results["quick"] else ""
    return (
        f"Measured on {results['measured_at'][:10]} with `{results['command']}` from the "
        f"repository root ({results['total_seconds']:.0f} s in all), {_measured_code(results)}."
        f"{quick}\n\n"
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['ram_gib']} GiB RAM, {m['platform']} "
        f"({_load(results)}), "
        f"Python {m['python']}, ZooKeeper {env['zookeeper']} (one standalone managed server, "
        f"tickTime {SERVER_SETTINGS['tickTime']} ms, data on {env['zookeeper_data_fs']}; it "
        f"fsyncs its transaction log on every write). Raw figures: "
        f"[{Path(results_link).name}]({results_link})."
    )


def _load(results: Json) -> str:
    start = results["machine"].get("load_average_1m", "?")
    end = results.get("load_average_1m_at_end")
    at_end = f", {end} at the end" if end is not None else ""
    return f"1-minute load average {start} at the start{at_end}: other work shares the machine"


def _measured_code(results: Json) -> str:
    code = results.get("steward", {})
    if "commit" not in code:
        return f"Steward imported from `{code.get('path', '?')}`"
    changes = " plus uncommitted changes" if code["uncommitted_changes"] else ""
    return f"Steward at commit `{code['commit']}`{changes} (imported from `{code['path']}`)"


def _failover(doc: Json) -> str:
    r, p = doc["results"], doc["parameters"]
    timeout = r["session_timeout_s"]
    rows = [
        ("SIGTERM: graceful release", r["graceful"]),
        ("SIGKILL: crash, the session must expire", r["crash"]),
    ]
    table = _table(
        ["leader process stopped by", "min", "median", "max"],
        [[name, *(_duration(s[k]) for k in ("min", "median", "max"))] for name, s in rows],
    )
    low, high = r["crash_expected_range_s"]
    return (
        f"### Leader failover\n\n"
        f"{p['contenders']} contender processes, session timeout {timeout:g} s, "
        f"{p['repeats']} trial(s) of each kind; time from just before the signal to the "
        f"next leader's `leader/info` seen through `LeaderRetrieval`. Each signal is sent at a "
        f"random phase of the leader's ping cycle.\n\n{table}\n\n"
        f"Crash takeover median / session timeout = "
        f"**{r['crash_median_over_session_timeout']:.2f}**. A crash costs between "
        f"{low:.2f} s and {high:.2f} s plus the election: ZooKeeper expires a session one "
        f"timeout after it last heard from it (an idle kazoo session pings every third of the "
        f"timeout), at the next {p['zookeeper_tick_ms']} ms tick. A graceful stop costs only "
        f"the election: the leader deletes its latch on the way out. Epochs strictly "
        f"increased in every trial: {'yes' if r['epochs_strictly_increased'] else '**no**'}."
    )


def _writes(docs: list[Json]) -> str:
    rows = [_writes_row(doc, threads) for doc in docs for threads in doc["parameters"]["threads"]]
    table = _table(
        [
            "ZooKeeper data",
            "threads",
            "fenced/s",
            "plain set/s",
            "plain 1-op multi/s",
            "fenced/set",
            "fenced/multi",
            "p50 latency fenced / set / multi",
        ],
        rows,
    )
    p = docs[0]["parameters"]
    costs = [
        _fence_cost(doc) for doc in docs if "latency_ms" in doc["results"]["threads_1"]["fenced"]
    ]
    return (
        f"### Fenced writes\n\n"
        f"Overwrites of a {p['size_bytes']} B znode, {p['writes']:,} per variant, thread count "
        f"and round; the variants take turns in blocks of {p['block']} writes, {p['rounds']} "
        f"rounds each starting with another variant; median rate over the rounds. Fenced: "
        f"`fence.transaction().set_data(...).commit()` (a 2-op multi, epoch check + setData); "
        f"plain set: `client.set`; plain multi: an unfenced 1-op `client.transaction()`. "
        f"Threads share one session, each rewriting its own znode. On disk, ZooKeeper fsyncs "
        f"every write; on tmpfs the fsync is free, which leaves the protocol and CPU cost.\n\n"
        f"{table}" + ("\n\n" + " ".join(costs) if costs else "")
    )


def _fence_cost(doc: Json) -> str:
    """What the epoch check adds to one write at the median, and how the rounds agreed."""
    t = doc["results"]["threads_1"]
    p50 = {v: t[v]["latency_ms"]["p50"] * 1000 for v in ("fenced", "plain_set", "plain_multi")}
    rounds = t["fenced_over_plain_set_by_round"]
    return (
        f"On {doc['parameters'].get('zookeeper_data', 'disk')}, one thread: a fenced write "
        f"takes {p50['fenced'] - p50['plain_set']:+.0f} µs over a plain set and "
        f"{p50['fenced'] - p50['plain_multi']:+.0f} µs over a plain multi at the median; "
        f"fenced/set per round ranged {min(rounds):.2f}-{max(rounds):.2f}."
    )


def _writes_row(doc: Json, threads: int) -> list[str]:
    t = doc["results"][f"threads_{threads}"]
    variants = ("fenced", "plain_set", "plain_multi")
    latency = "n/a"
    if all("latency_ms" in t[v] for v in variants):
        latency = " / ".join(f"{t[v]['latency_ms']['p50']:.2f}" for v in variants) + " ms"
    return [
        doc["parameters"].get("zookeeper_data", "disk"),
        str(threads),
        *(f"{t[v]['writes_per_s']:,}" for v in variants),
        f"{t['fenced_over_plain_set']:.2f}",
        f"{t['fenced_over_plain_multi']:.2f}",
        latency,
    ]


def _job_graphs(doc: Json) -> str:
    r, p = doc["results"], doc["parameters"]
    put, jobs = r["put"], p["jobs"]
    rows = [
        [
            f"put {jobs:,} job graphs through the fence",
            f"{put['seconds']:.2f} s ({put['jobs_per_s']:,.0f} jobs/s; per put p50 "
            f"{put['latency_ms']['p50']:.2f} ms, p99 {put['latency_ms']['p99']:.2f} ms)",
        ]
    ]
    for parallelism in p["parallelism"]:
        rec = r["recover"][f"parallelism_{parallelism}"]
        rows.append(
            [
                f"`recover_all(parallelism={parallelism})`",
                f"{rec['seconds']['median']:.2f} s median of {rec['seconds']['n']} "
                f"({rec['jobs_per_s']:,.0f} jobs/s; min {rec['seconds']['min']:.2f} s)",
            ]
        )
    if len(p["parallelism"]) > 1:
        low, high = p["parallelism"][0], p["parallelism"][-1]
        medians = [r["recover"][f"parallelism_{n}"]["seconds"]["median"] for n in (low, high)]
        rows.append(
            [
                f"recovery speed-up, parallelism {high} over {low}",
                f"{medians[0] / medians[1]:.2f} times as fast",
            ]
        )
    rows += [
        [
            "ZooKeeper bytes per job",
            f"{r['zookeeper_bytes_per_job']:.0f} ({r['zookeeper_data_bytes_per_job']:.0f} B "
            f"pointer JSON + {r['zookeeper_path_bytes_per_job']:.0f} B znode path; the server's "
            f"`zk_approximate_data_size` grew by "
            f"{r['zookeeper_approximate_data_size_delta_per_job']:.0f} per job)",
        ],
        [
            "blob bytes per job",
            f"{r['blob_bytes_per_job']:.0f} (job graph JSON of {r['job_graph_json_bytes']:,} B "
            f"with the base64 pipeline file, plus the blob's header line)",
        ],
    ]
    return (
        f"### Job graph store\n\n"
        f"{jobs:,} jobs, each a {p['artifact_bytes']:,} B pipeline file; blobs on `file://` in "
        f"the same temporary directory. Each recovery uses a fresh session and store (blob "
        f"files come from the page cache). ZooKeeper bytes count the data plus the full path "
        f"of every `jobgraphs/*` znode, not the server's per-znode overhead.\n\n"
        + _table(["figure", "value"], rows)
    )


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ plot


def draw_plot(results: Json, image: Path) -> bool:
    """Draw the three benchmarks side by side into ``image``; False without matplotlib."""
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return False
    benches = results["benchmarks"]
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.2))
    _plot_failover(left, benches["leader_failover"])
    _plot_writes(
        middle, [benches[k] for k in ("fenced_writes", "fenced_writes_tmpfs") if k in benches]
    )
    _plot_job_graphs(right, benches["job_graph_store"])
    figure.suptitle(f"Steward foundation layer, {results['measured_at'][:10]}")
    figure.tight_layout()
    image.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(image, dpi=100)
    plt.close(figure)
    return True


def _plot_failover(axes: Any, doc: Json) -> None:
    r = doc["results"]
    for x, kind in enumerate(("graceful", "crash")):
        seconds = [t["seconds"] for t in r["trials"] if t["kind"] == kind]
        axes.scatter([x] * len(seconds), seconds, alpha=0.7, label=f"{kind} trials")
    axes.axhline(r["session_timeout_s"], linestyle="--", color="grey", label="session timeout")
    low, high = r["crash_expected_range_s"]
    axes.axhspan(low, high, color="tab:orange", alpha=0.1, label="expected crash range")
    axes.set_yscale("log")
    axes.set_xticks([0, 1], ["SIGTERM (graceful)", "SIGKILL (crash)"])
    axes.set_xlim(-0.6, 1.6)
    axes.set_ylabel("seconds to the next leader (log)")
    axes.set_title("Leader failover")
    axes.legend(fontsize="small")


def _plot_writes(axes: Any, docs: list[Json]) -> None:
    groups = [
        (f"{doc['parameters'].get('zookeeper_data', 'disk')}\n{n} thread(s)", doc, n)
        for doc in docs
        for n in doc["parameters"]["threads"]
    ]
    variants = ("fenced", "plain_set", "plain_multi")
    width = 0.8 / len(variants)
    for i, variant in enumerate(variants):
        rates = [doc["results"][f"threads_{n}"][variant]["writes_per_s"] for _, doc, n in groups]
        positions = [x + (i - 1) * width for x in range(len(groups))]
        axes.bar(positions, rates, width, label=variant.replace("_", " "))
    axes.set_xticks(range(len(groups)), [label for label, _, _ in groups])
    axes.set_ylabel("writes per second")
    axes.set_title(f"Fenced vs plain writes ({docs[0]['parameters']['size_bytes']} B znode)")
    axes.legend(fontsize="small")


def _plot_job_graphs(axes: Any, doc: Json) -> None:
    r, p = doc["results"], doc["parameters"]
    labels = ["put"] + [f"recover\nparallelism {n}" for n in p["parallelism"]]
    rates = [r["put"]["jobs_per_s"]] + [
        r["recover"][f"parallelism_{n}"]["jobs_per_s"] for n in p["parallelism"]
    ]
    axes.bar(range(len(rates)), rates, color=["tab:red"] + ["tab:green"] * (len(rates) - 1))
    axes.set_xticks(range(len(rates)), labels)
    axes.set_ylabel("job graphs per second")
    axes.set_title(f"Job graph store ({p['jobs']:,} jobs)")
