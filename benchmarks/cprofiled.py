"""Run a module under cProfile in every thread, and write the merged statistics at exit.

    python benchmarks/cprofiled.py OUT.prof -m jupyter_mcp_server start ...

``python -m cProfile`` sees only the main thread, and the server parses,
validates and writes files in worker threads (``asyncio.to_thread``): a
profile of the event loop alone would miss the hot function of a read.
Here every thread started after this point runs under a profiler of its own;
at exit (stdin closed, or the SIGTERM that uvicorn re-raises after its
shutdown) they are merged into one ``pstats`` file. ``curves.py --cprofile`` spawns the server this way.
SIGUSR1 clears every profiler's statistics so far (``call_profile.py`` sends it once the
server is warm, so the file holds the measured calls and not the start-up).
"""

from __future__ import annotations

import atexit
import cProfile
import pstats
import runpy
import signal
import sys
import threading

profiles: list[cProfile.Profile] = []
_lock = threading.Lock()
_run = threading.Thread.run


def _profiled_run(self: threading.Thread) -> None:
    profile = cProfile.Profile()
    with _lock:
        profiles.append(profile)
    profile.enable()
    try:
        _run(self)
    finally:
        profile.disable()


def _clear(_signum: int, _frame: object) -> None:
    # Clearing is safe while a profiler is enabled (lsprof drops its open call contexts);
    # disabling another thread's profiler from here would not be.
    main.clear()
    with _lock:
        for profile in profiles:
            profile.clear()


def _write(path: str) -> None:
    main.disable()
    stats = pstats.Stats(main)
    with _lock:
        for profile in profiles:
            try:
                stats.add(profile)
            except TypeError:  # a profiler whose thread never recorded anything
                continue
    stats.dump_stats(path)


if __name__ == "__main__":
    out = sys.argv[1]
    if sys.argv[2] != "-m":
        sys.exit("usage: cprofiled.py OUT.prof -m MODULE [ARGS...]")
    module = sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    threading.Thread.run = _profiled_run  # type: ignore[method-assign]
    main = cProfile.Profile()
    atexit.register(_write, out)
    # uvicorn re-raises the SIGTERM it caught once it has shut down, which ends the process
    # without atexit: the statistics are written just before.
    _raise_signal = signal.raise_signal

    def _written_then_raised(signum: int) -> None:
        _write(out)
        _raise_signal(signum)

    signal.raise_signal = _written_then_raised
    signal.signal(signal.SIGUSR1, _clear)
    main.enable()
    runpy.run_module(module, run_name="__main__", alter_sys=True)
