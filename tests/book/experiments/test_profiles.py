"""The profiles that share models with each other keep doing so; each keeps its results apart."""
import dataclasses

from pe_book.experiments.profiles import CPU, CPU_DECISIVE, CPU_GLUE, PILOT, PROFILES, TREND


def test_the_trend_fine_tunes_the_cpu_runs_tasks_and_its_4x_model_is_that_runs_model():
    assert TREND.tasks == CPU.tasks
    assert TREND.finetune == CPU.finetune and TREND.finetune_by_task == CPU.finetune_by_task
    assert TREND.max_train_for("cloze") == CPU.max_train_for("cloze")
    assert TREND.max_train_for("sst2") == CPU.max_train_for("sst2")
    assert CPU.pretrain.steps in TREND.pretrain.snapshot_steps
    # the anytime schedule's snapshot is the model of a run of that length: same recipe, same model
    assert TREND.pretrain.at(CPU.pretrain.steps) == CPU.pretrain
    assert (TREND.model, TREND.seq_len, TREND.corpus_tokens) == (CPU.model, CPU.seq_len, CPU.corpus_tokens)
    assert set(TREND.variants) <= set(CPU.variants)


def test_the_cpu_run_keeps_the_models_and_recipe_of_the_run_it_superseded():
    assert (CPU.model, CPU.pretrain, CPU.finetune, CPU.seq_len) == (CPU_GLUE.model, CPU_GLUE.pretrain, CPU_GLUE.finetune,
                                                                     CPU_GLUE.seq_len)
    assert set(CPU.tasks) != set(CPU_GLUE.tasks)


def test_a_profile_keeps_its_results_in_its_own_folder():
    """A profile's folder is its name unless it names another (the published cpu run keeps the
    folder it was computed in), and no two profiles write into one folder."""
    folders = [p.results_folder for p in PROFILES.values()]
    assert len(set(folders)) == len(folders)
    assert CPU.results_folder == "cpu-next" and CPU_GLUE.results_folder == "cpu-glue" and TREND.results_folder == "trend"
    assert dataclasses.replace(CPU_GLUE, name="other").results_folder == "other", "a derived profile follows its name"


def test_the_decisive_run_is_the_trend_runs_recipe_at_its_longest_budget_so_its_models_are_its_first_seeds():
    # a key holds the recipe but not the snapshots: the trend's 16x models are the decisive run's seed 0
    assert CPU_DECISIVE.pretrain.at(TREND.pretrain.steps) == TREND.pretrain.at(TREND.pretrain.steps)
    assert (CPU_DECISIVE.model, CPU_DECISIVE.seq_len, CPU_DECISIVE.corpus_tokens) == (TREND.model, TREND.seq_len,
                                                                                      TREND.corpus_tokens)
    assert CPU_DECISIVE.pretrain.steps == 4 * CPU.pretrain.steps
    assert CPU.pretrain.steps in CPU_DECISIVE.pretrain.snapshot_steps  # today's budget, for the trend with seeds
    assert CPU_DECISIVE.pretrain.precision == "fp32"  # the same on every machine type (results/bench.json: precision)
    assert CPU_DECISIVE.task_max_eval is None  # every test example: the test-set SE within 2 points
    assert CPU_DECISIVE.results_folder == "cpu"


def test_the_pilot_is_the_decisive_runs_recipe_for_ape_learned_and_rpe_learned_with_three_seeds():
    assert PILOT.pretrain.at(PILOT.pretrain.steps) == CPU_DECISIVE.pretrain.at(CPU_DECISIVE.pretrain.steps)
    assert PILOT.pretrain.snapshot_steps == ()
    assert (PILOT.tasks, PILOT.finetune_by_task, PILOT.task_max_eval) == (CPU_DECISIVE.tasks,
                                                                         CPU_DECISIVE.finetune_by_task, None)
    assert all(len(PILOT.pretrain_seeds_for(v)) == 3 for v in PILOT.variants)
    assert all(len(PILOT.seeds_for(t)) >= 2 for t in PILOT.tasks)  # the fine-tuning variance is measured


def test_the_published_runs_refuse_uncommitted_code(monkeypatch):
    import pytest

    from pe_book.commands.run import check_committed
    from pe_lib.errors import InputError

    assert CPU_DECISIVE.committed_code_only and PILOT.committed_code_only
    monkeypatch.setattr("pe_book.experiments.store.git_commit", lambda: "0123abc-dirty")
    with pytest.raises(InputError, match="computed from committed code only"):
        check_committed(CPU_DECISIVE)
    check_committed(dataclasses.replace(CPU_DECISIVE, committed_code_only=False))  # others may run on a dirty tree
    monkeypatch.setattr("pe_book.experiments.store.git_commit", lambda: "0123abc")
    check_committed(CPU_DECISIVE)


def test_recorded_tasks_name_tasks():
    import pytest

    from pe_lib.errors import InputError

    with pytest.raises(InputError, match="recorded_tasks names 'squadd', not a task; valid tasks: cola"):
        dataclasses.replace(CPU_GLUE, recorded_tasks=("squadd",))
