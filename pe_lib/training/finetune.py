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
from dataclasses import asdict, dataclass

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from pe_lib.model import PEBertForQuestionAnswering, PEBertForSequenceClassification, quiet_transformers
from pe_lib.training import metrics
from pe_lib.training.pretrain import PRECISIONS, autocast, param_groups, step_seed, use_bf16

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
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.doc_stride < 0 or self.max_question_len < 1:
            raise ValueError("doc_stride must be >= 0 and max_question_len >= 1")

    def check_span_lengths(self) -> None:
        """Windows need room for the context beyond the stride: [CLS] question [SEP] context [SEP]."""
        context_room = self.max_seq_len - self.max_question_len - 3
        if self.doc_stride >= context_room:
            raise ValueError(f"doc_stride {self.doc_stride} must be below the {context_room} context tokens left by "
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


def collate(features: list[dict], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad to the longest sequence of the batch."""
    n = max(len(f["input_ids"]) for f in features)
    ids = torch.full((len(features), n), pad_id, dtype=torch.long)  # (B, n)
    types = torch.zeros_like(ids)  # (B, n)
    for row, f in enumerate(features):
        ids[row, : len(f["input_ids"])] = torch.tensor(f["input_ids"])
        types[row, : len(f["token_type_ids"])] = torch.tensor(f["token_type_ids"])
    batch = {"input_ids": ids, "token_type_ids": types, "attention_mask": (ids != pad_id).long()}
    for key in ("labels", "start_positions", "end_positions"):
        if key in features[0]:
            batch[key] = torch.tensor([f[key] for f in features])
    return batch


def batches(features: list[dict], size: int, pad_id: int, order: np.ndarray | None = None) -> Iterator[dict]:
    order = np.arange(len(features)) if order is None else order
    for start in range(0, len(order), size):
        yield collate([features[i] for i in order[start : start + size]], pad_id)


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


def train(model, features: list[dict], cfg: FinetuneConfig, pad_id: int, bf16: bool, desc: str, progress: bool) -> None:
    steps_per_epoch = math.ceil(len(features) / cfg.batch_size)
    total = max(1, round(cfg.epochs * steps_per_epoch))
    optimizer = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr, eps=1e-6)
    scheduler = get_linear_schedule_with_warmup(optimizer, round(cfg.warmup_ratio * total), total)
    model.train()
    step = 0
    with tqdm(total=total, desc=desc, disable=not progress, unit="step") as bar:
        for epoch in range(math.ceil(cfg.epochs)):
            order = np.random.default_rng([cfg.seed, epoch]).permutation(len(features))
            for batch in batches(features, cfg.batch_size, pad_id, order):
                if step == total:
                    return
                torch.manual_seed(step_seed(cfg.seed, step, 0, 3))  # dropout
                with autocast(model.device, bf16):
                    loss = model(**{k: v.to(model.device) for k, v in batch.items()}).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.3f}")


@torch.no_grad()
def outputs(model, features: list[dict], cfg: FinetuneConfig, pad_id: int, bf16: bool) -> Iterator[tuple[dict, object]]:
    """(batch, model output) over ``features`` in order, in evaluation mode."""
    model.eval()
    for batch in batches(features, cfg.eval_batch_size, pad_id):
        inputs = {k: batch[k].to(model.device) for k in ("input_ids", "token_type_ids", "attention_mask")}
        with autocast(model.device, bf16):
            yield batch, model(**inputs)


def predict_logits(model, features, cfg, pad_id, bf16) -> np.ndarray:
    """Sequence-level logits, shape (N, num_labels)."""
    return np.concatenate([out.logits.float().cpu().numpy() for _, out in outputs(model, features, cfg, pad_id, bf16)])


def predict_spans(model, features, cfg, pad_id, bf16) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Start and end logits of every feature, each cut to the feature's length."""
    starts, ends = [], []
    for batch, out in outputs(model, features, cfg, pad_id, bf16):
        for row, n in enumerate(batch["attention_mask"].sum(1).tolist()):
            starts.append(out.start_logits[row, :n].float().cpu().numpy())
            ends.append(out.end_logits[row, :n].float().cpu().numpy())
    return starts, ends


def score_sentences(task, logits: np.ndarray, split) -> dict[str, float]:
    labels = np.asarray(list(split["label"]))
    predictions = logits[:, 0] if task.meta.is_regression else logits.argmax(-1)
    return {name: _METRICS[name](labels, predictions) for name in task.meta.metrics}


def training_device() -> torch.device:
    """The device pretraining trains on: accelerate's, for the same request (``Accelerator(cpu=not
    torch.cuda.is_available())`` in ``pretrain``): this process's GPU when CUDA is available, else the CPU."""
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available()).device


def finetune(model_dir: str | os.PathLike, tokenizer, task, cfg: FinetuneConfig, progress: bool = True) -> dict:
    """Fine-tune the pretrained model in ``model_dir`` on ``task`` (a ``pe_lib.data.Task``) and
    score it on the validation and test splits. Returns ``{"validation": {...}, "test": {...}, ...}``."""
    for split in ("train", "validation", "test"):
        if split not in task.splits or len(task.splits[split]) == 0:
            raise ValueError(f"task {task.meta.name!r}: split {split!r} is missing or empty")
    started = time.perf_counter()
    device = training_device()
    bf16 = use_bf16(cfg.precision, device)
    pad_id = tokenizer.pad_token_id
    span = task.meta.kind == "span"
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
    if span:
        train_features = span_features(tokenizer, task.splits["train"], cfg, with_labels=True)
    else:
        train_features = sentence_features(tokenizer, task.splits["train"], task.text_columns, cfg.max_seq_len)
    train(model, train_features, cfg, pad_id, bf16, f"finetune {task.meta.name}", progress)

    result = {"task": task.meta.name, "origin": task.origin, "config": asdict(cfg), "train_examples": len(task.splits["train"])}
    for split_name in ("validation", "test"):  # validation first: SQuAD v2's null threshold is chosen on it
        split = task.splits[split_name]
        if span:
            features = span_features(tokenizer, split, cfg, with_labels=False)
            starts, ends = predict_spans(model, features, cfg, pad_id, bf16)
            contexts = dict(zip(list(split["id"]), list(split["context"])))
            candidates = span_candidates(features, starts, ends, contexts, cfg.max_answer_len)
            golds = {qid: list(a["text"]) for qid, a in zip(list(split["id"]), list(split["answers"]))}
            if task.meta.version_2_with_negative and "null_threshold" not in result:
                result["null_threshold"] = best_null_threshold(candidates, golds)
            result[split_name] = metrics.squad_scores(answers_at(candidates, result.get("null_threshold")), golds)
        else:
            features = sentence_features(tokenizer, split, task.text_columns, cfg.max_seq_len)
            result[split_name] = score_sentences(task, predict_logits(model, features, cfg, pad_id, bf16), split)
    result["wall_s"] = time.perf_counter() - started
    return result
