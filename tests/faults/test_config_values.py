"""The library refuses the values the command line refuses: a fine-tuning of 0, negative, NaN or
infinite epochs (it would score a model fine-tuned for no step), a negative seed."""
import pytest

from pe_lib.errors import InputError
from pe_lib.training.finetune import FinetuneConfig
from pe_lib.training.pretrain import PretrainConfig


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
