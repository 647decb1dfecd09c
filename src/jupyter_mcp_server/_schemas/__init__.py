"""The output schemas of the tools: the shape of every structured result, as pydantic models.

They import nothing of the server, so a result's shape can be read, listed in
``tools/list`` and tested without starting anything.
"""
