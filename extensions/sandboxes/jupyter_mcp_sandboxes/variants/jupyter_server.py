"""`jupyter-server`: a kernel on a real Jupyter Server, given its URL and token.

The way past one machine: the sandbox is wherever that server runs, with
whatever isolation its operator gave it. Nothing is started locally; the
kernel is created, run and deleted over the server's REST API and kernel
websocket (:mod:`jupyter_mcp_sandboxes.remote`, opened through
``ServerAccess.open_remote_kernel``).
"""

from __future__ import annotations

from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.spec import SandboxSpec
from jupyter_mcp_sandboxes.variant import LaunchContext, SandboxVariant
from jupyter_mcp_server.api import (
    INVALID_ARGUMENT,
    UNSUPPORTED,
    ToolFailure,
)


class JupyterServerVariant(SandboxVariant):
    name = "jupyter-server"
    description = (
        "A kernel on a Jupyter Server given by server_url and token, over its REST API and kernel "
        "websocket: code runs wherever that server runs, isolated as its operator set it up."
    )
    options = frozenset({"server_url", "token", "kernel_name"})

    async def launch(self, spec: SandboxSpec, context: LaunchContext) -> Sandbox:
        if not spec.server_url:
            raise ToolFailure(
                INVALID_ARGUMENT,
                "The jupyter-server variant needs server_url (like http://127.0.0.1:8888) and, "
                "unless that server has none, its token.",
                argument="server_url",
            )
        if context.server is None:
            raise ToolFailure(
                UNSUPPORTED,
                "The jupyter-server variant opens its kernel through the server it runs in, "
                "and this registry was given none.",
            )
        # Imported on launch: httpx costs start-up time for every server that merely has
        # this extension installed.
        from jupyter_mcp_sandboxes.remote import connect_remote_sandbox

        return await connect_remote_sandbox(spec, spec.server_url, context.server)
