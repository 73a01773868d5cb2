"""``pe-book pretrain``: MLM-pretrain one variant with a profile's settings (resumable).

Multi-process / multi-GPU: ``accelerate launch --multi_gpu --num_processes N -m pe_book.cli pretrain ...``
(on CPUs too: pe_lib then uses DDP over gloo), or ``torchrun --nproc_per_node N -m pe_book.cli pretrain ...``.
N processes train another run than 1 (masks and dropout are drawn per process), kept in another
run folder, and a run folder is resumed only with the process count it was begun with.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from pe_book.commands.common import (add_profile, add_set, existing_file, non_negative_int, positive_int,
                                     tokenizer_folder)
from pe_lib.errors import InputError


def configure(parser) -> None:
    parser.add_argument("--variant", required=True, help="position embedding, e.g. ape-learned or ape-sin+rpe-learned")
    add_profile(parser)
    add_set(parser)
    parser.add_argument("--out", help="run folder (default: the profile's work folder for this variant)")
    parser.add_argument("--steps", type=positive_int, help="override the profile's number of steps (after --set)")
    parser.add_argument("--batch-size", type=positive_int, help="override the profile's global batch size")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="pretraining seed (default 0)")
    parser.add_argument("--precision", choices=("auto", "bf16", "fp32"), help="override the profile's precision")
    parser.add_argument("--corpus-file", type=existing_file, help="pretrain on this plain-text file instead (last 10%% of lines: validation)")
    parser.add_argument("--tokenizer", type=tokenizer_folder,
                        help="a tokenizer folder (BertTokenizer) to use instead of the profile's")


def run(args) -> int:
    from accelerate import PartialState
    from transformers import BertTokenizer

    from pe_book.experiments.overrides import with_overrides
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner
    from pe_lib.training.mlm import MLMData, text_blocks
    from pe_lib.training.pretrain import pretrain

    profile = with_overrides(get_profile(args.profile), args.overrides)
    overrides = {k: v for k, v in (("steps", args.steps), ("batch_size", args.batch_size), ("precision", args.precision))
                 if v is not None}
    # The overridden settings become the profile's, so they are in the run folder's key: another
    # config never writes into the folder of the profile's own.
    profile = profile.with_overrides(pretrain=dataclasses.replace(profile.pretrain, **overrides))
    tokenizer = BertTokenizer.from_pretrained(args.tokenizer) if args.tokenizer else None
    runner = Runner(profile, cache_dir=args.cache, progress=not args.no_progress, tokenizer=tokenizer)
    if args.corpus_file:
        lines = [line for line in utf8_text(args.corpus_file).splitlines() if line.strip()]
        if len(lines) < 10:
            raise InputError(f"{args.corpus_file} has {len(lines)} non-empty lines; --corpus-file needs at least 10 "
                             "(the last 10% are the validation lines)")
        tok, cut = runner.tokenizer, len(lines) * 9 // 10
        data = MLMData.for_tokenizer(tok, text_blocks(tok, lines[:cut], profile.seq_len), text_blocks(tok, lines[cut:], profile.seq_len))
        runner = Runner(profile, cache_dir=args.cache, progress=not args.no_progress, tokenizer=tok, data=data)
    out = Path(args.out) if args.out else runner.run_dir(args.variant, args.seed)
    cfg = dataclasses.replace(profile.pretrain, seed=args.seed)
    # the tokenizer beside each saved model, so that pipeline("fill-mask", model=folder) loads the folder
    result = pretrain(runner.model_config(args.variant), runner.mlm_data(), cfg, out, progress=not args.no_progress,
                      tokenizer=runner.tokenizer)
    if PartialState().is_main_process:  # one report, not one per process
        print(json.dumps({"out": str(out), **result}, indent=2))
    return 0


def utf8_text(path: str) -> str:
    """The text of a UTF-8 file, or one :class:`InputError` naming the file and the offset of its
    first byte that is not UTF-8."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start} "
                         f"({error.reason}); convert it to UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None
