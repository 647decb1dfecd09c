"""Workload 6: a 5 MB print under the server's default output limit.

Printed as one line and as 1 KB lines, with ``execute_code``: the latency
against raw ``jupyter_client`` receiving the same output, the bytes of the
response (the limit must hold: the agent pays for every byte it reads), and
the server's RSS after each print against before the first (the server must
not keep what it did not send, nor hold on to memory it freed).
"""

from __future__ import annotations

import asyncio

import floor
from harness import Harness, response_bytes
from profiles import OURS
from sizes import MAX_OUTPUT_BYTES

NOTEBOOK = "print.ipynb"


def _truncation_note(result: object) -> str:
    truncation = (getattr(result, "structured_content", None) or {}).get("truncation") or {}
    omitted = truncation.get("omitted_bytes")
    return f"omitted {omitted:,} B" if isinstance(omitted, int) else "no truncation"


async def big_prints(h: Harness) -> None:
    r = h.results
    size = h.sizes.print_bytes
    one = f"print('x' * {size})"
    lines = f"for _ in range({size // 1024}):\n    print('x' * 1023)"
    async with floor.warm_kernel(h.workspace("rawprint")) as kernel:
        for profile in h.serving("big prints", "create_notebook", "execute_code"):
            async with h.connect(profile, h.workspace("print")) as session:
                await session.op("create_notebook", notebook=NOTEBOOK)
                await session.op("execute_code", notebook=NOTEBOOK, code="1+1")
                await asyncio.sleep(0.5)
                before = session.rss_mib()
                seen: list[float] = []
                for _rep in range(h.sizes.print_repetitions):
                    for metric, code in (("print_one", one), ("print_lines", lines)):
                        result = await h.measure(
                            metric, session, "execute_code", notebook=NOTEBOOK, code=code
                        )
                        r.add(f"{metric}_bytes", profile.name, response_bytes(result))
                        if profile is OURS:
                            r.note(metric, _truncation_note(result))
                            with r.timing(metric, "floor"):
                                await kernel.execute(code)
                        await asyncio.sleep(0.2)
                        if (rss := session.rss_mib()) is not None:
                            seen.append(rss)
                if before is not None and seen:
                    # The worst the server stayed at after a print, not only the last.
                    r.add("print_rss_growth", profile.name, max(seen) - before)
                    trail = " ".join(f"{v:.1f}" for v in seen)
                    r.note(
                        "print_rss_growth",
                        f"{profile.name}: {before:.1f} MiB, after each print {trail}",
                    )
    r.note("print_one", f"{size:,} B; default --max-output-bytes {MAX_OUTPUT_BYTES:,}")
