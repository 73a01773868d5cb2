"""Experiment profiles: everything that sizes a run, as data. A profile fixes the model size,
sequence length, steps, batch, learning rates, tasks, seeds and variants; code paths never
branch on a profile's name.

* ``smoke``: everything tiny; the whole pipeline (all variants, all offline tasks) in minutes on 2 cores.
* ``scale``: the scale study: four variants pretrained to 16x the first cpu budget,
  with models kept and evaluated at 1x, 2x, 4x, 8x and 16x; it chooses the cpu profile's budget.
* ``cpu``: the published reproduction on a 2-core CPU: the study's recipe at the budget it chose,
  on a task suite that tests position, with at least two pretraining seeds of every paper variant.
* ``cpu-glue``: the cpu run before it (superseded by ``cpu``): the same models fine-tuned on the
  analogues of six GLUE and SQuAD tasks, most of which need no word order.
* ``trend``: none, ape-learned and rpe-learned kept at 1x-16x, for the scale trend of the key effects.
* ``cpu-65m``: the decisive cpu run (its folder: ``cpu``): every paper variant at 16x, past the
  no-position plateau, seeds as its committed design says; ``pilot``: its pilot.
* ``gpu``: BERT-base-sized, for users with accelerators (not run here).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

from pe_lib.data.tasks import TASKS
from pe_lib.errors import InputError
from pe_lib.training.finetune import FinetuneConfig
from pe_lib.training.pretrain_config import PretrainConfig

#: The paper's six basic position embeddings (no "none", no combination).
SINGLE_PES = ("ape-learned", "ape-sin", "ape-sin-learned", "rpe-learned", "rpe-sin", "rpe-sin-learned")
#: The paper's APE + RPE combinations.
COMBINATIONS = ("ape-learned+rpe-learned", "ape-learned+rpe-sin-learned", "ape-sin-learned+rpe-learned",
                "ape-sin-learned+rpe-sin-learned")
#: The paper's variants: no PE, the six basic ones, the combinations (the one home of these lists).
PAPER_VARIANTS = ("none",) + SINGLE_PES + COMBINATIONS
MODERN_VARIANTS = ("rope", "alibi", "t5-bias")
#: The paper's learnable RPEs with [CLS] untied from positions (TUPE): the test of its [CLS] hypothesis.
UNTIED_VARIANTS = ("rpe-learned+untie-cls", "rpe-sin-learned+untie-cls")
OFFLINE_TASKS = ("cola", "sst2", "mrpc", "stsb", "squad", "squad_v2")
#: Pretraining seeds of the published profiles: three for the variants the claims compare most (the
#: pretraining variance is pooled over them); every other variant has one and borrows it.
THREE_PRETRAINING_SEEDS = {"none": 3, "ape-learned": 3, "rpe-learned": 3}


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    model: dict  # PEBertConfig fields that size the model (vocab_size comes from the tokenizer)
    pretrain: PretrainConfig
    finetune: FinetuneConfig
    seq_len: int  # pretraining sequence length
    corpus_tokens: int | None  # cap on pretraining tokens read from the corpus (None: all)
    tokenizer: dict = field(default_factory=lambda: {"kind": "wordpiece", "vocab_size": 8192})
    variants: tuple[str, ...] = PAPER_VARIANTS + MODERN_VARIANTS + UNTIED_VARIANTS
    tasks: tuple[str, ...] = OFFLINE_TASKS
    seeds: tuple[int, ...] = (0,)  # fine-tuning seeds, run on every pretrained model ...
    seeds_by_task: dict[str, tuple[int, ...]] = field(default_factory=dict)  # ... of every task not named here
    pretrain_seeds: int = 1  # pretraining seeds (0, 1, ...) of every variant ...
    pretrain_seeds_by_variant: dict[str, int] = field(default_factory=dict)  # ... unless named here
    task_max_train: int | None = 4000  # training examples of every task ...
    task_max_train_by_task: dict[str, int] = field(default_factory=dict)  # ... unless named here
    finetune_by_task: dict[str, dict] = field(default_factory=dict)  # FinetuneConfig fields that differ for a task
    task_max_eval: int | None = 1000  # validation/test examples scored (first N of the fixed split)
    #: Tasks its data record (``pe_book.experiments.stored_data``) holds besides its own, under its
    #: caps: those a chapter reads under its recipe, so that a book from stored results needs no
    #: task data for them. Recorded only, never run; no key depends on it.
    recorded_tasks: tuple[str, ...] = ()
    probe: dict = field(default_factory=lambda: {"length": 64, "n_words": 100})
    data_source: str = "auto"  # hub when online, packaged analogues otherwise
    extrapolation_multipliers: tuple[int, ...] = (1, 2, 4)  # evaluation lengths, in multiples of seq_len
    extrapolation_tokens: int = 131_072  # validation tokens evaluated at every length (pe_lib.extrapolation)
    #: Stage code versions older than the code's (``results.CODE_VERSIONS``) that this profile's stored
    #: results were computed with: they keep their keys and are read, never added to (a finished
    #: run stays publishable after the code of one of its stages moved on).
    code_versions: dict[str, int] = field(default_factory=dict)
    #: The folder of its results, ``results/<folder>/``, and of its runs in the work folder (empty:
    #: its name; :attr:`results_folder`). A run renamed when it is published keeps the folder it
    #: was computed in: moving its stored weights would write them into the repository's history
    #: a second time. A profile derived from one that names a folder names its own (or "").
    folder: str = ""
    #: Keep each pretrained model (weights, config, tokenizer) in the store with its pretraining
    #: artifact, so that its later stages (a new task, another fine-tuning seed) never pretrain it
    #: again on another machine. Worth it for small models (about 8 MB for the cpu size).
    weights_in_store: bool = False
    #: Compute its artifacts from committed code only (``pe-book run`` refuses a working tree with
    #: uncommitted changes): every artifact of a published run names code that can be recovered.
    committed_code_only: bool = False

    def pretrain_seeds_for(self, variant: str) -> tuple[int, ...]:
        """The pretraining seeds of ``variant``: each is one pretrained model, fine-tuned with every
        seed of :attr:`seeds`, so comparisons see the variance of both."""
        return tuple(range(self.pretrain_seeds_by_variant.get(variant, self.pretrain_seeds)))

    def seeds_for(self, task: str) -> tuple[int, ...]:
        """The fine-tuning seeds run on every pretrained model for ``task``."""
        return tuple(self.seeds_by_task.get(task, self.seeds))

    def with_seeds(self, seeds: Sequence[int]) -> Profile:
        """This profile with the fine-tuning ``seeds`` for every task (itself when ``seeds`` is empty)."""
        return self.with_overrides(seeds=tuple(seeds), seeds_by_task={}) if seeds else self

    @property
    def results_folder(self) -> str:
        """Its folder of ``results/`` and of the work folder: :attr:`folder`, else its name."""
        return self.folder or self.name

    def __post_init__(self):
        # one seed may come as an int (``--set seeds_by_task.cloze=0``)
        object.__setattr__(self, "seeds_by_task", {t: (s,) if isinstance(s, int) else tuple(s)
                                                   for t, s in self.seeds_by_task.items()})
        for task, seeds in self.seeds_by_task.items():
            if task not in TASKS:
                raise InputError(f"seeds_by_task names {task!r}, not a task; valid tasks: {', '.join(TASKS)}")
            if not seeds:
                raise InputError(f"seeds_by_task[{task!r}] is empty: give at least one fine-tuning seed")
        unknown = [task for task in self.recorded_tasks if task not in TASKS]
        if unknown:
            raise InputError(f"recorded_tasks names {unknown[0]!r}, not a task; valid tasks: {', '.join(TASKS)}")
        valid = {f.name for f in fields(FinetuneConfig)} - {"seed"}
        for task, overrides in self.finetune_by_task.items():
            if task not in TASKS:
                raise InputError(f"finetune_by_task names {task!r}, not a task; valid tasks: {', '.join(TASKS)}")
            if set(overrides) - valid:
                raise InputError(f"finetune_by_task[{task!r}] sets {', '.join(sorted(set(overrides) - valid))}; "
                                 f"valid fields: {', '.join(sorted(valid))}")

    def with_first_pretrain_seeds(self, n: int, variants: Sequence[str] | None = None) -> Profile:
        """This profile with at most the first ``n`` pretraining seeds of each of ``variants`` (default:
        its own). A key names its seed, never how many there are: those seeds' artifacts keep their keys."""
        fewer = {v: min(n, len(self.pretrain_seeds_for(v))) for v in (variants or self.variants)}
        return self.with_overrides(pretrain_seeds_by_variant={**self.pretrain_seeds_by_variant, **fewer})

    def max_train_for(self, task: str) -> int | None:
        """The cap on ``task``'s training examples (None: all of them)."""
        return self.task_max_train_by_task.get(task, self.task_max_train)

    def finetune_for(self, task: str) -> FinetuneConfig:
        """The fine-tuning configuration of ``task``: :attr:`finetune` with the task's overrides."""
        return replace(self.finetune, **self.finetune_by_task.get(task, {}))

    def with_overrides(self, **fields) -> Profile:
        return replace(self, **fields)


SMOKE = Profile(
    name="smoke",
    description="tiny models and data: checks the whole pipeline end to end in minutes",
    model=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
               max_position_embeddings=128, rpe_max_distance=32),
    pretrain=PretrainConfig(steps=40, batch_size=16, lr=1e-3, warmup_steps=4, log_every=5, eval_every=20,
                            eval_batches=2, checkpoint_every=20),
    finetune=FinetuneConfig(epochs=1, batch_size=16, lr=5e-4, max_seq_len=64, doc_stride=8, max_question_len=24,
                            max_answer_len=8),
    seq_len=64,
    corpus_tokens=200_000,
    task_max_train=256,
    task_max_eval=128,
    probe={"length": 32, "n_words": 20},
    extrapolation_tokens=8_192,
    weights_in_store=True,
)

#: The model of the scale study, the same for every variant: a pre-LN encoder (a departure from
#: BERT), no dropout, learned position tables initialised at zero. Its recipe (:data:`SCALE`) adds
#: sequences of 64 tokens, a peak learning rate of 3e-3, 30% masking and an anytime schedule
#: (inverse square root after 500 warm-up steps, so the snapshot at t steps is the model of a run
#: of t steps), in fp32 on every machine: the study runs in chunks on whatever CPU a session gets,
#: where "auto" would train some models in bf16 and others in fp32. Chapter 13 shows the recipe
#: screen behind these choices (studies/recipe_screen).
SCALE_MODEL = dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=2, intermediate_size=512,
                   max_position_embeddings=256, rpe_max_distance=64, hidden_dropout_prob=0.0,
                   attention_probs_dropout_prob=0.0, layer_norm="pre", position_init_std=0.0)
#: 1x of the scale study: the first cpu profile's 4.1M tokens (2,000 steps of 32 x 64 tokens).
#: Validation: 32 batches (about 19,700 masked tokens), so that seeds' losses are told apart.
SCALE_UNIT_STEPS = 2000
#: Fine-tuning of the study and of the cpu profile (2 epochs, dynamic padding up to 128 tokens, fp32).
SMALL_FINETUNE = FinetuneConfig(epochs=2, batch_size=32, lr=3e-4, max_seq_len=128, doc_stride=32, max_question_len=48,
                                max_answer_len=16, precision="fp32")

#: The fine-tuning and baseline code versions the published cpu run and the scale study were computed
#: with (``results.CODE_VERSIONS`` has moved both on): their results are read under them, never added to.
PUBLISHED_CODE_VERSIONS = {"finetune": 1, "baselines": 1}

SCALE = Profile(
    name="scale",
    description="the scale study: none, ape-learned, rpe-learned and ape-sin-learned at 1x-16x of 4.1M tokens",
    model=SCALE_MODEL,
    pretrain=PretrainConfig(steps=16 * SCALE_UNIT_STEPS, batch_size=32, lr=3e-3, warmup_steps=500, mask_prob=0.30,
                            schedule="inverse-sqrt", snapshot_steps=tuple(m * SCALE_UNIT_STEPS for m in (1, 2, 4, 8)),
                            log_every=50, eval_every=500, eval_batches=32, checkpoint_every=500, precision="fp32"),
    finetune=SMALL_FINETUNE,
    seq_len=64,
    corpus_tokens=None,
    variants=("none", "ape-learned", "rpe-learned", "ape-sin-learned"),
    tasks=("cola", "sst2", "mrpc", "stsb"),  # the criteria need the sentence-level tasks only
    # One fine-tuning seed per pretrained model, on up to 10,000 examples a task (cola has 2,751;
    # chapter 13's fine-tuning screen sets the count): the study's fine-tuning takes about 2 hours,
    # and the spread over pretraining seeds is measured.
    seeds=(0,),
    pretrain_seeds_by_variant={"none": 2, "ape-learned": 2, "rpe-learned": 2},
    task_max_train=10_000,
    task_max_eval=400,
    # Chapter 13 prices the cpu-glue profile under this recipe (pe_book.chapters.scale.cpu_candidate):
    # cpu-glue's tasks (the offline ones) under these caps, squad and squad_v2 at 10,000 among them.
    recorded_tasks=OFFLINE_TASKS,
    probe={"length": 64, "n_words": 100},
    code_versions=PUBLISHED_CODE_VERSIONS,
)

#: The cpu run on the analogues of six GLUE and SQuAD tasks (superseded by :data:`CPU`, which
#: keeps its models, recipe and budget and replaces its tasks): the scale study's recipe stopped at
#: 4x (8,000 steps, 16.4M tokens), the smallest budget of the study at which its criteria (a)-(c)
#: all hold (chapter 13). Under the anytime schedule its finished runs are the first 8,000 steps of
#: the study's (``pe-book adopt --profile scale --from cpu-glue`` begins the study's runs from
#: them). Fine-tuning: the study's, on up to 10,000 training examples a sentence task and 2,000 a
#: span task (a span fine-tuning costs about 3 sentence ones of the same size); cola, the word-order
#: task, for 10 epochs (860 steps, about as many as the other sentence tasks' 625). Chapter 13
#: shows the fine-tuning screens behind these counts (studies/finetune_screen) and what the profile
#: costs (``pe-book run --profile cpu-glue --dry-run --estimate-from cpu-glue``).
CPU_GLUE = Profile(
    name="cpu-glue",
    description="the cpu run superseded by cpu: the scale study's recipe at 4x (16.4M tokens a model) "
                "on the analogues of six GLUE and SQuAD tasks",
    model=SCALE_MODEL,
    pretrain=SCALE.pretrain.at(4 * SCALE_UNIT_STEPS),
    finetune=SCALE.finetune,
    seq_len=SCALE.seq_len,
    corpus_tokens=None,
    seeds=(0, 1, 2),
    pretrain_seeds_by_variant=THREE_PRETRAINING_SEEDS,
    task_max_train=SCALE.task_max_train,
    task_max_train_by_task={"squad": 2000, "squad_v2": 2000},
    finetune_by_task={"cola": {"epochs": 10}},
    task_max_eval=400,
    probe=SCALE.probe,
    code_versions=PUBLISHED_CODE_VERSIONS,
)

#: Pretraining seeds of the cpu run: every paper variant at least two, the
#: three the claims compare most three; the modern and untied variants one.
PAPER_PRETRAINING_SEEDS = {v: 2 for v in PAPER_VARIANTS} | THREE_PRETRAINING_SEEDS

#: The published reproduction: the cpu-glue run's models and recipe, a task suite whose tasks
#: test position, more pretraining seeds, and the pretrained models kept in the store. It was
#: computed as ``cpu-next`` beside cpu-glue and keeps that folder (``results/cpu-next/``).
#: Tasks (chosen by the task screen, studies/task_screen): sst2 the order-free control; cola, cloze
#: and cloze_v2 depend on word order by construction. The cloze tasks are fine-tuned for 5 epochs
#: over all their examples (about 15,000); cola keeps cpu-glue's 10 epochs.
#: Fine-tuning seeds: 3 on the classification tasks, 1 on the span tasks, whose fine-tuning costs
#: about as much as pretraining the model (studies/README.md). With one seed a pretrained model's
#: span score still carries its fine-tuning noise, so the variance between a variant's pretraining
#: seeds (``pe_book.verdicts``: tau^2 with F = 1) holds both sources, and every paper variant has at
#: least two of them. A group column never mixes seed counts (its tasks share them).
CPU = Profile(
    name="cpu",
    description="the published reproduction on a 2-core CPU: the scale study's recipe at 4x (16.4M tokens a model) "
                "on a task suite that tests position",
    folder="cpu-next",
    model=SCALE_MODEL,
    pretrain=CPU_GLUE.pretrain,
    finetune=CPU_GLUE.finetune,
    seq_len=CPU_GLUE.seq_len,
    corpus_tokens=None,
    tasks=("sst2", "cola", "cloze", "cloze_v2"),
    seeds=(0, 1, 2),
    seeds_by_task={"cloze": (0,), "cloze_v2": (0,)},
    pretrain_seeds_by_variant=PAPER_PRETRAINING_SEEDS,
    task_max_train=CPU_GLUE.task_max_train,
    task_max_train_by_task={"cloze": None, "cloze_v2": None},
    finetune_by_task={"cola": {"epochs": 10}, "cloze": {"epochs": 5}, "cloze_v2": {"epochs": 5}},
    task_max_eval=400,
    probe=CPU_GLUE.probe,
    weights_in_store=True,
    code_versions={"finetune": 2},
)

#: The scale trend of the key effects: the cpu run's recipe and tasks for the three variants the
#: claims compare most, one pretraining seed and one fine-tuning seed each, kept at 1x-16x of the
#: study's unit (4.1M tokens). Its 4x model is the cpu run's first model of the same variant (the
#: same pretraining key: an anytime schedule's snapshot is the model of a run of that length).
TREND = replace(
    CPU,
    name="trend",
    folder="",
    description="the trend of the key effects with scale: none, ape-learned and rpe-learned at 1x-16x of 4.1M tokens",
    pretrain=SCALE.pretrain,
    variants=("none", "ape-learned", "rpe-learned"),
    seeds=(0,),
    seeds_by_task={},
    pretrain_seeds_by_variant={},
)

#: The budget of the decisive cpu run: 16x the scale study's unit (65.5M tokens, 32,000 steps), 4x the
#: 16.4M tokens of :data:`CPU`, by the end of which the trend run's learned APE had left the
#: no-position plateau (at this budget's half at the latest: issue 57). Its snapshots at the
#: earlier budgets (8,000 steps: :data:`CPU`'s; 16,000) give every paper variant its scale trend
#: from the same runs, with seeds. Its pretraining key is the trend run's 16x key (snapshots are
#: not part of a key), so the trend's models are its first seeds of none, ape-learned and rpe-learned.
DECISIVE_PRETRAIN = replace(SCALE.pretrain, snapshot_steps=(4 * SCALE_UNIT_STEPS, 8 * SCALE_UNIT_STEPS))
#: Precision: fp32 on every machine. bf16 autocast trains the cpu model 1.2-1.8x faster on the
#: CPUs with bf16 instructions (AMD EPYC with AVX512-BF16, Intel Xeon with AMX) and about 18x
#: slower on the AVX2-only EPYCs these sessions also get (``results/bench.json``, section
#: ``precision``); a run in chunks cannot choose its machine, and a model begun in bf16 would have
#: to be resumed in bf16 wherever its next chunk lands.
#: Tasks: :data:`CPU`'s suite with the word-order task as minimal pairs (``word_order``: a test
#: split of 2,990 examples, against cola's 183), every validation and test example scored
#: (``task_max_eval=None``), so that every task's test-set standard error is at most 2 points.
#: Seeds: set by the design committed before the run (``design.json`` in its folder, issue 57).
CPU_DECISIVE = Profile(
    name="cpu-65m",
    description="the decisive cpu run: the scale study's recipe at 16x (65.5M tokens a model), past the "
                "no-position plateau, on a task suite that tests position with test sets of thousands",
    folder="cpu",
    model=SCALE_MODEL,
    pretrain=DECISIVE_PRETRAIN,
    finetune=SMALL_FINETUNE,
    seq_len=SCALE.seq_len,
    corpus_tokens=None,
    tasks=("sst2", "word_order", "cloze", "cloze_v2"),
    seeds=(0,),
    pretrain_seeds_by_variant=PAPER_PRETRAINING_SEEDS,
    task_max_train=CPU_GLUE.task_max_train,
    task_max_train_by_task={"cloze": None, "cloze_v2": None},
    finetune_by_task={"word_order": {"epochs": 10}, "cloze": {"epochs": 5}, "cloze_v2": {"epochs": 5}},
    task_max_eval=None,
    probe=CPU_GLUE.probe,
    weights_in_store=True,
    committed_code_only=True,
)

#: The pilot of the decisive run (issue 57): ape-learned and rpe-learned, three pretraining seeds at
#: its budget (the first is the trend run's model), fine-tuned with three seeds on the sentence
#: tasks and two on the span tasks, so that the design sees every source of variance past the plateau.
#: Only the final budget is evaluated (no snapshots): the trend run holds the way there.
PILOT = replace(
    CPU_DECISIVE,
    name="pilot",
    pretrain=replace(DECISIVE_PRETRAIN, snapshot_steps=()),
    folder="",
    description="the pilot of the decisive cpu run: ape-learned and rpe-learned, three pretraining seeds at 65.5M tokens",
    variants=("ape-learned", "rpe-learned"),
    seeds=(0, 1, 2),
    seeds_by_task={"cloze": (0, 1), "cloze_v2": (0, 1)},
    pretrain_seeds_by_variant={},
    pretrain_seeds=3,
)

GPU = Profile(
    name="gpu",
    description="BERT-base-sized, for accelerators (hub data when online; not run on the CPU machines)",
    model=dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
               max_position_embeddings=512, rpe_max_distance=128),
    # 4 micro-batches (the same gradient) and bf16 autocast on CUDA ("auto"): the memory per device and
    # the GPU-hours on a card are computed by `pe-book run --profile gpu --dry-run --card h100`
    # (pe_book.experiments.costs.card_estimate)
    pretrain=PretrainConfig(steps=100_000, batch_size=256, lr=1e-4, warmup_steps=10_000, log_every=100,
                            eval_every=5000, eval_batches=20, checkpoint_every=2000, accumulation_steps=4),
    finetune=FinetuneConfig(epochs=3, batch_size=32, lr=3e-5, max_seq_len=384, doc_stride=128, max_answer_len=30),
    seq_len=512,
    corpus_tokens=None,
    tokenizer={"kind": "bert-base-uncased", "vocab_size": 30522},
    tasks=("cola", "sst2", "mrpc", "stsb", "qnli", "rte", "squad", "squad_v2"),
    seeds=(0, 1, 2, 3, 4),
    pretrain_seeds_by_variant=THREE_PRETRAINING_SEEDS,  # one seed each would leave the pretraining variance unknown
    task_max_train=None,
    task_max_eval=None,
    probe={"length": 128, "n_words": 1000},
    extrapolation_tokens=1_048_576,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (SMOKE, CPU, CPU_GLUE, SCALE, TREND, CPU_DECISIVE, PILOT, GPU)}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise InputError(f"unknown profile {name!r}; valid profiles: {', '.join(PROFILES)}") from None
