"""The library refuses the values the command line refuses: a fine-tuning of 0, negative, NaN or
infinite epochs (it would score a model fine-tuned for no step), a negative seed; a learning rate,
clipping, decay or masking rate, or a `--set` model field that the optimiser or the model would
fail on (or train on without a word)."""
import re

import pytest

from pe_lib.errors import InputError
from pe_lib.training.finetune import FinetuneConfig
from pe_lib.training.pretrain_config import PretrainConfig


@pytest.mark.parametrize("epochs", [0, -1, float("nan"), float("inf"), "3"])
def test_finetune_epochs_must_be_finite_and_above_zero(epochs):
    with pytest.raises(InputError, match=r"FinetuneConfig.epochs must be a finite number above 0, got"):
        FinetuneConfig(epochs=epochs)


@pytest.mark.parametrize("config", [FinetuneConfig, PretrainConfig])
def test_a_seed_must_not_be_negative(config):
    with pytest.raises(InputError, match=rf"{config.__name__}.seed must be an integer of at least 0, got -1"):
        config(seed=-1)


def test_valid_values_pass():
    assert FinetuneConfig(epochs=0.5, seed=3).epochs == 0.5 and PretrainConfig(seed=2).seed == 2


@pytest.mark.parametrize("config, field, value, says", [
    (PretrainConfig, "lr", float("nan"), "a finite number above 0"),
    (PretrainConfig, "lr", 0, "a finite number above 0"),
    (PretrainConfig, "grad_clip", float("inf"), "a finite number above 0"),
    (PretrainConfig, "weight_decay", -0.1, "a finite number at least 0"),
    (PretrainConfig, "mask_prob", 1.5, "a finite number above 0 and at most 1"),
    (FinetuneConfig, "lr", float("nan"), "a finite number above 0"),
    (FinetuneConfig, "warmup_ratio", 2.0, "a finite number at least 0 and at most 1"),
])
def test_a_value_the_optimiser_would_take_unchecked_is_refused(config, field, value, says):
    with pytest.raises(InputError, match=rf"^{config.__name__}.{field} must be {says}, got {value!r}$"):
        config(**{field: value})


@pytest.mark.parametrize("assignment, says", [
    ("pretrain.lr=nan", "PretrainConfig.lr must be a finite number above 0, got nan"),
    ("model.hidden_size=0", "model.hidden_size is 0, expected an integer of at least 1"),
    ("model.num_attention_heads=3", "hidden_size 64 is not a multiple of num_attention_heads 3: "
                                    "num_attention_heads must divide 64"),
    ("model.vocab_size=1000000000000",
     "model.vocab_size is 1000000000000, expected an integer of at most 16,777,216"),
])
def test_a_set_value_the_model_or_optimiser_would_fail_on_names_the_field(assignment, says):
    from pe_book.experiments.overrides import with_overrides
    from pe_book.experiments.profiles import SMOKE

    with pytest.raises(InputError, match=f"^{re.escape(f'--set {assignment}: {says}')}"):
        with_overrides(SMOKE, [assignment])
