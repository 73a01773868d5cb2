import numpy as np
import pytest
from datasets import Dataset, DatasetDict
from transformers import BertTokenizer

from pe_lib import PEBertForMaskedLM
from pe_lib.data.tasks import TASKS, Task
from pe_lib.training.finetune import FinetuneConfig, answer_tokens, decode_spans, finetune, span_features

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
    assert set(result) >= {"validation", "test", "wall_s", "train_examples"}
    assert result["validation"]["accuracy"] >= 0.9


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


def test_empty_split_is_refused(model_dir, tokenizer):
    task = sentiment_task()
    task.splits["test"] = task.splits["test"].select([])
    with pytest.raises(ValueError, match="split 'test' is missing or empty"):
        finetune(model_dir, tokenizer, task, FinetuneConfig(max_seq_len=32, doc_stride=8), progress=False)


def test_long_questions_are_cut_at_a_token_boundary(tokenizer):
    from pe_lib.training.finetune import cut_questions

    assert cut_questions(tokenizer, ["  the cat sat on the mat ?", "dog ?"], 3) == ["the cat sat", "dog ?"]
    with pytest.raises(ValueError, match="doc_stride 20 must be below the 9 context tokens"):
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
