"""The public extension API asks the client the same way on both protocol generations.

The conformance fixture extension's tools ask through ``api.ask``; here the
official client answers with its elicitation, sampling and roots callbacks,
over stdio, on 2025-11-25 (requests while the call waits) and on 2026-07-28
(``input_required`` rounds the client's driver answers), and without a
callback the call fails with -32021 naming the capability.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, serve, text_of
from fixtures import pip_install, python_path
from mcp.shared.exceptions import MCPError
from mcp.types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

EXTENSION = REPO / "tests" / "fixtures" / "conformance-extension"
MODES = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("asking-site")
    pip_install(target, EXTENSION)
    return target


class Client:
    """The callbacks of a client that answers everything, and what it was asked."""

    def __init__(self, action: str = "accept") -> None:
        self.action = action
        self.asked: list[str] = []

    async def elicit(self, context: Any, params: Any) -> ElicitResult:
        self.asked.append(params.message)
        fields = params.requested_schema.get("properties", {})
        content = {name: ("blue" if name == "color" else "Ada") for name in fields}
        return ElicitResult(action=self.action, content=content if self.action == "accept" else None)

    async def sample(self, context: Any, params: Any) -> CreateMessageResult:
        self.asked.append(params.messages[0].content.text)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris"), model="test", stop_reason="endTurn")

    async def roots(self, context: Any) -> ListRootsResult:
        self.asked.append("roots")
        return ListRootsResult(roots=[Root(uri="file:///tmp/somewhere", name="somewhere")])


def serving(workspace: Path, site: Path, mode: str, client: Client | None, **callbacks: Any) -> Any:
    env = {"PYTHONPATH": python_path(site), "JUPYTER_MCP_EXTENSIONS": "fx-conformance"}
    return serve(workspace, "--capability", "kernel.prestart=off", mode=mode, env=env, **callbacks)


@pytest.mark.parametrize("mode", MODES)
async def test_elicitation_sampling_and_roots(workspace: Path, site: Path, mode: str) -> None:
    person = Client()
    callbacks = {"elicitation_callback": person.elicit, "sampling_callback": person.sample, "list_roots_callback": person.roots}
    async with serving(workspace, site, mode, person, **callbacks) as client:
        answered = await client.call_tool("test_input_required_result_multiple_inputs", {})
        assert text_of(answered) == "name=Ada, greeting=Paris, roots=1"
        assert person.asked == ["What is your name?", "Generate a greeting", "roots"]
        answered = await client.call_tool("test_input_required_result_multi_round", {})
        assert text_of(answered) == "Ada likes blue"
        answered = await client.call_tool("test_sampling", {"prompt": "What is 2 + 2?"})
        assert text_of(answered) == "LLM response: Paris"
        prompt = await client.get_prompt("test_input_required_result_prompt", {})
        assert prompt.messages[0].content.text == "Use this context: Ada"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_or_cancelled_question(workspace: Path, site: Path, mode: str, action: str) -> None:
    person = Client(action)
    async with serving(workspace, site, mode, person, elicitation_callback=person.elicit) as client:
        answered = await client.call_tool("test_elicitation", {"message": "Who are you?"})
        assert text_of(answered) == f"Elicitation completed: action={action}, content=null"


@pytest.mark.parametrize("mode", MODES)
async def test_no_callback_is_a_missing_capability(workspace: Path, site: Path, mode: str) -> None:
    async with serving(workspace, site, mode, None) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("test_missing_capability", {})
        assert refused.value.error.code == -32021
        assert refused.value.error.data["requiredCapabilities"] == {"sampling": {}}
        # A tool that asks only what the client can answer asks nothing here.
        answered = await client.call_tool("test_input_required_result_capabilities", {})
        assert text_of(answered) == "answered: nothing"
