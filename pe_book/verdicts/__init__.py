"""The verdicts: the rule that tests the paper's claims, on plain tables (per-seed scores, stored
baseline payloads), computing nothing of the runner's.

- :mod:`~pe_book.verdicts.mixed_model`: the design (pretraining seeds, fine-tuning seeds nested in
  them), its variance components and the t test of a difference of two variants' means;
- :mod:`~pe_book.verdicts.intervals`: t intervals, how each says its level, and where an interval
  stands against a fixed score;
- :mod:`~pe_book.verdicts.rule`: claims as comparisons and a quantifier, Holm's correction, the
  verdict of a claim from its comparisons' outcomes;
- :mod:`~pe_book.verdicts.power`: the smallest detectable effects, the seeds a claim would need,
  and the rule's error rates and power on simulated runs;
- :mod:`~pe_book.verdicts.gate` and :mod:`~pe_book.verdicts.testability`: which columns the
  models learned beyond every order-free baseline, the only ones a verdict rests on;
- :mod:`~pe_book.verdicts.comparisons`: a claim's family of comparisons tested and its verdict;
- :mod:`~pe_book.verdicts.claims`: the paper's claims, the [CLS] gap and the indicator claims;
- :mod:`~pe_book.verdicts.groups`: the score columns (tasks grouped by kind and word order).
"""
