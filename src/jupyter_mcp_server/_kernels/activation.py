"""A kernel started inside its Python environment, as a shell that activated it would start it.

Finding environments and choosing one for a notebook is :mod:`.environments`'; this
module is what a kernel's process is given once one is chosen, so that ``!pip``,
``!python`` and subprocesses of the kernel use that environment, not the server's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from jupyter_mcp_server._kernels.environments import Environment
from jupyter_mcp_server._kernels.interpreters import environment_prefix


def activated(environ: Mapping[str, str], env: Environment) -> dict[str, str] | None:
    """`environ` with the environment of `env`'s interpreter activated as a shell would:
    its ``bin`` first on ``PATH``, ``VIRTUAL_ENV`` (a virtualenv) or ``CONDA_PREFIX`` (a
    conda environment) naming it. None for a kernel that runs no known Python.

    Every Python kernel gets it, the server's own included: a server started by its full
    path (a client's configuration, ``uvx``) has no ``bin`` of its own on ``PATH``, and
    ``!pip install`` in a cell would reach whatever ``pip`` the ``PATH`` has, the system's.
    A ``VIRTUAL_ENV`` inherited from the server's launcher is dropped for a kernel that
    does not run in it (``uv pip`` installs where it points). A kernelspec's own ``env``
    is applied on top by jupyter_client, so what it sets wins.
    """
    if env.interpreter is None or not env.is_python:
        return None
    interpreter = Path(env.interpreter)
    prefix = Path(env.prefix) if env.prefix else environment_prefix(str(interpreter))
    bin_dir = str(interpreter.parent)
    path = environ.get("PATH", "")
    active = dict(environ)
    active["PATH"] = bin_dir + os.pathsep + path if path else bin_dir
    active.pop("VIRTUAL_ENV", None)
    if prefix is not None and (prefix / "pyvenv.cfg").is_file():
        active["VIRTUAL_ENV"] = str(prefix)
    elif prefix is not None and (prefix / "conda-meta").is_dir():
        active["CONDA_PREFIX"] = str(prefix)
        active["CONDA_DEFAULT_ENV"] = str(prefix)
    return active
