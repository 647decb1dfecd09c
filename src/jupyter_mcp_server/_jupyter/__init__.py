"""What lives inside Jupyter: the server extension and the live documents.

The Jupyter Server extension that serves ``{base_url}/mcp``, JupyterLab's
real-time collaboration (an edit lands in the shared document a person has
open) and the agent's presence in it. Only the extension imports these, and
nothing here imports Jupyter Server at module import: the server without
Jupyter never loads them.
"""
