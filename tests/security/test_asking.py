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
        return ElicitResult(
            action=self.action, content=content if self.action == "accept" else None
        )

    async def sample(self, context: Any, params: Any) -> CreateMessageResult:
        self.asked.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text="Paris"),
            model="test",
            stop_reason="endTurn",
        )

    async def roots(self, context: Any) -> ListRootsResult:
        self.asked.append("roots")
        return ListRootsResult(roots=[Root(uri="file:///tmp/somewhere", name="somewhere")])


def serving(workspace: Path, site: Path, mode: str, client: Client | None, **callbacks: Any) -> Any:
    env = {"PYTHONPATH": python_path(site), "JUPYTER_MCP_EXTENSIONS": "fx-conformance"}
    return serve(workspace, "--capability", "kernel.prestart=off", mode=mode, env=env, **callbacks)


@pytest.mark.parametrize("mode", MODES)
async def test_elicitation_sampling_and_roots(workspace: Path, site: Path, mode: str) -> None:
    person = Client()
    callbacks = {
        "elicitation_callback": person.elicit,
        "sampling_callback": person.sample,
        "list_roots_callback": person.roots,
    }
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
async def test_a_declined_or_cancelled_question(
    workspace: Path, site: Path, mode: str, action: str
) -> None:
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


class _Request:
    """Just enough of a 2026-07-28 tools/call context for ``ask``."""

    def __init__(
        self, request_state: str | None = None, input_responses: dict[str, Any] | None = None
    ) -> None:
        from types import SimpleNamespace

        from mcp.types import ClientCapabilities, ElicitationCapability

        self.protocol_version = "2026-07-28"
        self.session = SimpleNamespace(
            client_capabilities=ClientCapabilities(elicitation=ElicitationCapability())
        )
        self.request_state = request_state
        self.input_responses = input_responses


async def test_a_task_gathers_before_it_is_one_then_asks_through_itself() -> None:
    """While its request waits (gathering) ``ask`` ends the round ``input_required`` and, once
    answered, says the run gathered; once the run is a task, what it asks goes through the task."""
    import asyncio

    from jupyter_mcp_server._calls.asking import Elicitation, InputRequired, UsedStates, ask
    from jupyter_mcp_server._calls.detached import RunRegistry
    from jupyter_mcp_server._hooks import Hooks

    runs, used = RunRegistry(None, Hooks()), UsedStates()
    name = Elicitation("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    color = Elicitation(
        "Your colour?", {"type": "object", "properties": {"color": {"type": "string"}}}
    )

    # Round 1: the question ends the run; nothing gathered.
    first = runs.start(
        owner="me",
        tool="t",
        call=lambda: ask(_Request(), {"name": name}, used=used),
        answerable=True,
        gathering=True,
    )
    await runs.gather(first, 5)
    assert first.runner is not None
    asked = first.runner.exception()
    assert isinstance(asked, InputRequired)
    assert not first.gathered.is_set() and list(asked.result.input_requests) == ["name"]

    # Round 2 brings the answer: the run has gathered, then (a task now) asks the rest through itself.
    answered = _Request(
        asked.result.request_state, {"name": {"action": "accept", "content": {"name": "Alice"}}}
    )

    async def call() -> Any:
        gathered = await ask(answered, {"name": name}, used=used)
        await asyncio.sleep(0.1)
        more = await ask(answered, {"name": name, "color": color}, used=used)
        return gathered, more

    second = runs.start(owner="me", tool="t", call=call, answerable=True, gathering=True)
    await runs.gather(second, 5)
    assert second.gathered.is_set() and not second.runner.done()  # type: ignore[union-attr]
    second.gathering = False
    while not second.input_requests:
        await asyncio.sleep(0.01)
    assert second.status == "input_required"
    [(key, request)] = second.input_requests.items()
    assert (
        request["method"] == "elicitation/create" and request["params"]["message"] == "Your colour?"
    )
    second.answer({key: {"action": "accept", "content": {"color": "blue"}}})
    gathered, more = await second.runner  # type: ignore[misc]
    assert gathered["name"].content == {"name": "Alice"}
    assert more["name"].content == {"name": "Alice"} and more["color"].content == {"color": "blue"}
