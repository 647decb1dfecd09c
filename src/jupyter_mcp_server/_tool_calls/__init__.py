"""What every tool call shares: the notebook and cell it means, how it answers, who hears it.

Tool modules, whole-notebook runs and the protocol features all name a
notebook the same way (:mod:`.addressing`), answer in the same shape with the
same hooks around them (:mod:`.results`), stream outputs to whoever follows the
call (:mod:`.listening`), and remember the cell the agent worked on
(:mod:`.working`).
"""
