"""The notebooks tools: what a model calls to read, edit and run notebooks.

The modules here each declare tools of one family; ``declarations`` lists them
with their titles, annotations and toolsets; ``helpers/`` holds what they share.
Nothing is imported here, so that a helper (``helpers.results``, which the
public API lends to extensions) can be imported without every tool.
"""
