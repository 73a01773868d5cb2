r"""Baselines beside every score table: what a reader needs to tell a model from chance.

A score means little without the score of something that does not learn from positions, or does
not learn at all. For every table of the book this module computes, with the same metric code, on
the same training examples the models see (``profile.max_train_for(task)``) and the same validation and
test examples they are scored on (``profile.task_max_eval``):

* **the best constant predictor** (:func:`best_constant`): ONE prediction for all metrics of a
  task (a predictor one could run), the label with the best validation task score (mean of its
  metrics), its test score reported, so that choosing it does not peek at the test labels. For a
  binary accuracy task that is the validation majority; every constant has Matthews correlation 0
  (ties take the training majority). For regression the constant is the mean training label,
  whose correlations are undefined and count 0 (``metrics.scale_metric``).
* **a bag-of-words model** for each sentence-level task (:func:`bag_of_words`): logistic
  regression (ridge regression for a regression task) on binary word counts; for a sentence pair
  the words of each sentence and the words they share. Its regularisation is chosen on the
  validation split. It sees words but no order: a model with a position embedding that does not
  beat it has not shown that it uses positions.
* **fixed rules** for span prediction (:data:`SPAN_RULES`), scored by ``metrics.squad_scores``:
  the constant "no answer" (the share of unanswerable questions on a v2 task, 0 on v1.1), the
  first sentence, the sentence sharing the most words with the question, a random content word
  of the context (the random-candidate answer), a content word of the best-matching sentence that
  the question lacks ("absent word": the answer of a cloze question is the word it blanks) and,
  on cloze tasks, the word whose neighbours match the blank's ("neighbour match", which reads word
  order). Each is flagged ``order_free`` or not (:func:`reads_order` reads the flag: a rule
  that reads order is a cheap position-using model, shown beside the models as a reference, never
  the order-free bar of ``pe_book.verdicts.testability``); on a v2 task each answers "no answer" below a
  confidence threshold chosen on the validation split, as the models do.
* **a unigram language model** for pretraining (:func:`unigram_validation_loss`): token
  frequencies of the training blocks with add-one smoothing, scored on exactly the masked
  validation tokens of ``pe_lib.training.mlm.evaluate`` (same rows, same masks), so that its
  loss sits on the axis of the models' validation loss. A model at this loss has learned word
  frequencies and nothing about context.

The pipeline stores them as artifacts (``Runner.ensure_baselines``, ``Runner.ensure_unigram``), and
the stored results are read (``Results.baselines``, ``Results.unigram``), not recomputed. :func:`best_constant_scores` gives the best-constant
score of each score column in percent, the level below which a model is at chance.
"""
from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from pe_lib.data.builders import FUNCTION_WORDS, PLACEHOLDER
from pe_lib.training import metrics
from pe_lib.training.finetune import _METRICS as METRIC_FUNCTIONS
from pe_lib.training.finetune import answers_at, best_null_threshold
from pe_lib.training.mlm import MLMData, mask_tokens, step_seed
from pe_lib.training.pretrain_config import PretrainConfig

#: Add-one (Laplace) smoothing of the unigram model: every token that can be masked has count + 1.
UNIGRAM_SMOOTHING = 1.0
#: Regularisation grids searched on the validation split: inverse strength ``C`` of the logistic
#: regression, strength ``alpha`` of the ridge regression.
LOGISTIC_C = (0.01, 0.1, 1.0, 10.0, 100.0)
RIDGE_ALPHA = (0.1, 1.0, 10.0, 100.0, 1000.0)
#: Row labels the chapters give the baselines (clearly apart from variant names).
LABELS = {"constant": "baseline: best constant", "bag of words": "baseline: bag of words",
          "first sentence": "baseline: first sentence", "question overlap": "baseline: question overlap",
          "random candidate": "baseline: random candidate", "absent word": "baseline: absent word",
          "neighbour match": "baseline: neighbour match"}
SPLITS = ("validation", "test")


# ----------------------------------------------------------------------------- sentence-level tasks


def task_score(values: Mapping[str, float]) -> float:
    """Mean of a task's metrics, an undefined correlation counted 0 (the book's task score)."""
    return float(np.mean([0.0 if math.isnan(v) and m in ("pearson", "spearmanr") else v for m, v in values.items()]))


def score(metric_names: Sequence[str], labels: Sequence, predictions: Sequence) -> dict[str, float]:
    """Every metric of a task, computed by the fine-tuning code's own metric functions."""
    return {name: METRIC_FUNCTIONS[name](np.asarray(labels), np.asarray(predictions)) for name in metric_names}


def best_constant(meta, train_labels: Sequence, validation_labels: Sequence, test_labels: Sequence) -> dict:
    """The best constant predictor of task ``meta`` (a ``TaskMeta``): ONE prediction for all its
    metrics, the one with the best validation task score (:func:`task_score`), and its scores:
    ``{"prediction": constant, "validation": {...}, "test": {...}}``.

    Classification: every label is a candidate, in order of training frequency (most frequent
    first), and the first candidate with the best validation task score wins (so where all
    constants tie, as on Matthews correlation, it is the training majority). Regression: the mean
    training label, whose correlations are undefined and count 0."""
    train = np.asarray(list(train_labels))
    splits = {"validation": np.asarray(list(validation_labels)), "test": np.asarray(list(test_labels))}

    def scores(labels: np.ndarray, constant) -> dict[str, float]:
        return score(meta.metrics, labels, np.full(len(labels), constant))

    if meta.is_regression:
        chosen = float(train.mean())
    else:
        counts = np.bincount(train.astype(int), minlength=meta.num_labels)
        candidates = sorted(range(len(counts)), key=lambda label: (-counts[label], label))
        validation = [task_score(scores(splits["validation"], c)) for c in candidates]
        chosen = candidates[int(np.argmax(validation))]
    return {"prediction": chosen, **{split: scores(labels, chosen) for split, labels in splits.items()}}


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
#: The seed of the random-candidate rule (each question draws from ``random.Random(f"{seed}:{id}")``).
RULE_SEED = 0
#: Words on each side of a cloze blank that the neighbour-match rule compares.
NEIGHBOUR_WINDOW = 3


def sentences(context: str) -> list[str]:
    """The context cut after ``.``, ``!`` or ``?`` followed by white space (non-empty pieces)."""
    return [s for s in _SENTENCE_END.split(context.strip()) if s] or [context]


def words(text: str) -> list[str]:
    """The lower-cased words of a text (``Jacob’s`` -> ``jacob``, ``s``)."""
    return re.findall(r"\w+", text.lower())


def content_words(text: str) -> list[str]:
    """The words of a text that can be an answer: alphabetic, two letters or more, no function word."""
    return [w for w in words(text) if w.isalpha() and len(w) > 1 and w not in FUNCTION_WORDS]


def _best_sentence(question: str, context: str, split: Callable[[str], list[str]]) -> tuple[str, float]:
    """The sentence sharing the most words (as ``split`` cuts them) with the question, the first
    among ties, and the share of the question's words it contains."""
    asked = set(split(question))
    pieces = sentences(context)
    overlaps = [len(asked & set(split(s))) for s in pieces]
    best = int(np.argmax(overlaps))
    return pieces[best], overlaps[best] / max(1, len(asked))


def first_sentence(qid: str, question: str, context: str) -> tuple[str, float]:
    return sentences(context)[0], 0.0


def question_overlap(qid: str, question: str, context: str) -> tuple[str, float]:
    """The sentence sharing the most (normalised) words with the question, the first among ties:
    the sliding-window baseline of Rajpurkar et al. (2016), one sentence at a time."""
    return _best_sentence(question, context, lambda text: metrics.normalize_answer(text).split())


def no_answer(qid: str, question: str, context: str) -> tuple[str, float]:
    return "", 0.0


def random_candidate(qid: str, question: str, context: str) -> tuple[str, float]:
    """A content word of the context drawn at random (seeded by the question's id)."""
    candidates = sorted(set(content_words(context)))
    return (random.Random(f"{RULE_SEED}:{qid}").choice(candidates) if candidates else ""), 0.0


def absent_word(qid: str, question: str, context: str) -> tuple[str, float]:
    """A content word of the best-matching sentence that the question lacks, drawn at random
    (seeded by the question's id): the answer of a cloze question is the word it blanks, and a
    gloss's headword is the word a definition question lacks. Confidence: the sentence's overlap."""
    sentence, overlap = _best_sentence(question, context, content_words)
    asked = set(words(question))
    candidates = sorted(set(content_words(sentence)) - asked)
    return (random.Random(f"{RULE_SEED}:{qid}").choice(candidates) if candidates else ""), overlap


def neighbour_match(qid: str, question: str, context: str) -> tuple[str, float]:
    """The context word whose neighbours best match the words around the question's blank
    (``builders.PLACEHOLDER``): the number of the ``NEIGHBOUR_WINDOW`` words on each side that are
    equal at the same distance, the first best; a rule that reads word order. "" without a blank."""
    asked, seen = words(question), words(context)
    if PLACEHOLDER not in asked:
        return "", 0.0
    blank = asked.index(PLACEHOLDER)

    def matches(at: int) -> int:
        return sum(0 <= blank + d < len(asked) and 0 <= at + d < len(seen) and asked[blank + d] == seen[at + d]
                   for d in range(-NEIGHBOUR_WINDOW, NEIGHBOUR_WINDOW + 1) if d)

    spots = [i for i, w in enumerate(seen) if w.isalpha() and len(w) > 1 and w not in FUNCTION_WORDS]
    if not spots:
        return "", 0.0
    scores = [matches(i) for i in spots]
    best = int(np.argmax(scores))
    return seen[spots[best]], float(scores[best])


@dataclass(frozen=True)
class SpanRule:
    """A fixed rule for span prediction: ``(id, question, context) -> (answer, confidence)``, and
    whether it is order-free (its choice stays the same when the words of every sentence are
    shuffled, sentences kept apart, as bag of words keeps the two sentences of a pair apart)."""

    rule: Callable[[str, str, str], tuple[str, float]]
    order_free: bool
    cloze_only: bool = False


#: Fixed rules for span prediction. "constant" is "no answer", the only constant that can score
#: (on unanswerable questions). On a task with unanswerable questions every rule answers "no
#: answer" below a confidence threshold chosen on the validation split, as the models do.
SPAN_RULES: dict[str, SpanRule] = {
    "constant": SpanRule(no_answer, order_free=True),
    "first sentence": SpanRule(first_sentence, order_free=True),
    "question overlap": SpanRule(question_overlap, order_free=True),
    "random candidate": SpanRule(random_candidate, order_free=True),
    "absent word": SpanRule(absent_word, order_free=True),
    "neighbour match": SpanRule(neighbour_match, order_free=False, cloze_only=True),
}


def span_rules(splits: Mapping, with_negatives: bool = False) -> dict[str, dict]:
    """EM and F1 (``metrics.squad_scores``) of every rule of :data:`SPAN_RULES` on the validation
    and test splits (each with ``id``, ``question``, ``context``, ``answers``), with ``order_free``;
    ``with_negatives``: the "no answer" threshold of each rule (``finetune.best_null_threshold``
    on its negated confidence) is chosen on the validation split and kept for the test split.
    A cloze-only rule is left out where no validation question has a blank."""
    results = {}
    has_blank = any(PLACEHOLDER in words(q) for q in splits["validation"]["question"])
    for name, spec in SPAN_RULES.items():
        if spec.cloze_only and not has_blank:
            continue
        results[name] = {"order_free": spec.order_free}
        for split in SPLITS:
            data = splits[split]
            golds = {qid: list(a["text"]) for qid, a in zip(data["id"], data["answers"])}
            candidates = {qid: (answer, -confidence) for qid, q, c in zip(data["id"], data["question"], data["context"])
                          for answer, confidence in [spec.rule(qid, q, c)]}
            if with_negatives and "threshold" not in results[name]:
                results[name]["threshold"] = -best_null_threshold(candidates, golds)
            results[name][split] = metrics.squad_scores(
                answers_at(candidates, -results[name]["threshold"] if with_negatives else None), golds)
    return results


def task_baselines(task) -> dict:
    """Every baseline of a ``pe_lib.data.Task`` (splits already capped as the models see them):
    ``{"task", "kind", "train_examples", "baselines": {name: {"validation", "test", "order_free", ...}}}``."""
    splits = {name: task.splits[name] for name in ("train",) + SPLITS}
    if task.meta.kind == "span":
        baselines = span_rules(splits, task.meta.version_2_with_negative)
    else:
        baselines = {"constant": best_constant(task.meta, *(splits[s]["label"] for s in ("train",) + SPLITS))
                     | {"order_free": True},
                     "bag of words": bag_of_words(task.meta, splits, task.text_columns) | {"order_free": True}}
    return {"task": task.meta.name, "kind": task.meta.kind, "origin": task.origin,
            "train_examples": len(splits["train"]), "baselines": baselines}


def baseline_score(payload: Mapping, name: str, split: str = "test") -> float:
    """A stored baseline's task score in percent (mean of its metrics, ``metrics.scale_metric``)."""
    values = payload["baselines"][name][split]
    return float(np.mean([metrics.scale_metric(v, payload["kind"], m) for m, v in values.items()]))


def reads_order(payload: Mapping, name: str) -> bool:
    """Whether a stored baseline of a task reads word order (then it is a cheap position-using
    model, a reference beside the models, never the order-free bar of :mod:`pe_book.verdicts.testability`):
    the ``order_free`` flag it was stored with (from :data:`SPAN_RULES`, or ``True`` for the best
    constant and bag of words, :func:`task_baselines`); in a payload stored before the flag, that of
    its rule in :data:`SPAN_RULES` (a sentence-level baseline is order-free)."""
    rule = SPAN_RULES.get(name)
    return not payload["baselines"][name].get("order_free", rule.order_free if rule else True)


def best_baseline(payload: Mapping, split: str = "test", order_free: bool = False) -> tuple[str, float]:
    """The best baseline of one task on ``split``: ``(name, task score in percent)``, from its
    baselines payload (``Results.baselines(task).payload``). ``order_free``: only the
    baselines that ignore word order (:func:`reads_order`). The first best wins ties (the constant
    before bag of words)."""
    scores = {name: baseline_score(payload, name, split) for name in payload["baselines"]
              if not (order_free and reads_order(payload, name))}
    name = max(scores, key=scores.get)
    return name, scores[name]


def best_reference(payload: Mapping, split: str = "test") -> tuple[str, float] | None:
    """The best of a task's stored baselines that read word order (:func:`reads_order`) on
    ``split``, ``(name, task score in percent)``; None when the task has none (every
    sentence-level task; span tasks without a cloze blank)."""
    scores = {name: baseline_score(payload, name, split) for name in payload["baselines"] if reads_order(payload, name)}
    if not scores:
        return None
    name = max(scores, key=scores.get)
    return name, scores[name]


# ----------------------------------------------------------------------------- pretraining


def validation_targets(data: MLMData, cfg: PretrainConfig) -> np.ndarray:
    """The token ids that ``pretrain.evaluate`` scores, in its order: the masked (selected)
    positions of its validation batches, masked with the same generators (seeded from 0 whatever
    the run's seed). ``tests/book/experiments/test_baselines.py`` checks the two agree."""
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


def stored_baselines(runner, tasks: Sequence[str]) -> dict[str, dict]:
    """Each task's baselines payload, task -> ``runner.baselines(task).payload`` (what the
    verdicts' gate reads: :func:`pe_book.verdicts.testability.gate`)."""
    return {task: runner.baselines(task).payload for task in tasks}


def baseline_payloads(runner, tasks: Sequence[str]) -> dict[tuple[str, str, int, int], dict]:
    """Baseline scores as fine-tuning payloads keyed ``(row label, task, 0, 0)`` (one run each,
    pretraining and fine-tuning seed 0), the form ``pe_book.tables.score_records`` reads; a baseline a
    task does not have (bag of words for spans) is absent."""
    found = {}
    for task, payload in stored_baselines(runner, tasks).items():
        for name, result in payload["baselines"].items():
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
        scores[task] = baseline_score(runner.baselines(task).payload, "constant", split)
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
