"""Options shared by several subcommands, and the two defaults of their ``--profile``."""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from pe_lib.errors import InputError

#: The published book's profile, whose results are committed (``results/cpu-next``): the default of the
#: commands that read or check those results (``book``, ``publish colab``, ``publish readme``,
#: ``verify``). The Makefile's ``PROFILE`` repeats it (make cannot import it);
#: ``tests/book/publishing/test_publish.py`` checks that the two agree.
PUBLISHED_PROFILE = "cpu"
#: The default of the commands that compute into a profile's store (``run``, ``pretrain``,
#: ``finetune``, ``adopt``): the profile of tiny models, minutes on 2 cores, so that a command
#: given no ``--profile`` never starts the published profile's many hours of training.
COMPUTING_PROFILE = "smoke"


def checkout_root() -> Path | None:
    """The repository checkout this package runs from (an editable install, or ``python -m`` in a
    clone), or None for an installed copy (``pip install .``): that has no notebooks, book
    configuration, ``pyproject.toml`` or committed results."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir() else None


def installed_repository_url() -> str:
    """``[project.urls] Repository`` as the installed distribution's metadata keeps it."""
    from importlib.metadata import metadata

    urls = dict(entry.split(", ", 1) for entry in metadata("pe-lib").get_all("Project-URL") or [])
    return urls.get("Repository", "the project's repository")


def need_checkout(what: str) -> Path:
    """The checkout's root, or one :class:`InputError` saying that ``what`` needs one (and how to get it)."""
    root = checkout_root()
    if root is None:
        url = installed_repository_url()
        raise InputError(f"{what} needs a clone of the repository (its notebooks, book configuration and results), "
                         f"and this is an installed copy: git clone {url}, then run it in the clone (pip install -e .)")
    return root


def add_profile(parser: argparse.ArgumentParser, default: str = COMPUTING_PROFILE) -> None:
    """``--profile`` (one of the profiles registry's, :data:`pe_book.experiments.profiles.PROFILES`),
    ``--cache`` and ``--no-progress``."""
    from pe_book.experiments.profiles import PROFILES

    parser.add_argument("--profile", default=default, choices=sorted(PROFILES), help=f"experiment profile (default: {default})")
    parser.add_argument("--cache", default=None, help="data cache folder (default: $PE_LIB_CACHE or ~/.cache/pe-book)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def add_set(parser: argparse.ArgumentParser) -> None:
    """``--set FIELD.PATH=VALUE`` (repeatable, into ``args.overrides``): a profile field overridden
    (:mod:`pe_book.experiments.overrides`)."""
    parser.add_argument("--set", action="append", default=[], metavar="FIELD.PATH=VALUE", dest="overrides",
                        help="override a profile field, e.g. pretrain.steps=2, model.hidden_size=64, tasks=cola,sst2 "
                             "(repeatable); an overridden value is part of the keys of the artifacts it enters")


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


#: The files of a tokenizer folder that BertTokenizer reads, one of which it needs (its save_pretrained
#: writes tokenizer.json; BERT's own folders have vocab.txt).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")


def tokenizer_folder(text: str) -> str:
    """An argparse type: a folder that holds a tokenizer (one of :data:`TOKENIZER_FILES`); from an
    empty one BertTokenizer would make a tokenizer of its 5 special tokens alone."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"no folder {text}")
    if not any(os.path.isfile(os.path.join(text, name)) for name in TOKENIZER_FILES):
        raise argparse.ArgumentTypeError(f"{text} holds no tokenizer: expected "
                                         f"{' or '.join(TOKENIZER_FILES)} in it (what a tokenizer's "
                                         "save_pretrained writes)")
    return text


def new_file(text: str) -> str:
    """An argparse type: a file to write, in a folder that exists (and not a folder itself)."""
    folder = os.path.dirname(text) or "."
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"cannot write {text}: no folder {folder}")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"cannot write {text}: it is a folder; give a file name")
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
    if local.exists() and not local.is_dir():
        raise InputError(f"{path} is a file; expected a model folder (with config.json and "
                         "model.safetensors) or a hub id")
    problem = wrong_type_in_config(local / "config.json") if local.is_dir() else None
    if problem:  # checked first: a config class may accept 2.0 heads or [2] layers and fail deep in the model
        raise InputError(f"cannot read the model config of {path}: {problem}")
    try:
        return AutoConfig.from_pretrained(path, trust_remote_code=False)
    except (OSError, ValueError, TypeError, KeyError) as error:  # HF's errors for a missing or malformed config
        raise InputError(f"cannot read the model config of {path}: {_first_line(error)}") from error


def wrong_type_in_config(config_file) -> str | None:
    """The first value of a ``config.json`` whose type differs from the default's (a string where a
    number belongs, 2.0 or [2] where an integer does: the config class accepts some and the model
    then fails with an unrelated message), or a size out of range (:data:`pe_lib.config.SIZE_FIELDS`),
    or a probability outside [0, 1]; None when every value is plausible."""
    import json

    from transformers import CONFIG_MAPPING

    from pe_lib.config import wrong_value

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


def load_model(path: str, config):
    """The model of a folder or hub id as the class that saved it (:func:`saved_class`), quietly;
    or one :class:`~pe_lib.errors.InputError` naming the folder when its weights cannot be read
    (missing, truncated) or do not fit its ``config``: a parameter of another shape, or one missing
    (it would be random) or unexpected (:func:`parameter_problem`)."""
    from safetensors import SafetensorError

    from pe_lib.model import quiet_transformers

    try:
        with quiet_transformers():
            model, info = saved_class(config).from_pretrained(
                path, trust_remote_code=False, output_loading_info=True, ignore_mismatched_sizes=True)
    except (OSError, ValueError, RuntimeError, SafetensorError) as error:
        raise InputError(f"cannot load the model weights of {path}: {_first_line(error)}") from error
    problem = parameter_problem(info, config)
    if problem:
        raise InputError(f"cannot load the model weights of {path}: {problem}")
    return model


def saved_class(config):
    """The model class that saved ``config`` (the first of its ``architectures`` that pe_lib or
    transformers defines), whose parameters its weights hold; ``AutoModel`` when it names none."""
    import transformers
    from transformers import AutoModel, PreTrainedModel

    import pe_lib.model

    for name in config.architectures or ():
        found = getattr(pe_lib.model, name, None) or getattr(transformers, name, None)
        if isinstance(found, type) and issubclass(found, PreTrainedModel):
            return found
    return AutoModel


def parameter_problem(info: dict, config) -> str | None:
    """What is wrong with the parameters a model was loaded with (``info``: from_pretrained's
    loading info), in words, or None: one of another shape than the config gives, one missing (it
    was initialised at random), or, for a PEBert model, one it has no place for (the position table
    of another variant). Other HF checkpoints may keep heads their model does not use."""
    from pe_lib.config import PEBertConfig

    def names(keys) -> str:
        keys = sorted(keys)
        return ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")

    if info["mismatched_keys"]:
        key, saved, wanted = sorted(info["mismatched_keys"])[0]
        return (f"{key} is {tuple(saved)} in its weights and {tuple(wanted)} by its config.json "
                f"({len(info['mismatched_keys'])} parameter(s) differ): the config is not the one of these "
                "weights")
    if info["missing_keys"]:
        return (f"its weights lack {names(info['missing_keys'])}, which would be random: the file is "
                "incomplete")
    if info["unexpected_keys"] and isinstance(config, PEBertConfig):
        return (f"its weights hold {names(info['unexpected_keys'])}, which a {config.position_embedding} "
                "model has no place for: the config is not the one of these weights")
    return None


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
