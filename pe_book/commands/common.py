"""Options shared by several subcommands, and the two defaults of their ``--profile``."""
from __future__ import annotations

import argparse
import math
import os

from pe_lib.errors import InputError

#: The published book's profile, whose results are committed (``results/cpu-next``): the default of the
#: commands that read or check those results (``book``, ``publish colab``, ``publish readme``,
#: ``verify``). The Makefile's ``PROFILE`` repeats it (make cannot import it);
#: ``tests/book/test_publish.py`` checks that the two agree.
PUBLISHED_PROFILE = "cpu"
#: The default of the commands that compute into a profile's store (``run``, ``pretrain``,
#: ``finetune``, ``adopt``): the profile of tiny models, minutes on 2 cores, so that a command
#: given no ``--profile`` never starts the published profile's many hours of training.
COMPUTING_PROFILE = "smoke"


def add_profile(parser: argparse.ArgumentParser, default: str = COMPUTING_PROFILE) -> None:
    """``--profile`` (one of the profiles registry's, :data:`pe_book.experiments.profiles.PROFILES`),
    ``--cache`` and ``--no-progress``."""
    from pe_book.experiments.profiles import PROFILES

    parser.add_argument("--profile", default=default, choices=sorted(PROFILES), help=f"experiment profile (default: {default})")
    parser.add_argument("--cache", default=None, help="data cache folder (default: $PE_LIB_CACHE or ~/.cache/pe-book)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1 (0 or less is refused, never silently ignored)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def at_least(low: int):
    """An argparse type: an integer of at least ``low`` (``--window``: an indicator needs 3 offsets)."""
    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer of at least {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    integer.__name__ = f"integer of at least {low}"
    return integer


#: An argparse type: an integer of at least 0 (a seed, a layer index).
non_negative_int = at_least(0)


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0 (``nan``, ``inf``, 0 and below are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def existing_file(text: str) -> str:
    """An argparse type: a file that exists."""
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no file {text}" + (" (it is a folder)" if os.path.isdir(text) else ""))
    return text


def existing_folder(text: str) -> str:
    """An argparse type: a folder that exists (a tokenizer or model folder)."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"no folder {text}")
    return text


def new_file(text: str) -> str:
    """An argparse type: a file to write, in a folder that exists."""
    folder = os.path.dirname(text) or "."
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"cannot write {text}: no folder {folder}")
    return text


class BadOptionValue(InputError):
    """An option value that only the model or data can refute (``--layer 99`` of a 2-layer model):
    a usage error like argparse's, one line with exit status 2."""

    usage = True

    def __init__(self, option: str, message: str):
        super().__init__(f"argument {option}: {message}")


def model_config(path: str):
    """The ``AutoConfig`` of a model folder or hub id, or one :class:`~pe_lib.errors.InputError`
    saying why it cannot be read (no such folder, no config.json, a config with wrong values)."""
    from pathlib import Path

    from transformers import AutoConfig


    local = Path(path).expanduser()
    if not local.exists() and (local.is_absolute() or path.startswith((".", "~")) or path.count("/") > 1):
        raise InputError(f"no model folder {path}")  # not a hub id (namespace/name) either
    problem = wrong_type_in_config(local / "config.json") if local.is_dir() else None
    if problem:  # checked first: a config class may accept 2.0 heads or [2] layers and fail deep in the model
        raise InputError(f"cannot read the model config of {path}: {problem}")
    try:
        return AutoConfig.from_pretrained(path, trust_remote_code=False)
    except (OSError, ValueError, TypeError, KeyError) as error:  # HF's errors for a missing or malformed config
        raise InputError(f"cannot read the model config of {path}: {_first_line(error)}") from error


#: config fields that count something: an integer of at least 1
SIZE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
               "max_position_embeddings", "type_vocab_size", "rpe_max_distance")


def wrong_type_in_config(config_file) -> str | None:
    """The first value of a ``config.json`` whose type differs from the default's (a string where a
    number belongs, 2.0 or [2] where an integer does: the config class accepts some and the model
    then fails with an unrelated message), or a size below 1 (:data:`SIZE_FIELDS`), or a
    probability outside [0, 1]; None when every value is plausible."""
    import json

    from transformers import CONFIG_MAPPING

    try:
        values = json.loads(config_file.read_text(encoding="utf-8"))
        defaults = CONFIG_MAPPING[values["model_type"]]()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(values, dict):
        return f"{config_file} holds {type(values).__name__}, not a mapping of settings"
    for key, value in values.items():
        problem = wrong_value(key, value, getattr(defaults, key, None))
        if problem:
            return f"{config_file}: {key} is {value!r}, expected {problem}"
    return None


def wrong_value(key: str, value, default) -> str | None:
    """What ``value`` of config field ``key`` should be, in words, when it is not that; else None
    (None is allowed where the default is not a size: HF configs leave token ids unset so)."""
    if key in SIZE_FIELDS and isinstance(default, int) and (type(value) is not int or value < 1):
        return f"an integer of at least 1 like {default!r}"
    if value is None or default is None:
        return None
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"true or false like {str(default).lower()}"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, int) and not (number and float(value).is_integer()):
        return f"an integer like {default!r}" if number else f"a number like {default!r}"
    if isinstance(default, int) and type(value) is not int:
        return f"an integer like {default!r}"
    if isinstance(default, float) and not (number and math.isfinite(value)):
        return f"a number like {default!r}"
    if key.endswith("_prob") and not 0 <= value <= 1:
        return f"a probability between 0 and 1 like {default!r}"
    if isinstance(default, str) and not isinstance(value, str):
        return f"a string like {default!r}"
    return None


def load_model(model_class, path: str):
    """``model_class.from_pretrained(path)`` (quietly), or one :class:`~pe_lib.errors.InputError`
    naming the folder when its weights cannot be read (missing, truncated, wrong shapes)."""
    from safetensors import SafetensorError

    from pe_lib.model import quiet_transformers

    try:
        with quiet_transformers():
            return model_class.from_pretrained(path, trust_remote_code=False)
    except (OSError, ValueError, RuntimeError, SafetensorError) as error:
        raise InputError(f"cannot load the model weights of {path}: {_first_line(error)}") from error


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def check_weights(path: str) -> None:
    """Fail with one line, before any work, when a local model folder's weights cannot be used: a
    folder written by pe_lib must match its manifest; ``model.safetensors`` must have a readable
    header and the length that header promises (a truncated file does not)."""
    from pathlib import Path

    from safetensors import SafetensorError, safe_open

    from pe_lib.io import MANIFEST, verify_manifest

    folder = Path(path).expanduser()
    if not folder.is_dir():
        return  # a hub id: transformers checks what it downloads
    if (folder / MANIFEST).exists():
        verify_manifest(folder)
    weights = folder / "model.safetensors"
    if weights.exists():
        try:
            with safe_open(str(weights), "pt"):
                pass
        except (OSError, SafetensorError) as error:
            raise InputError(f"cannot read the model weights {weights}: {_first_line(error)}") from error
