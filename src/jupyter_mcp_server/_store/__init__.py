"""The notebook store: notebook files in the workspace as documents the tools edit.

It sits on the workspace and knows nothing of tools, kernels or transports;
``formats`` turns bytes into documents and back, ``store`` keeps the documents
in step with the files.
"""

from .files import revision_of
from .formats import IPYNB, PY_PERCENT, WRITTEN_VERSION, new_cell, new_notebook, warm_up
from .store import NotebookStore, NotebookView

__all__ = [
    "IPYNB",
    "PY_PERCENT",
    "WRITTEN_VERSION",
    "NotebookStore",
    "NotebookView",
    "new_cell",
    "new_notebook",
    "revision_of",
    "warm_up",
]
