"""Regular-expression matching in a process of its own, so a pattern can be stopped.

Python's ``re`` cannot be interrupted and holds the GIL: a pattern with
catastrophic backtracking (``(a+)+$`` on a long line of ``a``) would freeze
the server's event loop for as long as it runs, which can be years. So
``search_notebooks`` runs its regular expressions here, a script run by path
(standard library only, so it starts in milliseconds), and kills it when the
search's time budget is spent.

Input on stdin, JSON lines: ``{"pattern": P, "max_matches": N}``, then one
``[unit, text]`` per text to search. Output on stdout: ``unit line`` (line
0-based) per matching line, and ``done`` once everything was searched or
``max_matches`` were found.
"""

import json
import re
import sys


def main() -> None:
    header = json.loads(sys.stdin.readline())
    pattern = re.compile(header["pattern"])
    remaining = int(header["max_matches"])
    out = sys.stdout
    for raw in sys.stdin:
        unit, text = json.loads(raw)
        # Lines end at '\n' only, as everywhere else in the server.
        for number, line in enumerate(text.split("\n")):
            if pattern.search(line):
                out.write(f"{unit} {number}\n")
                remaining -= 1
                if remaining <= 0:
                    out.write("done\n")
                    return
        out.flush()
    out.write("done\n")


if __name__ == "__main__":
    main()
