"""Redaction: secrets masked in results and the audit log, the notebook left as it is.

A planted ``OPENAI_API_KEY``-style variable in the server's environment
(inherited by the kernel), one a cell sets in the kernel's own environment,
and token formats printed by a cell never reach the client; the audit log
masks them too; the ``.ipynb`` keeps what the person's code printed unless
``redaction=stored``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from conftest import ok, serve, text_of

from jupyter_mcp_server._policy.redaction import Redactor, secret_values
from jupyter_mcp_server._text.terminal import strip_ansi

PLANTED = "sk-proj-" + "Zq7" * 12  # an OpenAI-style key, in the server's environment
GITHUB = "ghp_" + "a1B2c3D4e5" * 4
KERNEL_SET = "kernel-only-s3cret-value"


def test_the_redactor() -> None:
    values = secret_values(
        {
            "OPENAI_API_KEY": PLANTED,
            "HOME": "/home/me",
            "DB_PASSWORD": "hunter2!",
            "SHORT_KEY": "1",
        },
        ("*_KEY", "*PASSWORD*"),
    )
    assert values == {PLANTED: "OPENAI_API_KEY", "hunter2!": "DB_PASSWORD"}
    redactor = Redactor(values=values)
    assert redactor.text(f"key={PLANTED}.") == "key=[redacted: OPENAI_API_KEY]."
    for token, kind in (
        (GITHUB, "github token"),
        ("AKIAIOSFODNN7EXAMPLE", "aws access key"),
        ("xoxb-123456789012-abcdefABCDEF", "slack token"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "json web token",
        ),
        ("sk-ant-api03-" + "x" * 30, "anthropic key"),
    ):
        assert redactor.text(f"[{token}]") == f"[[redacted: {kind}]]", token
    plain = "nothing secret here, /home/me"
    assert redactor.text(plain) is plain
    image = base64.b64encode(b"AKIAIOSFODNN7EXAMPLE" * 3).decode()
    output = {
        "output_type": "display_data",
        "data": {"image/png": image, "text/plain": f"x {PLANTED}"},
    }
    masked = redactor.value(output)
    assert masked["data"]["image/png"] == image and PLANTED not in masked["data"]["text/plain"]
    assert (
        redactor.value({"type": "image", "data": "AKIAIOSFODNN7EXAMPLE"})["data"]
        == "AKIAIOSFODNN7EXAMPLE"
    )
    redactor.add_values({KERNEL_SET: "MY_SERVICE_TOKEN"})
    assert redactor.text(KERNEL_SET + "!") == "[redacted: MY_SERVICE_TOKEN]!"
    # Split by colour codes, a secret is still found; the text keeps its colours otherwise.
    split = f"\x1b[31m{PLANTED[:9]}\x1b[1m{PLANTED[9:]}\x1b[0m"
    assert redactor.text(split) == "[redacted: OPENAI_API_KEY]"
    coloured = f"\x1b[31m{PLANTED}\x1b[0m"
    assert redactor.text(coloured) == "\x1b[31m[redacted: OPENAI_API_KEY]\x1b[0m"
    harmless = "\x1b[31mnothing to hide in red\x1b[0m"
    assert redactor.text(harmless) is harmless


CELLS = [
    "import os\nprint(os.environ['OPENAI_API_KEY'])",
    f"print('{GITHUB}')",
    f"os.environ['MY_SERVICE_TOKEN'] = '{KERNEL_SET}'",
    "print(os.environ['MY_SERVICE_TOKEN'])",
    # The secret split by a colour code: found all the same.
    "k = os.environ['OPENAI_API_KEY']\nprint(k[:12] + '\\x1b[1m' + k[12:] + '\\x1b[0m')",
]


def strings_of(value) -> str:
    """Every string in a JSON value, colour codes removed: what a reader of the file sees."""
    if isinstance(value, str):
        return strip_ansi(value)
    if isinstance(value, list):
        return "\n".join(strings_of(item) for item in value)
    if isinstance(value, dict):
        return "\n".join(strings_of(item) for item in value.values())
    return ""


def stored_outputs(workspace: Path) -> str:
    document = json.loads((workspace / "s.ipynb").read_text())
    return json.dumps([cell.get("outputs") for cell in document["cells"]])


async def run_cells(client) -> list[str]:
    await ok(client, "use_notebook", {"notebook_name": "s.ipynb", "mode": "create"})
    seen = []
    for source in CELLS:
        result = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": source}
        )
        assert not result.is_error, text_of(result)
        seen.append(text_of(result) + json.dumps(result.structured_content))
    read = await client.call_tool("read_notebook", {"response_format": "detailed", "limit": 0})
    seen.append(text_of(read) + json.dumps(read.structured_content))
    resource = await client.read_resource("notebook:///s.ipynb")
    seen.append(resource.contents[0].text)
    return seen


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_secrets_are_masked_in_results_and_the_audit_log(workspace: Path, mode: str) -> None:
    audit = workspace.parent / "audit.jsonl"
    env = {"OPENAI_API_KEY": PLANTED}
    async with serve(
        workspace,
        "--capability",
        "kernel.prestart=off",
        "--audit-log",
        str(audit),
        env=env,
        mode=mode,
    ) as client:
        seen = await run_cells(client)
    everything = strip_ansi("\n".join(seen).replace("\\u001b", "\x1b"))
    for secret in (PLANTED, GITHUB, KERNEL_SET):
        assert secret not in everything, secret
    assert "[redacted: OPENAI_API_KEY]" in seen[0]
    assert "[redacted: github token]" in seen[1]
    assert "[redacted: MY_SERVICE_TOKEN]" in seen[3]
    assert "__jupyter_mcp_secret_env__" not in everything
    logged = audit.read_text()
    assert (
        GITHUB not in logged and KERNEL_SET not in logged and "[redacted: github token]" in logged
    )
    # What the person's notebook stores is theirs.
    stored = stored_outputs(workspace)
    assert PLANTED in stored and GITHUB in stored and KERNEL_SET in stored


async def test_stored_and_off(workspace: Path) -> None:
    env = {"OPENAI_API_KEY": PLANTED}
    async with serve(
        workspace,
        "--capability",
        "kernel.prestart=off",
        "--capability",
        "redaction=stored",
        env=env,
    ) as client:
        seen = await run_cells(client)
    assert PLANTED not in "\n".join(seen)
    stored = stored_outputs(workspace)
    assert PLANTED not in stored and GITHUB not in stored and "[redacted: OPENAI_API_KEY]" in stored
    document = json.loads((workspace / "s.ipynb").read_text())
    assert PLANTED not in strings_of([cell.get("outputs") for cell in document["cells"]])
    (workspace / "s.ipynb").unlink()
    async with serve(
        workspace, "--capability", "kernel.prestart=off", "--capability", "redaction=off", env=env
    ) as client:
        seen = await run_cells(client)
    assert PLANTED in seen[0] and GITHUB in seen[1]


async def test_stored_masks_what_an_output_widget_captured(workspace: Path) -> None:
    """Printed inside ``with out:`` (an ipywidgets Output), a secret is kept in the notebook's
    widget state, not in a cell: ``redaction=stored`` masks it there too."""
    pytest.importorskip("ipywidgets")
    env = {"OPENAI_API_KEY": PLANTED}
    code = (
        "import os, ipywidgets as widgets\n"
        "out = widgets.Output()\ndisplay(out)\n"
        "with out:\n    print(os.environ['OPENAI_API_KEY'])"
    )
    async with serve(
        workspace,
        "--capability",
        "kernel.prestart=off",
        "--capability",
        "redaction=stored",
        env=env,
    ) as client:
        await ok(client, "use_notebook", {"notebook_name": "s.ipynb", "mode": "create"})
        await ok(client, "insert_execute_code_cell", {"cell_index": -1, "cell_source": code})
    document = json.loads((workspace / "s.ipynb").read_text())
    state = json.dumps(document["metadata"]["widgets"])
    assert "[redacted: OPENAI_API_KEY]" in state
    assert PLANTED not in strings_of(document)


TOKENS = {
    "private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "anthropic key": "sk-ant-" + "a" * 30,
    "openai key": "sk-proj-" + "b" * 30,
    "github token": "ghp_" + "c" * 36,
    "gitlab token": "glpat-" + "d" * 20,
    "aws access key": "AKIA" + "E" * 16,
    "slack token": "xoxb-" + "1" * 12,
    "google api key": "AIza" + "f" * 35,
    "stripe key": "sk_live_" + "g" * 24,
    "hugging face token": "hf_" + "h" * 34,
    "json web token": "eyJ" + "i" * 10 + ".eyJ" + "j" * 10 + "." + "k" * 10,
}


def test_every_token_format_is_masked_in_text_and_in_nested_values() -> None:
    from jupyter_mcp_server._policy.redaction import TOKEN_FORMATS, Redactor

    assert set(TOKENS) == {kind for kind, _anchors, _pattern in TOKEN_FORMATS}
    redactor = Redactor()
    for kind, token in TOKENS.items():
        masked = redactor.text(f"before {token} after")
        assert token not in masked and f"[redacted: {kind}]" in masked, kind
        nested = redactor.value({"cells": [{"outputs": [{"text": ["x\n", f"{token}\n"]}]}]})
        assert token not in str(nested), kind
    plain = "no secret here, only text long enough to be looked at"
    assert redactor.text(plain) is plain
    document = {"cells": [{"source": plain}]}
    assert redactor.value(document) is document


AWKWARD_SECRETS = {
    'quote"and\\backslash': "QUOTED_TOKEN",
    "line\nbreak\tand\x01control": "CONTROL_TOKEN",
    "ünïcødé-sécret-välue": "UNICODE_TOKEN",
    "emoji-🔑-secret": "EMOJI_TOKEN",
    "lone-\ud800-surrogate": "SURROGATE_TOKEN",
}


def test_a_value_is_masked_whatever_json_escapes_in_its_secrets() -> None:
    """Values are first scanned as one JSON text; a secret holding what JSON escapes (quotes,
    backslashes, control characters), or none of it, is still found in any string of it."""
    redactor = Redactor(values=AWKWARD_SECRETS)
    for secret, name in AWKWARD_SECRETS.items():
        document = {"cells": [{"outputs": [{"text": ["x\n", f"<{secret}>\n"]}], "n": 1}]}
        masked = redactor.value(document)
        assert masked["cells"][0]["outputs"][0]["text"][1] == f"<[redacted: {name}]>\n", name
        assert document["cells"][0]["outputs"][0]["text"][1] == f"<{secret}>\n"
        assert redactor.value([1, 2.5, None, True, [f"{secret}"]])[4] == [f"[redacted: {name}]"]
    # Nothing to mask: the very same object, however big.
    big = {"cells": [{"source": f"x = {i}", "outputs": [{"text": "ok\n"}]} for i in range(5000)]}
    assert redactor.value(big) is big
    # What JSON cannot write (a tuple is written as a list; bytes not at all) is walked.
    odd = {"a": (1, 2), "b": b"raw", "c": f"{GITHUB}"}
    assert redactor.value(odd)["c"] == "[redacted: github token]"
    # A secret split by colour codes, in a nested value.
    split = {"text": [f"\x1b[31m{PLANTED[:9]}\x1b[1m{PLANTED[9:]}\x1b[0m"]}
    masked_split = Redactor(values={PLANTED: "OPENAI_API_KEY"}).value(split)
    assert masked_split == {"text": ["[redacted: OPENAI_API_KEY]"]}


def test_the_one_scan_gives_what_the_walk_gives() -> None:
    """Over any JSON-like value, with secrets planted anywhere, masking after the one-scan
    check equals masking by walking every string."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    secrets = [*AWKWARD_SECRETS, PLANTED, "hunter2!"]
    redactor = Redactor(values={**AWKWARD_SECRETS, PLANTED: "OPENAI_API_KEY", "hunter2!": "PW"})
    pieces = st.sampled_from([*secrets, GITHUB, "\x1b[1m", "AKIA", "plain ", "\\", '"', "é"])
    strings = st.lists(st.one_of(pieces, st.text(max_size=8)), max_size=4).map("".join)
    leaves = st.one_of(strings, st.integers(), st.floats(allow_nan=False), st.none(), st.booleans())
    values = st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(strings, inner, max_size=4)
        ),
        max_leaves=20,
    )

    @settings(max_examples=400, deadline=None)
    @given(values.filter(lambda v: isinstance(v, (dict, list))))
    def agrees(value):
        assert redactor.value(value) == redactor._walked(value)

    agrees()


def test_a_result_text_is_scanned_once_and_its_other_fields_still_are() -> None:
    """A result's ``rendered`` is its text block, the same string: masking scans it with the
    block and not again in the structured part; anything else in that part is still masked,
    and a text that held a secret is masked in both parts."""
    from mcp.types import CallToolResult, TextContent

    from jupyter_mcp_server._protocol.masking import mask_call_result

    redactor = Redactor(values={PLANTED: "OPENAI_API_KEY"})
    text = "a clean text, long enough to be looked at\n"
    result = CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"rendered": text, "outputs": [{"text": f"key={GITHUB}"}]},
    )
    masked = mask_call_result(redactor, result)
    assert masked.structured_content["rendered"] is text
    assert masked.structured_content["outputs"][0]["text"] == "key=[redacted: github token]"

    clean = CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"rendered": text, "n": 1},
    )
    assert mask_call_result(redactor, clean) is clean

    leaky = f"printed {PLANTED}\n"
    result = CallToolResult(
        content=[TextContent(type="text", text=leaky)],
        structured_content={"rendered": leaky, "n": 1},
    )
    masked = mask_call_result(redactor, result)
    assert PLANTED not in masked.content[0].text
    assert masked.structured_content["rendered"] == "printed [redacted: OPENAI_API_KEY]\n"
    # A rendered that is not the text block's string (here one holding a secret): scanned.
    copy_of_leaky = "".join(["printed ", PLANTED, "\n"])
    assert copy_of_leaky is not leaky
    result = CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"rendered": copy_of_leaky},
    )
    assert PLANTED not in json.dumps(mask_call_result(redactor, result).structured_content)
