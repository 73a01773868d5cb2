"""Side-by-side benchmarks (``pe-book bench``, ``make bench``).

Every figure is a ratio of measurements taken in the same run, interleaved step by step so that
machine noise hits all contenders alike, and printed with a description of the machine:

1. ``hf``: training throughput (tokens/s) of ``PEBertForMaskedLM`` (ape-learned) vs HF
   ``BertForMaskedLM`` with the same configuration, fp32 and bf16 autocast, at each ``--seqs``;
2. ``variants``: every basic variant's step time (and ``rpe-learned+untie-cls``'s) relative to
   ``ape-learned`` (bf16), at each ``--seqs``;
3. ``relative``: the relative-attention term alone, pe_lib's gather vs HF v4's naive
   (n, n, head_dim) einsum: forward+backward time and peak memory, at 128..2048 tokens;
4. ``mfu``: model FLOPs utilisation: the model FLOPs of a training step of the cpu profile's model
   per second, divided by the matmul peak of this machine in the same dtype, measured here;
5. ``smoke``: wall time of ``pe-book run --profile smoke`` end to end and per stage (fresh results
   and work folders, the data cache reused);
6. ``profile``: where a training step's time goes (matmuls, dtype casts, dropout's random
   numbers, other operators, the optimizer), pe_lib and HF, fp32 and bf16, at seq 128;
7. ``fine-tune``: non-padding training tokens per second of a whole fine-tuning of the cpu
   profile's model on each of its tasks (:data:`FINETUNE_TASKS`, packaged data), before (batches of a plain
   permutation, features built by each fine-tuning) and after (length-grouped batches, features
   built once per task), against the pretraining step of the same model timed in turns with them,
   and where a fine-tuning's time goes;
8. ``dry-run``: wall time of ``pe-book run --profile cpu --dry-run`` (a new process: imports, data
   and keys) of this working tree against the commit ``--base`` (a temporary git worktree of it,
   run with the same Python), in turns, and whether both listed the same artifacts;
9. ``precision``: the decisive cpu profile's pretraining step in fp32
   and in bf16, per variant, kept per machine type: which precision the profile trains in.

A training step is forward + backward + AdamW update on an MLM batch with 15% of tokens masked
(sections 1-6).

The modules: :mod:`pe_book.bench.contenders` (the models, batches and training steps timed),
:mod:`pe_book.bench.model_speed` (sections 1-4 and 6), :mod:`pe_book.bench.pipeline_speed` (5, 7 and
8), :mod:`pe_book.bench.precision` (9), :mod:`pe_book.bench.sections` (which to run) and
:mod:`pe_book.bench.report` (the targets, the printed report, the stored file).
"""
