"""The protocol features: what MCP asks of a server beyond calling a tool.

Progress, the client's log, subscriptions, tasks, resources, prompts, the
client's roots, the arguments the SDK refuses, the compact ``tools/list``,
the result masking and the profile guard. Each is one ``Feature``
(:mod:`.features`), handed to an MCP server as it is made by
``_app.Application`` and by nothing else; none is imported by the tools,
the store or the kernels (``tests/package/test_architecture.py``).
"""
