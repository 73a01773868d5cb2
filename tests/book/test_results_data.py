"""Results as data (pe_book.results_data and ``pe-book export``), read from the committed trend run:
every stored score is one row, and a published model is found by variant and seed."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pe_book.cli import main
from pe_book.results_data import COLUMNS, load_published, locate, model_folder, score_table
from pe_lib.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
TREND = ROOT / "results" / "trend"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return score_table("trend", ROOT / "results")


def test_a_folder_name_says_what_it_holds():
    place = locate(Path("rope/finetune-cloze_v2-p1-step8000-seed2-0123456789ab"))
    assert (place.variant, place.stage, place.task, place.pretrain_seed, place.step, place.finetune_seed) == \
        ("rope", "finetune", "cloze_v2", 1, 8000, 2)
    final = locate(Path("none/pretrain-p0-0123456789ab"))
    assert (final.stage, final.task, final.step, final.finetune_seed) == ("pretrain", None, None, None)
    assert locate(Path("_shared/baselines-sst2-0123456789ab")) is None


def test_every_stored_score_is_one_row(table):
    assert list(table.columns) == COLUMNS
    finetunings = sorted(TREND.glob("*/finetune-*/artifact.json"))
    metrics = sum(len(json.loads(f.read_text())["payload"][split]) for f in finetunings for split in ("validation", "test"))
    assert len(table[table.task != "mlm"]) == metrics
    assert len(table[table.task == "mlm"]) == len(list(TREND.glob("*/pretrain-*/artifact.json")))
    assert not table.duplicated(["variant", "pretrain_seed", "finetune_seed", "steps", "task", "split", "metric"]).any()


def test_a_row_holds_its_artifacts_value_and_budget(table):
    folder = next(TREND.glob("ape-learned/finetune-cloze-p0-step16000-seed0-*"))
    payload = json.loads((folder / "artifact.json").read_text())["payload"]
    row = table[(table.variant == "ape-learned") & (table.steps == 16000) & (table.task == "cloze")
                & (table.split == "test") & (table.metric == "f1")].squeeze()
    assert row.value == pytest.approx(payload["test"]["f1"]) and row.points == pytest.approx(payload["test"]["f1"])
    assert row.key == folder.name[-12:]
    final = table[(table.variant == "ape-learned") & (table.task == "sst2") & (table.split == "test")]
    assert sorted(final.steps) == [2000, 4000, 8000, 16000, 32000]  # the final model's budget, from its pretraining
    assert (final.points == 100 * final.value).all()  # accuracy in [0, 1], points in percent


def test_a_damaged_artifact_is_named_and_left_out(tmp_path):
    shutil.copytree(TREND, tmp_path / "trend")
    victim = next((tmp_path / "trend").glob("rpe-learned/finetune-sst2-p0-seed0-*/artifact.json"))
    victim.write_text(victim.read_text()[:50])
    with pytest.warns(UserWarning, match="ignoring corrupt artifact"):
        damaged = score_table("trend", tmp_path)
    assert not ((damaged.variant == "rpe-learned") & (damaged.task == "sst2") & (damaged.steps == 32000)).any()
    assert len(damaged) == len(score_table("trend", ROOT / "results")) - 2


def test_a_published_model_is_found_by_variant_and_seed():
    assert model_folder("trend", "rpe-learned", 0, results=ROOT / "results").parent.name.startswith("pretrain-p0-")
    snapshot = model_folder("trend", "rpe-learned", 0, steps=8000, results=ROOT / "results")
    assert snapshot.parent.name.startswith("pretrain-p0-step8000-")
    model = load_published("trend", "ape-learned", results=ROOT / "results")
    assert model.config.position_embedding == "ape-learned" and not model.training


@pytest.mark.parametrize("variant, seed, says", [("rpe-learned", 5, "its models of rpe-learned: seed 0"),
                                                 ("rope", 0, "its variants: ape-learned, none, rpe-learned")])
def test_a_model_not_stored_is_one_line_naming_what_is(variant, seed, says):
    with pytest.raises(InputError, match=says):
        model_folder("trend", variant, seed, results=ROOT / "results")


def test_export_writes_the_table_as_csv_and_parquet(tmp_path, table, capsys):
    assert main(["export", "--profile", "trend", "--results", str(ROOT / "results"), "--out", str(tmp_path / "t")]) == 0
    assert f"{len(table)} scores of 3 variants (15 pretrained models)" in capsys.readouterr().out
    from_csv = pd.read_csv(tmp_path / "t.csv", dtype={"key": str})
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), table)
    assert from_csv.value.tolist() == pytest.approx(table.value.tolist())


def test_export_of_a_folder_without_the_profile_is_one_line(tmp_path, capsys):
    assert main(["export", "--profile", "trend", "--results", str(tmp_path)]) == 1
    assert f"{tmp_path}/trend holds no artifacts of profile 'trend'" in capsys.readouterr().err
