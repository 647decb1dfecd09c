"""Set resource limits on this process, then become the kernel.

The kernel of a sandbox is started through this launcher rather than with a
``preexec_fn``: jupyter_client's provisioner does not take one, a
``preexec_fn`` runs in a forked copy of a threaded server (where only
async-signal-safe work is safe), and limits set here are inherited by
everything the command starts, bubblewrap and the kernel under it included.

It imports nothing but the standard library and is run by its file path, so
it works in the sandbox's minimal environment, where this package need not be
importable::

    python limited.py --as BYTES --cpu SECONDS --nofile N --nproc N \
        [--die-with-parent PID] -- COMMAND...
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import signal
import sys

#: Extra seconds between the CPU limit's SIGXCPU and the kernel's SIGKILL.
CPU_GRACE = 5
PR_SET_PDEATHSIG = 1


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("limited: expected '-- COMMAND...' after the limits")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="limited", description=__doc__)
    parser.add_argument("--as", dest="address_space", type=int, help="RLIMIT_AS, bytes")
    parser.add_argument("--cpu", type=int, help="RLIMIT_CPU, seconds")
    parser.add_argument("--nofile", type=int, help="RLIMIT_NOFILE, open files")
    parser.add_argument(
        "--nproc", type=int, help="RLIMIT_NPROC, processes and threads of this user"
    )
    parser.add_argument(
        "--die-with-parent", type=int, metavar="PID", help="SIGKILL when PID (the server) exits"
    )
    options = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        raise SystemExit("limited: no command after '--'")
    return options, command


def apply(options: argparse.Namespace) -> None:
    limits = (
        (resource.RLIMIT_AS, options.address_space, 0),
        (resource.RLIMIT_CPU, options.cpu, CPU_GRACE),
        (resource.RLIMIT_NOFILE, options.nofile, 0),
        (resource.RLIMIT_NPROC, options.nproc, 0),
    )
    for which, value, grace in limits:
        if value is not None:
            resource.setrlimit(which, (value, value + grace))


def die_with_parent(parent: int) -> None:
    """Linux: be killed when `parent` (the server) exits, however it exits."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the server is already gone
        os._exit(1)


def main(argv: list[str] | None = None) -> None:
    options, command = parse(list(sys.argv[1:] if argv is None else argv))
    if options.die_with_parent is not None:
        die_with_parent(options.die_with_parent)
    apply(options)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
