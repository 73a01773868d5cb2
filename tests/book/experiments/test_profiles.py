"""The profiles that share models with each other keep doing so."""
from pe_book.experiments.profiles import CPU_NEXT, TREND


def test_the_trend_fine_tunes_the_next_cpu_runs_tasks_and_its_4x_model_is_that_runs_model():
    assert TREND.tasks == CPU_NEXT.tasks
    assert TREND.finetune == CPU_NEXT.finetune and TREND.finetune_by_task == CPU_NEXT.finetune_by_task
    assert TREND.max_train_for("cloze") == CPU_NEXT.max_train_for("cloze")
    assert TREND.max_train_for("sst2") == CPU_NEXT.max_train_for("sst2")
    assert CPU_NEXT.pretrain.steps in TREND.pretrain.snapshot_steps
    # the anytime schedule's snapshot is the model of a run of that length: same recipe, same model
    assert TREND.pretrain.at(CPU_NEXT.pretrain.steps) == CPU_NEXT.pretrain
    assert (TREND.model, TREND.seq_len, TREND.corpus_tokens) == (CPU_NEXT.model, CPU_NEXT.seq_len, CPU_NEXT.corpus_tokens)
    assert set(TREND.variants) <= set(CPU_NEXT.variants)
