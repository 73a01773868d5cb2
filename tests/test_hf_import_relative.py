"""from_hf_bert on transformers-v4 ``relative_key`` / ``relative_key_query`` checkpoints.

The fixtures (tests/fixtures/bert-relative_key*/) were saved and run by transformers 4.57.6 (see
tests/fixtures/make_relative_key_fixture.py); transformers 5 cannot produce these outputs.
"""
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertModel

from pe_lib import PEBertModel, from_hf_bert

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


def test_relative_checkpoint_with_heads_imports_backbone(tmp_path):
    """A BertFor*-style checkpoint (keys under ``bert.`` plus heads) imports the same backbone."""
    from safetensors.torch import load_file, save_file

    folder, batch, expected = fixture("relative_key")
    state = {f"bert.{k}": v for k, v in load_file(folder / "model.safetensors").items()}
    state["cls.predictions.bias"] = torch.zeros(99)
    save_file(state, tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    with torch.no_grad():
        got = from_hf_bert(tmp_path)(**batch).last_hidden_state
    keep = batch["attention_mask"].bool()
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-5)
