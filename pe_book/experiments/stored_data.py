"""What a book built from stored results reads of the data, kept beside the results.

Every artifact key is formed from the data the pipeline trains on (the prepared corpus's name and
the tokenizer's vocabulary, :meth:`Results.data_fingerprint`; each task's content,
:meth:`Results.task_fingerprint`), and the chapters show where the data came from (the corpus's
data card, each task's origin and split sizes). Getting that data means preparing it: Debian
packages fetched by ``apt-get download``, a tokenizer trained on the corpus. A computing run
records it instead, once, in ``<store>/data/`` (:func:`record_data`): ``data.json`` with the
fingerprints, the corpus card and each task's origin and sizes, and the tokenizer's own files, all
under a manifest. The stored results (:class:`~pe_book.experiments.results.Results`, which reads and
never computes) take them from there, or from another profile's record beside it that holds the
same data (:func:`same_rows`), and need no data cache; where no record fits (absent, damaged, or
made with other data settings than its profile's: an overridden corpus cap, tokenizer or task cap),
they read the data as the pipeline does.
Every key is the one the data gives, so no artifact key changes.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pe_book.experiments.profiles import Profile
from pe_lib.errors import CorruptFileError
from pe_lib.io import manifested_dir, read_json, verify_manifest, write_json

#: The record's folder inside a profile's store folder, and its file of facts.
RECORD = "data"
FACTS = "data.json"
SPLITS = ("train", "validation", "test")


def data_settings(profile: Profile) -> dict[str, Any]:
    """What of ``profile`` the pretraining data's fingerprint depends on: a record made with
    other settings is not read for it."""
    return {"data_source": profile.data_source, "tokenizer": dict(profile.tokenizer),
            "corpus_tokens": profile.corpus_tokens, "seq_len": profile.seq_len}


def task_settings(profile: Profile, task: str) -> dict[str, Any]:
    """What of ``profile`` a task's fingerprint and sizes depend on (its caps)."""
    return {"data_source": profile.data_source, "max_train": profile.max_train_for(task), "max_eval": profile.task_max_eval}


def recorded_tasks(profile: Profile) -> list[str]:
    """The tasks of ``profile``'s data record: its own, then its :attr:`~Profile.recorded_tasks`
    (those a chapter reads under its recipe: chapter 13 prices cpu-glue's under the scale study's)."""
    return [*profile.tasks, *(task for task in profile.recorded_tasks if task not in profile.tasks)]


def record_data(runner, tasks: list[str]) -> Path:
    """Write the data record (the module docstring) of ``runner``, a
    :class:`~pe_book.experiments.runner.Runner`, for ``tasks``, reading the data as the runner does
    (prepared when missing); returns its folder. Written whole, atomically."""
    folder = runner.store.root / RECORD
    given = runner._given_data  # text given directly (pe-book pretrain --corpus-file, a test): no card
    corpus = {"origin": "text given directly", "card": {}} if given else {"origin": runner.corpus.origin,
                                                                         "card": runner.corpus.card}
    facts = {"settings": data_settings(runner.profile), "data": runner.data_fingerprint(), "corpus": corpus,
             "tasks": {task: {"settings": task_settings(runner.profile, task), "fingerprint": runner.task_fingerprint(task),
                              "origin": runner.task(task).origin,
                              "examples": {split: len(runner.task(task).splits[split]) for split in SPLITS}}
                       for task in tasks}}
    with manifested_dir(folder, "data record") as work:
        write_json(work / FACTS, facts)
        runner.tokenizer.save_pretrained(work)
    return folder


def same_rows(facts: dict, settings: dict) -> bool:
    """Whether a recorded task (``facts``: its settings and split sizes) has the rows a profile of
    ``settings`` reads: the same source, and each cap either the same or binding neither (a cap at
    or above a split's size leaves it whole, so its fingerprint is the uncapped one)."""
    def fits(cap, recorded_cap, sizes) -> bool:
        whole = all(recorded_cap is None or n < recorded_cap for n in sizes)
        return cap == recorded_cap or (whole and all(cap is None or n <= cap for n in sizes))

    recorded, sizes = facts["settings"], facts["examples"]
    return (settings["data_source"] == recorded["data_source"]
            and fits(settings["max_train"], recorded["max_train"], [sizes["train"]])
            and fits(settings["max_eval"], recorded["max_eval"], [sizes["validation"], sizes["test"]]))


def every_record(store_root: Path) -> list[dict]:
    """The data records of every profile beside ``store_root`` (in the same results folder), its
    own first: the task data of one profile is often another's (chapter 13 prices the cpu profile
    under the study's recipe)."""
    others = sorted(p for p in store_root.parent.glob(f"*/{RECORD}") if p.parent != store_root)
    return [facts for facts in map(read_record, [store_root, *(p.parent for p in others)]) if facts is not None]


def read_record(store_root: Path) -> dict | None:
    """The facts of the data record in ``store_root``, or None: none there, or one failing its
    manifest (named in one warning)."""
    folder = store_root / RECORD
    if not folder.exists():
        return None
    try:
        verify_manifest(folder, [FACTS])
    except CorruptFileError as error:
        warnings.warn(f"ignoring the damaged data record {folder} ({error}); the data is read instead "
                      "(`pe-book run --record-data` writes the record again)", stacklevel=2)
        return None
    return read_json(folder / FACTS)


def record_differences(runner) -> list[str]:
    """What the data record in the store of ``runner`` (a :class:`~pe_book.experiments.runner.Runner`)
    identifies differently from the data ``runner`` reads (the pretraining data, or a task by name), where the record was made with the profile's
    own settings; empty when it agrees, or where there is no such record. A stale record would let a
    book from stored results find artifacts that this data's keys no longer name."""
    facts = read_record(runner.store.root)
    if facts is None or facts["settings"] != data_settings(runner.profile):
        return []
    stale = [] if facts["data"] == runner.data_fingerprint() else ["the pretraining data"]
    return stale + [task for task, recorded in facts["tasks"].items()
                    if task in recorded_tasks(runner.profile) and recorded["settings"] == task_settings(runner.profile, task)
                    and recorded["fingerprint"] != runner.task_fingerprint(task)]


@dataclass(frozen=True)
class StoredCorpus:
    """The prepared corpus as a chapter shows it: its origin and data card."""
    origin: str
    card: dict


@dataclass(frozen=True)
class StoredTask:
    """A task as a chapter and a cost estimate read it: its spec, origin and split sizes (``splits``
    maps each split to a ``range`` of its size; no example is kept)."""
    meta: Any
    origin: str
    splits: dict[str, range]
