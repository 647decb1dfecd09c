"""What the tool modules share: none of these modules declares a tool.

Addressing notebooks and cells, the output schemas, results and failures,
outputs rendered within the inline budget, the machinery of whole-notebook
runs and staleness. The modules one level up in ``_tools/`` are the ones that
declare tools (``_tools/declarations.py`` lists them as toolsets).
"""
