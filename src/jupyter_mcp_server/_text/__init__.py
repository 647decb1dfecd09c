"""Text as the server writes and cleans it: timestamps, and a terminal's colour codes."""
