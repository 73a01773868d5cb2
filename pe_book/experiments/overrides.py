"""Overrides of a profile's fields from the command line: ``pe-book run --set pretrain.steps=2``.

A path names a field of :class:`~pe_book.experiments.profiles.Profile` (``seq_len``, ``tasks``), a
field of its pretraining or fine-tuning configuration (``pretrain.steps``, ``finetune.epochs``) or a
key of one of its dict fields (``model.hidden_size``, ``probe.length``). The value is read as the
type of the value it replaces (an int, float, bool, string, None, or a comma-separated tuple); a
field that is None takes a number when it parses as one. An overridden value is part of the
configuration that keys each artifact it enters (a pretraining's ``pretrain`` and ``model``, a
fine-tuning's ``finetune``, ...), so an overridden run never reads nor writes the artifacts of the
profile's own settings. The profile keeps its name (and store folder).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pe_lib.config import check_config_values
from pe_lib.errors import InputError

#: Profile fields that cannot be overridden: its name (the store folder) and description.
FIXED = ("name", "description")


def parse_assignment(text: str) -> tuple[list[str], str]:
    """``"pretrain.steps=2"`` -> (["pretrain", "steps"], "2")."""
    path, sep, value = text.partition("=")
    if not sep or not path or any(not part for part in path.split(".")):
        raise InputError(f"--set {text!r}: expected FIELD.PATH=VALUE, e.g. pretrain.steps=2")
    return path.split("."), value


def coerce(text: str, current: Any, where: str) -> Any:
    """``text`` read as the type of ``current``, the value it replaces."""
    if isinstance(current, bool):
        if text.lower() not in ("true", "false", "1", "0"):
            raise InputError(f"--set {where}={text}: expected true or false")
        return text.lower() in ("true", "1")
    if isinstance(current, (tuple, list)):
        items = [item.strip() for item in text.split(",") if item.strip()]
        sample = current[0] if current else None
        return tuple(coerce(item, sample, where) for item in items)
    if current is None or isinstance(current, (int, float)):
        if text.lower() == "none":
            return None
        kinds = {int: (int,), float: (float,)}.get(type(current), (int, float))
        for kind in kinds:
            try:
                return kind(text)
            except ValueError:
                continue
        if current is not None:
            raise InputError(f"--set {where}={text}: expected {' or '.join(k.__name__ for k in kinds)} (or none)")
    return text


def set_path(obj: Any, path: list[str], text: str, where: str) -> Any:
    """A copy of ``obj`` (a dataclass or a dict) with the value at ``path`` replaced."""
    name, rest = path[0], path[1:]
    if dataclasses.is_dataclass(obj):
        valid = [f.name for f in dataclasses.fields(obj) if f.name not in FIXED]
        if name not in valid:
            raise InputError(f"--set {where}: {name!r} is not a field here; valid fields: {', '.join(valid)}")
        current = getattr(obj, name)
        value = set_path(current, rest, text, where) if rest else coerce(text, current, where)
        try:
            return dataclasses.replace(obj, **{name: value})
        except (TypeError, ValueError) as error:  # a configuration's own check (InputError is a ValueError)
            raise InputError(f"--set {where}={text}: {error}") from None
    if isinstance(obj, dict):
        if rest:
            if name not in obj:
                raise InputError(f"--set {where}: {name!r} is not a key here; valid keys: {', '.join(map(str, obj))}")
            return {**obj, name: set_path(obj[name], rest, text, where)}
        return {**obj, name: coerce(text, obj.get(name), where)}
    raise InputError(f"--set {where}: the value at {name!r} has no fields")


def with_overrides(profile, assignments: Sequence[str]):
    """``profile`` with every ``FIELD.PATH=VALUE`` of ``assignments`` applied, in order; then its
    model fields are checked together (``model.hidden_size`` and ``model.num_attention_heads`` may
    be set one after the other), so that none the model would fail on reaches it."""
    for text in assignments:
        path, value = parse_assignment(text)
        profile = set_path(profile, path, value, ".".join(path))
    try:
        check_config_values(profile.model, "model.")
    except InputError as error:
        model_fields = " ".join(text for text in assignments if text.startswith("model."))
        raise InputError(f"--set {model_fields}: {error}") from None
    return profile
