"""The server's own Python process: returning freed heap to the system, and imports deferred
until something needs them (jsonschema's format checkers)."""
