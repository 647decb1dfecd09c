"""MCP Apps: what a person is shown beside the agent, and the pages that show it.

The output app shows a cell and its outputs as JupyterLab would, the notebook
view a notebook to read and run, the review app a proposed change before it
lands. Here are their pages (built when first read), what a call shows in
them (:mod:`.shown`), the changes kept for review (:mod:`.reviews`) and a page
of a notebook (:mod:`.notebook_pages`). ``_protocol/apps.py`` serves them as a
protocol feature; ``_tools/viewing.py`` and ``_tools/reviewing.py`` are the
tools only the apps call.
"""
