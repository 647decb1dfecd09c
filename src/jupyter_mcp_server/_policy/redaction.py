"""Secrets masked before they reach a model or the audit log.

Two kinds of secret are recognised in any text the server sends:

- the *values* of environment variables whose names say they are secret
  (``*_TOKEN``, ``*_KEY``, ``*_SECRET``, ``*PASSWORD*`` and the patterns an
  operator adds), from the server's environment and from each kernel's, read
  back on an execution's reply (:func:`kernel_env_expression`, a user
  expression: no extra round trip) on the kernel's first execution and after
  code that may change its environment;
- well-known token formats (OpenAI, Anthropic, GitHub, GitLab, AWS, Slack,
  Google, Stripe, Hugging Face keys, JSON Web Tokens, private key blocks),
  whatever variable they came from or none.

A value becomes ``[redacted: NAME]`` (the variable's name, which says what
it was without saying it) and a token ``[redacted: KIND]``. Binary payloads
(images, PDFs) are never touched: masking inside base64 would break them and
no model reads them as text. The :class:`Redactor` is pure; what it is
applied to is decided by the ``redaction`` capability (``profile_guard``'s
neighbour ``result_redaction``, the audit log, and, when configured, the
outputs stored in the notebook).
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from jupyter_mcp_server._text.terminal import strip_ansi

#: The capability: ``results`` (default), ``stored`` (the notebook's outputs too), ``off``.
REDACTION_CAPABILITY = "redaction"
RESULTS = "results"
STORED = "stored"

#: Names of environment variables whose values are secret (shell patterns, any case).
DEFAULT_SECRET_NAMES: tuple[str, ...] = (
    "*_TOKEN",
    "*_KEY",
    "*_SECRET",
    "*PASSWORD*",
    "*_PASSWD",
    "*_CREDENTIALS",
    "*_API_KEY*",
    "*SECRET_KEY*",
)
#: Values shorter than this are not masked: "1" or "true" would be masked everywhere.
MIN_SECRET_LENGTH = 6

#: Well-known token formats: (kind, substrings one of which every match contains, pattern).
#: The substrings are looked for first (a fast scan); a pattern runs only on text that has one.
TOKEN_FORMATS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "private key",
        ("PRIVATE KEY-----",),
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
    ("anthropic key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    (
        "github token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    ("gitlab token", ("glpat-",), r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("aws access key", ("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("slack token", ("xox",), r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("google api key", ("AIza",), r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("stripe key", ("_live_", "_test_"), r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("hugging face token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),
    (
        "json web token",
        ("eyJ",),
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
)

#: Output data under these MIME types (and prefixes) is binary: never masked.
BINARY_PREFIXES = ("image/", "audio/", "video/", "application/pdf", "application/octet-stream")
#: Content blocks whose data is base64.
BINARY_BLOCKS = frozenset({"image", "audio"})
#: Content-block fields that hold base64.
BINARY_FIELDS = frozenset({"blob"})


def secret_name(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


def secret_values(environ: Mapping[str, str], patterns: Iterable[str]) -> dict[str, str]:
    """{value: variable name} of the secret-named variables of an environment."""
    patterns = tuple(patterns)
    return {
        value: name
        for name, value in environ.items()
        if isinstance(value, str)
        and len(value.strip()) >= MIN_SECRET_LENGTH
        and secret_name(name, patterns)
    }


def _as_in_json(text: str) -> str:
    """`text` as it reads inside a JSON string written with ``ensure_ascii=False``."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def kernel_env_expression(patterns: Iterable[str]) -> str:
    """A Python expression a kernel evaluates to {name: value} of its secret-named variables."""
    wanted = [pattern.upper() for pattern in patterns]
    return (
        "(lambda os, fn, ps: {k: v for k, v in os.environ.items() "
        f"if len(v.strip()) >= {MIN_SECRET_LENGTH} and any(fn(k.upper(), p) for p in ps)}})"
        f"(__import__('os'), __import__('fnmatch').fnmatchcase, {wanted!r})"
    )


def _any_of(words: Iterable[str]) -> re.Pattern[str]:
    """An expression matching any of `words`, grouped by first character (``s(?:k-ant-|k-)``):
    the engine then tries one branch where a word may start, not all of them (a quarter
    faster over the 700 KB of a 2,000-cell read)."""
    by_first: dict[str, set[str]] = {}
    for word in words:
        by_first.setdefault(word[0], set()).add(word[1:])
    return re.compile(
        "|".join(
            re.escape(first)
            + "(?:"
            + "|".join(re.escape(rest) for rest in sorted(rests, key=lambda r: (-len(r), r)))
            + ")"
            for first, rests in by_first.items()
        )
    )


class Redactor:
    """Masks known secret values and token formats in text and in JSON-like values."""

    def __init__(
        self,
        patterns: Iterable[str] = DEFAULT_SECRET_NAMES,
        values: Mapping[str, str] | None = None,
    ) -> None:
        self.patterns = tuple(patterns)
        self._values: dict[str, str] = {}
        self._lock = threading.Lock()
        self._formats = [
            (f"[redacted: {kind}]", anchors, re.compile(pattern))
            for kind, anchors, pattern in TOKEN_FORMATS
        ]
        #: Every format's anchors in one expression: most texts hold none, found in one scan.
        self._any_anchor = _any_of(a for _kind, anchors, _p in TOKEN_FORMATS for a in anchors)
        #: (value, its mask), longest first, so a value that contains another is masked whole.
        self._masks: tuple[tuple[str, str], ...] = ()
        #: Each secret value as it reads inside a JSON string (see `_may_hold_a_secret`).
        self._in_json: tuple[str, ...] = ()
        if values:
            self.add_values(values)

    @property
    def expression(self) -> str:
        return kernel_env_expression(self.patterns)

    def add_values(self, values: Mapping[str, str]) -> None:
        """Mask these {value: name} from now on (a kernel's environment, read on a reply)."""
        new = {
            value: name
            for value, name in values.items()
            if len(value.strip()) >= MIN_SECRET_LENGTH and value not in self._values
        }
        if not new:
            return
        with self._lock:
            self._values.update(new)
            ordered = sorted(self._values, key=len, reverse=True)
            self._masks = tuple((value, f"[redacted: {self._values[value]}]") for value in ordered)
            self._in_json = tuple(_as_in_json(value) for value in ordered)

    def add_environment(self, environ: Mapping[str, str]) -> None:
        self.add_values(secret_values(environ, self.patterns))

    def text(self, text: str) -> str:
        """`text` with every secret masked (itself when there is none). A secret that terminal
        colour codes split is found in the text without them, which is then what is kept:
        its colours are lost, never the mask."""
        if len(text) < MIN_SECRET_LENGTH:
            return text
        masked = self._masked(text)
        if "\x1b" in masked:
            plain = strip_ansi(masked)
            if self._masked(plain) != plain:
                return self._masked(plain)
        return masked

    def _masked(self, text: str) -> str:
        # Substring scans (C speed) first; a regular expression runs only where one may match.
        original = text
        for value, mask in self._masks:
            if value in text:
                text = text.replace(value, mask)
        if self._any_anchor.search(text) is not None:
            for mask, anchors, pattern in self._formats:
                if any(anchor in text for anchor in anchors):
                    text = pattern.sub(mask, text)
        return original if text == original else text

    def value(self, value: Any, clean: Collection[str] = ()) -> Any:
        """A JSON-like value (dicts, lists, strings) with every string masked, binary data left
        alone; the same object when nothing changed.

        `clean`: texts :meth:`text` has just returned unchanged (a result's text blocks). A
        field of a dict `value` that is one of those very string objects (a result's
        ``rendered``, which is its text) is not scanned a second time."""
        if isinstance(value, (dict, list)):
            scanned = value
            if clean and isinstance(value, dict):
                known = {id(text) for text in clean}
                scanned = {
                    key: item
                    for key, item in value.items()
                    if not (isinstance(item, str) and id(item) in known)
                }
            if not self._may_hold_a_secret(scanned):
                return value
        return self._walked(value)

    def _may_hold_a_secret(self, value: dict[Any, Any] | list[Any]) -> bool:
        """Whether any string of `value` may hold a secret, from one scan of its JSON text.

        A read of a big notebook is tens of thousands of strings, and walking them in
        Python cost a third of the read; serialising is done in C. JSON escapes a string
        one character at a time, so a secret inside a string is, escaped the same way,
        inside the text (``_in_json``; the formats' anchors have nothing to escape). The
        text also holds keys and binary data the walk leaves alone: they can only make
        this say "may", and the walk then decides. A secret that colour codes split is
        found only once they are removed, so any colour code sends the value to the walk.
        """
        try:
            text = json.dumps(value, ensure_ascii=False, check_circular=False)
        except (TypeError, ValueError, RecursionError):
            return True
        if "\\u001b" in text or self._any_anchor.search(text) is not None:
            return True
        return any(secret in text for secret in self._in_json)

    def _walked(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            masked = [self._walked(item) for item in value]
            return value if all(a is b for a, b in zip(masked, value, strict=True)) else masked
        if isinstance(value, dict):
            if value.get("type") in BINARY_BLOCKS:
                return value
            changed = False
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if isinstance(key, str) and (
                    key.startswith(BINARY_PREFIXES) or key in BINARY_FIELDS
                ):
                    out[key] = item
                    continue
                masked = self._walked(item)
                changed = changed or masked is not item
                out[key] = masked
            return out if changed else value
        return value
