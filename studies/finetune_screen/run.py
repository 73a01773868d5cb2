"""Fine-tuning screen: is criterion (c) limited by pretraining or by the fine-tuning recipe?
Fine-tunes kept models (none, ape-learned; pretraining seed 0) on sentence tasks under a few
recipes and writes one JSON line per run. Run from the repository root once the models exist:

    python studies/finetune_screen/run.py          # the scale study's 1x models -> results.jsonl
    python studies/finetune_screen/run.py cpu      # cpu-glue's 4x models (then the cpu profile) -> results-cpu.jsonl
    python studies/finetune_screen/run.py cpu-cola # ... on the word-order task -> results-cpu-cola.jsonl
    python studies/finetune_screen/run.py cpu-squad_v2  # ... on squad_v2 -> results-cpu-squad_v2.jsonl
"""
import dataclasses
import json
import sys
import time
from pathlib import Path

from pe_book.experiments.profiles import CPU_GLUE, SCALE
from pe_book.experiments.runner import Runner
from pe_lib.training.finetune import finetune

HERE = Path(__file__).parent
RECIPES = {  # name -> (FinetuneConfig overrides, task_max_train)
    "profile (2 epochs, lr 3e-4, 1,500 examples)": ({}, 1500),
    "5 epochs": ({"epochs": 5}, 1500),
    "lr 1e-3": ({"lr": 1e-3}, 1500),
    "lr 1e-4, 5 epochs": ({"lr": 1e-4, "epochs": 5}, 1500),
    "all training examples": ({}, None),
    "2 epochs, 4,000 examples": ({}, 4000),
    "1 epoch, 10,000 examples": ({"epochs": 1}, 10_000),
    "1 epoch, all training examples": ({"epochs": 1}, None),
    "2 epochs (all examples)": ({}, None),
    "5 epochs (all examples)": ({"epochs": 5}, None),
    "10 epochs (all examples)": ({"epochs": 10}, None),
    "5 epochs, 2,000 examples": ({"epochs": 5}, 2000),
}
#: name -> (profile, pretraining steps of the models, variants, recipes, tasks, output file)
SCREENS = {
    "scale": (SCALE, 2000, ("none", "ape-learned"), list(RECIPES)[:5], ("sst2", "mrpc"), HERE / "results.jsonl"),
    "cpu": (CPU_GLUE, None, ("none", "ape-learned"), list(RECIPES)[5:8], ("sst2", "mrpc", "stsb"), HERE / "results-cpu.jsonl"),
    # the word-order task (cola's analogue), which a model without positions cannot solve
    "cpu-cola": (CPU_GLUE, None, ("ape-learned", "ape-sin"), list(RECIPES)[8:11], ("cola",), HERE / "results-cpu-cola.jsonl"),
    # SQuAD 2.0's analogue, where every variant predicts "no answer" after 2 epochs over 2,000 examples
    "cpu-squad_v2": (CPU_GLUE, None, ("ape-learned", "ape-sin"), list(RECIPES)[11:], ("squad_v2",),
                     HERE / "results-cpu-squad_v2.jsonl"),
}


def main(screen: str = "scale") -> None:
    profile, steps, variants, recipes, tasks, out = SCREENS[screen]
    done = {(r["variant"], r["task"], r["recipe"]) for r in map(json.loads, out.read_text().splitlines())} if out.exists() else set()
    for recipe in recipes:
        overrides, max_train = RECIPES[recipe]
        runner = Runner(dataclasses.replace(profile, task_max_train=max_train, task_max_train_by_task={}), progress=False)
        for variant in variants:
            model = runner.model_dir(variant, 0, steps)
            if not model.exists():
                sys.exit(f"{model} is missing: pretrain seed 0 of {variant} on the {profile.name} profile first")
            for task in tasks:
                if (variant, task, recipe) in done:
                    continue
                cfg = dataclasses.replace(profile.finetune, seed=0, **overrides)
                t0 = time.perf_counter()
                result = finetune(model, runner.tokenizer, runner.task(task), cfg, progress=False)
                row = {"variant": variant, "task": task, "recipe": recipe, "train_examples": len(runner.task(task).splits["train"]),
                       "validation": result["validation"], "test": result["test"], "wall_s": time.perf_counter() - t0}
                with out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:2])
