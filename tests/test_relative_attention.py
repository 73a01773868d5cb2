"""The gathered relative term equals HF v4's naive (n, n, d) einsum, alone and inside the model."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from support import tiny_config
from pe_lib import PEBertModel


def naive_bias(module, q, k):
    """transformers v4 ``relative_key(_query)``: materialise E[i, j] = r_{clip(i-j)}, shape (n, n, d)."""
    nq, nk = q.shape[-2], k.shape[-2]
    c = module.max_distance
    offsets, table = module.offset_vectors()  # (2c+1,), (2c+1, d)
    distance = torch.arange(nq)[:, None] - torch.arange(nk)[None, :]  # (nq, nk)
    embedding = table[distance.clamp(-c, c) + c]  # (nq, nk, d)
    scores = torch.einsum("bhld,lrd->bhlr", q, embedding)
    if module.key_query:
        scores = scores + torch.einsum("bhrd,lrd->bhlr", k, embedding)
    return scores / math.sqrt(module.head_dim)


RPE = ["rpe-learned", "rpe-sin", "rpe-sin-learned"]


@pytest.mark.parametrize("variant", RPE)
@pytest.mark.parametrize("key_query", [False, True])
@pytest.mark.parametrize("n", [5, 7, 30])  # shorter than, equal to, and beyond the clipping distance
def test_gather_equals_naive_einsum(variant, key_query, n, make_config):
    module = PEBertModel(make_config(variant, rpe_key_query=key_query)).relative[0]
    q, k = torch.randn(2, 4, n, 8), torch.randn(2, 4, n, 8)
    torch.testing.assert_close(module.bias(q, k), naive_bias(module, q, k), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", RPE)
@pytest.mark.parametrize("key_query", [False, True])
def test_model_with_naive_relative_term_matches_including_padding(variant, key_query, make_config, monkeypatch):
    model = PEBertModel(make_config(variant, rpe_key_query=key_query)).eval()
    ids = torch.randint(5, 64, (3, 20))
    mask = torch.ones(3, 20, dtype=torch.long)
    mask[1, 12:] = 0
    mask[2, 3:] = 0
    fast = model(ids, attention_mask=mask).last_hidden_state
    cls = type(model.relative[0])
    monkeypatch.setattr(cls, "bias", naive_bias)
    slow = model(ids, attention_mask=mask).last_hidden_state
    keep = mask.bool()
    torch.testing.assert_close(fast[keep], slow[keep], atol=1e-5, rtol=1e-5)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 24),
    clip=st.integers(1, 30),
    key_query=st.booleans(),
    variant=st.sampled_from(RPE),
    seed=st.integers(0, 2**16),
)
def test_gather_equals_naive_for_random_shapes(n, clip, key_query, variant, seed):
    torch.manual_seed(seed)
    module = PEBertModel(tiny_config(variant, rpe_max_distance=clip, rpe_key_query=key_query)).relative[1]
    q, k = torch.randn(1, 4, n, 8), torch.randn(1, 4, n, 8)
    torch.testing.assert_close(module.bias(q, k), naive_bias(module, q, k), atol=1e-5, rtol=1e-5)
