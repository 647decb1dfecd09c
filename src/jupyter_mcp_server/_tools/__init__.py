"""The notebooks tools: what a model calls to read, edit and run notebooks.

Every module here declares tools of one family; ``declarations`` lists them
with their titles, annotations and toolsets. What they share lives on the
floors below, in rooms named for it: ``_tool_calls`` (the notebook a call
means, how it answers), ``_rendering`` (outputs as a model reads them),
``_schemas`` (the results' shapes), ``_runs`` (executions and whole-notebook
runs) and ``_apps`` (what a person is shown). Nothing is imported here.
"""
