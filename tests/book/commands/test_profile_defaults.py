"""The two defaults of ``--profile`` (``pe_book.commands.common``): the published book's profile
for the commands that read or check its committed results, the smoke profile for the commands that
compute; every choice is a profile of the registries (``PROFILES``, and ``BOOK_PROFILES`` where
chapters are executed or written)."""
import pytest

from pe_book.publishing.book import BOOK_PROFILES
from pe_book.cli import build_parser_for
from pe_book.commands.common import COMPUTING_PROFILE, PUBLISHED_PROFILE
from pe_book.experiments.profiles import PROFILES

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("argv, default", [
    (["book"], PUBLISHED_PROFILE),
    (["publish", "colab", "--commit", COMMIT, "--out", "colab"], PUBLISHED_PROFILE),
    (["publish", "readme"], PUBLISHED_PROFILE),
    (["verify", "--variant", "ape-learned"], PUBLISHED_PROFILE),
    (["run", "--dry-run"], COMPUTING_PROFILE),
    (["pretrain", "--variant", "rope"], COMPUTING_PROFILE),
    (["finetune", "--model", "folder", "--task", "sst2"], COMPUTING_PROFILE),
    (["adopt", "--from", "scale"], COMPUTING_PROFILE),
], ids=lambda value: " ".join(value[:2]) if isinstance(value, list) else None)
def test_each_command_defaults_to_one_of_the_two_profiles(argv, default):
    assert build_parser_for(argv).parse_args(argv).profile == default


def test_the_defaults_and_choices_are_the_registries_profiles(capsys):
    assert {PUBLISHED_PROFILE, COMPUTING_PROFILE} <= set(BOOK_PROFILES) <= set(PROFILES)
    for argv in (["book", "--profile", "gpu"], ["publish", "colab", "--commit", COMMIT, "--out", "x", "--profile", "gpu"],
                 ["publish", "readme", "--profile", "nope"], ["run", "--profile", "nope"]):
        with pytest.raises(SystemExit) as info:
            build_parser_for(argv).parse_args(argv)
        assert info.value.code == 2 and "invalid choice" in capsys.readouterr().err
