"""The keys a team file may hold, read off the pydantic models' declared fields.

The contract's request models ignore unknown fields on purpose: pipecat-manager
may send fields this runner does not know yet. A team file is written by hand,
though, and a misspelled key (``nam:`` for ``name:``) that is silently ignored
is a mistake nobody sees. ``unknown_keys`` walks a file's raw data beside a
model's ``model_fields``, through nested models, lists, dicts and optionals,
and names every key no model declares; a field added to the contract is
therefore accepted in team files at once. It looks at keys only: types and
values are for pydantic and the runner's checks.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from playground.source import FieldPath

_SEQUENCES = (list, tuple, set, frozenset, Sequence)
_MAPPINGS = (dict, Mapping)


@dataclass(frozen=True)
class UnknownKey:
    """A key, at ``path``, that the model at that place does not declare."""

    path: FieldPath
    accepted: tuple[str, ...]

    @property
    def message(self) -> str:
        key = str(self.path[-1])
        close = difflib.get_close_matches(key, self.accepted, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown key{hint}; the keys here are: {', '.join(self.accepted)}"


def unknown_keys(model: type[BaseModel], data: Any) -> list[UnknownKey]:
    """Every key in ``data``, at any depth, that ``model`` and its nested models do not declare.

    Data of the wrong shape (a list where a model belongs) is passed over:
    validating it is pydantic's job.
    """
    found: list[UnknownKey] = []
    _walk(model, data, (), found)
    return found


def _walk(annotation: Any, data: Any, path: FieldPath, found: list[UnknownKey]) -> None:
    origin = get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        _walk_model(annotation, data, path, found)
    elif origin is Annotated:
        _walk(get_args(annotation)[0], data, path, found)
    elif origin in (Union, types.UnionType):
        for arm in get_args(annotation):
            if _shape_fits(arm, data):
                _walk(arm, data, path, found)
                return
    elif origin in _SEQUENCES and isinstance(data, list) and get_args(annotation):
        for index, item in enumerate(data):
            _walk(get_args(annotation)[0], item, (*path, index), found)
    elif origin in _MAPPINGS and isinstance(data, dict) and len(get_args(annotation)) == 2:
        for key, value in data.items():
            _walk(get_args(annotation)[1], value, (*path, str(key)), found)


def _walk_model(
    model: type[BaseModel], data: Any, path: FieldPath, found: list[UnknownKey]
) -> None:
    if not isinstance(data, dict):
        return
    fields = {info.alias or name: info for name, info in model.model_fields.items()}
    for key, value in data.items():
        info = fields.get(key) if isinstance(key, str) else None
        if info is None:
            found.append(UnknownKey((*path, str(key)), tuple(fields)))
        else:
            _walk(info.annotation, value, (*path, key), found)


def _shape_fits(annotation: Any, data: Any) -> bool:
    """Whether ``data`` has the shape (mapping, list) ``annotation`` would take."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _shape_fits(get_args(annotation)[0], data)
    if isinstance(data, dict):
        is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        return is_model or origin in _MAPPINGS
    if isinstance(data, list):
        return origin in _SEQUENCES
    return False
