"""The corpus and tokenizer progress bars follow ``progress`` (the CLI's ``--no-progress``)."""
import pytest

from pe_lib.data import corpus as corpus_module
from pe_lib.data.prepare import prepare_all


@pytest.mark.parametrize("progress", [False, True])
def test_preparing_corpus_and_tokenizer_shows_bars_only_when_asked(progress, fake_cache, monkeypatch, capfd):
    monkeypatch.setattr(corpus_module, "MIN_PACKAGED_WORDS", 1000)
    prepare_all(fake_cache, vocab_size=300, only=["corpus", "tokenizer"], progress=progress)
    err = capfd.readouterr().err
    for bar in ("reading corpus sources", "counting words", "counting train tokens"):
        assert (bar in err) == progress, (bar, err[-500:])
