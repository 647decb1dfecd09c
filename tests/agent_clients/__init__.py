"""Real agent CLIs (from npm, pinned) driven headless against the real server.

Each client talks to a scripted stand-in for its model API on loopback
(`standin`), which records exactly what the client handed its model for each
tool result; `clients` says how to install, configure and run each one offline.
"""
