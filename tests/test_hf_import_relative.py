"""from_hf_bert on transformers-v4 ``relative_key`` / ``relative_key_query`` checkpoints.

The fixtures (tests/fixtures/bert-relative_key*/) were saved and run by transformers 4.57.6 (see
tests/fixtures/make_relative_key_fixture.py); transformers 5 cannot produce these outputs.
"""
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import BertModel

from pe_lib import PEBertForMaskedLM, PEBertModel, from_hf_bert

FIXTURES = Path(__file__).parent / "fixtures"
KINDS = {"relative_key": False, "relative_key_query": True}


def fixture(kind):
    folder = FIXTURES / f"bert-{kind}"
    data = np.load(folder / "inputs_outputs.npz")
    batch = {name: torch.from_numpy(data[name]) for name in ("input_ids", "token_type_ids", "attention_mask")}
    return folder, batch, torch.from_numpy(data["last_hidden_state"])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_v4_relative_checkpoint_parity(kind):
    folder, batch, expected = fixture(kind)
    ours = from_hf_bert(folder)
    assert isinstance(ours, PEBertModel)
    assert ours.config.position_embedding == "rpe-learned"
    assert ours.config.rpe_key_query is KINDS[kind]
    assert ours.config.rpe_max_distance == 15
    assert ours.embeddings.position is None
    with torch.no_grad():
        got = ours(**batch).last_hidden_state  # (2, 10, 32)
    keep = batch["attention_mask"].bool()
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_transformers5_loaded_relative_model_is_refused(kind):
    hf = BertModel.from_pretrained(FIXTURES / f"bert-{kind}").eval()  # distance weights dropped by v5
    with pytest.raises(ValueError, match="Pass the checkpoint's folder or hub id"):
        from_hf_bert(hf)


def save_with_heads(folder, tmp_path, heads, pooler=True):
    """The fixture of ``folder`` as a ``BertFor*`` checkpoint: its weights under ``bert.`` (without the
    pooler unless ``pooler``), plus ``heads``."""
    from safetensors.torch import load_file, save_file

    state = {f"bert.{k}": v for k, v in load_file(folder / "model.safetensors").items()
             if pooler or not k.startswith("pooler.")}
    save_file(state | heads, tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())


def test_relative_checkpoint_with_heads_imports_backbone(tmp_path):
    """A checkpoint whose keys are under ``bert.`` imports the same backbone; a head that no PEBert class
    takes (here an MLM output bias alone) is dropped with a warning."""
    folder, batch, expected = fixture("relative_key")
    save_with_heads(folder, tmp_path, {"cls.predictions.bias": torch.zeros(99)})
    with pytest.warns(UserWarning, match="cls.predictions.bias; these weights are dropped"):
        ours = from_hf_bert(tmp_path)
    with torch.no_grad():
        got = ours(**batch).last_hidden_state
    keep = batch["attention_mask"].bool()
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-5)


def mlm_head(hidden=32, vocab=99):
    """Random ``cls.predictions.*`` weights of BertForMaskedLM (the tied decoder is not saved)."""
    prefix = "cls.predictions."
    return {f"{prefix}transform.dense.weight": torch.randn(hidden, hidden) / hidden**0.5,
            f"{prefix}transform.dense.bias": torch.randn(hidden),
            f"{prefix}transform.LayerNorm.weight": 1 + torch.randn(hidden) / 10,
            f"{prefix}transform.LayerNorm.bias": torch.randn(hidden) / 10,
            f"{prefix}bias": torch.randn(vocab)}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_v4_relative_mlm_checkpoint_imports_with_its_head(kind, tmp_path):
    """BERT's MLM head applied to transformers 4.57.6's hidden states gives the imported model's logits."""
    folder, batch, hidden = fixture(kind)
    head = mlm_head()
    save_with_heads(folder, tmp_path, head, pooler=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # nothing is dropped
        ours = from_hf_bert(tmp_path)
    assert isinstance(ours, PEBertForMaskedLM) and ours.config.position_embedding == "rpe-learned"
    assert ours.head.decoder.weight is ours.bert.embeddings.word.weight
    p = {k.removeprefix("cls.predictions."): v for k, v in head.items()}
    h = F.gelu(F.linear(hidden, p["transform.dense.weight"], p["transform.dense.bias"]))  # (2, 10, 32)
    h = F.layer_norm(h, (32,), p["transform.LayerNorm.weight"], p["transform.LayerNorm.bias"], eps=1e-12)
    expected = h @ ours.bert.embeddings.word.weight.T + p["bias"]  # (2, 10, 99)
    with torch.no_grad():
        got = ours(**batch).logits  # (2, 10, 99)
    keep = batch["attention_mask"].bool()
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-5)


def test_v4_relative_checkpoint_under_another_variant_leaves_its_tables(tmp_path):
    """``position_embedding="rope"``: the distance tables are not loaded, the encoder and head are."""
    folder, batch, _ = fixture("relative_key")
    head = mlm_head()
    save_with_heads(folder, tmp_path, head, pooler=False)
    ours = from_hf_bert(tmp_path, position_embedding="rope")
    assert isinstance(ours, PEBertForMaskedLM) and ours.config.position_embedding == "rope"
    assert ours.bert.embeddings.position is None
    torch.testing.assert_close(ours.head.bias, head["cls.predictions.bias"], atol=0, rtol=0)
    with torch.no_grad():
        assert torch.isfinite(ours(**batch).logits).all()
