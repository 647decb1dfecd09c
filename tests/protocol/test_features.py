"""Protocol features declared as :class:`Feature` objects, applied in the one order given.

``_protocol/features.py``: the features are handed to the server as it is made,
outermost first; each kind nests in its own layer. These tests build a server
from small features and watch the order a request meets them.
"""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.server.extension import Extension

from jupyter_mcp_server._protocol.features import Feature, FeaturedServer, Wrapped
from jupyter_mcp_server._protocol.handlers import lowlevel


def recorder(seen: list[str], tag: str) -> Any:
    async def middleware(ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) == "tools/list":
            seen.append(f"middleware {tag}")
        return await call_next(ctx)

    return middleware


def wrapper(seen: list[str], tag: str) -> Any:
    def wrapping(server: Any, original: Any) -> Any:
        async def listed(ctx: Any, params: Any) -> Any:
            seen.append(f"wrap {tag}")
            return await original(ctx, params)

        return listed

    return wrapping


class Knows(Extension):
    """An extension that needs the server it is on."""

    identifier = "io.jupyter-mcp/test-knows"

    def __init__(self, server: Any) -> None:
        self.server = server


def probe() -> str:
    """A tool."""
    return "ok"


async def test_each_kind_is_applied_in_the_order_given_outermost_first() -> None:
    seen: list[str] = []
    made: list[Knows] = []

    def knowing(server: Any) -> Knows:
        made.append(Knows(server))
        return made[-1]

    features = (
        Feature(
            "a",
            middleware=(recorder(seen, "a"),),
            wraps=(Wrapped("tools/list", wrapper(seen, "a")),),
        ),
        Feature(
            "b",
            middleware=(recorder(seen, "b"),),
            wraps=(
                Wrapped("tools/list", wrapper(seen, "b1")),
                Wrapped("tools/list", wrapper(seen, "b2")),
            ),
            extension_on=knowing,
            registers=lambda server: server.tool()(probe),
        ),
    )
    server = FeaturedServer(name="features", features=features)
    assert made[0].server is server
    async with Client(server) as client:
        listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == ["probe"]
    assert seen == ["middleware a", "middleware b", "wrap a", "wrap b1", "wrap b2"]


async def test_a_declared_input_schema_is_the_one_the_transport_checks() -> None:
    declared = {"type": "object", "properties": {"x": {"type": "integer"}}}
    server = FeaturedServer(
        name="schemas",
        features=(
            Feature("tool", registers=lambda server: server.tool()(probe)),
            Feature("declared", input_schema=lambda name: declared if name == "declared" else None),
        ),
    )
    schema_of = lowlevel(server).get_tool_input_schema
    assert schema_of("declared") == declared
    assert schema_of("probe") is not None  # the SDK's own, for a tool that declares none
    assert schema_of("missing") is None
