"""What a workspace path may be, and which legal names are almost certainly mistakes.

Agents make up the paths they pass. Before any file is touched, a path is
checked on its own: relative, no ``..`` in any spelling (backslashes
included), no control characters, valid Unicode, within the file system's
name and path lengths, at most 128 levels deep (deeper is a loop or an
attack, and would make every walk over the workspace unbounded).

Some names are legal yet almost certainly not what the caller meant, and
used literally they would quietly make a folder called '~' or '$HOME': a
leading '~', an environment variable, a ``file:`` URI, percent-encoding,
characters that only look like '.' or '/'. :func:`likely_mistakes` names
them with what was probably meant; the workspace refuses them unless that
name really is on disk. Nothing here touches a file.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from urllib.parse import unquote

MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096
#: Components a path may have. Real notebooks live a few levels down; a path
#: hundreds of levels deep is a loop or an attack, and every walk over the
#: workspace (the crash sweep included) stops at this depth.
MAX_PATH_DEPTH = 128
_WINDOWS_DRIVE = re.compile(r"[A-Za-z]:")
# Names that are almost certainly not what the caller meant (a shell or a URL
# would have turned them into something else), refused unless they exist.
_VARIABLE = re.compile(r"\$\{[A-Za-z_]\w*\}|^\$[A-Za-z_]\w*|^%[A-Za-z_]\w*%")
_HOME_OF_USER = re.compile(r"~[A-Za-z_][\w.-]*")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_URI_SCHEMES = ("file:", "notebook:")
# Characters that look like '.', '/' or '\\' and are not (NFKC folds all but
# the two mathematical slashes into them). The horizontal ellipsis is left
# out: people type it in titles.
_LOOK_ALIKES = {
    "\u2024": ".",
    "\u2025": "..",
    "\ufe19": "...",
    "\ufe30": "..",
    "\ufe52": ".",
    "\uff0e": ".",
    "\u2215": "/",
    "\u29f8": "/",
    "\uff0f": "/",
    "\ufe68": "\\",
    "\uff3c": "\\",
}


def problem_with(relative: str) -> str | None:
    """Why ``relative`` cannot name anything in a workspace, or None when it can."""
    if relative.startswith(("/", "\\")) or _WINDOWS_DRIVE.match(relative):
        return "is absolute"
    # Backslash is a separator on Windows clients, so 'a\..\b' escapes there.
    if ".." in re.split(r"[/\\]", relative):
        return "contains '..'"
    if any(unicodedata.category(character) == "Cc" for character in relative):
        return "contains a control character (such as NUL or a newline)"
    try:
        encoded = relative.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (it contains a lone surrogate)"
    if len(encoded) > MAX_PATH_BYTES:
        return f"is longer than {MAX_PATH_BYTES} bytes"
    if any(len(name) > MAX_NAME_BYTES for name in encoded.split(b"/")):
        return f"has a name longer than {MAX_NAME_BYTES} bytes"
    depth = depth_of(relative)
    if depth > MAX_PATH_DEPTH:
        return f"is {depth} levels deep; paths may be at most {MAX_PATH_DEPTH} levels deep"
    return None


def depth_of(relative: str) -> int:
    return sum(1 for part in relative.split("/") if part not in ("", "."))


def likely_mistakes(parts: list[str]) -> Iterator[tuple[int, str, str]]:
    """The components of a path that are almost certainly not what was meant:
    each one's index, what is wrong with it, and what to do instead."""
    plain = "Give a path relative to the workspace, such as 'notebook.ipynb'."

    def not_expanded(index: int, what: str) -> str:
        rest = "/".join(parts[index + 1 :]) or "notebook.ipynb"
        return f"{what!r} is not expanded: give a path relative to the workspace, such as {rest!r}."

    if parts and (parts[0] == "~" or (len(parts) > 1 and _HOME_OF_USER.fullmatch(parts[0]))):
        yield 0, f"starts with '{parts[0]}'", not_expanded(0, parts[0])
    if parts and parts[0].lower().startswith(_URI_SCHEMES):
        scheme = parts[0].split(":", 1)[0].lower()
        if scheme == "notebook":
            instead = "Pass the workspace path the URI names, or read the URI with resources/read."
        else:
            instead = plain
        yield 0, f"is a '{scheme}:' URI, not a path", instead
    for index, part in enumerate(parts):
        escape = _PERCENT_ESCAPE.search(part)
        if escape:
            byte = int(escape.group()[1:], 16)
            meaning = f"percent-encoded {chr(byte)!r}" if byte < 0x80 else "a percent-encoded byte"
            decoded = unquote("/".join(parts))
            instead = f", such as {decoded!r}" if problem_with(decoded) is None else ""
            yield (
                index,
                f"looks URL-encoded: '{escape.group()}' is {meaning}",
                (
                    f"Paths are plain text, not URL-encoded: write the characters themselves{instead}."
                ),
            )
        # After the escapes: '%C3%A9' is a URL's 'é', not a Windows variable.
        variable = _VARIABLE.search(part)
        if variable:
            yield (
                index,
                f"holds '{variable.group()}', an environment variable",
                not_expanded(index, variable.group()),
            )
        look_alike = next((c for c in part if c in _LOOK_ALIKES), None)
        if look_alike is not None:
            yield (
                index,
                (
                    f"contains {look_alike!r} (U+{ord(look_alike):04X} {unicodedata.name(look_alike)}), "
                    f"which looks like {_LOOK_ALIKES[look_alike]!r} but is another character"
                ),
                f"Write a plain {_LOOK_ALIKES[look_alike][0]!r} where one was meant. " + plain,
            )
        invisible = [c for c in part if unicodedata.category(c) == "Cf"]
        if invisible and "".join(c for c in part if c not in invisible) in (".", ".."):
            shown = invisible[0]
            yield (
                index,
                (
                    f"looks like '{part.translate(dict.fromkeys(map(ord, invisible)))}' but holds "
                    f"U+{ord(shown):04X} {unicodedata.name(shown, 'an invisible character')}"
                ),
                plain,
            )
