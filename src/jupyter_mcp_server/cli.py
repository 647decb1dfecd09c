"""The command line: read it, install the configuration, then start serving.

The order is the point. Arguments are parsed and validated first, so a bad
flag stops the process (exit status 2) before anything serves; the
configuration is installed next; only then is the server module imported and
are extensions discovered, so an extension asking `get_config()` is told
what the operator actually said.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from jupyter_mcp_server import __version__
from jupyter_mcp_server.config import (
    DEFAULT_TIMEOUT,
    IDLE_TIMEOUT,
    MAX_KERNELS,
    MAX_OUTPUT_BLOCKS,
    MAX_OUTPUT_BYTES,
    MAX_TIMEOUT,
    TRANSPORTS,
    UNRESPONSIVE_GRACE,
    ServerConfig,
    set_config,
)

logger = logging.getLogger("jupyter_mcp_server")

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _positive(kind: type) -> Callable[[str], float | int]:
    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be a finite number greater than 0")
        return value

    parse.__name__ = kind.__name__
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jupyter-mcp-server",
        description="A local-first MCP server for reading, editing and running Jupyter notebooks.",
    )
    parser.add_argument("--version", action="version", version=f"jupyter-mcp-server {__version__}")
    commands = parser.add_subparsers(dest="command")
    start = commands.add_parser("start", help="Start the server (the default command).")
    add_start_arguments(start)
    return parser


def add_start_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP only: the address to bind (default loopback).")
    parser.add_argument("--port", type=int, default=4040, help="HTTP only: the port (default 4040).")
    parser.add_argument("--workspace-root", default=None, help="The directory notebooks live in (default: the current directory).")
    parser.add_argument(
        "--capability",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="Turn a capability on (NAME or NAME=on) or off (NAME=off). Repeatable.",
    )
    parser.add_argument("--default-timeout", type=_positive(float), default=DEFAULT_TIMEOUT, help="Seconds per execution when a call gives none.")
    parser.add_argument("--max-timeout", type=_positive(float), default=MAX_TIMEOUT, help="The largest timeout a call may ask for, in seconds.")
    parser.add_argument("--max-output-bytes", type=_positive(int), default=MAX_OUTPUT_BYTES, help="Output bytes kept per execution.")
    parser.add_argument("--max-output-blocks", type=_positive(int), default=MAX_OUTPUT_BLOCKS, help="Output blocks kept per execution.")
    parser.add_argument("--max-kernels", type=_positive(int), default=MAX_KERNELS, help="Kernels running at once.")
    parser.add_argument("--idle-timeout", type=_positive(float), default=IDLE_TIMEOUT, help="Seconds before an idle notebook session's kernel is stopped.")
    parser.add_argument(
        "--unresponsive-grace",
        type=_positive(float),
        default=UNRESPONSIVE_GRACE,
        help="Seconds a kernel still running code after a timeout's interrupt gets to finish before "
        "the kernel.restart-unresponsive capability restarts it.",
    )
    parser.add_argument("--mcp-token", default=os.environ.get("JUPYTER_MCP_TOKEN"), help="HTTP: require 'Authorization: Bearer TOKEN'.")
    parser.add_argument("--audit-log", default=None, help="Append a JSON line per tool call and execution to this file.")
    parser.add_argument(
        "--jupyter-url",
        default=os.environ.get("JUPYTER_URL") or None,
        help="Start kernels on the Jupyter Server at this URL instead of locally (env JUPYTER_URL).",
    )
    parser.add_argument(
        "--jupyter-token",
        default=os.environ.get("JUPYTER_TOKEN") or None,
        help="That server's token (env JUPYTER_TOKEN; prefer the variable: arguments show in process lists).",
    )
    parser.add_argument(
        "--jupyter-contents",
        action="store_true",
        default=os.environ.get("JUPYTER_CONTENTS", "").lower() in ("1", "true", "yes", "on"),
        help="Read and write notebooks on that Jupyter Server through its contents API too "
        "(env JUPYTER_CONTENTS=1); paths are then relative to its root.",
    )


def fail(message: str) -> NoReturn:
    print(f"jupyter-mcp-server: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_config(argv: list[str]) -> ServerConfig:
    """Arguments to a configuration; anything wrong exits with status 2, saying what."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["start", *argv]
    args = build_parser().parse_args(argv)
    if args.command is None:
        args = build_parser().parse_args(["start", *argv])
    root = Path(args.workspace_root) if args.workspace_root else Path.cwd()
    if not root.is_dir():
        fail(f"--workspace-root {str(root)!r} does not exist or is not a directory.")
    if args.default_timeout > args.max_timeout:
        fail(f"--default-timeout {args.default_timeout:g} is above --max-timeout {args.max_timeout:g}.")
    if not 0 < args.port < 65536:
        fail(f"--port {args.port} is not a port number (1-65535).")
    if args.transport == "streamable-http" and args.host not in LOOPBACK_HOSTS and not args.mcp_token:
        fail(
            f"Refusing to bind {args.host}: anything but loopback needs --mcp-token, because "
            "whoever reaches this server runs code with your rights."
        )
    jupyter_url = None
    if args.jupyter_url:
        from jupyter_mcp_server.errors import ToolFailure
        from jupyter_mcp_server.kernels.remote import ServerNames, normalize_url

        try:
            jupyter_url = normalize_url(args.jupyter_url, ServerNames("--jupyter-url", "--jupyter-token"))
        except ToolFailure as error:
            fail(error.message)
    elif args.jupyter_contents:
        fail("--jupyter-contents needs --jupyter-url (or JUPYTER_URL): the Jupyter Server whose files to use.")
    return ServerConfig(
        workspace_root=root.resolve(),
        transport=args.transport,
        host=args.host,
        port=args.port,
        default_timeout=args.default_timeout,
        max_timeout=args.max_timeout,
        max_output_bytes=args.max_output_bytes,
        max_output_blocks=args.max_output_blocks,
        max_kernels=args.max_kernels,
        idle_timeout=args.idle_timeout,
        unresponsive_grace=args.unresponsive_grace,
        mcp_token=args.mcp_token,
        capability_args=tuple(args.capability),
        audit_log=Path(args.audit_log).resolve() if args.audit_log else None,
        jupyter_url=jupyter_url,
        jupyter_token=args.jupyter_token if jupyter_url else None,
        jupyter_contents=bool(args.jupyter_contents and jupyter_url),
    )


def configure_capabilities(config: ServerConfig) -> None:
    """Layers 2 to 4 of seeds/003, after the extensions have declared theirs."""
    from jupyter_mcp_server.capabilities import (
        ENV_VARIABLE,
        UnknownCapability,
        get_capabilities,
        parse_assignment,
        parse_list,
    )
    from jupyter_mcp_server.server import extension_manager

    registry = get_capabilities()
    declared_by_extensions = extension_manager.collect_capabilities(registry)
    try:
        registry.apply(parse_list(os.environ.get(ENV_VARIABLE, "")), "env", ENV_VARIABLE)
        registry.apply([parse_assignment(a) for a in config.capability_args], "cli", "--capability")
    except (UnknownCapability, ValueError) as error:
        fail(str(error))
    for capability in declared_by_extensions:
        registry.declare(capability)


def prepare(argv: list[str]) -> ServerConfig:
    """Everything before serving: configuration, extensions, capabilities, hooks."""
    logging.basicConfig(
        level=os.environ.get("JUPYTER_MCP_LOG_LEVEL", "WARNING").upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = set_config(parse_config(argv))
    from jupyter_mcp_server.server import refresh_advertised_capabilities, register_extension_tools

    register_extension_tools()
    if config.jupyter_url is not None:
        connect_jupyter_server(config)
    configure_capabilities(config)
    refresh_advertised_capabilities()
    if config.audit_log is not None:
        from jupyter_mcp_server.hooks import AuditLog, get_hooks

        AuditLog(config.audit_log).install(get_hooks())
    return config


def connect_jupyter_server(config: ServerConfig) -> None:
    """Check the Jupyter Server of ``--jupyter-url`` and start later kernels on it.

    A server that cannot be reached, or refuses the token, stops the process
    here (status 2) rather than failing every call later.
    """
    import asyncio

    from jupyter_mcp_server.context import ServerContext
    from jupyter_mcp_server.errors import ToolFailure
    from jupyter_mcp_server.kernels.remote import JupyterServerBackend, ServerNames, check_server

    assert config.jupyter_url is not None
    names = ServerNames("--jupyter-url", "--jupyter-token")
    try:
        version, specs = asyncio.run(check_server(config.jupyter_url, config.jupyter_token, names=names))
    except ToolFailure as error:
        fail(error.message)
    backend = JupyterServerBackend(config.jupyter_url, config.jupyter_token, version=version, kernelspecs=specs)
    ServerContext.get_instance().use_jupyter_server(backend, contents=config.jupyter_contents)
    logger.info("Kernels start on the Jupyter Server at %s (version %s)", config.jupyter_url, version)


def release_freed_memory_promptly() -> None:
    """Serve large allocations from mmap, so memory a big output freed goes back to the system.

    glibc keeps freed heap memory for reuse: after a 5 MB print that the
    server refused to keep, its resident size would stay 5 MB larger for good.
    """
    if sys.platform != "linux":
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def collect_garbage_less_often() -> None:
    """Set aside what lives as long as the server, and run young collections less often.

    Reading a 2,000-cell notebook allocates a few hundred thousand objects;
    with the default thresholds every third read paid a full collection of
    everything alive (75 ms, against the read's own 30 ms). What the start-up
    built (modules, tools, schemas) never becomes garbage: ``gc.freeze``
    takes it out of those passes. Cycles are still collected, later.
    """
    import gc

    gc.freeze()
    gc.set_threshold(50_000, 10, 10)


def main(argv: list[str] | None = None) -> None:
    release_freed_memory_promptly()
    config = prepare(list(sys.argv[1:] if argv is None else argv))
    collect_garbage_less_often()
    if config.transport == "stdio":
        from jupyter_mcp_server.transports.stdio import serve
    elif config.transport == "streamable-http":
        from jupyter_mcp_server.transports.http import serve  # type: ignore[no-redef]
    else:
        from jupyter_mcp_server.transports.jsonlines import serve  # type: ignore[no-redef]
    serve(config)
