"""``pe-book finetune``: fine-tune a pretrained PEBert folder on one task and print its scores."""
from __future__ import annotations

import dataclasses
import json

from pe_book.commands.common import (add_profile, check_weights, load_model, model_config, non_negative_int,
                                     positive_float, tokenizer_folder)


def configure(parser) -> None:
    from pe_lib.data.tasks import TASKS

    parser.add_argument("--model", required=True, help="folder of a pretrained PEBertForMaskedLM (save_pretrained)")
    parser.add_argument("--task", required=True, choices=list(TASKS), help="the task to fine-tune on")
    add_profile(parser)
    parser.add_argument("--seed", type=non_negative_int, default=0, help="fine-tuning seed (default 0)")
    parser.add_argument("--epochs", type=positive_float, help="override the profile's number of epochs (above 0)")
    parser.add_argument("--tokenizer", type=tokenizer_folder,
                        help="a tokenizer folder to use instead of the profile's")


def run(args) -> int:
    """Check the model folder (its config, and weights that fit it) and load the task first (both
    fail fast, with one line), then the tokenizer (which may prepare the corpus), then fine-tune."""
    from transformers import BertTokenizer

    from pe_lib.data import load_task
    from pe_lib.errors import InputError
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner
    from pe_lib.training.finetune import finetune

    profile = get_profile(args.profile)
    config = model_config(args.model)
    check_weights(args.model)
    load_model(args.model, config)  # its parameters fit its config: none missing, none of another shape
    task = load_task(args.task, profile.data_source, args.cache, max_train=profile.max_train_for(args.task))
    tokenizer = (BertTokenizer.from_pretrained(args.tokenizer) if args.tokenizer
                 else Runner(profile, cache_dir=args.cache, progress=not args.no_progress).tokenizer)
    if config.vocab_size != len(tokenizer):
        raise InputError(f"the model's vocab_size {config.vocab_size} does not match the tokenizer's "
                         f"{len(tokenizer)}; pass the tokenizer it was pretrained with (--tokenizer)")
    overrides = {"seed": args.seed, **({"epochs": args.epochs} if args.epochs is not None else {})}
    result = finetune(args.model, tokenizer, task, dataclasses.replace(profile.finetune_for(args.task), **overrides),
                      progress=not args.no_progress)
    print(json.dumps(result, indent=2))
    return 0
