"""``pe-book run --set FIELD.PATH=VALUE``: profile fields overridden by path, read as the type they
replace, and part of the keys of the artifacts they enter."""
import pytest

from pe_book.experiments.overrides import with_overrides
from pe_book.experiments.profiles import GPU, SMOKE
from pe_lib.errors import InputError


def test_paths_reach_profile_config_and_dict_fields():
    p = with_overrides(GPU, ["pretrain.steps=2", "pretrain.activation_checkpointing=true", "finetune.lr=1e-3",
                             "model.hidden_size=32", "model.num_attention_heads=4", "seq_len=64", "tasks=cola,sst2",
                             "seeds=0", "task_max_train=none", "probe.length=16", "model.layer_norm=pre"])
    assert p.pretrain.steps == 2 and p.pretrain.activation_checkpointing is True and p.finetune.lr == 1e-3
    assert p.model["hidden_size"] == 32 and p.model["num_hidden_layers"] == 12 and p.model["layer_norm"] == "pre"
    assert (p.seq_len, p.tasks, p.seeds, p.task_max_train, p.probe["length"]) == (64, ("cola", "sst2"), (0,), None, 16)
    assert p.name == "gpu" and GPU.pretrain.steps == 100_000  # the profile itself is unchanged
    assert with_overrides(SMOKE, ["task_max_train=12"]).task_max_train == 12  # None-able ints stay ints


@pytest.mark.parametrize("assignment, message", [
    ("pretrain.stepz=2", "'stepz' is not a field here; valid fields: steps, batch_size"),
    ("pretrain.steps=two", "pretrain.steps=two: expected int (or none)"),
    ("pretrain.steps=0", "PretrainConfig.steps must be >= 1"),
    ("pretrain.activation_checkpointing=maybe", "expected true or false"),
    ("name=other", "'name' is not a field here"),
    ("steps", "expected FIELD.PATH=VALUE"),
    ("seq_len.x=1", "the value at 'x' has no fields"),
])
def test_bad_overrides_are_one_clear_error(assignment, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        with_overrides(GPU, [assignment])


def test_an_override_is_part_of_the_pretraining_key():
    from pe_lib.training.pretrain_config import config_identity

    profile = with_overrides(SMOKE, ["pretrain.steps=3"])
    assert config_identity(profile.pretrain)["steps"] == 3
    same = with_overrides(SMOKE, ["pretrain.steps=40"])  # the profile's own value: the profile's own keys
    assert config_identity(same.pretrain) == config_identity(SMOKE.pretrain)
