"""The URIs of notebooks and of their outputs, RFC 3986 exactly.

``notebook:///{path}`` names a workspace notebook, each path segment UTF-8
percent-encoded, and is decoded strictly: a URI that could mean two paths,
or a path the workspace would refuse, is refused here with the reason.
``notebook-output:///{path}?cell=ID&output=N`` names one stored output, read
whole as a resource when a result could only carry part of it.
"""

from __future__ import annotations

import functools
import re
import string
from urllib.parse import quote, unquote_to_bytes

from jupyter_mcp_server._errors import INVALID_PATH, ToolFailure
from jupyter_mcp_server._workspace.path_names import problem_with

URI_PREFIX = "notebook:///"
_BROKEN_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# RFC 3986 pchar without '%': unreserved, sub-delims, ':' and '@'.
_URI_PATH_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@")


def notebook_uri(relative: str) -> str:
    """The ``notebook:///`` URI of a workspace path: each segment UTF-8 percent-encoded."""
    if isinstance(relative, str):
        return _notebook_uri(relative)
    return _uncached_notebook_uri(relative)


# A detailed read names the same notebook in the link of each of its outputs (4,000 calls for
# a 2,000-cell notebook, each checking every character of the path): the answer for a path
# never changes, and a path that is refused raises, which is never kept.
@functools.lru_cache(maxsize=1024)
def _notebook_uri(relative: str) -> str:
    return _uncached_notebook_uri(relative)


def _uncached_notebook_uri(relative: str) -> str:
    segments = relative.split("/") if isinstance(relative, str) else []
    problem = problem_with(relative) if isinstance(relative, str) else "is not a string"
    if not problem and any(segment in ("", ".") for segment in segments):
        problem = "has an empty or '.' segment; normalise it first"
    if problem:
        raise ToolFailure(INVALID_PATH, f"Cannot make a notebook URI: {relative!r} {problem}.")
    return URI_PREFIX + "/".join(quote(segment, safe="") for segment in segments)


def path_of_uri(uri: str) -> str:
    """The workspace-relative path a ``notebook:///`` URI names, checked strictly.

    The result still has to go through :meth:`Workspace.resolve`, which knows
    about symlinks. A fragment is not part of the notebook's name: callers that
    accept one (a cell reference, say) split it off before calling this.
    """

    def rejected(problem: str) -> ToolFailure:
        return ToolFailure(
            INVALID_PATH,
            f"{uri!r} is not a valid notebook URI: {problem}. Notebook URIs look like "
            "'notebook:///nested%20folder/analysis.ipynb' (empty authority, percent-encoded path).",
            uri=uri if isinstance(uri, str) else None,
        )

    if not isinstance(uri, str):
        raise rejected("it is not a string")
    scheme, colon, rest = uri.partition(":")
    if not colon or scheme.lower() != "notebook":
        raise rejected("the scheme must be 'notebook'")
    if not rest.startswith("///"):
        raise rejected("the authority must be empty, so the URI starts with 'notebook:///'")
    if "?" in rest or "#" in rest:
        raise rejected("a query or fragment is not part of a notebook's name")
    segments: list[str] = []
    for raw in rest[3:].split("/"):
        if not raw:
            raise rejected("it has an empty path segment")
        if _BROKEN_PERCENT.search(raw):
            raise rejected("a '%' is not followed by two hexadecimal digits")
        stray = next((c for c in raw if c != "%" and c not in _URI_PATH_CHARACTERS), None)
        if stray is not None:
            raise rejected(f"{stray!r} must be percent-encoded as {quote(stray, safe='')!r}")
        try:
            segment = unquote_to_bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise rejected("the percent-encoded bytes are not UTF-8") from None
        if "/" in segment or "\x00" in segment:
            raise rejected("a segment encodes '/' or NUL")
        if segment in (".", ".."):
            raise rejected("it has a '.' or '..' segment")
        segments.append(segment)
    path = "/".join(segments)
    problem = problem_with(path)
    if problem:
        raise rejected(f"the path {path!r} {problem}")
    return path


#: The scheme of one output of one cell, read whole as a resource.
OUTPUT_SCHEME = "notebook-output"


def output_uri(path: str, cell_id: str, index: int) -> str:
    """``notebook-output:///{path}?cell=ID&output=N`` for a workspace path."""
    return (
        OUTPUT_SCHEME
        + notebook_uri(path)[len("notebook") :]
        + f"?cell={quote(cell_id, safe='')}&output={index}"
    )
