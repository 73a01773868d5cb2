r"""Baselines beside every score table: what a reader needs to tell a model from chance.

A score means little without the score of something that does not learn from positions, or does
not learn at all. For every table of the book this module computes, with the same metric code, on
the same training examples the models see (``profile.max_train_for(task)``) and the same validation and
test examples they are scored on (``profile.task_max_eval``):

* **the best constant predictor** of each metric (:func:`best_constant`). The constant is chosen
  on the validation split, per metric, and its test score reported, so that choosing it does not
  peek at the test labels. For a binary task this is what the metric rewards: "always positive"
  for F1 (score ``2p / (1 + p)`` with ``p`` the share of positives; "always negative" scores 0),
  the majority label for accuracy; every constant has Matthews correlation 0. For regression the
  constant is the mean training label, whose correlations are undefined and count 0
  (``metrics.scale_metric``). A task's constant score is the mean of these per-metric scores, each
  metric with its own constant (for MRPC: the validation majority for accuracy, "always
  paraphrase" for F1).
* **a bag-of-words model** for each sentence-level task (:func:`bag_of_words`): logistic
  regression (ridge regression for a regression task) on binary word counts; for a sentence pair
  the words of each sentence and the words they share. Its regularisation is chosen on the
  validation split. It sees words but no order: a model with a position embedding that does not
  beat it has not shown that it uses positions.
* **fixed rules** for span prediction (:data:`SPAN_RULES`): the first sentence of the context,
  the sentence sharing the most words with the question, and the constant "no answer" (the share
  of unanswerable questions on SQuAD v2.0, 0 on v1.1), scored by ``metrics.squad_scores``.
* **a unigram language model** for pretraining (:func:`unigram_validation_loss`): token
  frequencies of the training blocks with add-one smoothing, scored on exactly the masked
  validation tokens of ``pe_lib.training.pretrain.evaluate`` (same rows, same masks), so that its
  loss sits on the axis of the models' validation loss. A model at this loss has learned word
  frequencies and nothing about context.

The runner stores them as artifacts (``Runner.ensure_baselines``, ``Runner.ensure_unigram``), so
committed results are read, not recomputed. :func:`best_constant_scores` gives the best-constant
score of each score column in percent, the level below which a model is at chance.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from pe_lib.training import metrics
from pe_lib.training.finetune import _METRICS as METRIC_FUNCTIONS
from pe_lib.training.pretrain import MLMData, PretrainConfig, mask_tokens, step_seed

#: Add-one (Laplace) smoothing of the unigram model: every token that can be masked has count + 1.
UNIGRAM_SMOOTHING = 1.0
#: Regularisation grids searched on the validation split: inverse strength ``C`` of the logistic
#: regression, strength ``alpha`` of the ridge regression.
LOGISTIC_C = (0.01, 0.1, 1.0, 10.0, 100.0)
RIDGE_ALPHA = (0.1, 1.0, 10.0, 100.0, 1000.0)
#: Row labels the chapters give the baselines (clearly apart from variant names).
LABELS = {"constant": "baseline: best constant", "bag of words": "baseline: bag of words",
          "first sentence": "baseline: first sentence", "question overlap": "baseline: question overlap"}
SPLITS = ("validation", "test")


# ----------------------------------------------------------------------------- sentence-level tasks


def task_score(values: Mapping[str, float]) -> float:
    """Mean of a task's metrics, an undefined correlation counted 0 (the book's task score)."""
    return float(np.mean([0.0 if math.isnan(v) and m in ("pearson", "spearmanr") else v for m, v in values.items()]))


def score(metric_names: Sequence[str], labels: Sequence, predictions: Sequence) -> dict[str, float]:
    """Every metric of a task, computed by the fine-tuning code's own metric functions."""
    return {name: METRIC_FUNCTIONS[name](np.asarray(labels), np.asarray(predictions)) for name in metric_names}


def best_constant(meta, train_labels: Sequence, validation_labels: Sequence, test_labels: Sequence) -> dict:
    """The best constant prediction of each metric of task ``meta`` (a ``TaskMeta``), chosen on
    the validation split: ``{"prediction": {metric: constant}, "validation": {...}, "test": {...}}``.

    Classification: every label is a candidate, in order of training frequency (most frequent
    first), and the first candidate with the best validation score wins (so a metric on which all
    constants tie, like Matthews correlation, takes the training majority). Regression: the mean
    training label."""
    train = np.asarray(list(train_labels))
    splits = {"validation": np.asarray(list(validation_labels)), "test": np.asarray(list(test_labels))}
    if meta.is_regression:
        chosen = dict.fromkeys(meta.metrics, float(train.mean()))
    else:
        counts = np.bincount(train.astype(int), minlength=meta.num_labels)
        candidates = sorted(range(len(counts)), key=lambda label: (-counts[label], label))
        chosen = {}
        for name in meta.metrics:
            scores = [score([name], splits["validation"], np.full(len(splits["validation"]), c))[name] for c in candidates]
            chosen[name] = candidates[int(np.argmax(scores))]
    result = {"prediction": chosen}
    for split, labels in splits.items():
        result[split] = {name: score([name], labels, np.full(len(labels), chosen[name]))[name] for name in meta.metrics}
    return result


def bow_features(splits: Mapping, columns: Sequence[str]) -> dict:
    """Binary bag-of-words matrices of every split, the vocabulary taken from the training split:
    one sentence gives its words; a pair gives the words of each sentence and the words they share
    (without the shared words a linear model cannot see that two sentences agree)."""
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(binary=True, token_pattern=r"(?u)\b\w+\b")
    vectorizer.fit([text for column in columns for text in splits["train"][column]])
    matrices = {}
    for name, split in splits.items():
        parts = [vectorizer.transform(list(split[column])) for column in columns]
        if len(parts) == 2:
            parts.append(parts[0].multiply(parts[1]))
        matrices[name] = sparse.hstack(parts).tocsr()
    return matrices


def bag_of_words(meta, splits: Mapping, columns: Sequence[str]) -> dict:
    """A bag-of-words model trained on ``splits["train"]`` (logistic regression, or ridge for
    regression), its regularisation chosen by the task score on the validation split:
    ``{"model", "hyperparameter", "validation": {...}, "test": {...}}``. ``splits`` maps
    ``train``/``validation``/``test`` to anything with the text ``columns`` and ``label``."""
    from sklearn.linear_model import LogisticRegression, Ridge

    x = bow_features(splits, columns)
    y = {name: np.asarray(list(split["label"])) for name, split in splits.items()}
    if meta.is_regression:
        name, parameter, values, make = "ridge regression", "alpha", RIDGE_ALPHA, lambda v: Ridge(alpha=v)
    else:
        name, parameter, values = "logistic regression", "C", LOGISTIC_C
        make = lambda v: LogisticRegression(C=v, max_iter=5000)  # noqa: E731
    best = None
    for value in values:
        model = make(value).fit(x["train"], y["train"])
        scores = {split: score(meta.metrics, y[split], model.predict(x[split])) for split in SPLITS}
        if best is None or task_score(scores["validation"]) > task_score(best["validation"]):
            best = {"model": name, "hyperparameter": {parameter: value}, **scores}
    return best


# ----------------------------------------------------------------------------- span prediction

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(context: str) -> list[str]:
    """The context cut after ``.``, ``!`` or ``?`` followed by white space (non-empty pieces)."""
    return [s for s in _SENTENCE_END.split(context.strip()) if s] or [context]


def first_sentence(question: str, context: str) -> str:
    return sentences(context)[0]


def question_overlap(question: str, context: str) -> str:
    """The sentence sharing the most (normalised) words with the question, the first among ties:
    the sliding-window baseline of Rajpurkar et al. (2016), one sentence at a time."""
    asked = set(metrics.normalize_answer(question).split())
    pieces = sentences(context)
    overlaps = [len(asked & set(metrics.normalize_answer(s).split())) for s in pieces]
    return pieces[int(np.argmax(overlaps))]


def no_answer(question: str, context: str) -> str:
    return ""


#: Fixed rules for span prediction: (question, context) -> answer text. "constant" is "no answer",
#: the only constant that can score (on unanswerable questions).
SPAN_RULES: dict[str, Callable[[str, str], str]] = {
    "constant": no_answer, "first sentence": first_sentence, "question overlap": question_overlap}


def span_rules(splits: Mapping) -> dict[str, dict]:
    """EM and F1 (``metrics.squad_scores``) of every rule of :data:`SPAN_RULES` on the validation
    and test splits (each with ``id``, ``question``, ``context``, ``answers``)."""
    results = {}
    for name, rule in SPAN_RULES.items():
        results[name] = {}
        for split in SPLITS:
            data = splits[split]
            golds = {qid: list(a["text"]) for qid, a in zip(data["id"], data["answers"])}
            answers = {qid: rule(q, c) for qid, q, c in zip(data["id"], data["question"], data["context"])}
            results[name][split] = metrics.squad_scores(answers, golds)
    return results


def task_baselines(task) -> dict:
    """Every baseline of a ``pe_lib.data.Task`` (splits already capped as the models see them):
    ``{"task", "kind", "train_examples", "baselines": {name: {"validation", "test", ...}}}``."""
    splits = {name: task.splits[name] for name in ("train",) + SPLITS}
    if task.meta.kind == "span":
        baselines = span_rules(splits)
    else:
        baselines = {"constant": best_constant(task.meta, *(splits[s]["label"] for s in ("train",) + SPLITS)),
                     "bag of words": bag_of_words(task.meta, splits, task.text_columns)}
    return {"task": task.meta.name, "kind": task.meta.kind, "origin": task.origin,
            "train_examples": len(splits["train"]), "baselines": baselines}


# ----------------------------------------------------------------------------- pretraining


def validation_targets(data: MLMData, cfg: PretrainConfig) -> np.ndarray:
    """The token ids that ``pretrain.evaluate`` scores, in its order: the masked (selected)
    positions of its validation batches, masked with the same generators (seeded from 0 whatever
    the run's seed). ``tests/experiments/test_baselines.py`` checks the two agree."""
    targets = []
    for i in range(min(cfg.eval_batches, math.ceil(len(data.validation) / cfg.batch_size))):
        ids = torch.as_tensor(data.validation[i * cfg.batch_size : (i + 1) * cfg.batch_size], dtype=torch.long)
        _, labels = mask_tokens(ids, data, cfg.mask_prob, torch.Generator().manual_seed(step_seed(0, i, 0, 2)))
        targets.append(labels[labels != -100].numpy())
    return np.concatenate(targets)


def unigram_log_probs(train: np.ndarray, vocab_size: int, special_ids: Sequence[int],
                      smoothing: float = UNIGRAM_SMOOTHING) -> np.ndarray:
    """Log-probabilities of a unigram model over the vocabulary: counts of the training tokens
    plus ``smoothing`` for every token that can be masked; special tokens (never masked) get
    probability 0."""
    counts = np.bincount(np.asarray(train).ravel(), minlength=vocab_size).astype(np.float64)
    maskable = np.ones(vocab_size, dtype=bool)
    maskable[list(special_ids)] = False
    counts = np.where(maskable, counts + smoothing, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(counts / counts.sum())


def unigram_validation_loss(data: MLMData, cfg: PretrainConfig, smoothing: float = UNIGRAM_SMOOTHING) -> dict:
    """The unigram model's cross-entropy (nats) on the validation tokens the models' validation
    loss is computed on, with the number of tokens scored and of training tokens counted."""
    log_probs = unigram_log_probs(data.train, data.vocab_size, data.special_ids, smoothing)
    targets = validation_targets(data, cfg)
    return {"validation_loss": float(-log_probs[targets].mean()), "tokens": int(len(targets)),
            "train_tokens": int(data.train.size), "smoothing": smoothing}


# ----------------------------------------------------------------------------- for the chapters


def baseline_payloads(runner, tasks: Sequence[str]) -> dict[tuple[str, str, int, int], dict]:
    """Baseline scores as fine-tuning payloads keyed ``(row label, task, 0, 0)`` (one run each,
    pretraining and fine-tuning seed 0), the form ``pe_book.tables.score_records`` reads; a baseline a
    task does not have (bag of words for spans) is absent."""
    found = {}
    for task in tasks:
        for name, result in runner.ensure_baselines(task).payload["baselines"].items():
            found[(LABELS[name], task, 0, 0)] = result
    return found


def best_constant_scores(runner, tasks: Sequence[str], groups: Mapping[str, Sequence[str]] | None = None,
                         split: str = "test") -> dict[str, float]:
    """The best constant predictor's score of each score column, in percent (``metrics.scale_metric``):
    each task's (mean of its metrics, each metric's constant chosen on the validation split) and
    each group's (name -> tasks; the mean of its tasks' scores, absent unless all are in
    ``tasks``). A model at or below this level is at chance on the column."""
    scores = {}
    for task in tasks:
        payload = runner.ensure_baselines(task).payload
        values = payload["baselines"]["constant"][split]
        scores[task] = float(np.mean([metrics.scale_metric(v, payload["kind"], m) for m, v in values.items()]))
    for name, members in (groups or {}).items():
        if members and all(t in scores for t in members):
            scores[name] = float(np.mean([scores[t] for t in members]))
    return scores


def null_threshold_note(finetuned: Mapping[tuple, Mapping], means, constant, task: str = "squad_v2") -> str:
    """What the null-score thresholds chosen on the validation split did on SQuAD v2.0, in a
    sentence for chapter 07 ("" when ``task`` was not run). ``finetuned``: payloads keyed
    ``(variant, task, pretrain_seed, seed)``; ``means``: seed means per variant (rows) and column
    (``"<task> EM"``, ``"<task> F1"``, ...); ``constant``: the "no answer" scores of the same columns.
    When every variant sits exactly at "no answer", it says so and why."""
    runs = [payload for key, payload in finetuned.items() if key[1] == task]
    if not runs:
        return ""
    never = sum(payload["null_threshold"] == -math.inf for payload in runs)
    columns = [c for c in means.columns if c.startswith(f"{task} ")]
    at_null = all(np.isclose(means[c].dropna(), constant[c]).all() for c in columns)
    f1 = f"{task} F1"
    above = int((means[f1].dropna() > constant[f1] + 1e-9).sum())
    if at_null:
        why = ("answering, even the questions a model was most confident about, lost more F1 on the "
               "unanswerable questions than it gained on the answerable ones") if never == len(runs) else \
              "the questions the models answered scored, on balance, what \"no answer\" would have"
        return (f"On SQuAD v2.0 every variant scores exactly what always answering \"no answer\" scores: in {never} "
                f"of {len(runs)} runs the threshold chosen on the validation split was never to answer, and overall "
                f"{why}. At this scale the v2.0 columns do not separate the variants; v1.1 measures their pointing "
                "at spans.")
    return (f"On SQuAD v2.0 the threshold chosen on the validation split let the models answer in {len(runs) - never} "
            f"of {len(runs)} runs (in the others it was never to answer); {above} of {len(means[f1].dropna())} "
            "variants score above always answering \"no answer\" on F1.")
