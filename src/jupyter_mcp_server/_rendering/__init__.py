"""Notebook cells and outputs as a model reads them: text, within the inline budget.

A model reads an output as the fewest tokens that say what a person would
see: HTML as its text, a chart as what it plots, an image made small, a long
text cut to its head and tail. Every tool, and the JSON-lines transport, say
outputs through these modules; none of them knows about a call.
"""
