"""Fine-tuning screen on the scale study's 1x models: is criterion (c) limited by pretraining or by
the fine-tuning recipe? Fine-tunes the kept 1x model (none, ape-learned; pretraining seed 0) of the
scale profile on sst2 and mrpc under a few recipes and writes one JSON line per run to
results.jsonl. Run from the repository root after the 1x artifacts exist:

    python studies/finetune_screen/run.py
"""
import dataclasses
import json
import sys
import time
from pathlib import Path

from pe_book.experiments.profiles import SCALE
from pe_book.experiments.runner import Runner
from pe_lib.training.finetune import finetune

OUT = Path(__file__).with_name("results.jsonl")
RECIPES = {  # name -> (FinetuneConfig overrides, task_max_train)
    "profile (2 epochs, lr 3e-4, 1,500 examples)": ({}, 1500),
    "5 epochs": ({"epochs": 5}, 1500),
    "lr 1e-3": ({"lr": 1e-3}, 1500),
    "lr 1e-4, 5 epochs": ({"lr": 1e-4, "epochs": 5}, 1500),
    "all training examples": ({}, None),
}


def main(variants=("none", "ape-learned"), tasks=("sst2", "mrpc")) -> None:
    done = {(r["variant"], r["task"], r["recipe"]) for r in map(json.loads, OUT.read_text().splitlines())} if OUT.exists() else set()
    for recipe, (overrides, max_train) in RECIPES.items():
        runner = Runner(dataclasses.replace(SCALE, task_max_train=max_train), progress=False)
        for variant in variants:
            model = runner.model_dir(variant, 0, 2000)
            if not model.exists():
                sys.exit(f"{model} is missing: run the scale profile to 1x first")
            for task in tasks:
                if (variant, task, recipe) in done:
                    continue
                cfg = dataclasses.replace(SCALE.finetune, seed=0, **overrides)
                t0 = time.perf_counter()
                result = finetune(model, runner.tokenizer, runner.task(task), cfg, progress=False)
                row = {"variant": variant, "task": task, "recipe": recipe, "train_examples": len(runner.task(task).splits["train"]),
                       "validation": result["validation"], "test": result["test"], "wall_s": time.perf_counter() - t0}
                with OUT.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
