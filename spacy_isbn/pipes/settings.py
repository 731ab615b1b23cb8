"""The components' settings, declared once: each component's a dataclass
whose fields (name, type, default and the values allowed) are its factory's
config, the factory's signature and what the component keeps in ``cfg``;
:meth:`Settings.check` refuses, in one place, a value no search or
training can use, naming it; :func:`settings_factory` registers a
component's factory from its dataclass."""
import dataclasses
import inspect
from typing import Any, Callable, Dict, Optional, Tuple

from spacy.language import Language
from thinc.api import Model

from ..errors import UserError


class SettingError(UserError, ValueError):
    """A setting no search or training can use (a ``ValueError`` as spaCy's
    own config errors are)."""


def at_least(minimum: int, default: int) -> Any:
    """An integer setting of at least ``minimum``."""
    return dataclasses.field(default=default, metadata={"at_least": minimum})


def share(default: float) -> Any:
    """A number between 0 and 1."""
    return dataclasses.field(default=default, metadata={"share": True})


def one_of(*choices: str) -> Any:
    """One of ``choices``, the first the default."""
    return dataclasses.field(default=choices[0], metadata={"choices": choices})


def weights_of(*names: str) -> Any:
    """Weights (numbers) of some of ``names``, by name; none by default."""
    return dataclasses.field(default_factory=dict, metadata={"keys": names})


@dataclasses.dataclass
class Settings:
    """A component's settings (subclasses declare the fields)."""

    def check(self, component: str) -> None:
        """Refuse a value no search or training can use, naming the setting."""
        for field in dataclasses.fields(self):
            value, meta = getattr(self, field.name), field.metadata
            where = f"component '{component}': {field.name} = {value!r}"
            if "at_least" in meta and (isinstance(value, bool) or not isinstance(value, int)
                                       or value < meta["at_least"]):
                raise SettingError(f"{where}: give an integer of at least {meta['at_least']}")
            if "share" in meta and (isinstance(value, bool) or not isinstance(value, (int, float))
                                    or not 0.0 <= value <= 1.0):
                raise SettingError(f"{where}: give a number between 0 and 1")
            if "choices" in meta and value not in meta["choices"]:
                raise SettingError(f"{where}: one of {', '.join(meta['choices'])}")
            if "keys" in meta and set(value) - set(meta["keys"]):
                raise SettingError(f"{where}: the names are {', '.join(meta['keys'])}")

    def cfg(self) -> Dict[str, Any]:
        """The settings as the component keeps and saves them (``cfg``):
        numbers of float fields as floats, flags as bools."""
        cast = {float: float, bool: bool, Dict[str, float]: lambda weights: {
            key: float(weight) for key, weight in weights.items()}}
        return {field.name: cast.get(field.type, lambda value: value)(getattr(self, field.name))
                for field in dataclasses.fields(self)}


def settings_factory(name: str, settings: type, default_model: dict, scorer: dict,
                     **meta) -> Callable:
    """Register the decorated ``make(nlp, name, model, settings, scorer)`` as
    spaCy's factory ``name``: its config is ``model``, the fields of
    ``settings`` (a :class:`Settings` dataclass) and ``scorer``, with those
    defaults; spaCy validates a config against the factory's signature, so
    the factory's is built from the same fields."""
    fields = dataclasses.fields(settings)

    def register(make: Callable) -> Callable:
        def factory(nlp: Language, name: str, model: Model, scorer: Optional[Callable],
                    **values):
            return make(nlp, name, model, settings(**values), scorer)

        keyword = inspect.Parameter.KEYWORD_ONLY
        params: Tuple[inspect.Parameter, ...] = (
            inspect.Parameter("nlp", keyword, annotation=Language),
            inspect.Parameter("name", keyword, annotation=str),
            inspect.Parameter("model", keyword, annotation=Model),
            *(inspect.Parameter(field.name, keyword, annotation=field.type) for field in fields),
            inspect.Parameter("scorer", keyword, annotation=Optional[Callable]))
        factory.__signature__ = inspect.Signature(params)
        factory.__annotations__ = {param.name: param.annotation for param in params}
        factory.__name__, factory.__qualname__ = make.__name__, make.__qualname__
        factory.__doc__, factory.__module__ = make.__doc__, make.__module__
        defaults = {field.name: field.default if field.default_factory is dataclasses.MISSING
                    else field.default_factory() for field in fields}
        Language.factory(name, default_config={"model": default_model, **defaults,
                                               "scorer": scorer}, **meta)(factory)
        return factory

    return register
