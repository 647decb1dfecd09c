"""The private parts of other packages the server relies on, each checked as it is used.

Every reach-in below is in one module that says why it is there
(docs/architecture.md, "Reaching into other packages", lists them with the
seam each upstream could offer instead). These tests read the installed
upstream: an upgrade that renames or reshapes what is used fails here, by
name, instead of failing somewhere in the server.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "jupyter_mcp_server"


def test_nbformat_still_has_the_schema_loader_and_validator_registry() -> None:
    """_store/schema_validator.py: the 4.5 schema read with ``_get_schema_json`` and a
    generated validator put in ``validator.validators`` under nbformat's own key."""
    import nbformat
    from nbformat import json_compat, validator

    parameters = inspect.signature(validator._get_schema_json).parameters
    assert list(parameters)[:3] == ["v", "version", "version_minor"]
    schema = validator._get_schema_json(nbformat.v4, version=4, version_minor=5)
    assert schema["properties"]["nbformat_minor"]
    assert isinstance(validator.validators, dict)
    assert callable(validator.get_current_validator) and callable(validator.get_validator)
    # The generated validator replaces what FastJsonSchemaValidator compiles, in `_validator`.
    assert "self._validator" in inspect.getsource(json_compat.FastJsonSchemaValidator)


def test_tornado_handlers_still_say_whether_they_finished() -> None:
    """_transports/tornado_bridge.py: ``handler._finished`` says whether a bridged response
    still needs its ``finish()`` (tornado has no public property for it)."""
    import tornado.web

    source = inspect.getsource(tornado.web.RequestHandler)
    assert "self._finished = False" in source and "self._finished = True" in source


def test_uvicorn_h11_protocol_still_has_the_hooks_the_head_timeout_overrides() -> None:
    """_transports/http.py: a subclass of uvicorn's H11Protocol closes a connection whose
    request head is late (uvicorn times out only idle keep-alive connections)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    for name in ("connection_made", "connection_lost", "handle_events", "on_response_complete"):
        assert callable(getattr(H11Protocol, name, None)), name
    source = inspect.getsource(H11Protocol)
    for used in ("self.conn = h11.Connection", "self.loop", "self.transport"):
        assert used in source, used
    assert isinstance(h11.Connection(h11.SERVER).trailing_data, tuple)
    # A head past h11's limit is told by what it holds unparsed, against uvicorn's setting.
    # uvicorn's setting, else h11's default: 16 KiB, as http.py assumes.
    assert "self.config = config" in source
    assert "config.h11_max_incomplete_event_size" in source
    limit = inspect.signature(h11.Connection).parameters["max_incomplete_event_size"]
    assert limit.default == 16 * 1024


def test_reactor_still_contributes_tool_extensions_from_the_method_and_calls_hooks() -> None:
    """_extensions.py: ``provide_contributions`` is shown no ``tool_extensions`` (the server
    contributes them itself, in a declared order), and ``on_start``/``on_stop`` are wrapped
    on the instance so that one raising costs only its extension."""
    from reactor_mcp_server import McpExtension

    source = inspect.getsource(McpExtension.provide_contributions)
    assert "self.tool_extensions()" in source
    for hook in ("on_start", "on_stop"):
        assert callable(getattr(McpExtension, hook, None)), hook


def test_the_deferred_modules_are_still_imported_as_they_were() -> None:
    """_process/deferred_imports.py: jsonschema imports rfc3987_syntax only for its ``iri`` format,
    and reactor's ``__init__`` re-exports names from its submodules (imported on first use)."""
    import ast
    import importlib.util

    from jupyter_mcp_server._process.deferred_imports import IRI_GRAMMAR, _reexports

    assert importlib.util.find_spec(IRI_GRAMMAR) is not None
    spec = importlib.util.find_spec("reactor")
    assert spec is not None and spec.origin is not None
    with open(spec.origin, encoding="utf-8") as file:
        exports = _reexports(ast.parse(file.read()))
    assert exports, "reactor's __init__ no longer re-exports from submodules as expected"


def test_mcp_server_still_keeps_its_low_level_server() -> None:
    """_protocol/handlers.py: ``MCPServer._lowlevel_server`` is the low-level ``Server`` whose
    public ``add_request_handler`` / ``get_request_handler`` serve and wrap spec methods."""
    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer

    low = getattr(MCPServer("seams"), "_lowlevel_server", None)
    assert isinstance(low, Server)
    for name in ("add_request_handler", "get_request_handler", "get_tool_input_schema"):
        assert hasattr(low, name), name


def test_mcp_sessions_still_keep_their_connection() -> None:
    """_protocol/handlers.py: a low-level handler reaches its ``Connection`` (its ``exit_stack``,
    ``state`` and ``session_id``) only as the session's ``_connection``."""
    from mcp.server.connection import Connection
    from mcp.server.session import ServerSession

    assert "self._connection = connection" in inspect.getsource(ServerSession.__init__)
    made = inspect.getsource(Connection.__init__)
    for used in ("self.exit_stack = AsyncExitStack()", "self.state = {}", "self.session_id"):
        assert used in made, used


def test_jupyter_client_still_launches_local_kernels_through_the_replaced_names() -> None:
    """_kernels/process_tree.py: a start and a restart both launch through
    ``_async_launch_kernel``, which asks the provisioner, and ``LocalProvisioner`` starts its
    process by calling its module's ``launch_kernel`` and keeping the result as ``process``."""
    from jupyter_client.manager import AsyncKernelManager, KernelManager
    from jupyter_client.provisioning import LocalProvisioner, local_provisioner

    assert inspect.iscoroutinefunction(AsyncKernelManager._async_launch_kernel)
    assert "await self._async_launch_kernel(" in inspect.getsource(
        KernelManager._async_start_kernel
    )
    assert "await self._async_start_kernel(" in inspect.getsource(
        KernelManager._async_restart_kernel
    )
    assert "self.provisioner.launch_kernel(" in inspect.getsource(
        KernelManager._async_launch_kernel
    )
    launching = inspect.getsource(LocalProvisioner.launch_kernel)
    assert "self.process = launch_kernel(cmd, **scrubbed_kwargs)" in launching
    assert callable(local_provisioner.launch_kernel)


def test_jupyterhub_still_caches_the_tokens_user_on_the_handler() -> None:
    """_jupyter/server_extension.py: ``HubAuth`` keeps the user model it got for the request's
    token on the handler, as ``_cached_hub_user``, before any access check."""
    import pytest

    auth = pytest.importorskip("jupyterhub.services.auth")
    source = inspect.getsource(auth.HubAuth)
    assert "handler._cached_hub_user = user_model" in source


def test_jupyter_server_still_starts_extensions_through_the_underscored_hook() -> None:
    """_jupyter/server_extension.py: ``_start_jupyter_server_extension`` is the hook Jupyter
    Server awaits once its loop runs (``stop_extension`` is its public twin)."""
    import pytest

    pytest.importorskip("jupyter_server")
    from jupyter_server.extension import manager
    from jupyter_server.extension.application import ExtensionApp

    assert inspect.iscoroutinefunction(ExtensionApp._start_jupyter_server_extension)
    assert "_start_jupyter_server_extension" in inspect.getsource(manager)
    assert callable(getattr(ExtensionApp, "stop_extension", None))


# Every reach-in, found by syntax and checked against the table of docs/architecture.md.

#: Names of the standard library that start with an underscore and are documented as public.
STANDARD_PUBLIC = {("os", "_exit")}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _sources() -> dict[str, ast.Module]:
    return {
        path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def _defined(trees: dict[str, ast.Module]) -> set[str]:
    """Every name the package itself gives: functions, classes, assignments, arguments."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def _is_sys_modules(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "modules"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def reach_ins(trees: dict[str, ast.Module]) -> set[tuple[str, str]]:
    """(module, name) for each reach-in into another package, read off the syntax."""
    defined = _defined(trees)
    found: set[tuple[str, str]] = set()
    for where, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base = node.value.id if isinstance(node.value, ast.Name) else ""
                if node.attr not in defined and (base, node.attr) not in STANDARD_PUBLIC:
                    found.add((where, node.attr))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and _private(node.args[1].value)
            ):
                found.add((where, node.args[1].value))
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                module = node.module or ""
                if module.split(".")[0] == "jupyter_mcp_server":
                    continue
                if any(_private(part) for part in module.split(".")):
                    found.add((where, module))
                found |= {(where, alias.name) for alias in node.names if _private(alias.name)}
            elif isinstance(node, ast.Import):
                found |= {
                    (where, alias.name)
                    for alias in node.names
                    if any(_private(part) for part in alias.name.split("."))
                }
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
                if _is_sys_modules(node.value):
                    found.add((where, "sys.modules"))
                elif isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__":
                    found.add((where, "__dict__"))
    return found


def inherited_private_names(trees: dict[str, ast.Module]) -> set[tuple[str, str]]:
    """(module, name) for each private name a class of the package uses on ``self`` or defines
    that a base class from another package has too: an override or a use of its internals."""
    found: set[tuple[str, str]] = set()
    for where, tree in trees.items():
        imported: dict[str, tuple[str, str | None]] = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module
                and not node.module.startswith("jupyter_mcp_server")
            ):
                for alias in node.names:
                    imported[alias.asname or alias.name] = (node.module, alias.name)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [b for b in map(_resolved, node.bases, [imported] * len(node.bases)) if b]
            if not bases:
                continue
            used = {
                item.attr
                for item in ast.walk(node)
                if isinstance(item, ast.Attribute)
                and isinstance(item.value, ast.Name)
                and item.value.id in ("self", "cls")
                and _private(item.attr)
            } | {
                item.name
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name)
            }
            for name in used:
                for base in bases:
                    for upstream in base.__mro__:
                        if upstream is object or upstream.__module__.startswith(
                            "jupyter_mcp_server"
                        ):
                            continue
                        if name in vars(upstream) or f"self.{name}" in _source(upstream):
                            found.add((where, name))
    return found


def _resolved(base: ast.expr, imported: dict[str, tuple[str, str | None]]) -> type | None:
    parts = ast.unparse(base).split("[")[0].split(".")
    if parts[0] not in imported:
        return None
    module, name = imported[parts[0]]
    try:
        value = importlib.import_module(module)
        value = (
            getattr(value, name)
            if hasattr(value, name)
            else importlib.import_module(f"{module}.{name}")
        )
        for part in parts[1:]:
            value = getattr(value, part)
    except (ImportError, AttributeError):
        return None
    return value if isinstance(value, type) else None


def _source(upstream: type) -> str:
    try:
        return inspect.getsource(upstream)
    except (OSError, TypeError):
        return ""


def documented() -> list[tuple[str, str]]:
    """(where, what it uses) for each row of the table in docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Reaching into other packages", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0].endswith(".py`"):
            rows.append((cells[0].strip("`"), cells[1]))
    return rows


def test_every_reach_in_is_documented_with_its_reason() -> None:
    """Each reach-in found in ``src/`` has its row in docs/architecture.md ("Reaching into
    other packages"): the module, and the private name among what it uses."""
    trees = _sources()
    rows = documented()
    assert len(rows) >= 5
    found = reach_ins(trees) | inherited_private_names(trees)
    missing = sorted(
        (where, name)
        for where, name in found
        if not any(where == row and f"{name}`" in what for row, what in rows)
    )
    assert missing == [], (
        "A reach-in into another package's private names: use its public way, or list it "
        "in docs/architecture.md with why and a test here that fails when the upstream changes it"
    )
    for where, _ in rows:
        assert (PACKAGE / where).is_file(), where


def test_every_documented_reach_in_has_a_test_here() -> None:
    """Each module the table lists is named by a test of this file, which fails when the
    upstream changes what it uses."""
    tests = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    docstrings = [
        ast.get_docstring(node) or ""
        for node in tests.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    ]
    for where, _ in documented():
        assert any(doc.startswith(f"{where}:") for doc in docstrings), where


def test_the_reach_in_finder_finds_each_kind() -> None:
    """The finder itself: each kind of reach-in planted in a module is found."""
    planted = ast.parse(
        "import sys\n"
        "from upstream import _hidden\n"
        "from upstream._inner import thing\n"
        "sys.modules['x'] = object()\n"
        "def f(server, ext):\n"
        "    ext.__dict__['method'] = None\n"
        "    getattr(server, '_low', None)\n"
        "    return server._never_defined_here\n"
    )
    found = {name for _, name in reach_ins({"planted.py": planted})}
    assert found == {
        "_hidden",
        "upstream._inner",
        "sys.modules",
        "__dict__",
        "_low",
        "_never_defined_here",
    }
    inherited = ast.parse(
        "from nbformat.json_compat import FastJsonSchemaValidator\n"
        "class Mine(FastJsonSchemaValidator):\n"
        "    def __init__(self):\n"
        "        self._validator = None\n"
        "        self._mine = None\n"
    )
    assert inherited_private_names({"planted.py": inherited}) == {("planted.py", "_validator")}
