"""Metrics as GLUE and SQuAD define them (scikit-learn / scipy where they have them, imported
where a metric is computed, so that reading a task's metric names costs no import of either).

SQuAD answer normalisation follows the official ``evaluate-v2.0.py``: lower-case, strip
punctuation, drop the articles a/an/the, collapse whitespace. EM and F1 take the maximum over the
gold answers; an unanswerable question (no gold answers) scores 1 only for the empty prediction.
"""
from __future__ import annotations

import collections
import math
import re
import string
from collections.abc import Callable, Hashable, Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def accuracy(labels: Sequence[int], predictions: Sequence[int]) -> float:
    from sklearn.metrics import accuracy_score

    return float(accuracy_score(labels, predictions))


def binary_f1(labels: Sequence[int], predictions: Sequence[int]) -> float:
    """F1 of the positive class (GLUE's MRPC/QQP F1)."""
    from sklearn.metrics import f1_score

    return float(f1_score(labels, predictions, average="binary", zero_division=0.0))


def matthews(labels: Sequence[int], predictions: Sequence[int]) -> float:
    """Matthews correlation (GLUE's CoLA metric); 0 when a prediction is constant."""
    from sklearn.metrics import matthews_corrcoef

    return float(matthews_corrcoef(labels, predictions))


def pearson(labels: Sequence[float], predictions: Sequence[float]) -> float:
    """Pearson correlation (GLUE's STS-B); NaN when either side is constant."""
    from scipy.stats import pearsonr

    if np.ptp(labels) == 0 or np.ptp(predictions) == 0:
        return float("nan")
    return float(pearsonr(labels, predictions)[0])


def spearman(labels: Sequence[float], predictions: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    if np.ptp(labels) == 0 or np.ptp(predictions) == 0:
        return float("nan")
    return float(spearmanr(labels, predictions)[0])


def normalize_answer(text: str) -> str:
    """SQuAD's official answer normalisation."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    pred_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:  # the no-answer case: both empty is a match
        return float(pred_tokens == gold_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(pred_tokens), overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_per_question(predictions: dict[str, str], golds: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """Exact match and F1 (0-1) of every question of ``golds``, in its order (:func:`squad_scores`)."""
    if not golds:
        raise ValueError("squad_scores: no questions to score")
    em, f1 = [], []
    for qid, answers in golds.items():
        answers = answers or [""]
        prediction = predictions.get(qid, "")
        em.append(max(exact_match(prediction, a) for a in answers))
        f1.append(max(token_f1(prediction, a) for a in answers))
    return {"exact_match": np.asarray(em), "f1": np.asarray(f1)}


def squad_scores(predictions: dict[str, str], golds: dict[str, list[str]]) -> dict[str, float]:
    """Exact match and F1 in percent over the questions of ``golds`` (SQuAD v1.1 and v2.0).

    ``golds[id]`` is the list of gold answer texts; an empty list marks an unanswerable question
    (v2.0), for which the gold is the empty string. A missing prediction counts as empty.
    """
    return squad_means(squad_per_question(predictions, golds))


def squad_means(per_question: dict[str, np.ndarray]) -> dict[str, float]:
    """Each span metric in percent, over the questions of :func:`squad_per_question`."""
    return {name: 100 * float(np.mean(values)) for name, values in per_question.items()}


#: Resamples of :func:`bootstrap_se` and their seed (a fixed seed: the same predictions, the same SE).
BOOTSTRAP_ROUNDS = 1000
BOOTSTRAP_SEED = 0


def bootstrap_se(score: Callable[[np.ndarray], float], clusters: Sequence[Hashable],
                 rounds: int = BOOTSTRAP_ROUNDS, seed: int = BOOTSTRAP_SEED) -> float:
    """The test-set sampling standard error of ``score`` by the bootstrap: ``rounds`` resamples of
    the split's clusters with replacement, each scored by ``score(indices of its examples)``.
    Examples that are not independent share a cluster (the two members of a minimal pair), so
    they are drawn together; otherwise every example is its own cluster."""
    first: dict[Hashable, int] = {}
    members: list[list[int]] = []
    for index, cluster in enumerate(clusters):
        if cluster not in first:
            first[cluster] = len(members)
            members.append([])
        members[first[cluster]].append(index)
    if len(members) < 2:
        return math.nan
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(m) for m in members]
    values = [score(np.concatenate([arrays[j] for j in rng.integers(0, len(arrays), len(arrays))]))
              for _ in range(rounds)]
    return float(np.nanstd(values, ddof=1))


#: Correlation metrics: undefined (NaN) for a constant prediction, which is counted as 0.
CORRELATIONS = ("pearson", "spearmanr")


def scale_metric(value: float, kind: str, metric: str = "") -> float:
    """A metric in percent: span (SQuAD) metrics are already, the others are multiplied by 100.
    An undefined correlation (NaN: the model predicted a constant) counts as 0, like the
    Matthews correlation of a constant prediction."""
    value = float(value) if value is not None else math.nan
    if math.isnan(value) and metric in CORRELATIONS:
        value = 0.0
    return value if kind == "span" else 100.0 * value
