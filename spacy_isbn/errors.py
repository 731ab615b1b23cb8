"""The one kind of error a user is shown as one line (``error: ...``, exit 1)
instead of a traceback: a mistake in what was asked for or given."""


class UserError(Exception):
    """A missing file, an unknown name, a bad value, malformed input: the
    message says what and where; the CLI prints it on one line."""
