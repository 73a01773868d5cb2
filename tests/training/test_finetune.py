import shutil
import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from datasets import Dataset, DatasetDict
from transformers import BertTokenizer

from pe_lib import PEBertForMaskedLM
from pe_lib.data.tasks import TASKS, Task
from pe_lib.errors import InputError
from pe_lib.training.finetune import (Encoded, FinetuneConfig, Tally, answer_tokens, decode_spans, finetune, predict_logits,
                                      predict_spans, span_features, task_features, train_batches)

WORDS = "good bad great awful fine poor film plot actor scene music story was is the a and cat dog sat on mat".split()


@pytest.fixture
def tokenizer(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ":", ".", "?", *WORDS]) + "\n")
    return BertTokenizer(vocab=str(vocab))


@pytest.fixture
def model_dir(tokenizer, make_config, tmp_path):
    config = make_config("ape-learned+rpe-learned", vocab_size=len(tokenizer), max_position_embeddings=64)
    PEBertForMaskedLM(config).save_pretrained(tmp_path / "pretrained")
    return tmp_path / "pretrained"


def sentiment_task(n=96, seed=0) -> Task:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = i % 2
        word = rng.choice(["good", "great", "fine"] if label else ["bad", "awful", "poor"])
        filler = " ".join(rng.choice(["film", "plot", "actor", "scene", "music", "story"], size=4))
        rows.append({"sentence1": f"the {filler} was {word}", "label": label})
    splits = DatasetDict({"train": Dataset.from_list(rows[:64]), "validation": Dataset.from_list(rows[64:80]),
                          "test": Dataset.from_list(rows[80:])})
    return Task(TASKS["sst2"].meta, splits, "test-fixture")


def test_classification_learns_a_separable_task(model_dir, tokenizer):
    cfg = FinetuneConfig(epochs=12, batch_size=16, lr=2e-3, max_seq_len=32, doc_stride=8, precision="fp32")
    result = finetune(model_dir, tokenizer, sentiment_task(), cfg, progress=False)
    assert set(result) >= {"validation", "test", "wall_s", "train_examples", "test_examples", "test_se"}
    assert result["validation"]["accuracy"] >= 0.9
    # the test split's size and each metric's sampling standard error, of the order of sqrt(p (1 - p) / n)
    assert result["test_examples"] == 16
    p = result["test"]["accuracy"]
    assert set(result["test_se"]) == {"accuracy"}
    assert result["test_se"]["accuracy"] == pytest.approx(math.sqrt(p * (1 - p) / 16), rel=0.5, abs=0.03)


def test_same_seed_same_scores(model_dir, tokenizer):
    cfg = FinetuneConfig(epochs=1, batch_size=16, max_seq_len=32, doc_stride=8, precision="fp32", seed=3)
    a = finetune(model_dir, tokenizer, sentiment_task(), cfg, progress=False)
    b = finetune(model_dir, tokenizer, sentiment_task(), cfg, progress=False)
    assert a["validation"] == b["validation"] and a["test"] == b["test"]


def test_regression_reports_correlations(model_dir, tokenizer):
    task = sentiment_task()
    task = Task(TASKS["stsb"].meta, DatasetDict({k: v.map(lambda r: {"sentence2": "the film", "label": float(r["label"])})
                                                  for k, v in task.splits.items()}), "test-fixture")
    cfg = FinetuneConfig(epochs=2, batch_size=16, lr=1e-3, max_seq_len=32, doc_stride=8, precision="fp32")
    result = finetune(model_dir, tokenizer, task, cfg, progress=False)
    assert set(result["test"]) == {"pearson", "spearmanr"}


def squad_split(n, with_unanswerable=False):
    rows = []
    for i in range(n):
        context = "cat: a dog sat. dog: a cat sat on the mat. mat: the film."
        if with_unanswerable and i % 2:
            rows.append({"id": f"q{i}", "title": "t", "context": context, "question": "the plot?",
                         "answers": {"text": [], "answer_start": []}})
        else:
            rows.append({"id": f"q{i}", "title": "t", "context": context, "question": "a cat sat on the mat?",
                         "answers": {"text": ["dog"], "answer_start": [16]}})
    return Dataset.from_list(rows)


def test_answer_tokens_map_characters_to_the_window(tokenizer):
    cfg = FinetuneConfig(max_seq_len=24, doc_stride=4, max_question_len=12)
    features = span_features(tokenizer, squad_split(1), cfg, with_labels=True)
    assert len(features) >= 2  # the context overflows into several windows
    found = [(f["start_positions"], f["end_positions"]) for f in features if f["start_positions"] > 0]
    assert found, "some window contains the answer"
    f = next(f for f in features if f["start_positions"] > 0)
    assert tokenizer.convert_ids_to_tokens(f["input_ids"][f["start_positions"]]) == "dog"
    assert answer_tokens({"text": [], "answer_start": []}, [(0, 0)], [False]) == (0, 0)


def test_decode_prefers_the_best_valid_span_and_null_for_v2():
    features = [{"example_id": "q", "offsets": [None, None, (0, 3), (4, 7), (8, 11)]}]
    contexts = {"q": "cat dog sat"}
    starts = [np.array([0.0, 9.0, 1.0, 5.0, 0.0])]  # index 1 is not context: ignored
    ends = [np.array([0.0, 0.0, 0.0, 1.0, 4.0])]
    assert decode_spans(features, starts, ends, contexts, max_answer_len=5, allow_null=False) == {"q": "dog sat"}
    assert decode_spans(features, starts, ends, contexts, max_answer_len=1, allow_null=False) == {"q": "dog"}
    starts[0][0], ends[0][0] = 10.0, 10.0
    assert decode_spans(features, starts, ends, contexts, max_answer_len=5, allow_null=True) == {"q": ""}


@pytest.mark.parametrize("name", ["squad", "squad_v2"])
def test_span_task_runs_end_to_end(name, model_dir, tokenizer):
    split = lambda n: squad_split(n, with_unanswerable=name == "squad_v2")  # noqa: E731
    task = Task(TASKS[name].meta, DatasetDict({"train": split(32), "validation": split(8), "test": split(8)}), "fixture")
    cfg = FinetuneConfig(epochs=6, batch_size=8, lr=2e-3, max_seq_len=24, doc_stride=4, max_question_len=12, precision="fp32")
    result = finetune(model_dir, tokenizer, task, cfg, progress=False)
    assert set(result["test"]) == {"exact_match", "f1"}
    assert result["test"]["f1"] >= 50  # a single repeated question is learnable
    assert ("null_threshold" in result) == (name == "squad_v2")  # chosen on validation for v2 only
    assert result["test_examples"] == 8 and set(result["test_se"]) == {"exact_match", "f1"}
    assert all(0 <= se <= 50 for se in result["test_se"].values())  # percent, as the scores


def test_empty_split_is_refused(model_dir, tokenizer):
    task = sentiment_task()
    task.splits["test"] = task.splits["test"].select([])
    with pytest.raises(InputError, match="split 'test' is missing or empty"):
        finetune(model_dir, tokenizer, task, FinetuneConfig(max_seq_len=32, doc_stride=8), progress=False)


def test_a_bad_fine_tuning_config_is_bad_input_naming_what_is_valid():
    with pytest.raises(InputError, match="precision must be one of auto, bf16, fp32, got 'fp16'"):
        FinetuneConfig(precision="fp16")
    with pytest.raises(InputError, match="doc_stride must be at least 0 and max_question_len at least 1, got -1 and 64"):
        FinetuneConfig(doc_stride=-1)


def test_long_questions_are_cut_at_a_token_boundary(tokenizer):
    from pe_lib.training.finetune import cut_questions

    assert cut_questions(tokenizer, ["  the cat sat on the mat ?", "dog ?"], 3) == ["the cat sat", "dog ?"]
    with pytest.raises(InputError, match="doc_stride 20 must be below the 9 context tokens"):
        FinetuneConfig(max_seq_len=24, doc_stride=20, max_question_len=12).check_span_lengths()


def test_finetune_runs_on_the_device_pretraining_uses(model_dir, tokenizer, monkeypatch):
    import torch
    from accelerate import Accelerator

    import pe_lib.training.finetune as ft

    chosen = ft.training_device()
    assert chosen == Accelerator(cpu=not torch.cuda.is_available()).device  # pretrain's device
    assert chosen.type == ("cuda" if torch.cuda.is_available() else "cpu")
    seen, autocast_devices = {}, []
    real_train, real_autocast = ft.train, ft.autocast

    def spy_train(model, *args, **kwargs):
        seen["model"] = model
        return real_train(model, *args, **kwargs)

    monkeypatch.setattr(ft, "train", spy_train)
    monkeypatch.setattr(ft, "autocast", lambda device, bf16: autocast_devices.append(device) or real_autocast(device, bf16))
    cfg = FinetuneConfig(epochs=1, batch_size=16, max_seq_len=32, doc_stride=8, precision="fp32")
    ft.finetune(model_dir, tokenizer, sentiment_task(), cfg, progress=False)
    model = seen["model"]
    assert {p.device for p in model.parameters()} == {chosen}
    assert autocast_devices and set(autocast_devices) == {chosen}  # every training and evaluation batch
    assert model.config.id2label == {0: "negative", 1: "positive"}
    assert model.config.label2id == {"negative": 0, "positive": 1}


# ----------------------------------------------------------------------------- batches and features


class EchoModel(torch.nn.Module):
    """Outputs that name their input: a sequence's logits are the sum and the length of its ids,
    a token's start and end logits its id (padding excluded), so a prediction shows whose it is."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))

    @property
    def device(self):
        return self.weight.device

    def forward(self, input_ids, token_type_ids, attention_mask):
        ids = (input_ids * attention_mask).float()  # (B, n)
        logits = torch.stack([ids.sum(1), attention_mask.sum(1).float()], dim=1)  # (B, 2)
        return SimpleNamespace(logits=logits, start_logits=ids, end_logits=-ids)


def encoded_rows(lengths, pad_id=0):
    features = [{"input_ids": list(range(5, 5 + n)), "token_type_ids": [0] * n, "labels": i % 2} for i, n in enumerate(lengths)]
    return features, Encoded.of(features, pad_id)


@pytest.mark.parametrize("group_by_length", [True, False])
def test_predictions_come_back_in_feature_order(group_by_length):
    lengths = [3, 9, 1, 7, 7, 2, 12, 5, 4, 10, 6]
    features, encoded = encoded_rows(lengths)
    cfg = FinetuneConfig(eval_batch_size=4)
    logits = predict_logits(EchoModel(), encoded, cfg, False, group_by_length)
    np.testing.assert_array_equal(logits, [[sum(f["input_ids"]), len(f["input_ids"])] for f in features])
    starts, ends = predict_spans(EchoModel(), encoded, cfg, False, group_by_length)
    for f, start, end in zip(features, starts, ends):
        np.testing.assert_array_equal(start, f["input_ids"])  # cut to the feature's own length
        np.testing.assert_array_equal(end, -np.array(f["input_ids"]))


def test_a_batch_is_the_features_padded_to_their_longest():
    features, encoded = encoded_rows([3, 9, 1, 7])
    batch = encoded.batch(np.array([2, 0]))
    assert batch["input_ids"].tolist() == [[5, 0, 0], [5, 6, 7]]
    assert batch["attention_mask"].tolist() == [[1, 0, 0], [1, 1, 1]]
    assert batch["token_type_ids"].shape == (2, 3) and batch["labels"].tolist() == [0, 0]


def test_ungrouped_batches_are_slices_of_the_seeded_permutation():
    """Code version 1's batches: consecutive slices of the permutation seeded by (seed, epoch)."""
    lengths = np.random.default_rng(1).integers(1, 60, size=203)
    for epoch in (0, 1):
        order = np.random.default_rng([7, epoch]).permutation(203)
        batches = train_batches(lengths, 16, 7, epoch, group_by_length=False)
        assert [b.tolist() for b in batches] == [order[i : i + 16].tolist() for i in range(0, 203, 16)]


def test_grouped_batches_hold_every_row_once_and_less_padding():
    lengths = np.random.default_rng(1).integers(1, 120, size=5003)
    plain = train_batches(lengths, 32, 3, 0, group_by_length=False)
    grouped = train_batches(lengths, 32, 3, 0, group_by_length=True)
    assert sorted(np.concatenate(grouped).tolist()) == list(range(5003))
    assert sorted(len(b) for b in grouped) == sorted(len(b) for b in plain)  # one short batch, as before
    padded = lambda batches: sum(len(b) * lengths[b].max() for b in batches)  # noqa: E731
    assert padded(grouped) < 0.8 * padded(plain)
    assert [b.tolist() for b in grouped] != [b.tolist() for b in train_batches(lengths, 32, 3, 1, True)]  # reshuffled each epoch


def test_features_of_another_cut_or_task_are_refused(model_dir, tokenizer):
    task = sentiment_task()
    cfg = FinetuneConfig(epochs=1, batch_size=16, max_seq_len=32, doc_stride=8, precision="fp32")
    features = task_features(tokenizer, task, replace(cfg, max_seq_len=24))
    with pytest.raises(InputError, match=r"cut with .*'max_seq_len': 24.* build them with task_features") as error:
        finetune(model_dir, tokenizer, task, cfg, progress=False, features=features)
    assert "\n" not in str(error.value)
    stsb = Task(TASKS["stsb"].meta, task.splits, "test-fixture")
    with pytest.raises(InputError, match="features of task 'sst2'.* 'stsb'"):
        finetune(model_dir, tokenizer, stsb, cfg, progress=False, features=task_features(tokenizer, task, cfg))
    fewer = Task(task.meta, DatasetDict({**task.splits, "train": task.splits["train"].select(range(32))}), "test-fixture")
    with pytest.raises(InputError, match=r"from \{.train.: 64, .*from \{.train.: 32"):
        finetune(model_dir, tokenizer, fewer, cfg, progress=False, features=task_features(tokenizer, task, cfg))


@pytest.mark.parametrize("group_by_length", [True, False])
def test_given_features_fine_tune_as_built_ones(model_dir, tokenizer, group_by_length):
    task = sentiment_task()
    cfg = FinetuneConfig(epochs=2, batch_size=16, max_seq_len=32, doc_stride=8, precision="fp32", seed=1)
    built = finetune(model_dir, tokenizer, task, cfg, progress=False, group_by_length=group_by_length)
    given = finetune(model_dir, tokenizer, task, cfg, progress=False, group_by_length=group_by_length,
                     features=task_features(tokenizer, task, cfg))
    assert (given["validation"], given["test"]) == (built["validation"], built["test"])


def test_tally_counts_the_tokens_and_the_padding(model_dir, tokenizer):
    task = sentiment_task()
    cfg = FinetuneConfig(epochs=1, batch_size=16, max_seq_len=32, doc_stride=8, precision="fp32")
    tally = Tally()
    finetune(model_dir, tokenizer, task, cfg, progress=False, tally=tally)
    train = task_features(tokenizer, task, cfg).splits["train"]
    assert tally.tokens == int(train.lengths.sum())
    assert tally.tokens <= tally.padded_tokens <= len(train) * int(train.lengths.max())
    assert {"model", "features", "training", "collation", "forward and backward", "optimiser", "evaluation"} <= set(tally.seconds)


def test_a_diverged_model_gets_no_score_not_the_score_of_class_zero(model_dir, tokenizer, tmp_path):
    from safetensors.torch import load_file, save_file

    weights = load_file(model_dir / "model.safetensors")
    weights = {name: torch.full_like(w, float("nan")) if w.is_floating_point() else w for name, w in weights.items()}
    broken = tmp_path / "broken"
    shutil.copytree(model_dir, broken)
    save_file(weights, broken / "model.safetensors")
    cfg = FinetuneConfig(epochs=1, batch_size=16, max_seq_len=32, doc_stride=8, precision="fp32")
    result = finetune(broken, tokenizer, sentiment_task(), cfg, progress=False)
    assert all(math.isnan(v) for split in ("validation", "test") for v in result[split].values())
    assert all(math.isnan(v) for v in result["test_se"].values())
