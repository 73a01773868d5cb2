"""Fine-tuning tasks: GLUE and SQuAD from the hub, or their packaged offline analogues, one schema.

Every task comes back as a :class:`Task` with a ``datasets.DatasetDict`` of ``train``,
``validation`` and ``test`` in the canonical schema, whatever its origin:

* classification / regression: ``sentence1``, optional ``sentence2``, ``label`` (a
  ``datasets.ClassLabel`` with the task's label names, stored as int64, or a float32 score);
* span prediction: exactly SQuAD's ``id, title, context, question, answers{text, answer_start}``.

Hub splits: ``validation`` is carved out of the hub's train split with the task seed (by article
for SQuAD) and ``test`` is the hub's validation split, since GLUE/SQuAD test labels are hidden.
Packaged analogues are prepared once into ``<cache>/prepared/task-<name>-<key>/`` as JSON lines
with a data card; the key hashes the seed, the builder version and the sources' sha256.
"""
from __future__ import annotations

import json
import os
import random
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pe_lib.data import corpus as corpus_module
from pe_lib.data.builders import BUILDERS, SPLITS, Built
from pe_lib.data.cache import cache_root, content_key, read_json
from pe_lib.data.cards import write_card
from pe_lib.data.hub import check_source_choice, hub_or_packaged, load_hub_dataset, reads_packaged
from pe_lib.data.sources import SourceUnavailable, get_source
from pe_lib.errors import InputError
from pe_lib.io import manifested_dir, verified

if TYPE_CHECKING:  # datasets is imported where rows become datasets: a dry run, which reads none, skips it
    import datasets

#: bump when any builder changes its output: part of every prepared task key
BUILD_VERSION = 1
TASK_SEED = 1234
DEFAULT_MAX_TRAIN = 4000
HUB_DEV_FRACTION = 0.1
HUB_DEV_MAX = 2000


@dataclass(frozen=True)
class TaskMeta:
    """What a fine-tuning loop needs to know about a task, whichever source it came from."""

    name: str
    kind: str
    num_labels: int
    metrics: tuple[str, ...]
    label_names: tuple[str, ...] = ()
    version_2_with_negative: bool = False

    @property
    def is_regression(self) -> bool:
        """True for a single-output regression task (STS-B style)."""
        return self.kind == "regression"


@dataclass(frozen=True)
class TaskSpec:
    """A task: its metadata, its hub source (by registry name) and its packaged analogue (by builder name)."""

    meta: TaskMeta
    #: None for a task constructed from packaged text that has no hub counterpart (always packaged)
    hub_source: str | None
    packaged: str | None = None
    analogue: str = ""
    #: whether the label depends on word order by construction (a span task: where the answer is);
    #: the book reports order-sensitive and order-free tasks in separate columns
    order_sensitive: bool = False
    #: What the data card says about the task beyond its data: ``tests`` (what it tests),
    #: ``without positions`` (whether a model without positions can solve it, and why),
    #: ``cheap baselines`` (the strongest cheap baselines, computed beside every table); its size
    #: is in the card's split statistics
    about: tuple[tuple[str, str], ...] = ()


def _glue(name: str, kind: str, metrics: tuple[str, ...], labels: tuple[str, ...], packaged: str | None = None,
          analogue: str = "", order_sensitive: bool = False) -> TaskSpec:
    meta = TaskMeta(name, kind, 1 if kind == "regression" else len(labels), metrics, labels)
    return TaskSpec(meta, f"glue-{name}", packaged, analogue, order_sensitive, ABOUT.get(name, ()))


_CHEAP = "cheap baselines"
#: The card text of the tasks of the position suite (issue 36)
ABOUT: dict[str, tuple[tuple[str, str], ...]] = {
    "sst2": (("tests", "sentence sentiment (real human labels): the order-free control of the suite"),
             ("without positions", "largely yes: sentiment words decide most snippets, so bag of words is a strong "
                                   "baseline; a gain over it needs more than word identities"),
             (_CHEAP, "best constant (the validation majority); bag of words (logistic regression on word counts)")),
    "cola": (("tests", "word-order well-formedness: a held-out sentence as written, or with two adjacent words swapped"),
             ("without positions", "no, by construction: both labels have the same kind of words; only their order differs"),
             (_CHEAP, "best constant (Matthews correlation 0); bag of words (near 0: it sees no order)")),
    "word_order": (("tests", "word-order well-formedness as minimal pairs: every held-out sentence as written and with "
                             "two adjacent words swapped"),
                   ("without positions", "no, by construction: the two members of a pair have the same words, so any "
                                         "order-free model is at Matthews correlation 0 in expectation"),
                   (_CHEAP, "best constant (Matthews correlation 0); bag of words (at chance by construction)")),
    "paws": (("tests", "paraphrase by word order across two sentences (PAWS): a King James verse and its World "
                       "English Bible rendering, or that rendering with two names or nouns swapped (who does what to whom)"),
             ("without positions", "no, by construction: a pair has the same words, as a multiset, whichever its label, "
                                   "so any order-free model is at 50% in expectation"),
             (_CHEAP, "best constant (the validation majority, about 50%); bag of words (the words of each sentence "
                      "and the words they share: at chance by construction)")),
    "cloze": (("tests", "extractive QA by alignment: find in a World English Bible passage the name or noun that a "
                        "King James verse blanks; the translations word the verse differently, so the answer is where "
                        "the words around the blank reappear"),
              ("without positions", "in part: the answer is a word of the passage that the question lacks (the order-free "
                                    "'absent word' rule finds the verse and guesses among its other such words); choosing "
                                    "the right one needs the words next to the blank, i.e. word order"),
              (_CHEAP, "random candidate (a content word of the passage); absent word (order-free: a content word of "
                       "the best-matching sentence that the question lacks); neighbour match (reads order: the word "
                       "whose neighbours equal the blank's at the same distances, the strongest cheap rule)")),
    "cloze_v2": (("tests", "the cloze task where half of the questions are a verse of the same chapter outside the "
                           "passage: the model must also learn when not to answer"),
                 ("without positions", "in part: an unanswerable question shares few words with the passage, which an "
                                       "order-free rule sees; answering the others is the cloze task"),
                 (_CHEAP, "best constant (always 'no answer', about half); absent word and neighbour match, each with a "
                          "'no answer' threshold on its confidence chosen on the validation split")),
}


TASKS: dict[str, TaskSpec] = {
    "cola": _glue("cola", "classification", ("matthews_correlation",), ("unacceptable", "acceptable"),
                  "word-order", "word-order acceptability on held-out corpus sentences (constructed labels)", order_sensitive=True),
    "sst2": _glue("sst2", "classification", ("accuracy",), ("negative", "positive"),
                  "sentiment", "Rotten Tomatoes critic snippets, fresh vs rotten"),
    "mrpc": _glue("mrpc", "classification", ("accuracy", "f1"), ("not_equivalent", "equivalent"),
                  "paraphrase", "KJV/WEB aligned verses vs neighbouring verses"),
    "stsb": _glue("stsb", "regression", ("pearson", "spearmanr"), (),
                  "regression", "VADER mean human sentiment scores"),
    "qnli": _glue("qnli", "classification", ("accuracy",), ("entailment", "not_entailment")),
    "rte": _glue("rte", "classification", ("accuracy",), ("entailment", "not_entailment")),
    "squad": TaskSpec(TaskMeta("squad", "span", 0, ("exact_match", "f1")), "squad", "spans",
                      "WordNet 'which word has this gloss' spans", order_sensitive=True),
    "squad_v2": TaskSpec(TaskMeta("squad_v2", "span", 0, ("exact_match", "f1"), version_2_with_negative=True),
                         "squad_v2", "spans-v2", "WordNet gloss spans with unanswerable questions", order_sensitive=True),
    "word_order": TaskSpec(TaskMeta("word_order", "classification", 2, ("matthews_correlation",), ("swapped", "as written")),
                           None, "word-order-pairs", "CoLA's role as minimal pairs: every sentence held out of the "
                           "pretraining corpus as written and with two adjacent words swapped; same words either way, "
                           "so bag of words is at chance by construction", order_sensitive=True, about=ABOUT["word_order"]),
    "paws": TaskSpec(TaskMeta("paws", "classification", 2, ("accuracy",), ("not_paraphrase", "paraphrase")), "paws",
                     "order-pairs", "GLUE's role, paraphrase by word order (PAWS-style): a KJV verse vs its WEB rendering "
                     "or that rendering with two names or nouns swapped; same words either way, so bag of words is "
                     "at chance by construction", order_sensitive=True, about=ABOUT["paws"]),
    "cloze": TaskSpec(TaskMeta("cloze", "span", 0, ("exact_match", "f1")), None, "cloze",
                      "SQuAD's role, extractive QA by cloze: a KJV verse with a name or noun blanked, answered "
                      "from a WEB passage holding its rendering", order_sensitive=True, about=ABOUT["cloze"]),
    "cloze_v2": TaskSpec(TaskMeta("cloze_v2", "span", 0, ("exact_match", "f1"), version_2_with_negative=True), None,
                         "cloze-v2", "SQuAD 2.0's role: the cloze task with half of the questions from a verse "
                         "outside the passage (no answer)", order_sensitive=True, about=ABOUT["cloze_v2"]),
}

#: The text columns of each sentence-level task's hub dataset (GLUE configs and PAWS)
_HUB_TEXT = {"cola": ("sentence", None), "sst2": ("sentence", None), "mrpc": ("sentence1", "sentence2"),
             "stsb": ("sentence1", "sentence2"), "qnli": ("question", "sentence"), "rte": ("sentence1", "sentence2"),
             "paws": ("sentence1", "sentence2")}
def squad_features() -> datasets.Features:
    """The canonical features of a span task (SQuAD's)."""
    import datasets

    return datasets.Features({
        "id": datasets.Value("string"), "title": datasets.Value("string"), "context": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answers": {"text": datasets.List(datasets.Value("string")), "answer_start": datasets.List(datasets.Value("int32"))},
    })


def features_for(meta: TaskMeta, paired: bool) -> datasets.Features:
    """The canonical features of a task (``paired``: whether it has ``sentence2``). Class labels
    are a ``ClassLabel`` named as GLUE names them, so tables and pipelines show "positive", not
    ``LABEL_1``; the stored values (0 .. n-1) and the order of the examples are those of plain ints."""
    import datasets

    if meta.kind == "span":
        return squad_features()
    columns = {"sentence1": datasets.Value("string")}
    if paired:
        columns["sentence2"] = datasets.Value("string")
    names = list(meta.label_names)
    columns["label"] = datasets.Value("float32") if meta.is_regression else datasets.ClassLabel(names=names)
    return datasets.Features(columns)


@dataclass
class Task:
    """A loaded task: metadata, the three splits, where they came from, and its data card."""

    meta: TaskMeta
    splits: datasets.DatasetDict
    origin: str
    card: dict[str, Any] = field(default_factory=dict)
    #: the prepared folder its rows were read from; None for a hub task (or one made in memory)
    folder: Path | None = None

    @property
    def text_columns(self) -> tuple[str, ...]:
        """``("sentence1",)`` or ``("sentence1", "sentence2")``; ``()`` for span tasks."""
        names = self.splits["train"].column_names
        return tuple(c for c in ("sentence1", "sentence2") if c in names) if self.meta.kind != "span" else ()


def get_task(name: str) -> TaskSpec:
    """The registered task called ``name``; ValueError listing the valid names otherwise."""
    try:
        return TASKS[name]
    except KeyError:
        raise InputError(f"unknown task {name!r}; valid tasks: {', '.join(TASKS)}") from None


# ---------------------------------------------------------------- hub path

def convert_glue(raw: datasets.DatasetDict, spec: TaskSpec, seed: int = TASK_SEED) -> datasets.DatasetDict:
    """Hub GLUE (or PAWS) splits -> canonical columns; validation carved from train, test = hub validation."""
    import datasets

    first, second = _HUB_TEXT[spec.meta.name]
    features = features_for(spec.meta, paired=second is not None)

    def canonical(ds: datasets.Dataset) -> datasets.Dataset:
        ds = ds.rename_columns({first: "sentence1"} | ({second: "sentence2"} if second else {}))
        return ds.select_columns(list(features)).cast(features)

    train = canonical(raw["train"])
    n_dev = min(HUB_DEV_MAX, max(1, round(len(train) * HUB_DEV_FRACTION)))
    parts = train.train_test_split(test_size=n_dev, seed=seed)
    return datasets.DatasetDict(train=parts["train"], validation=parts["test"], test=canonical(raw["validation"]))


def convert_squad(raw: datasets.DatasetDict, seed: int = TASK_SEED) -> datasets.DatasetDict:
    """Hub SQuAD splits -> canonical features; validation = a seeded tenth of train's articles."""
    import datasets

    features = squad_features()
    train = raw["train"].select_columns(list(features)).cast(features)
    titles = sorted(set(train["title"]))
    random.Random(seed).shuffle(titles)
    dev_titles = set(titles[:max(1, round(len(titles) * HUB_DEV_FRACTION))])
    in_dev = [t in dev_titles for t in train["title"]]
    return datasets.DatasetDict(
        train=train.select([i for i, d in enumerate(in_dev) if not d]).shuffle(seed=seed),
        validation=train.select([i for i, d in enumerate(in_dev) if d]),
        test=raw["validation"].select_columns(list(features)).cast(features))


def convert_hub(raw: datasets.DatasetDict, spec: TaskSpec, seed: int = TASK_SEED) -> datasets.DatasetDict:
    """Hub-schema splits of a task -> canonical train/validation/test."""
    return convert_squad(raw, seed) if spec.meta.kind == "span" else convert_glue(raw, spec, seed)


# ---------------------------------------------------------------- packaged path

def _task_key(spec: TaskSpec, seed: int) -> str:
    assert spec.packaged is not None
    payload: dict[str, Any] = {"task": spec.meta.name, "builder": spec.packaged, "version": BUILD_VERSION,
                               "seed": seed,
                               "sources": {n: get_source(n).sha256 for n in BUILDERS[spec.packaged].sources}}
    if spec.packaged == "word-order":  # it reads the corpus's held-out documents
        payload["corpus"] = [corpus_module.BUILD_VERSION, corpus_module.VALIDATION_FRACTION, corpus_module.SPLIT_SEED]
    return content_key(payload)


def packaged_folder(name: str, cache_dir: str | os.PathLike[str] | None = None, seed: int = TASK_SEED) -> Path:
    """Where the packaged analogue of a task is (or would be) prepared."""
    spec = get_task(name)
    if spec.packaged is None:
        raise ValueError(f"task {name!r} has no packaged offline analogue")
    key = _task_key(spec, seed)
    return cache_root(cache_dir) / "prepared" / f"task-{name}-{key}"


def prepare_task(name: str, cache_dir: str | os.PathLike[str] | None = None, seed: int = TASK_SEED) -> Path:
    """Build (once) the packaged analogue of a task as JSON lines plus a data card; return its folder."""
    spec = get_task(name)
    folder = packaged_folder(name, cache_dir, seed)
    if verified(folder, f"prepared task {name!r}"):  # absent, or corrupt (reported): built again
        return folder
    assert spec.packaged is not None
    built = BUILDERS[spec.packaged].build(cache_dir, seed)
    _check_nonempty(name, {s: len(rows) for s, rows in built.splits.items()})
    with manifested_dir(folder, f"prepared task {name!r}") as work:
        for split in SPLITS:
            with open(work / f"{split}.jsonl", "w", encoding="utf-8") as handle:
                handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in built.splits[split])
        splits = _as_datasets(spec.meta, built.splits)
        write_card(work, packaged_card(spec, built, splits, seed), title=f"Task {name} (packaged analogue)")
    return folder


def _as_datasets(meta: TaskMeta, rows: dict[str, list[dict[str, Any]]]) -> datasets.DatasetDict:
    import datasets

    paired = any("sentence2" in r for r in rows["train"][:1])
    features = features_for(meta, paired)
    return datasets.DatasetDict({s: datasets.Dataset.from_list(rows[s], features=features) for s in SPLITS})


def prepared_folder(name: str, source: str = "auto", cache_dir: str | os.PathLike[str] | None = None,
                    seed: int = TASK_SEED) -> Path | None:
    """The prepared folder that :func:`load_task` under ``source`` would read the task from, where
    it is prepared already and intact; None where it is not, or where the hub would be read."""
    check_source_choice(source)
    spec = get_task(name)
    if spec.packaged is None or source == "hub" or (spec.hub_source is not None and not reads_packaged(source)):
        return None
    folder = packaged_folder(name, cache_dir, seed)
    return folder if verified(folder, f"prepared task {name!r}") else None


def _read_packaged(spec: TaskSpec, folder: Path) -> datasets.DatasetDict:
    rows = {s: [json.loads(line) for line in (folder / f"{s}.jsonl").read_text(encoding="utf-8").splitlines()]
            for s in SPLITS}
    _check_nonempty(spec.meta.name, {s: len(r) for s, r in rows.items()})
    return _as_datasets(spec.meta, rows)


# ---------------------------------------------------------------- cards and loading

def _check_nonempty(name: str, sizes: dict[str, int]) -> None:
    empty = [s for s in SPLITS if not sizes.get(s)]
    if empty:
        raise ValueError(f"task {name!r}: empty split(s) {empty} (sizes {sizes}); the source has too little data")


def split_stats(meta: TaskMeta, splits: datasets.DatasetDict) -> dict[str, Any]:
    """Size and label balance of each split (class counts, score summary, or answerable share)."""
    stats: dict[str, Any] = {}
    for split in SPLITS:
        ds = splits[split]
        column = "answers" if meta.kind == "span" else "label"
        values = ds[:][column]  # read at once (iterating ds[column] reads row by row, 100x slower)
        entry: dict[str, Any] = {"examples": len(ds)}
        if meta.kind == "span":
            answerable = sum(bool(a["text"]) for a in values)
            entry |= {"answerable": answerable, "unanswerable": len(ds) - answerable}
        elif meta.is_regression:
            labels = [float(x) for x in values]
            entry |= {"label_mean": round(statistics.fmean(labels), 4), "label_sd": round(statistics.pstdev(labels), 4),
                      "label_min": round(min(labels), 4), "label_max": round(max(labels), 4)}
        else:
            counts = Counter(int(x) for x in values)
            entry["labels"] = {meta.label_names[k] if 0 <= k < len(meta.label_names) else str(k): counts[k]
                               for k in sorted(counts)}
        stats[split] = entry
    return stats


def packaged_card(spec: TaskSpec, built: Built, splits: datasets.DatasetDict, seed: int) -> dict[str, Any]:
    """The data card of a packaged analogue: what it stands in for, its sources, notes and split stats."""
    return {
        "task": spec.meta.name, "origin": f"packaged:{spec.packaged}",
        "stands_in_for": get_source(spec.hub_source).requirement if spec.hub_source else "nothing on the hub: constructed here",
        "analogue": spec.analogue, "kind": spec.meta.kind, "metrics": list(spec.meta.metrics), "seed": seed,
        "notes": built.notes,
        "sources": {n: {"fetched_as": get_source(n).requirement, "licence": get_source(n).licence}
                    for n in BUILDERS[str(spec.packaged)].sources},
        "splits": split_stats(spec.meta, splits),
    }


def _cap_train(splits: datasets.DatasetDict, max_train: int | None) -> datasets.DatasetDict:
    if max_train is None or len(splits["train"]) <= max_train:
        return splits
    import datasets

    return datasets.DatasetDict(train=splits["train"].select(range(max_train)), validation=splits["validation"],
                                test=splits["test"])


def load_task(name: str, source: str = "auto", cache_dir: str | os.PathLike[str] | None = None,
              max_train: int | None = DEFAULT_MAX_TRAIN, seed: int = TASK_SEED) -> Task:
    """A fine-tuning task with train/validation/test in the canonical schema.

    ``source``: ``auto`` (hub unless offline or failing, then the packaged analogue with a
    warning), ``hub`` or ``packaged``. ``max_train`` caps the (already shuffled) train split;
    ``None`` keeps all of it. The card describes the splits returned.
    """
    spec = get_task(name)
    if spec.hub_source is None:
        if source == "hub":
            raise SourceUnavailable(f"task {name!r} has no hub source: it is constructed from packaged text; "
                                    "use source='packaged' or 'auto'")
        check_source_choice(source)
        return _finish(spec, *_packaged(spec, cache_dir, seed), max_train)
    hub_src = get_source(spec.hub_source)

    def from_hub() -> tuple[datasets.DatasetDict, dict[str, Any], None]:
        raw = load_hub_dataset(hub_src)
        return convert_hub(raw, spec, seed), {
            "task": name, "origin": f"hub:{hub_src.requirement}", "revision": hub_src.revision,
            "licence": hub_src.licence, "seed": seed,
            "notes": "validation = a seeded part of the hub train split; test = the hub validation split"}, None

    def from_packages() -> tuple[datasets.DatasetDict, dict[str, Any], Path]:
        return _packaged(spec, cache_dir, seed)

    loaded, _ = hub_or_packaged(f"task {name!r}", hub_src, from_hub, from_packages if spec.packaged else None, source)
    return _finish(spec, *loaded, max_train)


def _packaged(spec: TaskSpec, cache_dir: str | os.PathLike[str] | None,
              seed: int) -> tuple[datasets.DatasetDict, dict[str, Any], Path]:
    """The packaged analogue's splits, card and folder (prepared once)."""
    folder = prepare_task(spec.meta.name, cache_dir, seed)
    return _read_packaged(spec, folder), read_json(folder / "card.json"), folder


def _finish(spec: TaskSpec, splits: datasets.DatasetDict, card: dict[str, Any], folder: Path | None,
            max_train: int | None) -> Task:
    _check_nonempty(spec.meta.name, {s: len(splits[s]) for s in SPLITS})
    splits = _cap_train(splits, max_train)
    card = card | ({"about": dict(spec.about)} if spec.about else {}) | {"max_train": max_train,
                                                                          "splits": split_stats(spec.meta, splits)}
    return Task(spec.meta, splits, card["origin"], card, folder)
