"""The run as a reader gets it: a Markdown table, the verdicts, the notes, and JSON.

Which rows the table has and in which order, each row's unit and the floor
it is read against (a row without a floor of its own shows the floor of the
row it is compared with), live here with the formatting, so a workload only
records samples. The table and verdicts go to stdout (README.md quotes them
as printed); ``--json`` writes every sample, summary, verdict and note.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from client_context import table as client_table
from results import Results, percentile, summary
from sizes import Sizes


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str  # "s" (shown in ms), "B" (bytes), "MB" (RSS, MiB)
    #: The metric of the floor column, when the floor is measured under another key.
    floor_key: str | None = None

    @property
    def floor(self) -> str:
        return self.floor_key or self.key


METRICS: list[Metric] = [
    Metric("spawn", "1 spawn -> initialize", "s"),
    Metric("exit", "1 exit after stdin closes", "s"),
    Metric("tools_list_bytes", "1 tools/list, the default tools", "B"),
    Metric("first_exec_settled", "2 first exec, new notebook (after settle)", "s"),
    Metric(
        "first_exec_cold",
        "2 first exec, new notebook (right after init)",
        "s",
        floor_key="first_exec_settled",
    ),
    Metric("round_trip", "3 MCP round trip, trivial tool", "s"),
    Metric("raw_round_trip", "3 same, the server alone (plain pipes)", "s"),
    Metric("execute_code", "3 warm execute_code 1+1", "s"),
    Metric("execute_cell", "3 warm execute_cell 1+1 (persisted)", "s", floor_key="execute_code"),
    Metric(
        "execute_code_transport",
        "3 warm execute_code 1+1, kernel over IPC (ours-tcp: TCP)",
        "s",
        floor_key="execute_code",
    ),
    Metric("insert_first", "4 insert_cell, first 50", "s"),
    Metric("insert_last", "4 insert_cell, last 50", "s"),
    Metric("insert_big", "4 insert_cell at the big notebook", "s"),
    Metric("write_once", "4 write the big notebook once", "s"),
    Metric("read_detailed", "5 read all cells, detailed", "s"),
    Metric("read_changed", "5 read all, after an outside change", "s", floor_key="read_detailed"),
    Metric("read_first", "5 first read, right after initialize", "s", floor_key="read_detailed"),
    Metric("read_first_settled", "5 first read, after a settle", "s", floor_key="read_detailed"),
    Metric("read_first_from_spawn", "5 spawn to the first read answered", "s"),
    Metric("read_brief", "5 read brief first page", "s"),
    Metric("read_bytes", "5 response bytes, detailed all", "B"),
    Metric("read_brief_bytes", "5 response bytes, brief page", "B"),
    Metric("read_heavy", "5 read all, 50 MiB of outputs, detailed", "s"),
    Metric("read_heavy_bytes", "5 response bytes, 50 MiB of outputs", "B"),
    Metric("read_heavy_rss_growth", "5 server RSS growth after that read", "MB"),
    Metric("outline", "5 outline of the big notebook", "s", floor_key="read_detailed"),
    Metric("outline_bytes", "5 response bytes, outline", "B"),
    Metric("search", "5 search the workspace (literal)", "s", floor_key="read_detailed"),
    Metric("search_first", "5 first search of the corpus", "s", floor_key="search_floor"),
    Metric("search_repeat", "5 repeated search of the corpus", "s", floor_key="search_floor"),
    Metric(
        "search_changed", "5 search right after an outside change", "s", floor_key="search_floor"
    ),
    Metric("search_bytes", "5 response bytes, corpus search", "B"),
    Metric("search_floor", "5 read and parse the corpus (JSON)", "s"),
    Metric("print_one", "6 big print, one line", "s"),
    Metric("print_lines", "6 big print, 1 KB lines", "s"),
    Metric("print_one_bytes", "6 response bytes, one line", "B"),
    Metric("print_lines_bytes", "6 response bytes, 1 KB lines", "B"),
    Metric("print_rss_growth", "6 server RSS growth (worst after a print)", "MB"),
    Metric("rss_init", "7 server RSS right after initialize", "MB"),
    Metric("rss_settled", "7 server RSS, idle after settle", "MB", floor_key="rss_init"),
    Metric("rss_8", "7 server RSS with 8 notebooks on 8 kernels", "MB", floor_key="rss_init"),
    Metric("tree_rss_8", "7 server + kernels, RSS summed, 8 notebooks", "MB"),
    Metric("tree_pss_8", "7 server + kernels, PSS summed, 8 notebooks", "MB"),
    Metric("concurrent_sleep", "8 eight notebooks sleep(1) at once", "s"),
    Metric(
        "list_variables", "9 list_variables, 1,000 names, page of 500", "s", floor_key="round_trip"
    ),
    Metric("run_all", "10 run_cells(all) of the trivial notebook", "s"),
    Metric("run_all_cells", "10 same cells, one execute_cell each", "s", floor_key="run_all"),
    Metric("insert_single", "11 insert_cell at the big notebook (history on)", "s"),
    Metric("apply_edits_50", "11 apply_edits, 50 operations, big notebook", "s"),
    Metric("diff_revisions", "11 diff_notebook across 100 revisions", "s"),
    Metric("history_list", "11 notebook_history (20 entries)", "s"),
    Metric("history_bytes", "11 history on disk after the workload", "B"),
    *(
        metric
        for cells in (1000, 5000, 20_000)
        for metric in (
            Metric(f"durable_write_at_{cells}", f"13 nbformat durable write, {cells:,} cells", "s"),
            Metric(
                f"insert_at_{cells}",
                f"13 insert_cell at {cells:,} cells",
                "s",
                floor_key=f"durable_write_at_{cells}",
            ),
            Metric(
                f"apply_edits_at_{cells}",
                f"13 apply_edits, 10 operations, {cells:,} cells",
                "s",
                floor_key=f"durable_write_at_{cells}",
            ),
        )
    ),
    *(
        metric
        for key, label in (
            ("find", "find a function among the notebooks"),
            ("sections", "a 2,000-cell notebook, section by section"),
            ("long_error", "the error ending a 200,000-line output"),
            ("fix", "fix a cell failing inside a library"),
            ("frame", "a 1,000-row DataFrame's head and shape"),
            ("plot", "what a plot shows"),
            ("rerun", "re-run, which cells changed"),
        )
        for metric in (
            Metric(f"task_{key}_bytes", f"12 {label}: bytes to the model", "B"),
            Metric(f"task_{key}_content_bytes", f"12 {label}: of which content blocks", "B"),
            Metric(f"task_{key}_calls", f"12 {label}: calls", "calls"),
            Metric(f"task_{key}_completed", f"12 {label}: completed (1 yes)", "calls"),
        )
    ),
]


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "s":
        return f"{value * 1e3:.1f} ms" if value < 10 else f"{value:.1f} s"
    if unit == "B":
        return f"{value:,.0f} B"
    if unit == "MB":
        return f"{value:.1f} MiB"
    return f"{value:g}"


def table(results: Results, names: list[str]) -> tuple[str, list[dict[str, Any]]]:
    """The Markdown table (ours, then each profile in ``names`` indented) and its records."""
    header = ("workload", "median", "p90", "floor median", "ratio")
    rows: list[tuple[str, ...]] = []
    records: list[dict[str, Any]] = []
    for metric in METRICS:
        floor_values = results.samples.get((metric.floor, "floor"))
        floor_median = statistics.median(floor_values) if floor_values else None
        # Variants of ours measured beside it (ours-tcp: the kernel over TCP) are shown as profiles are.
        variants = sorted(
            {
                who
                for key, who in results.samples
                if key == metric.key and who.startswith("ours-") and who not in names
            }
        )
        for who in ["ours", *variants, *names]:
            values = results.samples.get((metric.key, who))
            if not values:
                continue
            median = statistics.median(values)
            ratio = median / floor_median if floor_median else None
            label = metric.label if who == "ours" else f"  {metric.label} [{who}]"
            rows.append(
                (
                    label,
                    fmt(median, metric.unit),
                    fmt(percentile(values, 0.9), metric.unit),
                    fmt(floor_median, metric.unit),
                    f"{ratio:.2f}x" if ratio is not None else "—",
                )
            )
            records.append(
                {
                    "metric": metric.key,
                    "workload": metric.label,
                    "who": who,
                    "unit": metric.unit,
                    **summary(values),
                    "floor": summary(floor_values) if floor_values else None,
                    "ratio": ratio,
                    "notes": results.notes.get(metric.key, []),
                }
            )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "| " + " | ".join(("-" * w) for w in widths) + " |",
    ]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), records


#: The rows every CI log compares with each peer in the same run (issue 40, item 6): the
#: calls an agent makes most, warm, and the idle server's memory. Nothing is asserted.
PEER_ROWS = (
    "execute_code",
    "execute_cell",
    "insert_first",
    "spawn",
    "rss_init",
    "rss_settled",
    "rss_8",
    "tree_rss_8",
)


def peer_ratios(results: Results, names: list[str]) -> list[str]:
    """One line a row: ours' median, each peer's, and ours ÷ the peer's, from the same run."""
    labels = {metric.key: metric for metric in METRICS}
    lines = []
    for key in PEER_ROWS:
        ours = results.samples.get((key, "ours"))
        if not ours:
            continue
        metric = labels[key]
        mine = statistics.median(ours)
        cells = []
        for name in names:
            theirs = results.samples.get((key, name))
            if theirs:
                peer = statistics.median(theirs)
                cells.append(f"{name} {fmt(peer, metric.unit)}: {mine / peer:.2f}x")
        if cells:
            lines.append(f"- {metric.label}: ours {fmt(mine, metric.unit)}; " + "; ".join(cells))
    return lines


@dataclass
class Run:
    """What one run was: its mode, sizes, servers, machine and duration, and what it found."""

    mode: str
    sizes: Sizes
    machine: dict[str, Any]
    seconds: float
    profiles: list[str]
    results: Results
    checks: list[dict[str, Any]]
    skipped: dict[str, list[str]]


def print_report(run: Run) -> None:
    """Print the table, verdicts, notes, skips and the closing line to stdout."""
    text, _records = table(run.results, run.profiles)
    print()
    print(text)
    print()
    if against := peer_ratios(run.results, run.profiles):
        print("Ours against each peer in this run (our median / the peer's; asserts nothing):")
        print("\n".join(against))
        print()
    per_client = client_table(run.results)
    if per_client:
        print("Workload 12 per client: bytes each client hands its model (and whether done there)")
        print()
        print(per_client)
        print()
    for check in run.checks:
        mark = {True: "met", False: "NOT MET", None: "not measured"}[check["met"]]
        print(f"- {check['target']}: {mark} — {check['detail']}")
    for metric, notes in run.results.notes.items():
        print(f"  note {metric}: {'; '.join(notes)}")
    for name, skipped in run.skipped.items():
        print(f"  {name}: skipped {', '.join(skipped)} (no mapping in its profile)")
    info = run.machine
    print(
        f"\n{run.mode} run, {run.sizes.repetitions} repetitions, {run.seconds:.0f} s; "
        f"{info['nproc']} x {info['cpu']}, Python {info['python']}; "
        f"load average {info['load']} at the start, {info['load_at_end']} at the end"
    )


def write_json(path: str, run: Run) -> None:
    """Every sample with its summary and floor, the verdicts and notes, and the run's setting."""
    _text, records = table(run.results, run.profiles)
    document = {
        "mode": run.mode,
        "sizes": asdict(run.sizes),
        "machine": run.machine,
        "seconds": run.seconds,
        "profiles": run.profiles,
        "results": records,
        "targets": run.checks,
        "against_peers": peer_ratios(run.results, run.profiles),
        "notes": run.results.notes,
        "skipped": run.skipped,
    }
    Path(path).write_text(json.dumps(document, indent=1) + "\n")
