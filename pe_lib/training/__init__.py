"""Training: resumable MLM pretraining, fine-tuning, and the metrics of GLUE and SQuAD.

Pretraining is :func:`pe_lib.training.pretrain.pretrain` (the loop), with its configuration and a
run's identity in :mod:`~pe_lib.training.pretrain_config`, the objective's data, masks and
validation loss in :mod:`~pe_lib.training.mlm`, the optimiser's parts shared with fine-tuning in
:mod:`~pe_lib.training.optim`, the run folder in :mod:`~pe_lib.training.checkpoints` and processes
and threads in :mod:`~pe_lib.training.distributed`. Fine-tuning is :mod:`~pe_lib.training.finetune`.
"""
