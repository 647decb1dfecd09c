"""The command line: read it, build the server, serve.

Arguments and the environment become a frozen configuration first, so a bad
flag, an unknown capability or a Jupyter Server that cannot be reached stops
the process (exit status 2, saying what) before anything serves. Then the
composition root builds the whole server (:func:`~.app.build_application`)
and the chosen transport serves it.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import NoReturn

#: Said, with exit status 2, where the server cannot run: before anything below is imported,
#: so a person sees a sentence, not the traceback of a POSIX-only import.
UNSUPPORTED_PLATFORM = (
    "jupyter-mcp-server runs on Linux (tested) and macOS: it keeps each kernel's process tree "
    "with POSIX process groups and signals, which Windows does not have. On Windows, run it "
    "inside WSL (Windows Subsystem for Linux), where it runs as on Linux."
)

if sys.platform == "win32":
    sys.stderr.write(f"jupyter-mcp-server: {UNSUPPORTED_PLATFORM}\n")
    raise SystemExit(2)

from jupyter_mcp_server._process.deferred_imports import (  # noqa: E402
    EAGER_PACKAGES,
    defer_format_checkers,
    defer_package_exports,
)

# Before anything below can import nbformat (and with it jsonschema), or the extension layer.
defer_format_checkers()
for package in EAGER_PACKAGES:
    defer_package_exports(package)

from jupyter_mcp_server._app import build_application  # noqa: E402
from jupyter_mcp_server._config import ConfigError, ServerConfig, add_arguments, read_config  # noqa: E402
from jupyter_mcp_server._process.heap import release_large_allocations_promptly  # noqa: E402
from jupyter_mcp_server._transports import serve_over  # noqa: E402
from jupyter_mcp_server._version import __version__  # noqa: E402

logger = logging.getLogger("jupyter_mcp_server")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jupyter-mcp-server",
        description="A local-first MCP server for reading, editing and running Jupyter notebooks.",
    )
    parser.add_argument("--version", action="version", version=f"jupyter-mcp-server {__version__}")
    commands = parser.add_subparsers(dest="command")
    start = commands.add_parser("start", help="Start the server (the default command).")
    add_arguments(start)
    return parser


def fail(message: str) -> NoReturn:
    print(f"jupyter-mcp-server: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_config(argv: list[str]) -> ServerConfig:
    """Arguments and the environment to a configuration; anything wrong exits with status 2."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["start", *argv]
    args = build_parser().parse_args(argv)
    if args.command is None:
        args = build_parser().parse_args(["start", *argv])
    try:
        return read_config(vars(args))
    except ConfigError as error:
        fail(str(error))


#: Allocations (less deallocations) between two young garbage collections (Python's default: 700).
YOUNG_COLLECTION_THRESHOLD = 10_000


def collect_garbage_less_often() -> None:
    """Set aside what lives as long as the server, and run young collections less often.

    Reading a 2,000-cell notebook allocates a few hundred thousand objects;
    with the default thresholds every third read paid a full collection of
    everything alive (75 ms, against the read's own 30 ms). What the start-up
    built (modules, tools, schemas) never becomes garbage: ``gc.freeze``
    takes it out of those passes. Cycles are still collected, later.

    How much later is a pause every call waits behind: a young collection
    stops the event loop for as long as it takes to collect what accumulated
    (each request leaves its tasks, cancel scopes and streams in cycles). At
    50,000 allocations a pass took up to 135 ms with 32 agents at once, and
    was most of the loop's own lag; at 10,000, at most 27 ms (its p99 24-40
    ms, from 76-93), with the same total time collecting and no change to a
    2,000-cell read (``benchmarks/agents.py``, ``benchmarks/run.py``).
    """
    import gc

    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, 10, 10)


def log_python_warnings() -> None:
    """Python warnings become debug records of ``jupyter_mcp_server.warnings``, not lines on stderr.

    A warning is addressed to a developer of the code that raised it (the SDK's
    ``MCPDeprecationWarning`` for SEP-2577 once reached the server's stderr at every call):
    the operator who reads stderr cannot act on it. Seen with ``JUPYTER_MCP_LOG_LEVEL=DEBUG``,
    and by a client that asked for debug records.
    """
    import warnings

    heard = logging.getLogger("jupyter_mcp_server.warnings")

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: object = None,
        line: str | None = None,
    ) -> None:
        heard.debug("%s:%s: %s: %s", filename, lineno, category.__name__, message)

    warnings.showwarning = show


def main(argv: list[str] | None = None) -> None:
    release_large_allocations_promptly()
    config = parse_config(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(
        level=config.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    log_python_warnings()
    try:
        application = build_application(config)
    except ConfigError as error:
        fail(str(error))
    collect_garbage_less_often()
    serve_over(config.transport, application)
