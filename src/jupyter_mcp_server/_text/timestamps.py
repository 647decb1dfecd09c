"""UTC timestamps as every part of the server writes them: ISO 8601 with a ``Z``."""

from __future__ import annotations

from datetime import datetime, timezone


def iso_utc(seconds: float, *, precise: bool = False) -> str:
    """``2026-12-01T12:00:00Z`` for a POSIX time; with `precise`, microseconds too."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    if precise:
        return moment.isoformat().replace("+00:00", "Z")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
