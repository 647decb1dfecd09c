"""Who is calling, and what a call may ask or leave behind.

The connection a request came on and what it owns, asking the client in the
middle of a call (elicitation, sampling, roots, the person's approval), the
calls that outlive their request (detached runs) and the outputs of scratch
code kept for a while. The tools use these; they know nothing of the
protocol features or the transports above them.
"""
