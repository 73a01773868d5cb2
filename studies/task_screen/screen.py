"""The task screen of issue 36: are the new tasks learned at the cpu budget, and with how much data?

Two steps, so that the fine-tuning can run on a machine without the data sources (or without the
``datasets`` package):

``prepare``  (here, where the packaged sources are): loads each task as the cpu profile does
    (evaluation splits cut to ``--max-eval``), writes it as plain columns (``<task>.pkl``) with the
    tokenizer (``tokenizer/``) into ``--data``, and appends every baseline of each task
    (``pe_book.experiments.baselines.task_baselines``: same examples, same metric code) for each
    training size of ``--sizes`` to ``--out``.
``run``      fine-tunes each ``--model NAME=FOLDER`` on each ``TASK:EXAMPLES:EPOCHS`` of ``--grid``
    with ``pe_lib.training.finetune.finetune`` (``SMALL_FINETUNE`` with the overrides given) and
    appends one line per fine-tuning to ``--out``.

    OMP_NUM_THREADS=1 python studies/task_screen/screen.py prepare --data .screen_carry --out studies/task_screen/results.jsonl
    python studies/task_screen/screen.py run --data .screen_carry --model rpe-learned=results/cpu-next/... \
        --grid paws:10000:3 cloze:4000:2 --out studies/task_screen/results.jsonl
"""
from __future__ import annotations

import argparse
import gzip
import json
import pickle
import platform
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pe_lib.data.tasks import TaskMeta  # noqa: E402 (the repository's, from ROOT)

TASKS = ("paws", "cloze", "cloze_v2", "cola", "sst2")
#: Training sizes the baselines are computed for (each task's train split cut to its first N rows).
SIZES = (1000, 4000, 10_000, 20_000)


class Rows:
    """A split as plain columns, read like a ``datasets.Dataset`` (``split["col"]``, ``split[i]``)."""

    def __init__(self, columns: dict[str, list]):
        self.columns = columns
        self.column_names = list(columns)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, str):
            return self.columns[key]
        return {name: values[key] for name, values in self.columns.items()}

    def head(self, n: int) -> Rows:
        return Rows({name: values[:n] for name, values in self.columns.items()})


@dataclass
class ScreenTask:
    """What ``finetune`` reads of a ``pe_lib.data.Task``."""

    meta: TaskMeta
    splits: dict[str, Rows]
    origin: str
    text_columns: tuple[str, ...]

    def capped(self, n: int) -> ScreenTask:
        return replace(self, splits={**self.splits, "train": self.splits["train"].head(n)})


def short_cloze(name: str, context_words: int):
    """A cloze task built with passages of ``context_words`` words (a proposed fix), not cached."""
    from pe_lib.data import builders
    from pe_lib.data.tasks import TASK_SEED, Task, _as_datasets, get_task

    spec = get_task(name)
    default, builders.CONTEXT_WORDS = builders.CONTEXT_WORDS, context_words
    try:
        built = builders.BUILDERS[spec.packaged].build(None, TASK_SEED)
    finally:
        builders.CONTEXT_WORDS = default
    return Task(spec.meta, _as_datasets(spec.meta, built.splits), f"packaged:{spec.packaged}-c{context_words}", {})


def prepare(data: Path, out: Path, tasks: list[str], sizes: list[int], max_eval: int, context_words: int | None = None) -> None:
    from pe_book.experiments.baselines import task_baselines
    from pe_book.experiments.profiles import get_profile
    from pe_lib.data import load_task, load_tokenizer

    profile = get_profile("cpu")
    data.mkdir(parents=True, exist_ok=True)
    tokenizer = load_tokenizer(**profile.tokenizer, source=profile.data_source, progress=False)
    tokenizer.save_pretrained(data / "tokenizer")
    from pe_book.experiments.profiles import SMALL_FINETUNE
    (data / "finetune.json").write_text(json.dumps(asdict(SMALL_FINETUNE)))  # the run step imports no pe_book
    for name in tasks:
        task = load_task(name, profile.data_source, max_train=None) if not context_words else short_cloze(name, context_words)
        name = name if not context_words else f"{name}_c{context_words}"
        for split in ("validation", "test"):
            task.splits[split] = task.splits[split].select(range(min(max_eval, len(task.splits[split]))))
        plain = ScreenTask(task.meta,
                           {s: Rows(task.splits[s].to_dict()) for s in ("train", "validation", "test")},
                           task.origin, task.text_columns)
        (data / f"{name}.pkl").write_bytes(gzip.compress(pickle.dumps(plain)))
        print(f"{name}: {', '.join(f'{s} {len(r)}' for s, r in plain.splits.items())}", flush=True)
        # span rules read no training example: one size (all) is enough
        wanted = sizes if task.meta.kind != "span" else [len(task.splits["train"])]
        for n in sorted({min(n, len(task.splits["train"])) for n in wanted}):
            t0 = time.perf_counter()
            capped = type(task)(task.meta, task.splits.copy(), task.origin, task.card)
            capped.splits["train"] = task.splits["train"].select(range(n))
            payload = task_baselines(capped)
            append(out, {"kind": "baselines", "task": name, "train_examples": n, "baselines": payload["baselines"],
                         "wall_s": time.perf_counter() - t0})


def export_pretraining(data: Path, variants: list[str]) -> None:
    """The cpu profile's pretraining inputs (token blocks, model and pretraining configs), for ``pretrain``."""
    import numpy as np

    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    runner = Runner(get_profile("cpu"), ROOT / "results", progress=False)
    mlm = runner.mlm_data()
    assert mlm.vocab_size <= np.iinfo(np.uint16).max
    np.savez_compressed(data / "blocks.npz", train=mlm.train.astype(np.uint16), validation=mlm.validation.astype(np.uint16))
    configs = {"data": {"vocab_size": mlm.vocab_size, "mask_id": mlm.mask_id, "special_ids": list(mlm.special_ids)},
               "pretrain": asdict(runner.run_pretrain_config(0)),
               "models": {v: runner.model_config(v).to_dict() for v in variants}}
    (data / "pretrain.json").write_text(json.dumps(configs))


def pretrain_here(data: Path, variant: str, out_dir: Path, steps: int | None) -> None:
    """Pretrain ``variant`` with the exported cpu recipe (checkpoints only at the end: they do
    not change what is trained)."""
    import numpy as np

    from pe_lib.config import PEBertConfig
    from pe_lib.training.mlm import MLMData
    from pe_lib.training.pretrain import pretrain
    from pe_lib.training.pretrain_config import PretrainConfig

    configs = json.loads((data / "pretrain.json").read_text())
    with np.load(data / "blocks.npz") as npz:
        mlm = MLMData(npz["train"].astype(np.int32), npz["validation"].astype(np.int32), configs["data"]["vocab_size"], configs["data"]["mask_id"],
                      tuple(configs["data"]["special_ids"]))
    cfg = configs["pretrain"] | {"checkpoint_every": steps or configs["pretrain"]["steps"]}
    cfg = PretrainConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items()} | ({"steps": steps} if steps else {}))
    model = {k: v for k, v in configs["models"][variant].items() if k not in ("transformers_version", "architectures", "model_type")}
    t0 = time.perf_counter()
    result = pretrain(PEBertConfig(**model), mlm, cfg, out_dir, progress=False)
    print(f"pretrained {variant}: {time.perf_counter() - t0:.0f} s, {json.dumps(result, default=str)[:300]}", flush=True)


def load_plain(path: Path) -> ScreenTask:
    raw = path.read_bytes()
    return pickle.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def append(out: Path, record: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps(record, default=float) + "\n")


def run(data: Path, out: Path, models: list[str], grid: list[str], seeds: list[int], overrides: dict) -> None:
    import torch
    from transformers import AutoTokenizer

    from pe_lib.training.finetune import FinetuneConfig, Tally, finetune

    base = FinetuneConfig(**json.loads((data / "finetune.json").read_text()))

    tokenizer = AutoTokenizer.from_pretrained(data / "tokenizer")
    loaded: dict[str, ScreenTask] = {}
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"cpu x{torch.get_num_threads()} threads"
    for spec in models:
        variant, folder = spec.split("=", 1)
        if not (Path(folder) / "model.safetensors").is_file():
            print(f"skip {variant}: {folder} has no model.safetensors", flush=True)
            continue
        for item in grid:
            name, n, epochs = item.split(":")
            task = loaded.setdefault(name, load_plain(data / f"{name}.pkl")).capped(int(n))
            for seed in seeds:
                cfg = replace(base, epochs=float(epochs), seed=seed, **overrides)
                tally = Tally()
                result = finetune(folder, tokenizer, task, cfg, progress=False, tally=tally)
                record = {"kind": "finetune", "variant": variant, "model": folder, "task": name,
                          "train_examples": len(task.splits["train"]), "epochs": float(epochs), "seed": seed,
                          "overrides": overrides, "validation": result["validation"], "test": result["test"],
                          "null_threshold": result.get("null_threshold"), "wall_s": result["wall_s"],
                          "train_s": tally.seconds.get("training"), "device": device, "host": platform.node()}
                append(out, record)
                print(f"{variant} {name} n={record['train_examples']} ep={epochs} seed={seed}: "
                      f"test {record['test']} ({record['wall_s']:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    p.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    p.add_argument("--max-eval", type=int, default=400)
    p.add_argument("--cloze-context-words", type=int, help="build the cloze tasks with passages this long instead")
    e = sub.add_parser("export-pretraining")
    e.add_argument("--data", type=Path, required=True)
    e.add_argument("--variants", nargs="+", default=["rpe-learned", "none", "ape-learned"])
    t = sub.add_parser("pretrain")
    t.add_argument("--data", type=Path, required=True)
    t.add_argument("--variant", required=True)
    t.add_argument("--out-dir", type=Path, required=True)
    t.add_argument("--steps", type=int)
    r = sub.add_parser("run")
    r.add_argument("--data", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--model", nargs="+", required=True, help="NAME=FOLDER")
    r.add_argument("--grid", nargs="+", required=True, help="TASK:EXAMPLES:EPOCHS")
    r.add_argument("--seeds", nargs="+", type=int, default=[0])
    r.add_argument("--lr", type=float)
    r.add_argument("--batch-size", type=int)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.data, args.out, args.tasks, args.sizes, args.max_eval, args.cloze_context_words)
    elif args.command == "export-pretraining":
        export_pretraining(args.data, args.variants)
    elif args.command == "pretrain":
        pretrain_here(args.data, args.variant, args.out_dir, args.steps)
    else:
        overrides = {k: v for k, v in (("lr", args.lr), ("batch_size", args.batch_size)) if v is not None}
        run(args.data, args.out, args.model, args.grid, args.seeds, overrides)


if __name__ == "__main__":
    main()
