"""``pe-lib finetune``: fine-tune a pretrained PEBert folder on one task and print its scores."""
from __future__ import annotations

import dataclasses
import json

from pe_lib.commands.common import add_profile


def configure(parser) -> None:
    parser.add_argument("--model", required=True, help="folder of a pretrained PEBertForMaskedLM (save_pretrained)")
    parser.add_argument("--task", required=True, help="task name (pe-lib data --list shows them)")
    add_profile(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=float, help="override the profile's number of epochs")
    parser.add_argument("--tokenizer", help="a tokenizer folder to use instead of the profile's")


def run(args) -> int:
    from transformers import AutoConfig, BertTokenizer

    from pe_lib.data import load_task
    from pe_lib.experiments.profiles import get_profile
    from pe_lib.experiments.runner import Runner
    from pe_lib.training.finetune import finetune

    profile = get_profile(args.profile)
    tokenizer = BertTokenizer.from_pretrained(args.tokenizer) if args.tokenizer else Runner(profile, cache_dir=args.cache).tokenizer
    model_vocab = AutoConfig.from_pretrained(args.model).vocab_size
    if model_vocab != len(tokenizer):
        raise SystemExit(f"pe-lib finetune: the model's vocab_size {model_vocab} does not match the tokenizer's "
                         f"{len(tokenizer)}; pass the tokenizer it was pretrained with (--tokenizer)")
    task = load_task(args.task, profile.data_source, args.cache, max_train=profile.task_max_train)
    overrides = {"seed": args.seed, **({"epochs": args.epochs} if args.epochs else {})}
    result = finetune(args.model, tokenizer, task, dataclasses.replace(profile.finetune, **overrides),
                      progress=not args.no_progress)
    print(json.dumps(result, indent=2))
    return 0
