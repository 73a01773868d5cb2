"""The profiles that share models with each other keep doing so; each keeps its results apart."""
import dataclasses

from pe_book.experiments.profiles import CPU, CPU_GLUE, PROFILES, TREND


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
