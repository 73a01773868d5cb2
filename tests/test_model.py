import pytest
import torch

from pe_lib import (
    PEBertConfig,
    PEBertForMaskedLM,
    PEBertForQuestionAnswering,
    PEBertForSequenceClassification,
    PEBertModel,
    all_variants,
    parse_variant,
)
from pe_lib.errors import PositionOutOfRange
from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM

UNTIED = ("rpe-learned+untie-cls", "rpe-sin+untie-cls", "alibi+untie-cls", "t5-bias+untie-cls",
          "ape-learned+rpe-sin-learned+untie-cls")
VARIANTS = all_variants() + list(UNTIED)
FIXED = {"none", "ape-sin", "rpe-sin", "rope", "alibi"}  # no trainable position parameters
FREQUENCY_LEARNED = {"ape-sin-learned", "rpe-sin-learned"}


def batch(n=10, b=2, vocab=64, pad_from=7):
    ids = torch.randint(5, vocab, (b, n))
    mask = torch.ones(b, n, dtype=torch.long)
    mask[1, pad_from:] = 0
    return ids, mask


def position_parameters(model: PEBertModel) -> dict[str, torch.nn.Parameter]:
    named = dict(model.named_parameters())
    return {k: v for k, v in named.items() if k.startswith(("embeddings.position", "relative"))}


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_backward_every_variant(variant, make_config):
    model = PEBertForMaskedLM(make_config(variant))
    ids, mask = batch()
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    out = model(ids, attention_mask=mask, labels=labels)
    assert out.logits.shape == (2, 10, 64)  # HF's shape, labels or not
    masked = model(ids, attention_mask=mask, labels=labels, masked_only=True)  # the pretraining route
    assert masked.logits.shape == (2, 64)  # only the masked positions, in the order of labels[labels != -100]
    torch.testing.assert_close(masked.logits, out.logits[labels != -100])
    torch.testing.assert_close(masked.loss, out.loss)
    masked.loss.backward()
    params = position_parameters(model.bert)
    parts = [p for p in (parse_variant(variant).absolute, parse_variant(variant).relative) if p]
    if all(p in FIXED for p in parts) and not parse_variant(variant).untie_cls:
        assert params == {}, "fixed PEs must have no trainable parameters"
    else:
        assert params and all(p.grad is not None and p.grad.abs().sum() > 0 for p in params.values())
    if any(p in FREQUENCY_LEARNED for p in parts):
        assert any(k.endswith("freqs") for k in params), "trainable frequencies must be parameters"
    full = model(ids, attention_mask=mask).logits
    assert full.shape == (2, 10, 64)


@pytest.mark.parametrize("variant", VARIANTS)
def test_save_load_round_trip_is_identical(variant, make_config, tmp_path):
    model = PEBertForMaskedLM(make_config(variant)).eval()
    with torch.no_grad():  # move trainable frequencies away from their init, so loading must restore them
        for name, p in model.named_parameters():
            if name.endswith("freqs"):
                p.mul_(1.5)
    ids, mask = batch()
    before = model(ids, attention_mask=mask).logits
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists()
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, PEBertForMaskedLM)
    torch.testing.assert_close(loaded(ids, attention_mask=mask).logits, before, rtol=0, atol=0)


def test_auto_classes_know_pe_bert(make_config):
    config = AutoConfig.for_model("pe-bert", position_embedding="rope", hidden_size=32, num_attention_heads=4)
    assert isinstance(config, PEBertConfig) and config.position_embedding == "rope"
    assert isinstance(AutoModel.from_config(make_config("alibi")), PEBertModel)


def test_sparse_mlm_loss_equals_full_loss(make_config):
    model = PEBertForMaskedLM(make_config("ape-learned+rpe-learned")).eval()
    ids, mask = batch()
    labels = torch.full_like(ids, -100)
    labels[0, [1, 4]] = ids[0, [1, 4]]
    labels[1, 3] = ids[1, 3]
    sparse = model(ids, attention_mask=mask, labels=labels, masked_only=True)
    full = model(ids, attention_mask=mask).logits  # (B, n, V)
    expected = torch.nn.functional.cross_entropy(full.view(-1, 64), labels.view(-1), ignore_index=-100)
    torch.testing.assert_close(sparse.loss, expected)
    torch.testing.assert_close(sparse.logits, full[labels != -100])


def test_padding_does_not_change_unpadded_tokens(make_config):
    model = PEBertModel(make_config("ape-sin-learned+rpe-learned")).eval()
    ids = torch.randint(5, 64, (1, 10))
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones(1, 10), torch.zeros(1, 4)], dim=1).long()
    short = model(ids).last_hidden_state
    long = model(padded, attention_mask=mask).last_hidden_state[:, :10]
    torch.testing.assert_close(long, short, atol=1e-5, rtol=1e-5)


def test_sequence_classification_and_regression(make_config):
    ids, mask = batch()
    clf = PEBertForSequenceClassification(make_config("rpe-sin", num_labels=3))
    out = clf(ids, attention_mask=mask, labels=torch.tensor([0, 2]))
    assert out.logits.shape == (2, 3) and out.loss.ndim == 0
    reg = PEBertForSequenceClassification(make_config("alibi", num_labels=1))
    out = reg(ids, attention_mask=mask, labels=torch.tensor([0.5, -1.0]))
    assert out.logits.shape == (2, 1)
    torch.testing.assert_close(out.loss, torch.nn.functional.mse_loss(out.logits.squeeze(-1), torch.tensor([0.5, -1.0])))


def test_question_answering_logits_and_loss(make_config):
    model = PEBertForQuestionAnswering(make_config("t5-bias"))
    ids, mask = batch()
    out = model(ids, attention_mask=mask, start_positions=torch.tensor([1, 2]), end_positions=torch.tensor([3, 99]))
    assert out.start_logits.shape == out.end_logits.shape == (2, 10)
    assert torch.isfinite(out.loss)
    out.loss.backward()


def test_ape_refuses_sequences_beyond_its_maximum(make_config):
    model = PEBertModel(make_config("ape-learned+rpe-learned", max_position_embeddings=12))
    with pytest.raises(PositionOutOfRange, match="beyond the maximum of 12 positions") as caught:
        model(torch.randint(5, 64, (1, 13)))
    assert (caught.value.position, caught.value.maximum) == (12, 12)
    with pytest.raises(PositionOutOfRange, match="position 12 is beyond"):  # explicit positions are checked too
        model(torch.randint(5, 64, (2, 3)), position_ids=torch.tensor([[0, 1, 2], [10, 11, 12]]))


def test_explicit_positions_equal_the_default_ones(make_config):
    model = PEBertModel(make_config("ape-sin-learned+rpe-learned")).eval()
    ids = torch.randint(5, 64, (2, 10))
    default = model(ids).last_hidden_state
    explicit = model(ids, position_ids=torch.arange(10).expand(2, 10)).last_hidden_state
    torch.testing.assert_close(explicit, default, rtol=0, atol=0)


def test_variants_declare_what_they_have():
    assert parse_variant("ape-sin+rpe-learned").has_offset_table and parse_variant("rpe-sin").has_offset_table
    assert not any(parse_variant(v).has_offset_table for v in ("rope", "alibi", "t5-bias", "ape-learned", "none"))
    assert parse_variant("ape-sin-learned+alibi").is_absolute and not parse_variant("rpe-learned").is_absolute


@pytest.mark.parametrize("variant", ["rpe-learned", "rpe-sin", "rpe-sin-learned", "rope", "alibi", "t5-bias", "ape-sin"])
def test_relative_variants_run_beyond_training_length(variant, make_config):
    model = PEBertModel(make_config(variant, max_position_embeddings=12)).eval()
    out = model(torch.randint(5, 64, (1, 40))).last_hidden_state
    assert out.shape == (1, 40, 32) and torch.isfinite(out).all()


def test_output_attentions_are_probabilities(make_config):
    model = PEBertModel(make_config("alibi")).eval()
    ids, mask = batch()
    out = model(ids, attention_mask=mask, output_attentions=True)
    assert len(out.attentions) == 2 and out.attentions[0].shape == (2, 4, 10, 10)
    torch.testing.assert_close(out.attentions[0].sum(-1), torch.ones(2, 4, 10))
    assert out.attentions[0][1, :, :, 7:].abs().max() < 1e-6  # padded keys get no attention
    sdpa = model(ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(out.last_hidden_state, sdpa, atol=1e-5, rtol=1e-5)


def test_config_refuses_bad_variant():
    with pytest.raises(ValueError, match="valid basic names"):
        PEBertConfig(position_embedding="rpe-wrong")


def test_no_pe_is_permutation_equivariant(make_config):
    model = PEBertModel(make_config("none")).eval()
    ids = torch.randint(5, 64, (1, 8))
    perm = torch.randperm(8)
    out = model(ids).last_hidden_state
    torch.testing.assert_close(model(ids[:, perm]).last_hidden_state, out[:, perm], atol=1e-5, rtol=1e-5)


def test_fast_dropout_drops_at_rate_p_and_keeps_the_expectation():
    from pe_lib.model import Dropout, dropout_

    x = torch.ones(200_001, requires_grad=True)  # odd: the last unit takes half of a 32-bit word
    y = dropout_(x, 0.1)
    dropped = (y == 0).float().mean()
    assert 0.097 < dropped < 0.103
    torch.testing.assert_close(y[y != 0], torch.full_like(y[y != 0], 2**16 / (2**16 - 6554)))  # p' = 6554 / 2^16
    assert abs(2**16 / (2**16 - 6554) - 1 / 0.9) < 2e-5
    y.sum().backward()
    torch.testing.assert_close(x.grad, y.detach())  # gradient flows through kept units only, scaled
    module = Dropout(0.5).eval()
    assert module(x) is x
    assert dropout_(x, 1.0).abs().sum() == 0 and dropout_(x, 0.0) is x


def test_training_attention_with_dropout_matches_sdpa_without(make_config):
    model = PEBertModel(make_config("alibi", attention_probs_dropout_prob=0.0)).train()
    ids, mask = batch()
    fused = model(ids, attention_mask=mask).last_hidden_state
    model.layers[0].attention.dropout_p = 1e-12  # takes the explicit-softmax path, drops (almost surely) nothing
    explicit = model(ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(explicit, fused, atol=1e-5, rtol=1e-5)


def test_pre_ln_normalises_before_each_sublayer_and_after_the_last(make_config):
    torch.manual_seed(0)
    post, pre = (PEBertForMaskedLM(make_config("rope", layer_norm=ln)).eval() for ln in ("post", "pre"))
    ids, mask = batch()
    encoder = pre.bert
    assert post.bert.final_norm is None and encoder.final_norm is not None
    out = encoder(ids, attention_mask=mask, output_hidden_states=True)
    x, additive = out.hidden_states[0], encoder.additive_mask(mask, ids.shape[1], torch.float32)
    for layer in encoder.layers:  # x + Attn(LN x), then h + FFN(LN h): the residual stream is never normalised
        h = x + layer.attention(layer.attention_norm(x), additive, encoder.relative_for(0))[0]
        x = h + layer.ffn(layer.ffn_norm(h))
    torch.testing.assert_close(out.last_hidden_state, encoder.final_norm(x))
    torch.testing.assert_close(out.hidden_states[-1], out.last_hidden_state)
    with pytest.raises(ValueError, match="layer_norm must be one of post, pre"):
        make_config("rope", layer_norm="sandwich")


@pytest.mark.parametrize("variant", ["ape-learned", "rpe-learned", "t5-bias"])
def test_position_init_std_sets_the_learned_tables(variant, make_config):
    zero = PEBertModel(make_config(variant, position_init_std=0.0))
    default = PEBertModel(make_config(variant))
    assert all(p.abs().max() == 0 for p in position_parameters(zero).values())
    stds = [p.std().item() for p in position_parameters(default).values()]
    assert stds and all(0.01 < s < 0.03 for s in stds), "default: N(0, initializer_range = 0.02)"
