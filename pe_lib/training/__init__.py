"""Training: resumable MLM pretraining, fine-tuning, and the metrics of GLUE and SQuAD."""
