"""The private parts of other packages the server relies on, each checked as it is used.

Every reach-in below is in one module that says why it is there
(docs/architecture.md, "Reaching into other packages", lists them with the
seam each upstream could offer instead). These tests read the installed
upstream: an upgrade that renames or reshapes what is used fails here, by
name, instead of failing somewhere in the server.
"""

from __future__ import annotations

import inspect


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


def test_reactor_still_contributes_tool_extensions_from_the_method_and_calls_hooks() -> None:
    """extensions.py: ``provide_contributions`` is shown no ``tool_extensions`` (the server
    contributes them itself, in a declared order), and ``on_start``/``on_stop`` are wrapped
    on the instance so that one raising costs only its extension."""
    from reactor_mcp_server import McpExtension

    source = inspect.getsource(McpExtension.provide_contributions)
    assert "self.tool_extensions()" in source
    for hook in ("on_start", "on_stop"):
        assert callable(getattr(McpExtension, hook, None)), hook


def test_the_deferred_modules_are_still_imported_as_they_were() -> None:
    """deferred_imports.py: jsonschema imports rfc3987_syntax only for its ``iri`` format,
    and reactor's ``__init__`` re-exports names from its submodules (imported on first use)."""
    import ast
    import importlib.util

    from jupyter_mcp_server._deferred_imports import IRI_GRAMMAR, _reexports

    assert importlib.util.find_spec(IRI_GRAMMAR) is not None
    spec = importlib.util.find_spec("reactor")
    assert spec is not None and spec.origin is not None
    with open(spec.origin, encoding="utf-8") as file:
        exports = _reexports(ast.parse(file.read()))
    assert exports, "reactor's __init__ no longer re-exports from submodules as expected"
