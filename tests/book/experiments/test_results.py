"""The stored results of a profile (``Results``): the pipeline's keys and plan, read only."""
import shutil

import pytest

import pe_lib.data
from book.conftest import fake_task
from pe_book.experiments.results import MissingResult, Results
from pe_book.experiments.runner import Runner
from pe_book.experiments.stored_data import record_data


@pytest.fixture
def stored(store, tmp_path, monkeypatch):
    """The results of the tiny complete store, copied with the data record its pipeline writes."""
    shutil.copytree(store.store.root.parent, tmp_path / "results")
    pipeline = Runner(store.profile, tmp_path / "results", store.work, store.cache_dir, progress=False,
                      tokenizer=store.tokenizer, data=store.mlm_data())
    monkeypatch.setattr(pe_lib.data, "load_task", fake_task)  # the tasks the store was computed on
    for task in store.profile.tasks:  # loaded first: the fingerprints of these rows, never a kept one of the real task
        pipeline.task(task)
    record_data(pipeline, list(store.profile.tasks))
    return Results(store.profile, tmp_path / "results", store.work, store.cache_dir, progress=False)


def test_the_stored_results_plan_the_pipelines_artifacts_under_its_keys(store, stored):
    planned = stored.plan()
    assert [(a.variant, a.stage, a.config) for a in planned] == [(a.variant, a.stage, a.config) for a in store.plan()]
    assert all(a.stored for a in planned)


def test_each_reader_returns_what_the_pipeline_stored(store, stored):
    variant, task = store.profile.variants[0], store.profile.tasks[0]
    seed = store.profile.seeds_for(task)[0]
    pairs = [(stored.pretrained(variant), store.ensure_pretrained(variant)),
             (stored.analysis(variant), store.ensure_analysis(variant)),
             (stored.extrapolation(variant), store.ensure_extrapolation(variant)),
             (stored.finetuned(variant, task, seed), store.ensure_finetuned(variant, task, seed)),
             (stored.baselines(task), store.ensure_baselines(task)), (stored.unigram(), store.ensure_unigram())]
    for read, computed in pairs:
        assert read.folder.relative_to(stored.store.root) == computed.folder.relative_to(store.store.root)
        assert read.payload == computed.payload


def test_a_missing_artifact_names_itself_and_the_command_that_computes_it(stored):
    with pytest.raises(MissingResult, match=rf"/finetune-\w+-p0-seed99-\w+ is not stored: compute it with "
                                            rf"`pe-book run --profile {stored.profile.name}`"):
        stored.finetuned(stored.profile.variants[0], stored.profile.tasks[0], 99)
    assert not hasattr(stored, "ensure_finetuned") and not hasattr(stored, "run")
