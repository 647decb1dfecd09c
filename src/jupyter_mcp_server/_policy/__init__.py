"""What the server allows and what it hides: policy, decided in one place each.

Capabilities (what is on), profiles (which tools a profile allows, from their
annotations) and redaction (secret values masked in every text that leaves).
They hold no state of a running server, so every layer may consult them.
"""
