"""The arguments many tools take, declared once, with what ``tools/list`` says of each."""

from typing import Annotated

from pydantic import Field

# Undescribed in the listing, where each description is paid in every conversation:
# use_notebook's says that tools default to the current notebook, and
# get_notebook_revision's what an expected revision guards against.
NotebookName = Annotated[str | None, Field()]
ExpectedRevision = Annotated[str | None, Field()]
MaxOutputChars = Annotated[
    int | None,
    Field(description="Output characters returned (1024-262144); read_output pages the rest."),
]
Detach = Annotated[
    bool,
    Field(description="Answer at once with a run_id; the run goes on (get_run follows it)."),
]
