import math
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from book.experiments.test_runner import count_calls, profile, runner, tokenizer  # noqa: F401 (fixtures)

from pe_lib.data.tasks import TASKS
from pe_book.experiments import baselines
from pe_book.experiments.results import CODE_VERSIONS
from pe_book.experiments.store import Store
from pe_lib.training import metrics
from pe_lib.training.finetune import answers_at, best_null_threshold
from pe_lib.training.mlm import MLMData, evaluate
from pe_lib.training.pretrain_config import PretrainConfig

MRPC, COLA, STSB, SST2 = (TASKS[n].meta for n in ("mrpc", "cola", "stsb", "sst2"))


# ----------------------------------------------------------------------------- best constant


def labels(n: int, positives: int) -> list[int]:
    return [1] * positives + [0] * (n - positives)


def test_constant_is_one_predictor_chosen_by_the_validation_task_score():
    # training majority 0; validation 60% positive; test 30% positive
    result = baselines.best_constant(MRPC, labels(100, 30), labels(50, 30), labels(200, 60))
    assert result["prediction"] == 1, "always positive: best F1 and, here, best accuracy"
    p = 0.3
    assert result["test"]["f1"] == pytest.approx(2 * p / (1 + p))  # precision p, recall 1
    assert result["test"]["accuracy"] == pytest.approx(p), "the validation choice is kept even where test disagrees"

    # validation 40% positive: "always 0" scores (0.6 + 0) / 2, "always 1" (0.4 + 0.571) / 2 -> one constant, 1;
    # the old per-metric choice (accuracy 0, F1 1) was no predictor anyone could run
    skewed = baselines.best_constant(MRPC, labels(100, 30), labels(50, 20), labels(200, 60))
    assert skewed["prediction"] == 1
    assert skewed["test"] == {"accuracy": pytest.approx(p), "f1": pytest.approx(2 * p / (1 + p))}
    mostly_negative = baselines.best_constant(MRPC, labels(100, 30), labels(50, 5), labels(200, 60))
    assert mostly_negative["prediction"] == 0  # (0.9 + 0) / 2 beats (0.1 + 0.18) / 2
    assert mostly_negative["test"] == {"accuracy": pytest.approx(0.7), "f1": 0.0}


def test_constant_ties_take_the_training_majority_and_regression_the_mean():
    cola = baselines.best_constant(COLA, labels(10, 7), labels(10, 3), labels(10, 5))
    assert cola["prediction"] == 1 and cola["test"] == {"matthews_correlation": 0.0}
    stsb = baselines.best_constant(STSB, [0.0, 1.0, 2.0], [0.5, 1.5], [0.1, 0.9])
    assert stsb["prediction"] == 1.0
    assert math.isnan(stsb["test"]["pearson"]) and baselines.task_score(stsb["test"]) == 0.0


# ----------------------------------------------------------------------------- bag of words


def sentiment(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    words = [["good", "great", "fine"], ["bad", "awful", "poor"]]
    text = [f"the {' '.join(rng.choice(['film', 'plot', 'actor', 'scene'], 3))} was {rng.choice(words[1 - v])}"
            for v in y]
    return {"sentence1": text, "label": y.tolist()}


def splits_of(make, shuffle: bool = False) -> dict:
    splits = {"train": make(300, 0), "validation": make(100, 1), "test": make(200, 2)}
    if shuffle:  # labels independent of the text
        rng = np.random.default_rng(3)
        splits = {k: {**v, "label": rng.permutation(v["label"]).tolist()} for k, v in splits.items()}
    return splits


def test_bag_of_words_beats_the_constant_on_a_separable_task_only():
    splits = splits_of(sentiment)
    bow = baselines.bag_of_words(SST2, splits, ("sentence1",))
    constant = baselines.best_constant(SST2, *(splits[s]["label"] for s in ("train", "validation", "test")))
    assert bow["model"] == "logistic regression" and bow["hyperparameter"]["C"] in baselines.LOGISTIC_C
    assert bow["test"]["accuracy"] > 0.95 and constant["test"]["accuracy"] < 0.6

    shuffled = splits_of(sentiment, shuffle=True)
    bow = baselines.bag_of_words(SST2, shuffled, ("sentence1",))
    constant = baselines.best_constant(SST2, *(shuffled[s]["label"] for s in ("train", "validation", "test")))
    assert bow["test"]["accuracy"] < constant["test"]["accuracy"] + 0.1, "no signal, nothing learned"


def pairs(n: int, seed: int) -> dict:
    """Paraphrase iff the two sentences name the same animal: only the shared words tell."""
    rng = np.random.default_rng(seed)
    animals = ["cat", "dog", "cow", "owl", "fox", "eel"]
    a, b = rng.choice(animals, n), rng.choice(animals, n)
    same = rng.random(n) < 0.5
    b = np.where(same, a, b)
    return {"sentence1": [f"the {x} sat" for x in a], "sentence2": [f"a {y} ran" for y in b],
            "label": [int(x == y) for x, y in zip(a, b)]}


def test_pair_features_include_the_shared_words():
    splits = splits_of(pairs)
    assert baselines.bow_features(splits, ("sentence1", "sentence2"))["train"].shape[1] == 3 * 10
    bow = baselines.bag_of_words(MRPC, splits, ("sentence1", "sentence2"))
    assert bow["test"]["accuracy"] > 0.95 and bow["test"]["f1"] > 0.95


def test_ridge_for_regression():
    splits = splits_of(pairs)
    splits = {k: {**v, "label": [float(y) * 5 for y in v["label"]]} for k, v in splits.items()}
    bow = baselines.bag_of_words(STSB, splits, ("sentence1", "sentence2"))
    assert bow["model"] == "ridge regression" and bow["test"]["pearson"] > 0.9


# ----------------------------------------------------------------------------- span rules


def test_span_rules_score_with_the_squad_metric():
    context = "alpha: the first thing. beta: the other thing. gamma: a third one."
    split = {"id": ["q1", "q2"], "question": ["Which word means: the other thing?", "Which word means: a fourth?"],
             "context": [context, context], "answers": [{"text": ["beta"]}, {"text": []}]}
    assert baselines.sentences(context) == ["alpha: the first thing.", "beta: the other thing.", "gamma: a third one."]
    assert baselines.question_overlap("q1", split["question"][0], context)[0] == "beta: the other thing."
    result = baselines.span_rules({"validation": split, "test": split})
    assert result["constant"]["test"] == {"exact_match": 50.0, "f1": 50.0}, "no answer: right on the unanswerable one"
    overlap_f1 = 100 * metrics.token_f1("beta: the other thing.", "beta") / 2
    assert result["question overlap"]["test"]["f1"] == pytest.approx(overlap_f1)
    assert result["first sentence"]["test"] == {"exact_match": 0.0, "f1": 0.0}
    assert "neighbour match" not in result, "a cloze-only rule is left out where no question has a blank"
    assert all(r["order_free"] for r in result.values())


CLOZE_CONTEXT = "Then Moses went up the mountain with Aaron. And Aaron spoke to the people of Israel."


def test_random_candidate_draws_a_content_word_of_the_context_seeded_by_the_id():
    answers = {baselines.random_candidate(f"q{i}", "Who went up the _?", CLOZE_CONTEXT)[0] for i in range(60)}
    assert answers == {"moses", "went", "mountain", "aaron", "spoke", "people", "israel"}  # never "the", "of", "up"
    assert baselines.random_candidate("q1", "x", CLOZE_CONTEXT) == baselines.random_candidate("q1", "y", CLOZE_CONTEXT)
    assert baselines.random_candidate("q1", "x", "of the and") == ("", 0.0)


def test_absent_word_answers_a_word_of_the_best_sentence_that_the_question_lacks():
    question = "Then Moses went up the _ with Aaron."
    answer, overlap = baselines.absent_word("q1", question, CLOZE_CONTEXT)
    assert answer == "mountain"  # the only content word of the first sentence not in the question
    assert overlap == pytest.approx(3 / 3)  # moses, went, aaron: all the question's content words
    assert baselines.absent_word("q2", "Unrelated words entirely _", CLOZE_CONTEXT)[1] == 0.0


def test_neighbour_match_reads_the_words_around_the_blank():
    # "Aaron" occurs twice; the words around the blank, at the same distances, pick the second
    answer, matches = baselines.neighbour_match("q1", "And _ spoke unto the people.", CLOZE_CONTEXT)
    assert answer == "aaron" and matches == 3.0  # "and" at -1, "spoke" at +1, "the" at +3 ("unto" is not "to")
    assert baselines.neighbour_match("q1", "No blank here.", CLOZE_CONTEXT) == ("", 0.0)
    shuffled = "Aaron spoke to the people of Israel and. Then Moses went up the mountain with Aaron."
    assert baselines.neighbour_match("q1", "And _ spoke unto the people.", shuffled)[1] < matches


def test_span_rules_choose_a_no_answer_threshold_on_validation():
    context = "Moses went up the mountain. Aaron stayed in the camp."
    validation = {"id": ["a", "b"], "question": ["Moses went up the _.", "Pharaoh hardened his _."],
                  "context": [context, context], "answers": [{"text": ["mountain"]}, {"text": []}]}
    result = baselines.span_rules({"validation": validation, "test": validation}, with_negatives=True)
    assert result["absent word"]["test"] == {"exact_match": 100.0, "f1": 100.0}  # no overlap -> "no answer"
    assert result["neighbour match"]["test"] == {"exact_match": 100.0, "f1": 100.0}
    assert result["neighbour match"]["order_free"] is False and result["absent word"]["order_free"] is True
    assert result["random candidate"]["test"]["exact_match"] <= 50.0  # no confidence: answers all or none


def test_best_baseline_of_all_or_of_the_order_free_ones():
    payload = {"kind": "span", "baselines": {
        "constant": {"test": {"exact_match": 50.0, "f1": 50.0}, "order_free": True},
        "absent word": {"test": {"exact_match": 60.0, "f1": 62.0}, "order_free": True},
        "neighbour match": {"test": {"exact_match": 80.0, "f1": 80.0}, "order_free": False}}}
    assert baselines.best_baseline(payload) == ("neighbour match", 80.0)
    assert baselines.best_baseline(payload, order_free=True) == ("absent word", 61.0)
    older = {"kind": "span", "baselines": {"constant": {"test": {"exact_match": 50.0, "f1": 50.0}}}}
    assert baselines.best_baseline(older, order_free=True) == ("constant", 50.0)  # stored without the flag: order-free


def test_a_rule_that_reads_word_order_is_told_by_its_flag_or_its_rule():
    payload = {"kind": "span", "baselines": {
        "absent word": {"test": {"exact_match": 60.0, "f1": 62.0}, "order_free": True},
        "neighbour match": {"test": {"exact_match": 80.0, "f1": 80.0}, "order_free": False}}}
    assert baselines.reads_order(payload, "neighbour match") and not baselines.reads_order(payload, "absent word")
    assert baselines.best_reference(payload) == ("neighbour match", 80.0)
    # stored before the flag: its rule in SPAN_RULES says (neighbour match reads order, bag of words does not)
    older = {"kind": "span", "baselines": {name: {"test": result["test"]} for name, result in payload["baselines"].items()}}
    assert baselines.reads_order(older, "neighbour match") and baselines.best_baseline(older, order_free=True)[0] == "absent word"
    sentence = {"kind": "classification", "baselines": {"bag of words": {"test": {"accuracy": 0.8}}}}
    assert not baselines.reads_order(sentence, "bag of words") and baselines.best_reference(sentence) is None


# ----------------------------------------------------------------------------- null threshold


def test_null_threshold_maximises_f1():
    golds = {"a": ["black cat"], "b": [], "c": ["sat"], "d": [], "e": ["mat"]}
    candidates = {"a": ("cat", -2.0), "b": ("dog", -1.0), "c": ("sat", -1.5), "d": ("mat", 3.0), "e": ("rug", 0.5)}

    def f1(threshold):
        return metrics.squad_scores(answers_at(candidates, threshold), golds)["f1"]

    chosen = best_null_threshold(candidates, golds)
    thresholds = sorted([-math.inf] + [d for _, d in candidates.values()])
    best = max(thresholds, key=f1)  # the first (lowest) of the best
    assert chosen == best == -1.5 and f1(chosen) == pytest.approx(100 * (2 / 3 + 1 + 1 + 1 + 0) / 5)
    assert f1(chosen) > f1(0.0), "the default threshold 0 also answers b, wrongly"


def test_null_threshold_is_minus_infinity_when_answering_never_helps():
    golds = {"a": [], "b": ["x"]}
    assert best_null_threshold({"a": ("y", -1.0), "b": ("z", 1.0)}, golds) == -math.inf
    tied = {"b": ("x", 0.0), "a": ("y", 0.0)}  # one threshold cannot answer b and not a: +1 - 1
    assert best_null_threshold(tied, golds) == -math.inf


# ----------------------------------------------------------------------------- unigram


def test_unigram_loss_is_the_entropy_of_its_own_stream():
    stream = np.array([5, 5, 5, 6, 6, 7, 8, 8, 8, 8])
    log_probs = baselines.unigram_log_probs(stream, 10, special_ids=(0, 1, 2, 3, 4), smoothing=0.0)
    p = np.array(list(Counter(stream.tolist()).values())) / len(stream)
    assert -log_probs[stream].mean() == pytest.approx(-(p * np.log(p)).sum())
    smoothed = np.exp(baselines.unigram_log_probs(stream, 10, special_ids=(0, 1, 2, 3, 4)))
    assert smoothed.sum() == pytest.approx(1.0) and (smoothed[:5] == 0).all()
    assert smoothed[9] == pytest.approx(1 / (10 + 5)), "add-one: an unseen maskable token"


class UnigramLM(torch.nn.Module):
    """A 'model' whose MLM loss is the unigram model's; records the labels it is scored on."""

    def __init__(self, log_probs):
        super().__init__()
        self.register_buffer("log_probs", torch.as_tensor(log_probs, dtype=torch.float64))
        self.seen = []

    def forward(self, input_ids, labels, masked_only=False):  # the loss is over the masked tokens either way
        targets = labels[labels != -100]
        self.seen.append(targets.numpy())
        return SimpleNamespace(loss=-self.log_probs[targets].mean())


def test_unigram_is_scored_on_the_validation_tokens_of_the_mlm_loss():
    rng = np.random.default_rng(0)
    zipf = 1 / np.arange(1, 47)
    blocks = rng.choice(np.arange(4, 50), size=(40, 16), p=zipf / zipf.sum())
    blocks[:, 0], blocks[:, -1] = 1, 2
    data = MLMData(blocks[:24], blocks[24:], vocab_size=50, mask_id=3, special_ids=(0, 1, 2, 3))
    cfg = PretrainConfig(batch_size=4, eval_batches=3, seed=7)
    model = UnigramLM(baselines.unigram_log_probs(data.train, 50, data.special_ids))
    loss = evaluate(model, data, cfg, torch.device("cpu"), bf16=False)
    assert np.array_equal(np.concatenate(model.seen), baselines.validation_targets(data, cfg))
    result = baselines.unigram_validation_loss(data, cfg)
    assert result["validation_loss"] == pytest.approx(loss) and result["tokens"] == sum(map(len, model.seen))
    assert result["validation_loss"] < math.log(46), "frequencies beat the uniform guess over maskable tokens"


# ----------------------------------------------------------------------------- runner


def test_runner_stores_baselines_and_reuses_them(runner, monkeypatch):  # noqa: F811 (fixture)
    first = runner.ensure_baselines("sst2")
    config = first.provenance["config"]
    assert config["stage"] == "baselines" and config["code_version"] == CODE_VERSIONS["baselines"]
    assert config["data"] == runner.task_fingerprint("sst2")
    assert first.folder.parent == runner.store.root / "baselines"
    found = first.payload["baselines"]
    assert found["bag of words"]["test"]["accuracy"] == 1.0, "the fixture's words give the label away"
    assert found["constant"]["test"]["accuracy"] == 0.5 and first.payload["train_examples"] == 16

    unigram = runner.ensure_unigram()
    expected = baselines.unigram_validation_loss(runner.mlm_data(), runner.profile.pretrain)
    assert unigram.payload == expected and unigram.provenance["config"]["data"] == runner.data_fingerprint()

    calls = [count_calls(monkeypatch, name) for name in ("task_baselines", "unigram_validation_loss")]
    assert runner.ensure_baselines("sst2").payload == first.payload and runner.ensure_unigram().payload == expected
    assert calls == [[], []], "stored baselines are read, not recomputed"
    scores = baselines.best_constant_scores(runner, ["sst2"], {"classification": ["sst2"], "span": ["squad"]})
    assert scores == {"sst2": 50.0, "classification": 50.0}, "percent; a group with absent tasks is left out"
    rows = baselines.baseline_payloads(runner, ["sst2"])
    assert set(rows) == {("baseline: best constant", "sst2", 0, 0), ("baseline: bag of words", "sst2", 0, 0)}
    assert Store.key(config) == first.folder.name.rsplit("-", 1)[1]


def test_null_threshold_note_says_when_every_variant_sits_at_no_answer():
    constant = pd.Series({"squad_v2 EM": 49.0, "squad_v2 F1": 49.0, "squad F1": 0.0})
    at_null = pd.DataFrame({"squad_v2 EM": [49.0, 49.0], "squad_v2 F1": [49.0, 49.0], "squad F1": [9.0, 20.0]},
                           index=["a", "b"])
    runs = {(v, "squad_v2", 0, s): {"null_threshold": -math.inf} for v in "ab" for s in (0, 1)}
    note = baselines.null_threshold_note({**runs, ("a", "squad", 0, 0): {}}, at_null, constant)
    assert "every variant scores exactly" in note and "in 4 of 4 runs" in note and "lost more F1" in note
    runs[("a", "squad_v2", 0, 0)] = {"null_threshold": 1.5}
    moved = at_null.assign(**{"squad_v2 F1": [52.0, 49.0]})
    assert "answer in 1 of 4 runs" in baselines.null_threshold_note(runs, moved, constant)
    assert "1 of 2 variants score above" in baselines.null_threshold_note(runs, moved, constant)
    assert baselines.null_threshold_note({("a", "squad", 0, 0): {}}, at_null, constant) == ""
