"""The samples a run collects, and the statistics every report is made of.

Workloads add samples by (metric, who), where ``who`` is "ours", "floor" or
a profile's name, and notes that explain a row; the targets and the report
read medians, p90 and summaries from here. Kept apart from the harness so
that judging and printing a run need no MCP client.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator
from typing import Any


def percentile(values: list[float], fraction: float) -> float:
    """Linear interpolation between the closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p90": percentile(values, 0.9),
        "min": min(values),
        "max": max(values),
        "samples": [round(v, 6) for v in values],
    }


class Results:
    """Samples by (metric, who), and notes by metric, in the order they came."""

    def __init__(self) -> None:
        self.samples: dict[tuple[str, str], list[float]] = {}
        self.notes: dict[str, list[str]] = {}

    def add(self, metric: str, who: str, value: float) -> None:
        self.samples.setdefault((metric, who), []).append(value)

    @contextlib.contextmanager
    def timing(self, metric: str, who: str) -> Iterator[None]:
        """Add the wall time of the block (awaits included) as a sample, if it succeeds."""
        started = time.perf_counter()
        yield
        self.add(metric, who, time.perf_counter() - started)

    def note(self, metric: str, text: str) -> None:
        notes = self.notes.setdefault(metric, [])
        if text not in notes:
            notes.append(text)

    def median(self, metric: str, who: str = "ours") -> float:
        values = self.samples.get((metric, who))
        if not values:
            raise KeyError(f"no samples of {metric} for {who}")
        return statistics.median(values)
