"""The one error type of the report's inputs, in a module of its own so that every reader can raise it."""


class ResultError(Exception):
    """An input that cannot be reported; str() is one sentence that names the file."""
