"""Hub first, packaged fallback: one policy shared by the corpus, tokenizer and task loaders."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from pe_lib.data.cache import is_offline
from pe_lib.data.sources import Source, SourceUnavailable

T = TypeVar("T")
SOURCE_CHOICES = ("auto", "hub", "packaged")
#: Set after the first hub failure under ``auto``: later ``auto`` loads in this process go straight
#: to the packaged fallback instead of waiting for the network again (tens of seconds each).
_hub_failed: list[str] = []


def check_source_choice(source: str) -> str:
    """Validate a ``source=`` argument."""
    if source not in SOURCE_CHOICES:
        raise ValueError(f"source must be one of {', '.join(SOURCE_CHOICES)}, not {source!r}")
    return source


def reads_packaged(source: str) -> bool:
    """Whether :func:`hub_or_packaged` under ``source`` goes to the packaged analogue without trying
    the hub: ``packaged``, or ``auto`` offline or after a hub failure in this process."""
    check_source_choice(source)
    return source == "packaged" or (source == "auto" and (is_offline() or bool(_hub_failed)))


def load_hub_dataset(src: Source) -> Any:
    """``datasets.load_dataset(hub_id, config, revision=...)`` for a hub source, at its pinned
    revision (looked up at call time, so tests can stub it)."""
    import datasets

    return datasets.load_dataset(src.hub_id, src.hub_config, revision=src.revision)


def hub_or_packaged(what: str, src: Source, from_hub: Callable[[], T], from_packages: Callable[[], T] | None,
                    source: str) -> tuple[T, str]:
    """Run ``from_hub`` or ``from_packages`` following ``source`` and return (result, "hub" | "packaged").

    ``auto``: the hub when not offline (HF_*_OFFLINE unset) and it works, else the packaged
    fallback with a warning. ``hub`` / ``packaged`` force one path; a failure there is an error
    naming what was tried and how to fix it.
    """
    if reads_packaged(source):
        if from_packages is None:
            raise SourceUnavailable(f"{what}: there is no packaged offline analogue; it needs the hub source "
                                    f"{src.requirement}; fix: go online (unset HF_DATASETS_OFFLINE/HF_HUB_OFFLINE) "
                                    "and use source='hub'")
        return from_packages(), "packaged"
    try:
        return from_hub(), "hub"
    except Exception as exc:  # noqa: BLE001 - any hub failure (network, auth, schema) triggers the fallback
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if source == "hub" or from_packages is None:
            alternative = "" if from_packages is None else ", or use source='packaged'"
            raise SourceUnavailable(f"{what}: could not load hub source {src.requirement} ({reason}); fix: go "
                                    f"online with access to the hub{alternative}") from exc
        warnings.warn(f"{what}: hub source {src.requirement} failed ({reason}); using the packaged fallback "
                      "(and for the rest of this process)", stacklevel=3)
        _hub_failed.append(reason)
    return from_packages(), "packaged"
