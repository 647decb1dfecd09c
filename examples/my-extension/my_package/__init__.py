"""An extension of jupyter-mcp-server, written exactly as docs/extensions.md shows.

It offers one tool, declares one capability, and narrows one of the server's
own tools by name: everything a third party needs to see working.
"""

from jupyter_mcp_server.api import (
    Capability,
    JupyterMCPExtension,
    PluginCompatibility,
    PluginManifest,
    ToolExtension,
    tool,
)


class MyExtension(JupyterMCPExtension):
    def manifest(self) -> PluginManifest:
        return PluginManifest(
            name="my-extension",
            version="1.0.0",
            description="What it adds.",
            author="You",
            compatibility=PluginCompatibility(api_version="v1"),
        )

    @tool()
    async def my_tool(self, argument: str) -> str:
        """Echo the argument with the workspace root the server was started on."""
        return f"{argument} @ {self.server.workspace_root}"

    def capabilities(self) -> list[Capability]:
        return [
            Capability(
                name="myext.snapshots",
                description="Snapshot and restore the sandbox filesystem.",
                enabled=True,
                source="my-extension",
            )
        ]

    def tool_extensions(self):
        def only_notebooks(handler):
            async def narrowed(path: str = "", max_depth: int = 1):
                """List only the notebooks (*.ipynb) in the workspace."""
                return await handler(path=path, max_depth=max_depth, pattern="*.ipynb")

            return narrowed

        return (
            (
                "list_files",
                ToolExtension(
                    wrap=only_notebooks,
                    description="List only the notebooks (*.ipynb) in the workspace.",
                ),
            ),
        )
