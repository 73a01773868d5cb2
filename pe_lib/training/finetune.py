"""Fine-tuning a pretrained PEBert on a task of ``pe_lib.data``: classification, regression,
sentence pairs, and SQuAD-style span prediction.

Span prediction follows HuggingFace's ``run_qa``: long contexts are cut into overlapping windows
(``doc_stride``); a window that does not contain the answer is labelled with the [CLS] position;
decoding takes the best valid span (start <= end, at most ``max_answer_len`` tokens, inside the
context) over all windows of a question, and for SQuAD v2.0 answers "" when the [CLS] (null) score
beats the best span by more than a threshold chosen on the validation split (as the official v2.0
evaluation does, :func:`best_null_threshold`) and applied to both splits.
"""
from __future__ import annotations

import math
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from pe_lib.errors import InputError
from pe_lib.model import PEBertForQuestionAnswering, PEBertForSequenceClassification, quiet_transformers
from pe_lib.training import metrics
from pe_lib.training.mlm import step_seed
from pe_lib.training.optim import autocast, param_groups, use_bf16
from pe_lib.training.pretrain_config import PRECISIONS, check_number

_METRICS: dict[str, Callable] = {
    "accuracy": metrics.accuracy,
    "f1": metrics.binary_f1,
    "matthews_correlation": metrics.matthews,
    "pearson": metrics.pearson,
    "spearmanr": metrics.spearman,
}


@dataclass(frozen=True)
class FinetuneConfig:
    epochs: float = 3.0
    batch_size: int = 32
    lr: float = 1e-4
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_seq_len: int = 128
    doc_stride: int = 32
    max_question_len: int = 64  # questions are cut to this many tokens (BERT's max_query_length)
    max_answer_len: int = 30
    precision: str = "auto"
    seed: int = 0
    eval_batch_size: int = 64

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.doc_stride < 0 or self.max_question_len < 1:
            raise InputError(f"FinetuneConfig.doc_stride must be at least 0 and max_question_len at least 1, got "
                             f"{self.doc_stride} and {self.max_question_len}")
        if not (isinstance(self.epochs, (int, float)) and math.isfinite(self.epochs) and self.epochs > 0):
            raise InputError(f"FinetuneConfig.epochs must be a finite number above 0, got {self.epochs!r} "
                             "(0 or fewer would print the scores of a model fine-tuned for no step)")
        if self.seed < 0:
            raise InputError(f"FinetuneConfig.seed must be an integer of at least 0, got {self.seed!r}")
        check_number(self, "lr", above=0)
        check_number(self, "weight_decay", at_least=0)
        check_number(self, "warmup_ratio", at_least=0, at_most=1)

    def check_span_lengths(self) -> None:
        """Windows need room for the context beyond the stride: [CLS] question [SEP] context [SEP]."""
        context_room = self.max_seq_len - self.max_question_len - 3
        if self.doc_stride >= context_room:
            raise InputError(f"doc_stride {self.doc_stride} must be below the {context_room} context tokens left by "
                             f"max_seq_len {self.max_seq_len} and max_question_len {self.max_question_len}")


# ----------------------------------------------------------------------------- features


def sentence_features(tokenizer, split, columns: tuple[str, ...], max_len: int) -> list[dict]:
    """Tokenised (pairs of) sentences with their labels, unpadded."""
    texts = [list(split[c]) for c in columns]
    encoded = tokenizer(*texts, truncation=True, max_length=max_len)
    return [{"input_ids": ids, "token_type_ids": types, "labels": label}
            for ids, types, label in zip(encoded["input_ids"], encoded["token_type_ids"], list(split["label"]))]


def span_features(tokenizer, split, cfg: FinetuneConfig, with_labels: bool) -> list[dict]:
    """SQuAD windows: question + a slice of the context, with start/end token labels (train) or
    the offsets needed to map predictions back to context characters (evaluation)."""
    cfg.check_span_lengths()
    encoded = tokenizer(
        cut_questions(tokenizer, list(split["question"]), cfg.max_question_len), list(split["context"]), truncation="only_second", max_length=cfg.max_seq_len,
        stride=cfg.doc_stride, return_overflowing_tokens=True, return_offsets_mapping=True,
    )
    features = []
    for i, example_index in enumerate(encoded["overflow_to_sample_mapping"]):
        ids, offsets = encoded["input_ids"][i], encoded["offset_mapping"][i]
        in_context = [s == 1 for s in encoded.sequence_ids(i)]
        feature = {"input_ids": ids, "token_type_ids": encoded["token_type_ids"][i]}
        if with_labels:
            feature["start_positions"], feature["end_positions"] = answer_tokens(split[example_index]["answers"], offsets, in_context)
        else:
            feature["example_id"] = split[example_index]["id"]
            feature["offsets"] = [o if c else None for o, c in zip(offsets, in_context)]
        features.append(feature)
    return features


def cut_questions(tokenizer, questions: list[str], max_tokens: int) -> list[str]:
    """Questions stripped and cut (at a token boundary) to at most ``max_tokens`` tokens."""
    questions = [q.strip() for q in questions]
    offsets = tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return [q if len(o) <= max_tokens else q[: o[max_tokens - 1][1]] for q, o in zip(questions, offsets)]


def answer_tokens(answers: dict, offsets, in_context: list[bool]) -> tuple[int, int]:
    """Token indices of the first gold answer inside this window, or (0, 0) ([CLS]) when absent."""
    if not answers["answer_start"]:
        return 0, 0
    start_char = answers["answer_start"][0]
    end_char = start_char + len(answers["text"][0])
    context = [i for i, c in enumerate(in_context) if c]
    if offsets[context[0]][0] > start_char or offsets[context[-1]][1] < end_char:
        return 0, 0
    start = next(i for i in context if offsets[i][1] > start_char)
    end = next(i for i in reversed(context) if offsets[i][0] < end_char)
    return start, end


#: What a feature's label is called, by task kind: one per sequence, or the answer's token span.
TARGETS = ("labels", "start_positions", "end_positions")


@dataclass(frozen=True)
class Encoded:
    """The features of one split, padded once into tensors: a batch is a selection of rows cut to
    its own longest feature (dynamic padding), sliced rather than built from lists."""
    features: list[dict]  # as built by sentence_features or span_features (span decoding reads them)
    input_ids: torch.Tensor  # (N, n_max), the pad id beyond each feature's length
    token_type_ids: torch.Tensor  # (N, n_max)
    lengths: np.ndarray  # (N,) tokens of each feature
    targets: dict[str, torch.Tensor]  # the TARGETS the features carry, each (N,)

    @classmethod
    def of(cls, features: list[dict], pad_id: int) -> Encoded:
        lengths = np.array([len(f["input_ids"]) for f in features])
        ids = np.full((len(features), lengths.max()), pad_id, dtype=np.int64)  # (N, n_max)
        types = np.zeros_like(ids)  # (N, n_max)
        for row, f in enumerate(features):
            ids[row, : lengths[row]] = f["input_ids"]
            types[row, : lengths[row]] = f["token_type_ids"]
        targets = {key: torch.tensor([f[key] for f in features]) for key in TARGETS if key in features[0]}
        return cls(features, torch.from_numpy(ids), torch.from_numpy(types), lengths, targets)

    def __len__(self) -> int:
        return len(self.lengths)

    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """The features ``rows``, padded to the longest of them, with their attention mask and targets."""
        index = torch.from_numpy(rows)
        lengths = torch.from_numpy(self.lengths[rows])  # (B,)
        n = int(lengths.max())
        batch = {"input_ids": self.input_ids[index, :n], "token_type_ids": self.token_type_ids[index, :n],  # (B, n) each
                 "attention_mask": (torch.arange(n)[None, :] < lengths[:, None]).long()}  # (B, n)
        return batch | {key: target[index] for key, target in self.targets.items()}  # (B,) each


@dataclass(frozen=True)
class TaskFeatures:
    """Every split of a task as :class:`Encoded` features, built once by :func:`task_features` and
    reused by every fine-tuning of the task whose configuration cuts sequences the same way."""
    task: str
    cut: dict  # the FinetuneConfig fields the features were cut with (feature_cut)
    examples: dict[str, int]  # examples of each split they were built from (a span task has more features)
    splits: dict[str, Encoded]

    def refusal(self, task, cfg: FinetuneConfig) -> str | None:
        """Why these features are not ``task``'s as ``cfg`` cuts it (one line), or None when they are."""
        examples = {name: len(task.splits[name]) for name in self.splits}
        if (self.task, self.cut, self.examples) == (task.meta.name, feature_cut(cfg), examples):
            return None
        return (f"features of task {self.task!r} cut with {self.cut} from {self.examples} examples given to fine-tune "
                f"{task.meta.name!r} cut with {feature_cut(cfg)} from {examples} examples: build them with "
                f"task_features(tokenizer, task, cfg)")


def feature_cut(cfg: FinetuneConfig) -> dict:
    """The configuration fields that shape a task's features: the lengths sequences are cut to."""
    return {"max_seq_len": cfg.max_seq_len, "doc_stride": cfg.doc_stride, "max_question_len": cfg.max_question_len}


def task_features(tokenizer, task, cfg: FinetuneConfig) -> TaskFeatures:
    """The features of ``task``'s train, validation and test splits, tokenised with ``tokenizer``
    and cut as ``cfg`` asks: span tasks train on labelled windows and are scored on windows that
    keep their question id and character offsets."""
    splits = {}
    for name in ("train", "validation", "test"):
        if task.meta.kind == "span":
            features = span_features(tokenizer, task.splits[name], cfg, with_labels=name == "train")
        else:
            features = sentence_features(tokenizer, task.splits[name], task.text_columns, cfg.max_seq_len)
        splits[name] = Encoded.of(features, tokenizer.pad_token_id)
    return TaskFeatures(task.meta.name, feature_cut(cfg), {name: len(task.splits[name]) for name in splits}, splits)


#: Batches in a mega-batch of length grouping (HuggingFace's ``group_by_length`` uses 50).
MEGABATCH = 50


def train_batches(lengths: np.ndarray, batch_size: int, seed: int, epoch: int, group_by_length: bool) -> list[np.ndarray]:
    """The rows of each training batch of an epoch, from the permutation seeded by ``(seed, epoch)``.
    Without grouping: consecutive slices of it. With grouping: it is cut into mega-batches of
    MEGABATCH batches, each sorted by length (longest first, ties in permutation order) and cut
    into batches, and the batches of all mega-batches are shuffled by the same generator."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    if group_by_length:
        megabatches = np.split(order, range(MEGABATCH * batch_size, len(order), MEGABATCH * batch_size))
        order = np.concatenate([m[np.argsort(-lengths[m], kind="stable")] for m in megabatches])
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))] if group_by_length else batches


def eval_batches(lengths: np.ndarray, batch_size: int, group_by_length: bool) -> list[np.ndarray]:
    """The rows of each evaluation batch: in order of length (shortest first) with grouping, else in order."""
    order = np.argsort(lengths, kind="stable") if group_by_length else np.arange(len(lengths))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


@dataclass
class Tally:
    """Where a fine-tuning's time went, for the benchmark (``finetune(..., tally=Tally())``):
    seconds by phase, and the tokens of its training batches without and with padding."""
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    tokens: int = 0  # non-padding tokens of the training batches
    padded_tokens: int = 0  # batch size x longest feature, summed over the training batches

    @contextmanager
    def phase(self, name: str):
        start = time.perf_counter()
        yield
        self.seconds[name] += time.perf_counter() - start


# ----------------------------------------------------------------------------- decoding


def span_candidates(features: list[dict], starts: np.ndarray, ends: np.ndarray, contexts: dict[str, str],
                    max_answer_len: int, n_best: int = 20) -> dict[str, tuple[str, float]]:
    """Per example, over all its windows: the text of the best valid span and its null-score
    difference ``null - best``, where ``null`` is the lowest [CLS] score ``start[0] + end[0]`` of
    its windows (HuggingFace's ``run_qa``) and ``best`` the score of the best span (``+inf`` when
    no window has a valid span; the text is then "")."""
    best: dict[str, tuple[float, str]] = {}
    null: dict[str, float] = defaultdict(lambda: math.inf)
    for feature, start_logits, end_logits in zip(features, starts, ends):
        qid, offsets = feature["example_id"], feature["offsets"]
        null[qid] = min(null[qid], float(start_logits[0] + end_logits[0]))
        top_starts = np.argsort(start_logits)[::-1][:n_best]
        top_ends = np.argsort(end_logits)[::-1][:n_best]
        for s in top_starts:
            for e in top_ends:
                if s >= len(offsets) or e >= len(offsets) or offsets[s] is None or offsets[e] is None:
                    continue
                if e < s or e - s + 1 > max_answer_len:
                    continue
                score = float(start_logits[s] + end_logits[e])
                if qid not in best or score > best[qid][0]:
                    best[qid] = (score, contexts[qid][offsets[s][0] : offsets[e][1]])
    candidates = {}
    for qid in dict.fromkeys(f["example_id"] for f in features):
        score, text = best.get(qid, (-math.inf, ""))
        candidates[qid] = (text, null[qid] - score)
    return candidates


def answers_at(candidates: dict[str, tuple[str, float]], threshold: float | None) -> dict[str, str]:
    """The answer of each example: "" ("no answer") when its null-score difference exceeds
    ``threshold``, else its best span; ``threshold=None`` never answers "no answer" (SQuAD v1.1)."""
    return {qid: "" if threshold is not None and diff > threshold else text
            for qid, (text, diff) in candidates.items()}


def best_null_threshold(candidates: dict[str, tuple[str, float]], golds: dict[str, list[str]]) -> float:
    """The null-score threshold that maximises the F1 over ``golds``, as the official SQuAD v2.0
    evaluation chooses it (``find_best_thresh`` of ``evaluate-v2.0.py``, with the null-score
    difference in place of its no-answer probability): start from answering "no answer"
    everywhere, switch the examples to their span in increasing order of their difference (tied
    differences together, since one threshold cannot separate them), and keep the threshold after
    the switch with the highest total F1. ``-inf`` (always "no answer") when no switch helps; the
    first best wins ties, so the threshold is the lowest that reaches the best F1.

    Chosen on the validation split and applied to the test split, it lets a model whose null
    score is miscalibrated (e.g. always above its span scores) still answer where it is most
    confident, so the test score measures how well the model ranks answerable questions."""
    def f1(prediction: str, answers: list[str]) -> float:
        return max(metrics.token_f1(prediction, a) for a in (answers or [""]))

    order = sorted(golds, key=lambda qid: candidates[qid][1])
    total = best_total = 0.0
    best_threshold = -math.inf
    for i, qid in enumerate(order):
        text, diff = candidates[qid]
        total += f1(text, golds[qid]) - f1("", golds[qid])
        last_of_tie = i + 1 == len(order) or candidates[order[i + 1]][1] != diff
        if last_of_tie and math.isfinite(diff) and total > best_total:
            best_total, best_threshold = total, diff
    return best_threshold


def decode_spans(features: list[dict], starts: np.ndarray, ends: np.ndarray, contexts: dict[str, str],
                 max_answer_len: int, allow_null: bool, n_best: int = 20, threshold: float = 0.0) -> dict[str, str]:
    """Best answer text per example over all its windows; with ``allow_null`` (v2) "" when the
    null score beats the best span by more than ``threshold``."""
    return answers_at(span_candidates(features, starts, ends, contexts, max_answer_len, n_best),
                      threshold if allow_null else None)


# ----------------------------------------------------------------------------- loops


def train(model, encoded: Encoded, cfg: FinetuneConfig, bf16: bool, desc: str, progress: bool, group_by_length: bool,
          tally: Tally) -> None:
    steps_per_epoch = math.ceil(len(encoded) / cfg.batch_size)
    total = max(1, round(cfg.epochs * steps_per_epoch))
    # fused: one kernel for every parameter's update (a quarter of the time of the per-tensor loop
    # on the cpu model, where it was about a fifth of a sentence fine-tuning); code version 2
    optimizer = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr, eps=1e-6,
                                  fused=model.device.type in ("cpu", "cuda"))
    scheduler = get_linear_schedule_with_warmup(optimizer, round(cfg.warmup_ratio * total), total)
    model.train()
    step = 0
    with tqdm(total=total, desc=desc, disable=not progress, unit="step") as bar:
        for epoch in range(math.ceil(cfg.epochs)):
            for rows in train_batches(encoded.lengths, cfg.batch_size, cfg.seed, epoch, group_by_length):
                if step == total:
                    return
                with tally.phase("collation"):
                    batch = encoded.batch(rows)
                tally.tokens += int(encoded.lengths[rows].sum())
                tally.padded_tokens += batch["input_ids"].numel()
                with tally.phase("forward and backward"):
                    torch.manual_seed(step_seed(cfg.seed, step, 0, 3))  # dropout
                    with autocast(model.device, bf16):
                        loss = model(**{k: v.to(model.device) for k, v in batch.items()}).loss
                    loss.backward()
                with tally.phase("optimiser"):
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                step += 1
                bar.update(1)
                if progress:
                    bar.set_postfix(loss=f"{loss.item():.3f}")


@torch.no_grad()
def outputs(model, encoded: Encoded, cfg: FinetuneConfig, bf16: bool, group_by_length: bool) -> Iterator[tuple[np.ndarray, object]]:
    """(rows, model output) over batches of ``encoded``, in evaluation mode."""
    model.eval()
    for rows in eval_batches(encoded.lengths, cfg.eval_batch_size, group_by_length):
        batch = encoded.batch(rows)
        inputs = {k: batch[k].to(model.device) for k in ("input_ids", "token_type_ids", "attention_mask")}
        with autocast(model.device, bf16):
            yield rows, model(**inputs)


def predict_logits(model, encoded, cfg, bf16, group_by_length) -> np.ndarray:
    """Sequence-level logits in the order of the features, shape (N, num_labels)."""
    rows, logits = zip(*[(rows, out.logits.float().cpu().numpy())
                         for rows, out in outputs(model, encoded, cfg, bf16, group_by_length)])
    ordered = np.empty((len(encoded), logits[0].shape[1]), dtype=logits[0].dtype)  # (N, num_labels)
    ordered[np.concatenate(rows)] = np.concatenate(logits)
    return ordered


def predict_spans(model, encoded, cfg, bf16, group_by_length) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Start and end logits of every feature in order, each cut to the feature's length."""
    starts, ends = [None] * len(encoded), [None] * len(encoded)
    for rows, out in outputs(model, encoded, cfg, bf16, group_by_length):
        start_logits, end_logits = out.start_logits.float().cpu().numpy(), out.end_logits.float().cpu().numpy()  # (B, n) each
        for i, row in enumerate(rows):
            starts[row], ends[row] = start_logits[i, : encoded.lengths[row]], end_logits[i, : encoded.lengths[row]]
    return starts, ends


def no_score(task) -> dict[str, float]:
    """Every metric of the task as NaN: what a diverged model gets."""
    return {name: math.nan for name in task.meta.metrics}


def sentence_predictions(task, logits: np.ndarray, split) -> tuple[np.ndarray, np.ndarray] | None:
    """The split's labels and the model's predictions; None from a diverged model, whose logits
    are not all finite (its argmax would pick class 0 and score like a constant predictor)."""
    if not np.isfinite(logits).all():
        return None
    return np.asarray(list(split["label"])), logits[:, 0] if task.meta.is_regression else logits.argmax(-1)


def score_sentences(task, logits: np.ndarray, split) -> dict[str, float]:
    """Every metric of the task; NaN (no score) from a diverged model (:func:`sentence_predictions`)."""
    if (found := sentence_predictions(task, logits, split)) is None:
        return no_score(task)
    labels, predictions = found
    return {name: _METRICS[name](labels, predictions) for name in task.meta.metrics}


def diverged_spans(starts: list[np.ndarray], ends: list[np.ndarray]) -> bool:
    """Whether a span model's logits are not all finite (a diverged model: it gets no score)."""
    return not all(np.isfinite(s).all() and np.isfinite(e).all() for s, e in zip(starts, ends))


def sentence_clusters(split) -> list[tuple[str, ...]]:
    """The bootstrap's clusters of a sentence-level split: examples with the same words, as a
    multiset (the two members of a minimal pair), are one cluster."""
    columns = [c for c in ("sentence1", "sentence2") if c in split.column_names]
    texts = zip(*(list(split[c]) for c in columns))
    return [tuple(" ".join(sorted((text or "").split())) for text in row) for row in texts]


def sentence_test_se(task, logits: np.ndarray, split) -> dict[str, float]:
    """The test-set sampling standard error of each metric of a sentence-level split (bootstrap
    over :func:`sentence_clusters`)."""
    if (found := sentence_predictions(task, logits, split)) is None:
        return no_score(task)
    labels, predictions = found
    clusters = sentence_clusters(split)
    return {name: metrics.bootstrap_se(lambda i, f=_METRICS[name]: f(labels[i], predictions[i]), clusters)
            for name in task.meta.metrics}


def span_test_se(per_question: dict[str, np.ndarray]) -> dict[str, float]:
    """The test-set sampling standard error, in percent, of each span metric (bootstrap over questions)."""
    return {name: 100 * metrics.bootstrap_se(lambda i, v=values: float(np.mean(v[i])), range(len(values)))
            for name, values in per_question.items()}


def training_device() -> torch.device:
    """The device pretraining trains on: accelerate's, for the same request (``Accelerator(cpu=not
    torch.cuda.is_available())`` in ``pretrain``): this process's GPU when CUDA is available, else the CPU."""
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available()).device


def finetune(model_dir: str | os.PathLike, tokenizer, task, cfg: FinetuneConfig, progress: bool = True,
             features: TaskFeatures | None = None, group_by_length: bool = True, tally: Tally | None = None) -> dict:
    """Fine-tune the pretrained model in ``model_dir`` on ``task`` (a ``pe_lib.data.Task``) and
    score it on the validation and test splits. Returns ``{"validation": {...}, "test": {...}, ...}``,
    with ``test_examples`` and ``test_se`` (each test metric's sampling standard error, bootstrap).

    ``features``: the task's :func:`task_features` for ``cfg``'s cut, when already built (they
    depend on the task, the tokenizer and :func:`feature_cut` only, so every seed and model shares
    them); built here when not given. ``group_by_length=False`` trains on batches of a plain
    permutation and evaluates in order (code version 1's batches; the benchmark's "before").
    ``tally`` receives where the time went."""
    for split in ("train", "validation", "test"):
        if split not in task.splits or len(task.splits[split]) == 0:
            raise InputError(f"task {task.meta.name!r}: split {split!r} is missing or empty; fine-tuning needs train, "
                             "validation and test examples")
    if features is not None and (refusal := features.refusal(task, cfg)) is not None:
        raise InputError(refusal)
    started = time.perf_counter()
    tally = tally if tally is not None else Tally()
    device = training_device()
    bf16 = use_bf16(cfg.precision, device)
    span = task.meta.kind == "span"
    with tally.phase("model"):
        torch.manual_seed(step_seed(cfg.seed, 0, 0, 4))  # head initialisation
        with quiet_transformers():  # the new head's "newly initialised" notice is expected
            if span:
                model = PEBertForQuestionAnswering.from_pretrained(model_dir)
            else:
                names = dict(enumerate(task.meta.label_names))  # pipelines and tables show "positive", not LABEL_1
                labels = {"id2label": names, "label2id": {name: i for i, name in names.items()}} if names else {}
                model = PEBertForSequenceClassification.from_pretrained(model_dir, num_labels=task.meta.num_labels,
                                                                        **labels)
        model.to(device)
    if features is None:
        with tally.phase("features"):
            features = task_features(tokenizer, task, cfg)
    with tally.phase("training"):
        train(model, features.splits["train"], cfg, bf16, f"finetune {task.meta.name}", progress, group_by_length, tally)

    result = {"task": task.meta.name, "origin": task.origin, "config": asdict(cfg), "train_examples": len(task.splits["train"]),
              "test_examples": len(task.splits["test"])}
    with tally.phase("evaluation"):
        for split_name in ("validation", "test"):  # validation first: SQuAD v2's null threshold is chosen on it
            split, encoded = task.splits[split_name], features.splits[split_name]
            if span:
                starts, ends = predict_spans(model, encoded, cfg, bf16, group_by_length)
                if diverged_spans(starts, ends):
                    result[split_name] = result["test_se"] = no_score(task)
                    continue
                contexts = dict(zip(list(split["id"]), list(split["context"])))
                candidates = span_candidates(encoded.features, starts, ends, contexts, cfg.max_answer_len)
                golds = {qid: list(a["text"]) for qid, a in zip(list(split["id"]), list(split["answers"]))}
                if task.meta.version_2_with_negative and "null_threshold" not in result:
                    result["null_threshold"] = best_null_threshold(candidates, golds)
                per_question = metrics.squad_per_question(answers_at(candidates, result.get("null_threshold")), golds)
                result[split_name] = metrics.squad_means(per_question)
                if split_name == "test":
                    result["test_se"] = span_test_se(per_question)
            else:
                logits = predict_logits(model, encoded, cfg, bf16, group_by_length)
                result[split_name] = score_sentences(task, logits, split)
                if split_name == "test":
                    result["test_se"] = sentence_test_se(task, logits, split)
    result["wall_s"] = time.perf_counter() - started
    return result
