"""pe_book.chapters.common: what every result chapter starts from."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pe_book.chapters import common


def test_chapter_tasks_keeps_the_chapters_kind_and_refuses_the_other():
    assert list(common.chapter_tasks([], ["cola", "squad", "sst2", "squad_v2"], span=False)) == ["cola", "sst2"]
    assert list(common.chapter_tasks([], ["cola", "squad", "sst2", "squad_v2"], span=True)) == ["squad", "squad_v2"]
    assert list(common.chapter_tasks(["stsb"], ["cola"], span=False)) == ["stsb"]
    with pytest.raises(ValueError, match=r"shows sentence-level tasks, not squad; valid: cola, sst2, mrpc, stsb"):
        common.chapter_tasks(["sst2", "squad"], [], span=False)
    with pytest.raises(ValueError, match="shows span-prediction tasks, not cola; valid: squad, squad_v2"):
        common.chapter_tasks(["cola"], [], span=True)
    with pytest.raises(ValueError, match="unknown task"):
        common.chapter_tasks(["glue"], [], span=False)


def test_seed_design_in_words():
    from pe_book.experiments.profiles import get_profile

    profile = get_profile("smoke").with_overrides(seeds=(0, 1, 2), pretrain_seeds_by_variant={"none": 3, "rpe-sin": 3})
    assert common.seed_design(profile, ["none", "rpe-sin", "ape-sin", "alibi", "rope"]) == (
        "3 pretraining seeds for none, rpe-sin; 1 for the other 3 variants; "
        "3 fine-tuning seeds on each pretrained model")
    assert common.seed_design(profile, ["ape-sin"]).startswith("1 pretraining seed for every variant")
    assert common.seed_design(profile.with_overrides(seeds=(0,)), ["ape-sin"]).endswith(
        "1 fine-tuning seed on each pretrained model")


def test_seed_design_names_the_fine_tuning_seeds_of_each_group_of_tasks():
    from pe_book.experiments.profiles import get_profile

    profile = get_profile("smoke").with_overrides(seeds=(0, 1, 2), seeds_by_task={"squad": (0,), "squad_v2": (0,)})
    assert common.seed_design(profile, ["ape-sin"], ["sst2", "cola", "squad", "squad_v2"]).endswith(
        "; 3 fine-tuning seeds on sst2, cola and 1 fine-tuning seed on squad, squad_v2, on each pretrained model")
    assert common.seed_design(profile, ["ape-sin"], ["squad"]).endswith("; 1 fine-tuning seed on each pretrained model")
    assert common.finetuning_seeds(profile, ["squad", "cola"]) == 3 and common.finetuning_seeds(profile, ["squad"]) == 1


def test_data_used_says_where_the_corpus_and_each_task_came_from():
    from types import SimpleNamespace

    runner = SimpleNamespace(corpus=SimpleNamespace(origin="packaged", card={"sources": {"austen": {}, "kjv": {}}}),
                             task=lambda t: SimpleNamespace(origin={"sst2": "packaged:sentiment", "cola": "hub:nyu-mll/glue"}[t]))
    table = common.data_used({"profile": "cpu", "seeds": [0, 1], "variants": [], "untie": False, "tokens": 131072,
                              "lr": 0.0003}, runner, ["sst2", "cola"])
    assert table.loc["profile", "value"] == "cpu" and table.loc["seeds", "value"] == "0, 1"  # no Python reprs
    assert table.loc["variants", "value"] == "(default)" and table.loc["untie", "value"] == "no"
    assert table.loc["tokens", "value"] == "131,072" and table.loc["lr", "value"] == "0.0003"
    assert table.loc["data: pretraining text", "value"] == "packaged (austen, kjv)"
    assert table.loc["data: task cola", "value"] == "hub:nyu-mll/glue"


def test_the_spread_note_names_a_run_without_a_score():
    import pandas as pd

    index = pd.MultiIndex.from_tuples([(v, 0, s) for v in ("ape", "rope") for s in range(3)],
                                      names=["variant", "pretrain_seed", "seed"])
    per_seed = pd.DataFrame({"sst2": [70.0, 72.0, 74.0, 68.0, 70.0, float("nan")]}, index=index)
    read = common.Finetuned(["ape", "rope"], {"sst2": "classification"}, [0, 1, 2], "test", {}, {}, pd.DataFrame(), [])
    assert read.cited(per_seed)["spread_note"] == (
        "each variant was fine-tuned with 3 seeds; 1 run gave no score (NaN) and is left out of the means, "
        "marked (n of N runs): rope sst2 (pretraining seed 0, fine-tuning seed 2)")
    assert read.cited(per_seed.fillna(71.0))["spread_note"] == "each variant was fine-tuned with 3 seeds"


def test_the_spread_over_pretraining_seeds_of_each_variant():
    """Every pretraining seed is read; a variant with one seed has no spread; the largest spread
    names its variant and column."""
    class Profile:
        def pretrain_seeds_for(self, variant):
            return (0, 1, 2) if variant == "ape-learned" else (0,)

    read = []
    values = {("ape-learned", 0): 4.6, ("ape-learned", 1): 4.9, ("ape-learned", 2): 4.7, ("rope", 0): 4.0}

    def loss(variant, p):
        read.append((variant, p))
        return {"loss": values[variant, p], "twice": 2 * values[variant, p]}

    per_seed = common.over_pretraining_seeds(Profile(), ["ape-learned", "rope"], loss)
    assert read == list(values) and list(per_seed.index.names) == ["variant", "pretraining seed"]
    spread = common.seed_spread(per_seed)
    assert spread.loc["ape-learned", "seeds"] == 3 and spread.loc["rope", "seeds"] == 1
    assert spread.loc["ape-learned", "loss"] == pytest.approx(0.3) and spread.loc["rope"].drop("seeds").isna().all()
    assert common.largest_spread(spread) == {"value": pytest.approx(0.6), "variant": "ape-learned", "column": "twice",
                                             "variants": 1}
    alone = common.seed_spread(common.over_pretraining_seeds(Profile(), ["rope"], lambda v, p: 1.0))
    assert common.largest_spread(alone)["variants"] == 0 and common.largest_spread(alone)["variant"] == ""


def test_numbers_and_parameters_read_as_words_and_plain_numbers():
    assert common.number_text(12812.4, 4) == "12,810" and common.number_text(8.4912) == "8.49"
    assert common.number_text(0.000123456) == "0.000123" and common.number_text(1e-5) == "0.00001"
    assert common.number_text(16_384_000) == common.number_text(np.int64(16_384_000)) == "16,384,000"
    assert common.number_text(float("nan")) == "n/a"
    assert [common.param_text(v) for v in (True, False, None, [], 10000.0, 3e-4, ["a", "b"], "cpu")] == [
        "yes", "no", "(default)", "(default)", "10,000", "0.0003", "a, b", "cpu"]
    assert list(common.param_table({"pretrained": True, "base": 10000.0})["value"]) == ["yes", "10,000"]
    table = common.yes_no_columns(pd.DataFrame({"testable": [True, False], "n": [1, 2], "reason": ["", "why"]}))
    assert list(table["testable"]) == ["yes", "no"] and list(table["n"]) == [1, 2]


def test_an_interval_column_replaces_its_two_ends_where_the_low_end_was():
    table = pd.DataFrame({"claim": ["a", "b"], "low": [-2.021, float("nan")], "high": [1.08, 3.0], "p": [0.4, 0.1]})
    shown = common.with_intervals(table, "low", "high")
    assert list(shown.columns) == ["claim", "interval", "p"]
    assert list(shown["interval"]) == ["[-2.02, +1.08]", "n/a"]


def test_a_long_name_may_break_after_its_dots_and_underscores_and_reads_the_same():
    shown = common.breakable("model.0.auto_model")
    assert shown == "model.\u200b0.\u200bauto_\u200bmodel" and shown.replace("\u200b", "") == "model.0.auto_model"
