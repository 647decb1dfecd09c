"""Running code on a notebook's kernel: one execution, and whole-notebook runs.

An execution runs in turn with every other call on its kernel and its
outputs are written into the cell that ran (:mod:`.executions`); a
whole-notebook run is cells in order, each stored as it ends
(:mod:`.notebook_runs`), answered as a line per cell (:mod:`.run_summary`).
The tools, the JSON-lines transport and the public API call into this
package alike; it imports none of them.
"""
