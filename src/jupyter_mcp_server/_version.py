"""The package's version, in a module of its own so that nothing imports the package's
``__init__`` (and what it may import) just to read it."""

__version__ = "0.1.0"
