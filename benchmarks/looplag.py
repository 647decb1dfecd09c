"""Run a module with a probe of its event loop's lag inside it, and write what the probe saw.

    python benchmarks/looplag.py OUT.json -m jupyter_mcp_server start ...

Issue 31, item 3 asks for the server's event-loop lag. Measured from outside
(a request's latency) it is the lag of everything in between: the client's
own loop, the socket, queued requests, and a machine whose cores are busy
with other work. Here a timer runs inside the server's loop (the main
thread's, the one that serves every request): every ``INTERVAL`` it notes how
late it fired. Lateness has two causes, and the probe tells them apart:

- the loop was busy (a callback ran long, or a system call blocked the loop's
  thread: an ``fsync``, a big read): the server's own lag, the figure to
  keep small;
- the loop's thread was ready but the machine gave it no core: the kernel
  counts that time for the thread as its run delay
  (``/proc/thread-self/schedstat``, second field), and that part of the
  lateness is the machine's.

So each sample is the timer's lateness, and the server's own part of it:
the lateness less the run delay the thread accrued since the last sample
(never below zero). To say what held the loop, every callback the loop runs
(``asyncio.Handle._run``: a task's step, a protocol's ``data_received``, a
timer) is timed, and each that ran ``SLOW`` or longer is counted under its
name (the coroutine a task step belongs to, or the callback), with the
longest: a loop is late either because one callback ran long, or because
many ready ones ran one after another in one pass. A task's step is named
by its outermost coroutine (a request handler), which says little of what
ran long, so a watcher thread also samples the loop thread's stack every
``SAMPLE`` while a callback has run longer than ``SLOW``: the innermost
frame of the server's own code and the innermost frame of all, counted.
The cyclic garbage collector's pauses are timed too (``gc.callbacks``), per
generation, since a collection stops whichever thread triggered it: the
loop's, mostly. SIGUSR1 clears the
samples (``agents.py`` sends it once the agents are warm); SIGUSR2 writes
their percentiles and the slowest callbacks to ``OUT.json``, as does the
exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import json
import math
import os
import runpy
import signal
import sys
import threading
import time
from typing import Any

#: How often the probe's timer is due, in seconds.
INTERVAL = 0.02
#: A callback that holds the loop this long or longer is counted by name.
SLOW = 0.02
#: How often the watcher looks at the loop thread's stack while a callback runs long.
SAMPLE = 0.005


def _run_delay_seconds() -> float:
    try:
        with open("/proc/thread-self/schedstat") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


class Probe:
    """A timer in one loop, noting how late each firing was and how much of it was the loop's."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.late: list[float] = []
        self.own: list[float] = []
        self._run_delay = _run_delay_seconds()
        self._due = loop.time() + INTERVAL
        loop.call_at(self._due, self._fire)

    def _fire(self) -> None:
        now = self.loop.time()
        late = max(0.0, now - self._due)
        run_delay = _run_delay_seconds()
        waited, self._run_delay = run_delay - self._run_delay, run_delay
        self.late.append(late)
        self.own.append(max(0.0, late - waited))
        self._due = now + INTERVAL
        self.loop.call_at(self._due, self._fire)

    def clear(self) -> None:
        self.late.clear()
        self.own.clear()

    def summary(self) -> dict[str, Any]:
        if not self.late:
            return {"samples": 0}
        ms = 1000.0
        return {
            "samples": len(self.late),
            "interval_ms": INTERVAL * ms,
            "late_p50_ms": round(_percentile(self.late, 0.5) * ms, 2),
            "late_p99_ms": round(_percentile(self.late, 0.99) * ms, 2),
            "late_max_ms": round(max(self.late) * ms, 2),
            "own_p50_ms": round(_percentile(self.own, 0.5) * ms, 2),
            "own_p99_ms": round(_percentile(self.own, 0.99) * ms, 2),
            "own_max_ms": round(max(self.own) * ms, 2),
            "written_at": time.time(),
        }


probes: list[Probe] = []
#: Callback name -> [count, seconds in all, longest], of the callbacks that ran SLOW or longer.
slow: dict[str, list[float]] = {}


def _name_of(handle: asyncio.Handle) -> str:
    callback = handle._callback  # type: ignore[attr-defined]
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        coroutine = task.get_coro()
        code = getattr(coroutine, "cr_code", None) or getattr(coroutine, "gi_code", None)
        if code is not None:
            return f"task {code.co_qualname} ({code.co_filename.rsplit('/', 2)[-2:][-1]}:{code.co_firstlineno})"
        return f"task {coroutine!r}"
    return getattr(callback, "__qualname__", repr(callback))


#: Where the loop thread was, sampled while a callback ran long: (ours, innermost) -> samples.
held: dict[tuple[str, str], int] = {}
#: When the callback now running started (perf_counter), or None between callbacks.
running_since: list[float | None] = [None]
#: Generation -> [collections, seconds in all, longest], of the garbage collector's pauses.
collections: dict[int, list[float]] = {}
_collecting: list[float] = [0.0]


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _collecting[0] = time.perf_counter()
        return
    spent = time.perf_counter() - _collecting[0]
    seen = collections.setdefault(int(info.get("generation", -1)), [0, 0.0, 0.0])
    seen[0] += 1
    seen[1] += spent
    seen[2] = max(seen[2], spent)


def _where(frame: Any) -> tuple[str, str]:
    innermost = f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_code.co_qualname}"
    ours = "-"
    while frame is not None:
        if "/jupyter_mcp_server/" in frame.f_code.co_filename:
            path = frame.f_code.co_filename.split("/jupyter_mcp_server/", 1)[1]
            ours = f"{path}:{frame.f_lineno} {frame.f_code.co_qualname}"
            break
        frame = frame.f_back
    return ours, innermost


def _watch(loop_thread: int) -> None:
    while True:
        time.sleep(SAMPLE)
        since = running_since[0]
        if since is None or time.perf_counter() - since < SLOW:
            continue
        frame = sys._current_frames().get(loop_thread)
        if frame is not None:
            key = _where(frame)
            held[key] = held.get(key, 0) + 1


def _timed_run(run: Any) -> Any:
    def timed(self: asyncio.Handle) -> None:
        started = time.perf_counter()
        running_since[0] = started
        try:
            run(self)
        finally:
            running_since[0] = None
            spent = time.perf_counter() - started
            if spent >= SLOW:
                seen = slow.setdefault(_name_of(self), [0, 0.0, 0.0])
                seen[0] += 1
                seen[1] += spent
                seen[2] = max(seen[2], spent)

    return timed


def asked_for(server: Any, path: Any) -> dict[str, Any]:
    """What the probe in ``server`` (a ``Popen`` running under this script) saw since it was
    last cleared: SIGUSR2, then the JSON it writes to ``path``."""
    asked = time.time()
    server.send_signal(signal.SIGUSR2)
    for _ in range(100):
        with contextlib.suppress(OSError, ValueError):
            with open(path) as handle:
                seen = json.load(handle)
            if seen.get("written_at", 0) >= asked or seen.get("samples") == 0:
                return dict(seen)
        time.sleep(0.05)
    return {"samples": 0}


def _write(path: str) -> None:
    summary = probes[-1].summary() if probes else {"samples": 0}
    worst = sorted(slow.items(), key=lambda item: -item[1][1])[:12]
    summary["slow_callbacks"] = [
        {
            "name": name,
            "count": int(count),
            "total_ms": round(total * 1000, 1),
            "longest_ms": round(longest * 1000, 1),
        }
        for name, (count, total, longest) in worst
    ]
    summary["collections"] = {
        str(generation): {
            "count": int(count),
            "total_ms": round(total * 1000, 1),
            "longest_ms": round(longest * 1000, 1),
        }
        for generation, (count, total, longest) in sorted(collections.items())
    }
    summary["held_at"] = [
        {"ours": ours, "innermost": innermost, "ms": round(count * SAMPLE * 1000)}
        for (ours, innermost), count in sorted(held.items(), key=lambda item: -item[1])[:15]
    ]
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as handle:
        json.dump(summary, handle)
    os.replace(temporary, path)


if __name__ == "__main__":
    out = sys.argv[1]
    if sys.argv[2] != "-m":
        sys.exit("usage: looplag.py OUT.json -m MODULE [ARGS...]")
    module = sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    _run_forever = asyncio.base_events.BaseEventLoop.run_forever

    def run_forever(self: asyncio.base_events.BaseEventLoop) -> None:
        # The main thread's loop serves the requests; a loop started later there (the
        # server's, after any short one at start-up) is the one measured.
        if threading.current_thread() is threading.main_thread():
            probes.append(Probe(self))
        _run_forever(self)

    asyncio.base_events.BaseEventLoop.run_forever = run_forever  # type: ignore[method-assign]
    asyncio.events.Handle._run = _timed_run(asyncio.events.Handle._run)  # type: ignore[method-assign]

    threading.Thread(target=_watch, args=(threading.get_ident(),), daemon=True).start()

    gc.callbacks.append(_on_collection)

    def _clear(_signum: int, _frame: object) -> None:
        slow.clear()
        held.clear()
        collections.clear()
        if probes:
            probes[-1].clear()

    signal.signal(signal.SIGUSR1, _clear)
    signal.signal(signal.SIGUSR2, lambda _signum, _frame: _write(out))
    atexit.register(_write, out)
    # uvicorn re-raises the SIGTERM it caught once it has shut down, which skips atexit.
    _raise_signal = signal.raise_signal

    def _written_then_raised(signum: int) -> None:
        _write(out)
        _raise_signal(signum)

    signal.raise_signal = _written_then_raised
    runpy.run_module(module, run_name="__main__", alter_sys=True)
