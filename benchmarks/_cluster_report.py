"""Turning the collected cluster figures into docs/performance.md's "## Cluster" and plots.

Every cluster benchmark prints a document with a ``summary`` list of rows (``figure``,
``steward``, ``peer``, ``unit``, ``ratio``, ``goal``, ``met``, ``note``; see
``_common.summary_row``), so this module renders any benchmark, including ones written later:
one table per benchmark, an overview of the goals, and one plot per benchmark
(``docs/img/cluster-<key>.png``; two benchmarks get a plot of their own shape, the others a bar
chart of their rows). :func:`write_cluster_section` replaces only the "## Cluster" section.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

from _common import Json
from _report import PAGE_HEADER

SECTION = "## Cluster"
HERE = Path(__file__).resolve().parent
_NEXT_SECTION = re.compile(r"^## ", re.MULTILINE)
_MET = {True: "yes", False: "**no**", None: ""}


# ------------------------------------------------------------------------------ page


def write_cluster_section(page: Path, results: Json, results_link: str, images: list[str]) -> None:
    """Create ``page`` if needed and replace its cluster section with ``results``."""
    section = render_section(results, results_link, images)
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


def render_section(results: Json, results_link: str, images: list[str]) -> str:
    benches: dict[str, Json] = results["benchmarks"]
    parts = [SECTION, _provenance(results, results_link), _overview(benches)]
    for key, doc in benches.items():
        parts.append(_benchmark(key, doc, [i for i in images if f"cluster-{key}." in i]))
    for key, why in results.get("skipped", {}).items():
        parts.append(f"### {_title(key)}\n\nNot measured: {why}.")
    return "\n\n".join(parts) + "\n"


def _provenance(results: Json, results_link: str) -> str:
    m = results["machine"]
    code = results.get("steward", {})
    measured = f"Steward imported from `{code.get('path', '?')}`"
    if "commit" in code:
        changes = " plus uncommitted changes" if code["uncommitted_changes"] else ""
        measured = f"Steward at commit `{code['commit']}`{changes}"
    quick = " **Quick (smoke-sized) run: not figures to quote.**" if results["quick"] else ""
    if results.get("merged"):
        quick += (
            " That run re-measured some benchmarks and kept the stored figures of the others"
            " (`--merge`): each benchmark below says when it was measured."
        )
    return (
        f"Measured on {results['measured_at'][:10]} with `{results['command']}` from the "
        f"repository root ({results['total_seconds']:.0f} s in all), {measured}.{quick}\n\n"
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['ram_gib']} GiB RAM, {m['platform']}, "
        f"Python {m['python']}; 1-minute load average {m['load_average_1m']} at the start, "
        f"{results.get('load_average_1m_at_end', '?')} at the end: other work shared the "
        f"machine, so every time below includes waiting for a CPU. Each benchmark starts its "
        f"own ZooKeeper and real JobManager/TaskManager processes (`python -m steward.cli`), "
        f"signals them for real, and prints one JSON document; raw figures: "
        f"[{Path(results_link).name}]({results_link}). The peer column holds the same figure "
        f"measured on Spark's standalone HA in the same run where a benchmark has one (on "
        f"Apache Flink's JobManager HA in the Flink peer section)."
    )


def _overview(benches: dict[str, Json]) -> str:
    rows = [
        [_title(key), row["figure"], _value(row), row["goal"], _MET[row["met"]]]
        for key, doc in benches.items()
        for row in doc.get("summary", [])
        if row.get("met") is not None
    ]
    met = sum(1 for row in rows if row[-1] == _MET[True])
    goals = len(rows)
    return f"### Goals\n\n{met} of {goals} goals met.\n\n" + _table(
        ["benchmark", "figure", "Steward", "goal", "met"], rows
    )


def _benchmark(key: str, doc: Json, images: list[str]) -> str:
    head = f"### {_title(key)}\n\n{_describe(key)}"
    if "error" in doc:
        return f"{head}\n\n**Failed in this run:** `{doc['error'][-500:]}`"
    rows = [
        [
            row["figure"],
            _value(row),
            _number(row.get("peer"), row["unit"]),
            "" if row.get("ratio") is None else f"{row['ratio']:.2f}",
            row.get("goal", ""),
            _MET[row.get("met")],
            row.get("note", ""),
        ]
        for row in doc.get("summary", [])
    ]
    table = _table(["figure", "Steward", "peer", "ratio", "goal", "met", "note"], rows)
    wall = f" ({doc['wall_seconds']:.0f} s)" if "wall_seconds" in doc else ""
    when = f", measured {doc['measured_at'].replace('T', ' ')}" if "measured_at" in doc else ""
    env = doc.get("environment", {})
    load = f" at a load average of {env['load_average_1m']}" if "load_average_1m" in env else ""
    code = doc.get("steward", {})
    commit = f" on commit `{code['commit']}`" if "commit" in code else ""
    commit += " plus uncommitted changes" if commit and code.get("uncommitted_changes") else ""
    parameters = _parameters(doc)  # none: a script that prints no cluster_document
    given = f"; parameters: `{parameters}`" if parameters else ""
    script = f"Script: `benchmarks/{key}.py`{wall}{when}{commit}{load}{given}."
    plots = "".join(f"\n\n![{_title(key)}]({image})" for image in images)
    peer = f"\n\n{_flink_peer(doc)}" if key == "flink_peer" else ""
    return f"{head}\n\n{script}{peer}\n\n{table}{plots}"


def _flink_peer(doc: Json) -> str:
    """Which Flink was measured and how it was obtained, or why it could not run."""
    peer = doc.get("peer", {})
    if peer.get("error"):
        return f"Flink could not run here: `{str(peer['error'])[-500:]}`"
    failed = [
        f"session {s['session']}: `{s['peer']['error'][-300:]}`"
        for s in doc.get("results", {}).get("per_session", [])
        if s.get("peer", {}).get("error")
    ]
    name = f"{peer.get('name', 'Flink')} {peer.get('version') or ''}".strip()
    text = f"Peer: {name} ({peer.get('obtained', '')})."
    return text + (" Flink failed in " + "; ".join(failed) + "." if failed else "")


def _describe(key: str) -> str:
    """The first paragraph of the script's docstring (what it measures, how)."""
    path = HERE / f"{key}.py"
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError):
        return ""
    return " ".join(doc.split("\n\n")[0].split())


def _parameters(doc: Json) -> str:
    params = doc.get("parameters", {})
    return ", ".join(f"{k}={v}" for k, v in params.items() if k != "quick")[:300]


def _title(key: str) -> str:
    return key.replace("_", " ").capitalize()


def _value(row: Json) -> str:
    return _number(row.get("steward"), row["unit"])


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    text = f"{value:,.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"
    return f"{text} {unit}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ plots


def draw_cluster_plots(results: Json, directory: Path) -> list[Path] | None:
    """One PNG per benchmark with figures; None without matplotlib."""
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    drawn = []
    for key, doc in results["benchmarks"].items():
        rows = [r for r in doc.get("summary", []) if r.get("steward") is not None]
        if not rows:
            continue
        figure, axes = plt.subplots(figsize=(10, 4.5))
        special = {"cluster_failover": _plot_failover, "recovery_scaling": _plot_recovery}
        special.get(key, _plot_rows)(axes, doc if key in special else rows)
        axes.set_title(f"{_title(key)} ({results['measured_at'][:10]})")
        figure.tight_layout()
        image = directory / f"cluster-{key}.png"
        figure.savefig(image, dpi=90)
        plt.close(figure)
        drawn.append(image)
    return drawn


def _plot_rows(axes: Any, rows: list[Json]) -> None:
    """Horizontal bars of the rows in the most common unit: Steward, and the peer if known."""
    units = [r["unit"] for r in rows]
    unit = max(set(units), key=units.count)
    chosen = [r for r in rows if r["unit"] == unit]
    colours = {True: "tab:green", False: "tab:red", None: "tab:blue"}
    positions = range(len(chosen))
    axes.barh(
        [p + 0.2 for p in positions],
        [r["steward"] for r in chosen],
        0.4,
        color=[colours[r.get("met")] for r in chosen],
        label="Steward (green: goal met, red: missed)",
    )
    peers = [r.get("peer") or 0 for r in chosen]
    if any(peers):
        axes.barh([p - 0.2 for p in positions], peers, 0.4, color="tab:grey", label="peer")
    axes.set_yticks(list(positions), [_wrap(r["figure"]) for r in chosen], fontsize="small")
    axes.invert_yaxis()
    axes.set_xlabel(unit)
    axes.legend(fontsize="small")


def _plot_failover(axes: Any, doc: Json) -> None:
    """Time until every job runs again against the number of jobs, per signal and timeout."""
    for session in doc["results"]["sessions"]:
        timeout = session["session_timeout_s"]
        by_mode: dict[str, list[tuple[int, float]]] = {}
        for key, group in session["by_mode_and_jobs"].items():
            mode, jobs = key.rsplit("_", 1)
            by_mode.setdefault(mode, []).append((int(jobs), group["all_running_s"]["median"]))
        for mode, points in by_mode.items():
            points.sort()
            axes.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                marker="o",
                label=f"{mode}, session {timeout:g} s",
            )
        axes.axhline(timeout + 1, linestyle=":", color="grey")
    axes.axhline(2.0, linestyle="--", color="tab:red", label="crash goal 2 s")
    axes.axhline(1.0, linestyle="--", color="tab:green", label="graceful goal 1 s")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("running jobs (log)")
    axes.set_ylabel("s until every job RUNNING (median, log)")
    axes.legend(fontsize="small")


def _plot_recovery(axes: Any, doc: Json) -> None:
    points = doc["results"]["points"]
    jobs = [p["jobs"] for p in points]
    axes.plot(jobs, [p["recovery_ms_per_job"] for p in points], marker="o", label="recovery")
    axes.plot(
        jobs, [p["ready_s"] * 1000 / p["jobs"] for p in points], marker="s", label="spawn to ready"
    )
    axes.set_xscale("log")
    axes.set_xlabel("persisted jobs (log)")
    axes.set_ylabel("ms per job (flat or falling = linear or better)")
    axes.set_ylim(bottom=0)
    axes.legend(fontsize="small")


def _wrap(text: str, width: int = 48) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join([*lines, line])
