import pytest
import torch

from pe_lib import PE_VARIANTS, PEBertModel, all_variants, parse_variant
from pe_lib.positions import ALiBi, T5Bias, UntiedCLS, clipped_offsets, resolve_variants, sinusoid, sinusoid_frequencies

REQUIRED = {"none", "ape-learned", "ape-sin", "ape-sin-learned", "rpe-learned", "rpe-sin", "rpe-sin-learned",
            "rope", "alibi", "t5-bias"}


def test_registry_lists_the_required_basic_names():
    assert set(PE_VARIANTS) == REQUIRED


def test_every_combination_is_listed_once():
    names = all_variants()
    assert len(names) == len(set(names)) == len(PE_VARIANTS) + 3 * 6
    assert "ape-sin-learned+rpe-sin-learned" in names


def test_parse_is_order_free_and_canonical():
    assert parse_variant("rpe-learned+ape-sin").name == "ape-sin+rpe-learned"
    assert parse_variant(" rope ").relative == "rope"
    assert parse_variant("none").name == "none"


@pytest.mark.parametrize(
    "name, message",
    [
        ("ape-foo", "valid basic names: none, ape-learned"),
        ("ape-learned+ape-sin", "at most one absolute"),
        ("rpe-learned+rope", "at most one relative"),
        ("alibi+t5-bias", "at most one relative"),
        ("none+ape-sin", "'none' cannot be combined"),
        ("", "non-empty"),
        ("ape-learned+untie-cls", "needs one of rpe-learned, rpe-sin, rpe-sin-learned, alibi, t5-bias"),
        ("rope+untie-cls", "untie-cls.*needs one of"),
        ("untie-cls", "needs one of"),
        ("untie-clss+alibi", "add '\\+untie-cls' to a score-bias kind"),
    ],
)
def test_bad_names_are_refused_with_the_valid_choices(name, message):
    with pytest.raises(ValueError, match=message):
        parse_variant(name)


def test_untie_cls_is_a_modifier_of_score_bias_variants():
    assert parse_variant("untie-cls+rpe-learned+ape-sin").name == "ape-sin+rpe-learned+untie-cls"
    assert parse_variant("alibi+untie-cls").untie_cls and not parse_variant("alibi").untie_cls
    untied = [n for n in all_variants(untied=True) if n.endswith("+untie-cls")]
    assert len(untied) == 5 * 4  # 5 score-bias kinds, alone or with one of 3 APEs
    assert all(parse_variant(n).name == n for n in untied)
    assert "untie-cls" not in PE_VARIANTS


def test_untied_cls_resets_the_cls_row_and_column(make_config):
    untie = UntiedCLS(make_config(num_attention_heads=2))
    with torch.no_grad():
        untie.theta.copy_(torch.tensor([3.0, 4.0]))  # theta_2 per head
    bias = torch.randn(5, 2, 6, 6)  # (B, h, n, n)
    out = untie(bias)
    assert torch.equal(out[:, :, 0, :], torch.zeros(5, 2, 6))
    assert torch.equal(out[:, :, 1:, 0], torch.tensor([3.0, 4.0])[None, :, None].expand(5, 2, 5))
    assert torch.equal(out[:, :, 1:, 1:], bias[:, :, 1:, 1:])


@pytest.mark.parametrize("variant", ["alibi", "t5-bias", "rpe-learned"])
def test_untied_cls_sees_no_word_order(variant, make_config):
    """One layer, no APE: with [CLS] untied its output cannot depend on the order of the other
    words (its bias row is a constant); with the relative bias it does."""
    ids = torch.tensor([[1, 7, 8, 9, 10, 11]])
    shuffled = torch.tensor([[1, 10, 8, 11, 7, 9]])
    outputs = {}
    for name in (variant, f"{variant}+untie-cls"):
        torch.manual_seed(0)
        model = PEBertModel(make_config(name, num_hidden_layers=1)).eval()
        with torch.no_grad():  # visible position terms (theta included), not the small init
            for parameter in model.relative.parameters():
                parameter.normal_()
        with torch.no_grad():
            a, b = (model(x).last_hidden_state[0, 0] for x in (ids, shuffled))
        outputs[name] = (a - b).abs().max().item()
    assert outputs[f"{variant}+untie-cls"] < 1e-5
    assert outputs[variant] > 1e-4


def test_sinusoid_dot_product_is_sum_of_cosines():
    freqs = sinusoid_frequencies(16, 10000.0)
    p = sinusoid(torch.arange(10), freqs)  # (10, 16)
    x, y = 7, 3
    expected = torch.cos(freqs * (x - y)).sum()
    torch.testing.assert_close(p[x] @ p[y], expected)


def test_clipped_offsets():
    idx = clipped_offsets(4, 4, 2)
    assert idx.tolist() == [[2, 1, 0, 0], [3, 2, 1, 0], [4, 3, 2, 1], [4, 4, 3, 2]]


def test_alibi_slopes_follow_press_et_al():
    torch.testing.assert_close(ALiBi.head_slopes(8), torch.tensor([2.0 ** -(i + 1) for i in range(8)]))
    assert ALiBi.head_slopes(6).shape == (6,)  # non power of two: interleaved rule


def test_t5_buckets_are_exact_near_zero_and_bidirectional(make_config):
    t5 = T5Bias(make_config("t5-bias", t5_num_buckets=32, t5_max_distance=128))
    rel = torch.tensor([-3, -1, 0, 1, 3, 200, -200])
    buckets = t5.buckets(rel).tolist()
    assert buckets[:5] == [3, 1, 0, 17, 19]
    assert buckets[5] == 31 and buckets[6] == 15  # far offsets land in the last bucket of each half


def test_sinusoidal_rpe_direction_switch(make_config):
    for blind in (True, False):
        model = PEBertModel(make_config("rpe-sin", rpe_sin_direction_blind=blind))
        offsets, vectors = model.relative[0].offset_vectors()
        k = int(offsets.max())
        same = torch.allclose(vectors[k + 3], vectors[k - 3])
        assert same is blind


def test_resolve_variants_validates_canonicalises_and_defaults():
    assert resolve_variants([], ["none", "ape-sin"]) == ["none", "ape-sin"]
    assert resolve_variants(["rpe-learned+ape-sin", "ape-sin+rpe-learned"], []) == ["ape-sin+rpe-learned"]
    with pytest.raises(ValueError, match="valid basic names"):
        resolve_variants(["ape-typo"], [])
