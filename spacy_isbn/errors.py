"""The one kind of error a user is shown as one line (``error: ...``, exit 1)
instead of a traceback: a mistake in what was asked for or given."""


class UserError(Exception):
    """A missing file, an unknown name, a bad value, malformed input: the
    message says what and where; the CLI prints it on one line."""


def require_component(nlp, factory: str, where) -> str:
    """The name of ``nlp``'s first component made by ``factory``; if it has
    none, one error naming ``where`` (the pipeline) and what it holds."""
    for name in nlp.pipe_names:
        if nlp.get_pipe_meta(name).factory == factory:
            return name
    raise UserError(f"{where}: no {factory} component (components: "
                    f"{', '.join(nlp.pipe_names) or 'none'})")
